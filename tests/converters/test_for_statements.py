"""The `for` converter: golden output and behaviour against plain Python."""

import numpy as np

from autograph.converters import for_statements
from tests.helpers import assert_golden, check_equivalent

# ---------------------------------------------------------------------------
# Golden output


def test_golden_docstring_example():
    assert_golden("""
        def f(y, n):
            for i in range(n):
                y = y * 0.99 + i
            return y
    """, """
        def f(y, n):
            def loop_body(i, y):
                y = y * 0.99 + i
                return (y,)
            (y,) = ag__.for_stmt(ag__.range_(n), loop_body, (y,), names=('y',))
            return y
    """)


def test_golden_for_pass_alone():
    assert_golden("""
        def f(xs):
            s = 0.0
            for x in xs:
                s = s + x
            return s
    """, """
        def f(xs):
            s = 0.0
            def loop_body(x, s):
                s = s + x
                return (s,)
            (s,) = ag__.for_stmt(xs, loop_body, (s,), names=('s',))
            return s
    """, passes=(for_statements,))


def test_golden_temporaries_are_not_carried():
    assert_golden("""
        def f(xs):
            s = 0.0
            for i, x in enumerate(xs):
                t = x * i
                s = s + t
            return s
    """, """
        def f(xs):
            s = 0.0
            def loop_body(itr, s):
                (i, x) = itr
                t = x * i
                s = s + t
                return (s,)
            (s,) = ag__.for_stmt(ag__.enumerate_(xs), loop_body, (s,), names=('s',))
            return s
    """)


def test_golden_target_live_after_loop_is_carried():
    assert_golden("""
        def f(x):
            s = 0.0
            for i in range(3):
                s = s + x
            return s, i
    """, """
        def f(x):
            s = 0.0
            def loop_body(itr, i, s):
                i = itr
                s = s + x
                return (i, s)
            (i, s) = ag__.for_stmt(ag__.range_(3), loop_body, (ag__.Undefined('i'), s), names=('i', 's'))
            return (s, ag__.ld(i))
    """)


def test_golden_zip_and_reversed_are_rewritten():
    assert_golden("""
        def f(xs, ys):
            s = 0.0
            for x, y in zip(reversed(xs), ys):
                s = s + x * y
            return s
    """, """
        def f(xs, ys):
            s = 0.0
            def loop_body(itr, s):
                (x, y) = itr
                s = s + x * y
                return (s,)
            (s,) = ag__.for_stmt(ag__.zip_(ag__.reversed_(xs), ys), loop_body, (s,), names=('s',))
            return s
    """)


def test_golden_shadowed_range_is_not_rewritten():
    assert_golden("""
        def f(x, range):
            for i in range(x):
                x = x + i
            return x
    """, """
        def f(x, range):
            def loop_body(i, x):
                x = x + i
                return (x,)
            (x,) = ag__.for_stmt(ag__.converted_call(range, x), loop_body, (x,), names=('x',))
            return x
    """)


def test_golden_python_list_iterable_left_as_is():
    assert_golden("""
        def f(x):
            for w in [1.0, 2.0]:
                x = x * w
            return x
    """, """
        def f(x):
            def loop_body(w, x):
                x = x * w
                return (x,)
            (x,) = ag__.for_stmt([1.0, 2.0], loop_body, (x,), names=('x',))
            return x
    """)


# ---------------------------------------------------------------------------
# Behaviour: plain Python vs converted vs jitted


def decay(y, n):
    for i in range(n):
        y = y * 0.99 + i
    return y


def test_range_static_and_traced_bounds():
    # NumPy n: a Python loop; jitted n: a traced range (lax.while_loop).
    check_equivalent(decay, (np.float32(1.0), np.int32(0)), (np.float32(1.0), np.int32(1)),
                     (np.float32(1.0), np.int32(10)))


def test_range_with_static_argnum_is_scanned():
    check_equivalent(decay, (np.float32(1.0), 0), (np.float32(1.0), 1), (np.float32(1.0), 10),
                     static_argnums=(1,))


def range_start_stop_step(x, a, b):
    for i in range(a, b, 3):
        x = x * 2.0 + i
    return x


def test_range_start_stop_step():
    check_equivalent(range_start_stop_step, (np.float32(1.0), np.int32(5), np.int32(2)),
                     (np.float32(1.0), np.int32(2), np.int32(5)),
                     (np.float32(1.0), np.int32(-4), np.int32(11)))


def countdown(x, n):
    for i in range(n, 0, -1):
        x = x * 10.0 + i
    return x


