"""The `return` converter: golden output, early returns, missing returns."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import errors
from autograph.converters import return_statements
from tests.helpers import assert_golden, check_equivalent, converted

F32 = np.float32


def _where(fn, snippet):
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if snippet in text:
            return rf"test_return_statements\.py:{start + i}:"
    raise AssertionError(snippet)


# ---------------------------------------------------------------------------
# Golden output


def test_return_after_a_loop_sets_no_dead_flag():
    # after the loop nothing reads `did_return`: the last `return` sets only the value
    out = converted("""
        def g(xs):
            for x in xs:
                if x > 3:
                    return x
            return 0.0
    """)
    assert out.count("did_return = True") == 1, out
    after_loop = out[out.index("def if_true_1"):]
    assert "did_return =" not in after_loop, out


def test_golden_docstring_example_return_pass_alone():
    assert_golden("""
        def f(x):
            if x > 0:
                return x * 2
            y = -x
            return y
    """, """
        def f(x):
            if x > 0:
                retval = x * 2
            else:
                y = -x
                retval = y
            return retval
    """, passes=(return_statements,))


def test_golden_docstring_example_full_pipeline():
    assert_golden("""
        def f(x):
            if x > 0:
                return x * 2
            y = -x
            return y
    """, """
        def f(x):
            def if_true():
                retval = x * 2
                return (retval,)
            def if_false():
                y = -x
                retval = y
                return (retval,)
            (retval,) = ag__.if_stmt(x > 0, if_true, if_false, (), names=('retval',), returns=0)
            return retval
    """)


def test_golden_returns_in_both_branches():
    assert_golden("""
        def f(x):
            if x > 0:
                return x
            else:
                return -x
    """, """
        def f(x):
            if x > 0:
                retval = x
            else:
                retval = -x
            return retval
    """, passes=(return_statements,))


def test_golden_single_exit_is_untouched():
    assert_golden("""
        def f(x):
            y = x + 1
            return y
    """, """
        def f(x):
            y = x + 1
            return y
    """)


def test_golden_falling_off_the_end_starts_with_none():
    assert_golden("""
        def f(x):
            if x > 0:
                return x
    """, """
        def f(x):
            retval = None
            if x > 0:
                retval = x
            return retval
    """, passes=(return_statements,))


def test_golden_a_raise_after_the_loop_is_not_falling_off_the_end():
    # every path returns or raises: `retval` starts unassigned, not `None`
    assert_golden("""
        def f(xs):
            for x in xs:
                if x > 0:
                    return x
            raise ValueError("no positive item")
    """, """
        def f(xs):
            did_return = False
            retval = ag__.UndefinedReturn()
            for x in xs:
                if x > 0:
                    retval = x
                    did_return = True
            if not did_return:
                raise ValueError('no positive item')
            return retval
    """, passes=(return_statements,))


def test_golden_bare_return_is_none():
    assert_golden("""
        def f(x):
            if x > 0:
                return
            return x
    """, """
        def f(x):
            if x > 0:
                retval = None
            else:
                retval = x
            return retval
    """, passes=(return_statements,))


def test_golden_return_at_depth_two_uses_a_flag():
    assert_golden("""
        def f(x, z):
            if x > 0:
                if z > 0:
                    return 1.0
            return 2.0
    """, """
        def f(x, z):
            did_return = False
            retval = ag__.UndefinedReturn()
            if x > 0:
                if z > 0:
                    retval = 1.0
                    did_return = True
            if not did_return:
                retval = 2.0
                did_return = True
            return retval
    """, passes=(return_statements,))


# ---------------------------------------------------------------------------
# Behaviour


def early_return(x):
    if x > 0:
        return x * 2.0
    y = -x
    return y * 3.0


def both_branches(x):
    if x > 0:
        return x + 1.0
    else:
        return x - 1.0


def depth_two(x, z):
    if x > 0:
        if z > 0:
            return x + z
    return x - z


def depth_three(x, z):
    if x > 0:
        if z > 0:
            if x > z:
                return x * z
            w = x + z
        else:
            w = x - z
        return w * 2.0
    return -x


def depth_two_with_fallthrough_variable(x, z):
    if x > 0:
        if z > 0:
            return x + z
        y = x - z
    else:
        y = z
    y = y * 2.0
    return y


def return_in_loop(x):
    for i in range(3):
        if x > i:
            return x * i
    return -x


def returns_pytree(x):
    if x > 0:
        return {"a": x, "b": (x, x * 2.0)}
    return {"a": -x, "b": (x * 3.0, x)}


def returns_int_or_float(x):
    if x > 0:
        return 0
    return x


def test_early_return():
    check_equivalent(early_return, (F32(2.0),), (F32(-3.0),))


def test_returns_in_both_branches():
    check_equivalent(both_branches, (F32(2.0),), (F32(-3.0),))


def test_return_at_depth_two():
    check_equivalent(depth_two, (F32(1.0), F32(2.0)), (F32(1.0), F32(-2.0)),
                     (F32(-1.0), F32(2.0)))


def test_return_at_depth_three():
    check_equivalent(depth_three, (F32(3.0), F32(2.0)), (F32(1.0), F32(2.0)),
                     (F32(1.0), F32(-2.0)), (F32(-1.0), F32(2.0)))


def test_return_at_depth_two_with_variable_set_only_where_it_is_used():
    # `y` is unset only on the path that has already returned; every path
    # returns a value, so this is valid Python that jit should accept.
    check_equivalent(depth_two_with_fallthrough_variable, (F32(1.0), F32(2.0)),
                     (F32(1.0), F32(-2.0)), (F32(-1.0), F32(2.0)))


def test_return_in_loop():
    check_equivalent(return_in_loop, (F32(0.5),), (F32(5.0),), (F32(-1.0),))


def test_return_pytree():
    check_equivalent(returns_pytree, (F32(2.0),), (F32(-3.0),))


def test_returned_dtypes_are_promoted():
    check_equivalent(returns_int_or_float, (F32(2.0),), (F32(-3.0),))
    out = jax.jit(autograph.convert(returns_int_or_float))(jnp.float32(2.0))
    assert out.dtype == jnp.result_type(jnp.float32, 0)


def test_grad_through_early_return():
    g = jax.jit(jax.grad(autograph.convert(early_return)))
    for v in (2.0, -3.0):
        np.testing.assert_allclose(g(jnp.float32(v)), jax.grad(early_return)(v))


# Falling off the end


def falls_off(x):
    if x > 0:
        return x * 2.0


def bare_return(x):
    if x > 0:
        return
    return x


def falls_off_static(x, flag):
    if flag:
        return x * 2.0


@pytest.mark.parametrize("fn", [falls_off, bare_return])
def test_missing_return_on_python_condition_is_like_python(fn):
    cf = autograph.convert(fn)
    for v in (F32(2.0), F32(-3.0)):
        assert cf(v) == fn(v)
    assert cf(F32(-3.0) if fn is falls_off else F32(3.0)) is None


def test_missing_return_on_static_condition_under_jit():
    jf = jax.jit(autograph.convert(falls_off_static), static_argnums=1)
    np.testing.assert_allclose(jf(jnp.float32(2.0), True), falls_off_static(2.0, True))
    assert jf(jnp.float32(2.0), False) is None


@pytest.mark.parametrize("fn", [falls_off, bare_return])
def test_missing_return_on_traced_condition_is_an_error(fn):
    with pytest.raises(errors.BranchError, match=_where(fn, "if x > 0")) as e:
        jax.jit(autograph.convert(fn))(jnp.float32(1.0))
    msg = str(e.value)
    assert "every path" in msg and "return a value" in msg
    assert "observed:" in msg and "variable:" in msg and "fix:" in msg
    assert "return" in msg.split("fix:")[1]


def returns_in_the_loop_only(n):
    for _ in range(n):
        return 1


def test_a_loop_that_returns_names_the_return_value_in_its_errors():
    # `retval` is the function's result: the converter says so (`returns=`), and a
    # staged loop's error speaks of the return value, not of a generated name
    assert "returns=1" in autograph.to_code(returns_in_the_loop_only)
    assert autograph.convert(returns_in_the_loop_only)(2) == 1
    with pytest.raises(autograph.LoopStateError,
                       match="returns inside a staged loop must return the same kind") as e:
        jax.jit(autograph.convert(returns_in_the_loop_only))(jnp.int32(2))
    assert "the return value is None before the loop" in str(e.value)
    assert "retval" not in str(e.value)


def first_positive(xs):
    for x in xs:
        if x > 0:
            return x
    raise ValueError("no positive item")


def first_above(xs, t):
    i = 0
    while i < xs.shape[0]:
        if xs[i] > t:
            return i
        i += 1
    raise ValueError("nothing above the threshold")


def doubles_until_big(x, n):
    i = 0
    while i < n:  # `n` traced: a `lax.while_loop`
        x = x * 2.0
        if x > 100.0:
            return x
        i += 1
    raise ValueError(f"still {x} after {n} doublings")


def returns_or_raises(x):
    if x > 0:
        return x
    raise ValueError("not positive")


def test_a_loop_that_returns_then_a_raise_converts():
    # the raise ends the only path that does not return: nothing falls off the end
    xs = np.array([-1.0, 2.0, 3.0], F32)
    check_equivalent(first_positive, (xs,))
    check_equivalent(first_above, (xs, F32(1.0)), (xs, F32(2.5)))
    f = autograph.function(first_positive)
    assert float(f(jnp.asarray(xs))) == 2.0
    with pytest.raises(ValueError, match="no positive item"):  # raised as the program runs
        f(jnp.asarray(-xs[1:]))
    with pytest.raises(ValueError, match="no positive item"):
        autograph.convert(first_positive)(-xs[1:])
    g = autograph.function(first_above)
    assert int(g(jnp.asarray(xs), 2.5)) == 2
    with pytest.raises(ValueError, match="nothing above"):
        g(jnp.asarray(xs), 5.0)


def test_a_while_loop_with_a_traced_test_that_returns_then_a_raise_converts():
    f = autograph.function(doubles_until_big)
    assert float(f(jnp.float32(1.0), jnp.int32(10))) == doubles_until_big(1.0, 10) == 128.0
    with pytest.raises(ValueError, match="still 8.0 after 3 doublings"):
        f(jnp.float32(1.0), jnp.int32(3))
    with pytest.raises(ValueError, match="still 8.0 after 3 doublings"):
        doubles_until_big(1.0, 3)


def test_a_branch_that_raises_is_not_a_path_without_a_return():
    f = autograph.function(returns_or_raises)
    assert float(f(jnp.float32(2.0))) == 2.0
    with pytest.raises(ValueError, match="not positive"):
        f(jnp.float32(-2.0))


# ---------------------------------------------------------------------------
# A variable a nested early `return` may leave unassigned, then updated in place


def returns_inside_then_augments(x, n):
    if x > 1:
        if x > 2:
            return x
        a = x
    else:
        a = x + 1
    if (3 - n) == (n // 2):
        a += a
    return a


def test_augmented_assignment_reads_its_target_as_python_does():
    # `a` is unassigned only where the function has returned; `a += a` reads it
    out = autograph.to_code(returns_inside_then_augments)
    assert "a = ag__.ld(a)\n" in out and "a += ag__.ld(a)" in out, out
    check_equivalent(returns_inside_then_augments,
                     *[(F32(x), n) for x in (0.5, 1.5, 2.5) for n in (1, 2)])


def appends_after_early_return(x):
    if x > 1:
        if x > 2:
            return jnp.zeros(2)
        acc = [x]
    else:
        acc = [x + 1]
    acc += [x]  # in place: the list object itself grows
    return jnp.stack(acc)


def test_augmented_assignment_of_a_list_after_an_early_return():
    check_equivalent(appends_after_early_return, (F32(0.5),), (F32(1.5),), (F32(2.5),))
