"""The `if` converter: golden output, behaviour against plain Python, errors."""

import dataclasses
import inspect
import math
import re
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import errors
from autograph.converters import if_statements
from tests.helpers import assert_golden, check_equivalent

F32 = np.float32


def _line(fn, snippet):
    """The absolute line number of the first line of ``fn`` containing ``snippet``."""
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if snippet in text:
            return start + i
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


def _where(fn, snippet):
    """A regex for the `file:line:` prefix errors must carry."""
    return rf"test_if_statements\.py:{_line(fn, snippet)}:"


# ---------------------------------------------------------------------------
# Golden output


def test_golden_docstring_example():
    assert_golden("""
        def f(x):
            if x > 0:
                y = x * 2.0
            else:
                y = -x
            return y
    """, """
        def f(x):
            def if_true():
                y = x * 2.0
                return (y,)
            def if_false():
                y = -x
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, if_false, (), names=('y',))
            return y
    """)


def test_golden_if_pass_alone():
    assert_golden("""
        def f(x):
            if x > 0:
                y = x * 2.0
            else:
                y = -x
            return y
    """, """
        def f(x):
            def if_true():
                y = x * 2.0
                return (y,)
            def if_false():
                y = -x
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, if_false, (), names=('y',))
            return y
    """, passes=(if_statements,))


def test_golden_if_without_else_passes_state_through():
    # `y` is modified and live: the missing `else` (None) hands it back unchanged.
    assert_golden("""
        def f(x):
            y = x
            if x > 0:
                y = x * 2.0
            return y
    """, """
        def f(x):
            y = x
            def if_true(y):
                y = x * 2.0
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, None, (y,), names=('y',))
            return y
    """)


def test_golden_elif_chain_nests_in_false_branch():
    assert_golden("""
        def f(x):
            if x > 1:
                y = 1.0
            elif x > 0:
                y = 2.0
            else:
                y = 3.0
            return y
    """, """
        def f(x):
            def if_true():
                y = 1.0
                return (y,)
            def if_false():
                def if_true_1():
                    y = 2.0
                    return (y,)
                def if_false_1():
                    y = 3.0
                    return (y,)
                (y,) = ag__.if_stmt(x > 0, if_true_1, if_false_1, (), names=('y',))
                return (y,)
            (y,) = ag__.if_stmt(x > 1, if_true, if_false, (), names=('y',))
            return y
    """)


def test_golden_nested_ifs():
    assert_golden("""
        def f(x, z):
            if x > 0:
                if z > 0:
                    y = x
                else:
                    y = z
            else:
                y = -x
            return y
    """, """
        def f(x, z):
            def if_true():
                def if_true_1():
                    y = x
                    return (y,)
                def if_false_1():
                    y = z
                    return (y,)
                (y,) = ag__.if_stmt(z > 0, if_true_1, if_false_1, (), names=('y',))
                return (y,)
            def if_false():
                y = -x
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, if_false, (), names=('y',))
            return y
    """)


def test_golden_branches_assign_different_subsets():
    # Each branch must hand back the variable it does not touch: both are params.
    assert_golden("""
        def f(x):
            a = 0.0
            b = 0.0
            if x > 0:
                a = x
            else:
                b = x
            return a + b
    """, """
        def f(x):
            a = 0.0
            b = 0.0
            def if_true(a, b):
                a = x
                return (a, b)
            def if_false(a, b):
                b = x
                return (a, b)
            (a, b) = ag__.if_stmt(x > 0, if_true, if_false, (a, b), names=('a', 'b'))
            return a + b
    """)


def test_golden_dead_variables_are_not_outputs():
    # `t` is assigned on both branches but never read after the `if`.
    assert_golden("""
        def f(x):
            if x > 0:
                t = x + 1
                y = t * 2
            else:
                t = x - 1
                y = t
            return y
    """, """
        def f(x):
            def if_true():
                t = x + 1
                y = t * 2
                return (y,)
            def if_false():
                t = x - 1
                y = t
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, if_false, (), names=('y',))
            return y
    """)


