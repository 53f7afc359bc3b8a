"""`and`, `or` and `not`: Python semantics on Python values, `jnp` on traced ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
from jax import lax

from autograph import errors

from .conditionals import if_exp
from .conditions import condition
from .values import fail_at_run_time, is_traced, taken_when


def _truth(x, op: str):
    return condition(x, f"`{op}`") if is_traced(x) else x


def and_(left: Any, right_thunk: Callable[[], Any]) -> Any:
    """``left and right_thunk()``.

    The semantics are given by this Python implementation::

        return right_thunk() if left else left

    When ``left`` is traced, both sides are evaluated and the result is
    chosen with ``lax.cond`` (like ``a if c else b``): ``right`` where
    ``left`` is true, else ``left``, with JAX's type promotion. For two
    booleans this is ``jnp.logical_and``.

    Args:
      left: the left operand, a Python value or a traced scalar.
      right_thunk: computes the right operand, which Python evaluates only
        when ``left`` is true.

    Returns:
      The value of the expression.
    """
    c = _truth(left, "and")
    if not is_traced(c):
        return right_thunk() if c else left
    return _staged(left, c, right_thunk, "and")


def or_(left: Any, right_thunk: Callable[[], Any]) -> Any:
    """``left or right_thunk()``.

    The semantics are given by this Python implementation::

        return left if left else right_thunk()

    When ``left`` is traced, both sides are evaluated and the result is
    chosen as in :func:`and_`; for two booleans this is ``jnp.logical_or``.

    Args:
      left: the left operand, a Python value or a traced scalar.
      right_thunk: computes the right operand, which Python evaluates only
        when ``left`` is false.

    Returns:
      The value of the expression.
    """
    c = _truth(left, "or")
    if not is_traced(c):
        return left if c else right_thunk()
    return _staged(left, c, right_thunk, "or")


def _staged(left, c, right_thunk, op: str):
    """``left and right`` / ``left or right`` for a traced truth ``c`` of ``left``.

    The right operand is traced for every element, but Python evaluates it only
    where it is needed (where ``left`` is true for `and`, false for `or`): a
    check inside it (an `assert`, a read of a variable a loop may have left
    unassigned) fails only there. A variable it reads that is not assigned on
    this path at all (``i > 0 and prev > x`` on a loop's first step) leaves the
    left operand as the result, and the program fails where the right one was
    needed, as Python would.
    """
    needed = c if op == "and" else jnp.logical_not(c)
    try:
        with taken_when(needed):
            right = right_thunk()
    except errors.UndefinedVariableError as e:
        fail_at_run_time(jnp.logical_not(needed), e)
        return left
    if _bool_scalar(left) and _bool_scalar(right):  # a loop test: one `and`/`or`
        return (lax.bitwise_and if op == "and" else lax.bitwise_or)(c, jnp.asarray(right))
    if_true, if_false = (right, left) if op == "and" else (left, right)
    if _is_bool(if_true) and _is_bool(if_false):
        return jnp.where(c, if_true, if_false)
    return if_exp(c, lambda: if_true, lambda: if_false)


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
    c = _truth(x, "not")
    if not is_traced(c):
        return not c
    c = jnp.asarray(c)
    return lax.bitwise_not(c) if c.dtype == jnp.bool_ else jnp.logical_not(c)
