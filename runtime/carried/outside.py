"""What a staged block can change outside its own state, and how to undo it.

A staged `if` traces both its branches, and a staged loop traces its body
once: their Python runs once while tracing, where Python runs it on the
branch it takes, or on every iteration. A counter in an enclosing function's
cell (``nonlocal``), a global, an object's attribute, a list a helper appends
to would change once, silently. ``OuterState`` snapshots, before the block is
traced, what its functions can reach; ``changed()`` names what the trace
changed, and ``restore()`` puts it back, so that a loop with a static trip
count can run as Python from where it was.

What is watched, starting from the block's functions and its state, and
following every function they reach (a helper called through a global, a
closure, an object's method; converted or not, unless a library's):

=====================================  =========================================
reached                                snapshotted
=====================================  =========================================
a closure cell                         its contents
a global, a module's or a class's      its binding
attribute that the code names
an object (a user class's, or one      its attributes, and what they hold
the block's code names itself)
list, dict, ``OrderedDict``,           a shallow copy, and what the items hold
``defaultdict``, ``Counter``,
``deque``, ``set``
``bytearray``, ``array.array``,        a copy of the data
NumPy array
an iterator, a random generator        its position (a builtin iterator's as
                                       its ``__reduce__`` tells it: ``cycle``,
                                       ``zip``, ``map``, a dict's)
=====================================  =========================================

An iterator that only a generator's frame or a builtin's ``__reduce__``
places cannot be put back where it was: a loop over a static range that
reaches one runs as Python (``can_rewind_all``).

The walk is bounded (``WATCH_LIMIT`` values, ``FUNCTION_LIMIT`` functions):
what lies further is not watched. JAX arrays are immutable and never copied.
"""

from __future__ import annotations

import array
import collections
import collections.abc
import dis
import functools
import io
import pickle
import random
import types
import warnings
from typing import Any, Callable, NamedTuple

import numpy as np

from ..core.values import is_array
from ..functions.calls import SKIP_PACKAGES, converted_of
from .in_place import mutable_node
from .state import attribute_values, restore_attributes

WATCH_LIMIT = 5000
FUNCTION_LIMIT = 200

_MISSING = object()


class _Kind(NamedTuple):
    """How to snapshot, compare, restore and look into one kind of container."""

    name: str
    copy: Callable[[Any], Any]
    changed: Callable[[Any, Any], bool]
    restore: Callable[[Any, Any], None]
    children: Callable[[Any], Any]  # of the snapshot: the values it holds


def _same_items(now, before) -> bool:
    return len(now) == len(before) and all(a is b for a, b in zip(now, before))


def _restore_dict(d, before) -> None:
    d.clear()
    for k, v in before:
        d[k] = v


def _restore_deque(d, before) -> None:
    d.clear()
    d.extend(before)


def _restore_set(s, before) -> None:
    s.clear()
    s.update(before)


def _restore_bytes(b, before) -> None:
    b[:] = before


def _copy_ndarray(a):
    return a.copy() if a.dtype.hasobject else a.tobytes()


def _ndarray_changed(a, before) -> bool:
    if a.dtype.hasobject:  # by identity of the objects held (the copy keeps them alive)
        return a.shape != before.shape or any(x is not y for x, y in zip(a.flat, before.flat))
    return a.tobytes() != before


def _restore_ndarray(a, before) -> None:
    if a.dtype.hasobject:
        a[...] = before
    else:
        a[...] = np.frombuffer(before, a.dtype).reshape(a.shape)


def _copy_array(a):
    return a.tobytes()


def _restore_array(a, before) -> None:
    a[:] = array.array(a.typecode, before)


def _nothing(_):
    return ()


