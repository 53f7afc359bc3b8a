"""Dicts that come out of staged code with their keys in the order they went in.

JAX flattens a ``dict`` (and a ``defaultdict``) with its keys sorted, and
``tree_unflatten`` rebuilds it in that order: ``{"w": w, "b": b}`` comes back
as ``{"b": b, "w": w}``, and ``list(d.values())`` changes meaning. Staged
blocks take their state apart through :func:`ordered`: each dict in a value
(nested ones too, in lists, tuples, namedtuples, dataclasses) flattens as an
``_Ordered`` node, whose leaves stay in JAX's sorted order but whose treedef
also records the keys as inserted, so that unflattening builds the same type
(``defaultdict`` with its ``default_factory``) with the keys in that order.
Two treedefs that differ only in key order compare equal, as JAX's own do, so
structure checks are unchanged and leaves line up; the treedef a block
unflattens with decides the order of what it hands back.

Examples:
    >>> import jax
    >>> leaves, treedef = jax.tree_util.tree_flatten(ordered({"w": 1, "b": 2}))
    >>> leaves
    [2, 1]
    >>> jax.tree_util.tree_unflatten(treedef, leaves)
    {'w': 1, 'b': 2}
"""

from __future__ import annotations

import collections
from typing import Any, Callable

import jax

_DICTS = (dict, collections.defaultdict)


class _Keys:
    """A dict node's aux data: type, default factory, keys in JAX's order and as
    inserted. Equal to another when all but the insertion order agree."""

    __slots__ = ("kind", "factory", "keys", "inserted")

    def __init__(self, kind: type, factory: Any, keys: tuple, inserted: tuple):
        self.kind, self.factory, self.keys, self.inserted = kind, factory, keys, inserted

    def __eq__(self, other) -> bool:
        return (isinstance(other, _Keys) and self.kind is other.kind
                and self.factory == other.factory and self.keys == other.keys)

    def __hash__(self) -> int:
        return hash((self.kind, self.keys))

    def __repr__(self) -> str:
        return f"{self.kind.__name__}{list(self.inserted)}"


class _Ordered:
    """A dict (or defaultdict), for JAX to flatten keeping its key order."""

    __slots__ = ("value", "is_leaf")

    def __init__(self, value: dict, is_leaf: Callable[[Any], bool] | None):
        self.value, self.is_leaf = value, is_leaf


def _flatten(node: _Ordered):
    d = node.value
    inserted = tuple(dict.__iter__(d))
    try:
        keys = tuple(sorted(inserted))
    except TypeError:  # keys of mixed types: the order they were inserted in
        keys = inserted
    children = [ordered(dict.__getitem__(d, k), node.is_leaf) for k in keys]
    return children, _Keys(type(d), getattr(d, "default_factory", None), keys, inserted)


def _unflatten(aux: _Keys, children) -> dict:
    by_key = dict(zip(aux.keys, children))
    items = [(k, by_key[k]) for k in aux.inserted]
    if aux.kind is dict:
        return dict(items)
    return aux.kind(aux.factory, items)


# unflattens to the dict itself, not to an `_Ordered`: only flattening needs the wrapper
jax.tree_util.register_pytree_node(_Ordered, _flatten, _unflatten)  # type: ignore[arg-type]


def _is_dict(x) -> bool:
    return type(x) in _DICTS


