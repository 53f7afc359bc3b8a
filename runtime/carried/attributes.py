"""Attributes a staged block assigns: carried like variables, set back on the object.

Python runs ``c.total += x`` in a loop body on every iteration, on the object
itself; staged, the body's Python runs once while tracing. So the attributes
that a staged `if` or loop assigns on the objects it reaches (a local, an
argument, ``self``, what their attributes hold: ``a.b.c``) are carried
through the block like its variables, named as written (``c.total``)::

    while c.total < x:          def body(*state, total):      # the state, and then
        c.total += 1.5    ->        c.total = total          #  the attribute
                                    c.total += 1.5
                                    return state, c.total
                                ... = while_stmt(test, body, (*state, c.total))
                                c.total = <its final value>

Which attributes: each traced call of a block's function watches the objects
(by identity: an alias ``o2 = o``, a method the body calls on ``self`` and a
helper handed the object all count); the attributes it assigns that are not
carried yet stop the trace, and the block is traced again carrying them.
Each call leaves the objects as it found them, so a branch not taken leaves
no trace: after the block each carried attribute is set to its final value
(for an `if`, the one of the branch taken).

An object that JAX flattens (a registered dataclass) and that the block
updates in place is handed through the block as itself, not rebuilt from its
leaves, so the name for it, its aliases and the caller's object stay one
object.

Refused, naming ``obj.attr`` (a ``BranchError`` in an `if`, otherwise a
``LoopStateError``): an attribute a loop creates (it has no value before the
loop); one that a branch of an `if` creates and the other leaves unset; a
deleted attribute; an attribute of an object whose class runs code when it is
assigned (a property with a setter, another data descriptor, ``__setattr__``);
an object both updated in place and replaced by another in the block.
Objects reached only through a global or a class stay outside state
(``runtime.outside``), and Flax NNX objects have their own lifting
(``runtime.objects``).
"""

from __future__ import annotations

import collections
import sys
import types
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

from autograph import errors, jax_internals

from ..core import jaxprs
from ..core.constructs import Construct
from ..core.values import (
    MaybeUndefined,
    Undefined,
    any_traced,
    describe,
    fail_at_run_time,
    is_array,
    is_undefined,
    staging,
)
from .outside import user_class, user_function
from .state import (
    MISSING,
    attribute_values,
    delete_attribute,
    held,
    restore_attributes,
    same_static,
    set_attribute,
)

# how far the walk for objects goes: objects and items looked at, attribute depth
_LOOK_LIMIT = 2000
_DEPTH = 6
# traces of one block, each carrying more attributes, before giving up
_ATTEMPTS = 16


class _Retrace(BaseException):
    """Stops tracing a block whose function assigned attributes not carried yet.

    A ``BaseException``, like ``GeneratorExit``: a signal to the block's driver
    (``carrying``), which handlers meant for errors met while tracing must not
    take for a failure to stage.
    """


class _Same:
    """Stands for an object handed through a block as itself: a static, hashable value."""

    __slots__ = ("k", "stands_for")

    def __init__(self, k: int, stands_for: str = "object"):
        self.k = k
        # in messages (`values.describe`): the object updated in place, by its class
        self.stands_for = f"the `{stands_for}` object itself, updated in place"

    def __eq__(self, other):
        return isinstance(other, _Same) and other.k == self.k

    def __hash__(self):
        return hash((_Same, self.k))

    def __repr__(self):
        return f"<object {self.k}>"


class _Owned:
    """An object whose attributes the block may carry, and the expression that reaches it."""

    __slots__ = ("obj", "label", "start")

    def __init__(self, obj, label: str, start: dict):
        self.obj, self.label, self.start = obj, label, start


def _plain(x) -> bool:
    """An instance of a user's class that has attributes, not a Flax NNX object."""
    if is_array(x) or isinstance(x, _NOT_OBJECTS) or not user_class(type(x)):
        return False
    nnx = sys.modules.get("flax.nnx")
    if nnx is not None:
        try:
            if nnx.graph.is_graph_node(x):
                return False
        except Exception:  # noqa: BLE001 - an object Flax cannot inspect is not its node
            pass
    return attribute_values(x) is not None


_NOT_OBJECTS = (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
                types.ModuleType, type)