# first match wins (a `Counter` is a dict, a `defaultdict` too)
_KINDS: tuple[tuple[type, _Kind], ...] = (
    (list, _Kind("list", lambda c: list(list.__iter__(c)),
                 lambda c, b: not _same_items(list(list.__iter__(c)), b),
                 lambda c, b: list.__setitem__(c, slice(None), b), lambda b: b)),
    (dict, _Kind("dict", lambda c: list(c.items()),
                 lambda c, b: not (len(c) == len(b) and all(
                     k is k0 and v is v0 for (k, v), (k0, v0) in zip(c.items(), b))),
                 _restore_dict, lambda b: [v for _, v in b])),
    (collections.deque, _Kind("deque", list, lambda c, b: not _same_items(list(c), b),
                              _restore_deque, lambda b: b)),
    (set, _Kind("set", set, lambda c, b: {id(x) for x in c} != {id(x) for x in b},
                _restore_set, lambda b: b)),
    (bytearray, _Kind("bytearray", bytes, lambda c, b: c != b, _restore_bytes, _nothing)),
    (array.array, _Kind("array", _copy_array, lambda c, b: c.tobytes() != b, _restore_array,
                        _nothing)),
    (np.ndarray, _Kind("ndarray", _copy_ndarray, _ndarray_changed, _restore_ndarray,
                       lambda b: b.flat if isinstance(b, np.ndarray) else ())),
)
_KIND_OF: dict[type, _Kind | None] = {}


def _kind(t: type) -> _Kind | None:
    try:
        return _KIND_OF[t]
    except KeyError:
        found = _KIND_OF[t] = next((k for base, k in _KINDS if issubclass(t, base)), None)
        return found


# values that hold nothing a block could change
_ATOMS = frozenset({int, float, bool, complex, str, bytes, type(None), range, slice,
                    type(Ellipsis), frozenset, np.dtype})
_NOT_OBJECTS = (types.BuiltinFunctionType, types.ModuleType, type, types.CodeType,
                types.GetSetDescriptorType, types.MemberDescriptorType, property,
                staticmethod, classmethod)
# methods a class's code runs without the caller naming them
_IMPLICIT = ("__init__", "__post_init__", "__call__", "__getitem__", "__setitem__",
             "__iter__", "__next__", "__enter__", "__exit__", "__getattr__")


def _library(module_name: str | None) -> bool:
    return (module_name or "").split(".")[0] in SKIP_PACKAGES


def user_function(fn: types.FunctionType) -> bool:
    g = fn.__globals__
    return not _library(g.get("__name__") if g else fn.__module__)


def user_class(t: type) -> bool:
    """A class of the user's, or a library's plain record of the user's values."""
    return (t.__module__, t.__qualname__) in _RECORDS or not _library(t.__module__)


_RECORDS = {("types", "SimpleNamespace"), ("argparse", "Namespace")}


