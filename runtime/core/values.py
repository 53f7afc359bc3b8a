"""Values generated code passes around: unbound variables and state leaves."""

from __future__ import annotations

import collections.abc
import contextlib
import threading
import types
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import jax
import numpy as np

from autograph import errors

from . import host_callbacks, run_time_errors
from .constructs import Construct

Tracer = jax.core.Tracer


class Undefined:
    """Stands for a local variable that no path has assigned yet.

    Any use raises ``UndefinedVariableError``, as reading an unbound local
    raises ``UnboundLocalError`` in Python.
    """

    __slots__ = ("name", "where", "deleted")

    def __init__(self, name: str, deleted: bool = False):
        object.__setattr__(self, "name", name)
        # the `if` or loop that may leave it unassigned (or the `del`), for the message
        object.__setattr__(self, "where", errors.current_location())
        object.__setattr__(self, "deleted", deleted)

    def __repr__(self) -> str:
        return f"Undefined({self.name!r})"

    def _error(self) -> errors.UndefinedVariableError | None:
        """The error a use raises, where a subclass words it otherwise."""
        return None

    def _fail(self, *args, **kwargs) -> NoReturn:
        error = self._error()  # the operators below are this function itself, not an override
        if error is not None:
            raise error
        where = self.where
        observed = f"no path through the code before this point assigns `{self.name}`"
        if self.deleted:
            raise errors.UndefinedVariableError(
                f"`{self.name}` is used after it was deleted",
                observed=f"`del {self.name}`" + (f" at {where.short}" if where else "")
                         + " ran on the path that reached this read",
                variable=self.name, location=errors.current_location() or where,
                fix=f"read `{self.name}` before the `del`, or assign it again first")
        if where is not None:
            observed = (f"the statement at {where.short} does not assign `{self.name}` "
                        f"on the path that ran")
        raise errors.UndefinedVariableError(
            f"`{self.name}` is used before it is assigned",
            observed=observed, variable=self.name,
            location=errors.current_location() or where,
            fix=f"assign `{self.name}` before the `if` or loop that sets it, on every path")

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        self._fail()

    __bool__ = __len__ = __iter__ = __call__ = __getitem__ = __index__ = _fail
    __int__ = __float__ = __complex__ = __array__ = _fail

    # JAX and NumPy look these up before converting a value; raising here (not
    # AttributeError) makes any array function name the unassigned variable.
    @property
    def __jax_array__(self):
        self._fail()

    @property
    def __array_interface__(self):
        self._fail()

    @property
    def __array_priority__(self):
        self._fail()
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _fail
    __truediv__ = __rtruediv__ = __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = _fail
    __pow__ = __rpow__ = __matmul__ = __rmatmul__ = __neg__ = __pos__ = __abs__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = _fail
    __and__ = __or__ = __xor__ = __invert__ = __rand__ = __ror__ = _fail


class UndefinedReturn(Undefined):
    """The return value before any `return` ran; never observed by the user."""

    __slots__ = ()

    def __init__(self):
        super().__init__(errors.RETURN_VALUE)

    def _error(self) -> errors.UndefinedVariableError:
        where = self.where
        return errors.UndefinedVariableError(
            "every path of a function must return a value when the path depends on arrays",
            observed=(f"the statement at {where.short} may end without running a `return`"
                      if where is not None else "a path ran no `return`")
                     + ", and the function's result is used",
            variable=errors.RETURN_VALUE, location=errors.current_location() or where,
            fix="add a `return` on every path (for example at the end of the function)")


_STAGING = threading.local()


@contextlib.contextmanager
def staging():
    """Marks the tracing of a staged branch or loop body (see ``is_staging``)."""
    depth = getattr(_STAGING, "depth", 0)
    _STAGING.depth = depth + 1
    try:
        yield
    finally:
        _STAGING.depth = depth


@contextlib.contextmanager
def taken_when(guard):
    """Marks the tracing of a staged branch that runs where ``guard`` (traced) holds.

    Under ``jax.vmap`` a ``lax.cond`` on a batched condition runs both branches
    for every element, and a ``lax.while_loop`` on a batched test runs its body
    for every element until the last one finishes, so a check made inside a
    branch or a body (a `raise`, an `assert`, a read of a variable a loop may
    have left unassigned) must fail only where it runs, and a `print` print
    only there: they ask :func:`branch_guard`. ``guard`` may also be a function
    that computes it when something asks (see :func:`guard_when_asked`).
    """
    guards = _guards()
    guards.append(guard)
    try:
        yield
    finally:
        guards.pop()


def _guards() -> list:
    guards = getattr(_STAGING, "guards", None)
    if guards is None:
        guards = _STAGING.guards = []
    return guards