_ATOMS = frozenset({int, float, bool, complex, str, bytes, type(None)})


def _owned_objects(values: Sequence[Any], fns: Sequence[Any], labels: Sequence[str]):
    """The objects a block reaches through its state (``values``, named by ``labels``)
    and its functions' closures, and through their attributes and containers: the
    nearest first, each named by the first expression that reaches it."""
    found: dict[int, _Owned] = {}
    seen: set[int] = {id(fn) for fn in fns}
    todo: collections.deque = collections.deque()

    def closure(fn: types.FunctionType, depth: int) -> None:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                todo.append((cell.cell_contents, name, depth))
            except ValueError:  # an empty cell
                continue

    todo.extend((value, label, 0) for value, label in zip(values, labels))
    for fn in fns:
        if isinstance(fn, types.FunctionType):
            closure(fn, 0)
    budget = _LOOK_LIMIT
    while todo and budget > 0:
        x, label, depth = todo.popleft()
        if type(x) in _ATOMS or id(x) in seen or depth > _DEPTH:
            continue
        seen.add(id(x))
        budget -= 1
        if isinstance(x, (list, tuple)):
            todo.extend((child, f"{label}[{k}]", depth + 1) for k, child in enumerate(
                list.__iter__(x) if isinstance(x, list) else x))
        elif isinstance(x, dict):
            todo.extend((child, f"{label}[{k!r}]", depth + 1) for k, child in list(x.items()))
        elif isinstance(x, types.FunctionType):
            if user_function(x):  # a helper: what its closure holds is the block's too
                closure(x, depth + 1)
        elif _plain(x):
            attrs = attribute_values(x)
            assert attrs is not None
            found[id(x)] = _Owned(x, label, attrs)
            todo.extend((child, f"{label}.{k}", depth + 1) for k, child in attrs.items())
    return found


def _input_labels(values, names, fns, leading: int) -> list[str]:
    """Names for the block's inputs: ``names``, then the parameters of its first function
    (an `if` takes some variables it does not hand out)."""
    labels = list(names)
    params: tuple = ()
    fn = next((f for f in fns if isinstance(f, types.FunctionType)), None)
    if fn is not None:
        code = fn.__code__
        params = code.co_varnames[leading:code.co_argcount]
    for j in range(len(labels), len(values)):
        labels.append(params[j] if j < len(params) else f"<input {j}>")
    return labels


def owned_ids(values, fns, names, *, leading: int = 0) -> frozenset:
    """The ids of the objects a block with these inputs carries the attributes of."""
    return frozenset(_owned_objects(values, fns, _input_labels(values, names, fns, leading)))


def find(values, fns, names, construct: Construct, *, leading: int = 0) -> Attributes | None:
    """What carries the attributes a block assigns, or None (no object to watch).

    ``values`` are the block's inputs (``names`` first), ``fns`` its functions,
    ``construct`` its words in messages (```if```, ```while` loop``).
    """
    labels = _input_labels(values, names, fns, leading)
    owned = _owned_objects(values, fns, labels)
    if not owned:
        return None
    return Attributes(list(owned.values()), tuple(values), labels, len(names), construct)


def free_value(name: str, fns):
    """The value of ``name``, a free variable of one of ``fns`` (a block's functions),
    as its closure holds it, or else a global of theirs; ``MISSING`` where there is
    none (or its cell is empty)."""
    functions = [fn for fn in fns if isinstance(fn, types.FunctionType)]
    for fn in functions:
        if name in fn.__code__.co_freevars:
            cell = (fn.__closure__ or ())[fn.__code__.co_freevars.index(name)]
            try:
                return cell.cell_contents
            except ValueError:  # an empty cell
                return MISSING
    for fn in functions:
        if name in fn.__globals__:
            return fn.__globals__[name]
    return MISSING


def path_value(value, path: Sequence[str]):
    """``value``'s attribute chain ``path`` as the objects hold it (no property runs);
    None where a link is missing."""
    for attr in path:
        if value is MISSING:
            break
        value = (attribute_values(value) or {}).get(attr, MISSING)
    return None if value is MISSING else value