@functools.lru_cache(maxsize=4096)
def _code_names(code: types.CodeType) -> tuple[tuple[str, ...], frozenset]:
    """The global and attribute names ``code`` (and the code nested in it) uses,
    sorted, and those it assigns as globals."""
    names, stored = set(code.co_names), set()
    for ins in dis.get_instructions(code):
        if ins.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            stored.add(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            inner, inner_stored = _code_names(const)
            names.update(inner)
            stored |= inner_stored
    return tuple(sorted(names)), frozenset(stored)


def _with_wrapped(fns):
    """The block's functions, and the functions their closures hold (the runtime's
    own wrappers: ``lambda *s: body(item, *s)``), whose cells are the block's too."""
    for fn in fns:
        yield fn
        if not fn.__globals__.get("__name__", "").startswith("autograph."):
            continue  # a user's function: a function in its closure has cells of its own
        for cell in fn.__closure__ or ():
            try:
                inner = cell.cell_contents
            except ValueError:
                continue
            if isinstance(inner, types.FunctionType):
                yield inner


def _where(where) -> str:
    """``where`` (a chain of ``(parent, step)``) as the expression that reaches it."""
    steps = []
    while where is not None:
        where, step = where
        steps.append(step)
    return "".join(reversed(steps))


class OuterState:
    """What a staged block's functions can reach outside its state: snapshotted, so
    that ``changed()`` can say what tracing the block changed and ``restore()`` undo it.

    ``fns`` are the block's functions (a loop's body and test, an `if`'s branches),
    ``values`` the state it is given (its lists and dicts are its own, restored but
    not watched; other objects in it are watched), and ``carried`` the names of that
    state: a closure cell of one of them is the block's own variable (``nonlocal x``
    for an ``x`` a closure reads), not an effect, and so is one of a list the
    function only appends to (``dead=`` of the block's operator; see
    ``analysis.dead_lists``). ``owned`` are the ids of the objects whose attributes
    the block carries (see ``runtime.attributes``): restored, but not watched. With
    ``in_place``, the block runs on the very lists and dicts of ``values`` (an
    `if`'s branches, see ``in_place.run_in_place``): another name for one of them
    sees what the block does to it, as in Python, so it is not watched either.
    """

    def __init__(self, fns, values=(), carried=(), owned: frozenset = frozenset(),
                 in_place: bool = False):
        fns = [fn for fn in fns if isinstance(fn, types.FunctionType)]
        self._own = {id(cell) for fn in _with_wrapped(fns)
                     for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ())
                     if name in carried}
        self.cells: list[tuple[Any, Any, str]] = []  # (cell, contents, variable)
        self.bindings: list[tuple[Any, str, Any]] = []  # (globals dict or class, name, value)
        self.objects: list[tuple[Any, dict, Any]] = []  # (object, its attributes, where)
        self.containers: list[tuple[Any, _Kind, Any, Any]] = []  # (container, kind, copy, where)
        self.hidden: list[tuple[Any, Any]] = []  # (iterator or generator, its position)
        self.carried: list[tuple[Any, _Kind, Any]] = []  # the block's own lists and dicts
        self._seen: set[int] = set()
        self._budget = WATCH_LIMIT
        self._queue: list[types.FunctionType] = []
        self._functions = 0
        self._names: set[str] = set(_IMPLICIT)
        self._spaces: list[tuple[Any, set, Any]] = []  # (module or class, names looked up, where)
        self._walked: set[int] = set()
        self._carried_ids: dict[int, Any] = {}  # the block's own lists and dicts: where
        self._owned = owned
        self._in_place = in_place

        # a value the block is given but does not hand back (`s` of `s.add(1)`) is named
        # by the block function's parameter it arrives as
        params: tuple = ()
        if fns:
            code = fns[0].__code__
            params = code.co_varnames[:code.co_argcount]
        for i, value in enumerate(values):
            label = (carried[i] if i < len(carried) else params[i] if i < len(params)
                     else f"<input {i}>")
            self._state(value, (None, label))
        self._queue.extend(reversed(fns))
        self._drain()

    # -- the walk -----------------------------------------------------------

    def _state(self, value, where) -> None:
        """The block's own state: lists and dicts restored only, other objects watched.

        A list of the state that the block's code also reaches otherwise (``b = a``
        carried, ``a`` read through a closure) is watched as well, unless the block
        runs in place: written back after the block, it changes where a read
        through the other name saw it unchanged during the block."""
        if mutable_node(value):
            if id(value) in self._carried_ids:
                return
            self._carried_ids[id(value)] = where
            if self._in_place:
                self._seen.add(id(value))
            kind = _kind(type(value))
            assert kind is not None
            snap = kind.copy(value)
            self.carried.append((value, kind, snap))
            items = value.items() if isinstance(value, dict) else enumerate(list.__iter__(value))
            for k, child in list(items):
                self._state(child, (where, f"[{k!r}]"))
        elif type(value) is tuple or isinstance(value, tuple) and hasattr(value, "_fields"):
            for k, child in enumerate(value):
                self._state(child, (where, f"[{k}]"))
        elif not isinstance(value, types.FunctionType):
            self._note(value, where, direct=True)

    def _note(self, value, where, direct: bool = False) -> None:
        t = type(value)
        if t in _ATOMS or self._budget <= 0 or id(value) in self._seen:
            return
        if is_array(value) and not isinstance(value, np.ndarray):
            return  # JAX arrays and NumPy scalars cannot change
        self._seen.add(id(value))
        self._budget -= 1
        hidden = _hidden_state(value)
        if hidden is not None:  # an iterator or a random generator
            self.hidden.append((value, hidden))
            return
        kind = _kind(t)
        if kind is not None:
            if isinstance(value, np.ndarray) and (not value.flags.writeable
                                                  or isinstance(value, np.memmap)):
                return  # read-only, or a file's contents
            snap = kind.copy(value)
            self.containers.append((value, kind, snap, where))
            if isinstance(value, dict):
                for k, child in snap:
                    self._note(child, (where, f"[{k!r}]"))
            else:
                for k, child in enumerate(kind.children(snap)):
                    self._note(child, (where, f"[{k}]"))
            return
        if isinstance(value, tuple):
            for k, child in enumerate(value):
                self._note(child, (where, f"[{k}]"))
        elif isinstance(value, types.FunctionType):
            if user_function(value):
                self._queue.append(value)
            else:  # made by `autograph.convert`: the user's converted function
                inner = converted_of(value)
                if inner is not None:
                    self._note(inner, where)
        elif isinstance(value, (types.MethodType, types.BuiltinMethodType)):
            self._note(getattr(value, "__func__", None), where)
            self._note(value.__self__, where)  # `add = LOG.append`
        elif isinstance(value, functools.partial):
            for part in (value.func, *value.args, *value.keywords.values()):
                self._note(part, where)
        elif isinstance(value, types.ModuleType):
            if not _library(value.__name__):
                self._spaces.append((value, set(), where))
        elif isinstance(value, type):
            if user_class(value):
                self._spaces.append((value, set(), where))
        elif not isinstance(value, _NOT_OBJECTS):
            attrs = attribute_values(value)
            user = user_class(t)
            if attrs is not None and (direct or user):
                self.objects.append((value, attrs, where))
                if user:
                    for k, child in list(attrs.items()):
                        self._note(child, (where, f".{k}"))
            if user and (t.__module__, t.__qualname__) not in _RECORDS:
                self._note(t, where)  # its methods the code calls

    def _function(self, fn: types.FunctionType) -> None:
        """Watches what ``fn`` reaches: its globals, its closure, and the functions in them."""
        if self._functions >= FUNCTION_LIMIT:
            return
        self._functions += 1
        code = fn.__code__
        names, stored = _code_names(code)
        self._names.update(names)
        g = fn.__globals__
        for name in names:
            value = g.get(name, _MISSING)
            if value is _MISSING:
                if name in stored:
                    self.bindings.append((g, name, _MISSING))
                continue
            self.bindings.append((g, name, value))
            self._note(value, (None, name), direct=True)
        for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
            if id(cell) in self._own or id(cell) in self._seen:
                continue
            self._seen.add(id(cell))
            try:
                contents = cell.cell_contents
            except ValueError:
                contents = _MISSING
            self.cells.append((cell, contents, name))
            if contents is not _MISSING:
                self._note(contents, (None, name), direct=True)

    def _drain(self) -> None:
        """Walks the functions found, and the names they use in the modules and classes
        found, until nothing new turns up."""
        while True:
            while self._queue:
                fn = self._queue.pop()
                if id(fn) in self._walked:
                    continue
                self._walked.add(id(fn))
                self._function(fn)
            grew = False
            for space, looked, where in self._spaces:
                todo = self._names - looked
                if not todo:
                    continue
                grew = True
                looked |= todo
                for name in sorted(todo):
                    self._member(space, name, where)
            if not grew and not self._queue:
                return

    def _member(self, space, name: str, where) -> None:
        """``space.name`` (a module's global, a class's attribute), watched."""
        if isinstance(space, types.ModuleType):
            value = space.__dict__.get(name, _MISSING)
            if value is not _MISSING:
                self.bindings.append((space.__dict__, name, value))
                self._note(value, (where, f".{name}"))
            return
        for klass in space.__mro__:
            if klass is object or not user_class(klass):
                continue
            value = klass.__dict__.get(name, _MISSING)
            if value is _MISSING:
                continue
            self.bindings.append((klass, name, value))
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property):
                for part in (value.fget, value.fset):
                    self._note(part, where)
            else:
                self._note(value, (where, f".{name}"))
            return

    # -- after the block ----------------------------------------------------

    def changed(self) -> str | None:
        """What changed since the snapshot, in words, or None."""
        for cell, before, name in self.cells:
            try:
                now = cell.cell_contents
            except ValueError:
                now = _MISSING
            if now is not before:
                return f"`{name}`, a variable of an enclosing function (`nonlocal`)"
        for space, name, before in self.bindings:
            if _binding(space, name) is not before:
                if isinstance(space, type):
                    return f"class attribute `{space.__name__}.{name}`"
                return f"the global `{name}`"
        for obj, before, where in self.objects:
            if id(obj) in self._owned:
                continue  # the block carries its attributes
            now = attribute_values(obj) or {}
            for key in sorted(set(before) | set(now), key=str):
                if before.get(key, _MISSING) is not now.get(key, _MISSING):
                    return (f"attribute `{key}` of a `{type(obj).__name__}` object, "
                            f"`{_where(where)}`")
        for container, kind, before, where in self.containers:
            if kind.changed(container, before):
                own = self._carried_ids.get(id(container))
                if own is not None:  # written back: the body read it unchanged meanwhile
                    return (f"`{_where(own)}`, a `{type(container).__name__}` it also reads as "
                            f"`{_where(where)}` (one object), where a staged body reads it as "
                            f"it was before the loop")
                return f"a `{type(container).__name__}` it reads, `{_where(where)}`"
        for value, before in self.hidden:
            if _hidden_state(value) != before:
                return f"the position of a `{type(value).__name__}` it draws from"
        return None

    def can_rewind_all(self) -> bool:
        """Whether every iterator the body reaches could be put back (no generator, no
        builtin iterator but those of lists, tuples, strings, bytes and ranges)."""
        return all(before[0] not in _FORWARD_ONLY for _, before in self.hidden)

    def forward_only(self) -> str | None:
        """What the body reaches that ``can_rewind_all`` cannot put back, in words."""
        return next((f"a `{type(value).__name__}` iterator" for value, before in self.hidden
                     if before[0] in _FORWARD_ONLY), None)

    def restore(self) -> None:
        """Puts back what the snapshot saw: cells, bindings, attributes, containers
        (the block's own lists and dicts too), iterators' positions."""
        for cell, before, _ in self.cells:
            if before is _MISSING:
                try:
                    del cell.cell_contents
                except ValueError:
                    pass
            else:
                cell.cell_contents = before
        for space, name, before in reversed(self.bindings):
            if _binding(space, name) is not before:
                _rebind(space, name, before)
        for obj, before, _ in self.objects:
            restore_attributes(obj, before)
        for container, kind, before, _ in self.containers:
            if kind.changed(container, before):
                kind.restore(container, before)
        for container, kind, before in self.carried:
            if kind.changed(container, before):
                kind.restore(container, before)
        for value, before in self.hidden:
            if _hidden_state(value) != before:
                _rewind(value, before)


