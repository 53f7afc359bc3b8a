"""Flax linen entry points convert the module's own code.

``autograph.convert(model.apply)`` (or ``init``, a lambda calling them, a
converted method handed as ``method=``) runs linen's code around the
*converted* method, so an ``if`` or ``while`` on arrays in ``__call__`` works
under ``jax.jit``. Each result is compared with the eager run of the same
model (linen's own ``init``/``apply`` on concrete arrays, where Python's ``if``
decides). Layers made inside a loop that stops on a traced condition are a
``LoopStateError`` naming the layer.
"""

from __future__ import annotations

import warnings

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph


class Compact(nn.Module):
    @nn.compact
    def __call__(self, x):
        h = nn.Dense(3)(x)
        if h.sum() > 0:
            h = h * 0.5
        else:
            h = -h
        return h

    def scaled(self, x, k):
        y = self(x)
        while jnp.abs(y).sum() < 10.0:
            y = y * k
        return y


class WithSetup(nn.Module):
    def setup(self):
        self.dense = nn.Dense(3)
        self.inner = Compact()

    def __call__(self, x):
        h = self.dense(x) + self.inner(x)  # `inner`'s own `if` is converted too
        while h.sum() < 10.0:
            h = h * 2.0 + 1.0
        return h


X = {"positive": jnp.ones((2, 4)), "negative": -jnp.ones((2, 4))}


def _quiet(run):
    """``run()`` with any warning an error: converting a linen entry point warns nothing."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return run()


@pytest.mark.parametrize("x", X.values(), ids=X.keys())
@pytest.mark.parametrize("model", [Compact(), WithSetup()], ids=["compact", "setup"])
def test_the_spellings_of_apply_and_init_match_eager(model, x):
    key = jax.random.key(0)
    params = model.init(key, x)
    want = model.apply(params, x)
    method = autograph.convert(type(model).__call__)
    spellings = {
        "convert(apply)": lambda: jax.jit(autograph.convert(model.apply))(params, x),
        "lambda": lambda: jax.jit(autograph.convert(lambda p, x: model.apply(p, x)))(params, x),
        "method=": lambda: jax.jit(lambda p, x: model.apply(p, x, method=method))(params, x),
        "function(apply)": lambda: autograph.function(model.apply)(params, x),
    }
    for name, run in spellings.items():
        np.testing.assert_allclose(_quiet(run), want, rtol=1e-6, err_msg=name)
    got_params = _quiet(lambda: jax.jit(autograph.convert(model.init))(key, x))
    jax.tree_util.tree_map(np.testing.assert_array_equal, got_params, params)


@pytest.mark.parametrize("x", X.values(), ids=X.keys())
def test_apply_with_another_method_by_name_or_function(x):
    model = Compact()
    params = model.init(jax.random.key(0), x)
    want = model.apply(params, x, 3.0, method="scaled")
    apply = autograph.convert(model.apply)
    np.testing.assert_allclose(jax.jit(apply, static_argnames="method")(
        params, x, 3.0, method="scaled"), want, rtol=1e-6)
    np.testing.assert_allclose(jax.jit(lambda p, x: apply(p, x, 3.0, method=Compact.scaled))(
        params, x), want, rtol=1e-6)
    # reverse mode through the converted method: its branch, and the `while` of `scaled`
    # (no bound: differentiated with checkpoints)
    grads = jax.jit(jax.grad(lambda p: apply(p, x, method="__call__").sum()))(params)
    assert jax.tree_util.tree_structure(grads) == jax.tree_util.tree_structure(params)
    scaled = jax.jit(jax.grad(lambda p: apply(p, x, 3.0, method="scaled").sum()))(params)
    want = jax.grad(lambda p: model.apply(p, x, 3.0, method="scaled").sum())(params)
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5),
                           scaled, want)


class DecoratedWithFunction(nn.Module):
    @autograph.function
    @nn.compact
    def __call__(self, x):
        h = nn.Dense(3)(x)
        if h.sum() > 0:
            h = h * 0.5
        return h


@pytest.mark.parametrize("x", X.values(), ids=X.keys())
def test_autograph_function_on_a_compact_method_converts_it(x):
    model = DecoratedWithFunction()
    params = jax.jit(model.init)(jax.random.key(0), x)
    assert params["params"]["Dense_0"]["kernel"].shape == (4, 3)
    h = nn.Dense(3).apply({"params": params["params"]["Dense_0"]}, x)
    want = h * 0.5 if float(h.sum()) > 0 else h
    np.testing.assert_allclose(jax.jit(model.apply)(params, x), want, rtol=1e-6)


class LayersInLoop(nn.Module):
    @nn.compact
    def __call__(self, x):
        for _ in range(3):
            x = nn.Dense(4)(x)
            if x.sum() > 100.0:
                break
        return x


class FirstCallInLoop(nn.Module):
    def setup(self):
        self.step = nn.Dense(4)

    def __call__(self, x):
        while x.sum() < 100.0:
            x = self.step(x) + 1.0
        return x


class LayersBeforeLoop(nn.Module):
    @nn.compact
    def __call__(self, x):
        layers = [nn.Dense(4) for _ in range(3)]
        h = x
        for layer in layers:
            h = layer(h)  # linen makes the parameters here, before the loop
        for i in range(3):
            x = layers[i](x)
            if x.sum() > 100.0:
                break
        return x


@pytest.mark.parametrize("model, line, layer", [
    (LayersInLoop(), "for _ in range(3):", "Dense_1"),
    (FirstCallInLoop(), "while x.sum() < 100.0:", "step.kernel"),
], ids=["created in the loop", "first called in the loop"])
def test_a_layer_made_inside_a_loop_with_a_traced_exit_is_a_clear_error(model, line, layer):
    with pytest.raises(autograph.LoopStateError, match="linen layer cannot be created") as info:
        jax.jit(autograph.convert(model.init))(jax.random.key(0), jnp.ones((2, 4)))
    message = str(info.value)
    assert "test_linen.py" in message and line in message
    assert f"variable: {layer}" in message and "create the layers before the loop" in message


def test_layers_made_before_the_loop_run_in_it():
    model = LayersBeforeLoop()
    x = jnp.ones((2, 4))
    params = model.init(jax.random.key(0), x)
    got = jax.jit(autograph.convert(model.apply))(params, x)
    np.testing.assert_allclose(got, model.apply(params, x), rtol=1e-6)