def test_range_negative_step():
    check_equivalent(countdown, (np.float32(0.0), np.int32(0)), (np.float32(0.0), np.int32(1)),
                     (np.float32(0.0), np.int32(4)))


def array_sum(xs):
    s = 0.0
    for x in xs:
        s = s + x * x
    return s


def test_over_array_zero_one_many():
    check_equivalent(array_sum, (np.zeros((0,), np.float32),),
                     (np.array([3.0], np.float32),),
                     (np.arange(6.0, dtype=np.float32),))


def rows(m):
    total = np.zeros(m.shape[1], np.float32)
    for row in m:
        total = total + row * row
    return total


def test_over_array_rows():
    check_equivalent(rows, (np.arange(12.0, dtype=np.float32).reshape(4, 3),))


def enumerated(xs):
    s = 0.0
    for i, x in enumerate(xs):
        t = x * i
        s = s + t
    return s


def test_enumerate():
    check_equivalent(enumerated, (np.zeros((0,), np.float32),),
                     (np.array([2.0], np.float32),),
                     (np.arange(1.0, 6.0, dtype=np.float32),))


def enumerated_start(xs):
    s = 0.0
    for i, x in enumerate(xs, 10):
        s = s * 0.5 + x * i
    return s


def test_enumerate_with_start():
    check_equivalent(enumerated_start, (np.arange(1.0, 5.0, dtype=np.float32),))


def zipped_reversed(xs, ys):
    s = 0.0
    for x, y in zip(reversed(xs), ys):
        s = s * 10.0 + x * y
    return s


def test_zip_reversed_unequal_lengths():
    xs = np.arange(1.0, 5.0, dtype=np.float32)
    ys = np.arange(1.0, 4.0, dtype=np.float32)
    check_equivalent(zipped_reversed, (xs, ys), (ys, xs))


def if_in_for(xs):
    pos = 0.0
    neg = 0.0
    for x in xs:
        if x > 0:
            pos = pos + x
        else:
            neg = neg - x
    return pos, neg


def test_if_inside_for():
    check_equivalent(if_in_for, (np.array([1.0, -2.0, 3.0, -4.0], np.float32),),
                     (np.array([-1.0], np.float32),))


def for_in_if(x, xs):
    if x > 0:
        for v in xs:
            x = x + v
    return x


def test_for_inside_if():
    xs = np.arange(3.0, dtype=np.float32)
    check_equivalent(for_in_if, (np.float32(1.0), xs), (np.float32(-1.0), xs))


def nested_for(m):
    s = 0.0
    for i in range(3):
        for row in m:
            s = s * 0.5 + row[i]
    return s


def test_nested_for():
    check_equivalent(nested_for, (np.arange(6.0, dtype=np.float32).reshape(2, 3),))


def triangular(n):
    s = 0
    for i in range(n):
        for j in range(i):
            s = s + j
    return s


def test_nested_for_inner_bound_from_outer_target():
    check_equivalent(triangular, (np.int32(0),), (np.int32(1),), (np.int32(6),))


def over_python_list(x):
    for w in [1.0, 2.0, 3.0]:
        x = x * w + 1.0
    return x


def test_over_python_list():
    check_equivalent(over_python_list, (np.float32(0.5),))


def test_golden_a_loop_in_a_try_updates_what_it_carries_in_place():
    # a handler the exception reaches sees what the iterations before it assigned
    assert_golden("""
        def f(x):
            try:
                for i in range(3):
                    x = x + 1.0
                    if i == 1:
                        raise ValueError(i)
            except ValueError:
                x = x * 10.0
            return x
    """, """
        def f(x):
            i = ag__.Undefined('i')
            try:
                with ag__.handled_by((lambda: ValueError,)):
                    def loop_body(i, x_1):
                        nonlocal x
                        x = x_1
                        x = x + 1.0
                        def if_true():
                            raise ag__.raised(ValueError(ag__.ld(i)), in_try=True)
                            return ()
                        ag__.if_stmt(ag__.ld(i) == 1, if_true, None, (), names=())
                        return (x,)
                    (x,) = ag__.for_stmt(ag__.range_(3), loop_body, (x,), names=('x',))
            except ValueError:
                x = x * 10.0
            return x
    """)


def test_golden_a_nested_generator_is_kept_as_written():
    assert_golden("""
        def g(x):
            def steps(v):
                for i in range(3):
                    yield v * i
            return sum(steps(x))
    """, """
        def g(x):
            def steps(v):
                for i in range(3):
                    yield (v * i)
            return sum(ag__.converted_call(steps, x))
    """)
