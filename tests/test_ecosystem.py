"""Flax linen, Equinox and Optax with converted code: the spellings in docs/ecosystem.md.

Library entry points around the user's code (``model.apply``,
``eqx.filter_jit(f)``) convert that code: the module's method, the function
wrapped. Functions handed to library transformations from converted code are
converted, like those handed to JAX's. Each result is compared with the eager
run of the same code. ``tests/test_linen.py`` and ``tests/test_equinox.py``
go into each library further.
"""

from __future__ import annotations

import warnings

import equinox as eqx
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import autograph


class Clipped(nn.Module):
    @nn.compact
    @autograph.convert
    def __call__(self, x):
        h = nn.Dense(3)(x)
        if h.sum() > 0:
            h = h * 0.5
        else:
            h = -h
        return h


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_linen_compact_call_converted_init_apply_grad(sign):
    model = Clipped()
    x = sign * jnp.ones((2, 4))
    params = model.init(jax.random.key(0), x)
    y = jax.jit(model.apply)(params, x)
    h = nn.Dense(3).apply({"params": params["params"]["Dense_0"]}, x)
    want = h * 0.5 if float(h.sum()) > 0 else -h
    np.testing.assert_allclose(y, want, rtol=1e-6)
    g = jax.jit(jax.grad(lambda p: model.apply(p, x).sum()))(params)
    assert jax.tree_util.tree_structure(g) == jax.tree_util.tree_structure(params)


class Unconverted(nn.Module):
    @nn.compact
    def __call__(self, x):  # not decorated: converted through `apply`
        h = nn.Dense(3)(x)
        if h.sum() > 0:
            h = h * 0.5
        else:
            h = -h
        return h


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_convert_of_linen_apply_converts_the_module_method(sign):
    model = Unconverted()
    x = sign * jnp.ones((2, 4))
    params = model.init(jax.random.key(0), x)  # eager: Python's `if`
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        apply = autograph.convert(model.apply)
        got = jax.jit(apply)(params, x)
        got_params = jax.jit(autograph.convert(model.init))(jax.random.key(0), x)
    np.testing.assert_allclose(got, model.apply(params, x), rtol=1e-6)
    jax.tree_util.tree_map(np.testing.assert_array_equal, got_params, params)


def _branchy(x):
    if x.sum() > 0:
        return x * 2.0
    return -x


def test_convert_of_equinox_filter_jit_converts_the_function_inside():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = autograph.convert(eqx.filter_jit(_branchy))
    np.testing.assert_allclose(f(jnp.ones(3)), 2.0 * jnp.ones(3))
    np.testing.assert_allclose(f(-jnp.ones(3)), jnp.ones(3))


def _loss(w, x):
    y = x @ w
    if y.sum() > 0:
        return (y ** 2).sum()
    return jnp.abs(y).sum()


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_library_transformations_convert_their_function_arguments(sign):
    w = jnp.ones((3, 2))
    x = sign * jnp.arange(3.0)[None, :]
    want = jax.grad(autograph.convert(_loss))(w, x)

    def with_equinox(w, x):
        return eqx.filter_grad(_loss)(w, x)

    def with_nnx(w, x):
        return nnx.grad(_loss)(w, x)

    def with_scan(w, x):
        def body(c, row):
            return c + _loss(w, row[None, :]), None
        return jax.lax.scan(body, 0.0, jnp.concatenate([x, x]))[0]

    np.testing.assert_allclose(jax.jit(autograph.convert(with_equinox))(w, x), want, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(autograph.convert(with_nnx))(w, x), want, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(autograph.convert(with_scan))(w, x),
                               2.0 * autograph.convert(_loss)(w, x), rtol=1e-6)


class WithFunctionCall(nnx.Module):
    def __init__(self):
        self.scale = nnx.Param(jnp.array(2.0))

    @autograph.function
    def __call__(self, x):
        if x.sum() > 0:
            return x * self.scale[...]
        return x


def test_convert_of_a_module_whose_call_is_already_a_function_keeps_it():
    m = WithFunctionCall()
    assert autograph.convert(m) is m
    np.testing.assert_allclose(m(jnp.ones(2)), 2.0 * jnp.ones(2))


def test_optax_update_under_a_converted_branch():
    opt = optax.sgd(0.1)

    def step(w, state, x):
        loss, g = jax.value_and_grad(_loss)(w, x)
        if loss > 1.0:
            updates, state = opt.update(g, state)
            w = optax.apply_updates(w, updates)
        return w, state, loss

    w = jnp.ones((3, 2))
    state = opt.init(w)
    for sign in (1.0, -1.0):
        x = sign * jnp.arange(3.0)[None, :]
        got = jax.jit(autograph.convert(step))(w, state, x)
        with autograph.run_eagerly():
            want = autograph.convert(step)(w, state, x)
        jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6),
                               got, want)
