"""The `continue` converter: golden output and behaviour."""

import jax
import numpy as np

import autograph
from autograph.converters import continue_statements
from tests.helpers import assert_golden, check_equivalent

# ---------------------------------------------------------------------------
# Golden output


def test_golden_docstring_example():
    assert_golden("""
        def f(n):
            i = 0
            total = 0
            while i < n:
                i = i + 1
                if i % 2 == 0:
                    continue
                total = total + i
            return total
    """, """
        def f(n):
            i = 0
            total = 0
            while i < n:
                i = i + 1
                if not i % 2 == 0:
                    total = total + i
            return total
    """, passes=(continue_statements,))


def test_golden_docstring_example_full_pipeline():
    assert_golden("""
        def f(n):
            i = 0
            total = 0
            while i < n:
                i = i + 1
                if i % 2 == 0:
                    continue
                total = total + i
            return total
    """, """
        def f(n):
            i = 0
            total = 0
            def loop_test(i, total):
                return i < n
            def loop_body(i, total):
                i = i + 1
                def if_true(total):
                    total = total + i
                    return (total,)
                (total,) = ag__.if_stmt(ag__.not_(i % 2 == 0), if_true, None, (total,), names=('total',))
                return (i, total)
            (i, total) = ag__.while_stmt(loop_test, loop_body, (i, total), names=('i', 'total'), bound=ag__.Bound(0, ag__.operator.lt, lambda: n, 1))
            return total
    """)


def test_golden_deep_continue_uses_flag_reset_each_iteration():
    assert_golden("""
        def f(xs):
            total = 0.0
            for x in xs:
                if x > 0:
                    if x > 5:
                        continue
                    total = total + 1.0
                total = total + x
            return total
    """, """
        def f(xs):
            total = 0.0
            for x in xs:
                did_continue = False
                if x > 0:
                    if x > 5:
                        did_continue = True
                    else:
                        total = total + 1.0
                if not did_continue:
                    total = total + x
            return total
    """, passes=(continue_statements,))


def test_golden_flag_and_temporaries_are_not_carried():
    # `did_continue` is reset at the top of each iteration and `t` is
    # assigned before use: neither is loop state.
    assert_golden("""
        def f(xs):
            total = 0.0
            for x in xs:
                t = x * x
                if x > 0:
                    if t > 25.0:
                        continue
                    total = total + 1.0
                total = total + t
            return total
    """, """
        def f(xs):
            total = 0.0
            def loop_body(x, total):
                did_continue = False
                t = x * x
                def if_true(did_continue, total):
                    def if_true_1(did_continue, total):
                        did_continue = True
                        return (did_continue, total)
                    def if_false(did_continue, total):
                        total = total + 1.0
                        return (did_continue, total)
                    (did_continue, total) = ag__.if_stmt(t > 25.0, if_true_1, if_false, (did_continue, total), names=('did_continue', 'total'))
                    return (did_continue, total)
                (did_continue, total) = ag__.if_stmt(x > 0, if_true, None, (did_continue, total), names=('did_continue', 'total'))
                def if_true_2(total):
                    total = total + t
                    return (total,)
                (total,) = ag__.if_stmt(ag__.not_(did_continue), if_true_2, None, (total,), names=('total',))
                return (total,)
            (total,) = ag__.for_stmt(xs, loop_body, (total,), names=('total',))
            return total
    """)


def test_golden_trailing_continue_is_dropped():
    assert_golden("""
        def f(xs):
            s = 0.0
            for x in xs:
                s = s + x
                continue
            return s
    """, """
        def f(xs):
            s = 0.0
            for x in xs:
                s = s + x
            return s
    """, passes=(continue_statements,))


# ---------------------------------------------------------------------------
# Behaviour: plain Python vs converted vs jitted


def odd_sum(n):
    i = 0
    total = 0
    while i < n:
        i = i + 1
        if i % 2 == 0:
            continue
        total = total + i
    return total


def test_while_continue():
    check_equivalent(odd_sum, *[(np.int32(n),) for n in (0, 1, 2, 9)])


def deep_continue(xs):
    total = 0.0
    for x in xs:
        if x > 0:
            if x > 5:
                continue
            total = total + 1.0
        total = total + x
    return total


def test_deep_continue_every_path():
    check_equivalent(deep_continue,
                     (np.zeros((0,), np.float32),),
                     (np.array([7.0], np.float32),),           # continue at once
                     (np.array([-2.0, 3.0, 8.0, 1.0], np.float32),))  # all three paths


def continue_in_else(xs):
    s = 0.0
    for x in xs:
        if x < 0:
            s = s - 1.0
        else:
            continue
        s = s * 2.0
    return s


def test_continue_in_else_branch():
    check_equivalent(continue_in_else, (np.array([1.0, -1.0, 2.0, -3.0], np.float32),),
                     (np.array([1.0, 2.0], np.float32),))


def continue_in_range(x, n):
    for i in range(n):
        if i % 3 == 0:
            continue
        x = x * 0.5 + i
    return x


def test_continue_in_range_static_and_traced():
    cases = [(np.float32(2.0), np.int32(n)) for n in (0, 1, 2, 7)]
    check_equivalent(continue_in_range, *cases)
    check_equivalent(continue_in_range, *[(a, int(n)) for a, n in cases], static_argnums=(1,))


def continue_inner_only(m):
    total = 0.0
    count = 0
    for row in m:
        for v in row:
            if v < 0:
                continue
            total = total + v
        count = count + 1
    return total, count


def test_continue_in_inner_loop_does_not_skip_outer_body():
    m = np.array([[1.0, -1.0, 5.0], [-2.0, -3.0, -4.0]], np.float32)
    check_equivalent(continue_inner_only, (m,))


def continue_after_state_change(x):
    steps = 0
    while x > 1:
        steps = steps + 1
        if x % 2 == 1:
            x = x - 1
            continue
        x = x // 2
    return x, steps


def test_continue_after_update():
    check_equivalent(continue_after_state_change, *[(np.int32(v),) for v in (0, 1, 2, 3, 97)])


def continue_in_a_handler(x, d):
    for _ in range(3):
        try:
            x = x + d["step"]
        except KeyError:
            continue
    n = 0
    while n < 2:
        n += 1
        try:
            x = x * d["scale"]
        except KeyError:
            continue
    return x


def test_a_handler_of_only_a_continue_keeps_a_body():
    # the flag `continue` sets is read nowhere: the handler is left a `pass`
    # (the conversion raised IndentationError)
    for d in ({}, {"step": 1.0, "scale": 2.0}):
        want = continue_in_a_handler(5.0, d)
        assert float(jax.jit(autograph.convert(continue_in_a_handler))(5.0, d)) == want