def test_golden_no_live_outputs():
    assert_golden("""
        def f(x):
            if x > 0:
                t = x
            return x
    """, """
        def f(x):
            def if_true():
                t = x
                return ()
            ag__.if_stmt(x > 0, if_true, None, (), names=())
            return x
    """)


def test_golden_read_before_write_is_a_param():
    # The false branch reads `y` before assigning it, so both branches take it.
    assert_golden("""
        def f(x, y):
            if x > 0:
                y = 2 * x
            else:
                z = y
                y = z + 1
            return y
    """, """
        def f(x, y):
            def if_true(y):
                y = 2 * x
                return (y,)
            def if_false(y):
                z = y
                y = z + 1
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, if_false, (y,), names=('y',))
            return y
    """)


def test_golden_augmented_assignment_reads_its_target():
    # `y += x` reads `y`: it must be a parameter of both branches.
    assert_golden("""
        def f(x):
            y = 0
            if x > 0:
                y += x
            else:
                y -= x
            return y
    """, """
        def f(x):
            y = 0
            def if_true(y):
                y += x
                return (y,)
            def if_false(y):
                y -= x
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, if_false, (y,), names=('y',))
            return y
    """)


def test_golden_unbound_name_is_passed_as_undefined():
    assert_golden("""
        def f(x):
            if x > 0:
                y = x
            return y
    """, """
        def f(x):
            def if_true(y):
                y = x
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, None, (ag__.Undefined('y'),), names=('y',))
            return ag__.ld(y)
    """)


def test_golden_maybe_bound_name_is_passed_as_itself():
    # After the first `if`, `y` may be bound: the second passes `y`, not Undefined.
    assert_golden("""
        def f(x):
            if x > 0:
                y = 1
            if x > 1:
                y = y + 1
            return y
    """, """
        def f(x):
            def if_true(y):
                y = 1
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, None, (ag__.Undefined('y'),), names=('y',))
            def if_true_1(y):
                y = ag__.ld(y) + 1
                return (y,)
            (y,) = ag__.if_stmt(x > 1, if_true_1, None, (y,), names=('y',))
            return ag__.ld(y)
    """)


def test_golden_untouched_inputs_are_closed_over():
    # `w` is only read: it is neither a parameter nor an output.
    assert_golden("""
        def f(x, w):
            y = w
            if x > 0:
                y = y * w
            return y, w
    """, """
        def f(x, w):
            y = w
            def if_true(y):
                y = y * w
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, None, (y,), names=('y',))
            return (y, w)
    """)


def test_golden_outputs_come_first_in_the_inputs():
    # `t` is read but not an output: the runtime finds the output `y` at position 0, so
    # `y` is passed too, unread, before `t`
    assert_golden("""
        def f(x):
            t = x
            if x > 0:
                t = t + 1.0
                y = t
            else:
                y = -x
            return y
    """, """
        def f(x):
            t = x
            def if_true(y, t):
                t = t + 1.0
                y = t
                return (y,)
            def if_false(y, t):
                y = -x
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, if_false, (ag__.Undefined('y'), t), names=('y',))
            return y
    """)


def test_golden_outputs_before_one_the_branches_read_are_passed():
    # `b` is read, `a` is not: `b`'s value is passed second, where `b` is an output
    assert_golden("""
        def f(x):
            b = x
            if x > 0:
                a = x
                b = b + 1.0
            else:
                a = -x
            return a + b
    """, """
        def f(x):
            b = x
            def if_true(a, b):
                a = x
                b = b + 1.0
                return (a, b)
            def if_false(a, b):
                a = -x
                return (a, b)
            (a, b) = ag__.if_stmt(x > 0, if_true, if_false, (ag__.Undefined('a'), b), names=('a', 'b'))
            return a + b
    """)


# ---------------------------------------------------------------------------
# Behaviour: plain Python, convert(f) and jit(convert(f)) agree


def doc_example(x):
    if x > 0:
        y = x * 2.0
    else:
        y = -x
    return y


def no_else(x):
    y = x + 1.0
    if x > 0:
        y = x * 3.0
    return y


