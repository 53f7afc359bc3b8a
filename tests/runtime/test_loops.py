"""`runtime.loops` called directly: `while_stmt` and `for_stmt`.

Each operator is compared with the plain Python loop it stands for, on inputs
that take zero, one and several trips: as Python (Python values in, Python
values out), staged under ``jax.jit``, under ``jax.vmap`` where the lanes stop
at different trip counts, and under ``jax.grad`` (against the eager gradient
of the Python loop). A variable that changes dtype, shape or structure in a
staged loop raises ``LoopStateError`` naming it.
"""

import operator

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import runtime as ag__
from autograph.runtime import and_, if_exp, or_
from autograph.runtime.loop_forms import loops
from autograph.runtime.loop_forms.loops import Bound, for_stmt, range_, while_stmt
from tests.helpers import primitives

# ---------------------------------------------------------------------------
# while_stmt as Python


def test_while_python_values_run_as_python():
    tests, bodies = [], []

    def test(x, i):
        tests.append(i)
        return i < 5

    def body(x, i):
        bodies.append(i)
        return x * 2, i + 1

    out = while_stmt(test, body, (1, 0), names=("x", "i"))
    assert out == (32, 5)
    assert type(out) is tuple and all(type(v) is int for v in out)
    assert tests == [0, 1, 2, 3, 4, 5] and bodies == [0, 1, 2, 3, 4]


def test_while_python_zero_trips_never_runs_the_body():
    def body(x):
        raise AssertionError("the body ran")

    assert while_stmt(lambda x: x > 10, body, (3,), names=("x",)) == (3,)


def test_while_python_may_change_type_and_structure():
    # nothing is staged: Python lets a variable change as it likes
    out = while_stmt(lambda x: len(str(x)) < 6, lambda x: (str(x) + "a",), (1,), names=("x",))
    assert out == ("1aaaaa",)
    out = while_stmt(lambda xs: len(xs) < 3, lambda xs: (xs + [len(xs)],), ([],), names=("xs",))
    assert out == ([0, 1, 2],)


def test_while_concrete_arrays_run_as_python():
    # outside `jax.jit` an array's test is concrete: Python decides each step
    out = while_stmt(lambda x: x < 10, lambda x: (x * 2,), (jnp.int32(3),), names=("x",))
    assert int(out[0]) == 12


# ---------------------------------------------------------------------------
# while_stmt staged


def _double_until(x, limit):
    while x < limit:
        x = x * 2.0 + 0.5
    return x


def _staged_double_until(x, limit):
    (x,) = while_stmt(lambda x: x < limit, lambda x: (x * 2.0 + 0.5,), (x,), names=("x",))
    return x


_jit_double_until = jax.jit(_staged_double_until)


@pytest.mark.parametrize("x, trips", [(20.0, 0), (6.0, 1), (9.99, 1), (0.1, 5), (-0.2, 6)])
def test_while_staged_matches_python(x, trips):
    limit = 10.0
    n, y = 0, x
    while y < limit:  # the trip count the case claims
        y, n = y * 2.0 + 0.5, n + 1
    assert n == trips
    got = _jit_double_until(jnp.float32(x), jnp.float32(limit))
    np.testing.assert_allclose(float(got), _double_until(x, limit), rtol=1e-6)


def test_while_staged_is_a_while_loop():
    assert "while" in primitives(jax.make_jaxpr(_staged_double_until)(1.0, 10.0))


def test_while_staged_with_a_python_counter():
    # a Python int in the state becomes a (weakly typed) array of the staged loop
    def staged(x):
        return while_stmt(lambda x, n: x < 100.0, lambda x, n: (x * 3.0, n + 1), (x, 0),
                          names=("x", "n"))

    def python(x):
        n = 0
        while x < 100.0:
            x, n = x * 3.0, n + 1
        return x, n

    f = jax.jit(staged)
    for x in (200.0, 50.0, 1.0, 0.01):
        got_x, got_n = f(jnp.float32(x))
        want_x, want_n = python(x)
        np.testing.assert_allclose(float(got_x), want_x, rtol=1e-5)
        assert int(got_n) == want_n
        assert jnp.issubdtype(got_n.dtype, jnp.integer)


