"""How ``autograph.function`` keys its cache on the Python values it does not trace.

``jax.jit`` keys a static argument with ``==`` and ``hash``. For most Python
values that is their value; for three kinds it is not, and :func:`keyed` wraps
them in a :class:`ByValue` that compares what the traced function reads:

* floats (and complex numbers), alone or in hashable containers: by value
  and sign, NaN equal to NaN (``0.0 == -0.0``, yet ``copysign`` tells them
  apart; ``nan != nan``, yet one NaN computes what another does);
* plain objects (equal only to themselves) and unhashable ones that define
  ``__eq__`` (a dataclass that is not frozen): by their type and state, their
  attributes (``__dict__`` and ``__slots__``, and the data attributes of its
  class and the classes it derives from) keyed recursively, so that
  ``cfg.scale = 5.0`` or ``Config.scale = 5.0`` between two calls traces
  again and an unchanged object does not. In that state JAX arrays are keyed
  by identity (they cannot change); NumPy arrays, a ``deque``, a
  ``bytearray`` or an ``array.array`` by contents (they can); objects it
  cannot read by identity. Objects with their own ``__eq__`` and ``__hash__``
  (a frozen dataclass) keep them; an object made unhashable without an
  ``__eq__`` of its own stays unhashable;
* ``True`` and ``1`` (equal, with one hash) inside containers: by their types
  too, as ``jax.jit`` tells them apart at the top level.

Functions, modules and classes are keyed by identity, and so are JAX's
function objects (``jax.jit``, ``jax.custom_jvp`` and ``jax.custom_vjp``
functions, such as the ``jax.nn.relu`` an Equinox module holds): they are
functions too, and reading their attributes on every call would cost more
than it tells.
"""

from __future__ import annotations

import array
import collections
import enum
import functools
import types
import weakref

import jax
import numpy as np

from autograph.runtime.carried.state import float_key

_SIMPLE = frozenset({bool, int, str, bytes, type(None)})
# objects whose identity is what they are: never keyed by their attributes
_BY_IDENTITY = (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                types.BuiltinMethodType, types.ModuleType, type, functools.partial, enum.Enum,
                jax.custom_jvp, jax.custom_vjp, type(jax.jit(lambda: None)))
# values keyed by what they hold, never by their attributes
_NOT_OBJECTS = (*_BY_IDENTITY, jax.Array, np.ndarray, np.generic, tuple, list, dict, set,
                frozenset)


class ByValue:
    """A static argument of ``jax.jit`` compared by ``key``; ``value`` is the argument."""

    __slots__ = ("value", "_key")

    def __init__(self, value, key):
        self.value, self._key = value, key

    def __eq__(self, other):
        return type(other) is ByValue and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __repr__(self):
        return repr(self.value)


