"""``autograph.function``: converted call trees, jax transformations and the AOT API."""

from __future__ import annotations

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import TensorSpec, pipeline
from autograph import api as autograph_api
from tests.helpers import count

# -- call trees -------------------------------------------------------------------------------


def _inner(x):
    if x.sum() > 0:
        return x * 2
    return -x


class _Callee:
    def method(self, x):
        if x.sum() > 0:
            return x + 10
        return x - 10

    def __call__(self, x):
        while x.sum() < 5:
            x = x + 1
        return x


def _make_closure(k):
    def closure(x):
        if x.sum() > 0:
            return x * k
        return x
    return closure


def _two(x, s):
    if x.sum() > 0:
        return x * s
    return x


def test_call_tree_converted_recursively():
    obj = _Callee()
    clo = _make_closure(3.0)
    lam = lambda x: x * 2 if x.sum() > 0 else x * 0  # noqa: E731
    part = functools.partial(_two, s=4.0)

    @autograph.function
    def outer(x):
        return _inner(x), obj.method(x), obj(x), clo(x), lam(x), part(x)

    def plain(x):  # the same, on concrete values
        return _inner(x), obj.method(x), obj(x), clo(x), lam(x), part(x)

    for v in (jnp.array([1.0, 2.0]), jnp.array([-1.0, -2.0])):
        got, want = outer(v), plain(v)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w)
    assert count(outer) == 1


def test_call_tree_nested_functions():
    @autograph.function
    def add(a, b):
        return a + b

    @autograph.function
    def dense(x, w, b):
        y = add(x @ w, b)
        if y.sum() > 0:
            y = y * 2
        return y

    np.testing.assert_allclose(dense(jnp.ones((3, 2)), jnp.ones((2, 2)), jnp.ones(2)),
                               np.full((3, 2), 6.0))


def test_do_not_convert():
    @autograph.do_not_convert
    def raw(x):
        if x.sum() > 0:
            return x
        return -x

    @autograph.function
    def f(x):
        return raw(x)

    with pytest.raises(jax.errors.TracerBoolConversionError):
        f(jnp.ones(2))


def test_callee_without_source_runs_unconverted_with_warning():
    ns = {}
    exec("def gen_callee(x):\n    return x + 1\n", ns)
    gen = ns["gen_callee"]

    @autograph.function
    def f(x):
        return gen(x)

    with pytest.warns(UserWarning, match="gen_callee"):
        np.testing.assert_allclose(f(jnp.ones(2)), [2.0, 2.0])


def test_library_code_never_converted_and_conversion_cached(monkeypatch):
    import copy

    seen = []
    real = autograph_api.convert_for_call

    def spy(fn):
        seen.append(fn)
        return real(fn)

    monkeypatch.setattr(autograph_api, "convert_for_call", spy)
    converted = []
    real_convert_tree = pipeline.convert_tree

    def counting(node, *args, **kwargs):
        converted.append(getattr(node, "name", None))
        return real_convert_tree(node, *args, **kwargs)

    monkeypatch.setattr(pipeline, "convert_tree", counting)

    def helper_cached(x):
        if x.sum() > 0:
            return x + 1
        return x

    def body(x):
        y = copy.copy(x)
        y = jax.tree_util.tree_map(lambda a: a * 1, y)
        return helper_cached(jnp.sum(y) * jnp.ones(2)) + np.float32(0)

    f1 = autograph.function(body)
    f2 = autograph.function(body)
    f1(jnp.ones(2))
    f2(jnp.ones(2))
    f1(jnp.ones(3))
    for fn in seen:
        module = (fn.__module__ or "").split(".")[0]
        assert module not in ("jax", "numpy", "copy", "autograph"), fn
    assert converted.count("helper_cached") == 1
    assert converted.count("body") <= 1


# -- composition and AOT ------------------------------------------------------------------------


@pytest.fixture
def branchy():
    @autograph.function
    def f(x):
        if x.sum() > 0:
            return (x ** 2).sum()
        return (-x).sum()

    return f


def test_grad(branchy):
    np.testing.assert_allclose(jax.grad(branchy)(jnp.array([1.0, 2.0])), [2.0, 4.0])
    np.testing.assert_allclose(jax.grad(branchy)(jnp.array([-1.0, -2.0])), [-1.0, -1.0])


def test_vmap(branchy):
    np.testing.assert_allclose(jax.vmap(branchy)(jnp.array([[1.0, 2.0], [-1.0, -2.0]])), [5.0, 3.0])


def test_jit_of_function(branchy):
    np.testing.assert_allclose(jax.jit(branchy)(jnp.array([1.0, 2.0])), 5.0)
    np.testing.assert_allclose(jax.jit(lambda x: branchy(x) * 2)(-jnp.ones(3)), 6.0)


def test_lower(branchy):
    lowered = branchy.lower(jnp.ones(2))
    assert isinstance(lowered, jax.stages.Lowered)
    assert "stablehlo" in lowered.as_text()
    np.testing.assert_allclose(lowered.compile()(jnp.array([1.0, 2.0])), 5.0)
    np.testing.assert_allclose(branchy.lower(TensorSpec([3], jnp.float32)).compile()(jnp.ones(3)), 3.0)
    np.testing.assert_allclose(
        branchy.lower(jax.ShapeDtypeStruct((3,), jnp.float32)).compile()(-jnp.ones(3)), 3.0)


def test_trace(branchy):
    traced = branchy.trace(jnp.ones(2))
    assert isinstance(traced, jax.stages.Traced)
    assert "cond" in str(traced.jaxpr)
    assert re.search(r"f32\[d\d+\]", str(branchy.trace(TensorSpec([None], jnp.float32)).jaxpr))


def test_lower_with_static_argument():
    @autograph.function
    def pw(x, n):
        for _ in range(n):
            x = x + 1
        return x

    np.testing.assert_allclose(pw.lower(jnp.zeros(2), 3).compile()(jnp.zeros(2)), [3.0, 3.0])


def test_not_picklable(branchy):
    import pickle

    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(branchy)


def test_concrete_function_takes_the_arrays_alone_or_the_whole_call():
    @autograph.function
    def scaled(x, n, scale=2.0):
        for _ in range(n):
            x = x * scale
        return x

    cf = scaled.get_concrete_function(jnp.ones(3), 2)
    want = np.full(3, 4.0)
    np.testing.assert_allclose(cf(jnp.ones(3)), want)          # Python values bound
    np.testing.assert_allclose(cf(jnp.ones(3), 2), want)       # the original call
    np.testing.assert_allclose(cf(jnp.ones(3), n=2), want)
    with pytest.raises(ValueError, match="traced with the Python value 2"):
        cf(jnp.ones(3), 3)
