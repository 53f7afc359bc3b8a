"""Equinox with autograph: ``autograph.function`` as ``eqx.filter_jit``, filtered wrappers.

``autograph.function`` takes and returns Equinox modules as ``eqx.filter_jit``
does: array leaves traced, every other leaf static in the arguments and
returned as it is (an activation function, a string, a flag), so a model or
an ``eqx.nn.State`` comes back ready for the next call. Each result is
compared with ``eqx.filter_jit`` of the converted function and with the eager
run. Converting one of Equinox's filtered wrappers (``eqx.filter_jit(f)``,
``filter_grad``, ...) converts the function inside, with the wrapper's options.
"""

from __future__ import annotations

import warnings

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import autograph


class Net(eqx.Module):
    mlp: eqx.nn.MLP
    scale: float
    name: str

    def __init__(self, key):
        self.mlp = eqx.nn.MLP(3, 1, 8, 2, key=key)
        self.scale = 2.0
        self.name = "net"

    def __call__(self, x):
        y = self.mlp(x)
        if y.sum() > 0:
            y = y * self.scale
        return y


OPT = optax.sgd(0.1)


def _loss(model, x, y):
    return ((jax.vmap(model)(x) - y) ** 2).mean()


def train_step(model, opt_state, x, y):
    loss, grads = eqx.filter_value_and_grad(_loss)(model, x, y)
    updates, opt_state = OPT.update(grads, opt_state, eqx.filter(model, eqx.is_array))
    return eqx.apply_updates(model, updates), opt_state, loss


def _start():
    model = Net(jax.random.key(0))
    x = jax.random.normal(jax.random.key(1), (6, 3))
    return model, OPT.init(eqx.filter(model, eqx.is_array)), x, jnp.ones((6, 1))


def _same(a, b):
    arrays_a, rest_a = eqx.partition(a, eqx.is_array)
    arrays_b, rest_b = eqx.partition(b, eqx.is_array)
    assert jax.tree_util.tree_structure(a) == jax.tree_util.tree_structure(b)
    assert jax.tree_util.tree_leaves(rest_a) == jax.tree_util.tree_leaves(rest_b)
    jax.tree_util.tree_map(lambda u, v: np.testing.assert_allclose(u, v, rtol=1e-5),
                           arrays_a, arrays_b)


def test_function_trains_an_equinox_model_as_filter_jit_does():
    step = autograph.function(train_step)
    reference = eqx.filter_jit(autograph.convert(train_step))
    model, state, x, y = _start()
    want_model, want_state = model, state
    for _ in range(3):  # the returned model is the next call's argument
        model, state, loss = step(model, state, x, y)
        want_model, want_state, want_loss = reference(want_model, want_state, x, y)
        np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    _same(model, want_model)
    assert model.mlp.activation is want_model.mlp.activation is jax.nn.relu
    assert type(model.scale) is float and model.name == "net"
    assert step.experimental_get_tracing_count() == 1


def predict(model, x):
    return model, model(x)


@pytest.mark.parametrize("row", [0, 1, 2, 3])
def test_function_of_an_equinox_model_matches_eager(row):
    model, _, x, _ = _start()
    with autograph.run_eagerly():
        _, want = autograph.function(predict)(model, x[row])
    same_model, got = autograph.function(predict)(model, x[row])
    np.testing.assert_allclose(got, want, rtol=1e-5)
    _same(same_model, model)


class Normed(eqx.Module):
    lin: eqx.nn.Linear
    norm: eqx.nn.BatchNorm

    def __init__(self, key):
        self.lin = eqx.nn.Linear(3, 4, key=key)
        self.norm = eqx.nn.BatchNorm(4, axis_name="batch", mode="batch")

    def __call__(self, x, state):
        h, state = self.norm(self.lin(x), state)
        if h.sum() > 0:
            h = h * 2.0
        return h, state


def forward(model, state, x):
    y, state = jax.vmap(model, in_axes=(0, None), out_axes=(0, None),
                        axis_name="batch")(x, state)
    return model, state, y


