"""The state a staged loop carries: splitting, checking and inferring it.

Carried state follows the rules in :mod:`runtime.state`: arrays and Python
numbers are carried (numbers as weakly typed arrays); other Python objects
must stay the same. A variable whose type, shape or structure changes across
an iteration raises ``LoopStateError`` naming it.
"""

from __future__ import annotations

from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from autograph import errors
from autograph.errors import quoted as _q

from ..core import intervals, key_order
from ..core.constructs import Construct
from ..core.values import (
    UndefinedReturn,
    describe,
    is_python_number,
    is_undefined,
    raise_undefined,
    staging,
)
from . import state as st


class Carry:
    """Splits loop state into arrays to carry and Python objects held fixed."""

    def __init__(self, values, names, loop: Construct):
        self.names, self.loop = names, loop
        self.flat = [st.flatten(v) for v in values]
        self.static = []   # per name: list of (index, value) of fixed leaves
        self.arrays = []
        # per carried array: the value it was made from (a Python int stays one
        # here, where under `jax.jit` its array is a tracer) and its variable's name
        self.starts: list = []
        self.owners: list[str] = []
        for name, (_, leaves) in zip(names, self.flat):
            fixed = []
            for i, leaf in enumerate(leaves):
                if st.is_carryable(leaf):
                    self.arrays.append(st.as_array(leaf))
                    self.starts.append(leaf)
                    self.owners.append(name)
                else:
                    fixed.append((i, leaf))
            self.static.append(fixed)
        self.values = values
        self.strengthen: set[int] = set()  # carried leaves the body makes strongly typed
        self.snapshot = st.object_snapshot(values)

    def unflatten(self, arrays, final: bool = False):
        """The loop's variables from its carried arrays; ``final`` for those it hands on
        after it runs."""
        if final and self.strengthen:
            arrays = [st.convert(a, a.dtype, False) if i in self.strengthen else a
                      for i, a in enumerate(arrays)]
        if final:
            self._note_python_numbers(arrays)
        it = iter(arrays)
        out = []
        for (treedef, leaves), fixed in zip(self.flat, self.static):
            fixed_at = dict(fixed)
            new = [fixed_at[i] if i in fixed_at else next(it) for i in range(len(leaves))]
            out.append(jax.tree_util.tree_unflatten(treedef, new))
        return tuple(out)

    def _note_python_numbers(self, arrays) -> None:
        """A Python number the loop carries and keeps weakly typed is one eagerly after
        it, whatever the trip count (so is a weakly typed value it starts from, such
        as the zero that stands for a value first assigned inside the loop, `return
        i` of the index): noted with its dtype's range
        (``intervals.note_python_number``), so a later `if` that meets it with a narrow
        dtype widens that dtype to hold it, as it would the number."""
        for start, a in zip(self.starts, arrays):
            if (isinstance(a, jax.core.Tracer) and getattr(a, "weak_type", False)
                    and (intervals.python_number(start) is not None
                         or getattr(start, "weak_type", False))):
                span = _range(a.dtype)
                if span is not None:
                    intervals.note_python_number(a, span)

    def check(self, out_values, in_arrays):
        """Flattens a body's output, checking it against the carried input."""
        hit = st.mutated_attribute(self.snapshot)
        if hit is not None:
            obj, attr = hit
            raise errors.LoopStateError(
                f"an attribute cannot be assigned inside a staged {self.loop}",
                observed=f"attribute `{attr}` of a `{type(obj).__name__}` object is assigned in "
                         f"the loop body, which runs once while tracing; the object would keep "
                         f"a traced value", variable=attr,
                fix=f"carry the value in a local variable (`v = obj.{attr}` before the loop, "
                    f"`obj.{attr} = v` after it)")
        result: list = []
        it = iter(in_arrays)
        for j, (name, value, (treedef, leaves), fixed) in enumerate(zip(
                self.names, out_values, self.flat, self.static)):
            out_treedef, out_leaves = st.flatten(value)
            before = jax.tree_util.tree_unflatten(treedef, leaves)
            if out_treedef != treedef:
                detail = st.difference(before, value, name)
                raise errors.LoopStateError(
                    f"a variable carried by a staged {self.loop} must keep its structure",
                    observed=f"{_q(name)} is "
                             f"{describe(before) if not is_undefined(before) else 'unassigned'} "
                             f"before the loop but {describe(value)} after one iteration"
                             + (f" ({detail})" if detail else "")
                             + ("; only a list that is itself a loop variable can grow, by "
                                "`append`" if detail and " items vs " in detail else ""),
                    variable=name,
                    fix=f"give {_q(name)} its final structure (list length, keys, None-ness) "
                        f"before the loop")
            moved = key_order.reordered(treedef, out_treedef)
            if moved is not None:
                where, keys_in, keys_out = moved
                d = name + where
                raise KeyOrderError(
                    f"a dict carried by a staged {self.loop} must keep the order of its "
                    f"keys",
                    observed=f"`{d}` has its keys in the order {list(keys_in)} before "
                             f"the loop but {list(keys_out)} after one iteration; staged, the "
                             f"body is traced once, with the keys in their order before the "
                             f"loop, and the order is not a value the loop carries",
                    variable=name,
                    fix=key_order.sorted_hint(d, keys_in, keys_out) +
                        f"keep the order of the keys in the loop (`{d}[k] = v` keeps the place "
                        f"of a key `{d}` has; `{d}.pop(k)` then `{d}[k] = v` moves it to the "
                        f"end), or rebuild `{d}` in the order you need after the loop")
            fixed_at = dict(fixed)
            for i, leaf in enumerate(out_leaves):
                if i in fixed_at:
                    if not st.same_static(leaf, fixed_at[i]):
                        raise errors.LoopStateError(
                            f"a Python value carried by a staged {self.loop} cannot change",
                            observed=f"{_q(name)} is {describe(fixed_at[i])} before the loop but "
                                     f"{describe(leaf)} after one iteration",
                            variable=name,
                            fix=f"make {_q(name)} an array, or compute it outside the loop")
                    continue
                x_in = next(it)
                checked = self._check_leaf(name, x_in, leaf, self.starts[len(result)])
                if getattr(x_in, "weak_type", False) and not getattr(checked, "weak_type", True):
                    self.strengthen.add(len(result))  # Python: `best = 0.0` becomes `best = v`
                result.append(checked)
        return result

    def _check_leaf(self, name, x_in, leaf, start):
        if not st.is_carryable(leaf):
            raise errors.LoopStateError(
                f"a variable carried by a staged {self.loop} must stay an array",
                observed=f"{_q(name)} is {describe(x_in)} before the loop but {describe(leaf)} "
                         f"after one iteration", variable=name,
                fix=f"keep {_q(name)} an array in the loop body")
        a_in, a_out = st.aval_of(x_in), st.aval_of(leaf)
        if a_in.shape != a_out.shape:
            raise errors.LoopStateError(
                f"a variable carried by a staged {self.loop} must keep its shape",
                observed=f"{_q(name)} has shape {a_in.shape} before the loop, but shape "
                         f"{a_out.shape} after one iteration", variable=name,
                fix=f"give {_q(name)} its final shape before the loop (e.g. preallocate with "
                    f"`jnp.zeros` and write with `.at[i].set(...)`)")
        if a_in.dtype != a_out.dtype:
            if a_out.weak and not a_in.weak and self._joint(name, a_in, a_out) == a_in.dtype:
                # `x = 0` on a float32 carry
                return st.convert(st.as_array(leaf), a_in.dtype, False)
            a_start = st.aval_of(start) if st.is_carryable(start) else a_in
            if a_start.number is not None or a_start.span is not None:
                self._refuse_narrowing(name, a_start, a_out)
            elif is_python_number(leaf):
                self._refuse_narrowing(name, a_in, a_out)
            if not a_in.weak:
                raise errors.LoopStateError(
                    f"a variable carried by a staged {self.loop} must keep its dtype",
                    observed=f"{_q(name)} is {a_in.dtype.name} before the loop but "
                             f"{a_out.dtype.name} after one iteration; the eager result's dtype "
                             f"would depend on the number of iterations",
                    variable=name,
                    fix=f"cast {_q(name)} before the loop, e.g. `{name} = jnp.asarray({name}, "
                        f"jnp.{a_out.dtype.name})`")
        return st.as_array(leaf)

    def _joint(self, name, a, b):
        """``st.promote(a, b)``'s dtype; a number no dtype holds is an error naming ``name``."""
        try:
            return st.promote(a, b)[0]
        except st.NumberOverflow as e:
            raise errors.LoopStateError(
                f"a Python number carried by a staged {self.loop} must keep its value",
                observed=f"{_q(name)} is the Python int {e.number}, which no integer dtype holds "
                         f"while 64-bit types are off",
                variable=name,
                fix=f"make {_q(name)} a float, or enable 64-bit types "
                    f"(`jax.config.update('jax_enable_x64', True)`)") from e

    def _refuse_narrowing(self, name, a_in, a_out):
        """Raises where one iteration turns the Python number ``name`` starts as (or is
        set to) into a dtype that cannot hold it (``-1`` into uint8, ``300`` into int8).

        Staged, the carry would wrap around; a branch would widen the dtype instead
        (``state.promote``), but a loop's dtype can also come from arithmetic that
        narrows the number (``jnp.maximum(n, x)``), which wraps under ``jax.jit``
        too, so the loop does not pick a dtype for it. Refused, a loop over a
        static range runs as Python.
        """
        number = a_in.number if a_out.number is None else a_out.number
        narrow = a_out if a_out.number is None else a_in
        if not isinstance(narrow.dtype, np.dtype):
            return
        if number is None and narrow is a_out and a_in.span is not None:
            # a tracer that is a Python number eagerly: its range's end that does not fit
            number = next((n for n in a_in.span if not st.holds(narrow.dtype, n)), None)
            if number is None:
                return
            kind = "int" if isinstance(number, int) else type(number).__name__
            starts = (f"{_q(name)} holds a Python {kind} before the loop (a staged `if` or "
                      f"loop made it an array; it may be {number!r})")
        elif number is None or st.holds(narrow.dtype, number):
            return
        else:
            kind = "int" if isinstance(number, int) else type(number).__name__
            starts = f"{_q(name)} starts as the Python {kind} {number!r}"
        joint = self._joint(name, a_in, a_out)
        raise errors.LoopStateError(
            f"a Python number carried by a staged {self.loop} must keep its value",
            observed=(f"{starts}, and one iteration makes it {narrow.dtype.name}"
                      if narrow is a_out else
                      f"{_q(name)} is {narrow.dtype.name} before the loop, and one iteration sets "
                      f"it to the Python {kind} {number!r}")
                     + f"; {narrow.dtype.name} cannot hold {number!r}, so staged it would "
                       + ("wrap around" if kind == "int" else "overflow to infinity"),
            variable=name,
            fix=f"give {_q(name)} a dtype that holds both before the loop, e.g. `{name} = "
                f"jnp.asarray({name}, jnp.{joint.name})`")