def test_while_test_that_becomes_traced_after_python_steps():
    # the first tests are Python (a Python counter), then the state becomes traced
    def staged(x):
        return while_stmt(lambda i, s: or_(i < 3, lambda: s < 50.0),
                          lambda i, s: (i + 1, if_exp(i >= 1, lambda: s + x, lambda: s + 1.0)),
                          (0, 0.0), names=("i", "s"))

    def python(x):
        i, s = 0, 0.0
        while i < 3 or s < 50.0:
            i, s = i + 1, (s + x if i >= 1 else s + 1.0)
        return i, s

    f = jax.jit(staged)
    for x in (30.0, 7.0, 100.0):
        got_i, got_s = f(jnp.float32(x))
        want_i, want_s = python(x)
        assert int(got_i) == want_i
        np.testing.assert_allclose(float(got_s), want_s, rtol=1e-6)


@pytest.mark.parametrize("maximum", [0, 1, 3, 100])
def test_while_staged_with_maximum_iterations(maximum):
    def staged(x):
        return while_stmt(lambda x: x < 1e6, lambda x: (x + 1.0,), (x,), names=("x",),
                          opts={"maximum_iterations": maximum})

    (got,) = jax.jit(staged)(jnp.float32(0.0))
    assert float(got) == float(maximum)  # x counts the steps: it stops at the maximum
    (got,) = jax.jit(staged)(jnp.float32(1e6 - 2))
    assert float(got) == float(min(maximum, 2) + 1e6 - 2)


def test_while_staged_with_a_bound():
    # `while i < n and x < t`: the counter bounds the loop, the test is traced
    def staged(x, n):
        return while_stmt(lambda i, x: and_(i < n, lambda: x < 50.0),
                          lambda i, x: (i + 1, x * 2.0),
                          (0, x), names=("i", "x"), bound=Bound(0, operator.lt, lambda: n, 1))

    def python(x, n):
        i = 0
        while i < n and x < 50.0:
            i, x = i + 1, x * 2.0
        return i, x

    for n in (0, 2, 10):
        f = jax.jit(lambda x, n=n: staged(x, n))
        for x in (100.0, 1.0, 30.0):
            got_i, got_x = f(jnp.float32(x))
            want_i, want_x = python(x, n)
            assert int(got_i) == want_i
            np.testing.assert_allclose(float(got_x), want_x, rtol=1e-6)


# ---------------------------------------------------------------------------
# while_stmt under jax.vmap and jax.grad


def test_while_under_vmap_lanes_stop_at_different_trips():
    xs = np.array([20.0, 6.0, 0.1, -0.2, 1.0], np.float32)
    got = jax.jit(jax.vmap(_staged_double_until, in_axes=(0, None)))(jnp.asarray(xs), 10.0)
    want = [_double_until(float(x), 10.0) for x in xs]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


def _poly_until(x, a):
    """A loop whose trip count depends on x: several trips, each differentiable in x and a."""
    while x < 10.0:
        x = x * a + jnp.sin(x)
    return x


def _staged_poly_until(x, a):
    (x,) = while_stmt(lambda x: x < 10.0, lambda x: (x * a + jnp.sin(x),), (x,), names=("x",))
    return x


_staged_grad = jax.jit(jax.grad(_staged_poly_until, argnums=(0, 1)))


@pytest.mark.parametrize("x", [12.0, 5.0, 1.0, 0.3])
def test_while_gradient_matches_the_python_loop(x):
    a = 1.7
    want = jax.grad(_poly_until, argnums=(0, 1))(x, a)  # eager: Python runs the loop
    got = _staged_grad(jnp.float32(x), jnp.float32(a))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5)


def test_while_gradient_with_a_bound_matches_the_python_loop():
    def python(x, n):
        i = 0
        while i < n and x < 50.0:
            i, x = i + 1, x * x + 1.0
        return x

    def staged(x, n):
        return while_stmt(lambda i, x: and_(i < n, lambda: x < 50.0),
                          lambda i, x: (i + 1, x * x + 1.0),
                          (0, x), names=("i", "x"), bound=Bound(0, operator.lt, lambda: n, 1))[1]

    for n in (0, 1, 3):
        g = jax.jit(jax.grad(lambda x, n=n: staged(x, n)))
        for x in (60.0, 1.5, 0.5):
            want = jax.grad(python)(x, n)
            np.testing.assert_allclose(float(g(jnp.float32(x))), float(want), rtol=2e-5)


# ---------------------------------------------------------------------------
# while_stmt refusals


