"""Second derivatives in reverse mode through staged `while` loops with no bound.

`jax.grad(jax.grad(f))`, `jax.jacrev(jax.jacrev(f))` and `jax.grad` of
`jax.jvp` go through the checkpointed loop: its derivative forms transpose
into each other (``runtime/loop_forms/checkpointed``). Each is compared, in float64,
with the same derivative of the unconverted function run eagerly, where the
loop runs in Python: Newton's method, bisection, an adaptive ODE stepper and
a loop with `break`, at 0, 1, S, S + 1 (S: the kept states) and over 1,000
trips, and under `jax.vmap` with lanes that stop at different steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import autograph
from autograph import jax_internals
from tests.test_examples import load

_example = load("until_converged")
newton, bisection, adaptive_ode = (
    getattr(_example, name) for name in ("newton", "bisection", "adaptive_ode"))


def _value(fn):
    """The function's first result (the programs also return their trip count)."""
    return lambda *a: fn(*a)[0]


def _summed(tree):
    return sum(jnp.sum(leaf) for leaf in jax.tree.leaves(tree))


def grad_of_grad(f):
    """The gradient, in both arguments, of the sum of the gradient's entries."""
    inner = jax.grad(f, argnums=(0, 1))
    return jax.grad(lambda x, y, *rest: _summed(inner(x, y, *rest)), argnums=(0, 1))


def jacrev_of_jacrev(f):
    return jax.jacrev(jax.jacrev(f, argnums=(0, 1)), argnums=(0, 1))


def grad_of_jvp(f):
    def directional(x, y, *rest):
        ones = jax.tree.map(jnp.ones_like, (x, y))
        return jax.jvp(lambda x, y: f(x, y, *rest), (x, y), ones)[1]
    return jax.grad(directional, argnums=(0, 1))


SPELLINGS = {"grad(grad)": grad_of_grad, "jacrev(jacrev)": jacrev_of_jacrev,
             "grad(jvp)": grad_of_jvp}


def _check(derivative, fn, *cases, rtol=1e-9, atol=1e-12):
    """``derivative`` of the converted ``fn`` (one compiled program) against that of
    ``fn`` run eagerly, at each of ``cases`` (argument tuples of one shape)."""
    with jax_internals.enable_x64(True):
        compiled = jax.jit(derivative(_value(autograph.convert(fn))))
        for args in cases:
            args = jax.tree.map(jnp.float64, args)
            want = derivative(_value(fn))(*args)  # the Python loop
            got = compiled(*args)
            assert jax.tree.structure(got) == jax.tree.structure(want)
            for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
                np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


def trips(fn, args):
    with jax_internals.enable_x64(True):
        return int(fn(*jax.tree.map(jnp.float64, args))[1])


# arguments with 0, 1 and 10 or more trips
CASES = {
    "newton": (newton, [(2.0, 0.5), (2.05, 1.0), (3.0, 0.5)]),
    "bisection": (bisection, [(1.0, 1.0005, 0.5), (1.2, 1.2019, 0.5), (0.5, 1.5, 0.5)]),
    "adaptive_ode": (adaptive_ode, [({"y": 1.0, "v": 0.0}, 2.0, 0.0, 1e-2),
                                    ({"y": 1.0, "v": 0.0}, 2.0, 0.05, 1e-2),
                                    ({"y": 1.0, "v": 0.0}, 2.0, 0.3, 1e-3)]),
}
# every spelling on Newton's method, the others in one
ALL = [(name, spelling) for name in sorted(CASES) for spelling in sorted(SPELLINGS)
       if name == "newton" or spelling == "grad(grad)"]


@pytest.mark.parametrize("name,spelling", ALL)
def test_second_derivatives_equal_the_python_loop(name, spelling):
    fn, cases = CASES[name]
    counts = [trips(fn, args) for args in cases]
    assert counts[:2] == [0, 1] and counts[2] >= 10
    _check(SPELLINGS[spelling], fn, *cases)


def damped(x, a, n, stop=10.0):
    """``n`` steps (a traced count: no bound the converter can see), or fewer with `break`."""
    i = 0
    while i < n:
        autograph.set_loop_options(checkpoints=8)
        x = x + 0.01 * jnp.sin(a * x) * x
        if x > stop:
            break
        i += 1
    return x, i