def elif_chain(x):
    if x > 1:
        y = x * 10.0
    elif x > 0:
        y = x * 20.0
    elif x > -1:
        y = x * 30.0
    else:
        y = x * 40.0
    return y


def nested(x, z):
    if x > 0:
        if z > 0:
            y = x + z
        else:
            y = x - z
    else:
        if z > 0:
            y = z * 2.0
        else:
            y = -x
    return y


def subsets(x):
    a = x
    b = x * 2.0
    if x > 0:
        a = x + 1.0
    else:
        b = x - 1.0
    return a, b


def read_before_write(x, y):
    if x > 0:
        y = y * x
    else:
        t = y + 1.0
        y = t * t
    return y


def augmented(x):
    y = 0.0
    if x > 0:
        y += x
    else:
        y -= x
    return y


def unused_one_branch(x):
    if x > 0:
        t = x * 2.0
        x = t + 1.0
    return x


def array_condition(x):
    if x.sum() > 0:
        y = x * 2.0
    else:
        y = x - 1.0
    return y


def test_docstring_example_both_branches():
    check_equivalent(doc_example, (F32(2.0),), (F32(-3.0),))


def test_no_else():
    check_equivalent(no_else, (F32(2.0),), (F32(-3.0),))


def test_elif_chain_all_branches():
    check_equivalent(elif_chain, (F32(2.0),), (F32(0.5),), (F32(-0.5),), (F32(-2.0),))


def test_nested_all_paths():
    check_equivalent(nested, (F32(1.0), F32(2.0)), (F32(1.0), F32(-2.0)),
                     (F32(-1.0), F32(2.0)), (F32(-1.0), F32(-2.0)))


def test_branches_assign_different_subsets():
    check_equivalent(subsets, (F32(2.0),), (F32(-3.0),))


def test_read_before_write():
    check_equivalent(read_before_write, (F32(2.0), F32(3.0)), (F32(-2.0), F32(3.0)))


def test_augmented_assignment_in_both_branches():
    check_equivalent(augmented, (F32(2.0),), (F32(-3.0),))


def test_variable_set_on_one_branch_but_unused_later_is_fine():
    check_equivalent(unused_one_branch, (F32(2.0),), (F32(-3.0),))


def returned_after_a_loop_that_may_not_run(x, n):
    i = 0
    while i < n:
        k = x
        i += 1
    if n > 1:
        return x
    for e in range(2):
        k = e
    return k


def returned_where_a_loop_variable_is_read(x, n):
    for j in range(n):
        k = x * j
    if x > 0:
        r = k
    else:
        r = -x
    return r


def test_an_output_takes_no_flag_from_an_input_that_is_not_it():
    # `k` may be unassigned after its loop: the `if`'s other output, the return value,
    # is assigned on every path and comes out as a plain value
    check_equivalent(returned_after_a_loop_that_may_not_run, (F32(1.5), np.int32(3)),
                     (F32(1.5), np.int32(0)), (F32(-1.5), np.int32(1)))
    check_equivalent(returned_where_a_loop_variable_is_read, (F32(1.5), np.int32(3)),
                     (F32(-1.5), np.int32(0)))


def test_reduced_array_condition():
    check_equivalent(array_condition, (np.arange(3, dtype=F32),), (-np.arange(3, dtype=F32),))


def python_flag(x, flag):
    if flag:
        y = x + 1.0
        mode = "plus"
    else:
        y = x - 1.0
        mode = "minus"
    return y, mode


def python_flag_numeric(x, flag):
    y, mode = python_flag(x, flag)
    return y * len(mode)


def test_python_condition_under_jit_keeps_python_values():
    # A static Python condition under jit: only one branch runs, so the
    # branches may disagree on Python values (here, different strings).
    for flag in (True, False):
        assert autograph.convert(python_flag)(F32(2.0), flag) == python_flag(F32(2.0), flag)
    check_equivalent(python_flag_numeric, (F32(2.0), True), (F32(2.0), False),
                     static_argnums=(1,))


