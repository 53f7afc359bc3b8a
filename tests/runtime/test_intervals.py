"""`runtime.intervals` alone: interval arithmetic on a loop body's jaxpr.

An interval is ``(lo, hi)``, or None where nothing is known. Checked by hand:
the interval of a concrete value (``known``), each operation's rule
(``_apply``, with the integer operations computed exactly where their inputs
are), and the analyses built on them: following a loop's carried integers step
by step (``follow``, ``overflow``) and finding where a body's Python meaning
differs from the staged int32 one (``python_mismatch``).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.core import ShapedArray

from autograph.runtime.core import intervals
from autograph.runtime.core.intervals import (
    FOLLOW_LIMIT,
    STEPS,
    Followed,
    describe,
    follow,
    known,
    overflow,
    python_mismatch,
)

I32 = ShapedArray((), jnp.int32)
F32 = ShapedArray((), jnp.float32)
BOOL = ShapedArray((), jnp.bool_)
C64 = ShapedArray((), jnp.complex64)

# ---------------------------------------------------------------------------
# known


@pytest.mark.parametrize("value, want", [
    (3, (3, 3)),
    (-7, (-7, -7)),
    (True, (1, 1)),
    (False, (0, 0)),
    (2.5, (2.5, 2.5)),
    (np.array([4, -2, 9], np.int32), (-2, 9)),
    (np.array([[1.5], [-0.5]], np.float32), (-0.5, 1.5)),
    (np.array([True, False]), (0, 1)),
    (jnp.arange(5), (0, 4)),
    (np.int64(2 ** 40), (2 ** 40, 2 ** 40)),  # exact, past int32
])
def test_known_of_concrete_values(value, want):
    got = known(value)
    assert got == want
    assert all(type(v) is type(w) for v, w in zip(got, want))  # ints stay exact ints


@pytest.mark.parametrize("value", [
    np.zeros((0,), np.int32),             # empty: no interval
    float("inf"),                         # unbounded: not followed
    np.array([1.0, np.nan], np.float32),
    np.array([-np.inf, 0.0]),
    1 + 2j,                               # complex: no order
    "text",
    object(),
    np.zeros(2 ** 16 + 1, np.int32),      # a weight matrix, not a number from the index
])
def test_known_of_values_without_an_interval(value):
    assert known(value) is None


def test_known_of_the_largest_array_it_reads():
    assert known(np.arange(2 ** 16)) == (0, 2 ** 16 - 1)


def test_known_of_a_tracer():
    seen = []

    def f(x):
        seen.append(known(x))
        seen.append(known(jnp.int32(5) + 0))  # a constant traced under jit
        return x

    jax.jit(f)(1)
    assert seen[0] is None
    assert seen[1] in (None, (5, 5))  # a known constant may be read; never a wrong value


@pytest.mark.parametrize("bound, want", [
    (0, "0"), (1000, "1,000"), (-2_147_483_649, "-2,147,483,649"),
    (2 ** 40, "1,099,511,627,776"), (2 ** 41, "2**41"), (-(2 ** 50), "2**50"),
    (3.0 * 2 ** 60, "2**62"),
])
def test_describe(bound, want):
    assert describe(bound) == want


# ---------------------------------------------------------------------------
# The rules, one operation at a time


@pytest.mark.parametrize("a, b, want", [
    (7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0), (6, 3, 2), (-6, 3, -2),
])
def test_truncated_division_rounds_toward_zero(a, b, want):
    assert intervals._truncated(a, b) == want


def apply(name, *ins, out=I32, **params):
    return intervals._apply(name, params, list(ins), out)


@pytest.mark.parametrize("name, ins, want", [
    ("add", [(1, 3), (-2, 5)], (-1, 8)),
    ("sub", [(1, 3), (-2, 5)], (-4, 5)),
    ("mul", [(-2, 3), (4, 5)], (-10, 15)),
    ("mul", [(-2, 3), (-5, -4)], (-15, 10)),
    ("mul", [(-2, -1), (-3, 4)], (-8, 6)),
    ("neg", [(-2, 5)], (-5, 2)),
    ("max", [(1, 3), (-2, 5)], (1, 5)),
    ("min", [(1, 3), (-2, 5)], (-2, 3)),
    ("abs", [(-4, 3)], (0, 4)),
    ("abs", [(-4, -2)], (2, 4)),
    ("abs", [(2, 6)], (2, 6)),
    ("sign", [(-4, 3)], (-1, 1)),
    ("sign", [(0, 3)], (0, 1)),
    ("sign", [(2, 3)], (1, 1)),
    ("clamp", [(0, 2), (-5, 10), (5, 8)], (0, 8)),  # clamp(lo, x, hi)
    ("convert_element_type", [(-3, 4)], (-3, 4)),
    ("reshape", [(-3, 4)], (-3, 4)),
    ("broadcast_in_dim", [(1, 2)], (1, 2)),
    ("shift_left", [(1, 3), (2, 4)], (4, 48)),
    ("shift_left", [(-1, 3), (2, 4)], None),  # a negative operand: not followed
    ("rem", [(-5, 7), (3, 4)], (-3, 3)),  # |x rem y| < |y|, with the sign of x
    ("rem", [(0, 7), (-3, 4)], (0, 3)),
    ("rem", [(-7, -1), (2, 2)], (-1, 0)),
    ("div", [(-9, 5), (2, 3)], (-9, 9)),  # |x / y| <= |x|
    ("floor", [(1, 2)], None),  # an operation without a rule
    ("add", [(1, 2), None], None),  # an unknown input
])
def test_apply_rules(name, ins, want):
    assert apply(name, *ins) == want


@pytest.mark.parametrize("ins, y, want", [
    ([(-2, 3)], 2, (0, 9)),     # an even power across zero starts at zero
    ([(2, 3)], 2, (4, 9)),
    ([(-3, -2)], 2, (4, 9)),
    ([(-2, 3)], 3, (-8, 27)),
    ([(2, 3)], 0, (1, 1)),
    ([(-2, 3)], -1, None),      # a negative power: a float, not followed
])
def test_apply_integer_pow(ins, y, want):
    assert apply("integer_pow", *ins, y=y) == want


_SMALL = [(lo, hi) for lo in range(-3, 4) for hi in range(lo, 4)]


@pytest.mark.parametrize("name, fn", [
    ("add", lambda a, b: a + b), ("sub", lambda a, b: a - b), ("mul", lambda a, b: a * b),
    ("max", max), ("min", min), ("div", lambda a, b: intervals._truncated(a, b) if b else None),
    ("rem", lambda a, b: a - b * intervals._truncated(a, b) if b else None),
])
def test_binary_rules_hold_every_result(name, fn):
    # sound: for every pair of small intervals, each result lies in the rule's interval
    for a in _SMALL:
        for b in _SMALL:
            got = apply(name, a, b)
            results = [fn(x, y) for x in range(a[0], a[1] + 1) for y in range(b[0], b[1] + 1)]
            results = [r for r in results if r is not None]
            if got is None or not results:
                continue
            assert got[0] <= min(results) and max(results) <= got[1], (name, a, b, got)


@pytest.mark.parametrize("name, fn", [
    ("neg", lambda a: -a), ("abs", abs), ("sign", lambda a: (a > 0) - (a < 0)),
    ("pow0", lambda a: a ** 0), ("pow1", lambda a: a ** 1), ("pow2", lambda a: a ** 2),
    ("pow3", lambda a: a ** 3),
])
def test_unary_rules_hold_every_result(name, fn):
    for a in _SMALL:
        if name.startswith("pow"):
            got = apply("integer_pow", a, y=int(name[3:]))
        else:
            got = apply(name, a)
        results = [fn(x) for x in range(a[0], a[1] + 1)]
        assert got[0] <= min(results) and max(results) <= got[1], (name, a, got)


@pytest.mark.parametrize("name, ins, want", [
    ("div", [(7, 7), (-2, -2)], (-3, -3)),
    ("rem", [(-7, -7), (2, 2)], (-1, -1)),  # XLA's remainder has the sign of the dividend
    ("and", [(12, 12), (10, 10)], (8, 8)),
    ("or", [(12, 12), (10, 10)], (14, 14)),
    ("xor", [(12, 12), (10, 10)], (6, 6)),
    ("not", [(5, 5)], (-6, -6)),
    ("div", [(7, 7), (0, 0)], None),  # division by zero: not followed
])
def test_apply_exact_integer_operations(name, ins, want):
    assert apply(name, *ins) == want


def test_apply_select_n():
    # a known choice picks its case, an unknown one the hull of the cases
    assert apply("select_n", (1, 1), (0, 2), (5, 9)) == (5, 9)
    assert apply("select_n", (0, 0), (0, 2), None) == (0, 2)
    assert apply("select_n", (0, 1), (0, 2), (5, 9)) == (0, 9)
    assert apply("select_n", (0, 1), (0, 2), None) is None
    assert apply("select_n", None, (0, 2), (-1, 1)) == (-1, 2)


@pytest.mark.parametrize("name, ins, want", [
    ("lt", [(1, 1), (2, 2)], (1, 1)),
    ("ge", [(1, 1), (2, 2)], (0, 0)),
    ("eq", [(3, 3), (3, 3)], (1, 1)),
    ("ne", [(3, 3), (3, 3)], (0, 0)),
    ("lt", [(1, 3), (2, 2)], (0, 1)),  # not exact: either
    ("not", [(0, 0)], (1, 1)),
    ("and", [(1, 1), (0, 0)], (0, 0)),
    ("or", [(1, 1), (0, 0)], (1, 1)),
    ("convert_element_type", [(4, 4)], (1, 1)),
    ("convert_element_type", [(0, 0)], (0, 0)),
    ("lt", [None, (2, 2)], (0, 1)),
])
def test_apply_booleans(name, ins, want):
    assert apply(name, *ins, out=BOOL) == want


def test_apply_floats_and_other_types():
    assert apply("add", (0.5, 1.0), (1.0, 2.0), out=F32) == (1.5, 3.0)
    assert apply("div", (1.0, 2.0), (1.0, 2.0), out=F32) is None  # only integer division
    assert apply("add", (0, 1), (0, 1), out=C64) is None  # complex: no interval


def test_hull():
    assert intervals._hull((0, 2), (5, 9)) == (0, 9)
    assert intervals._hull((-3, 10), (5, 9)) == (-3, 10)
    assert intervals._hull(None, (5, 9)) is None
    assert intervals._hull((5, 9), None) is None


# ---------------------------------------------------------------------------
# Following a loop's carried integers


def _closed(body, *example):
    return jax.make_jaxpr(body)(*example)


def _doubling(p, x, i):
    return p * 2, x + 1.0


def _python_steps(p, step, first_index, steps):
    """The values a Python loop gives ``p``, and the first step past int32 (or None)."""
    for t in range(steps):
        p = step(p, first_index + t)
        if not -(2 ** 31) <= p <= 2 ** 31 - 1:
            return p, t
    return p, None


def test_follow_finds_the_first_integer_past_int32():
    closed = _closed(_doubling, 1, 0.0, 0)
    got = follow(closed, [1, 0.0], 2, 0, [], 40)
    want, step = _python_steps(1, lambda p, i: p * 2, 0, 40)
    assert step == 30 and want == 2 ** 31
    assert got == Followed((0, 2 ** 31), {}, steps=31)


def test_follow_gives_the_final_python_ints():
    closed = _closed(_doubling, 1, 0.0, 0)
    assert follow(closed, [1, 0.0], 2, 0, [], 10) == Followed(None, {0: 2 ** 10})
    # a carry that started as an array is followed, but not handed back as a Python int
    assert follow(closed, [np.int32(1), 0.0], 2, 0, [], 10) == Followed(None, {})


@pytest.mark.parametrize("first_index, steps", [(0, 10), (5, 3), (0, 0)])
def test_follow_uses_the_step_index(first_index, steps):
    closed = _closed(lambda s, i: (s + i * i,), 0, 0)
    want = sum(i * i for i in range(first_index, first_index + steps))
    assert follow(closed, [7], 1, first_index, [], steps) == Followed(None, {0: 7 + want})


def test_follow_through_a_cond_on_the_index():
    # a known index picks the branch: p + 1 for the first five steps, then p * 2
    def body(p, i):
        return (lax.cond(i < 5, lambda p: p + 1, lambda p: p * 2, p),)

    closed = _closed(body, 0, 0)
    want, _ = _python_steps(0, lambda p, i: p + 1 if i < 5 else p * 2, 0, 10)
    assert want == 160
    assert follow(closed, [0], 1, 0, [], 10) == Followed(None, {0: want})


def test_follow_stops_at_a_value_that_depends_on_an_array():
    # `p` picks up the float carry: the Python loop would carry it as an array too
    def body(p, x, i):
        return p + jnp.int32(x), x * 3.0

    closed = _closed(body, 1, 1.0, 0)
    assert follow(closed, [1, 1.0], 2, 0, [], 40) == Followed(None, {})


def test_follow_with_nothing_to_follow():
    closed = _closed(lambda x, i: (x * 2.0,), 1.0, 0)
    assert follow(closed, [1.0], 1, 0, [], 40) == Followed(None, {})


def test_follow_reads_extra_inputs_as_intervals():
    # the input after the index: known exactly, it is followed; unknown, it is not
    closed = _closed(lambda p, i, k: (p + k,), 0, 0, 0)
    assert follow(closed, [0], 1, 0, [(3, 3)], 4) == Followed(None, {0: 12})
    assert follow(closed, [0], 1, 0, [None], 4) == Followed(None, {})


def test_overflow_looks_only_at_the_first_steps():
    # +20,000,000 a step passes int32 at step 107: past STEPS, so `overflow` misses it,
    # and `follow`, which runs a loop this short to its end, finds it
    step = 20_000_000
    closed = _closed(lambda p, i: (p + step,), 0, 0)
    _, at = _python_steps(0, lambda p, i: p + step, 0, 200)
    assert STEPS < at < 200 <= FOLLOW_LIMIT
    assert overflow(closed, [0], 1, 0, [], 200) is None
    assert follow(closed, [0], 1, 0, [], 200).overflow == (0, (at + 1) * step)
    faster = _closed(lambda p, i: (p + 2 * step,), 0, 0)
    _, at = _python_steps(0, lambda p, i: p + 2 * step, 0, 200)
    assert at < STEPS
    assert overflow(faster, [0], 1, 0, [], 200) == (0, (at + 1) * 2 * step)


def test_follow_of_a_long_loop_looks_at_its_first_steps_only():
    closed = _closed(lambda p, i: (p + 1,), 0, 0)
    # short enough: followed to the end; longer: the first STEPS only, and no finals
    assert follow(closed, [0], 1, 0, [], FOLLOW_LIMIT) == Followed(None, {0: FOLLOW_LIMIT})
    assert follow(closed, [0], 1, 0, [], FOLLOW_LIMIT + 1) == Followed(None, {})


def test_overflow_below_int32_min():
    closed = _closed(lambda p, i: (p * 3,), -1, 0)
    _, at = _python_steps(-1, lambda p, i: p * 3, 0, 40)
    assert overflow(closed, [-1], 1, 0, [], 40) == (0, -(3 ** (at + 1)))


# ---------------------------------------------------------------------------
# python_mismatch


def test_python_mismatch_division_by_zero():
    closed = _closed(lambda s, i: (s + 100 // (i - 3),), 0, 0)
    why = python_mismatch(closed, 1, (0, 9), [])
    assert why is not None and "ZeroDivisionError" in why and "//" in why
    assert python_mismatch(closed, 1, (4, 9), []) is None  # i - 3 is never 0 there


def test_python_mismatch_modulo_by_zero():
    closed = _closed(lambda s, i: (s + 7 % (i - 2),), 0, 0)
    assert "%" in python_mismatch(closed, 1, (0, 5), [])


def test_python_mismatch_integer_past_int32():
    closed = _closed(lambda s, i: (s + i * 100_000,), 0, 0)
    why = python_mismatch(closed, 1, (0, 100_000), [])
    assert why is not None and "10,000,000,000" in why and "int32" in why
    assert python_mismatch(closed, 1, (0, 100), []) is None


def test_python_mismatch_leaves_the_carry_alone():
    # the carry is an array in the Python loop too: what it computes is JAX's either way
    closed = _closed(lambda s, i: (s // (s - 3),), 0, 0)
    assert python_mismatch(closed, 1, (0, 9), []) is None


def test_slice_keeps_the_equations_an_output_needs():
    closed = _closed(lambda p, x, i: (p * 2 + i, jnp.sin(x) * 2.0), 1, 1.0, 0)
    kept = {e.primitive.name for e in intervals._needed(closed.jaxpr.eqns, closed.jaxpr.outvars[:1])}
    assert "sin" not in kept and {"mul", "add"} <= kept
    kept = {e.primitive.name for e in intervals._needed(closed.jaxpr.eqns, closed.jaxpr.outvars[1:])}
    assert "sin" in kept and "add" not in kept


# ---------------------------------------------------------------------------
# Casts of floats to integers, and clamps


def test_convert_of_a_float_to_an_int_truncates():
    assert apply("convert_element_type", (2.7, 2.7)) == (2, 2)
    assert apply("convert_element_type", (-2.7, 3.5)) == (-2, 3)


def test_follow_of_a_float_made_an_int():
    k = jnp.asarray(2.7, jnp.float32)  # a constant of the jaxpr, not a folded literal
    closed = _closed(lambda p, i: (p + k.astype(jnp.int32),), 0, 0)
    want, _ = _python_steps(0, lambda p, i: p + int(np.float32(2.7)), 0, 10)
    assert want == 20
    assert follow(closed, [0], 1, 0, [], 10) == Followed(None, {0: want})


def test_clamp_rule_holds_every_result():
    for lo in _SMALL:
        for x in _SMALL:
            for hi in _SMALL:
                results = [min(max(b, a), c) for a in range(lo[0], lo[1] + 1)
                           for b in range(x[0], x[1] + 1) for c in range(hi[0], hi[1] + 1)
                           if a <= c]
                got = apply("clamp", lo, x, hi)
                if results and got is not None:
                    assert got[0] <= min(results) and max(results) <= got[1], (lo, x, hi, got)


def test_python_mismatch_of_a_clamped_index():
    # clamp(0, i, 10) is 10 for i in [15, 20]: 10 * m fits int32 (15 * m would not)
    m = 201_326_592
    assert 10 * m < 2 ** 31 - 1 < 15 * m
    closed = _closed(lambda s, i: (s + lax.clamp(0, i, 10) * m,), 0, 0)
    assert python_mismatch(closed, 1, (15, 20), []) is None


@pytest.mark.parametrize("seen, limits, want", [
    ([10 * k for k in range(8)], (-100, 100), 4),  # 70 + 10 j > 100 first at j = 4
    ([-3 * k for k in range(8)], (-30, 30), 4),  # -21 - 3 j < -30 first at j = 4
    ([k * (k - 1) // 2 for k in range(8)], (0, 50), 4),  # 21 + 7j + j(j+1)/2 > 50: j = 4
    ([5] * 8, (-10, 10), None),  # constant
    ([k * k * k for k in range(8)], (0, 10**6), None),  # not of degree 2
    ([100 - k * k for k in range(8)], (-10**3, 10**3), 27),  # 100 - 34**2 < -1000
    ([(k - 6) ** 2 for k in range(8)], (0, 50), 7),  # down to 0, then up: 8**2 > 50
])
def test_steps_to_leave_extrapolates_polynomials_of_degree_two(seen, limits, want):
    got = intervals._steps_to_leave(seen, limits)
    assert got == want
    if want is not None:  # the first step out: the one before it is inside
        lo, hi = limits
        assert not lo <= intervals._polynomial(seen, want) <= hi
        assert lo <= intervals._polynomial(seen, want - 1) <= hi or want == 1
