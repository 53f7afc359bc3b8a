"""The `break` converter (and loop `else:`): golden output and behaviour."""

import jax.numpy as jnp
import numpy as np
import pytest

from autograph.converters import break_statements
from tests.helpers import assert_golden, check_equivalent

# ---------------------------------------------------------------------------
# Golden output


def test_golden_docstring_example():
    assert_golden("""
        def f(x):
            while x > 1:
                if x % 7 == 0:
                    break
                x = x // 2
            else:
                x = 0
            return x
    """, """
        def f(x):
            did_break = False
            while not did_break and x > 1:
                if x % 7 == 0:
                    did_break = True
                else:
                    x = x // 2
            if not did_break:
                x = 0
            return x
    """, passes=(break_statements,))


def test_golden_docstring_example_full_pipeline():
    assert_golden("""
        def f(x):
            while x > 1:
                if x % 7 == 0:
                    break
                x = x // 2
            else:
                x = 0
            return x
    """, """
        def f(x):
            did_break = False
            def loop_test(did_break, x):
                return ag__.and_(ag__.not_(did_break), lambda: x > 1)
            def loop_body(did_break, x):
                def if_true(did_break, x):
                    did_break = True
                    return (did_break, x)
                def if_false(did_break, x):
                    x = x // 2
                    return (did_break, x)
                (did_break, x) = ag__.if_stmt(x % 7 == 0, if_true, if_false, (did_break, x), names=('did_break', 'x'))
                return (did_break, x)
            (did_break, x) = ag__.while_stmt(loop_test, loop_body, (did_break, x), names=('did_break', 'x'))
            def if_true_1(x):
                x = 0
                return (x,)
            (x,) = ag__.if_stmt(ag__.not_(did_break), if_true_1, None, (x,), names=('x',))
            return x
    """)


def test_golden_for_else():
    # A `for` cannot grow its test in syntax: the flag test is an annotation.
    assert_golden("""
        def f(xs):
            s = 0.0
            for x in xs:
                if x < 0:
                    break
                s = s + x
            else:
                s = -s
            return s
    """, """
        def f(xs):
            s = 0.0
            did_break = False
            for x in xs:
                if x < 0:
                    did_break = True
                else:
                    s = s + x
            if not did_break:
                s = -s
            return s
    """, passes=(break_statements,))


def test_golden_nested_break_guards_rest_of_body():
    assert_golden("""
        def f(x):
            while x > 0:
                if x > 10:
                    if x > 100:
                        break
                    x = x - 10
                x = x - 1
            return x
    """, """
        def f(x):
            did_break = False
            while not did_break and x > 0:
                if x > 10:
                    if x > 100:
                        did_break = True
                    else:
                        x = x - 10
                if not did_break:
                    x = x - 1
            return x
    """, passes=(break_statements,))


def test_golden_for_break_uses_extra_test_and_does_not_carry_temporaries():
    assert_golden("""
        def f(xs):
            s = 0.0
            for x in xs:
                t = x * x
                if t > 4.0:
                    break
                s = s + t
            return s
    """, """
        def f(xs):
            s = 0.0
            did_break = False
            def loop_test(did_break, s):
                return ag__.not_(did_break)
            def loop_body(x, did_break, s):
                t = x * x
                def if_true(did_break, s):
                    did_break = True
                    return (did_break, s)
                def if_false(did_break, s):
                    s = s + t
                    return (did_break, s)
                (did_break, s) = ag__.if_stmt(t > 4.0, if_true, if_false, (did_break, s), names=('did_break', 's'))
                return (did_break, s)
            (did_break, s) = ag__.for_stmt(xs, loop_body, (did_break, s), names=('did_break', 's'), extra_test=loop_test)
            return s
    """)


def test_golden_loop_without_break_keeps_else_unconditionally():
    assert_golden("""
        def f(x):
            while x > 1:
                x = x - 1
            else:
                x = x * 10
            return x
    """, """
        def f(x):
            while x > 1:
                x = x - 1
            x = x * 10
            return x
    """, passes=(break_statements,))


# ---------------------------------------------------------------------------
# Behaviour: plain Python vs converted vs jitted


def while_break_else(x):
    while x > 1:
        if x % 7 == 0:
            break
        x = x // 2
    else:
        x = 0
    return x


def test_while_break_else_every_path():
    # 0: no iteration (else); 14: break at once; 30: 15 -> 7, break;
    # 3: 1, then else; 100: many iterations then else.
    check_equivalent(while_break_else, *[(np.int32(v),) for v in (0, 14, 30, 3, 100)])


def for_break_else(xs):
    s = 0.0
    for x in xs:
        if x < 0:
            break
        s = s + x
    else:
        s = -s
    return s


def test_for_break_else_every_path():
    check_equivalent(
        for_break_else,
        (np.zeros((0,), np.float32),),                      # empty: else
        (np.array([-1.0, 2.0, 3.0], np.float32),),          # break at once
        (np.array([1.0, 2.0, -3.0, 4.0], np.float32),),     # break in the middle
        (np.array([1.0, 2.0, 3.0, -4.0], np.float32),),     # break at the last item
        (np.array([1.0, 2.0, 3.0], np.float32),))           # no break: else


