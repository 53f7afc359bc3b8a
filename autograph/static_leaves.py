"""Leaves ``autograph.function`` does not trace: Equinox's filter rule.

``jax.jit`` traces every leaf of its arguments and returns arrays only, so a
function that takes or returns an Equinox module (its activation function, a
string such as ``BatchNorm.axis_name``, a flag such as ``inference``) fails
there, or turns the flag into an array. ``eqx.filter_jit`` traces the arrays
only, and so does ``autograph.function``:

* in the arguments, a leaf that is not an array is a static value: it keys
  the cache (by value where it is hashable) and the function sees it as it
  is; inside an Equinox module this holds from the first call, elsewhere
  once ``jax.jit`` refuses the leaf or the function needs it as a Python
  value;
* in the result, a leaf ``jax.jit`` cannot return comes back as the object
  the trace returned (the same object on every call that reuses the trace),
  and so does every leaf of an Equinox module that is not an array (a Python
  number or flag included). Elsewhere, Python numbers come back as arrays, as
  ``jax.jit`` returns them.

While tracing, each such output leaf is wrapped in a :class:`Static`, a pytree
node with no children that keeps the leaf in its treedef; unflattening the
compiled function's output turns it back into the leaf. That costs a call
nothing, but keeps it off ``jax.jit``'s C++ dispatch (which returns arrays
only); where the call is made in Python anyway (arguments with static leaves,
an Equinox module among them) the leaves are :class:`Held` instead, which
stay themselves through ``jax.jit``, and :func:`release` replaces them after
the call, as ``eqx.filter_jit`` does.
"""

from __future__ import annotations

import sys
from typing import Any

import jax
import numpy as np

_ARRAYS = (jax.Array, np.ndarray, np.generic)  # a tracer is a jax.Array
_RETURNABLE = (*_ARRAYS, bool, int, float, complex)  # what jax.jit returns (as arrays)


class Static:
    """A leaf returned as it is, held in the output's treedef."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class Held:
    """A leaf returned as it is, held in the output until :func:`release`."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


jax.tree_util.register_pytree_node(
    Static, lambda s: ((), s.value), lambda value, children: value)
jax.tree_util.register_pytree_node(Held, lambda h: ((), h.value), lambda value, _: Held(value))


def _is_static(x) -> bool:
    return isinstance(x, Static)


def _is_held(x) -> bool:
    return type(x) is Held


def held(out: Any) -> Any:
    """``out`` (made by :func:`static_outputs`) with each :class:`Static` a :class:`Held`."""
    pieces, treedef = jax.tree_util.tree_flatten(out, is_leaf=_is_static)
    if not any(isinstance(p, Static) for p in pieces):
        return out
    return jax.tree_util.tree_unflatten(
        treedef, [Held(p.value) if isinstance(p, Static) else p for p in pieces])


def release(out: Any) -> Any:
    """``out`` with each :class:`Held` replaced by the leaf it holds."""
    pieces, treedef = jax.tree_util.tree_flatten(out, is_leaf=_is_held)
    if not any(type(p) is Held for p in pieces):
        return out
    return jax.tree_util.tree_unflatten(
        treedef, [p.value if type(p) is Held else p for p in pieces])


def _module_type():
    eqx = sys.modules.get("equinox")
    return None if eqx is None else eqx.Module


def holds_module(value) -> bool:
    """Whether ``value`` is or holds an Equinox module with a leaf that is not an array."""
    module = _module_type()
    if module is None:
        return False
    found = jax.tree_util.tree_leaves(value, is_leaf=lambda x: isinstance(x, module))
    return any(isinstance(node, module) and not all(
        isinstance(leaf, _ARRAYS) for leaf in jax.tree_util.tree_leaves(node)) for node in found)


def static_outputs(out: Any) -> Any:
    """``out`` with each leaf returned as it is wrapped in a :class:`Static`.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> out = static_outputs({"act": jax.nn.relu, "w": jnp.ones(2)})
      >>> type(out["act"]).__name__
      'Static'
      >>> jax.jit(lambda w: static_outputs({"act": "tanh", "w": w}))(jnp.ones(2))["act"]
      'tanh'
    """
    leaves = jax.tree_util.tree_leaves(out)
    module = _module_type()
    if all(isinstance(leaf, _RETURNABLE) for leaf in leaves) and (
            module is None or all(isinstance(leaf, _ARRAYS) for leaf in leaves)):
        return out

    def wrap(leaf):
        if module is not None and isinstance(leaf, module):  # in a module, Python numbers too
            inner, treedef = jax.tree_util.tree_flatten(leaf)
            return jax.tree_util.tree_unflatten(
                treedef, [x if isinstance(x, _ARRAYS) else Static(x) for x in inner])
        return leaf if isinstance(leaf, _RETURNABLE) else Static(leaf)

    # one pass: unflattening a tree that holds a `Static` node would unwrap it
    pieces, treedef = jax.tree_util.tree_flatten(
        out, is_leaf=None if module is None else lambda x: isinstance(x, module))
    return jax.tree_util.tree_unflatten(treedef, [wrap(piece) for piece in pieces])
