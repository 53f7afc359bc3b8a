"""Calls that reach ``autograph.function`` through ``jax.jit``'s C++ dispatch.

Once a function has been called ``RETRACE_WINDOW`` times without a trace, its
calls of plain arrays never enter Python; every other call must still take the
Python path that keys Python values by value, fills defaults and raises the
user's own exceptions.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import jax_internals
from autograph.function import RETRACE_WINDOW


def _settled(fn, *args):
    """Calls ``fn`` until it has left the retrace window."""
    for _ in range(RETRACE_WINDOW + 2):
        fn(*args)
    return fn


def _sign_scale(x, y):
    if y > 1:
        return x * y
    return x - y


def test_this_jax_gets_the_cpp_dispatcher():
    assert jax_internals.cpp_jit_builder() is not None
    f = _settled(autograph.function(lambda x: x + 1), jnp.ones(3))
    assert type(f.func).__name__ == "PjitFunction"


def test_array_calls_after_settling_match_python():
    f = autograph.function(_sign_scale)
    _settled(f, jnp.ones(3), jnp.float32(2.0))
    traces = f.experimental_get_tracing_count()
    for y in (3.0, 0.5, -1.0):
        x = jnp.arange(3.0)
        np.testing.assert_allclose(f(x, jnp.float32(y)), _sign_scale(np.arange(3.0), y))
    assert f.experimental_get_tracing_count() == traces


def test_python_numbers_still_keyed_by_value_after_settling():
    calls = []

    def probe(x, y):
        calls.append(y)
        return _sign_scale(x, y)

    f = autograph.function(probe)
    _settled(f, jnp.ones(3), jnp.float32(2.0))
    x = jnp.arange(3.0)
    for y in (2.0, 0.5, 2.0, 0.5):
        np.testing.assert_allclose(f(x, y), _sign_scale(np.arange(3.0), y))
    # each distinct Python value traced once, as a Python value (not a tracer)
    assert [v for v in calls if isinstance(v, float)] == [2.0, 0.5]


def test_keywords_numpy_and_tracers_after_settling():
    f = autograph.function(_sign_scale)
    _settled(f, jnp.ones(3), jnp.float32(2.0))
    x = jnp.arange(3.0)
    np.testing.assert_allclose(f(x, y=jnp.float32(0.5)), _sign_scale(np.arange(3.0), 0.5))
    np.testing.assert_allclose(f(np.arange(3.0), np.float32(3.0)), np.arange(3.0) * 3.0)
    grad = jax.grad(lambda y: f(x, y).sum())(jnp.float32(3.0))
    np.testing.assert_allclose(grad, 3.0)
    grad = jax.grad(lambda y: f(x, y).sum())(jnp.float32(0.5))
    np.testing.assert_allclose(grad, -3.0)
    out = jax.vmap(f, in_axes=(None, 0))(x, jnp.array([0.5, 2.0]))
    np.testing.assert_allclose(out, [np.arange(3.0) - 0.5, np.arange(3.0) * 2.0])


def test_user_exception_after_settling():
    @autograph.function
    def positive(x):
        assert x.sum() > 0, "needs a positive sum"
        return x

    _settled(positive, jnp.ones(3))
    for _ in range(3):
        with pytest.raises(AssertionError, match="needs a positive sum"):
            positive(-jnp.ones(3))
    np.testing.assert_allclose(positive(jnp.ones(3)), 1.0)


def test_retrace_after_settling_counts_again():
    f = _settled(autograph.function(lambda x: x * 2), jnp.ones(1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(2, 10):
            np.testing.assert_allclose(f(jnp.ones(n)), 2.0)
    assert any("traced" in str(w.message) for w in caught)
    assert f.experimental_get_tracing_count() == 9


def test_object_attribute_changed_after_settling():
    class Cfg:
        scale = 2.0

    cfg = Cfg()
    # settled: the C++ entry is in front (where this JAX has one)
    f = _settled(autograph.function(lambda x, c: x * c.scale), jnp.ones(2), cfg)
    cfg.scale = 5.0
    np.testing.assert_allclose(f(jnp.ones(2), cfg), 5.0)
    np.testing.assert_allclose(f(jnp.ones(2), cfg), 5.0)
    assert f.experimental_get_tracing_count() == 2


def test_clear_caches_after_settling():
    f = _settled(autograph.function(lambda x: x - 1), jnp.ones(2))
    jax.clear_caches()
    np.testing.assert_allclose(f(jnp.ones(2)), 0.0)
    np.testing.assert_allclose(f(jnp.full(2, 5.0)), 4.0)


def test_defaults_left_out_and_given_after_settling():
    seen = []

    def with_default(x, scale=2.0):
        seen.append(type(scale))
        return x * scale

    f = _settled(autograph.function(with_default), jnp.ones(2))
    assert type(f.func).__name__ == "PjitFunction"
    np.testing.assert_allclose(f(jnp.ones(2)), 2.0)
    np.testing.assert_allclose(f(jnp.ones(2), 3.0), 3.0)  # a Python float: keyed by value
    np.testing.assert_allclose(f(jnp.ones(2), jnp.float32(4.0)), 4.0)
    assert float in seen  # the default and the given float were traced as Python values


def test_containers_after_settling():
    import collections

    Pair = collections.namedtuple("Pair", "w b")
    seen = []

    def affine(params, x):
        seen.append(jax.tree_util.tree_map(type, params))
        if isinstance(params, dict):
            return x * params["w"] + params["b"]
        return x * params[0] + params[1]

    f = autograph.function(affine)
    x = jnp.arange(3.0)
    _settled(f, {"w": jnp.float32(2.0), "b": jnp.float32(1.0)}, x)
    for w in (2.0, -1.0):
        params = {"w": jnp.float32(w), "b": jnp.float32(1.0)}
        np.testing.assert_allclose(f(params, x), np.arange(3.0) * w + 1.0)
        np.testing.assert_allclose(f([jnp.float32(w), jnp.float32(1.0)], x),
                                   np.arange(3.0) * w + 1.0)
        np.testing.assert_allclose(f(Pair(jnp.float32(w), jnp.float32(1.0)), x),
                                   np.arange(3.0) * w + 1.0)