def branch_guard(extra=None):
    """Where the code being traced runs: the conjunction of the enclosing branches'
    guards (and ``extra``) as a traced bool, or ``True`` outside staged branches."""
    import jax.numpy as jnp
    guards = _guards()
    guard: bool | jax.Array = True
    for i, g in enumerate(guards + ([] if extra is None else [extra])):
        if callable(g):  # computed where the guards outside it hold, as its loop does
            _STAGING.guards = guards[:i]
            try:
                g = g()
            finally:
                _STAGING.guards = guards
        guard = g if guard is True else jnp.logical_and(guard, g)
    return guard


def guard_when_asked(compute: Callable[[], Any], fns: Sequence[Any]) -> Callable[[], Any]:
    """A guard for :func:`taken_when` that ``compute()`` makes when asked: a loop
    body's test, traced again only for a body that prints or checks something.

    ``fns`` are the converted functions ``compute`` runs (the loop's test). A
    converted test assigns the loop's variables in the cells it shares with the
    body; they (and those of the functions it wraps) are put back afterwards,
    so the body being traced keeps its own.
    """
    def guard():
        cells = closure_cells(fns)
        saved = []
        for cell in cells:
            try:
                saved.append(cell.cell_contents)
            except ValueError:  # an empty cell
                saved.append(_EMPTY)
        try:
            return compute()
        finally:
            for cell, value in zip(cells, saved):
                if value is _EMPTY:
                    try:
                        del cell.cell_contents
                    except ValueError:
                        pass
                else:
                    cell.cell_contents = value
    return guard


_EMPTY = object()


def closure_cells(fns, depth: int = 3) -> list:
    """The closure cells of the Python functions ``fns`` and of the functions in them."""
    cells: list = []
    seen: set[int] = set()
    todo = [(fn, 0) for fn in fns]
    while todo:
        fn, level = todo.pop()
        if not isinstance(fn, types.FunctionType) or id(fn) in seen:
            continue
        seen.add(id(fn))
        for cell in fn.__closure__ or ():
            cells.append(cell)
            try:
                inner = cell.cell_contents
            except ValueError:
                continue
            if level < depth:
                todo.append((inner, level + 1))
    return cells


def is_staging() -> bool:
    """Whether code runs inside a staged branch or loop body: once per trace,
    for what runs on every step at run time (so side effects go to run time)."""
    return getattr(_STAGING, "depth", 0) > 0


class MaybeUndefined:
    """A variable first assigned in a staged loop that may have run zero times.

    ``value`` is its value after the loop (a placeholder of the right shape
    and dtype when the loop did not run), ``defined`` a traced bool. A pytree
    of both, so it can be handed on to later blocks; reading it (``ld``)
    checks ``defined`` when the program runs.
    """

    def __init__(self, undefined: Undefined, value, defined):
        self.undefined, self.value, self.defined = undefined, value, defined

    def __repr__(self) -> str:
        return f"MaybeUndefined({self.undefined.name!r})"


jax.tree_util.register_pytree_node(
    MaybeUndefined, lambda m: ((m.value, m.defined), m.undefined),
    lambda undefined, children: MaybeUndefined(undefined, *children))


def flag_assigned(before, after) -> tuple:
    """``after`` (a block's outputs) with each plain value whose variable came in as a
    ``MaybeUndefined`` (``before``, position by position) flagged as assigned, so a
    variable keeps the structure it is carried with."""
    return tuple(MaybeUndefined(before[j].undefined, v, True)
                 if j < len(before) and isinstance(before[j], MaybeUndefined)
                 and not isinstance(v, (MaybeUndefined, Undefined)) else v
                 for j, v in enumerate(after))


def _fail_unless(failed, error):
    if np.any(failed):
        run_time_errors.fail(error)


def fail_at_run_time(ok, error) -> None:
    """Raises ``error`` when the program runs, where ``ok`` (traced) is false in the
    branch being traced (see :func:`branch_guard`)."""
    import jax.numpy as jnp
    host_callbacks.check(_fail_unless, jnp.logical_and(branch_guard(), jnp.logical_not(ok)),
                         error, in_order=False)


def ld(value: Any) -> Any:
    """Reads a variable a converted block may have left unassigned.

    The semantics are given by this Python implementation::

        if isinstance(value, Undefined):
            raise UnboundLocalError(value.name)
        return value

    That is, those of reading a local in Python: an unassigned one raises
    (``UndefinedVariableError``, an ``UnboundLocalError``). For a variable
    whose definition is only known at run time (``MaybeUndefined``) the check
    runs with the program, where the read is.

    Args:
      value: the variable's value: a value, an ``Undefined`` or a
        ``MaybeUndefined``.

    Returns:
      The value itself (for a ``MaybeUndefined``, the value the loop left).

    Raises:
      UndefinedVariableError: ``value`` is ``Undefined``, or a
        ``MaybeUndefined`` known not to be defined.
    """
    if isinstance(value, Undefined):
        value._fail()
    if isinstance(value, MaybeUndefined):
        if not isinstance(value.defined, Tracer):
            if not value.defined:
                value.undefined._fail()
            return value.value
        undefined = value.undefined
        where = undefined.where
        error = errors.UndefinedVariableError(
            f"{errors.quoted(undefined.name)} is used before it is assigned",
            observed=f"{errors.quoted(undefined.name)} is first assigned inside the loop"
                     + (f" at {where.short}" if where else "")
                     + ", which ran no iteration that assigned it (it ran zero times, or "
                       "left before the assignment; known only at run time)",
            variable=undefined.name, location=errors.current_location() or where,
            fix=f"assign {errors.quoted(undefined.name)} before the loop, or read it only "
                f"where the loop has run (e.g. under `if n > 0:`)")
        fail_at_run_time(value.defined, error)
        return value.value
    return value


