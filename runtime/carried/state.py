"""Flattening, comparing and casting the state that branches and loops pass on.

State is a tuple of values, one per variable name. Each value is a pytree;
its leaves are *arrays* (JAX or NumPy arrays and scalars, tracers), Python
*numbers*, ``Undefined`` markers, or *static* Python objects (strings,
functions, anything else), which staged code cannot carry and so must be
the same on every path.
"""

from __future__ import annotations

import functools
import math
import types
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from autograph import jax_internals

from ..core import intervals, key_order
from ..core.values import is_array, is_python_number, is_undefined, iterator_leaf

tree_util = jax.tree_util



def flatten(value):
    """(treedef, leaves) of ``value``; ``Undefined`` markers and iterators are leaves. The treedef
    unflattens each dict with its keys in ``value``'s order (see ``key_order``)."""
    leaves, treedef = tree_util.tree_flatten(key_order.ordered(value, _leaf), is_leaf=_leaf)
    return treedef, leaves


def _leaf(x) -> bool:
    return is_undefined(x) or iterator_leaf(x)


def is_carryable(leaf) -> bool:
    return is_array(leaf) or is_python_number(leaf)


def _dtype(d):
    """``d`` as a NumPy dtype; JAX's extended dtypes (typed PRNG keys) as they are."""
    if jax.dtypes.issubdtype(d, jax.dtypes.extended):
        return d
    return np.dtype(d)


class Aval(NamedTuple):
    """What staged code knows of a carryable leaf: shape, dtype and weak type."""

    shape: tuple
    dtype: Any  # a NumPy dtype, or one of JAX's extended dtypes (typed PRNG keys)
    weak: bool  # typed like a Python scalar: promotes to the other operand's dtype
    number: Any = None  # the Python number the leaf is, if it is one (see `promote`)
    # for a tracer that is a Python number eagerly (``intervals.python_number``), the
    # range of that number
    span: tuple | None = None


def aval_of(leaf) -> Aval:
    """The ``Aval`` of a carryable leaf (a Python number is a weakly typed scalar)."""
    if is_python_number(leaf):
        return Aval((), jnp.result_type(leaf), True, leaf)
    weak = bool(getattr(leaf, "weak_type", False))
    return Aval(tuple(np.shape(leaf)), _dtype(leaf.dtype), weak, None,
                intervals.python_number(leaf) if weak else None)


def convert(x, dtype, weak: bool):
    """Casts ``x`` to ``dtype``, weakly typed when ``weak`` (like a Python scalar)."""
    dtype = _dtype(dtype)
    if not isinstance(dtype, np.dtype):  # an extended dtype: nothing to cast
        return x
    return jax_internals.convert_element_type(x, dtype, weak)


def as_array(leaf, dtype=None):
    """A carryable leaf as a JAX array, keeping Python scalars weakly typed; a Python
    number goes straight to ``dtype`` where given (``3_000_000_000`` to uint32, which
    holds it where int32, its own dtype, does not)."""
    if is_python_number(leaf):
        if dtype is not None and isinstance(dtype, np.dtype) and holds(dtype, leaf):
            return jnp.asarray(leaf, dtype)
        return jnp.asarray(leaf)
    return leaf if isinstance(leaf, (jax.Array, jax.core.Tracer)) else jnp.asarray(leaf)


_WEAK_STANDINS = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def _promotion_operand(dtype, weak: bool):
    # JAX's rules treat a weakly typed value like a Python scalar of its kind.
    return _WEAK_STANDINS.get(np.dtype(dtype).kind, dtype) if weak else np.dtype(dtype)


def promote(a: Aval, b: Aval) -> tuple[Any, bool]:
    """Joint (dtype, weak) of two avals under JAX's promotion rules, weak types included.

    A Python number keeps its value: where the dtype JAX's rules give cannot
    hold it (``-1`` with uint8, ``1000`` with int8, ``1e5`` with float16), the
    result is the smallest dtype that holds both sides (int16, int16, float32),
    and strongly typed. A number that fits keeps JAX's rules (``5`` with int8:
    int8). So does a tracer that is a Python number eagerly, over its whole range
    (``Aval.span``): one a staged `if` or loop made of Python numbers. A Python int
    past the whole numbers float16 or bfloat16 count exactly widens them too (an
    index 2127 against float16: float32).

    Raises:
      NumberOverflow: an integer that no enabled dtype holds (beyond int32 while
        ``jax_enable_x64`` is off), as ``jnp.int32(1) + 2**40`` raises.
    """
    da, wa, db, wb = a.dtype, a.weak, b.dtype, b.weak
    if not (isinstance(da, np.dtype) and isinstance(db, np.dtype)):
        return (da, wa and wb) if da == db else (jnp.result_type(da, db), False)
    # (weak where JAX's rules make it so: a strong int8 and a Python float give a weak
    # float32, as `jnp.where(c, jnp.int8(3), 1.5)` does)
    joint, weak = jax.dtypes.result_type(_promotion_operand(da, wa), _promotion_operand(db, wb),
                                         return_weak_type_flag=True)
    dtype = np.dtype(joint)
    for number in (a.number, b.number, *(a.span or ()), *(b.span or ())):
        if number is not None and (not holds(dtype, number) or _rounds(dtype, number)):
            dtype, weak = _widened(dtype, number), False
    return dtype, weak