class _Same:
    """Equal only to a holder of the very same object (held, so its id stays unique)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __eq__(self, other):
        return type(other) is _Same and other.value is self.value

    def __hash__(self):
        return id(self.value)


def keyed(value):
    """``value``, a static argument, as ``jax.jit`` should key it."""
    t = type(value)
    if t is float or t is complex:
        return ByValue(value, (t, float_key(value)))
    if t in _SIMPLE:
        return value
    state = object_state(value, set())
    if state is not None:
        return ByValue(value, state)
    leaves, treedef = jax.tree_util.tree_flatten(value)  # a tuple of Python values, say
    if len(leaves) == 1 and leaves[0] is value:
        return value
    keys = tuple(map(keyed, leaves))
    if all(k is leaf and type(leaf) is not bool for k, leaf in zip(keys, leaves)):
        return value
    # `True == 1` and `hash(True) == hash(1)`, as at the top level, where `jax.jit`
    # tells them apart by type: so here, by the leaves' types
    return ByValue(value, (treedef, tuple(map(type, leaves)), keys))


def unkeyed(value):
    """The argument a ``keyed`` value stands for."""
    return value.value if type(value) is ByValue else value


def object_state(value, seen: set) -> tuple | None:
    """The key of a plain object by its type and attributes, or None for any other
    value (see the module's docstring)."""
    t = type(value)
    if isinstance(value, _NOT_OBJECTS):
        return None
    # a plain object is equal only to itself (and hashable); a mutable value type
    # (a dataclass) defines `__eq__` and is unhashable. Any other object has its
    # own idea of equality, or has said it has none (`__hash__ = None` alone).
    if (t.__hash__ is None) != _defines_eq(t) or not _python_layout(t):
        return None
    attrs = _attributes(value)
    if attrs is None:
        return None
    seen = seen | {id(value)}
    return (t, tuple((name, _state_key(v, seen)) for name, v in attrs),
            _class_state(t, seen))


def _class_state(t: type, seen: set) -> tuple:
    """The key of the data attributes ``t`` and the classes it derives from define
    (``class Settings: scale = 2.0``), which an instance reads as its own: methods,
    properties and other descriptors, nested classes and dunder names are left out."""
    out = []
    for cls in t.__mro__[:-1]:
        for name, v in vars(cls).items():
            # (`staticmethod`, `classmethod` and `property` are descriptors too)
            if name.startswith("__") or callable(v) or hasattr(type(v), "__get__"):
                continue
            out.append((name, _state_key(v, seen)))
    return tuple(out)


def _attributes(value) -> list | None:
    """``(name, value)`` of an object's ``__dict__`` and ``__slots__``; None if it has
    neither (its state cannot be read)."""
    attrs = getattr(value, "__dict__", None)
    slots = [name for cls in type(value).__mro__
             for name in _slot_names(cls) if name not in ("__dict__", "__weakref__")]
    if type(attrs) is not dict and not slots:
        return None
    out = list(attrs.items()) if type(attrs) is dict else []
    missing = object()
    for name in slots:
        v = getattr(value, name, missing)
        if v is not missing:
            out.append((name, v))
    return out


def _slot_names(cls) -> tuple:
    slots = cls.__dict__.get("__slots__", ())
    return (slots,) if isinstance(slots, str) else tuple(slots)


def _state_key(value, seen: set):
    """A hashable key of an attribute's value, equal where the traced function would
    read the same."""
    t = type(value)
    if t in _SIMPLE:
        return (t, value)
    if t is float or t is complex:
        return (t, float_key(value))
    if isinstance(value, np.ndarray):
        return (t, value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, np.generic):
        return (t, value.tobytes())
    if isinstance(value, (tuple, list)):
        return (t, tuple(_state_key(v, seen) for v in value))
    if isinstance(value, dict):
        return (t, tuple((_state_key(k, seen), _state_key(v, seen)) for k, v in value.items()))
    if isinstance(value, (set, frozenset)):
        return (t, frozenset(_state_key(v, seen) for v in value))
    if isinstance(value, collections.deque):
        return (t, value.maxlen, tuple(_state_key(v, seen) for v in value))
    if isinstance(value, (bytearray, array.array)):
        return (t, getattr(value, "typecode", None), bytes(value))
    if id(value) not in seen:
        state = object_state(value, seen)
        if state is not None:
            return state
    try:
        hash(value)
    except TypeError:
        return _Same(value)
    return value if _defines_eq(t) else _Same(value)


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made at run time, not compiled in
_POINTER = 8


_LAYOUTS: weakref.WeakKeyDictionary[type, bool] = weakref.WeakKeyDictionary()


def _python_layout(t: type) -> bool:
    """Whether all of ``t``'s instance state lies in its attributes: no class it derives
    from (but ``object``) keeps state in C, as ``random.Random``, ``deque`` or an
    exception do."""
    known = _LAYOUTS.get(t)
    if known is None:
        known = _LAYOUTS[t] = all(_python_class(cls) for cls in t.__mro__[:-1])
    return known


def _python_class(cls: type) -> bool:
    base = cls.__base__
    if not cls.__flags__ & _HEAP_TYPE or base is None:
        return False
    # a class statement adds a pointer per slot, and one each for `__dict__` and
    # `__weakref__`; more is state kept in C
    return cls.__basicsize__ - base.__basicsize__ <= _POINTER * (len(_slot_names(cls)) + 2)


def _defines_eq(t: type) -> bool:
    """Whether ``t`` compares by more than identity."""
    eq: object = t.__eq__
    return eq is not object.__eq__