def first_index_above(xs, limit):
    idx = -1
    for i in range(xs.shape[0]):
        if xs[i] > limit:
            idx = i
            break
    return idx


def test_range_break_search():
    xs = np.array([1.0, 5.0, 2.0, 7.0], np.float32)
    check_equivalent(first_index_above, *[(xs, np.float32(v)) for v in (0.0, 4.0, 6.0, 9.0)])


def break_in_traced_range(x, n):
    for i in range(n):
        if x > 100.0:
            break
        x = x * 3.0 + i
    return x


def test_break_in_range_with_traced_bound():
    check_equivalent(break_in_traced_range, *[(np.float32(1.0), np.int32(n)) for n in (0, 1, 3, 10)])


def test_break_in_static_range_is_masked_scan():
    check_equivalent(break_in_traced_range, *[(np.float32(1.0), n) for n in (0, 1, 3, 10)],
                     static_argnums=(1,))


def nested_break(x):
    while x > 0:
        if x > 10:
            if x > 100:
                break
            x = x - 10
        x = x - 1
    return x


def test_break_nested_in_ifs():
    check_equivalent(nested_break, *[(np.int32(v),) for v in (0, 5, 35, 150)])


def while_true_break(x):
    n = 0
    while True:
        n = n + 1
        x = x * 2.0
        if x > 50.0:
            break
    return x, n


def test_while_true_with_break():
    check_equivalent(while_true_break, (np.float32(100.0),), (np.float32(30.0),),
                     (np.float32(0.5),))


def inner_break_only(m):
    total = 0.0
    for row in m:
        for v in row:
            if v < 0:
                break
            total = total + v
        total = total * 2.0
    return total


def test_break_leaves_only_the_inner_loop():
    m = np.array([[1.0, -1.0, 5.0], [2.0, 3.0, 4.0], [-1.0, 9.0, 9.0]], np.float32)
    check_equivalent(inner_break_only, (m,), (np.abs(m),))


def outer_break_after_inner(m):
    total = 0.0
    for row in m:
        for v in row:
            total = total + v
        if total > 10.0:
            break
    return total


def test_break_in_outer_loop_after_inner_loop():
    m = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    check_equivalent(outer_break_after_inner, (m,), (m * 0.1,))


def break_then_continue(xs):
    s = 0.0
    for x in xs:
        if x < 0:
            continue
        if x > 10:
            break
        s = s + x
    return s


def test_break_and_continue_in_one_loop():
    check_equivalent(break_then_continue,
                     (np.array([1.0, -2.0, 3.0, 11.0, 4.0], np.float32),),
                     (np.array([-1.0, -2.0], np.float32),),
                     (np.array([20.0, 1.0], np.float32),))


def else_without_break(x):
    while x > 1:
        x = x - 1
    else:
        x = x * 10
    return x


def test_else_without_break_always_runs():
    check_equivalent(else_without_break, (np.int32(0),), (np.int32(2),), (np.int32(7),))


# ---------------------------------------------------------------------------
# An exit at the top of a `while` body joins the loop test


_LEADING_EXITS = {
    "two exits join the test": ("""
        def f(x, n):
            while x < n:
                if x % 7 == 0:
                    break
                if x > 50:
                    break
                x = x + 3
            return x
    """, """
        def f(x, n):
            while x < n and (not x % 7 == 0) and (not x > 50):
                x = x + 3
            return x
    """),
    "a later break keeps the flag": ("""
        def f(x):
            while x > 1:
                if x == 5:
                    break
                x = x - 2
                if x % 3 == 0:
                    break
            return x
    """, """
        def f(x):
            did_break = False
            while not did_break and x > 1 and (not x == 5):
                x = x - 2
                if x % 3 == 0:
                    did_break = True
            return x
    """),
    # the `else:` must not run after the exit, so the exit stays a flagged break
    "an else keeps the flag": ("""
        def f(x):
            while x > 1:
                if x == 5:
                    break
                x = x - 2
            else:
                x = 0
            return x
    """, """
        def f(x):
            did_break = False
            while not did_break and x > 1:
                if x == 5:
                    did_break = True
                else:
                    x = x - 2
            if not did_break:
                x = 0
            return x
    """),
}


@pytest.mark.parametrize("case", list(_LEADING_EXITS))
def test_golden_leading_exits(case):
    src, expected = _LEADING_EXITS[case]
    assert_golden(src, expected, passes=(break_statements,))


def leading_exits(x, n):
    it = 0
    while x < n and it < 40:
        if x % 7 == 0:
            break
        if x > 50:
            break
        x = x + 3
        it += 1
    return x + it


def test_leading_exits_every_path():
    # exits at the first iteration (7), at a middle one (by % 7 or by > 50), and never
    check_equivalent(leading_exits, *[(np.int32(x), np.int32(n))
                                      for x, n in ((7, 100), (1, 100), (2, 100), (1, 10),
                                                   (8, 9), (30, 5))])