def _rounds(dtype, number) -> bool:
    """Whether the Python int ``number`` lies past the whole numbers a 16-bit float dtype
    counts exactly (2048 for float16, 256 for bfloat16): ``return i`` on one branch
    and a float16 array on the other would round the index (2127 to 2128)."""
    if type(number) is not int:
        return False
    dtype = np.dtype(dtype)
    if not jnp.issubdtype(dtype, jnp.floating) or dtype.itemsize > 2:
        return False
    return abs(number) > 2 ** (int(jnp.finfo(dtype).nmant) + 1)


def holds(dtype, number) -> bool:
    """Whether ``dtype`` holds the Python number ``number`` without wrapping around or
    overflowing to infinity (rounding a float to fewer digits is fine)."""
    dtype = np.dtype(dtype)
    if isinstance(number, bool) or dtype.kind not in "iufc":
        return True
    if dtype.kind in "iu":
        info = jnp.iinfo(dtype)
        return isinstance(number, int) and int(info.min) <= number <= int(info.max)
    largest = float(jnp.finfo(dtype).max)
    parts = (number.real, number.imag) if isinstance(number, complex) else (number,)
    # inf and nan are held as themselves
    return all(abs(p) <= largest or isinstance(p, float) and not math.isfinite(p)
               for p in parts)


# wider dtypes for a Python number that ``dtype`` cannot hold, tried in order
_WIDER = {"u": (np.uint16, np.uint32, np.uint64), "i": (np.int8, np.int16, np.int32, np.int64),
          "f": (np.float32, np.float64), "c": (np.complex64, np.complex128)}


def _widened(dtype: np.dtype, number) -> np.dtype:
    """The smallest dtype JAX enables that holds ``dtype``'s values (as ``jnp.promote_types``
    joins two strong dtypes) and ``number``."""
    kind = "f" if jnp.issubdtype(dtype, jnp.floating) else dtype.kind  # bfloat16's is "V"
    if kind == "u" and number < 0:
        kind = "i"
    for wider in _WIDER[kind]:
        candidate = np.dtype(jax.dtypes.canonicalize_dtype(jnp.promote_types(dtype, wider)))
        if holds(candidate, number) and _holds_dtype(candidate, dtype):
            return candidate
    if isinstance(number, int):
        raise NumberOverflow(number, dtype)
    return dtype  # a float past float32's range with 64-bit types off: JAX's inf


def _holds_dtype(wide: np.dtype, narrow: np.dtype) -> bool:
    """Whether every value of the integer dtype ``narrow`` is one of ``wide`` (uint32's are
    not int32's: with 64-bit types off, no integer dtype holds them and -1)."""
    if narrow.kind not in "iu" or wide.kind not in "iu":
        return True
    a, b = np.iinfo(narrow), np.iinfo(wide)
    return b.min <= a.min and a.max <= b.max


class NumberOverflow(OverflowError):
    """A Python int that no enabled dtype holds (``number``), met with ``dtype``."""

    def __init__(self, number: int, dtype: np.dtype):
        super().__init__(f"Python int {number} too large to convert to {dtype.name}")
        self.number, self.dtype = number, dtype


def float_key(value: float | complex) -> tuple:
    """A float or complex by value and sign, NaN equal to NaN (``==`` says neither).

    ``0.0 == -0.0``, yet ``copysign`` and ``1 / x`` tell them apart; and
    ``nan != nan``, yet one NaN computes what another does.
    """
    if isinstance(value, complex):
        return (float_key(value.real), float_key(value.imag))
    if value != value:
        return ("nan",)
    return (value, math.copysign(1.0, value))