class Iterations:
    """Whether the last iteration of a loop run as Python assigned a traced value to an
    attribute of the objects the loop reaches (``c.total += x``): the rest of the loop
    is then staged, as it is once a variable it carries is traced."""

    def __init__(self, values, fns, names, *, leading: int = 0):
        labels = _input_labels(values, names, fns, leading)
        self.objects = [o.obj for o in _owned_objects(values, fns, labels).values()]
        self.before: list = []

    def start(self) -> None:
        """Notes the attributes before an iteration runs."""
        self.before = [attribute_values(obj) or {} for obj in self.objects]

    def assigned_traced(self) -> bool:
        for obj, before in zip(self.objects, self.before):
            for key, value in (attribute_values(obj) or {}).items():
                if before.get(key, MISSING) is not value and any_traced(value):
                    return True
        return False


def carrying(attrs: Attributes | None, attempt: Callable[..., tuple], values, names) -> tuple:
    """Runs ``attempt(wrap, values, names)``, a staged block, carrying the attributes
    its functions assign; returns its outputs, with those attributes set.

    ``attempt`` stages the block with each of its functions passed through
    ``wrap(fn, leading=0, returns_state=True)``, on the inputs and names it is
    given (the block's, with the carried attributes after its outputs).
    """
    values, names = tuple(values), tuple(names)
    if attrs is None:
        return attempt(_as_is, values, names)
    for _ in range(_ATTEMPTS):
        try:
            out = attempt(attrs.wrap, attrs.inputs(values, names), names + attrs.labels())
        except _Retrace:
            continue
        except errors.LoopStateError as e:
            if attrs.first_written(e):  # another type before the loop: carry the body's
                continue
            raise
        return attrs.finish(out)
    raise attrs.error("a staged block must assign the same attributes each time it is traced",
                      f"tracing the {attrs.construct} {_ATTEMPTS} times found new attributes "
                      f"assigned each time", None,
                      "assign the attributes before the block, or in local variables")


def _as_is(fn, **_):
    return fn