def test_concrete_array_condition_takes_python_path():
    # Outside jit a concrete jax array decides in Python: only one branch runs,
    # so branches may even disagree on Python values.
    for v in (2.0, -2.0):
        got = autograph.convert(python_flag)(jnp.float32(v), jnp.float32(v) > 0)
        assert got[1] == python_flag(F32(v), F32(v) > 0)[1]


# Pytrees as branch outputs


class Pair(NamedTuple):
    a: object
    b: object


@dataclasses.dataclass
class State:
    pos: object
    vel: object


jax.tree_util.register_dataclass(State, data_fields=["pos", "vel"], meta_fields=[])


def pytree_tuple_list_dict(x):
    if x > 0:
        t = (x, x * 2.0)
        l = [x + 1.0, {"k": x * 3.0}]
        d = {"a": x, "b": (x, -x)}
    else:
        t = (-x, x)
        l = [x - 1.0, {"k": x}]
        d = {"a": -x, "b": (x * 5.0, x)}
    return t, l, d


def pytree_namedtuple(x):
    if x > 0:
        p = Pair(x, x * 2.0)
    else:
        p = Pair(-x, x + 1.0)
    return p


def pytree_dataclass(x, v):
    s = State(x, v)
    if x > 0:
        s = State(s.pos + s.vel.sum(), s.vel * 0.5)
    else:
        s = State(-s.pos, -s.vel)
    return s


def test_pytree_tuples_lists_dicts():
    check_equivalent(pytree_tuple_list_dict, (F32(2.0),), (F32(-3.0),))


def test_pytree_namedtuple():
    check_equivalent(pytree_namedtuple, (F32(2.0),), (F32(-3.0),))
    out = jax.jit(autograph.convert(pytree_namedtuple))(jnp.float32(2.0))
    assert isinstance(out, Pair)


def test_pytree_registered_dataclass():
    check_equivalent(pytree_dataclass, (F32(2.0), np.ones(3, F32)), (F32(-3.0), np.ones(3, F32)))
    out = jax.jit(autograph.convert(pytree_dataclass))(jnp.float32(2.0), jnp.ones(3))
    assert isinstance(out, State)


def same_static_value_on_both_branches(x):
    if x > 0:
        y = x
        tag = "same"
        nothing = None
    else:
        y = -x
        tag = "same"
        nothing = None
    return y, len(tag), nothing


def test_equal_python_values_on_both_branches_are_fine():
    check_equivalent(same_static_value_on_both_branches, (F32(2.0),), (F32(-3.0),))


def signed_zero_on_branches(x):
    if x > 0:
        s = 0.0
    else:
        s = -0.0
    return jnp.copysign(1.0, s)


def nan_on_both_branches(x):
    if x > 0:
        y, s = x, float("nan")
    else:
        y, s = -x, float("nan")
    return y, math.isnan(s)  # a Python NaN on both branches stays a Python float


def test_python_floats_on_both_branches_compare_by_sign_and_nan():
    # 0.0 == -0.0 yet copysign tells them apart; NaN != NaN yet it is one constant
    check_equivalent(signed_zero_on_branches, (F32(2.0),), (F32(-3.0),))
    check_equivalent(nan_on_both_branches, (F32(2.0),), (F32(-3.0),))


# Dtype promotion between branches


def int_vs_float(x):
    if x > 0:
        y = 0
    else:
        y = x
    return y


def int_array_vs_float_literal(i):
    if i > 0:
        y = i
    else:
        y = 1.5
    return y


def int32_vs_float32(i, z):
    if i > 0:
        y = i
    else:
        y = z
    return y


def test_weak_int_and_float32_promote_to_float32():
    check_equivalent(int_vs_float, (F32(2.0),), (F32(-3.0),))
    out = jax.jit(autograph.convert(int_vs_float))(jnp.float32(2.0))
    assert out.dtype == jnp.result_type(jnp.float32, 0) == jnp.float32


def test_int32_and_python_float_promote():
    jf = jax.jit(autograph.convert(int_array_vs_float_literal))
    for v in (3, -3):
        out = jf(jnp.int32(v))
        assert out.dtype == jnp.result_type(jnp.int32, 1.5)
        np.testing.assert_allclose(out, int_array_vs_float_literal(v))