def test_state_and_a_module_with_string_and_flag_fields_round_trip():
    model, state = eqx.nn.make_with_state(Normed)(jax.random.key(0))
    x = jax.random.normal(jax.random.key(1), (5, 3))
    step = autograph.function(forward)
    reference = eqx.filter_jit(autograph.convert(forward))
    got, want = (model, state), (model, state)
    for _ in range(2):
        *got, y = step(*got, x)
        *want, want_y = reference(*want, x)
        np.testing.assert_allclose(y, want_y, rtol=1e-5)
    assert isinstance(got[1], eqx.nn.State)
    assert got[0].norm.axis_name == "batch" and got[0].norm.inference is False
    _same(got[1], want[1])
    inference = eqx.nn.inference_mode(got[0])  # a flag changed: traced again, used as Python
    _, _, y = step(inference, got[1], x)
    _, _, want_y = reference(eqx.nn.inference_mode(want[0]), want[1], x)
    np.testing.assert_allclose(y, want_y, rtol=1e-5)


def test_any_pytree_returns_its_non_array_leaves_as_they_are():
    @autograph.function
    def describe(x):
        if x.sum() > 0:
            label = jnp.float32(1.0)
        else:
            label = jnp.float32(-1.0)
        return {"label": label, "activation": jax.nn.tanh, "unit": "m", "count": 3}

    out = describe(jnp.ones(2))
    assert out["activation"] is jax.nn.tanh and out["unit"] == "m"
    assert isinstance(out["count"], jax.Array)  # a Python number: an array, as jax.jit does
    assert float(describe(-jnp.ones(2))["label"]) == -1.0


def _branchy_loss(w, x):
    y = x @ w
    if y.sum() > 0:
        return (y ** 2).sum(), y
    return jnp.abs(y).sum(), y


WRAPPERS = {  # one per row of the table in runtime/functions/libraries.py
    "filter_jit": lambda f: eqx.filter_jit(lambda w, x: f(w, x)[0], donate="none"),
    "filter_value_and_grad": lambda f: eqx.filter_value_and_grad(f, has_aux=True),
    "filter_grad": lambda f: eqx.filter_grad(f, has_aux=True),
    "filter_vmap": lambda f: eqx.filter_vmap(f, in_axes=(None, 0)),
    "filter_checkpoint": lambda f: eqx.filter_checkpoint(f, prevent_cse=False),
}


def _wrapped(name, f):
    if name == "filter_jit":  # a converted lambda needs its source: wrap a named function
        def first(w, x):
            return f(w, x)[0]
        return eqx.filter_jit(first, donate="none")
    return WRAPPERS[name](f)


@pytest.mark.parametrize("sign", [1.0, -1.0])
@pytest.mark.parametrize("name", WRAPPERS)
def test_convert_of_a_filtered_wrapper_converts_its_function(name, sign):
    w = jnp.ones((3, 2))
    x = sign * jnp.arange(1.0, 4.0)[None, :]
    xs = jnp.stack([x, -x]) if name == "filter_vmap" else x
    want = _wrapped(name, autograph.convert(_branchy_loss))(w, xs)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        converted = autograph.convert(_wrapped(name, _branchy_loss))
    assert type(converted) is type(_wrapped(name, _branchy_loss))
    got = converted(w, xs)
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6), got, want)


def test_filter_jit_rebuilt_keeps_its_options():
    f = eqx.filter_jit(_branchy_loss, donate="all-except-first")
    g = autograph.convert(f)
    assert (g.donate_first, g.donate_rest, g.filter_warning) == (False, True, True)
    assert g._cached is f._cached  # the jax.jit keywords it was made with


GRAD_FN = eqx.filter_value_and_grad(_branchy_loss, has_aux=True)


def test_a_wrapper_made_outside_is_converted_when_converted_code_calls_it():
    def step(w, x):
        (loss, _), g = GRAD_FN(w, x)
        if loss > 1.0:
            w = w - 0.1 * g
        return w, loss

    w = jnp.ones((3, 2))
    for sign in (1.0, -1.0):
        x = sign * jnp.arange(1.0, 4.0)[None, :]
        got = jax.jit(autograph.convert(step))(w, x)
        with autograph.run_eagerly():
            want = autograph.convert(step)(w, x)
        jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-6),
                               got, want)