class Attributes:
    """The objects a staged block reaches, and the attributes of them it carries."""

    def __init__(self, owned: list[_Owned], values: tuple, labels: list[str], n: int,
                 construct: Construct):
        self.owned = owned
        self.values = values    # the block's inputs
        self.labels_in = labels
        self.n = n              # how many of them it hands out
        self.given = n          # how many inputs the block was given (see `inputs`)
        self.construct = construct
        self.carried: list[tuple[_Owned, str]] = []
        self.same: list[Any] = []  # objects handed through as themselves (as `_Same(k)`)
        # attributes a loop's body assigns before reading (see `_prove`): carried with
        # the type the body gives them, `pending` until the first traced call proves it
        self.fresh: set[str] = set()
        self.fresh_types: dict[str, Any] = {}  # of those: the body's type, as the proof saw it
        self.pending: dict[str, BaseException] = {}
        self.refused: set[str] = set()
        self.tests: dict[Callable, None] = {}  # the loop's test functions, given to `wrap`

    def ids(self) -> frozenset:
        """The ids of the objects watched (see ``OuterState``'s ``owned``)."""
        return frozenset(id(o.obj) for o in self.owned)

    # -- the carried state --------------------------------------------------

    def labels(self) -> tuple[str, ...]:
        return tuple(f"{o.label}.{a}" for o, a in self.carried)

    def inputs(self, values, names=()) -> tuple:
        """The block's inputs with the carried attributes' values after its outputs.

        An `if` may be given fewer inputs than it has outputs (an output no branch
        reads, with no other input after it): those outputs are passed as
        undefined, so that the attributes still come right after the outputs."""
        given = tuple(self._token(v) for v in values)
        self.given = len(given)
        if len(given) < self.n:
            given += tuple(Undefined(names[j] if j < len(names) else f"output {j}")
                           for j in range(len(given), self.n))
        start = tuple(o.start[a] if a in o.start and not self._first_written(o, a)
                      else Undefined(f"{o.label}.{a}") for o, a in self.carried)
        return given[:self.n] + start + given[self.n:]

    def finish(self, out) -> tuple:
        """The block's outputs: each carried attribute set on its object, and the
        objects handed through as themselves in place of their stand-ins."""
        n = self.n
        for (o, a), v in zip(self.carried, out[n:]):
            if isinstance(v, MaybeUndefined) and f"{o.label}.{a}" in self.fresh:
                # assigned by every iteration that ran: the loop must have run one
                fail_at_run_time(v.defined, self._unassigned(o, a, v.value))
                v = v.value
            if is_undefined(v) or isinstance(v, MaybeUndefined):
                raise self.error(f"an attribute assigned in a staged {self.construct} must be "
                                 f"set on every path through it",
                                 f"`{o.label}.{a}` is assigned on a path that leaves the "
                                 f"{self.construct} early, but not on another", f"{o.label}.{a}",
                                 f"set `{o.label}.{a}` before the {self.construct}")
            set_attribute(o.obj, a, v)
        return tuple(self._object(v) for v in out[:n])

    def _token(self, v):
        for k, obj in enumerate(self.same):
            if v is obj:
                return _Same(k, type(obj).__name__)
        return v

    def _object(self, v):
        return self.same[v.k] if isinstance(v, _Same) else v

    # -- the functions of the block -------------------------------------------

    def wrap(self, fn: Callable | None, *, leading: int = 0, returns_state: bool = True):
        """``fn`` taking the carried attributes after its outputs (``leading`` arguments,
        a loop's item, come first) and, with ``returns_state``, returning them after
        its outputs; ``fn=None`` (an `if` without `else`) hands its inputs on."""
        carried = tuple(self.carried)

        def run(*args):
            lead, rest = args[:leading], args[leading:]
            if self.pending and returns_state and fn is not None:  # a loop's body
                self._prove(fn, lead, rest, carried)
            return self._call(fn, lead, rest, carried, returns_state, check=True)

        if fn is not None and not returns_state:
            self.tests[fn] = None  # a loop's test: it must not read them either
        return run

    def _call(self, fn, lead, rest, carried, returns_state: bool, *, check: bool):
        """One call of a block's function ``fn`` with the carried attributes of ``rest``
        set on their objects (and the objects restored after); with ``check``, what it
        assigns that is not carried yet stops the trace (``_check``)."""
        n, k = self.n, len(carried)
        g = min(n, self.given)  # outputs the block's functions take as inputs
        user = [self._object(v) for v in rest[:g] + rest[n + k:]]
        saved = [attribute_values(o.obj) for o in self.owned]
        maybe: dict[int, MaybeUndefined] = {}
        try:
            for j, ((o, a), v) in enumerate(zip(carried, rest[n:n + k])):
                if is_undefined(v) and f"{o.label}.{a}" in self.fresh_types:
                    # as the proof traced it: a value of the type the body gives it
                    set_attribute(o.obj, a, _zeros(self.fresh_types[f"{o.label}.{a}"]))
                elif is_undefined(v):
                    delete_attribute(o.obj, a)
                elif isinstance(v, MaybeUndefined):  # see `_prove`: the body does not read it
                    maybe[j] = v
                    set_attribute(o.obj, a, v.value)
                else:
                    set_attribute(o.obj, a, v)
            copies = self._copies(user)
            entry = [attribute_values(o.obj) for o in self.owned]
            out = (tuple(self._object(v) for v in rest[:n]) if fn is None
                   else fn(*lead, *user))
            if returns_state:
                out = tuple(out)
            if check:
                self._check(entry, carried, copies, user, out if returns_state else None)
            if not returns_state:
                return out
            now = [_current(o, a) for o, a in carried]
            now = [maybe[j] if j in maybe and v is maybe[j].value else v
                   for j, v in enumerate(now)]
            return tuple(self._token(v) for v in out) + tuple(now)
        finally:
            for o, before in zip(self.owned, saved):
                restore_attributes(o.obj, before or {})

    # -- attributes a loop assigns first ------------------------------------------

    def _first_written(self, o: _Owned, a: str) -> bool:
        label = f"{o.label}.{a}"
        return label in self.fresh or label in self.pending

    def first_written(self, error: BaseException) -> bool:
        """Whether the refusal ``error`` of a carried attribute may be lifted: it names
        an attribute not tried yet, which the next attempt carries as first assigned
        in the body (see ``_prove``)."""
        label = getattr(error, "variable", None)
        if (not self.construct.is_loop or label not in self.labels() or label in self.fresh
                or label in self.refused or label in self.pending):
            return False
        self.pending[label] = error
        return True

    def _prove(self, fn, lead, rest, carried) -> None:
        """Proves that the loop body ``fn`` does not read the attributes ``pending``
        before assigning them, or raises the refusal each was pending on.

        An attribute a loop body assigns can have another type before the loop (``foo.b =
        0``, then ``foo.b = jnp.zeros(3)`` in the body) or none at all; staged, it is
        carried with the type the body gives it. That hands the first iteration a
        placeholder instead of what the attribute held, so the body must not read
        it: traced with the attribute as it was before the loop (or absent) and
        traced with an input of the body's type in its place, the body must compute
        the same program, and that program must not read the input. A read that
        leaves no trace in the program (``type(foo.b)``, ``getattr(foo, "b", 1)``,
        ``hasattr``) makes the two traces differ.
        """
        labels = [f"{o.label}.{a}" for o, a in carried]
        for label, error in list(self.pending.items()):
            del self.pending[label]
            j = labels.index(label) if label in labels else None
            typed = None
            if j is not None:
                typed = self._independent(fn, lead, rest, carried, j)
                if typed is not None and not all(
                        self._independent(test, (), rest, carried, j, typed) is not None
                        for test in self.tests):
                    typed = None  # the test reads it (before the first iteration too)
            if typed is None:
                self.refused.add(label)
                raise error.with_traceback(None)
            self.fresh.add(label)
            self.fresh_types[label] = typed

    def _independent(self, fn, lead, rest, carried, j: int, typed=None):
        """Whether ``fn``'s outputs do not depend on carried attribute ``j`` (see ``_prove``):
        the type the body gives it (``jax.ShapeDtypeStruct``s), or None. With ``typed``
        (that type), ``fn`` is the loop's test, which returns no state."""
        body = typed is None
        slot = self.n + j
        o, a = carried[j]
        before = o.start[a] if a in o.start else Undefined(f"{o.label}.{a}")
        leaves, tree = jax.tree_util.tree_flatten((tuple(lead), tuple(rest)))
        where = [i for i, x in enumerate(leaves) if is_array(x)]
        shapes = [jaxprs.aval_struct(jax.typeof(leaves[i])) for i in where]
        found: list = []

        def traced(arrays, placeholder):
            flat = list(leaves)
            for i, x in zip(where, arrays):
                flat[i] = x
            lead2, rest2 = jax.tree_util.tree_unflatten(tree, flat)
            rest2 = list(rest2)
            rest2[slot] = before if placeholder is None else placeholder
            out = self._call(fn, lead2, rest2, carried, body, check=False)
            out_leaves, out_tree = jax.tree_util.tree_flatten(out)
            found.append((out_tree, [None if is_array(x) else x for x in out_leaves],
                          out[slot] if body else None))
            return [x for x in out_leaves if is_array(x)]

        try:
            with staging():  # as the loop traces its body: what it prints is staged
                first = jaxprs.make_jaxpr(lambda arrays: traced(arrays, None), shapes)
            if body:
                assigned = jax.tree_util.tree_leaves(found[-1][2])
                if not assigned or not all(is_array(x) for x in assigned):
                    return None
                typed = jax.tree_util.tree_map(lambda x: jaxprs.aval_struct(jax.typeof(x)),
                                               found[-1][2])
            with staging():
                second = jaxprs.make_jaxpr(traced, shapes, typed)
        except Exception:  # noqa: BLE001 - a body that fails on either input reads it
            return None
        (tree1, static1, _), (tree2, static2, _) = found[-2:]
        given = range(len(shapes), len(shapes) + len(jax.tree_util.tree_leaves(typed)))
        same = (tree1 == tree2 and len(static1) == len(static2)
                and all(same_static(x, y) for x, y in zip(static1, static2))
                and jaxprs.unused_inputs(second, given)
                and jaxprs.same_program(first, jaxprs.without_inputs(second, given)))
        return typed if same else None

    def _unassigned(self, o: _Owned, a: str, value) -> BaseException:
        """The error for a loop that ended before assigning ``o``'s attribute ``a``."""
        label = f"{o.label}.{a}"
        if a in o.start:
            held = (f"Python would keep the value it had before the loop, "
                    f"{describe(o.start[a])}, which the staged loop cannot hand back beside "
                    f"the {describe(value)} its body assigns")
        else:
            held = f"`{label}` did not exist before the loop"
        return self.error(f"an attribute a staged {self.construct} assigns first must be "
                          f"assigned by an iteration",
                          f"the loop ended before assigning `{label}` (it ran zero times, or "
                          f"left before the assignment); {held}", label,
                          f"set `{label}` before the loop to a value of the type the loop "
                          f"gives it (e.g. `{label} = jnp.zeros(...)`)")

    def _copies(self, user) -> list[tuple[int, Any]]:
        """``(position, attributes)`` of the inputs that are a rebuilt copy of an object
        the block was given (a registered dataclass the carry flattened)."""
        out = []
        for j, (v, given) in enumerate(zip(user, self.values)):
            if v is not given and type(v) is type(given) and any(
                    given is o.obj for o in self.owned) and _is_node(given):
                out.append((j, attribute_values(v) or {}))
        return out

    def _check(self, entry, carried, copies, user, out) -> None:
        """Raises what a traced call did to the objects that the block does not carry
        yet: ``_Retrace`` to carry it, or the error refusing it. ``out`` is the call's
        outputs, None for a function that returns no state (a loop's test)."""
        carried_keys = {(id(o.obj), a) for o, a in carried}
        new: list[tuple[_Owned, str]] = []
        same: list[Any] = []
        for o, was in zip(self.owned, entry):
            now = attribute_values(o.obj) or {}
            changed = [key for key in dict.fromkeys([*was, *now])
                       if was.get(key, MISSING) is not now.get(key, MISSING)]
            if not changed:
                continue
            for key in changed:
                self._refuse(o, key, now, out)
                if (id(o.obj), key) not in carried_keys:
                    new.append((o, key))
            if _is_node(o.obj) and out is not None and any(v is o.obj for v in out):
                same.append(o.obj)  # updated in place and handed on: as itself
        for j, before in copies:
            now = attribute_values(user[j]) or {}
            changed = [key for key in dict.fromkeys([*before, *now])
                       if before.get(key, MISSING) is not now.get(key, MISSING)]
            if changed:  # a copy updated in place: hand on the original instead
                original = self.values[j]
                same.append(original)
                o = next(o for o in self.owned if o.obj is original)
                for key in changed:
                    self._refuse(o, key, now, out)
                    new.append((o, key))
        if out is not None:
            self._refuse_replaced(user, out)
        grew = False
        for o, a in new:
            if all(o is not o2 or a != a2 for o2, a2 in self.carried):
                self.carried.append((o, a))
                grew = True
        for x in same:
            if all(x is not s for s in self.same):
                self.same.append(x)
                grew = True
        if grew:
            raise _Retrace()

    def _refuse(self, o: _Owned, key: str, now: dict, out) -> None:
        """Raises where the change of ``o``'s attribute ``key`` cannot be carried."""
        label = f"{o.label}.{key}"
        self._refuse_code_on_assignment(o, key)
        if _is_node(o.obj) and _in_a_container(o.obj, self.values):
            # the block hands on the list's or dict's contents rebuilt from their leaves:
            # a copy of the object, where Python keeps the object itself
            raise self.error(f"an attribute of an object held in a list, dict or tuple "
                             f"cannot be assigned inside a staged {self.construct}",
                             f"`{label}` is assigned, and a list, dict or tuple the "
                             f"{self.construct} hands on holds that `{type(o.obj).__name__}` "
                             f"(a pytree node); staged, the container would hold a copy "
                             f"rebuilt from its leaves, not the object updated", label,
                             f"replace the object in its container instead (e.g. "
                             f"`params[0] = dataclasses.replace(params[0], "
                             f"{key}=...)`)")
        if out is None:
            raise self.error(f"the test of a staged {self.construct} cannot assign an "
                             f"attribute",
                             f"`{label}` is assigned while the loop's test runs; staged, the "
                             f"test hands on only whether the loop goes on", label,
                             f"assign `{label}` in the loop body")
        if key not in now:
            raise self.error(f"an attribute cannot be deleted inside a staged "
                             f"{self.construct}",
                             f"`del {label}` runs in the {self.construct}, whose Python runs "
                             f"once while tracing", label, f"set `{label}` to a value instead")
        if key not in o.start and self.construct.is_loop and label not in self.fresh:
            error = self.error(f"an attribute first assigned inside a staged {self.construct} "
                             f"must be set before it",
                             f"`{label}` does not exist before the loop and is assigned in its "
                             f"body; staged, it would have no value before the first iteration",
                             label, f"set `{label}` before the loop (e.g. `{label} = "
                                    f"jnp.zeros(...)`)")
            if label in self.refused or label in self.pending:
                raise error
            self.pending[label] = error  # carried, if the next trace proves it (`_prove`)

    def _refuse_replaced(self, user, out) -> None:
        """An object handed through as itself must come out as itself where it went in."""
        for j, v in enumerate(user[:len(out)]):
            if any(v is s for s in self.same) and out[j] is not v:
                name = self.labels_in[j]
                raise self.error(f"an object updated in place in a staged {self.construct} "
                                 f"must not be replaced there",
                                 f"`{name}` is updated in place (its attributes are assigned) "
                                 f"and is bound to another object on a path through the "
                                 f"{self.construct}; staged code hands on one or the other",
                                 name, f"either assign `{name}`'s attributes or bind `{name}` "
                                       f"to a new object, on every path")

    def _refuse_code_on_assignment(self, o: _Owned, key: str) -> None:
        """Refuses an object whose class runs code when an attribute is assigned: what
        it stores could be carried, but that code's Python would run once while tracing."""
        t = type(o.obj)
        found = _code_on_assignment(t)
        if found is None:
            return
        what, name = found
        target = f"{o.label}.{name}" if name else o.label
        raise self.error(f"an object whose class runs code on assignment cannot have its "
                         f"attributes carried through a staged {self.construct}",
                         f"`{o.label}.{key}` changes in the {self.construct}, and "
                         f"`{t.__name__}` has {what}, whose Python would run once while "
                         f"tracing", target,
                         f"compute the new value in a local variable and assign `{target}` "
                         f"after the {self.construct}")

    def error(self, rule: str, observed: str, variable: str | None, fix: str):
        cls = self.construct.error
        return cls(rule, observed=observed, variable=variable, fix=fix)


