"""The `while` converter: golden output and behaviour against plain Python."""

import numpy as np

import autograph
from autograph.converters import while_statements
from tests.helpers import assert_golden, check_equivalent

# ---------------------------------------------------------------------------
# Golden output


def test_golden_docstring_example():
    assert_golden("""
        def f(x, n):
            acc = 0.0
            i = 0
            while i < n:
                acc = acc + x[i]
                i = i + 1
            return acc
    """, """
        def f(x, n):
            acc = 0.0
            i = 0
            def loop_test(acc, i):
                return i < n
            def loop_body(acc, i):
                acc = acc + x[i]
                i = i + 1
                return (acc, i)
            (acc, i) = ag__.while_stmt(loop_test, loop_body, (acc, i), names=('acc', 'i'), bound=ag__.Bound(1, ag__.operator.lt, lambda: n, 1))
            return acc
    """)


def test_golden_while_pass_alone():
    assert_golden("""
        def f(x):
            while x > 1:
                x = x // 2
            return x
    """, """
        def f(x):
            def loop_test(x):
                return x > 1
            def loop_body(x):
                x = x // 2
                return (x,)
            (x,) = ag__.while_stmt(loop_test, loop_body, (x,), names=('x',))
            return x
    """, passes=(while_statements,))


def test_golden_temporaries_are_not_carried():
    # `t` is assigned before it is read in every iteration and is dead after
    # the loop; `scale` is only read.
    assert_golden("""
        def f(x, n):
            acc = 0.0
            i = 0
            scale = 2.0
            while i < n:
                t = x[i] * scale
                acc = acc + t
                i = i + 1
            return acc
    """, """
        def f(x, n):
            acc = 0.0
            i = 0
            scale = 2.0
            def loop_test(acc, i):
                return i < n
            def loop_body(acc, i):
                t = x[i] * scale
                acc = acc + t
                i = i + 1
                return (acc, i)
            (acc, i) = ag__.while_stmt(loop_test, loop_body, (acc, i), names=('acc', 'i'), bound=ag__.Bound(1, ag__.operator.lt, lambda: n, 1))
            return acc
    """)


def test_golden_variable_dead_after_loop_but_read_by_test_is_carried():
    assert_golden("""
        def f(x):
            y = 0.0
            while x > 1:
                y = y + x
                x = x - 1
            return y
    """, """
        def f(x):
            y = 0.0
            def loop_test(x, y):
                return x > 1
            def loop_body(x, y):
                y = y + x
                x = x - 1
                return (x, y)
            (x, y) = ag__.while_stmt(loop_test, loop_body, (x, y), names=('x', 'y'), bound=ag__.Bound(0, ag__.operator.gt, lambda: 1, -1))
            return y
    """)


def test_golden_nested_inner_counter_not_carried_by_outer():
    assert_golden("""
        def f(x, n):
            i = 0
            while i < n:
                j = 0
                while j < i:
                    x = x + j
                    j = j + 1
                i = i + 1
            return x
    """, """
        def f(x, n):
            i = 0
            def loop_test(i, x):
                return i < n
            def loop_body(i, x):
                j = 0
                def loop_test_1(j, x):
                    return j < i
                def loop_body_1(j, x):
                    x = x + j
                    j = j + 1
                    return (j, x)
                (j, x) = ag__.while_stmt(loop_test_1, loop_body_1, (j, x), names=('j', 'x'), bound=ag__.Bound(0, ag__.operator.lt, lambda: i, 1))
                i = i + 1
                return (i, x)
            (i, x) = ag__.while_stmt(loop_test, loop_body, (i, x), names=('i', 'x'), bound=ag__.Bound(0, ag__.operator.lt, lambda: n, 1))
            return x
    """)


def test_golden_loop_options():
    assert_golden("""
        def f(x):
            while x < 10.0:
                autograph.set_loop_options(maximum_iterations=5)
                x = x * 2.0
            return x
    """, """
        def f(x):
            def loop_test(x):
                return x < 10.0
            def loop_body(x):
                x = x * 2.0
                return (x,)
            (x,) = ag__.while_stmt(loop_test, loop_body, (x,), names=('x',), opts={'maximum_iterations': 5})
            return x
    """)


def test_to_code_of_a_real_function_uses_while_stmt():
    code = autograph.to_code(sum_first)
    assert "ag__.while_stmt(" in code
    assert "while " not in code


# ---------------------------------------------------------------------------
# Behaviour: plain Python vs converted vs jitted


