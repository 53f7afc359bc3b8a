"""`and`, `or` and `not`: Python semantics on Python values, `jnp` on traced ones."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from jax import lax

from autograph import errors

from ..core.conditions import condition
from ..core.values import describe, fail_at_run_time, is_traced, taken_when
from .conditionals import if_exp, refuse_outside_changes


class Op(enum.Enum):
    """The logical operators, named as Python spells them (the first two short-circuit)."""

    AND = "and"
    OR = "or"
    NOT = "not"

    @property
    def bitwise(self) -> Callable:
        """The operator on traced truths."""
        return lax.bitwise_and if self is Op.AND else lax.bitwise_or

    def needed(self, c):
        """Where the right operand is evaluated, for a traced truth ``c`` of the left one."""
        return c if self is Op.AND else jnp.logical_not(c)


def _truth(x, op: Op):
    return condition(x, f"`{op.value}`") if is_traced(x) else x


def and_(left: Any, right_thunk: Callable[[], Any], test: bool = False) -> Any:
    """``left and right_thunk()``.

    The semantics are given by this Python implementation::

        value = right_thunk() if left else left
        return bool(value) if test else value

    When ``left`` is traced, both sides are evaluated and the result is
    chosen with ``lax.cond`` (like ``a if c else b``): ``right`` where
    ``left`` is true, else ``left``, with JAX's type promotion. For two
    booleans this is ``jnp.logical_and``.

    With ``test`` (the expression is the test of an `if`, a `while`, ... and
    only its truth is used) a traced ``left`` gives the traced truth of both
    operands, so a right operand that is a Python value (``None``, a string, a
    list), which no array could stand for, decides by its own truth: a false
    one makes the test a Python ``False``.

    Args:
      left: the left operand, a Python value or a traced scalar.
      right_thunk: computes the right operand, which Python evaluates only
        when ``left`` is true.
      test: only the truth of the result is used.

    Returns:
      The value of the expression (with ``test``, where ``left`` is traced,
      its truth).
    """
    c = _truth(left, Op.AND)
    if not is_traced(c):
        return right_thunk() if c else left
    if test:
        return _staged_test(c, right_thunk, Op.AND)
    return _staged(left, c, right_thunk, Op.AND)


def or_(left: Any, right_thunk: Callable[[], Any], test: bool = False) -> Any:
    """``left or right_thunk()``.

    The semantics are given by this Python implementation::

        value = left if left else right_thunk()
        return bool(value) if test else value

    When ``left`` is traced, both sides are evaluated and the result is
    chosen as in :func:`and_`; for two booleans this is ``jnp.logical_or``.
    With ``test``, as in :func:`and_`: a true Python right operand makes the
    test a Python ``True``.

    Args:
      left: the left operand, a Python value or a traced scalar.
      right_thunk: computes the right operand, which Python evaluates only
        when ``left`` is false.
      test: only the truth of the result is used.

    Returns:
      The value of the expression (with ``test``, where ``left`` is traced,
      its truth).
    """
    c = _truth(left, Op.OR)
    if not is_traced(c):
        return left if c else right_thunk()
    if test:
        return _staged_test(c, right_thunk, Op.OR)
    return _staged(left, c, right_thunk, Op.OR)


def _staged_test(c, right_thunk, op: Op):
    """The truth of ``left and right`` / ``left or right`` for a traced truth ``c`` of
    ``left``: a Python bool where the right operand's Python truth decides."""
    needed = op.needed(c)
    try:
        with taken_when(needed):
            # staged like a branch of an `if`: its Python runs whatever `left` is
            right = refuse_outside_changes(
                (right_thunk,), right_thunk,
                f"the right operand of an `{op.value}` whose left operand is traced")
    except errors.UndefinedVariableError as e:
        fail_at_run_time(jnp.logical_not(needed), e)
        return c
    r = _truth(right, op)
    if not is_traced(r):
        if op is Op.AND:
            return c if r else False
        return True if r else c
    return op.bitwise(c, r)


def _staged(left, c, right_thunk, op: Op):
    """``left and right`` / ``left or right`` for a traced truth ``c`` of ``left``.

    The right operand is traced for every element, but Python evaluates it only
    where it is needed (where ``left`` is true for `and`, false for `or`): a
    check inside it (an `assert`, a read of a variable a loop may have left
    unassigned) fails only there. A variable it reads that is not assigned on
    this path at all (``i > 0 and prev > x`` on a loop's first step) leaves the
    left operand as the result, and the program fails where the right one was
    needed, as Python would.
    """
    needed = op.needed(c)
    try:
        with taken_when(needed):
            # staged like a branch of an `if`: its Python runs whatever `left` is
            right = refuse_outside_changes(
                (right_thunk,), right_thunk,
                f"the right operand of an `{op.value}` whose left operand is traced")
    except errors.UndefinedVariableError as e:
        fail_at_run_time(jnp.logical_not(needed), e)
        return left
    if _bool_scalar(left) and _bool_scalar(right):  # a loop test: one `and`/`or`
        return op.bitwise(c, jnp.asarray(right))
    if_true, if_false = (right, left) if op is Op.AND else (left, right)
    if _is_bool(if_true) and _is_bool(if_false):
        return jnp.where(c, if_true, if_false)
    try:
        return if_exp(c, lambda: if_true, lambda: if_false)
    except errors.BranchError:
        raise errors.BranchError(
            f"the value of an `{op.value}` whose left operand is traced must be one array",
            observed=f"it is {describe(if_true)} where the left operand is true and "
                     f"{describe(if_false)} where it is false",
            fix="test it in an `if` or `while` (only its truth counts there), or give both "
                "operands numbers or arrays of one shape") from None


def _bool_scalar(x) -> bool:
    return isinstance(x, bool) or (getattr(x, "dtype", None) == jnp.bool_ and jnp.shape(x) == ())


def _is_bool(x) -> bool:
    return isinstance(x, bool) or getattr(x, "dtype", None) == jnp.bool_


def not_(x: Any) -> Any:
    """``not x``; ``jnp.logical_not`` when ``x`` is traced.

    The semantics are given by this Python implementation::

        return not x

    Args:
      x: the operand, a Python value or a traced scalar.

    Returns:
      A Python bool, or a traced boolean scalar when ``x`` is traced.
    """
    c = _truth(x, Op.NOT)
    if not is_traced(c):
        return not c
    c = jnp.asarray(c)
    return lax.bitwise_not(c) if c.dtype == jnp.bool_ else jnp.logical_not(c)