def _binding(space, name: str):
    if isinstance(space, type):
        return space.__dict__.get(name, _MISSING)
    return space.get(name, _MISSING)


def _rebind(space, name: str, value) -> None:
    if isinstance(space, type):
        if value is _MISSING:
            delattr(space, name)
        else:
            setattr(space, name, value)
    elif value is _MISSING:
        space.pop(name, None)
    else:
        space[name] = value


# iterators whose position `__reduce__` gives and `__setstate__` sets
_ITERABLES: tuple[Any, ...] = ([], (), "", range(1), b"", bytearray())
_SEEKABLE: tuple[type, ...] = tuple({type(iter(x)) for x in _ITERABLES})


def _hidden_state(value, depth: int = 8):
    """The position of an iterator, generator or random generator (state a call
    such as ``next(it)`` or ``rng.random()`` moves without assigning anything), or
    None for any other value. ``depth`` bounds how far the iterators a builtin one
    draws from are followed (``zip(map(...))``)."""
    if isinstance(value, _SEEKABLE):
        return ("seek", value.__reduce__()[-1])
    if isinstance(value, types.GeneratorType):
        frame = value.gi_frame
        if frame is None:
            return ("gen", None)
        # where it stopped, and what its variables hold: a generator that yields at one
        # place each time (`(x for x in xs)`) moves only its variables
        return ("gen", frame.f_lasti, _frame_values(frame, depth))
    if isinstance(value, random.Random):
        return ("random", value.getstate())
    if isinstance(value, np.random.RandomState):
        state: Any = value.get_state()
        return ("numpy", np.asarray(state[1]).tobytes(), *state[2:])
    if isinstance(value, np.random.Generator):
        return ("generator", pickle.dumps(value.bit_generator.state))
    if _builtin_iterator(value):
        return ("iter", _reduced(value, depth))
    return None