def sum_first(x, n):
    acc = 0.0
    i = 0
    while i < n:
        acc = acc + x[i]
        i = i + 1
    return acc


def test_sum_first_zero_one_many():
    x = np.arange(1.0, 6.0, dtype=np.float32)
    check_equivalent(sum_first, (x, np.int32(0)), (x, np.int32(1)), (x, np.int32(5)))


def halvings(x):
    steps = 0
    while x > 1:
        x = x // 2
        steps = steps + 1
    return x, steps


def test_condition_on_carried_value():
    check_equivalent(halvings, (np.int32(1),), (np.int32(2),), (np.int32(1000),))


def newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-3:
        x = 0.5 * (x + a / x)
    return x


def test_float_condition():
    check_equivalent(newton_sqrt, (np.float32(1.0),), (np.float32(2.0),),
                     (np.float32(400.0),))


def collatz_with_if(n):
    steps = 0
    while n > 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps = steps + 1
    return steps


def test_if_inside_while():
    check_equivalent(collatz_with_if, (np.int32(1),), (np.int32(2),), (np.int32(27),))


def while_inside_if(x, n):
    if x > 0:
        i = 0
        while i < n:
            x = x * 2.0
            i = i + 1
    else:
        x = -x
    return x


def test_while_inside_if():
    check_equivalent(while_inside_if, (np.float32(1.5), np.int32(3)),
                     (np.float32(-1.5), np.int32(3)), (np.float32(1.5), np.int32(0)))


def nested_while(x, n):
    i = 0
    while i < n:
        j = 0
        while j < i:
            x = x + j
            j = j + 1
        i = i + 1
    return x


def test_nested_while():
    for n in (0, 1, 2, 5):
        check_equivalent(nested_while, (np.float32(0.5), np.int32(n)))


def loop_with_temporary(x, n):
    acc = 0.0
    i = 0
    while i < n:
        t = x[i] * 2.0
        acc = acc + t
        i = i + 1
    return acc


def test_temporary_in_body():
    x = np.arange(4.0, dtype=np.float32)
    check_equivalent(loop_with_temporary, (x, np.int32(0)), (x, np.int32(4)))


def array_state(v, n):
    i = 0
    while i < n:
        v = v * 0.5 + 1.0
        i = i + 1
    return v


def test_array_valued_state():
    v = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    check_equivalent(array_state, (v, np.int32(0)), (v, np.int32(1)), (v, np.int32(7)))


def test_golden_counter_stepped_after_a_break_keeps_its_bound():
    # `loop_counters` finds `j += 1` before the break pass moves it into `if_false`
    assert_golden("""
        def f(x):
            j = 0
            while j < 30:
                x = x + 1.0
                if x > 10.0:
                    break
                j += 1
            return x
    """, """
        def f(x):
            j = 0
            did_break = False
            def loop_test(did_break, j, x):
                return ag__.and_(ag__.not_(did_break), lambda: j < 30)
            def loop_body(did_break, j, x):
                x = x + 1.0
                def if_true(did_break, j):
                    did_break = True
                    return (did_break, j)
                def if_false(did_break, j):
                    j += 1
                    return (did_break, j)
                (did_break, j) = ag__.if_stmt(x > 10.0, if_true, if_false, (did_break, j), names=('did_break', 'j'))
                return (did_break, j, x)
            (did_break, j, x) = ag__.while_stmt(loop_test, loop_body, (did_break, j, x), names=('did_break', 'j', 'x'), bound=ag__.Bound(1, ag__.operator.lt, lambda: 30, 1))
            return x
    """)


def test_golden_a_list_only_appended_to_is_not_carried():
    # `hist` is made here and only appended to: nothing reads it, so the loop
    # does not carry it (`analysis.dead_lists`); `dead=` tells the runtime's
    # watch that its growth is no effect. `kept` is returned, so it is carried.
    assert_golden("""
        def f(x):
            hist = []
            kept = []
            while x > 1:
                x = x // 2
                hist.append(x)
                kept.append(x)
            return x, kept
    """, """
        def f(x):
            hist = []
            kept = []
            def loop_test(kept, x):
                return x > 1
            def loop_body(kept, x):
                x = x // 2
                hist.append(x)
                kept.append(x)
                return (kept, x)
            (kept, x) = ag__.while_stmt(loop_test, loop_body, (kept, x), names=('kept', 'x'), dead=('hist',))
            return (x, kept)
    """, passes=(while_statements,))