def test_while_staged_dtype_change_is_a_loop_state_error():
    def staged(x):
        return while_stmt(lambda x: x < 10, lambda x: (x * 2.5,), (x,), names=("x",))

    with pytest.raises(autograph.LoopStateError) as info:
        jax.jit(staged)(jnp.int32(1))
    assert info.value.variable == "x"
    assert "dtype" in str(info.value)


def test_while_staged_shape_change_is_a_loop_state_error():
    def staged(x):
        return while_stmt(lambda x, s: s < 10.0, lambda x, s: (jnp.concatenate([x, x]), s + 1),
                          (x, x.sum()), names=("x", "s"))

    with pytest.raises(autograph.LoopStateError) as info:
        jax.jit(staged)(jnp.ones(2))
    assert info.value.variable == "x"
    assert "shape" in str(info.value)


def test_while_staged_structure_change_is_a_loop_state_error():
    def staged(x):
        return while_stmt(lambda p, s: s < 10.0, lambda p, s: ((p[0], p[1], p[0]), s + p[0]),
                          ((x, x), x), names=("p", "s"))

    with pytest.raises(autograph.LoopStateError) as info:
        jax.jit(staged)(1.0)
    assert info.value.variable == "p"


def test_while_staged_python_string_change_is_a_loop_state_error():
    def staged(x):
        return while_stmt(lambda m, s: s < 10.0, lambda m, s: (m + "!", s + 1.0), ("go", x),
                          names=("m", "s"))

    with pytest.raises(autograph.LoopStateError) as info:
        jax.jit(staged)(1.0)
    assert info.value.variable == "m"


def test_while_staged_test_of_several_elements_is_a_condition_error():
    def staged(x):
        return while_stmt(lambda x: x < 10.0, lambda x: (x + 1.0,), (x,), names=("x",))

    with pytest.raises(autograph.ConditionError):
        jax.jit(staged)(jnp.zeros(3))


# ---------------------------------------------------------------------------
# for_stmt as Python


def test_for_over_a_python_range_runs_as_python():
    seen = []

    def body(i, s):
        seen.append(i)
        return (s + i * i,)

    out = for_stmt(range_(5), body, (0,), names=("s",))
    assert out == (sum(i * i for i in range(5)),)
    assert type(out[0]) is int
    assert seen == [0, 1, 2, 3, 4] and all(type(i) is int for i in seen)


def test_for_over_an_empty_range():
    def body(i, s):
        raise AssertionError("the body ran")

    assert for_stmt(range_(3, 3), body, (7,), names=("s",)) == (7,)


def test_for_over_a_list_of_strings():
    out = for_stmt(["a", "b", "c"], lambda c, s: (s + c,), ("",), names=("s",))
    assert out == ("abc",)


@pytest.mark.parametrize("stop_at", [0, 2, 4, 99])
def test_for_python_with_extra_test(stop_at):
    # a `break` as generated code writes it: a flag the extra test reads
    seen = []

    def body(i, done, s):
        seen.append(i)
        if i == stop_at:
            return True, s
        return done, s + i

    done, s = for_stmt(range_(6), body, (False, 0), names=("done", "s"),
                       extra_test=lambda done, s: not done)
    want_s = 0
    for i in range(6):
        if i == stop_at:
            break
        want_s += i
    assert s == want_s
    assert done is (stop_at < 6)
    assert seen == list(range(min(stop_at, 5) + 1))


def test_range_of_python_ints_is_pythons_range():
    assert range_(2, 9, 3) == range(2, 9, 3)
    assert type(range_(5)) is range


def _count_and_last(args, step):
    def body(i, count, last):
        return count + 1, i
    return for_stmt(range_(*args, step), body, (0, 0), names=("count", "last"))


@pytest.mark.parametrize("bounds, step", [
    ((np.uint8(250), np.uint8(5)), 1),  # empty: uint8 arithmetic would wrap around
    ((np.uint8(5), np.uint8(0)), -1),
    ((np.int16(-32000), np.int16(32000)), 1),
    ((np.int8(0), np.int8(127)), 50),
    ((np.int32(-2**31 + 5), np.int32(2**31 - 5)), 2**30),  # a span past int32
    ((np.int32(2**31 - 5), np.int32(-2**31 + 5)), -2**30),
], ids=["uint8-empty", "uint8-down", "int16", "int8-step", "int32-span", "int32-span-down"])
def test_a_traced_range_counts_as_python_does_whatever_the_bounds_dtype(bounds, step):
    want = list(range(*(int(b) for b in bounds), step))
    count, last = jax.jit(lambda a, b: _count_and_last((a, b), step))(
        *(jnp.asarray(b) for b in bounds))
    assert int(count) == len(want)
    assert int(last) == (want[-1] if want else 0)


