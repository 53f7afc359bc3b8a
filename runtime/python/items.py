"""Item assignment in converted code: a new JAX array, or Python's in-place update."""

from __future__ import annotations

import operator
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from ..carried.in_place import refuse_numpy_update
from ..core.values import Tracer

# an in-place operator -> its binary one, for an array that cannot be updated in place
_BINARY = {operator.iadd: operator.add, operator.isub: operator.sub,
           operator.imul: operator.mul, operator.itruediv: operator.truediv,
           operator.ifloordiv: operator.floordiv, operator.imod: operator.mod,
           operator.ipow: operator.pow, operator.imatmul: operator.matmul,
           operator.iand: operator.and_, operator.ior: operator.or_, operator.ixor: operator.xor,
           operator.ilshift: operator.lshift, operator.irshift: operator.rshift}


def _is_jax_array(x) -> bool:
    return isinstance(x, (jax.Array, Tracer))


def setitem(obj: Any, index: Any, value: Any,
            op: Callable[[Any, Any], Any] | None = None) -> Any:
    """``obj[index] = value`` (or ``obj[index] op= value``); returns the updated object.

    The semantics are given by this Python implementation, for objects that
    can be updated in place::

        if op is not None:
            value = op(obj[index], value)   # the in-place operator, operator.iadd for +=
        obj[index] = value
        return obj

    A JAX array cannot be: it gives ``obj.at[index].set(value)`` (with
    ``op``, ``obj.at[index].set(obj[index] <op> value)``, so a repeated index
    is written once, as in NumPy). A boolean mask of ``obj``'s shape with a
    scalar value is ``jnp.where(mask, value, obj)``, which also works traced.

    Args:
      obj: the container or array assigned into.
      index: the index, slice or mask.
      value: the value assigned.
      op: the in-place operator of an augmented assignment
        (``operator.iadd`` for ``+=``), or None for ``=``.

    Returns:
      ``obj`` itself, updated in place, or for a JAX array a new array.
    """
    if not _is_jax_array(obj):
        try:
            if op is not None:
                value = op(obj[index], value)
            elif isinstance(obj, tuple) and obj[index] is value:
                # `t[0][k] = v` on a list a tuple holds: the list is updated in place,
                # and Python never stores into the tuple
                return obj
            obj[index] = value
        except TypeError as e:
            if isinstance(index, Tracer) and isinstance(obj, (list, tuple)):
                _note_traced_index(e, obj)
            raise
        return obj
    refuse_numpy_update(obj)  # a staged loop's stand-in for a NumPy array it carries
    if op is not None:
        value = _BINARY[op](obj[index], value)
    if (_is_jax_array(index) or isinstance(index, np.ndarray)) and np.dtype(
            index.dtype) == np.bool_ and np.shape(index) == np.shape(obj) and np.ndim(value) == 0:
        return jnp.where(index, jnp.asarray(value, obj.dtype), obj)
    return obj.at[index].set(value)


def _note_traced_index(error: TypeError, obj) -> None:
    """Adds to JAX's error for a Python list indexed by a traced value what to do."""
    kind = type(obj).__name__
    try:
        error.add_note(
            f"autograph: a Python {kind} takes a Python int as its index, and this index "
            f"is traced (an array's value, or the counter of a staged loop: its value is "
            f"known only when the program runs). Keep the items in a JAX array instead: "
            f"`a = jnp.stack(a)` (or `jnp.zeros(n)`) before, `a = a.at[i].set(v)` to "
            f"assign and `a[i]` to read")
    except (AttributeError, TypeError):  # pragma: no cover - an exception with __slots__
        pass


_UNREAD = object()


def setitem_attr(obj: Any, attr: str, index: Any, value: Any,
                 op: Callable[[Any, Any], Any] | None = None,
                 current: Any = _UNREAD) -> None:
    """``obj.attr[index] = value``: the attribute is rebound only to a new JAX array.

    The semantics are given by this Python implementation::

        getattr(obj, attr)[index] = value   # or <op>= value

    Args:
      obj: the object whose attribute is assigned into.
      attr: the attribute's name.
      index: the index, slice or mask.
      value: the value assigned.
      op: as for :func:`setitem`.
      current: the attribute's value, when the caller has read it already
        (before evaluating ``index`` or ``value``, as Python does); it is then
        not read again.
    """
    if current is _UNREAD:
        current = getattr(obj, attr)
    new = setitem(current, index, value, op)
    if new is not current:
        setattr(obj, attr, new)
