"""The `walrus_operands` converter: golden output, and where `:=` binds in `and`/`or`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph.converters import walrus_operands
from tests.helpers import _file_line, assert_golden, check_equivalent

F32 = np.float32


@pytest.mark.parametrize("src, expected", [
    pytest.param("""
        def f(x):
            if x > 0 and (y := g(x)) > 1:
                return y
            return x
    """, """
        def f(x):
            and_value = x > 0
            if and_value:
                and_value = (y := g(x)) > 1
            if and_value:
                return y
            return x
    """, id="docstring example"),
    pytest.param("""
        def f(x, d):
            v = d.get('k') or (w := x * 3)
            return v
    """, """
        def f(x, d):
            or_value = d.get('k')
            if not or_value:
                or_value = (w := (x * 3))
            v = or_value
            return v
    """, id="or: the later operand runs where the first is false"),
    pytest.param("""
        def f(x):
            return not (x < 0 or x > 9 and (y := x + 1) > 2)
    """, """
        def f(x):
            or_value = x < 0
            if not or_value:
                and_value = x > 9
                if and_value:
                    and_value = (y := (x + 1)) > 2
                or_value = and_value
            return not or_value
    """, id="an and inside an or, under not"),
    pytest.param("""
        def f(x):
            ok = x > 0 and x < 9 and (y := x) > 1
            return ok
    """, """
        def f(x):
            and_value = x > 0
            if and_value:
                and_value = x < 9
                if and_value:
                    and_value = (y := x) > 1
            ok = and_value
            return ok
    """, id="three operands"),
])
def test_golden(src, expected):
    assert_golden(src, expected, passes=(walrus_operands,))


@pytest.mark.parametrize("src", [
    pytest.param("""
        def f(x):
            if (n := len(x)) > 2 and x[0] > 0:
                return n
            return x and x[0]
    """, id="a walrus in the first operand; an and without one"),
])
def test_golden_noop(src):
    assert_golden(src, src, passes=(walrus_operands,))


# ---------------------------------------------------------------------------
# Behaviour


def scale(x):
    return x * 2.0


def test_golden_full_pipeline_binds_in_a_staged_branch():
    out = autograph.to_code(bound_in_test)
    assert "(y := " in out and "ag__.if_stmt(and_value" in out and "lambda" not in out


def bound_in_test(x):
    y = 0.0
    if x > 0 and (y := scale(x)) > 1:
        return y
    return x - y


def bound_in_value(x, limit):
    w = -1.0
    ok = x < limit or (w := x - limit) > 1
    return ok, w


def bound_in_chain(x):
    y = 0.5
    ok = x > 0 and x < 10 and (y := x + 1.0) > 2.0
    return ok, y


def used_only_where_bound(x):
    if x > 0 and (y := scale(x)) > 1:
        return y
    return x


def test_python_values_bind_as_python():
    for x in (2.0, 0.2, -1.0):
        assert autograph.convert(used_only_where_bound)(x) == used_only_where_bound(x)
    for args in ((2.0, 1.0), (0.5, 1.0), (5.0, 1.0)):
        assert autograph.convert(bound_in_value)(*args) == bound_in_value(*args)


def test_traced_left_operand_binds_in_a_staged_branch():
    check_equivalent(bound_in_test, (F32(2.0),), (F32(0.2),), (F32(-1.0),))
    check_equivalent(bound_in_value, (F32(0.5), F32(1.0)), (F32(5.0), F32(1.0)),
                     (F32(1.5), F32(1.0)))
    check_equivalent(bound_in_chain, (F32(2.0),), (F32(0.5),), (F32(-1.0),), (F32(20.0),))


def test_a_name_bound_on_one_path_only_is_the_if_rule():
    # as for `if x > 0: y = ...`: under a traced condition, a name bound only where
    # the operand runs, read afterwards, is a BranchError naming it and the line
    with pytest.raises(autograph.BranchError, match="`y`") as e:
        jax.jit(autograph.convert(used_only_where_bound))(jnp.float32(2.0))
    assert _file_line(used_only_where_bound, "(y := scale(x))") in str(e.value)


def test_elsewhere_it_runs_unconverted_with_a_warning():
    def in_a_call(x):
        return abs(x > 0 and (y := x))

    with pytest.warns(UserWarning, match=r"right operand of `and`/`or`.*runs unconverted|"
                                         r"runs unconverted.*right operand of `and`/`or`"):
        assert autograph.convert(in_a_call) is in_a_call


def test_golden_walrus_in_a_while_test_leads_the_body():
    assert_golden("""
        def f(x):
            while (y := x * 2) < 10:
                x = y
            return x, y
    """, """
        def f(x):
            while True:
                if not (y := (x * 2)) < 10:
                    break
                x = y
            return (x, y)
    """, passes=(walrus_operands,))


def test_golden_walrus_in_a_conditional_branch_is_an_if_statement():
    assert_golden("""
        def f(x):
            z = (y := x + 1) if x > 0 else (y := x - 1)
            return z + y
    """, """
        def f(x):
            if x > 0:
                if_value = (y := (x + 1))
            else:
                if_value = (y := (x - 1))
            z = if_value
            return z + y
    """, passes=(walrus_operands,))


def test_golden_a_while_test_with_walrus_keeps_its_break_statement():
    # the break pass folds a leading `if ...: break` into the loop test, but not one
    # whose test binds a name the body reads
    out = autograph.to_code(_halvings)
    assert "ag__.if_stmt(ag__.not_((y := (x / 2)) > 1)" in out


def _halvings(x):
    n = 0
    while (y := x / 2) > 1:
        x = y
        n += 1
    return n


# ---------------------------------------------------------------------------
# `:=` in the header of an `if` or `for`: bound before the block takes its inputs


def rebinds_the_test_name(x):
    if (y := x * 2) > 1:
        y = y + 1
    return y


def rebinds_the_iterable_name(xs):
    for v in (ys := xs * 2):
        ys = ys + v
    return ys


def returns_the_test_name(x):
    if (y := x) > 0:
        return y
    return y * 2


def binds_in_an_elif(x):
    if x > 3:
        z = 0.0
    elif (y := x * 3) > 1:
        z = y
    else:
        z = -x
    return z


def test_golden_a_name_a_block_header_binds_goes_in_as_itself():
    # the header runs before the block takes its inputs: `(y,)`, not `ag__.Undefined('y')`
    assert ("ag__.if_stmt((y := (x * 2)) > 1, if_true, None, (y,), names=('y',))"
            in autograph.to_code(rebinds_the_test_name))
    assert ("ag__.for_stmt((ys := (xs * 2)), loop_body, (ys,), names=('ys',))"
            in autograph.to_code(rebinds_the_iterable_name))
    assert "ag__.ld(" not in autograph.to_code(rebinds_the_test_name)


def test_a_name_an_if_test_binds_is_bound_in_its_branches():
    # in Python (values as given, no tracing) and staged alike
    check_equivalent(rebinds_the_test_name, (F32(2.0),), (F32(0.2),))
    check_equivalent(returns_the_test_name, (F32(-2.0),), (F32(3.0),))
    check_equivalent(binds_in_an_elif, (F32(4.0),), (F32(1.0),), (F32(0.1),))
    assert autograph.convert(rebinds_the_test_name)(2.0) == 5.0  # plain Python floats


def test_a_name_a_for_iterable_binds_is_bound_in_the_body():
    check_equivalent(rebinds_the_iterable_name, (np.arange(3.0, dtype=F32),))


def first_large(xs):
    if any((q := v) > 2 for v in xs):
        q = q + 1
    else:
        q = 0.0
    return q


def test_a_binding_generator_that_stops_at_a_traced_item_is_refused():
    # Python stops at the first item over 2 (q = 3.0); drawing every item would leave
    # the last one in `q`
    xs = np.array([1.0, 3.0, 0.5], F32)
    assert first_large(xs) == 4.0
    assert autograph.convert(first_large)(xs) == 4.0  # a NumPy array: Python's own
    with pytest.raises(autograph.ConditionError, match="cannot bind a name with `:=`") as e:
        jax.jit(autograph.convert(first_large))(jnp.asarray(xs))
    assert "variable: q" in str(e.value)
    assert _file_line(first_large, "if any(") in str(e.value)
