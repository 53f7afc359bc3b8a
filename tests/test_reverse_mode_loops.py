"""`jax.grad` through `while` loops bounded by a counter, with no hint from the user.

A counter that starts as a Python int, is compared with a Python int and
moves by a constant step on every path bounds the loop; under reverse-mode
differentiation the loop is then staged as a masked ``lax.scan``. Gradients
are compared with the plain-Python gradient (``jax.grad`` of the unconverted
function on concrete values runs the loop in Python) and with the same loop
written with ``autograph.set_loop_options``, on inputs that exit at the
first, a middle and no iteration.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph


def grows(x):
    i = 0
    while x < 100.0 and i < 6:
        x = x * 1.7 + jnp.sin(x)
        i += 1
    return x


def grows_hinted(x):
    i = 0
    while x < 100.0 and i < 6:
        autograph.set_loop_options(maximum_iterations=6)
        x = x * 1.7 + jnp.sin(x)
        i += 1
    return x


def countdown(x, n):
    k = n
    while k > 0 and x > 0.1:
        x = x * 0.5 + 0.01 * k
        k -= 2
    return x


def not_equal(x):
    j = 0
    while j != 8 and x < 50.0:
        x = x * x + 1.0
        j = j + 2
    return x


@pytest.mark.parametrize("x", [150.0, 20.0, 0.5], ids=["exit at once", "middle", "all trips"])
def test_grad_through_counter_bounded_while_without_hint(x):
    want = jax.grad(grows)(jnp.float32(x))  # Python loop on concrete values
    got = jax.grad(autograph.convert(grows))(jnp.float32(x))
    hinted = jax.jit(jax.grad(autograph.convert(grows_hinted)))(jnp.float32(x))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(jax.jit(jax.grad(autograph.convert(grows)))(x), want, rtol=1e-5)
    np.testing.assert_allclose(hinted, want, rtol=1e-5)


@pytest.mark.parametrize("x", [0.05, 1.0, 30.0])
@pytest.mark.parametrize("n", [0, 3, 7])
def test_counting_down_with_a_step_of_two(x, n):
    want = jax.grad(countdown)(jnp.float32(x), n)
    got = jax.jit(jax.grad(autograph.convert(countdown)), static_argnums=1)(jnp.float32(x), n)
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("x", [0.5, 3.0, 60.0])
def test_not_equal_counter_reaches_its_limit(x):
    want = jax.grad(not_equal)(jnp.float32(x))
    got = jax.jit(jax.grad(autograph.convert(not_equal)))(jnp.float32(x))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_forward_runs_keep_the_early_exit_while_loop():
    # without reverse mode the loop stays a `while_loop` (it stops at its test)
    jaxpr = jax.make_jaxpr(autograph.convert(grows))(1.0)
    assert "while" in str(jaxpr) and "scan" not in str(jaxpr)
    jaxpr = jax.make_jaxpr(jax.grad(autograph.convert(grows)))(1.0)
    assert "scan" in str(jaxpr)


def test_counter_that_moves_on_one_path_only_is_not_a_bound():
    def f(x):
        i = 0
        while x < 100.0 and i < 6:
            x = x * 2.0
            if x > 10.0:
                i += 1
        return x

    src = autograph.to_code(f)
    assert "bound=" not in src


def breaks_before_its_step(x):
    j = 0
    while j < 30:
        x = x + 0.05 * jnp.cos(x)
        if x > 1.0:
            break
        j += 1
    return x


def continues_before_its_step(x):
    j = 0
    while j < 30:
        x = x + 0.05 * jnp.cos(x)
        if x > 1.0:
            continue
        j += 1
    return x


@pytest.mark.parametrize("x", [0.2, 0.9, 2.0])
def test_a_break_before_the_counter_step_keeps_the_bound(x):
    # every iteration that goes on runs `j += 1`; a `break` ends the loop
    assert "bound=('j'" in autograph.to_code(breaks_before_its_step)
    want = jax.grad(breaks_before_its_step)(jnp.float32(x))
    got = jax.grad(autograph.convert(breaks_before_its_step))(jnp.float32(x))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # a `continue` before the step may skip it: no bound
    assert "bound=" not in autograph.to_code(continues_before_its_step)


def test_counter_bound_in_generated_code():
    src = autograph.to_code(grows)
    assert "bound=('i', '<', lambda: 6, 1)" in src


class _Box:
    def __init__(self):
        self.n = 3

    def bump(self):
        self.n += 1
        return 0.0


def test_a_limit_that_changes_while_the_body_runs_is_an_error():
    def f(x):
        box = _Box()
        i = 0
        while x < 100.0 and i < box.n:
            x = x * 2.0 + box.bump()
            i += 1
        return x

    assert "lambda: box.n" in autograph.to_code(f)
    with pytest.raises(autograph.LoopStateError, match="limit") as info:
        jax.jit(jax.grad(autograph.convert(f)))(1.0)
    assert "test_reverse_mode_loops.py" in str(info.value)


def _unbounded(x):
    while x < 10.0:
        x = x * 1.5
    return x


def test_grad_through_an_unbounded_while_in_converted_code_names_the_loop():
    def step(x):
        return jax.grad(_unbounded)(x)

    for run in (autograph.function(step), jax.jit(autograph.convert(step))):
        with pytest.raises(autograph.LoopStateError, match="reverse-mode") as info:
            run(1.0)
        msg = str(info.value)
        assert "test_reverse_mode_loops.py" in msg and "while x < 10.0" in msg
        assert "set_loop_options(maximum_iterations=N)" in msg
    # forward mode goes through the same loop
    assert float(jax.jit(autograph.convert(lambda x: jax.jacfwd(_unbounded)(x)))(1.0)) > 0


@pytest.mark.parametrize("x0", [1.5, 0.5, -0.5])  # exits at the first step, the 14th, never
def test_counter_stepped_after_a_traced_break_still_bounds_the_loop(x0):
    # staged, the first step's traced exit makes `j` traced; the loop keeps its bound
    want = jax.grad(breaks_before_its_step)(jnp.float32(x0))  # plain Python
    f = autograph.convert(breaks_before_its_step)
    np.testing.assert_allclose(jax.grad(jax.jit(f))(x0), want, rtol=1e-5)
    np.testing.assert_allclose(jax.jit(jax.grad(f))(x0), want, rtol=1e-5)
    np.testing.assert_allclose(jax.grad(autograph.function(breaks_before_its_step))(x0), want,
                               rtol=1e-5)