def is_traced(x) -> bool:
    return isinstance(x, Tracer)


def is_undefined(x) -> bool:
    return isinstance(x, Undefined)


def raise_undefined(value: Undefined) -> NoReturn:
    """Raises the ``UndefinedVariableError`` for a use of ``value``."""
    value._fail()


_NUMBERS = (bool, int, float, complex)


def is_python_number(x) -> bool:
    return isinstance(x, _NUMBERS)


def is_array(x) -> bool:
    return isinstance(x, (Tracer, jax.Array, np.ndarray, np.generic))


def describe(x) -> str:
    """A short description of a value for error messages: ``float32[3]``, ``None``."""
    if is_undefined(x):
        return "unassigned"
    if is_array(x):
        weak = " (weakly typed)" if getattr(x, "weak_type", False) else ""
        dims = ",".join(str(d) for d in np.shape(x))
        return f"{np.dtype(x.dtype).name}[{dims}]{weak}"
    if x is None:
        return "None"
    if is_python_number(x) or isinstance(x, str):
        return f"the Python {type(x).__name__} {x!r}"
    if isinstance(x, (list, tuple, dict)):
        kind = type(x).__name__
        return f"a {kind} of {len(x)}"
    stands_for = getattr(x, "stands_for", None)  # a stand-in of the runtime's
    if isinstance(stands_for, str):
        return stands_for
    if callable(x) and not isinstance(x, type):
        name = getattr(x, "__qualname__", None) or getattr(x, "__name__", None)
        if isinstance(name, str):  # `jnp.sin` against `jnp.cos`: which function
            return f"the function `{name}`"
    return f"a `{type(x).__name__}` object"


def iterator_leaf(x) -> bool:
    """``is_leaf`` for flattening a user's values: an iterator (a generator, ``map``,
    ``zip``) is a leaf, which JAX deprecates flattening without saying so."""
    return isinstance(x, collections.abc.Iterator)


def any_traced(tree) -> bool:
    try:
        leaves = jax.tree_util.tree_leaves(tree, is_leaf=iterator_leaf)
    except (TypeError, ValueError):  # a dict whose keys do not sort (`{1: a, "b": c}`)
        from .key_order import ordered
        leaves = jax.tree_util.tree_leaves(ordered(tree, iterator_leaf), is_leaf=iterator_leaf)
    return any(isinstance(leaf, Tracer) for leaf in leaves)


def outer_assigned(name: str, construct: Construct) -> None:
    """Refuses, inside a staged block, an assignment to a ``global``/``nonlocal`` name.

    Called where a block that assigns ``name`` starts. A staged block's Python
    runs once, while tracing, whatever the condition or the trip count turns
    out to be: a traced value would leak out of its trace, and a Python value
    (a counter, a flag) would be updated once, where Python updates it on the
    taken branch only, or on every iteration.

    Args:
      name: the ``global`` or ``nonlocal`` name the block assigns.
      construct: the block: ``Construct.IF`` or ``Construct.LOOP``.

    Raises:
      BranchError: an array-dependent ``if`` is being staged.
      LoopStateError: a loop is being staged.
    """
    if not is_staging():
        return
    from autograph import errors
    raise construct.error(
        f"a `global` or `nonlocal` variable cannot be assigned inside an array-dependent "
        f"{construct}",
        observed=f"`{name}` is assigned in the staged {construct}, whose Python runs once while "
                 f"tracing, whether or not (and however often) it runs when the program runs",
        variable=name,
        fix=f"return the new value of `{name}` from the function and assign it in the "
            f"caller, or keep it in a local variable",
        location=errors.current_location())


def closure_values(fns):
    """``(cell, value)`` for each filled closure cell of the Python functions ``fns``.

    What a converted block's functions read from the enclosing function.
    """
    for fn in fns:
        if not isinstance(fn, types.FunctionType):
            continue
        for cell in fn.__closure__ or ():
            try:
                yield cell, cell.cell_contents
            except ValueError:  # an empty cell: a name not assigned yet
                continue
