"""`and`, `or`, `not`, `in` and chained comparisons: golden output and semantics."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import errors
from autograph.converters import logical_expressions
from tests.helpers import assert_golden, check_equivalent

F32 = np.float32


def _where(fn, snippet):
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if snippet in text:
            return rf"test_logical_expressions\.py:{start + i}:"
    raise AssertionError(snippet)


# ---------------------------------------------------------------------------
# Golden output


def test_golden_docstring_example():
    assert_golden("""
        def f(a, b, c):
            return a and b or not c
    """, """
        def f(a, b, c):
            return ag__.or_(ag__.and_(a, lambda: b), lambda: ag__.not_(c))
    """)


def test_golden_three_operands_nest_to_the_right():
    assert_golden("""
        def f(a, b, c):
            return a and b and c
    """, """
        def f(a, b, c):
            return ag__.and_(a, lambda: ag__.and_(b, lambda: c))
    """, passes=(logical_expressions,))


def test_golden_chained_comparison():
    assert_golden("""
        def f(x):
            return 0 < x < 1
    """, """
        def f(x):
            return ag__.and_(0 < x, lambda: x < 1)
    """, passes=(logical_expressions,))


def test_golden_single_comparison_untouched():
    assert_golden("""
        def f(x, y):
            return x < y
    """, """
        def f(x, y):
            return x < y
    """)


def test_golden_chained_comparison_middle_call_evaluated_once():
    assert_golden("""
        def f(x):
            return 0 < g(x) < 1
    """, """
        def f(x):
            return ag__.and_(0 < (cmp := ag__.converted_call(g, x)), lambda: cmp < 1)
    """)


def test_golden_long_chain_only_complex_middles_get_a_name():
    assert_golden("""
        def f(x, y):
            return 0 < x + 1 <= y.a < 3
    """, """
        def f(x, y):
            return ag__.and_(0 < (cmp := (x + 1)), lambda: ag__.and_(cmp <= y.a, lambda: y.a < 3))
    """, passes=(logical_expressions,))


def test_golden_in_if_condition():
    assert_golden("""
        def f(x):
            if x > 0 and not x > 2:
                x = x * 2
            return x
    """, """
        def f(x):
            def if_true(x):
                x = x * 2
                return (x,)
            (x,) = ag__.if_stmt(ag__.and_(x > 0, lambda: ag__.not_(x > 2), test=True), if_true, None, (x,), names=('x',))
            return x
    """)


def test_golden_membership():
    assert_golden("""
        def f(c, xs, d):
            return c in xs, c not in xs, 0 < c in d
    """, """
        def f(c, xs, d):
            return (ag__.in_(c, xs), ag__.not_(ag__.in_(c, xs)), ag__.and_(0 < c, lambda: ag__.in_(c, d)))
    """, passes=(logical_expressions,))


def test_golden_membership_in_a_try_body_stays():
    assert_golden("""
        def f(c, xs):
            try:
                found = c in xs
            except TypeError:
                found = c not in xs
            return found
    """, """
        def f(c, xs):
            try:
                found = c in xs
            except TypeError:
                found = ag__.not_(ag__.in_(c, xs))
            return found
    """, passes=(logical_expressions,))


def test_golden_truth_tests():
    assert_golden("""
        def f(x, y):
            while x < 3 and y:
                x = x + 1
            assert x or y
            z = x and y
            return not (x and y), 1 if x or y else 2, z
    """, """
        def f(x, y):
            def loop_test(x):
                return ag__.and_(x < 3, lambda: y, test=True)
            def loop_body(x):
                x = x + 1
                return (x,)
            (x,) = ag__.while_stmt(loop_test, loop_body, (x,), names=('x',), bound=ag__.Bound(0, ag__.operator.lt, lambda: 3, 1))
            ag__.assert_(ag__.or_(x, lambda: y, test=True))
            z = ag__.and_(x, lambda: y)
            return (ag__.not_(ag__.and_(x, lambda: y, test=True)), ag__.if_exp(ag__.or_(x, lambda: y, test=True), lambda: 1, lambda: 2), z)
    """)


# ---------------------------------------------------------------------------
# Python values: exactly what Python returns


def or_(a, b):
    return a or b


def and_(a, b):
    return a and b


def not_(a):
    return not a


def mixed(a, b, c):
    return a and b or not c


def chain(a, b, c):
    return a < b <= c


SENTINEL = ["sentinel"]


@pytest.mark.parametrize("fn,args", [
    (or_, ([], "x")),
    (or_, (0, "a")),
    (or_, ("a", 0)),
    (or_, (None, 0)),
    (or_, (0.0, [])),
    (and_, (0, 1)),
    (and_, ("s", [])),
    (and_, (1, "t")),
    (and_, ("", 1)),
    (not_, ([],)),
    (not_, ("x",)),
    (not_, (0,)),
    (mixed, (1, 0, [])),
    (mixed, (1, "b", [])),
    (mixed, (0, "b", [1])),
    (chain, (1, 2, 2)),
    (chain, (1, 2, 1)),
    (chain, (3, 2, 5)),
    (chain, ("a", "b", "c")),
])
def test_python_values_like_python(fn, args):
    got = autograph.convert(fn)(*args)
    want = fn(*args)
    assert type(got) is type(want)
    assert got == want


def test_returns_the_operand_object_itself():
    assert autograph.convert(or_)([], SENTINEL) is SENTINEL
    empty = []
    assert autograph.convert(and_)(SENTINEL, empty) is empty
    assert autograph.convert(and_)(empty, SENTINEL) is empty
    assert autograph.convert(or_)(SENTINEL, empty) is SENTINEL


def test_numpy_values_like_python():
    for a in (F32(2.0), F32(-1.0), F32(0.0)):
        assert autograph.convert(mixed)(a > 0, a, a < 0) == mixed(a > 0, a, a < 0)
        assert autograph.convert(chain)(F32(0.0), a, F32(1.0)) == chain(F32(0.0), a, F32(1.0))


CALLS = []


def record(v):
    CALLS.append(v)
    return v


def short_and(a):
    return a and record("right")


def short_or(a):
    return a or record("right")


def chain_with_call(x):
    return 0 < record(x) < 1


def chain_short_circuit(x):
    return 5 < record(x) < record(x + 100)


@pytest.mark.parametrize("fn,arg", [
    (short_and, 0), (short_and, 1), (short_or, 0), (short_or, 1),
    (chain_with_call, 0.5), (chain_with_call, 2.0), (chain_with_call, -1.0),
    (chain_short_circuit, 1), (chain_short_circuit, 6),
])
def test_side_effects_like_python(fn, arg):
    CALLS.clear()
    want = fn(arg)
    want_calls = list(CALLS)
    CALLS.clear()
    got = autograph.convert(fn)(arg)
    assert got == want and type(got) is type(want)
    assert CALLS == want_calls


def test_chain_middle_call_evaluated_once():
    CALLS.clear()
    autograph.convert(chain_with_call)(0.5)
    assert CALLS == [0.5]


# ---------------------------------------------------------------------------
# Traced values


def traced_logic(x, y):
    a = x > 0 and y < 1
    b = x > 0 or y > 2
    c = not x > 0
    d = 0 < x < y
    return a, b, c, d


def traced_in_if(x, y):
    if x > 0 and (y < 1 or not y < 3):
        z = x + y
    else:
        z = x - y
    return z


def traced_chain_with_call(x):
    return -1 < jnp.sin(x) * 2 < 1


def python_flag_and_traced(x, flag):
    if flag and x > 0:
        y = x * 2.0
    else:
        y = x
    return y


XY = [(F32(x), F32(y)) for x, y in [(1.0, 0.5), (1.0, 2.5), (1.0, 5.0), (-1.0, 0.5), (-1.0, 5.0)]]


def test_traced_logic_matches_python():
    check_equivalent(traced_logic, *XY)
    out = jax.jit(autograph.convert(traced_logic))(jnp.float32(1.0), jnp.float32(0.5))
    assert all(o.dtype == jnp.bool_ for o in out)


def test_traced_logic_in_if_condition():
    check_equivalent(traced_in_if, *XY)


def test_traced_chain_with_call():
    check_equivalent(traced_chain_with_call, (F32(0.1),), (F32(1.2),), (F32(-1.2),))


def test_python_flag_with_traced_operand():
    check_equivalent(python_flag_and_traced, (F32(2.0), True), (F32(-2.0), True),
                     (F32(2.0), False), static_argnums=(1,))


def vector_and(x):
    return x > 0 and x < 2


def vector_not(x):
    return not x > 0


@pytest.mark.parametrize("fn,op", [(vector_and, "`and`"), (vector_not, "`not`")])
def test_vector_operand_is_a_condition_error(fn, op):
    with pytest.raises(errors.ConditionError, match=_where(fn, "return")) as e:
        jax.jit(autograph.convert(fn))(jnp.ones(3))
    msg = str(e.value)
    assert op in msg and ".any()" in msg and "(3,)" in msg


def bool_logic(x, y):
    return (x > 0 and y < 1), (x > 0 or y > 2), (x > 0 and y < 1 and not x > y)


def test_boolean_scalars_combine_with_one_and_or():
    from tests.helpers import primitives

    check_equivalent(bool_logic, *XY)
    jaxpr = jax.make_jaxpr(autograph.convert(bool_logic))(jnp.float32(1.0), jnp.float32(0.5))
    prims = primitives(jaxpr)
    assert {"and", "or"} <= prims and "select_n" not in prims
    batched = jax.vmap(autograph.convert(bool_logic))(
        jnp.array([1.0, 1.0, -1.0, -1.0]), jnp.array([0.5, 2.5, 0.5, 5.0]))
    want = [bool_logic(np.float32(x), np.float32(y))
            for x, y in [(1.0, 0.5), (1.0, 2.5), (-1.0, 0.5), (-1.0, 5.0)]]
    for i, column in enumerate(batched):
        np.testing.assert_array_equal(column, [w[i] for w in want])


def smoothed_until_flat(x, n):
    # `prev` is read behind `i == 0 or ...` before the loop first assigns it
    i = 0
    s = 0.0
    while i < n:
        if i == 0 or prev < 1.5:
            s = s + x[i]
        else:
            s = s - x[i]
        prev = x[i]
        i += 1
    return s


def test_right_operand_of_a_variable_a_loop_assigns_later():
    x = np.array([0.5, 1.0, 2.0, 3.0, 0.1], np.float32)
    check_equivalent(smoothed_until_flat, *[(x, np.int32(n)) for n in (0, 1, 3, 5)])