def _in_a_container(obj, values) -> bool:
    """Whether a list, dict or tuple among ``values`` (or nested in them) holds ``obj``."""
    return any(x is obj for x in held([v for v in values if isinstance(v, (list, tuple, dict))]))


def _zeros(typed):
    """Zeros of the types ``typed`` (a pytree of ``jax.ShapeDtypeStruct``)."""
    return jax.tree_util.tree_map(
        lambda s: jax_internals.convert_element_type(np.zeros(s.shape, s.dtype), s.dtype,
                                                     bool(s.weak_type)), typed)


def _current(o: _Owned, attr: str):
    value = (attribute_values(o.obj) or {}).get(attr, MISSING)
    return Undefined(f"{o.label}.{attr}") if value is MISSING else value


# classes whose own `__setattr__` (written in C) only stores the value, as object's does
_PLAIN_SETATTR = (types.SimpleNamespace,)


def _code_on_assignment(t: type) -> tuple[str, str | None] | None:
    """What in class ``t`` runs when an attribute is assigned, in words, and the attribute
    it is for: a property with a setter, another data descriptor, ``__setattr__``."""
    for klass in t.__mro__[:-1]:
        if "__setattr__" in klass.__dict__ and klass not in _PLAIN_SETATTR:
            return "`__setattr__`", None
        for name, member in klass.__dict__.items():
            if isinstance(member, (types.MemberDescriptorType, types.GetSetDescriptorType)):
                continue  # a slot, `__dict__`, `__weakref__`
            if isinstance(member, property):
                if member.fset is not None:
                    return f"the property `{name}` with a setter", name
            elif hasattr(type(member), "__set__"):
                return f"the descriptor `{name}`", name
    return None


def _is_node(x) -> bool:
    """Whether JAX flattens ``x`` into leaves (a registered dataclass), not a leaf itself."""
    leaves = jax.tree_util.tree_leaves(x, is_leaf=lambda y: y is not x)
    return not (len(leaves) == 1 and leaves[0] is x)
