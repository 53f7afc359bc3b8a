"""`and`, `or` and `not`: Python semantics on Python values, `jnp` on traced ones."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from autograph import errors

from .conditionals import if_exp
from .conditions import condition
from .values import _fail_unless, branch_guard, is_traced, taken_when


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
    right = _operand_where(c, right_thunk)
    if right is _UNREADABLE:
        return left
    if _bool_scalar(left) and _bool_scalar(right):  # a loop test: one `and`
        return lax.bitwise_and(c, jnp.asarray(right))
    return _choose(c, right, left)


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
    right = _operand_where(jnp.logical_not(c), right_thunk)
    if right is _UNREADABLE:
        return left
    if _bool_scalar(left) and _bool_scalar(right):
        return lax.bitwise_or(c, jnp.asarray(right))
    return _choose(c, left, right)


_UNREADABLE = object()


def _operand_where(needed, thunk):
    """The right operand, which Python evaluates only where ``needed`` holds.

    Staged, it is traced for every element: a check inside it (an `assert`, a
    read of a variable a loop may have left unassigned) fails only where it is
    needed. A variable it reads that is not assigned on this path at all (``i > 0
    and prev > x`` on a loop's first step) makes it ``_UNREADABLE``: the result
    is the left operand, and the program fails where the operand was needed, as
    Python would.
    """
    try:
        with taken_when(needed):
            return thunk()
    except errors.UndefinedVariableError as e:
        jax.debug.callback(_fail_unless, jnp.logical_not(needed), branch_guard(), e)
        return _UNREADABLE


def _choose(c, if_true, if_false):
    if _is_bool(if_true) and _is_bool(if_false):
        t, f = jnp.asarray(if_true), jnp.asarray(if_false)
        if t.shape == f.shape == jnp.shape(c) == ():  # a loop test: `lax.select`, no `jnp` call
            return lax.select(jnp.asarray(c, bool), t, f)
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