def test_around_and_past_the_kept_states():
    # 8 kept states, 4 of them for the sweep: at 4, 5, 8 and 9 steps the sweep
    # and the backward pass change what they keep; at 60 both thin them out;
    # with `break` the loop ends before its count
    cases = [(0.5, 1.3, n) for n in (0, 1, 4, 5, 8, 9, 60)] + [(0.5, 1.3, 500, 1.0)]
    with jax_internals.enable_x64(True):
        assert [trips(damped, args) for args in cases[:-1]] == [0, 1, 4, 5, 8, 9, 60]
        assert 60 < trips(damped, cases[-1]) < 500
    _check(grad_of_grad, damped, *cases, rtol=1e-8)


def test_over_a_thousand_steps():
    # The eager Python loop takes a minute here, so the reference is the loop's
    # 1,500 steps as a `lax.scan` (whose trip count is known), which reverse mode
    # differentiates directly; the cases above compare with the Python loop.
    def scanned(x, a):
        step = lambda x, _: (x + 0.01 * jnp.sin(a * x) * x, None)  # noqa: E731
        return lax.scan(step, x, None, length=1500)[0]

    with jax_internals.enable_x64(True):
        args = (jnp.float64(0.5), jnp.float64(1.3), 1500)
        assert trips(damped, args) == 1500
        want = jax.jit(grad_of_grad(scanned))(*args[:2])
        got = jax.jit(grad_of_grad(_value(autograph.convert(damped))))(*args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-8)


@pytest.mark.parametrize("spelling", [grad_of_grad, grad_of_jvp], ids=["grad(grad)",
                                                                      "grad(jvp)"])
def test_under_vmap_lanes_stop_at_different_steps(spelling):
    targets = np.array([2.0, 2.05, 3.0, 30.0])  # 0 to about 30 steps
    with jax_internals.enable_x64(True):
        counts = [trips(newton, (a, 0.5)) for a in targets]
        assert len(set(counts)) == 4 and counts[0] == 0
        want = [spelling(_value(newton))(a, 0.5) for a in map(jnp.float64, targets)]
        per_lane = jax.jit(jax.vmap(spelling(_value(autograph.convert(newton))), (0, None)))
        got = per_lane(jnp.asarray(targets), jnp.float64(0.5))
        for i, w in enumerate(want):
            for g, v in zip(got, w):
                np.testing.assert_allclose(g[i], v, rtol=1e-9, atol=1e-12)


def test_vmap_inside_the_second_derivative():
    # the batched loop (one lane per element) differentiated twice
    def total(a, d):
        return jnp.sum(jax.vmap(lambda a: _value(autograph.convert(newton))(a, d))(a))

    def eager(a, d):
        return sum(_value(newton)(x, d) for x in a)

    targets = np.array([2.05, 3.0, 30.0])
    with jax_internals.enable_x64(True):
        args = (jnp.asarray(targets), jnp.float64(0.5))
        want = grad_of_grad(eager)(*args)
        got = jax.jit(grad_of_grad(total))(*args)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12)


def test_hessian_spellings_agree():
    # forward over reverse (jax.hessian) and reverse over reverse give one matrix
    f = _value(autograph.convert(newton))
    with jax_internals.enable_x64(True):
        args = (jnp.float64(3.0), jnp.float64(0.5))
        forward = jax.jit(jax.hessian(f, argnums=(0, 1)))(*args)
        reverse = jax.jit(jacrev_of_jacrev(f))(*args)
        for a, b in zip(jax.tree.leaves(forward), jax.tree.leaves(reverse)):
            np.testing.assert_allclose(a, b, rtol=1e-10)


def test_third_derivatives():
    # a second derivative is a first derivative of the loop that carries tangents
    # along, so every order goes through, forward and reverse
    def third(h):
        return jax.grad(jax.grad(jax.grad(h)))

    with jax_internals.enable_x64(True):
        np.testing.assert_allclose(jax.jit(third(_value(autograph.convert(newton))))(3.0, 0.5),
                                   third(_value(newton))(3.0, 0.5), rtol=1e-8)