def test_a_traced_range_counts_in_int64_with_64_bit_types():
    from autograph import jax_internals
    with jax_internals.enable_x64(True):
        for bounds, step in [((2**40, 2**40 + 3), 1), ((0, 2**35), 2**33)]:
            want = list(range(*bounds, step))
            count, last = jax.jit(lambda a, b, step=step: _count_and_last((a, b), step))(
                *(jnp.int64(b) for b in bounds))
            assert (int(count), int(last)) == (len(want), want[-1])


# ---------------------------------------------------------------------------
# for_stmt staged


def _sum_squares_staged(n):
    return for_stmt(range_(n), lambda i, s: (s + i * i,), (0,), names=("s",))[0]


@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_for_over_a_traced_range(n):
    assert type(range_(jnp.int32(3))) is range  # concrete: a Python range
    got = jax.jit(_sum_squares_staged)(jnp.int32(n))
    assert int(got) == sum(i * i for i in range(n))


def test_traced_range_is_a_while_loop():
    assert "while" in primitives(jax.make_jaxpr(_sum_squares_staged)(3))


@pytest.mark.parametrize("start, stop, step", [(2, 9, 3), (5, 0, -2), (3, 3, 1), (4, 1, 1)])
def test_for_over_a_traced_range_with_start_and_step(start, stop, step):
    def staged(a, b):
        return for_stmt(range_(a, b, step), lambda i, s: (s * 2 + i,), (0,), names=("s",))[0]

    want = 0
    for i in range(start, stop, step):
        want = want * 2 + i
    assert int(jax.jit(staged)(jnp.int32(start), jnp.int32(stop))) == want


def test_for_over_a_traced_range_under_vmap():
    ns = np.array([0, 1, 4, 2], np.int32)
    got = jax.jit(jax.vmap(_sum_squares_staged))(jnp.asarray(ns))
    assert got.tolist() == [sum(i * i for i in range(n)) for n in ns]


def _python_fold(xs):
    s = 0.0
    for x in xs:
        s = s * 0.5 + x
    return s


@pytest.mark.parametrize("length", [0, 1, 3, 20])
def test_for_over_an_array(length):
    # 20 rows: past PYTHON_TRIPS, one lax.scan; fewer: unrolled as `jax.jit` would. (A
    # `def` body: a lambda's source cannot be read, so its loop is never staged.)
    xs = np.arange(length, dtype=np.float32) + 1.0

    def body(x, s):
        return (s * 0.5 + x,)

    def staged(xs):
        return for_stmt(xs, body, (0.0,), names=("s",))[0]

    got = jax.jit(staged)(jnp.asarray(xs))
    np.testing.assert_allclose(float(got), _python_fold([float(x) for x in xs]), rtol=1e-6)
    if length > loops.PYTHON_TRIPS:
        assert "scan" in primitives(jax.make_jaxpr(staged)(jnp.asarray(xs)))


def test_for_over_the_rows_of_a_matrix():
    m = np.arange(12, dtype=np.float32).reshape(4, 3)

    def staged(m):
        return for_stmt(m, lambda row, s: (s + row * row,), (jnp.zeros(3),), names=("s",))[0]

    got = jax.jit(staged)(jnp.asarray(m))
    np.testing.assert_allclose(np.asarray(got), (m * m).sum(axis=0))


def _break_python(x, n):
    s = 0.0
    for i in range(n):
        if s > x:
            break
        s = s + i
    return s


def _break_staged(x, n):
    """``_break_python`` as generated code writes it (``autograph.to_code``): a flag and an
    extra test. It names the operators through ``ag__``, as generated code does: the proof
    that a static loop may be staged knows them by that name."""
    def loop_test(did_break, s):
        return ag__.not_(did_break)

    def loop_body(i, did_break, s):
        def if_true(did_break, s):
            did_break = True
            return (did_break, s)

        def if_false(did_break, s):
            s = s + i
            return (did_break, s)

        (did_break, s) = ag__.if_stmt(s > x, if_true, if_false, (did_break, s),
                                      names=("did_break", "s"))
        return (did_break, s)

    (did_break, s) = ag__.for_stmt(ag__.range_(n), loop_body, (False, 0.0),
                                   names=("did_break", "s"), extra_test=loop_test)
    return s


