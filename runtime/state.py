"""Flattening, comparing and casting the state that branches and loops pass on.

State is a tuple of values, one per variable name. Each value is a pytree;
its leaves are *arrays* (JAX or NumPy arrays and scalars, tracers), Python
*numbers*, ``Undefined`` markers, or *static* Python objects (strings,
functions, anything else), which staged code cannot carry and so must be
the same on every path.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .values import is_array, is_python_number, is_undefined

tree_util = jax.tree_util

try:  # keeps weak types (Python-scalar typing) through casts
    from jax._src.lax.lax import _convert_element_type as _convert_internal
except ImportError:  # pragma: no cover - depends on the JAX version
    _convert_internal = None


def flatten(value):
    """(treedef, leaves) of ``value``; ``Undefined`` markers are leaves."""
    leaves, treedef = tree_util.tree_flatten(value, is_leaf=is_undefined)
    return treedef, leaves


def is_carryable(leaf) -> bool:
    return is_array(leaf) or is_python_number(leaf)


def aval_of(leaf):
    """(shape, dtype, weak_type) of a carryable leaf."""
    if is_python_number(leaf):
        return (), jnp.result_type(leaf), True
    return tuple(np.shape(leaf)), np.dtype(leaf.dtype), bool(getattr(leaf, "weak_type", False))


def convert(x, dtype, weak: bool):
    """Casts ``x`` to ``dtype``, weakly typed when ``weak`` (like a Python scalar)."""
    dtype = np.dtype(dtype)
    if _convert_internal is not None:
        return _convert_internal(x, dtype, weak_type=weak)
    return jax.lax.convert_element_type(x, dtype)  # pragma: no cover


def as_array(leaf):
    """A carryable leaf as a JAX array, keeping Python scalars weakly typed."""
    if is_python_number(leaf):
        return jnp.asarray(leaf)
    return leaf if isinstance(leaf, (jax.Array, jax.core.Tracer)) else jnp.asarray(leaf)


def promote(a, b):
    """Joint (dtype, weak) of two avals under JAX's promotion rules."""
    (_, da, wa), (_, db, wb) = a, b
    sa = jax.ShapeDtypeStruct((), da, weak_type=wa)
    sb = jax.ShapeDtypeStruct((), db, weak_type=wb)
    return np.dtype(jnp.result_type(sa, sb)), wa and wb


def same_static(a, b) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # objects whose == is not a plain bool
        return False


def kind_of(value) -> str:
    """Words for a pytree's structure in messages: 'a tuple of 2', 'None'."""
    if value is None:
        return "None"
    if isinstance(value, (list, tuple, dict)):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a `{type(value).__name__}`"
