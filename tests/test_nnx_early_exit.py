"""Flax NNX training loops that stop early: `break` and `return` on a traced condition.

An epoch loop calls a training step per batch and stops once the loss is low
enough. Each test runs the same code eagerly (``autograph.run_eagerly``, the
meaning of the program) and compiled (``autograph.function`` and
``nnx.jit(autograph.convert(...))``), with few batches (the loop runs as
Python; after the first traced exit test each step is a staged branch) and
many (a staged loop), with a target the loss reaches early and one it never
reaches, and compares the losses, the parameters, the optimizer's step count
and the random streams' counts.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import autograph
from autograph.runtime.loop_forms import loop_plan

BATCHES = 4


@pytest.fixture(params=["python loop", "staged loop"])
def n(request, monkeypatch):
    """How many batches: a loop of that many trips runs as Python, or (with the
    threshold lowered below it) is staged."""
    if request.param == "staged loop":
        monkeypatch.setattr(loop_plan, "PYTHON_TRIPS", BATCHES // 2)
    return BATCHES


class Model(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 8, rngs=rngs)
        self.bn = nnx.BatchNorm(8, rngs=rngs)
        self.drop = nnx.Dropout(0.3, rngs=rngs)
        self.out = nnx.Linear(8, 1, rngs=rngs)

    def __call__(self, x):
        return self.out(self.drop(self.bn(jax.nn.relu(self.lin(x)))))


def loss_fn(model, x, y):
    return ((model(x) - y) ** 2).mean()


def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


def epoch_break(model, optimizer, xs, ys, target):
    loss = jnp.float32(0.0)
    for i in range(xs.shape[0]):
        loss = train_step(model, optimizer, xs[i], ys[i])
        if loss < target:
            break
    return loss


def epoch_return(model, optimizer, xs, ys, target):
    for x, y in zip(xs, ys):
        loss = train_step(model, optimizer, x, y)
        if loss < target:
            return loss, True
    return loss, False


def epoch_while(model, optimizer, xs, ys, target):
    i = 0
    loss = jnp.float32(jnp.inf)
    while i < xs.shape[0] and loss > target:
        loss = train_step(model, optimizer, xs[i], ys[i])
        i += 1
    return loss, i


def forward_break(model, xs, ys, target):
    loss = jnp.float32(0.0)
    for i in range(xs.shape[0]):
        loss = loss_fn(model, xs[i], ys[i])
        if loss < target:
            break
    return loss


def _data(n):
    xs = jax.random.normal(jax.random.key(1), (n, 8, 4))
    return xs, jnp.ones((n, 8, 1))


def _fresh():
    model = Model(nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)


def _compiled(fn, how):
    return autograph.function(fn) if how == "function" else nnx.jit(autograph.convert(fn))


def _run(epoch, n, target, compile_with):
    """(result, model, optimizer) of one epoch: eagerly when ``compile_with`` is None."""
    model, optimizer = _fresh()
    xs, ys = _data(n)
    if compile_with is None:
        with autograph.run_eagerly():
            out = autograph.function(epoch)(model, optimizer, xs, ys, jnp.float32(target))
    else:
        out = _compiled(epoch, compile_with)(model, optimizer, xs, ys, jnp.float32(target))
    return out, model, optimizer


def _assert_same_state(got, want):
    np.testing.assert_allclose(got.lin.kernel[...], want.lin.kernel[...], rtol=2e-4, atol=1e-6)
    np.testing.assert_allclose(got.bn.mean[...], want.bn.mean[...], rtol=2e-4, atol=1e-6)
    assert int(got.drop.rngs.count[...]) == int(want.drop.rngs.count[...])


# the first batch's loss is about 2.9 and the second's 1.4: 2.0 stops after two
# batches, 0.0 is never reached. Every jump and target where the loop is staged; where
# it runs as Python (each step after the traced exit test a staged branch), each jump
# once, stopping for `break` and `while` and running out for `return`
def _case(staged, epoch, target):
    how = "staged loop" if staged else "python loop"
    jump = epoch.__name__.removeprefix("epoch_")
    return pytest.param(staged, epoch, target,
                        id=f"{how}-{jump}-{'stops' if target else 'runs out'}")


@pytest.mark.parametrize("staged, epoch, target", [
    *[_case(True, e, t) for e in (epoch_break, epoch_return, epoch_while) for t in (2.0, 0.0)],
    _case(False, epoch_break, 2.0), _case(False, epoch_return, 0.0),
    _case(False, epoch_while, 2.0)])
def test_epoch_with_early_stop_matches_eager(staged, epoch, target, monkeypatch):
    n = BATCHES
    if staged:
        monkeypatch.setattr(loop_plan, "PYTHON_TRIPS", BATCHES // 2)
    want, want_model, want_opt = _run(epoch, n, target, None)
    got, model, opt = _run(epoch, n, target, "function")
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4), got, want)
    _assert_same_state(model, want_model)
    assert int(opt.step[...]) == int(want_opt.step[...])
    assert int(opt.step[...]) == (2 if target else n)


def test_epoch_under_nnx_jit_matches_eager(n):
    want, want_model, _ = _run(epoch_break, n, 2.0, None)
    got, model, opt = _run(epoch_break, n, 2.0, "nnx.jit")
    np.testing.assert_allclose(got, want, rtol=2e-4)
    _assert_same_state(model, want_model)
    assert int(opt.step[...]) == 2


def test_forward_with_dropout_and_early_stop_matches_eager(n):
    xs, ys = _data(n)
    want_model, model = Model(nnx.Rngs(0)), Model(nnx.Rngs(0))
    with autograph.run_eagerly():
        want = autograph.function(forward_break)(want_model, xs, ys, jnp.float32(1.0))
    got = autograph.function(forward_break)(model, xs, ys, jnp.float32(1.0))
    np.testing.assert_allclose(got, want, rtol=2e-4)
    _assert_same_state(model, want_model)
    assert int(model.drop.rngs.count[...]) > 1


def sample_until(xs, limit, rngs):
    total = jnp.float32(0.0)
    key = jax.random.key(7)
    for i in range(xs.shape[0]):
        key, sub = jax.random.split(key)
        total = total + xs[i] * jax.random.uniform(sub) + jax.random.normal(rngs.noise())
        if total > limit:
            break
    return total, key


@pytest.mark.parametrize("limit", [1.5, 100.0], ids=["stops", "runs out"])
def test_typed_keys_and_rng_streams_carried_through_a_loop_with_break(n, limit):
    xs = jnp.linspace(0.5, 1.0, n)
    want_rngs, rngs = nnx.Rngs(noise=3), nnx.Rngs(noise=3)
    with autograph.run_eagerly():
        want_total, want_key = autograph.function(sample_until)(xs, limit, want_rngs)
    total, key = autograph.function(sample_until)(xs, jnp.float32(limit), rngs)
    np.testing.assert_allclose(total, want_total, rtol=1e-5)
    np.testing.assert_array_equal(jax.random.key_data(key), jax.random.key_data(want_key))
    assert int(rngs.noise.count[...]) == int(want_rngs.noise.count[...])


class Refine(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(3, 3, rngs=rngs)

    def __call__(self, x):
        i = 0
        while jnp.abs(x).sum() < 4.0 and i < 5:
            x = x + jnp.tanh(self.lin(x))
            i += 1
        return x


def _loss_jax_vmap(model, xs):
    return jax.vmap(lambda xi: model(xi))(xs).sum()


def _loss_nnx_vmap(model, xs):
    return nnx.vmap(lambda m, xi: m(xi), in_axes=(None, 0))(model, xs).sum()


def _loss_one_by_one(model, xs):
    return sum(model(xs[j]) for j in range(xs.shape[0])).sum()


@pytest.mark.parametrize("loss", [_loss_jax_vmap, _loss_nnx_vmap], ids=["jax.vmap", "nnx.vmap"])
@pytest.mark.parametrize("how", ["function", "nnx.jit"])
def test_vmap_of_a_module_with_a_traced_while_inside_value_and_grad(loss, how):
    xs = jax.random.normal(jax.random.key(1), (5, 3))

    def step(model, xs):
        return nnx.value_and_grad(loss)(model, xs)

    def step_one_by_one(model, xs):
        return nnx.value_and_grad(_loss_one_by_one)(model, xs)

    want_value, want_grads = autograph.function(step_one_by_one)(Refine(nnx.Rngs(0)), xs)
    value, grads = _compiled(step, how)(Refine(nnx.Rngs(0)), xs)
    np.testing.assert_allclose(value, want_value, rtol=1e-5)
    np.testing.assert_allclose(grads.lin.kernel[...], want_grads.lin.kernel[...], rtol=1e-4)


class Member(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(3, 3, rngs=rngs)
        self.drop = nnx.Dropout(0.2, rngs=rngs)
        self.steps = nnx.Variable(jnp.array(0))

    def __call__(self, x):
        i = 0
        while jnp.abs(x).sum() < 3.0 and i < 6:
            x = x + jnp.tanh(self.drop(self.lin(x)))
            self.steps[...] += 1
            i += 1
        return x


def _ensemble_forward(models, x):
    return nnx.vmap(lambda m, x: m(x), in_axes=(0, None))(models, x)


@pytest.mark.parametrize("how", ["function", "nnx.jit"])
def test_nnx_vmap_over_an_ensemble_updating_variables_in_a_traced_while(how):
    keys = jax.random.split(jax.random.key(0), 4)
    members = [Member(nnx.Rngs(k)) for k in keys]
    x = jnp.full((3,), 0.2)
    want = jnp.stack([autograph.convert(lambda m, x: m(x))(m, x) for m in members])
    models = nnx.vmap(Member, in_axes=0, out_axes=0)(nnx.Rngs(keys))
    got = _compiled(_ensemble_forward, how)(models, x)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_array_equal(models.steps[...], [int(m.steps[...]) for m in members])


class Counter(nnx.Module):
    def __init__(self):
        self.count = nnx.Variable(jnp.array(0))

    def __call__(self, x):
        while x < 10.0:
            x = x * 2.0
            self.count[...] += 1
        return x


def _count(m, x):
    return m(x)


def _read(m, x):
    return m.count[...] + x


def test_plain_jax_jit_that_loses_variable_updates_warns_once():
    m = Counter()
    step = jax.jit(autograph.convert(_count))
    with pytest.warns(UserWarning, match=r"`_count` changes Flax NNX variables .* lost"
                                         r".*nnx\.jit\(autograph\.convert\(f\)\)") as record:
        assert float(step(m, 1.0)) == 16.0
    assert record[0].filename == __file__
    assert int(m.count[...]) == 0  # as under plain jax.jit: the module was a copy
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step(m, 3.0)  # traced again: no second warning
        jax.jit(autograph.convert(_read))(m, 1.0)  # reads only
        nnx.jit(autograph.convert(_count))(m, 1.0)  # nnx.jit writes the updates back
        autograph.function(_count)(m, 1.0)
    assert int(m.count[...]) == 8