def ordered(value: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``value`` with each dict and defaultdict in it as a node that keeps its key order.

    Flattening the result gives the leaves JAX gives for ``value`` (dict keys
    sorted), and a treedef that unflattens to dicts in ``value``'s key order.
    Subtrees where ``is_leaf`` holds are leaves, as for ``jax.tree_util``;
    nothing is copied where ``value`` holds no dict.
    """
    def stop(x) -> bool:
        return _is_dict(x) or (is_leaf is not None and is_leaf(x))

    if stop(value):
        return _Ordered(value, is_leaf) if _is_dict(value) else value
    leaves, treedef = jax.tree_util.tree_flatten(value, is_leaf=stop)
    if not any(_is_dict(leaf) for leaf in leaves):
        return value
    return jax.tree_util.tree_unflatten(
        treedef, [_Ordered(leaf, is_leaf) if _is_dict(leaf) else leaf for leaf in leaves])


def reordered(before: Any, after: Any) -> tuple[str, tuple, tuple] | None:
    """Where the treedef ``after`` holds a dict's keys in another order than ``before``
    (a treedef equal to it; both of ``ordered`` values): ``(where, keys before, keys
    after)``, ``where`` being the subscripts that reach the dict (``"['opt'][0]"``, or
    ``""`` for the value itself); None where every dict keeps its order.

    Examples:
        >>> import jax
        >>> a = jax.tree_util.tree_structure(ordered([{"w": 1, "b": 2}]))
        >>> b = jax.tree_util.tree_structure(ordered([{"b": 2, "w": 1}]))
        >>> reordered(a, b)
        ('[0]', ('w', 'b'), ('b', 'w'))
    """
    node_a, node_b = before.node_data(), after.node_data()
    if (node_a is not None and node_b is not None and node_a[0] is _Ordered
            and node_b[0] is _Ordered and node_a[1].inserted != node_b[1].inserted):
        return "", node_a[1].inserted, node_b[1].inserted
    for i, (a, b) in enumerate(zip(before.children(), after.children())):
        hit = reordered(a, b)
        if hit is not None:
            return _step(node_a, i) + hit[0], hit[1], hit[2]
    return None


def _step(node: tuple | None, i: int) -> str:
    """How the ``i``-th child of a treedef's node is reached from it, as source text."""
    kind, aux = node if node is not None else (None, None)
    if kind is _Ordered:
        return f"[{aux.keys[i]!r}]"
    if isinstance(kind, type) and issubclass(kind, tuple) and hasattr(kind, "_fields"):
        return f".{kind._fields[i]}"
    if kind in (list, tuple):
        return f"[{i}]"
    return ""


def leaves(value: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """``jax.tree_util.tree_leaves(value)``, where a dict's keys of mixed types (``{1: a,
    "b": c}``, which JAX cannot sort) give its leaves in insertion order."""
    try:
        return jax.tree_util.tree_leaves(value, is_leaf=is_leaf)
    except (TypeError, ValueError):
        return jax.tree_util.tree_leaves(ordered(value, is_leaf), is_leaf=is_leaf)


def tree_map(fn: Callable[..., Any], value: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """``jax.tree_util.tree_map(fn, value)`` with every dict's keys in ``value``'s order."""
    return jax.tree_util.tree_map(fn, ordered(value, is_leaf), is_leaf=is_leaf)


def sorted_hint(name: str, keys_a, keys_b, before: bool = True) -> str:
    """Where one of two orders of a dict's keys, before (``keys_a``) and after a loop
    (or, without ``before``, on two branches), is the sorted one, the first part of
    a fix saying where that order comes from; else ''.

    ``jax.tree.map`` and the libraries built on it (optax's updates) give a dict its
    keys in sorted order, and ``jax.jit``, ``jax.grad`` and ``jax.vmap`` hand a
    dict argument to the function with its keys sorted.
    """
    a, b = list(keys_a), list(keys_b)
    try:
        ordered = sorted(a)
    except TypeError:
        return ""
    if a == b or (b != ordered and a != ordered):
        return ""
    if a == ordered and before:  # sorted before a loop: an argument of `jax.jit`, say
        return (f"`jax.jit`, `jax.grad` and `jax.vmap` hand a dict argument over with "
                f"its keys sorted (and `jax.tree.map` builds dicts so): where `{name}` "
                f"is built anew, build it with its keys in the order {ordered}; or ")
    return (f"`jax.tree.map` (and the libraries built on it, such as optax) gives a dict "
            f"its keys in sorted order: build `{name}` with its keys in the order "
            f"{ordered} to begin with; or ")