def test_leading_exit_tests_run_in_the_same_order():
    import autograph

    def run(x, log):
        while log.append(("test", x)) or x > 0:
            if log.append(("exit", x)) or x == 3:
                break
            x = x - 1
        return x

    want, got = [], []
    assert autograph.convert(run)(6, got) == run(6, want)
    assert got == want


def test_leading_exit_gradient_matches_the_flagged_loop():
    import jax

    import autograph

    def search(x):
        t = 1.0
        it = 0
        while it < 30:
            if t * x < 0.1:
                break
            t = t * 0.5
            it += 1
        return t * x

    def flagged(x):
        t = 1.0
        it = 0
        done = False
        while it < 30 and not done:
            if t * x < 0.1:
                done = True
            else:
                t = t * 0.5
                it += 1
        return t * x

    for x in (0.05, 1.0, 3.0):
        g1 = jax.grad(autograph.convert(search))(x)
        g2 = jax.grad(autograph.convert(flagged))(x)
        np.testing.assert_allclose(g1, g2)
        np.testing.assert_allclose(autograph.convert(search)(x), search(x))


def stop_after_a_rise(x, n):
    # `prev` is read (behind `i > 0`) before the loop first assigns it
    i = 0
    while i < n:
        if i > 0 and prev > 1.5:
            break
        prev = x[i]
        i += 1
    return i


def stop_after_a_rise_else(x, n):
    i = 0
    while i < n:
        if i > 0 and prev > 1.5:
            break
        prev = x[i]
        i += 1
    else:
        i = -1
    return i


def test_exit_reading_a_variable_the_loop_assigns_later():
    x = np.array([0.5, 1.0, 2.0, 3.0, 0.1], np.float32)
    for fn in (stop_after_a_rise, stop_after_a_rise_else):
        check_equivalent(fn, *[(x, np.int32(n)) for n in (0, 1, 3, 5)])


def last_below_for(xs, t):
    for i in range(xs.shape[0]):
        if xs[i] > t:
            break
        last = xs[i]
    return last


def last_below_while(xs, t):
    i = 0
    while i < xs.shape[0]:
        y = xs[i] * 1.0
        if y > t:
            break
        last = y
        i += 1
    return last


@pytest.mark.parametrize("fn", [last_below_for, last_below_while])
@pytest.mark.parametrize("size", [4, 20])  # a Python loop, a staged one
def test_variable_assigned_after_a_break_is_unassigned_if_the_loop_left_first(fn, size):
    import autograph

    xs = np.arange(size, dtype=np.float32) + 10.0
    for t in (11.5, 100.0):  # leaves after two items; never leaves
        check_equivalent(fn, (xs, np.float32(t)))
    with pytest.raises(UnboundLocalError):  # leaves before assigning: Python raises
        fn(xs, np.float32(5.0))
    with pytest.raises(UnboundLocalError, match="`last`"):
        autograph.function(fn)(jnp.asarray(xs), jnp.float32(5.0))


def index_of_first_above(xs, t):
    for i in range(xs.shape[0]):
        if xs[i] > t:
            r = i  # assigned only on the path that leaves the loop
            break
    else:
        r = -1
    return r


def value_of_first_above(xs, t):
    i = 0
    while i < xs.shape[0]:
        if xs[i] > t:
            found = xs[i]
            break
        i += 1
    else:
        found = -1.0
    return found


@pytest.mark.parametrize("fn", [index_of_first_above, value_of_first_above])
@pytest.mark.parametrize("size", [4, 20])
def test_search_assigning_its_result_where_it_breaks(fn, size):
    xs = np.arange(size, dtype=np.float32)
    check_equivalent(fn, *[(xs, np.float32(t)) for t in (-1.0, 2.5, 100.0)])


def test_result_assigned_only_where_it_breaks_is_unassigned_if_it_never_does():
    import autograph

    def only_where_it_breaks(xs, t):
        for i in range(xs.shape[0]):
            if xs[i] > t:
                r = i
                break
        return r

    xs = np.arange(20, dtype=np.float32)
    check_equivalent(only_where_it_breaks, (xs, np.float32(2.5)))
    with pytest.raises(UnboundLocalError, match="`r`"):
        autograph.function(only_where_it_breaks)(jnp.asarray(xs), jnp.float32(100.0))


def search_then_overwrite(xs, t):
    for i in range(xs.shape[0]):
        if xs[i] > t:
            r = xs[i]  # `r` leaves this loop carried with a "defined" flag
            break
    for k in range(xs.shape[0]):
        r = xs[k] * 2.0  # a staged loop that assigns it: the flag is set
    return r


def test_flagged_variable_assigned_by_a_later_staged_loop():
    xs = np.arange(20, dtype=np.float32)
    check_equivalent(search_then_overwrite, *[(xs, np.float32(t)) for t in (2.5, 100.0)])
