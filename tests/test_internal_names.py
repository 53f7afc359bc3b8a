"""Errors about values generated code carries name the user's construct, never a
generated name (`retval`, `did_break`) or a stand-in (`<loop index>`)."""

import inspect
import re

import jax
import jax.numpy as jnp
import pytest

import autograph
from autograph import errors
from autograph.runtime.core import values

_INTERNAL = re.compile(r"retval|did_break|did_return|did_continue|<loop index>|<objects>"
                       r"|`return value`|`the return value`")


def _assert_clean(message: str, fn, line: int) -> None:
    """No internal name in ``message``, which points at ``fn``'s ``line``-th line."""
    line += inspect.getsourcelines(fn)[1] - 1
    assert f"test_internal_names.py:{line}" in message
    assert not _INTERNAL.search(message), message


def returns_on_one_path(x):
    if x > 0:
        return x


def test_a_value_returned_on_one_path_of_a_staged_if():
    with pytest.raises(errors.BranchError) as e:
        jax.jit(autograph.convert(returns_on_one_path))(1.0)
    _assert_clean(str(e.value), returns_on_one_path, 2)
    assert "variable: the return value" in str(e.value)


def returns_a_string_in_nested_loops(x, n):
    while x < 100.0:
        for _ in range(n):
            if x > 50.0:
                return "done"
            x = x * 2.0
        x = x + 1.0
    return x


def test_a_return_inside_a_traced_trip_for_nested_in_a_traced_while():
    with pytest.raises(errors.LoopStateError) as e:
        jax.jit(autograph.convert(returns_a_string_in_nested_loops))(1.0, 3)
    _assert_clean(str(e.value), returns_a_string_in_nested_loops, 3)
    assert "the return value is the Python str 'done'" in str(e.value)


def breaks_with_a_string(x):
    while x < 10.0:
        if x > 5.0:
            found = "big"
            break
        found = 1.0
        x = x + 1.0
    return x, found


def test_a_break_flag_is_never_named():
    with pytest.raises(autograph.AutographError) as e:
        jax.jit(autograph.convert(breaks_with_a_string))(1.0)
    assert not _INTERNAL.search(str(e.value)), str(e.value)
    assert "`found`" in str(e.value)


def test_an_unset_return_value_is_said_of_the_function():
    with pytest.raises(errors.UndefinedVariableError) as e:
        values.UndefinedReturn() + 1
    message = str(e.value)
    assert not _INTERNAL.search(message), message
    assert "must return a value" in message and "variable: the return value" in message


def test_labels_are_not_quoted_as_names():
    assert errors.quoted("x") == "`x`"
    assert errors.quoted("c.total") == "`c.total`"
    assert errors.quoted(errors.RETURN_VALUE) == "the return value"
    assert errors.returning(("did_return", "retval", "x"), 1) == (
        "did_return", errors.RETURN_VALUE, "x")
    assert errors.returning(("x",), None) == ("x",)


def counter_with_a_moving_limit(x, n):
    i = 0
    while i < n:
        x = x * 2.0
        i += 1
    return x


def test_the_bound_is_given_by_position_and_named_for_the_user():
    code = autograph.to_code(counter_with_a_moving_limit)
    assert "bound=ag__.Bound(0, ag__.operator.lt, lambda: n, 1)" in code
    got = jax.jit(autograph.convert(counter_with_a_moving_limit), static_argnums=1)(
        jnp.float32(1.0), 3)
    assert got == 8.0


def returns_none_on_one_path(x):
    y = x + 1
    if x > 0:
        return None
    return x, y


def test_a_path_returning_none_is_told_what_the_others_return():
    with pytest.raises(autograph.BranchError) as e:
        jax.jit(autograph.convert(returns_none_on_one_path))(jnp.ones(1))
    message = str(e.value)
    assert "returns None (by `return None`, a bare `return`, or the end of the function)" in (
        message)
    assert "fix: return a tuple of 2 on that path too" in message


def picks_a_function(x):
    if x > 0:
        fn = jnp.sin
    else:
        fn = jnp.cos
    return fn(x)


def test_two_functions_on_two_branches_are_named():
    with pytest.raises(autograph.BranchError) as e:
        jax.jit(autograph.convert(picks_a_function))(1.0)
    assert "the function `sin` on the true branch but the function `cos`" in str(e.value)
