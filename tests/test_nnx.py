"""Flax NNX modules under converted control flow: updates reach the caller's objects.

Each test runs the same code eagerly (plain Python on concrete arrays, the
meaning of the program) and compiled (``nnx.jit(autograph.convert(f))`` or
``autograph.function(f)``), on inputs that take different branches and trip
counts, and compares the results and the modules' variables afterwards.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from flax import nnx

import autograph


class Counter(nnx.Module):
    def __init__(self):
        self.count = nnx.Variable(jnp.array(0))
        self.total = nnx.Variable(jnp.array(0.0))

    def __call__(self, x):
        while x < 10.0:
            x = x * 2.0
            self.count[...] += 1
        if x > 15.0:
            self.total[...] += x
        for i in range(3):
            self.total[...] += 0.5 * i
        return x


def _run(m, x):
    return m(x)


@pytest.mark.parametrize("x", [1.0, 3.0, 12.0, 20.0], ids=["4 trips", "2 trips", "0 trips, if",
                                                             "0 trips, no if"])
@pytest.mark.parametrize("how", ["nnx.jit", "function"])
def test_updates_in_loops_and_branches_reach_the_module(x, how):
    eager = Counter()
    want = _run(eager, jnp.float32(x))
    compiled = Counter()
    fn = nnx.jit(autograph.convert(_run)) if how == "nnx.jit" else autograph.function(_run)
    got = fn(compiled, jnp.float32(x))
    assert float(got) == float(want)
    assert int(compiled.count[...]) == int(eager.count[...])
    assert float(compiled.total[...]) == pytest.approx(float(eager.total[...]))


class Scale(nnx.Module):
    def __init__(self):
        self.calls = nnx.Variable(jnp.array(0))

    def __call__(self, y):
        self.calls[...] += 1
        return y * 1.5


def _apply_n(m, y, n):
    for _ in range(n):  # a traced trip count; `m` is read, never assigned, by the body
        y = m(y)
    return y


@pytest.mark.parametrize("n", [0, 1, 3])
def test_objects_reached_through_the_enclosing_function_are_updated(n):
    eager = Scale()
    want = _apply_n(eager, jnp.float32(2.0), n)
    m = Scale()
    got = nnx.jit(autograph.convert(_apply_n))(m, jnp.float32(2.0), jnp.int32(n))
    assert float(got) == pytest.approx(float(want))
    assert int(m.calls[...]) == int(eager.calls[...]) == n


def test_mutating_an_outside_object_under_plain_jit_fails_as_plain_jit_does():
    counter = Counter()

    def run(x):
        counter.total[...] += x
        return x

    def run_in_loop(x, n):
        for _ in range(n):
            counter.total[...] += x
        return x

    with pytest.raises(Exception) as plain:
        jax.jit(run)(1.0)
    with pytest.raises(type(plain.value)):
        jax.jit(autograph.convert(run_in_loop))(1.0, 3)


class Net(nnx.Module):
    def __init__(self, rngs):
        self.lin = nnx.Linear(4, 4, rngs=rngs)
        self.bn = nnx.BatchNorm(4, rngs=rngs)
        self.drop = nnx.Dropout(0.3, rngs=rngs)
        self.out = nnx.Linear(4, 1, rngs=rngs)
        self.steps = nnx.Variable(jnp.array(0))

    def __call__(self, x):
        h = x
        i = 0
        while jnp.abs(h).mean() < 3.0 and i < 3:
            h = self.bn(self.lin(h)) * 2.0   # BatchNorm updates its statistics
            self.steps[...] += 1
            i += 1
        return self.out(self.drop(h))


def _loss(model, x, y):
    return ((model(x) - y) ** 2).mean()


def _train_step(model, opt, x, y):
    loss, grads = nnx.value_and_grad(_loss)(model, x, y)
    opt.update(model, grads)
    return loss


def _trained(step, n=4):
    model = Net(nnx.Rngs(0))
    # SGD: BatchNorm makes the gradient of `lin.bias` pure rounding noise, which
    # Adam would blow up to full-size steps of either sign
    opt = nnx.Optimizer(model, optax.sgd(5e-2), wrt=nnx.Param)
    x = jax.random.normal(jax.random.key(1), (8, 4))
    y = jnp.ones((8, 1))
    losses = [float(step(model, opt, x, y)) for _ in range(n)]
    return losses, model


@pytest.mark.parametrize("how", ["nnx.jit", "function"])
def test_training_with_batchnorm_dropout_and_a_data_dependent_loop(how):
    with autograph.run_eagerly():
        want_losses, want_model = _trained(autograph.function(_train_step))
    step = (nnx.jit(autograph.convert(_train_step)) if how == "nnx.jit"
            else autograph.function(_train_step))
    losses, model = _trained(step)
    np.testing.assert_allclose(losses, want_losses, rtol=2e-4)
    assert len(set(losses)) == len(losses)  # the optimizer's updates are not dropped
    assert int(model.steps[...]) == int(want_model.steps[...]) > 0
    np.testing.assert_allclose(model.bn.mean[...], want_model.bn.mean[...], rtol=1e-4,
                               atol=1e-6)
    assert float(jnp.abs(model.bn.mean[...]).sum()) > 0


def test_adding_a_variable_in_a_staged_loop_is_a_clear_error():
    class Grows(nnx.Module):
        def __init__(self):
            self.v = nnx.Variable(jnp.array(0.0))

        def __call__(self, x):
            while x < 10.0:
                x = x * 2.0
                self.extra = nnx.Variable(x)
            return x

    with pytest.raises(autograph.LoopStateError, match="structure") as info:
        nnx.jit(autograph.convert(lambda m, x: m(x)))(Grows(), 1.0)
    assert "test_nnx.py" in str(info.value)


def test_replacing_a_module_in_a_staged_branch_is_a_clear_error():
    class Swap(nnx.Module):
        def __init__(self):
            self.v = nnx.Variable(jnp.array(0.0))

    def f(m, x):
        if x > 0:
            m = Swap()
        return m.v[...] + x

    with pytest.raises(autograph.BranchError, match="different Flax object"):
        nnx.jit(autograph.convert(f))(Swap(), 1.0)