# the kinds of `_hidden_state` that cannot be put back
_FORWARD_ONLY = ("gen", "iter")


def _builtin_iterator(value) -> bool:
    """An iterator whose position lies in a builtin's C state (``itertools.cycle``,
    ``zip``, ``map``, a dict's iterator); not a user class's (its attributes hold its
    position, watched as an object's) nor a file (its position is the file's)."""
    t = type(value)
    return (isinstance(value, collections.abc.Iterator) and not isinstance(value, io.IOBase)
            and not isinstance(getattr(t, "__next__", None), types.FunctionType))


class _Same:
    """One object in a position, equal only to a record of the very same object."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


def _frame_values(frame, depth: int) -> tuple:
    """A suspended generator's variables: numbers and strings by value, the iterators
    it draws from by their own positions, anything else by identity."""
    out: list[tuple] = []
    for name, x in sorted(dict(frame.f_locals).items()):
        if type(x) in _ATOMS:
            out.append((name, type(x), repr(x)))
            continue
        hidden = _hidden_state(x, depth - 1) if depth > 0 else None
        out.append((name, _Same(x) if hidden is None else hidden))
    return tuple(out)


def _reduced(value, depth: int):
    """The position of a builtin iterator, from what its ``__reduce__`` gives: the
    iterators it draws from by their own positions, lists and tuples by the objects
    they hold, anything else by identity. None where it gives nothing (no
    ``__reduce__``): a move then goes unseen."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # itertools' own, 3.12
            parts = value.__reduce__()[1:]
    except Exception:  # noqa: BLE001 - not picklable: nothing to say where it is
        return None

    def record(x):
        if type(x) in _ATOMS:
            return (type(x), repr(x))
        if isinstance(x, (list, tuple)):
            return tuple(record(c) for c in x)
        hidden = _hidden_state(x, depth - 1) if depth > 0 else None
        return _Same(x) if hidden is None else hidden

    return record(parts)


def _rewind(value, before) -> None:
    """Puts an iterator or random generator back at ``before`` (a generator or a builtin
    iterator such as ``itertools.cycle`` cannot be: loops reaching one run as Python
    from the start, see ``can_rewind_all``)."""
    kind = before[0]
    if kind in _FORWARD_ONLY:
        return
    if kind == "seek":
        value.__setstate__(before[1])
    elif kind == "random":
        value.setstate(before[1])
    elif isinstance(value, np.random.RandomState):
        value.set_state(("MT19937", np.frombuffer(before[1], np.uint32), *before[2:]))
    else:
        value.bit_generator.state = pickle.loads(before[1])
