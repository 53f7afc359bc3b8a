"""`and`, `or` and `not`: Python semantics on Python values, `jnp` on traced ones."""

from __future__ import annotations

import jax.numpy as jnp

from .conditions import condition
from .values import is_traced


def _truth(x, op: str):
    return condition(x, f"`{op}`") if is_traced(x) else x


def and_(left, right_thunk):
    """``left and right_thunk()``.

    The semantics are given by this Python implementation::

        return right_thunk() if left else left

    When ``left`` is traced, both sides are evaluated and combined with
    ``jnp.logical_and``; each must then be a single value.
    """
    c = _truth(left, "and")
    if not is_traced(c):
        return right_thunk() if c else left
    right = right_thunk()
    return jnp.logical_and(c, _truth(right, "and"))


def or_(left, right_thunk):
    """``left or right_thunk()``; see :func:`and_`."""
    c = _truth(left, "or")
    if not is_traced(c):
        return left if c else right_thunk()
    right = right_thunk()
    return jnp.logical_or(c, _truth(right, "or"))


def not_(x):
    """``not x``; ``jnp.logical_not`` when ``x`` is traced."""
    c = _truth(x, "not")
    if not is_traced(c):
        return not c
    return jnp.logical_not(c)
