"""Python numbers keep their value where a branch or a loop carry meets a narrow dtype."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import BranchError, LoopStateError, jax_internals
from tests.helpers import _line


def _same(got, want, dtype) -> None:
    """``got`` holds the plain-Python result ``want``, as an array of ``dtype``."""
    assert got.dtype == np.dtype(dtype), got.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


# ---------------------------------------------------------------------------
# Branches: a number that does not fit widens the dtype


def unset_marker(x):
    m = -1
    if x > 200:
        m = x
    return m


def below_limit(x):
    best = 1000
    if x < 100:  # (`x < best` itself would compare in int8, as JAX does: 1000 wraps)
        best = x
    return best


def capped(x):
    m = 100000.0
    if x < 0:
        m = x
    return m


def picked(x):
    return x if x > 200 else -1


@pytest.mark.parametrize("fn, values, dtype", [
    pytest.param(unset_marker, np.array([5, 250], np.uint8), jnp.int16, id="-1 with uint8"),
    pytest.param(below_limit, np.array([5, 120], np.int8), jnp.int16, id="1000 with int8"),
    pytest.param(capped, np.array([1.5, -2.0], np.float16), jnp.float32, id="1e5 with float16"),
    pytest.param(picked, np.array([5, 250], np.uint8), jnp.int16, id="conditional expression"),
])
def test_branch_widens_to_hold_the_number(fn, values, dtype):
    jf = jax.jit(autograph.convert(fn))
    for x in values:  # one input per branch
        _same(jf(jnp.asarray(x)), fn(x), dtype)


def test_branch_widens_under_vmap():
    xs = np.array([5, 250, 201, 0], np.uint8)
    got = jax.jit(jax.vmap(autograph.convert(unset_marker)))(xs)
    _same(got, [unset_marker(x) for x in xs], jnp.int16)


def small_marker(x):
    m = 0
    if x > 5:
        m = x
    return m


def small_scale(x):
    s = 1.5
    if x > 0:
        s = x
    return s


@pytest.mark.parametrize("fn, values, dtype", [
    pytest.param(small_marker, np.array([3, 100], np.int8), jnp.int8, id="0 with int8"),
    pytest.param(small_marker, np.array([3, 250], np.uint8), jnp.uint8, id="0 with uint8"),
    pytest.param(small_scale, np.array([-1.0, 2.0], np.float16), jnp.float16,
                 id="1.5 with float16"),
])
def test_branch_keeps_the_narrow_dtype_when_the_number_fits(fn, values, dtype):
    jf = jax.jit(autograph.convert(fn))
    for x in values:
        _same(jf(jnp.asarray(x)), fn(x), dtype)


def huge_marker(x):
    m = 2**40
    if x > 0:
        m = x
    return m


def test_branch_int_beyond_int32_is_an_error_naming_it():
    assert not jax.config.jax_enable_x64
    with pytest.raises(OverflowError):  # what plain JAX does with such an int
        jnp.int32(1) + 2**40
    with pytest.raises(BranchError, match=r"`m` is the Python int 1099511627776") as info:
        jax.jit(autograph.convert(huge_marker))(jnp.int32(3))
    assert f"test_number_values.py:{_line(huge_marker, 'if x > 0')}" in str(info.value)
    assert "variable: m" in str(info.value)


def test_branch_int_beyond_int32_with_64_bit_types():
    with jax_internals.enable_x64(True):
        jf = jax.jit(autograph.convert(huge_marker))
        for x in (np.int32(3), np.int32(-3)):
            _same(jf(jnp.asarray(x)), huge_marker(x), jnp.int64)


# ---------------------------------------------------------------------------
# Loops: a carry that would narrow a number is refused (a static loop runs as Python)


def running_max(xs):
    n = 300
    for v in xs:
        if v > n:
            n = v
    return n


def running_max_while(xs, k):
    n = 300
    i = 0
    while i < k:
        if xs[i] > n:
            n = xs[i]
        i += 1
    return n


def jnp_running_max(xs):
    n = 300
    for v in xs:
        n = jnp.maximum(n, v)
    return n


def set_in_body(x, xs):
    n = x
    for v in xs:
        n = 300
    return n


def _quietly(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def test_static_loop_keeps_the_number_as_python_does():
    xs = np.arange(-20, 20, dtype=np.int8)  # more trips than run as Python outright
    with pytest.warns(UserWarning, match=r"runs unrolled in Python.*`n` starts as the Python "
                                         r"int 300"):
        got = jax.jit(autograph.convert(running_max))(jnp.asarray(xs))
    assert got == running_max(xs) == 300


def test_static_loop_arithmetic_that_narrows_matches_jit():
    xs = jnp.arange(-20, 20, dtype=jnp.int8)
    want = _quietly(jax.jit(jnp_running_max), xs)  # JAX itself narrows 300 to int8 here
    got = _quietly(jax.jit(autograph.convert(jnp_running_max)), xs)
    assert got.dtype == want.dtype and got == want


def test_static_loop_setting_a_number_a_narrow_carry_cannot_hold():
    xs = jnp.arange(40, dtype=jnp.int8)
    got = _quietly(jax.jit(autograph.convert(set_in_body)), jnp.int8(1), xs)
    assert got == set_in_body(np.int8(1), np.arange(40, dtype=np.int8)) == 300


def test_static_loop_under_vmap():
    xs = np.stack([np.arange(-20, 20, dtype=np.int8), np.full(40, 7, np.int8)])
    got = _quietly(jax.jit(jax.vmap(autograph.convert(running_max))), jnp.asarray(xs))
    np.testing.assert_array_equal(got, [running_max(row) for row in xs])


def test_traced_trip_count_loop_refuses_naming_the_variable():
    xs = jnp.arange(-20, 20, dtype=jnp.int8)
    with pytest.raises(LoopStateError, match="must keep its value") as info:
        jax.jit(autograph.convert(running_max_while))(xs, jnp.int32(3))
    msg = str(info.value)
    assert f"test_number_values.py:{_line(running_max_while, 'while i < k')}" in msg
    assert "variable: n" in msg and "int8 cannot hold 300" in msg
    assert "jnp.asarray(n, jnp.int16)" in msg


def running_max_from_int16(xs, k):
    n = jnp.int16(300)
    i = 0
    while i < k:
        if xs[i] > n:
            n = xs[i]
        i += 1
    return n


def test_traced_trip_count_loop_runs_once_given_a_wide_enough_dtype():
    xs = np.arange(-20, 20, dtype=np.int8)
    jf = jax.jit(autograph.convert(running_max_from_int16))
    for k in (0, 3, 40):
        _same(jf(jnp.asarray(xs), jnp.int32(k)), running_max_from_int16(xs, k), jnp.int16)


def running_max_small(xs, k):
    n = 0
    i = 0
    while i < k:
        if xs[i] > n:
            n = xs[i]
        i += 1
    return n


def test_traced_trip_count_loop_keeps_the_narrow_dtype_when_the_number_fits():
    xs = np.arange(-20, 20, dtype=np.int8)
    jf = jax.jit(autograph.convert(running_max_small))
    for k in (0, 3, 40):
        _same(jf(jnp.asarray(xs), jnp.int32(k)), running_max_small(xs, k), jnp.int8)


# -- a Python number a staged `while` carries but never changes -------------------


def keeps_its_size(x, n, k=3):
    size = 2
    i = 0
    while i < n:
        if k == 5:  # a Python test: never taken, `size` is still loop state
            size = size + 1
        x = x * 0.5
        i += 1
    return jnp.zeros(size) + x


def widens_later(x, n):
    q = 70000.0
    for i0 in range(3):
        i1 = 0
        while i1 < 2 and i0 > n:
            if i0 == 2 and x < 2.0:
                q = jnp.float16(x)
            i1 += 1
    return q


def test_a_python_number_a_staged_while_never_changes_comes_out_as_itself():
    # after any number of steps it is the number it was, as after the Python loop
    for n in (0, 3):
        got = jax.jit(autograph.convert(keeps_its_size))(jnp.float32(1.0), jnp.int32(n))
        np.testing.assert_allclose(got, keeps_its_size(1.0, n))
    # kept a Python float, 70,000 meets float16 in the last loop: refused, where an
    # array carried from the first loop would have become float16's inf
    assert widens_later(1.0, 5) == 70000.0
    with pytest.raises(autograph.LoopStateError, match="must keep its value"):
        jax.jit(autograph.convert(widens_later))(jnp.float32(1.0), jnp.int32(5))


# -- a Python number a staged `if` or loop made a tracer, meeting a narrow dtype later --
# Eagerly it is still a Python number, so the later `if` widens as it would for the
# number itself: over the hull of the branches' numbers, or over the whole range of
# the dtype a loop carried it in (its trip count is known only when it runs).


def set_in_a_staged_while(x, n):
    q = 0
    i = 0
    while i < n:
        q = 100000
        i += 1
    if x > 0:
        r = q
    else:
        r = jnp.float16(x)
    return r + x


def counted_then_int8(x8, n):
    k = 0
    i = 0
    while i < n:
        k += 100
        i += 1
    if x8 > 0:
        m = k
    else:
        m = x8
    return m


def set_in_a_staged_if(x, n):
    q = 3
    if x > 1:
        q = 100000
    if x > 0.5:
        r = q
    else:
        r = jnp.float16(x)
    return r * 1.0


def set_in_a_scanned_for(x, n):
    q = 0
    for i in range(3):
        if x > i:
            q = 100000
    if x > 0.5:
        r = q
    else:
        r = jnp.float16(x)
    return r + x


@pytest.mark.parametrize("fn", [set_in_a_staged_while, set_in_a_staged_if,
                                set_in_a_scanned_for])
def test_a_number_a_staged_block_made_widens_a_later_float16(fn):
    jf = jax.jit(autograph.convert(fn))
    for x, n in ((2.0, 3), (0.7, 3), (-1.0, 0)):  # each branch, and both loop outcomes
        got = _quietly(jf, jnp.float32(x), jnp.int32(n))
        want = fn(np.float32(x), n)
        assert np.isfinite(got), (fn.__name__, x, n)
        np.testing.assert_allclose(got, np.float32(want), rtol=1e-3)


def test_a_number_a_staged_while_counted_widens_a_later_int8():
    jf = jax.jit(autograph.convert(counted_then_int8))
    for x8, n in ((5, 3), (-5, 3), (5, 0)):
        got = jf(jnp.int8(x8), jnp.int32(n))
        assert got.dtype == np.int32  # the dtype a loop carries a Python int in
        assert got == counted_then_int8(np.int8(x8), n)  # 300, not int8's 44
    got = jax.jit(jax.vmap(autograph.convert(counted_then_int8)))(
        jnp.array([5, -5], jnp.int8), jnp.array([3, 1], jnp.int32))
    np.testing.assert_array_equal(got, [300, -5])


def small_hull_then_int8(x8):
    q = 0
    if x8 > 10:
        q = 5
    if x8 > 0:
        m = q
    else:
        m = x8
    return m


def test_a_number_a_staged_if_made_that_fits_keeps_the_narrow_dtype():
    jf = jax.jit(autograph.convert(small_hull_then_int8))
    for x8 in (20, 3, -4):
        _same(jf(jnp.int8(x8)), small_hull_then_int8(np.int8(x8)), jnp.int8)


def hull_then_int8_loop(x8, n, m):
    k = 3
    if n > 2:
        k = 300
    j = 0
    while j < m:
        k = x8
        j += 1
    return k


def test_a_number_a_staged_if_made_that_a_loop_would_narrow_is_refused():
    # after zero trips the program returns 300; an int8 carry would hold 44
    assert hull_then_int8_loop(np.int8(5), 3, 0) == 300
    with pytest.raises(LoopStateError, match="must keep its value") as info:
        jax.jit(autograph.convert(hull_then_int8_loop))(jnp.int8(5), jnp.int32(3), jnp.int32(0))
    msg = str(info.value)
    assert "variable: k" in msg and "int8 cannot hold 300" in msg
    assert f"test_number_values.py:{_line(hull_then_int8_loop, 'while j < m')}" in msg


# -- a Python int computed from one a staged `if` made a tracer --------------------
# `h * 1000` of such an `h` is a Python int eagerly too: its range is followed through
# the branch, so a later `if` keeps it exact, or refuses where int32 cannot hold it.


def thousandfold(x):
    h = 1
    if x > 0:
        h = h * 1000
    if x > 1:
        h = h * 1000
    if x > 2:
        h = h * 1000 + 7
    return h


def thousandfold_again(x):
    h = thousandfold(x)
    if x > 3:
        h = h * 1000
    return h % 1009


def test_an_int_computed_from_a_branch_made_int_stays_exact():
    jf = jax.jit(autograph.convert(thousandfold))
    for x in (-1.0, 0.5, 1.5, 2.5):  # 1, 1000, 10**6, 10**9 + 7: int32 holds each
        assert int(jf(jnp.float32(x))) == thousandfold(x)


def test_an_int_computed_from_a_branch_made_int_fails_where_it_passes_int32():
    # each run whose ints fit gives them exactly; the run that passes int32 fails as it
    # runs, naming the variable and the `if` (eagerly 10**12 + 7000, exact)
    jf = jax.jit(autograph.convert(thousandfold_again))
    for x in (0.5, 2.5):
        assert int(jf(jnp.float32(x))) == thousandfold_again(x)
    with pytest.raises(Exception, match="would outgrow int32") as info:
        jax.block_until_ready(jf(jnp.float32(3.5)))
    msg = str(info.value)
    assert "variable: h" in msg and "1,000,000,007,000" in msg
    assert f"test_number_values.py:{_line(thousandfold_again, 'if x > 3')}" in msg
    with pytest.raises(BranchError, match="would outgrow int32"):
        autograph.function(thousandfold_again)(jnp.float32(3.5))


def test_an_int_computed_from_a_branch_made_int_with_64_bit_types():
    with jax_internals.enable_x64(True):
        jf = jax.jit(autograph.convert(thousandfold_again))
        for x in (0.5, 2.5, 3.5):
            assert int(jf(jnp.float32(x))) == thousandfold_again(x)


def fivefold(v):
    h = 1
    for _ in range(20):
        if jnp.any(v >= 0.0):
            h = h * 5
    return h % 1009


def test_a_loop_of_branches_that_outgrows_int32_fails_as_it_runs_not_wrapped():
    # the loop runs unrolled (it would pass int32 staged); each unrolled `if` follows `h`
    jf = jax.jit(autograph.convert(fivefold))
    never = np.array([-0.5, -1.0], np.float32)
    assert int(_quietly(jf, jnp.asarray(never))) == fivefold(never) == 1
    always = np.array([0.5, -1.0], np.float32)
    assert fivefold(always) == 5**20 % 1009
    with pytest.raises(Exception, match="`h` is a Python int when the function runs eagerly"):
        jax.block_until_ready(_quietly(jf, jnp.asarray(always)))


# -- uint32 and Python ints beyond int32 ------------------------------------------


def minus_one_or_uint32(x):
    if x > 5:
        y = x
    else:
        y = -1
    return y


def big_or_uint32(x):
    if x > 0:
        y = x
    else:
        y = 3_000_000_000
    return y


def test_no_dtype_holds_uint32_and_a_negative_number_without_64_bit_types():
    # int32 would wrap 4e9 around; int64 holds both only with 64-bit types on
    with pytest.raises(BranchError, match="together with uint32's values") as info:
        jax.jit(autograph.convert(minus_one_or_uint32))(jnp.uint32(4_000_000_000))
    assert "variable: y" in str(info.value)
    with jax_internals.enable_x64(True):
        jf = jax.jit(autograph.convert(minus_one_or_uint32))
        for x in (4_000_000_000, 3):
            _same(jf(jnp.uint32(x)), minus_one_or_uint32(np.uint32(x)), jnp.int64)


def test_a_python_int_past_int32_that_uint32_holds():
    jf = jax.jit(autograph.convert(big_or_uint32))
    for x in (0, 7):
        _same(jf(jnp.uint32(x)), big_or_uint32(np.uint32(x)), jnp.uint32)


def index_or_value(x):
    if x > 0:
        r = 2127  # float16 counts whole numbers exactly up to 2048: 2127 would be 2128
    else:
        r = x
    return r


def test_a_python_int_past_what_a_16_bit_float_counts_exactly_widens_it():
    for dtype in (jnp.float16, jnp.bfloat16):
        jf = jax.jit(autograph.convert(index_or_value))
        assert float(jf(dtype(1.0))) == 2127.0
        assert jf(dtype(1.0)).dtype == jnp.float32
        assert float(jf(dtype(-1.5))) == -1.5
    # a small one keeps the narrow dtype, as `0` with int8 does
    got = jax.jit(autograph.convert(small_scale))(jnp.float16(-1.0))
    assert got.dtype == jnp.float16


def first_index_past(x):
    for i in range(3000):
        if x[0] > i * 0.5:
            continue
        return i
    return x[1]


def first_count_past(x):
    n = 0
    while x[0] > n * 0.5:
        n += 1
        if n > 2900:
            return x[1]
    return n


@pytest.mark.filterwarnings("ignore:.*which may stop early, is staged though")  # `i * 0.5`
@pytest.mark.parametrize("program", [first_index_past, first_count_past])
def test_an_index_returned_from_a_staged_loop_keeps_its_value_against_a_16_bit_float(program):
    # the loop hands on an int the data chooses; eagerly it is a Python int (2199),
    # which float16 would round to 2200 at the merge with the float16 `return`
    jf = jax.jit(autograph.convert(program))
    for dtype in (jnp.float16, jnp.bfloat16):
        for first in (1100.0, 60000.0):
            x = jnp.array([first, 2.0], dtype)
            want = program(x)
            got = jf(x)
            assert float(got) == float(want), (program.__name__, dtype, first)


def int8_or_a_python_float(x):
    if x > 0:
        y = jnp.int8(3)
    else:
        y = 1.5
    return y + jnp.float16(1)  # float16 eagerly on either path


def bool_or_a_python_int(x):
    b = x > 0
    if x > 1:
        b = 2
    return b + jnp.int8(1)  # int8 eagerly on either path


@pytest.mark.parametrize("fn", [int8_or_a_python_float, bool_or_a_python_int])
@pytest.mark.parametrize("x", [2.0, 0.5, -1.0])
def test_a_strong_array_and_a_python_number_of_a_higher_kind_merge_weakly(fn, x):
    # as `jnp.where(c, jnp.int8(3), 1.5)` gives a weak float32, which the next array's
    # dtype then decides
    got = jax.jit(autograph.convert(fn))(jnp.float32(x))
    want = fn(jnp.float32(x))
    assert got.dtype == want.dtype and float(got) == float(want)