def _range(dtype) -> tuple | None:
    """The least and greatest finite numbers of an int or float dtype, else None."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = jnp.iinfo(dtype)
        return int(info.min), int(info.max)
    if dtype.kind == "f":
        largest = float(jnp.finfo(dtype).max)
        return -largest, largest
    return None


class KeyOrderError(errors.LoopStateError):
    """A loop body puts the keys of a dict it carries in another order (see ``Carry.check``)."""


def stabilize(carry: Carry, step_out_avals):
    """Promotes weakly typed carried arrays to the dtypes one iteration produces."""
    changed = False
    new = []
    for x, aval in zip(carry.arrays, step_out_avals):
        mine = st.aval_of(x)
        if mine.dtype != aval.dtype and mine.weak:
            dtype2, weak2 = st.promote(mine, st.Aval(aval.shape, aval.dtype, aval.weak_type))
            new.append(st.convert(x, dtype2, weak2))
            changed = True
        else:
            new.append(x)
    carry.arrays = new
    return changed


def _undefined_names(values, names):
    return [(n, v) for n, v in zip(names, values) if is_undefined(v)]


def _loop_undefined_error(name, loop, reason):
    return errors.LoopStateError(
        f"a variable first assigned inside a staged {loop} must be defined before it",
        observed=f"{_q(name)} is first assigned in the loop body, and {reason}",
        variable=name,
        fix=f"initialize {_q(name)} before the loop (e.g. `{name} = jnp.zeros(...)`)")


def infer_undefined(step, values, names, loop):
    """Gives unassigned loop variables zero values of the type one iteration makes."""
    undefined = {n for n, _ in _undefined_names(values, names)}
    carry = Carry(values, names, loop)

    def probe(arrays):
        out = step(carry.unflatten(arrays))
        found = {}
        for n, v in zip(names, out):
            if n not in undefined:
                continue
            for leaf in jax.tree_util.tree_leaves(v, is_leaf=is_undefined):
                if not st.is_carryable(leaf) and not is_undefined(leaf):
                    label = _q(n)
                    raise errors.LoopStateError(
                        f"a staged {loop} can only produce arrays",
                        observed=f"{label} is {describe(leaf)}, set inside a loop whose "
                                 f"iterations depend on arrays", variable=n,
                        fix="return or assign an array (or compute the Python value outside "
                            "the loop)")
            found[n] = v
        # a variable one iteration leaves unassigned: reading it after the
        # loop would fail, so it fails here, as that read (the first in the
        # order JAX flattens `found`, by name)
        for leaf in jax.tree_util.tree_leaves(found, is_leaf=is_undefined):
            if is_undefined(leaf):
                raise_undefined(leaf)
        return key_order.ordered(found)  # a dict's placeholder has its keys as assigned

    with staging():  # as the loop traces its body: what it prints is staged, not shown now
        shapes = jax.eval_shape(probe, carry.arrays)
    new = []
    for n, v in zip(names, values):
        if n in undefined:
            # weakly typed where the iteration makes it so (`r = acc` of a Python number)
            new.append(key_order.tree_map(lambda s: st.convert(
                jnp.zeros(s.shape, s.dtype), s.dtype, bool(getattr(s, "weak_type", False))),
                shapes[n]))
        else:
            new.append(v)
    return tuple(new)


def _reading(name: str) -> Callable[..., Any]:
    """``list.<name>`` that marks the list it is called on as read."""
    method = getattr(list, name)

    def wrapper(self: TrackedList, *args):
        self.root.read = True
        return method(self, *args)
    wrapper.__name__ = name
    return wrapper


def _changing(name: str) -> Callable[..., Any]:
    """``list.<name>`` that marks the list it is called on as changed."""
    method = getattr(list, name)

    def wrapper(self: TrackedList, *args, **kwargs):
        self.root.changed = True
        return method(self, *args, **kwargs)
    wrapper.__name__ = name
    return wrapper


class TrackedList(list):
    """A list given to a staged loop body; remembers how the body used it.

    Items appended in a staged loop become the scan's outputs: inside the
    body the list holds only the items from before the loop, so a body that
    reads the list it appends to would see stale items (``read``), and one
    that grows it other than at its end (``insert``, ``[x] + ys``, ``ys *= 2``)
    cannot be staged as appends (``changed``). ``ys + [x]`` is a new tracked
    list that reports to the same ``root``.
    """

    read = False
    changed = False
    _root: TrackedList | None = None

    @property
    def root(self) -> TrackedList:
        return self if self._root is None else self._root

    for _name in ("__getitem__", "__iter__", "__len__", "__contains__", "__reversed__",
                  "index", "count", "copy", "__eq__"):
        locals()[_name] = _reading(_name)
    for _name in ("insert", "__setitem__", "__delitem__", "pop", "remove", "reverse", "sort",
                  "clear", "__imul__"):
        locals()[_name] = _changing(_name)
    del _name

    def __add__(self, other):
        out = TrackedList(list.__add__(self, other))
        out._root = self.root
        return out

    def __radd__(self, other):  # `[x] + ys` puts new items before the old ones
        self.root.changed = True
        return list(other) + list(list.__iter__(self))

    def grown_by_appending(self, tracked: TrackedList) -> bool:
        """Whether this list is ``tracked`` (or ``tracked + [...]``) with items only appended."""
        return self.root is tracked and not tracked.changed


def _as_list(_, children) -> list:
    return list(children)


# To JAX (jax.grad of a function of the list, optax, tree_map) it is a list.
jax.tree_util.register_pytree_node(
    TrackedList, lambda xs: (list(list.__iter__(xs)), None),
    _as_list)  # type: ignore[arg-type]  # a plain list on purpose, not a TrackedList


def prepare_state(values, names, loop, step, may_skip: bool):
    """Resolves unassigned variables before staging a loop."""
    undefined = _undefined_names(values, names)
    for n, v in undefined:
        if not isinstance(v, UndefinedReturn) and may_skip:
            raise _loop_undefined_error(
                n, loop, "the number of iterations is only known at run time, so the loop "
                         "may run zero times")
    if undefined:
        values = infer_undefined(step, values, names, loop)
    for n, v in zip(names, values):
        if isinstance(v, list):
            # A list carried by the loop keeps its length; appending needs a static trip count.
            pass
    return values
