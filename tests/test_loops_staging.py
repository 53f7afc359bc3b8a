"""When loops stage: conditions that become traced, iterables, nested loops, return in loops."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import convert as conv
from tests.helpers import check_equivalent, primitives

# ---------------------------------------------------------------------------
# A Python condition that becomes traced


def count_up(n):
    i = 0
    s = 0
    while i < n:
        s = s + i
        i = i + 1
    return s


def test_python_start_traced_bound():
    check_equivalent(count_up, *[(np.int32(n),) for n in (0, 1, 6)])
    assert "while" in primitives(jax.make_jaxpr(conv(count_up))(3))


def grow_until(x, y):
    x = 1.0  # Python float: the first test is Python
    n = 0
    while x < 100.0:
        x = x * y  # traced from the first iteration on
        n = n + 1
    return x, n


def test_condition_becomes_traced_after_first_iteration():
    check_equivalent(grow_until, (None, np.float32(3.0)), (None, np.float32(150.0)))


def python_iterations_then_staged(x):
    s = 0.0
    for i in range(5):
        if i == 2:
            s = s + x  # state becomes traced at i == 2
        s = s * 2.0 + i
    return s


def test_for_state_becomes_traced_mid_loop():
    check_equivalent(python_iterations_then_staged, (np.float32(1.5),))


def test_python_only_loop_runs_in_python_under_jit():
    calls = []

    def side(i):
        calls.append(i)
        return i

    def f(x):
        s = 0
        i = 0
        while i < 3:
            s = s + side(i)
            i = i + 1
        return x + s

    out = jax.jit(conv(f))(jnp.float32(1.0))
    assert float(out) == 4.0
    assert calls == [0, 1, 2]  # plain Python iterations, traced once


# ---------------------------------------------------------------------------
# Iterables: enumerate, zip, reversed, Python containers


def enum_zip_rev(xs, ys):
    s = 0.0
    for i, (x, y) in enumerate(zip(reversed(xs), ys), 1):
        s = s * 0.5 + i * x - y
    return s


def rev_range(x):
    for i in reversed(range(2, 9, 3)):
        x = x * 10.0 + i
    return x


def zip_range_array(xs):
    s = 0.0
    for i, x in zip(range(10), xs):
        s = s + i * x
    return s


def test_enumerate_zip_reversed(staged_small_loops):
    xs = np.arange(1.0, 6.0, dtype=np.float32)
    ys = np.arange(10.0, 14.0, dtype=np.float32)
    check_equivalent(enum_zip_rev, (xs, ys), (ys, xs))
    check_equivalent(rev_range, (np.float32(0.0),))
    check_equivalent(zip_range_array, (xs,))
    jaxpr = jax.make_jaxpr(conv(enum_zip_rev))(jnp.asarray(xs), jnp.asarray(ys))
    assert "scan" in primitives(jaxpr)


def enumerate_traced_range(x, n):
    for i, j in enumerate(range(n), 1):
        x = x * 2.0 + i * j
    return x


def reversed_traced_range(x, n):
    for i in reversed(range(n)):
        x = x * 10.0 + i
    return x


def test_enumerate_and_reversed_of_traced_range():
    # `range(n)` with a traced `n` is staged as a lax.while_loop; wrapping it
    # in enumerate/reversed must keep Python's results.
    for fn in (enumerate_traced_range, reversed_traced_range):
        check_equivalent(fn, *[(np.float32(1.0), np.int32(n)) for n in (0, 1, 4)])


def over_list(x):
    ws = [1.0, 2.0, 3.0]
    for w in ws:
        x = x * w + 1.0
    return x


def over_dict(x):
    d = {"a": 1.0, "b": 2.0}
    for k in d:
        x = x * d[k]
    return x


def over_list_of_arrays(x, y):
    for v in [x, y, x]:
        if v > 0:
            x = x + v
    return x


def test_python_containers_stay_python():
    check_equivalent(over_list, (np.float32(0.5),))
    check_equivalent(over_dict, (np.float32(0.5),))
    check_equivalent(over_list_of_arrays, (np.float32(1.0), np.float32(-2.0)),
                     (np.float32(-1.0), np.float32(2.0)))
    for fn, args in ((over_list, (1.0,)), (over_dict, (1.0,))):
        prims = primitives(jax.make_jaxpr(conv(fn))(*args))
        assert not prims & {"scan", "while"}, prims
    prims = primitives(jax.make_jaxpr(conv(over_list_of_arrays))(1.0, 2.0))
    assert not prims & {"scan", "while"} and "cond" in prims


def test_staging_kinds():
    def static_range(x):
        for i in range(100):
            x = x * 0.5 + i
        return x

    def traced_range(x, n):
        for i in range(n):
            x = x * 0.5 + i
        return x

    def plain_while(x):
        while x < 10.0:
            x = x * 2.0
        return x

    def bounded_while(x):
        while x < 10.0:
            autograph.set_loop_options(maximum_iterations=8)
            x = x * 2.0
        return x

    p = primitives(jax.make_jaxpr(conv(static_range))(1.0))
    assert "scan" in p and "while" not in p
    p = primitives(jax.make_jaxpr(conv(traced_range))(1.0, 3))
    assert "while" in p and "scan" not in p
    p = primitives(jax.make_jaxpr(conv(plain_while))(1.0))
    assert "while" in p
    # evaluated, a bounded loop is a `while_loop` that stops when its test
    # fails; differentiated, it is the bounded `scan` form
    p = primitives(jax.make_jaxpr(conv(bounded_while))(1.0))
    assert "custom_jvp_call" in p and "while" in p and "scan" not in p
    p = primitives(jax.make_jaxpr(jax.grad(conv(bounded_while)))(1.0))
    assert "scan" in p and "while" not in p


def capped(x):
    while x < 1e9:
        autograph.set_loop_options(maximum_iterations=3)
        x = x * 2.0
    return x


def capped_python(x):
    i = 0
    while i < 10:
        autograph.set_loop_options(maximum_iterations=3)
        i = i + 1
    return x + i


def test_maximum_iterations_caps_staged_loop_only():
    assert float(jax.jit(conv(capped))(jnp.float32(1.0))) == 8.0
    # fewer iterations than the cap: stops on its test, as in Python
    np.testing.assert_allclose(jax.jit(conv(capped))(jnp.float32(6e8)), capped(6e8), rtol=1e-6)
    # A loop that runs in Python ignores the option, as the plain function does.
    assert float(jax.jit(conv(capped_python))(jnp.float32(0.5))) == capped_python(0.5) == 10.5


# ---------------------------------------------------------------------------
# Nested loops and return inside loops


def nested_mixed(m, n):
    total = 0.0
    i = 0
    while i < n:
        for row in m:
            for v in row:
                if v > i:
                    continue
                total = total + v * i
        i = i + 1
    return total


def test_nested_while_for_for():
    m = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    check_equivalent(nested_mixed, *[(m, np.int32(n)) for n in (0, 1, 4)])


def find_first(xs, t):
    for x in xs:
        if x > t:
            return x
    return -1.0


def find_index_while(xs, t):
    i = 0
    while i < xs.shape[0]:
        if xs[i] > t:
            return i
        i = i + 1
    return -1


def find_in_matrix(m, t):
    for row in m:
        for v in row:
            if v > t:
                return v * 10.0
        t = t + 0.5
    return t


def return_in_range_else(x, n):
    for i in range(n):
        x = x * 2.0
        if x > 20.0:
            return x, i
    else:
        x = -x
    return x, -1


def test_return_inside_loops_every_path():
    xs = np.array([1.0, 5.0, 2.0, 7.0], np.float32)
    ts = [(xs, np.float32(t)) for t in (0.0, 4.0, 6.0, 9.0)]
    check_equivalent(find_first, *ts)
    check_equivalent(find_index_while, *ts)
    m = xs.reshape(2, 2)
    check_equivalent(find_in_matrix, *[(m, np.float32(t)) for t in (0.0, 1.5, 6.9, 9.0)])
    check_equivalent(return_in_range_else,
                     *[(np.float32(1.0), np.int32(n)) for n in (0, 1, 3, 8)])
    check_equivalent(return_in_range_else, *[(np.float32(1.0), n) for n in (0, 3, 8)],
                     static_argnums=(1,))


def mixing_hash(x, v):
    h = 7
    for i in range(24):
        h = h * 31 + i  # outgrows int32 by the 7th step; Python keeps it exact
        x = x + v[i % 3] * (h % 5)
    return x


def counted(x):
    count = 0
    for i in range(1000):
        count += 2
        x = x * 0.99 + 0.01
    return x, count


def test_integer_that_would_outgrow_int32_keeps_python_meaning():
    v = np.array([0.5, -1.0, 2.0], np.float32)
    want = mixing_hash(np.float32(1.0), v)
    with pytest.warns(UserWarning, match="outgrow int32|wraps around"):
        got = jax.jit(autograph.convert(mixing_hash))(jnp.float32(1.0), jnp.asarray(v))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_counter_that_fits_int32_stays_one_scan():
    jaxpr = jax.make_jaxpr(autograph.convert(counted))(1.0)
    assert "scan" in primitives(jaxpr)
    x, count = jax.jit(autograph.convert(counted))(jnp.float32(1.0))
    assert int(count) == 2000
    np.testing.assert_allclose(x, counted(1.0)[0], rtol=1e-4)


def doubled_where_positive(x):
    p = 1
    for i in range(40):
        if x > 0:  # a traced branch picks `p`: eagerly a Python int, staged int32
            p = p * 2
        x = x - 0.1
    return x, p


def counted_where_positive(x):
    p = 0
    for i in range(40):
        if x > 0:
            p = p + 1
        x = x - 0.1
    return x, p


def test_integer_a_traced_branch_may_push_past_int32_runs_unrolled():
    # the branch may be the user's own `jnp.where` (an array eagerly too, which plain
    # `jax.jit` runs unrolled): the loop runs unrolled, as under `jax.jit`, and says why;
    # unrolled, each `if` follows `p` exactly: a run that keeps it within int32 gives
    # it, and one that takes it past int32 (eagerly the Python int 2**40) fails
    assert doubled_where_positive(10.0)[1] == 2**40
    with pytest.warns(UserWarning, match=r"`p` is a Python int that a traced branch"):
        jf = jax.jit(autograph.convert(doubled_where_positive))
        assert int(jf(jnp.float32(2.0))[1]) == doubled_where_positive(2.0)[1] == 2**20
    with pytest.raises(Exception, match="would outgrow int32"):
        jax.block_until_ready(jf(jnp.float32(10.0)))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a count a traced branch picks stays one scan
        jaxpr = jax.make_jaxpr(autograph.convert(counted_where_positive))(1.0)
    assert "scan" in primitives(jaxpr)
    for start in (1.0, 10.0):
        x, p = jax.jit(autograph.convert(counted_where_positive))(jnp.float32(start))
        want_x, want_p = counted_where_positive(jnp.float32(start))
        assert int(p) == want_p


def doubled_by_where(x):
    p = 1
    for i in range(40):
        p = jnp.where(x > 0, p * 2, p)  # an array from the first step on, eagerly too
        x = x - 0.1
    return x, p


def test_an_integer_the_users_where_picks_gives_what_plain_jit_gives():
    x = jnp.float32(10.0)
    got = jax.jit(autograph.convert(doubled_by_where))(x)
    want = jax.jit(doubled_by_where)(x)
    assert int(got[1]) == int(want[1]) and float(got[0]) == float(want[0])


def factorial_until(x):
    fact = 1
    for i in range(1, 30):
        if i > x:  # a traced `break`: the loop is staged, `fact` a Python int eagerly
            break
        fact *= i
    return fact


def powers_of_three(n):
    f = 1
    i = 0
    while i < n:
        i += 1
        f *= 3
    return f


def factorial_to(n):
    fact = 1
    for i in range(1, n):
        fact *= i
    return fact


def factorial_then_exit(x):
    fact = 1
    for i in range(1, 30):
        fact *= i
        if i >= x:
            break
    return fact


@pytest.mark.parametrize("fn", [factorial_until, factorial_then_exit], ids=lambda f: f.__name__)
def test_a_traced_exit_fails_where_the_loop_runs_past_int32(fn):
    # a run that exits before the integer leaves int32 gives its exact value; one that
    # goes past it fails as the program runs, naming it (12! fits int32, 13! does not)
    staged = jax.jit(autograph.convert(fn))
    for x in (0, 5, 12):
        assert int(staged(jnp.int32(x))) == fn(jnp.int32(x))
    with pytest.raises(Exception, match=r"outgrow int32") as e:
        jax.block_until_ready(staged(jnp.int32(13)))
    assert "variable: fact" in str(e.value)
    with pytest.raises(autograph.LoopStateError, match=r"outgrow int32"):
        autograph.function(fn)(jnp.int32(20))


@pytest.mark.parametrize("fn", [powers_of_three, factorial_to], ids=lambda f: f.__name__)
def test_a_traced_trip_count_fails_where_the_loop_runs_past_int32(fn):
    # the trip count is known only when the program runs: the steps that keep the Python
    # int inside int32 give its exact value; the run that goes past it fails, naming it
    staged = jax.jit(autograph.convert(fn))
    for n in (0, 3, 12):
        assert int(staged(jnp.int32(n))) == fn(n)
    with pytest.raises(Exception, match=r"outgrow int32") as e:
        jax.block_until_ready(staged(jnp.int32(40)))
    assert "test_loops_staging.py" in str(e.value)
    with pytest.raises(autograph.LoopStateError, match=r"outgrow int32"):
        autograph.function(fn)(jnp.int32(40))


def powers_of_three_from_an_array(n):
    f = jnp.int32(1)
    i = 0
    while i < n:
        i += 1
        f *= 3
    return f


def test_an_int32_array_carried_past_int32_wraps_as_it_does_eagerly():
    got = jax.jit(autograph.convert(powers_of_three_from_an_array))(jnp.int32(40))
    assert int(got) == int(powers_of_three_from_an_array(jnp.int32(40)))


def test_with_64_bit_types_an_integer_is_checked_against_int64():
    from autograph import jax_internals
    with jax_internals.enable_x64(True):
        staged = jax.jit(autograph.convert(factorial_to))
        assert int(staged(jnp.int64(20))) == factorial_to(20)  # past int32, inside int64
        with pytest.raises(Exception, match=r"outgrow int64"):
            jax.block_until_ready(staged(jnp.int64(30)))
        doubled = jax.jit(autograph.convert(powers_of_three))
        assert int(doubled(jnp.int64(30))) == 3 ** 30


def tenths(x):
    for i in range(20):
        x = x + i * 0.1
    return x


def bias_corrected(x, g):
    m = jnp.zeros_like(x)
    v = jnp.zeros_like(x)
    for t in range(1, 101):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        m_hat = m / (1 - 0.9 ** t)
        v_hat = v / (1 - 0.999 ** t)
        x = x - 0.01 * m_hat / (jnp.sqrt(v_hat) + 1e-8)
    return x


def thirds(x):
    for i in range(30):
        x = x + i / 3 + (i + 1) ** 0.5
    return x


@pytest.mark.parametrize("fn, args", [
    (tenths, (jnp.float32(0.0),)),
    (bias_corrected, (jnp.asarray([2.0, -2.0, 3.0]), jnp.asarray([0.5, 0.25, -1.0]))),
    (thirds, (jnp.float32(1.0),)),
], ids=["i * 0.1", "1 - 0.999 ** t", "i / 3 + (i + 1) ** 0.5"])
def test_python_floats_of_the_index_are_computed_as_python_computes_them(fn, args):
    # under `jax.jit` the Python loop computes them in float64 and rounds once to float32;
    # staged, each step's value is given to the scan as Python computes it
    assert "scan" in primitives(jax.make_jaxpr(autograph.convert(fn))(*args))
    got = jax.jit(autograph.convert(fn))(*args)
    np.testing.assert_array_equal(got, fn(*args))  # the eager run, to the last bit


def millions(n):
    s = 0
    i = 0
    while i < n:
        s += 1_000_000
        i += 1
    return s


def triangle(n):
    s = 0
    for i in range(n):
        s += i
    return s


@pytest.mark.parametrize("fn, fits, passes", [
    (millions, 2147, 2148),  # 2,147,000,000 fits int32; 2,148,000,000 does not
    (triangle, 65536, 65537),  # the sum of 0..65535 fits; one more step does not
], ids=["counter", "sum of the index"])
def test_a_python_int_that_leaves_int32_after_many_steps_fails_where_it_does(fn, fits, passes):
    # past the steps followed exactly, a counter or a sum of the index is extrapolated:
    # the run that goes that far fails as it runs, the one a step shorter is exact
    staged = jax.jit(autograph.convert(fn))
    assert int(staged(jnp.int32(fits))) == fn(fits)
    assert int(staged(jnp.int32(7))) == fn(7)
    with pytest.raises(Exception, match=r"outgrow int32") as e:
        jax.block_until_ready(staged(jnp.int32(passes)))
    assert "variable: s" in str(e.value)


def first_negative_pair(v):
    for i in range(18):
        for j in range(i, 18):  # a traced range (from the staged outer index)
            if v[j] < 0:
                return i + j
    return -1


def two_sum(v):
    for i in range(18):
        for j in range(i + 1, 18):
            if v[i] + v[j] == 0.0:
                return i * 100 + j
    return -1


def bubble_pairs(v):
    for i in range(18):
        for j in range(18 - i - 1):
            if v[j] > v[j + 1] + 5.0:
                return i * 100 + j
    return -1


@pytest.mark.parametrize("fn", [first_negative_pair, two_sum, bubble_pairs])
def test_an_inner_range_of_the_staged_outer_index_with_an_early_return(fn):
    # the inner range's count is computed in an unsigned dtype, wrapping where it is
    # empty on purpose: not an integer of the program that leaves what Python computes
    jf = jax.jit(autograph.convert(fn))
    for k in (0, 7, 17):
        v = jnp.ones(18).at[k].set(-1.0).at[(k + 3) % 18].set(9.0)
        assert int(jf(v)) == fn(v), (fn.__name__, k)
    assert int(jf(jnp.ones(18))) == fn(jnp.ones(18))


def traced_maximum(x, n):
    while x > 0:
        autograph.set_loop_options(maximum_iterations=n)
        x = x - 1
    return x


def test_a_traced_maximum_iterations_of_a_staged_while_is_a_clear_error():
    with pytest.raises(autograph.errors.LoopOptionsError, match="as a Python int") as e:
        jax.jit(autograph.convert(traced_maximum))(jnp.float32(5.0), jnp.int32(3))
    assert "test_loops_staging.py" in str(e.value)
    # a Python int works, traced or not
    assert float(jax.jit(autograph.convert(traced_maximum), static_argnums=1)(
        jnp.float32(5.0), 3)) == 2.0