def same_static(a, b) -> bool:
    """Whether two Python values are the same constant (floats by value and sign)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if type(a) in (float, complex):
        return float_key(a) == float_key(b)
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


def object_snapshot(values):
    """Attribute values of the plain objects among ``values``, to detect mutation.

    Staged branches and loop bodies run once while tracing: an attribute
    assigned there would keep a traced value, silently.
    """
    snap, seen = [], set()
    # the values and what their lists, dicts and tuples hold too: a registered
    # dataclass is a pytree node, not a leaf
    for leaf in held(values) + key_order.leaves(list(values), is_undefined):
        attrs = attribute_values(leaf) if _plain_object(leaf) else None
        if attrs is not None and id(leaf) not in seen:
            seen.add(id(leaf))
            snap.append((leaf, attrs))
    return snap


def held(values) -> list:
    """``values``, and what the lists, dicts and tuples among them hold, in turn."""
    out, stack, seen = [], list(values), set()
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, (list, tuple)):
            stack.extend(list.__iter__(x) if isinstance(x, list) else x)
        elif isinstance(x, dict):
            stack.extend(x.values())
        else:
            out.append(x)
    return out


def mutated_attribute(snapshot):
    """``(object, attribute)`` of the first attribute rebound since ``snapshot``."""
    for obj, before in snapshot:
        now = attribute_values(obj) or {}
        for key in set(before) | set(now):
            if before.get(key, MISSING) is not now.get(key, MISSING):
                return obj, key
    return None


MISSING = object()  # an attribute an object does not have


def attribute_values(obj) -> dict | None:
    """A copy of ``obj``'s instance attributes: its ``__dict__`` and the ``__slots__``
    it has set; None for an object that has neither (a number, a string)."""
    attrs = getattr(obj, "__dict__", None)
    slots = _slots(type(obj))
    if type(attrs) is not dict:
        if not slots:
            return None
        attrs = {}
    out = dict(attrs)
    for name, slot in slots:
        try:
            out[name] = slot.__get__(obj)
        except AttributeError:  # a slot not set yet
            pass
    return out


def set_attribute(obj, name: str, value) -> None:
    """``obj.name = value`` into its ``__dict__`` or slot, past ``__setattr__`` and
    properties: the attribute's value as the object keeps it."""
    slot = dict(_slots(type(obj))).get(name)
    if slot is not None:
        slot.__set__(obj, value)
    else:
        obj.__dict__[name] = value


def delete_attribute(obj, name: str) -> None:
    """``del obj.name`` from its ``__dict__`` or slot, if it is set."""
    slot = dict(_slots(type(obj))).get(name)
    if slot is not None:
        try:
            slot.__delete__(obj)
        except AttributeError:
            pass
    else:
        obj.__dict__.pop(name, None)


def restore_attributes(obj, before: dict) -> None:
    """Puts ``obj``'s attributes back to ``before`` (an ``attribute_values``)."""
    now = attribute_values(obj) or {}
    for name in now.keys() - before.keys():
        delete_attribute(obj, name)
    for name, value in before.items():
        if now.get(name, MISSING) is not value:
            set_attribute(obj, name, value)


def _slots(t: type) -> tuple:
    """``(attribute, member descriptor)`` of each slot the instances of ``t`` have."""
    found = _SLOTS.get(t)
    if found is None:
        found = _SLOTS[t] = _find_slots(t)
    return found


_SLOTS: dict[type, tuple] = {}


def _find_slots(t: type) -> tuple:
    out = []
    for klass in t.__mro__:
        names = klass.__dict__.get("__slots__", ())
        for name in (names,) if isinstance(names, str) else names:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = f"_{klass.__name__.lstrip('_')}{name}"  # a private name, mangled
            slot = klass.__dict__.get(name)
            if isinstance(slot, types.MemberDescriptorType):
                out.append((name, slot))
    return tuple(out)


def difference(a, b, path: str) -> str | None:
    """Where two pytrees differ in structure, in words; None if they do not.

    ``path`` names ``a`` and ``b`` (a variable name); the answer extends it,
    as in "`hist['x']` has 0 items vs 1".
    """
    from ..core.values import describe

    if type(a) is not type(b) and not (is_array(a) and is_array(b)):
        return f"`{path}` is {describe(a)} on one side and {describe(b)} on the other"
    if isinstance(a, dict):
        if set(a) != set(b):
            return f"`{path}` has keys {sorted(map(str, a))} vs {sorted(map(str, b))}"
        for k in a:
            d = difference(a[k], b[k], f"{path}[{k!r}]")
            if d:
                return d
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"`{path}` has {len(a)} items vs {len(b)}"
        fields = getattr(a, "_fields", None)
        for i, (x, y) in enumerate(zip(a, b)):
            d = difference(x, y, f"{path}.{fields[i]}" if fields else f"{path}[{i}]")
            if d:
                return d
        return None
    # annotated: jaxlib ships no stubs, and mypy would read PyTreeDef as an unknown type
    ta: tree_util.PyTreeDef = tree_util.tree_structure(a)
    tb: tree_util.PyTreeDef = tree_util.tree_structure(b)
    if ta != tb:
        ca, cb = tree_util.tree_leaves(a), tree_util.tree_leaves(b)
        if len(ca) != len(cb):
            return f"`{path}` has {len(ca)} array leaves vs {len(cb)}"
        return f"`{path}` differs in its static (non-array) fields: {ta} vs {tb}"
    return None


def _plain_object(value) -> bool:
    """An object whose attributes a body may set: not an array, function, class or
    module (a callable instance, such as a key generator with ``__call__``, counts)."""
    return not is_array(value) and not isinstance(value, _NOT_OBJECTS)


_NOT_OBJECTS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                types.BuiltinMethodType, types.ModuleType, type, functools.partial)