def test_int32_and_float32_promote():
    jf = jax.jit(autograph.convert(int32_vs_float32))
    for v in (3, -3):
        out = jf(jnp.int32(v), jnp.float32(0.25))
        assert out.dtype == jnp.result_type(jnp.int32, jnp.float32)
        np.testing.assert_allclose(out, int32_vs_float32(v, 0.25))


# Transformations


def smooth_piecewise(x):
    if x > 0:
        y = x * x + 1.0
    else:
        y = jnp.sin(x) * 3.0
    return y


def test_grad_matches_eager_grad_on_both_branches():
    g_conv = jax.grad(autograph.convert(smooth_piecewise))
    g_staged = jax.jit(jax.grad(autograph.convert(smooth_piecewise)))
    for v in (1.5, -0.7):
        want = jax.grad(smooth_piecewise)(v)
        np.testing.assert_allclose(g_conv(v), want, rtol=1e-6)
        np.testing.assert_allclose(g_staged(jnp.float32(v)), want, rtol=1e-6)


def test_vmap_matches_per_example_results():
    xs = np.array([1.5, -0.7, 0.0, 3.0, -2.0], dtype=F32)
    want = np.array([smooth_piecewise(x) for x in xs])
    got = jax.vmap(autograph.convert(smooth_piecewise))(jnp.asarray(xs))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    want_sub = np.array([np.asarray(subsets(x)) for x in xs])
    got_sub = jax.vmap(autograph.convert(subsets))(jnp.asarray(xs))
    np.testing.assert_allclose(np.stack(got_sub, axis=1), want_sub, rtol=1e-6)


# ---------------------------------------------------------------------------
# Errors


def used_after_one_branch(x):
    if x > 0:
        y = x * 2.0
    return y


def shape_mismatch(x):
    if x.sum() > 0:
        y = x
    else:
        y = x[:1]
    return y


def string_mismatch(x):
    if x > 0:
        mode = "up"
    else:
        mode = "down"
    return x, mode


def none_vs_array(x):
    if x > 0:
        extra = None
    else:
        extra = x
    return x, extra


def vector_condition(x):
    if x > 0:
        y = x
    else:
        y = -x
    return y


def nested_one_branch(x, z):
    y = x
    if x > 0:
        if z > 0:
            w = z
        y = w
    return y


def _message_has_fields(e, variable):
    msg = str(e)
    assert "observed:" in msg
    assert re.search(rf"variable: .*{variable}", msg)
    assert "fix:" in msg


def test_one_branch_assignment_used_later_traced():
    with pytest.raises(errors.BranchError, match=_where(used_after_one_branch, "if x > 0")) as e:
        jax.jit(autograph.convert(used_after_one_branch))(jnp.float32(1.0))
    assert "`y`" in str(e.value) and "initialize" in str(e.value)
    _message_has_fields(e.value, "y")
    assert isinstance(e.value, ValueError)


def test_one_branch_assignment_on_python_path_like_python():
    # On the taken branch it is fine; on the other Python raises UnboundLocalError.
    assert autograph.convert(used_after_one_branch)(F32(2.0)) == used_after_one_branch(F32(2.0))
    with pytest.raises(UnboundLocalError):
        used_after_one_branch(F32(-2.0))
    with pytest.raises(errors.UndefinedVariableError, match=r"test_if_statements\.py:\d+:") as e:
        autograph.convert(used_after_one_branch)(F32(-2.0))
    assert isinstance(e.value, UnboundLocalError)
    assert "`y`" in str(e.value)
    line = int(re.search(r"test_if_statements\.py:(\d+):", str(e.value)).group(1))
    assert line in (_line(used_after_one_branch, "if x > 0"),
                    _line(used_after_one_branch, "return y"))


def test_nested_one_branch_error_names_inner_if():
    with pytest.raises(errors.BranchError, match=_where(nested_one_branch, "if z > 0")) as e:
        jax.jit(autograph.convert(nested_one_branch))(jnp.float32(1.0), jnp.float32(1.0))
    assert "`w`" in str(e.value) and "initialize" in str(e.value)


