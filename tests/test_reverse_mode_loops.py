"""`jax.grad` through staged `while` loops, bounded or not, with no hint from the user.

A counter that starts as a Python int, is compared with a Python int and
moves by a constant step on every path bounds the loop; under reverse-mode
differentiation the loop is then staged as a masked ``lax.scan``. Any other
loop differentiates with checkpoints (``runtime/loop_forms/checkpointed``). Gradients
are compared with the plain-Python gradient (``jax.grad`` of the unconverted
function on concrete values runs the loop in Python): for bounded loops on
inputs that exit at the first, a middle and no iteration, and for loops with
no bound on four programs (Newton's method, bisection, an adaptive ODE
stepper, a line search) run 1, 10 and about 1,000 times.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import jax_internals
from tests.test_examples import load

_example = load("until_converged")  # the programs of examples/until_converged.py


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
    assert "bound=ag__.Bound(" in autograph.to_code(breaks_before_its_step)
    want = jax.grad(breaks_before_its_step)(jnp.float32(x))
    got = jax.grad(autograph.convert(breaks_before_its_step))(jnp.float32(x))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    # a `continue` before the step may skip it: no bound
    assert "bound=" not in autograph.to_code(continues_before_its_step)


def test_counter_bound_in_generated_code():
    src = autograph.to_code(grows)
    assert "ag__.operator.lt, lambda: 6, 1)" in src


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


def test_grad_inside_converted_code_goes_through_an_unbounded_while():
    def step(x):
        return jax.grad(_unbounded)(x)

    want = jax.grad(_unbounded)(1.0)  # Python loop: 1.5 ** 6
    for run in (autograph.function(step), jax.jit(autograph.convert(step))):
        np.testing.assert_allclose(run(1.0), want, rtol=1e-6)
    assert float(jax.jit(autograph.convert(lambda x: jax.jacfwd(_unbounded)(x)))(1.0)) > 0


def _shout(x):
    jax.debug.print("big: {}", x)
    return x * 2.0


def _prints_in_a_branch(x):
    while x < 10.0:
        x = jax.lax.cond(x > 5.0, _shout, lambda x: x * 1.5, x)
    return x


def test_an_unbounded_while_whose_derivative_would_repeat_effects_is_named():
    # the cond prints and computes `x`: the derivative cannot leave it out
    def step(x):
        return jax.grad(_prints_in_a_branch)(x)

    with pytest.raises(autograph.LoopStateError, match="reverse-mode") as info:
        autograph.function(step)(1.0)
    msg = str(info.value)
    assert "test_reverse_mode_loops.py" in msg and "while x < 10.0" in msg
    assert "set_loop_options(maximum_iterations=N)" in msg


@pytest.mark.parametrize("x0", [1.5, 0.5, -0.5])  # exits at the first step, the 14th, never
def test_counter_stepped_after_a_traced_break_still_bounds_the_loop(x0):
    # staged, the first step's traced exit makes `j` traced; the loop keeps its bound
    want = jax.grad(breaks_before_its_step)(jnp.float32(x0))  # plain Python
    f = autograph.convert(breaks_before_its_step)
    np.testing.assert_allclose(jax.grad(jax.jit(f))(x0), want, rtol=1e-5)
    np.testing.assert_allclose(jax.jit(jax.grad(f))(x0), want, rtol=1e-5)
    np.testing.assert_allclose(jax.grad(autograph.function(breaks_before_its_step))(x0), want,
                               rtol=1e-5)


# ---------------------------------------------------------------------------
# loops with no bound: checkpointed reverse mode


newton, bisection, adaptive_ode, line_search = (
    getattr(_example, name) for name in ("newton", "bisection", "adaptive_ode", "line_search"))
_ODE_STATE = {"y": 1.0, "v": 0.0}
PROGRAMS = {  # name: (function, {trips: arguments}), differentiated in its first two
    "newton": (newton, {1: (2.05, 1.0), 10: (3.0, 0.5), 300: (3.0, 0.022)}),
    "bisection": (bisection, {1: (1.2, 1.2019, 0.5), 10: (0.5, 1.5, 0.5),
                              300: (0.0, 2.0, 0.005)}),
    "adaptive_ode": (adaptive_ode, {1: (_ODE_STATE, 2.0, 0.05, 1e-2),
                                    10: (_ODE_STATE, 2.0, 0.3, 1e-3),
                                    300: (_ODE_STATE, 2.0, 2.5, 1e-4)}),
    "line_search": (line_search, {1: (np.full(8, 0.3), 0.5), 10: (np.full(8, 2.0), 0.75),
                                  300: (np.full(8, 3.0), 0.991)}),
}
# More trips than twice the default checkpoints (128): the backward pass thins its
# checkpoints at least twice. One spelling there; the three are checked at 1 and 10.
LONG = 300

def _spellings(fn):
    grad = functools.partial(jax.grad, argnums=(0, 1), has_aux=True)
    return {"jax.jit(jax.grad(convert(f)))": jax.jit(grad(autograph.convert(fn))),
            "jax.grad(jax.jit(convert(f)))": grad(jax.jit(autograph.convert(fn))),
            "jax.grad(autograph.function(f))": grad(autograph.function(fn))}


def _check_gradients(name, trips, spellings):
    # in float64, so that the comparison is of the derivative, not of rounding
    fn, cases = PROGRAMS[name]
    with jax_internals.enable_x64(True):
        args = jax.tree.map(jnp.float64, cases[trips])
        want, n = jax.grad(fn, argnums=(0, 1), has_aux=True)(*args)  # the Python loop
        assert 0.7 * trips <= n <= 1.3 * trips
        for spelling, run in spellings:
            got, n_staged = run(*args)
            assert int(n_staged) == n, spelling
            for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-12, err_msg=spelling)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_grad_through_a_loop_with_no_bound_is_the_python_loop_gradient(name):
    # each spelling compiled once (the arguments have one shape) for 1 and 10 trips
    with jax_internals.enable_x64(True):
        spellings = list(_spellings(PROGRAMS[name][0]).items())
    for trips in (1, 10):
        _check_gradients(name, trips, spellings)


@pytest.mark.long
@pytest.mark.parametrize("name", ["bisection", "newton"])  # the others' Python loops are slow
def test_grad_through_a_long_loop_with_no_bound(name):
    _check_gradients(name, LONG, list(_spellings(PROGRAMS[name][0]).items())[:1])


@pytest.mark.long
def test_grad_under_vmap_where_elements_stop_at_different_steps():
    targets = jnp.array([2.05, 3.0, 30.0, 1.9], jnp.float32)  # 1 to about 30 steps
    want_a = [jax.grad(lambda a: newton(a, 0.5)[0])(a) for a in targets]
    want_ds = [jax.grad(lambda d: newton(a, d)[0])(0.5) for a in targets]
    want_d = sum(want_ds)
    value = lambda a, d: autograph.convert(newton)(a, d)[0]  # noqa: E731
    # each element's gradient, also for `d`, which the elements share
    per_element = jax.vmap(jax.grad(value, argnums=(0, 1)), in_axes=(0, None))
    for run in (jax.jit(per_element),):  # compiled: unjitted, each primitive compiles alone
        got_a, got_ds = run(targets, 0.5)
        np.testing.assert_allclose(got_a, want_a, rtol=1e-5)
        np.testing.assert_allclose(got_ds, want_ds, rtol=1e-5, atol=1e-7)
    summed = jax.grad(lambda a, d: jnp.sum(jax.vmap(value, (0, None))(a, d)), argnums=(0, 1))
    for run in (jax.jit(summed),):
        got_a, got_d = run(targets, 0.5)
        np.testing.assert_allclose(got_a, want_a, rtol=1e-5)
        np.testing.assert_allclose(got_d, want_d, rtol=1e-5, atol=1e-6)  # a sum that cancels
    function = jax.vmap(jax.grad(lambda a: autograph.function(newton)(a, 0.5)[0]))
    np.testing.assert_allclose(function(targets), want_a, rtol=1e-5)


def halving_above_one(x):
    y = x
    if x > 1.0:
        while y > 0.1:
            y = 0.5 * y * jnp.cos(0.1 * x)
    else:
        y = y * 3.0
    return y * x


def test_per_element_gradients_of_a_loop_inside_a_batched_branch():
    # `vmap` of `grad`: the branch chooses between the loop's residuals (the states it
    # kept, their schedule) and the other branch's per element, after differentiation
    xs = jnp.array([0.5, 2.0, 9.0, 1.5])  # the other branch, 5, 7 and 4 steps
    conv = autograph.convert(halving_above_one)
    want = [jax.grad(halving_above_one)(x) for x in xs]
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(conv)))(xs), want, rtol=1e-5)
    np.testing.assert_allclose(jax.grad(lambda v: jnp.sum(jax.vmap(conv)(v)))(xs), want,
                               rtol=1e-5)
    want2 = [jax.grad(jax.grad(halving_above_one))(x) for x in xs]
    np.testing.assert_allclose(jax.vmap(jax.hessian(conv))(xs), want2, rtol=1e-4)


def nested(x, a):
    while x < 20.0:
        y = x
        while y < x * 1.5:
            y = y * a + 0.1
        x = y + jnp.sin(x)
    return x


def breaks(x, a):
    while x < 100.0:
        x = x * a + jnp.cos(x)
        if x > 30.0:
            break
        x = x + 0.5
    return x


def returns(x, a):
    while x < 100.0:
        x = x * a + jnp.cos(x)
        if x * x > 900.0:
            return x - 1.0
    return x


@pytest.mark.parametrize("fn", [nested, breaks, returns], ids=lambda f: f.__name__)
def test_grad_through_nested_loops_and_jumps(fn):
    # each spelling compiled once, for inputs that loop many times, a few, and not at all
    runs = (jax.jit(jax.grad(autograph.convert(fn), argnums=(0, 1))),
            jax.grad(autograph.function(fn), argnums=(0, 1)))
    for x in (0.5, 3.0, 200.0):
        want = jax.grad(fn, argnums=(0, 1))(x, 1.5)
        for run in runs:
            for g, w in zip(run(x, 1.5), want):
                np.testing.assert_allclose(g, w, rtol=2e-5)


def test_forward_mode_runs_while_loops_and_keeps_no_states():
    def decay(x, n):
        i = 0
        while i < n:
            x = jnp.tanh(0.9 * x) * 0.5 + 0.5 * x
            i = i + 1
        return jnp.sum(x)

    x = jnp.linspace(-1.0, 1.0, 1000, dtype=jnp.float32)
    f = autograph.convert(decay)
    assert "while[" in str(jax.make_jaxpr(f)(x, 7))  # evaluated: the plain while_loop
    forward = jax.jit(lambda x, n: jax.jvp(lambda x: f(x, n), (x,), (jnp.ones_like(x),)))
    want = jax.jvp(lambda x: decay(x, 7), (x,), (jnp.ones_like(x),))
    np.testing.assert_allclose(forward(x, 7), want, rtol=1e-5)
    np.testing.assert_allclose(jax.jacfwd(f)(x[:3], 7), jax.jacfwd(decay)(x[:3], 7), rtol=1e-5)
    jaxpr = str(jax.make_jaxpr(lambda x, n: jax.jvp(lambda x: f(x, n), (x,), (x,)))(x, 7))
    assert "form=Form.TANGENT" in jaxpr and "COTANGENT" not in jaxpr
    # the states a backward pass would start from (128 copies of x) are not kept
    memory = forward.lower(x, 7).compile().memory_analysis()
    assert memory is None or memory.temp_size_in_bytes < 128 * x.nbytes / 4


def settle(x, w, n):
    i = 0
    while i < n:
        x = jnp.tanh(w * x) * 0.5 + 0.5 * x
        i = i + 1
    return jnp.sum(x ** 2)


def settle_bounded(x, w, n):
    i = 0
    while i < n:
        autograph.set_loop_options(maximum_iterations=5000)
        x = jnp.tanh(w * x) * 0.5 + 0.5 * x
        i = i + 1
    return jnp.sum(x ** 2)


def test_memory_of_the_backward_pass_does_not_grow_with_the_trip_count():
    x = jnp.linspace(-1.0, 1.0, 1000, dtype=jnp.float32)
    grad = jax.jit(jax.grad(autograph.convert(settle)))
    got = grad(x, 0.9, 3000)
    np.testing.assert_allclose(got, jax.jit(jax.grad(autograph.convert(settle_bounded)))(
        x, 0.9, 3000), rtol=1e-5, atol=1e-7)
    checkpointed = grad.lower(x, 0.9, 3000).compile().memory_analysis()
    bounded = jax.jit(jax.grad(autograph.convert(settle_bounded))).lower(
        x, 0.9, 3000).compile().memory_analysis()
    if checkpointed is not None and bounded is not None:  # the backend reports it
        # 129 states against the 5000 steps the bounded form keeps
        assert checkpointed.temp_size_in_bytes < 200 * x.nbytes
        assert bounded.temp_size_in_bytes > 5000 * x.nbytes


def few_checkpoints(x, n):
    i = 0
    while i < n:
        autograph.set_loop_options(checkpoints=4)
        x = x + 0.01 * jnp.sin(x)
        i = i + 1
    return x


def capped_and_checkpointed(x):
    while x < 1e6:
        autograph.set_loop_options(maximum_iterations=40, checkpoints=6)
        x = x * 1.1 + 0.1 * jnp.sin(x)
    return x


def forty_steps(x):
    for _ in range(40):
        x = x * 1.1 + 0.1 * jnp.sin(x)
    return x


def test_set_loop_options_checkpoints():
    assert "'checkpoints': 4" in autograph.to_code(few_checkpoints)
    want = jax.grad(few_checkpoints)(0.3, 300)
    np.testing.assert_allclose(jax.jit(jax.grad(autograph.convert(few_checkpoints)))(0.3, 300),
                               want, rtol=1e-5)
    # capped at 40 steps, the loop stops before its test fails
    capped = jax.jit(autograph.convert(capped_and_checkpointed))(1.0)
    np.testing.assert_allclose(capped, forty_steps(1.0), rtol=1e-5)
    np.testing.assert_allclose(jax.grad(jax.jit(autograph.convert(capped_and_checkpointed)))(1.0),
                               jax.grad(forty_steps)(1.0), rtol=1e-5)
    with pytest.raises(ValueError, match="checkpoints"):
        autograph.set_loop_options(checkpoints=1)


def test_forward_over_reverse():
    with jax_internals.enable_x64(True):
        want = jax.hessian(_unbounded_with(1.3))(0.5)
        got = jax.jit(jax.hessian(autograph.convert(_unbounded_with(1.3))))(0.5)
        np.testing.assert_allclose(got, want, rtol=1e-9)


def test_second_derivatives_under_vmap():
    def g(x, a):
        while jnp.sum(x * x) < 100.0:
            x = x * a + jnp.sin(x)
        return jnp.sum(x)

    with jax_internals.enable_x64(True):
        xs = jnp.array([[0.5, 0.2], [1.0, 2.0], [3.0, -1.0]])  # 4 to 8 steps
        for derivative in (functools.partial(jax.hessian, argnums=(0, 1)),
                           functools.partial(jax.jacrev, argnums=(0, 1))):
            got = jax.jit(jax.vmap(derivative(autograph.convert(g)), (0, None)))(xs, 1.5)
            for i, x in enumerate(xs):
                want = derivative(g)(x, 1.5)
                for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
                    np.testing.assert_allclose(a[i], b, rtol=1e-9)


def _unbounded_with(a):
    def f(x):
        while x < 10.0:
            x = x * a + jnp.sin(x)
        return x
    return f


def grow_past_ten(x):
    while x < 10.0:
        x = x * 1.5
    return x


def test_the_derivative_of_a_python_float_is_weakly_typed_as_eagerly():
    # `jax.grad` of a Python float gives a weak float: `g * jnp.float16(1)` stays float16
    want = jax.grad(grow_past_ten)(1.0)
    assert want.weak_type
    conv = autograph.convert(grow_past_ten)
    for run in (jax.grad(conv), jax.jit(jax.grad(conv)), jax.jit(jax.hessian(conv))):
        got = run(1.0)
        assert got.weak_type
        assert (got * jnp.float16(1)).dtype == jnp.float16
    np.testing.assert_allclose(jax.jit(jax.grad(conv))(1.0), want)
    # a strong float stays strong
    assert not jax.jit(jax.grad(conv))(jnp.float32(1.0)).weak_type