@pytest.mark.parametrize("x", [-1.0, 0.0, 2.5, 20.0, 1000.0])
def test_for_with_extra_test_over_a_traced_range(x):
    f = jax.jit(_break_staged)
    for n in (0, 1, 8):
        np.testing.assert_allclose(float(f(jnp.float32(x), jnp.int32(n))),
                                   _break_python(x, n))


@pytest.mark.parametrize("x", [-1.0, 3.0, 50.0, 1000.0])
def test_for_with_extra_test_over_a_long_static_range(x):
    # 40 trips: staged as a loop that stops at its exit
    f = jax.jit(lambda x: _break_staged(x, 40))
    np.testing.assert_allclose(float(f(jnp.float32(x))), _break_python(x, 40))
    assert "while" in primitives(jax.make_jaxpr(f)(1.0))


def test_for_with_extra_test_under_vmap():
    xs = np.array([-1.0, 3.0, 50.0, 1000.0], np.float32)
    got = jax.jit(jax.vmap(lambda x: _break_staged(x, 40)))(jnp.asarray(xs))
    np.testing.assert_allclose(np.asarray(got), [_break_python(float(x), 40) for x in xs])


def _python_power_sum(x, n):
    s = 0.0
    for i in range(n):
        s = s * x + jnp.cos(x * i)
    return s


def _staged_power_sum(x, n):
    def body(i, s):
        return (s * x + jnp.cos(x * i),)

    return for_stmt(range_(n), body, (0.0,), names=("s",))[0]


_power_sum_grad = jax.jit(jax.grad(_staged_power_sum))  # one trace for every trip count


@pytest.mark.parametrize("n", [0, 1, 4])
def test_for_over_a_traced_range_gradient(n):
    g = _power_sum_grad
    want = jax.grad(_python_power_sum)(0.7, n) if n else 0.0
    np.testing.assert_allclose(float(g(jnp.float32(0.7), jnp.int32(n))), float(want),
                               rtol=2e-5)


def test_for_over_a_long_static_range_gradient():
    g = jax.jit(jax.grad(lambda x: _staged_power_sum(x, 30)))
    assert "scan" in primitives(jax.make_jaxpr(lambda x: _staged_power_sum(x, 30))(0.7))
    want = jax.grad(_python_power_sum)(0.7, 30)
    np.testing.assert_allclose(float(g(jnp.float32(0.7))), float(want), rtol=2e-5)


_K = jnp.asarray(2.7, jnp.float32)


def _truncating_python(x):
    p = 0
    for i in range(20):
        p = p + int(_K * i)
        x = x + 1.0
    return p, x


def _truncating_staged(x):
    """``_truncating_python`` as generated code writes it."""
    p = 0

    def loop_body(i, p, x):
        p = p + ag__.converted_call(int, _K * i)
        x = x + 1.0
        return (p, x)

    (p, x) = ag__.for_stmt(ag__.range_(20), loop_body, (p, x), names=("p", "x"))
    return (p, x)


def test_for_hands_back_the_python_int_python_computes():
    want_p, want_x = _truncating_python(1.0)
    assert want_p == sum(int(np.float32(2.7) * np.float32(i)) for i in range(20))
    got_p, got_x = jax.jit(_truncating_staged)(1.0)
    assert float(got_x) == want_x
    assert int(got_p) == want_p


# ---------------------------------------------------------------------------
# for_stmt refusals


def test_for_over_a_traced_range_dtype_change_is_a_loop_state_error():
    def staged(n):
        return for_stmt(range_(n), lambda i, s: (s * 0.5,), (jnp.int32(1),), names=("s",))

    with pytest.raises(autograph.LoopStateError) as info:
        jax.jit(staged)(jnp.int32(3))
    assert info.value.variable == "s"


def test_for_over_a_traced_range_shape_change_is_a_loop_state_error():
    def staged(n):
        return for_stmt(range_(n), lambda i, s: (jnp.append(s, 1.0),), (jnp.zeros(2),),
                        names=("s",))

    with pytest.raises(autograph.LoopStateError) as info:
        jax.jit(staged)(jnp.int32(3))
    assert info.value.variable == "s"