def test_shape_mismatch():
    with pytest.raises(errors.BranchError, match=_where(shape_mismatch, "if x.sum() > 0")) as e:
        jax.jit(autograph.convert(shape_mismatch))(jnp.ones(3))
    msg = str(e.value)
    assert "`y`" in msg and "(3,)" in msg and "(1,)" in msg
    assert "shape" in msg
    _message_has_fields(e.value, "y")
    # Plain Python (and convert on NumPy values) has no such restriction.
    np.testing.assert_array_equal(autograph.convert(shape_mismatch)(-np.ones(3)),
                                  shape_mismatch(-np.ones(3)))


def test_python_string_differs_between_branches():
    with pytest.raises(errors.BranchError, match=_where(string_mismatch, "if x > 0")) as e:
        jax.jit(autograph.convert(string_mismatch))(jnp.float32(1.0))
    msg = str(e.value)
    assert "`mode`" in msg and "'up'" in msg and "'down'" in msg
    _message_has_fields(e.value, "mode")


def test_none_on_one_branch_only():
    with pytest.raises(errors.BranchError, match=_where(none_vs_array, "if x > 0")) as e:
        jax.jit(autograph.convert(none_vs_array))(jnp.float32(1.0))
    assert "`extra`" in str(e.value) and "None" in str(e.value)
    _message_has_fields(e.value, "extra")


def test_vector_condition():
    with pytest.raises(errors.ConditionError, match=_where(vector_condition, "if x > 0")) as e:
        jax.jit(autograph.convert(vector_condition))(jnp.ones(3))
    msg = str(e.value)
    assert ".any()" in msg and "(3,)" in msg
    assert isinstance(e.value, TypeError)


def test_a_user_variable_called_retval_is_named_as_itself():
    # roles come from the converter (`returns=`), not from the variable's name
    import jax
    import pytest

    import autograph

    def f(x):
        if x > 0:
            retval = 1.0
        return retval

    with pytest.raises(autograph.BranchError) as info:
        jax.jit(autograph.convert(f))(1.0)
    assert "variable: retval" in str(info.value) and "return value" not in str(info.value)

    def g(x):
        if x > 0:
            return x

    with pytest.raises(autograph.BranchError, match="variable: the return value"):
        jax.jit(autograph.convert(g))(1.0)


def first_above(xs, t):
    found = False
    where = -1
    for i in range(20):
        if not found and xs[i] > t:
            found = True
            where = i
    return where, found


def scaled(x, t):
    if x > t:
        y = x * 2.0
    else:
        y = x
    return y


def test_branches_that_compute_nothing_are_a_select():
    from tests.helpers import primitives

    xs = np.linspace(-1.0, 1.0, 20).astype(np.float32)
    check_equivalent(first_above, *[(xs, np.float32(t)) for t in (-2.0, 0.0, 0.5, 2.0)])
    prims = primitives(jax.make_jaxpr(autograph.convert(first_above))(xs, 0.0))
    assert "cond" not in prims and "select_n" in prims
    # a branch that computes stays a `cond` (only the taken side runs)
    assert "cond" in primitives(jax.make_jaxpr(autograph.convert(scaled))(1.0, 0.0))
    got = jax.vmap(autograph.convert(first_above), in_axes=(None, 0))(
        jnp.asarray(xs), jnp.array([-2.0, 0.5, 2.0]))
    want = [first_above(xs, np.float32(t)) for t in (-2.0, 0.5, 2.0)]
    np.testing.assert_array_equal(got[0], [w[0] for w in want])
    np.testing.assert_array_equal(got[1], [w[1] for w in want])


def test_golden_a_list_only_appended_to_is_no_branch_output():
    assert_golden("""
        def f(x):
            hist = []
            if x > 0:
                hist.append(x)
                x = x * 2
            return x
    """, """
        def f(x):
            hist = []
            def if_true(x):
                hist.append(x)
                x = x * 2
                return (x,)
            (x,) = ag__.if_stmt(x > 0, if_true, None, (x,), names=('x',), dead=('hist',))
            return x
    """, passes=(if_statements,))
