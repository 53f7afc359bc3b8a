"""`if` statements and conditional expressions: Python `if` or `lax.cond`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Union

import jax
import jax.extend.core as jax_core
import jax.numpy as jnp
import numpy as np
from jax import lax

from autograph import errors, jax_internals

from ..carried import attributes, in_place, objects
from ..carried import state as st
from ..carried.outside import OuterState
from ..core import handlers, intervals, key_order, run_time_errors
from ..core.conditions import condition
from ..core.constructs import Construct
from ..core.host_callbacks import check as check_on_host
from ..core.jaxprs import make_jaxpr
from ..core.values import (
    MaybeUndefined,
    Tracer,
    UndefinedReturn,
    branch_guard,
    describe,
    fail_at_run_time,
    flag_assigned,
    is_python_number,
    is_traced,
    is_undefined,
    staging,
    taken_when,
)
from ..python.side_effects import FString, Raised, user_raised


def if_stmt(pred: Any, true_fn: Callable[..., Sequence[Any]],
            false_fn: Callable[..., Sequence[Any]] | None, init: Sequence[Any], *,
            names: Sequence[str], exits: Sequence[int] = (),
            returns: int | None = None, dead: Sequence[str] = ()) -> tuple:
    """Runs a converted `if` statement, in Python or as ``lax.cond``.

    The semantics are given by this Python implementation::

        if pred:
            return true_fn(*init)
        elif false_fn is not None:
            return false_fn(*init)
        else:
            return init[:len(names)]

    When ``pred`` is traced both branches are staged as one ``lax.cond``. Each
    output must then agree between the branches: the same pytree structure, the
    same shapes, and the same value for Python objects such as strings.
    Differing dtypes are promoted with JAX's rules (``jnp.result_type``, weak
    types included), and differing Python numbers become arrays.

    Args:
      pred: the condition: a Python value, or a traced scalar.
      true_fn: runs the true branch on ``init`` and returns the new values of
        ``names``.
      false_fn: the same for the false branch, or None when the `if` has no
        `else` (the variables keep their values).
      init: the values the branches start from: ``names`` first.
      names: the variables the branches return, for error messages.
      exits: the positions among ``names`` of the flags of a lowered
        ``return``/``break``/``continue`` (the code after it runs only where
        the flag is false).
      returns: the position among ``names`` of the function's return value
        (so messages call it that, whatever its name), or None.
      dead: lists the function only appends to and never reads, which a
        branch appends to without handing them out (``analysis.dead_lists``).

    Returns:
      The values of ``names`` after the `if`, as a tuple.

    Raises:
      ConditionError: ``pred`` is traced and not a single value.
      BranchError: an output is incompatible between the branches, or is
        assigned on one branch only.
    """
    c = condition(pred, "an `if`")
    if not is_traced(c):
        if c:
            return tuple(true_fn(*init))
        if false_fn is not None:
            return tuple(false_fn(*init))
        return tuple(init[:len(names)])
    return handlers.staged(c, lambda: _traced_if(
        c, true_fn, false_fn, init, names, exits, returns, dead))


def _traced_if(c, true_fn, false_fn, init, names, exits, returns, dead) -> tuple:
    init, names, exits = tuple(init), errors.returning(tuple(names), returns), tuple(exits)
    lifted = objects.lift(init, (true_fn, false_fn), Construct.IF)
    if lifted is not None:  # Flax objects a branch updates: carried, written back
        n = len(names)
        return lifted.finish(_staged(
            c, lifted.wrap(true_fn, n_out=n), lifted.wrap(false_fn, n_out=n),
            lifted.tokens(init) + (lifted.state,), names + (errors.OBJECTS,), exits))
    # attributes the branches assign on the objects they reach: carried, set after
    attrs = attributes.find(init, (true_fn, false_fn), names, Construct.IF)
    outside = OuterState((true_fn, false_fn), init, names + tuple(dead), in_place=True,
                         owned=frozenset() if attrs is None else attrs.ids())
    out = attributes.carrying(attrs, lambda wrap, values, labels: _staged_updating(
        c, wrap(true_fn), wrap(false_fn), values, labels, exits),
        init, names)
    _refuse_outside_changes(outside)
    return out


def _staged_updating(pred, true_fn, false_fn, init, names, exits):
    """``_staged``, with the lists and dicts the branches are given but do not return
    written back where a branch updates them in place (see ``in_place.BranchInputs``)."""
    inputs = in_place.BranchInputs(init, len(names), true_fn)
    if not inputs.positions:
        return _staged(pred, true_fn, false_fn, init, names, exits)
    for forced in (False, True):
        order = inputs.start(forced)
        try:
            out = _staged(pred, inputs.wrap(true_fn), inputs.wrap(false_fn), order,
                          names + inputs.labels_handed(), exits)
        except Exception:
            if forced or inputs.agree():
                raise
            continue  # one branch changed what the other did not: both hand it back
        if forced or inputs.agree():
            return inputs.finish(out)
    raise AssertionError("unreachable")  # pragma: no cover


def _refuse_outside_changes(outside: OuterState, what: str = "a branch of an "
                                                              "array-dependent `if`") -> None:
    """Both branches ran their Python while tracing: what they changed outside the
    `if` (a global object's attribute, a list, a closure's cell) changed whatever
    the condition, where Python changes it only on the branch it takes. ``what``
    names the block (the right operand of an `and`/`or` is one such branch)."""
    changed = outside.changed()
    if changed is None:
        return
    outside.restore()
    raise errors.BranchError(
        f"{what} cannot change what lies outside the function",
        observed=f"it changes {changed}; its Python runs while tracing, so the change "
                 f"would happen whatever the condition",
        fix="return the new value from the function (or keep it in a local variable assigned "
            "on both branches), or make the condition a Python value")


def refuse_outside_changes(fns, run: Callable[[], Any], what: str) -> Any:
    """``run()``, refused as a branch that changes what lies outside the function."""
    outside = OuterState(fns)
    out = run()
    _refuse_outside_changes(outside, what)
    return out


def if_exp(pred: Any, true_thunk: Callable[[], Any], false_thunk: Callable[[], Any]) -> Any:
    """Runs a conditional expression, in Python or as ``lax.cond``.

    The semantics are given by this Python implementation::

        return true_thunk() if pred else false_thunk()

    When ``pred`` is traced both values are staged as one ``lax.cond``, under
    the rules of :func:`if_stmt` for one output.

    Args:
      pred: the condition: a Python value, or a traced scalar.
      true_thunk: computes the value where ``pred`` holds.
      false_thunk: computes the value where it does not.

    Returns:
      The chosen value.
    """
    c = condition(pred, "a conditional expression")
    if not is_traced(c):
        return true_thunk() if c else false_thunk()

    def staged():
        outside = OuterState((true_thunk, false_thunk))
        (out,) = _staged(c, lambda: (true_thunk(),), lambda: (false_thunk(),), (),
                         ("the value of the conditional expression",))
        _refuse_outside_changes(outside)
        return out

    return handlers.staged(c, staged)


def _run(fn, init, n, kept: set | None = None, updated: set | None = None):
    """Runs a branch on the lists and dicts in ``init`` themselves, so that every name
    for one sees what the branch does to it (``b = a`` with ``a`` read through a
    closure), and puts back what they held once it has run (``in_place.run_in_place``:
    `ys.append(y)` on one branch is not seen by the other, both are traced, one after
    the other); its outputs hold copies. ``kept`` (if given) gets ``(path out, path
    in)`` of the lists and dicts of ``init`` it hands back as the very objects (see
    ``in_place.kept_paths``), ``updated`` those of them it changed."""
    out, origin = in_place.run_in_place(
        fn if fn is not None else lambda *values: values[:n], init)
    if kept is not None:
        pairs = in_place.kept_paths(origin, out)
        kept.update(pairs)
        if updated is not None:
            updated.update(in_place.updated_paths(pairs, init, out))
    if len(out) != n:  # pragma: no cover - generated code always matches
        raise AssertionError(f"branch returned {len(out)} values for {n} names")
    # a variable a loop assigns first comes in with its "defined" flag: a branch
    # that assigns it sets the flag, so both branches hand on a `MaybeUndefined`
    return flag_assigned(init, out)


class StaticSpec(NamedTuple):
    """A leaf that stays a Python value (the same on both branches): not staged."""

    value: Any


# How a staged `if` passes on one leaf of an output: as an array of this
# `st.Aval` (cast to it on each branch), or as the Python value itself.
LeafSpec = Union[st.Aval, StaticSpec]


class NameSpec(NamedTuple):
    """How a staged `if` passes on one output: its treedef and a spec per leaf."""

    treedef: Any
    leaves: list[LeafSpec]


class _Record:
    """What one traced branch returned: per name, a treedef and its leaves."""

    def __init__(self, values):
        self.values = values
        self.flat = [st.flatten(v) for v in values]

    def signature(self) -> list[NameSpec]:
        """The branch's outputs as specs: arrays by aval, anything else by value."""
        return [NameSpec(treedef, [st.aval_of(leaf) if st.is_array(leaf) else StaticSpec(leaf)
                                   for leaf in leaves])
                for treedef, leaves in self.flat]

    def arrays(self):
        return [leaf for _, leaves in self.flat for leaf in leaves if st.is_array(leaf)]


def _same(sig_a: list[NameSpec], sig_b: list[NameSpec]) -> bool:
    if len(sig_a) != len(sig_b):
        return False
    for (ta, la), (tb, lb) in zip(sig_a, sig_b):
        if ta != tb or len(la) != len(lb):
            return False
        for a, b in zip(la, lb):
            if type(a) is not type(b):
                return False
            if (isinstance(a, st.Aval) and isinstance(b, st.Aval)
                    and (a.shape, a.dtype) != (b.shape, b.dtype)):
                return False  # weak types may differ
            if (isinstance(a, StaticSpec) and isinstance(b, StaticSpec)
                    and not st.same_static(a.value, b.value)):
                return False
    return True


def _check_objects(snapshot):
    hit = st.mutated_attribute(snapshot)
    if hit is not None:
        obj, attr = hit
        raise errors.BranchError(
            "an attribute cannot be assigned inside an array-dependent `if`",
            observed=f"attribute `{attr}` of a `{type(obj).__name__}` object is assigned on a "
                     f"branch; both branches run while tracing, so the object would keep the "
                     f"value of whichever ran last",
            variable=attr,
            fix=f"compute the new value in a local variable and assign `.{attr}` after the "
                f"`if` (or use `jnp.where`)")


class _Branch:
    """One branch of a staged `if`: its function and what tracing it gave."""

    __slots__ = ("fn", "is_true", "record", "jaxpr", "raised", "kept", "updated", "derived")

    def __init__(self, fn, is_true: bool):
        self.fn, self.is_true = fn, is_true
        self.record: _Record | None = None  # what it returned
        # how it computes its arrays, to replay without its Python
        self.jaxpr: jax_core.ClosedJaxpr | None = None
        self.raised: Exception | None = None  # a user exception (a `raise`) met tracing it
        self.kept: set[tuple] = set()  # lists and dicts it updates in place (see `_run`)
        self.updated: set[tuple] = set()  # those of them it changes
        # the Python ints it computes from those it closes over that may pass their
        # dtype's limits (``intervals.note_derived_ints``); None: it computes none
        self.derived: list[intervals.Derived] | None = None

    def taken(self, pred):
        """Where this branch runs: ``pred``, or its negation for the false branch."""
        return pred if self.is_true else jnp.logical_not(pred)


def _staged(pred, true_fn, false_fn, init, names, exits=()):
    # Each branch's Python runs exactly once, into a jaxpr; the `lax.cond` is then
    # built from the jaxprs (with casts where the branches' outputs differ in
    # dtype or Python-ness). Running a branch again would make an `elif` chain
    # cost time exponential in its length, every level tracing its branches twice.
    true, false = _Branch(true_fn, True), _Branch(false_fn, False)
    snapshot = st.object_snapshot(init)

    def trace(branch: _Branch):
        def run():
            branch.kept.clear()
            branch.updated.clear()
            rec = _Record(_run(branch.fn, init, len(names), branch.kept, branch.updated))
            _check_objects(snapshot)
            branch.record = rec
            return rec.arrays()
        try:
            with staging(), taken_when(branch.taken(pred)):
                branch.jaxpr = make_jaxpr(run)
            # `h * 5` of a Python int an earlier staged `if` made a tracer: a Python
            # int eagerly too, which the merge below keeps exact (or refuses)
            assert branch.record is not None
            branch.derived = intervals.note_derived_ints(branch.jaxpr, branch.record.arrays())
        except Exception as e:
            if not _deferrable(e):
                raise
            if user_raised(e) is Raised.IN_TRY:
                raise errors.BranchError(
                    "an exception raised in an array-dependent branch cannot be caught by "
                    "`except`",
                    observed=f"`raise {type(e).__name__}(...)` sits in a branch whose "
                             f"condition is only known at run time, inside a `try`; the "
                             f"staged branch would raise when the program runs, where no "
                             f"`except` can catch it",
                    fix="decide with `jnp.where` or a flag instead of raising, or make the "
                        "condition a Python value") from e
            branch.raised = e

    trace(true)
    trace(false)
    for branch in (true, false):
        if branch.raised is not None:
            other = false if branch is true else true
            return _staged_with_raise(pred, branch, other, init, names)
    assert true.record is not None and false.record is not None  # neither raised
    _refuse_one_sided_update(true, false, names)
    _refuse_reordered_keys(true.record, false.record, names)
    # one branch hands on a variable that may be unassigned, the other assigns it:
    # both hand on a `MaybeUndefined` there
    flagged = _flagged_outputs(true.record.values, false.record.values)
    t_rec, f_rec = true.record, false.record
    if flagged:
        t_rec = _Record(flag_assigned(flagged, true.record.values))
        f_rec = _Record(flag_assigned(flagged, false.record.values))
    sig_t, sig_f = t_rec.signature(), f_rec.signature()
    jaxprs = (true.jaxpr, false.jaxpr)
    derived = true.derived is not None or false.derived is not None
    if not flagged and _same(sig_t, sig_f) and not derived:
        run_true = _replay(true.jaxpr, true.taken(pred))
        run_false = _replay(false.jaxpr, false.taken(pred))
        with staging():
            arrays = _select(pred, jaxprs, run_true, run_false)
            if arrays is None:
                arrays = lax.cond(pred, run_true, run_false)
        return in_place.write_back(init, _rebuild_like(
            true.record, _strong_where_either(arrays, sig_t, sig_f)), true.kept & false.kept)
    spec = _merge(t_rec, f_rec, names, exits)
    # A variable one branch leaves unassigned after a jump (`break`) may still be
    # read after the loop: it comes out as a `MaybeUndefined`, whose flag says
    # whether the branch that ran assigned it.
    born = [j for j, (vt, vf) in enumerate(zip(t_rec.values, f_rec.values))
            if is_undefined(vt) != is_undefined(vf)
            and not isinstance(vt, UndefinedReturn) and not isinstance(vf, UndefinedReturn)]

    def cast(branch: _Branch):
        replay = _replay(branch.jaxpr, branch.taken(pred))

        def run():
            values = flag_assigned(flagged, _rebuild_like(branch.record, replay()))
            flags = [jnp.asarray(not is_undefined(values[j])) for j in born]
            return _cast(values, spec) + flags
        return run

    run_true, run_false = cast(true), cast(false)
    with staging():
        arrays = _select(pred, jaxprs, run_true, run_false)
        if arrays is None:
            arrays = lax.cond(pred, run_true, run_false)
    flags = arrays[len(arrays) - len(born):]
    out = list(_rebuild(spec, arrays[:len(arrays) - len(born)]))
    _note_python_numbers(out, t_rec.values, f_rec.values)
    if derived:
        _check_derived_ints(pred, true, false, names)
    for j, flag in zip(born, flags):
        vt, vf = t_rec.values[j], f_rec.values[j]
        value = out[j]
        if isinstance(value, MaybeUndefined):  # assigned only where its own flag says
            value, flag = value.value, jnp.logical_and(flag, value.defined)
        out[j] = MaybeUndefined(vt if is_undefined(vt) else vf, value, flag)
    return in_place.write_back(init, tuple(out), true.kept & false.kept)


def _note_python_numbers(out, true_values, false_values) -> None:
    """A Python number both branches leave (``h = h * 2`` on one, ``h`` on the other) is
    a tracer after the staged `if`, where eagerly it stays a Python number: the hull of
    the two is noted (``intervals.note_python_number``). A later `if` that meets it
    with a narrow dtype then widens that dtype to hold it (``state.promote``), as it
    would the number; and a loop that carries an int checks it against int32 as the
    exact Python int it is eagerly."""
    for value, a, b in zip(out, true_values, false_values):
        if isinstance(value, Tracer):
            ia, ib = intervals.python_number(a), intervals.python_number(b)
            if ia is not None and ib is not None:
                exact = (intervals.python_int(a) is not None
                         and intervals.python_int(b) is not None)
                intervals.note_python_number(value, (min(ia[0], ib[0]), max(ia[1], ib[1])),
                                             exact)


def _owner(record: _Record, names, index: int) -> str:
    """The name of the variable whose leaf is ``record.arrays()[index]``."""
    seen = 0
    for name, (_, leaves) in zip(names, record.flat):
        for leaf in leaves:
            if st.is_array(leaf):
                if seen == index:
                    return name
                seen += 1
    return "?"


def _check_derived_ints(pred, true: _Branch, false: _Branch, names) -> None:
    """A Python int a branch computes from one an earlier staged `if` made a tracer
    (``h = h * 5``; see ``intervals.note_derived_ints``) may pass int32, where
    eagerly it stays exact: the program fails as it runs where the branch that ran
    made it do so (its value computed alongside in float32), naming it. A branch
    whose value cannot be computed so is refused here, while tracing."""
    info = np.iinfo(np.int32)
    first = None  # (name, farthest value) of the first such int
    wraps = []  # per branch: whether one of its ints left int32 (traced), or False
    for branch in (true, false):
        assert branch.record is not None
        left: Any = False
        for d in branch.derived or ():
            name = _owner(branch.record, names, d.position)
            reach = d.interval[1] if d.interval[1] > 0 else d.interval[0]
            value = None
            if d.shadow is not None:
                try:
                    value = d.shadow()
                except Exception:  # noqa: BLE001 - an operation with no float meaning
                    value = None
            if value is None:
                raise errors.BranchError(
                    "a Python number must keep its value through an array-dependent `if`",
                    observed=f"{_q(name)} is a Python int on one branch that may be {reach}, "
                             f"which int32 does not hold; staged, it would wrap around",
                    variable=_q(name).strip("`"),
                    fix=f"make {_q(name)} a float, or enable 64-bit types "
                        f"(`jax.config.update('jax_enable_x64', True)`)")
            left = left | (value < float(info.min)) | (value > float(info.max))
            if first is None:
                first = (name, reach)
        wraps.append(left)
    if first is None:
        return
    name, reach = first
    error = errors.BranchError(
        "a Python int would outgrow int32 through an array-dependent `if`",
        observed=f"{_q(name)} is a Python int when the function runs eagerly (a Python "
                 f"`if`), which the branch that ran made larger than int32 holds (it may "
                 f"reach {intervals.describe(reach)}); staged, it is int32, which wraps "
                 f"around",
        variable=_q(name).strip("`"),
        fix="compute it as a float (`1.0` rather than `1`), reduce it as you go "
            "(`h = (h * 31 + i) % m`), or enable 64-bit types "
            "(`jax.config.update('jax_enable_x64', True)`)")
    with staging():
        fail_at_run_time(jnp.logical_not(jnp.where(pred, wraps[0], wraps[1])), error)


def _refuse_one_sided_update(true: _Branch, false: _Branch, names) -> None:
    """A list or dict one branch updates in place where the other rebinds its name."""
    hit = in_place.one_sided(true.kept, true.updated, false.kept, false.updated)
    if hit is None:
        return
    (position, *keys), _ = hit
    name = names[position] + "".join(f"[{k!r}]" for k in keys)
    updating, other = ("true", "false") if hit in true.updated else ("false", "true")
    raise errors.BranchError(
        "a list or dict updated in place on one branch of an array-dependent `if` must not "
        "be replaced on the other",
        observed=f"`{name}` is updated in place on the {updating} branch but is another object "
                 f"after the {other} branch; Python would update the original only where the "
                 f"{updating} branch runs, and every other name for it would see that",
        variable=name,
        fix=f"update `{name}` in place on both branches (`{name}[...] = ...`), or build a new "
            f"one on both")


def _refuse_reordered_keys(t: _Record, f: _Record, names) -> None:
    """A dict the branches leave with its keys in two orders: which one the program
    takes is known only when it runs, and the order is not a value staged code holds."""
    for name, (tt, _), (tf, _) in zip(names, t.flat, f.flat):
        hit = key_order.reordered(tt, tf) if tt == tf else None
        if hit is None:
            continue
        where, keys_t, keys_f = hit
        returned = name == errors.RETURN_VALUE
        d = "d" if returned else name + where
        label = (name + (f" at `{where}`" if where else "") if returned
                 else f"`{name}{where}`")
        raise errors.BranchError(
            "a dict must have its keys in one order after an array-dependent `if`",
            observed=f"{label} has its keys in the order {list(keys_t)} after the true branch "
                     f"but {list(keys_f)} after the false branch; staged, which branch ran is "
                     f"known only when the program runs, and the order of the keys is not a "
                     f"value it computes",
            variable=name if returned else f"{name}{where}",
            fix=key_order.sorted_hint(d, keys_t, keys_f, before=False) +
                f"put the keys in the same order on both branches (`{d}[k] = v` keeps the "
                f"place of a key `{d}` has; `{d}.pop(k)` then `{d}[k] = v` moves it to the "
                f"end), or rebuild the dict in one order after the `if`")


def _flagged_outputs(t_values, f_values) -> tuple:
    """Per output, the ``MaybeUndefined`` one branch hands on where the other assigns
    the variable (``flag_assigned`` then flags that assignment), else None; empty
    when there is none."""
    out = []
    for a, b in zip(t_values, f_values):
        m = a if isinstance(a, MaybeUndefined) else b
        other = b if m is a else a
        out.append(m if isinstance(m, MaybeUndefined) and not isinstance(
            other, MaybeUndefined) and not is_undefined(other) else None)
    return tuple(out) if any(m is not None for m in out) else ()


# primitives that compute nothing: they move, reshape or retype what they are given
_DATA_ONLY = frozenset({"convert_element_type", "broadcast_in_dim", "reshape", "squeeze",
                        "expand_dims", "copy", "copy_p"})


def _select(pred, jaxprs, run_true, run_false):
    """Both branches' outputs (``run_true()``, ``run_false()``) and a ``select``
    between them, where neither branch (``jaxprs``) computes anything (a flag
    set, a value handed on: ``if hit: did_return = True; retval = i``); None
    otherwise.

    A ``cond`` costs a jump into a sub-computation at run time, every loop step
    when it sits in a loop; a select of values both branches already hold costs
    nothing, and differentiates and batches alike.
    """
    for closed in jaxprs:
        if closed.effects or any(e.primitive.name not in _DATA_ONLY for e in closed.jaxpr.eqns):
            return None
    t, f = run_true(), run_false()
    if any(jnp.shape(a) != jnp.shape(b) or jnp.result_type(a) != jnp.result_type(b)
           for a, b in zip(t, f)):
        return None
    return [a if a is b else lax.select(pred, jnp.asarray(a), jnp.asarray(b))
            for a, b in zip(t, f)]


def _replay(closed, taken):
    """A function that re-emits a traced branch (its jaxpr) without running its Python.

    The branch reads its floating-point inputs through ``taken`` (where the branch
    runs): as themselves where it does, with no derivative where it does not. Under
    ``vmap`` with a batched condition both branches run on every element, and an
    element takes a branch eager Python never takes there (``jnp.sqrt`` of what is
    negative under ``if x > 0``); the derivative it gets there is zero, but zero times
    the step's own non-finite derivative is NaN, which would reach the input. Where
    the condition is one value the branch not taken never runs, and the guard is
    ``select(p, x, x)``, which XLA removes; it costs a select per input only in a
    derivative.
    """
    jax_internals.allow_stop_gradient_transpose()  # see there: transposed under `vmap`
    guarded = [_guard(c, taken) for c in closed.consts]
    if any(g is not c for g, c in zip(guarded, closed.consts)):
        closed = jax_core.ClosedJaxpr(closed.jaxpr, guarded)
    run = jax_core.jaxpr_as_fun(closed)
    return lambda: list(run())


def _guard(value, taken):
    if not isinstance(value, Tracer) or not jnp.issubdtype(value.dtype, jnp.inexact):
        return value
    return lax.select(jnp.broadcast_to(taken, jnp.shape(value)), value,
                      lax.stop_gradient(value))


def _strong_where_either(arrays, sig_t, sig_f):
    """A weakly typed output stays weak only if it is weak on both branches."""
    weak = [a.weak and b.weak for (_, lt), (_, lf) in zip(sig_t, sig_f)
            for a, b in zip(lt, lf) if isinstance(a, st.Aval)]
    return [x if w or not getattr(x, "weak_type", False) else st.convert(x, x.dtype, False)
            for x, w in zip(arrays, weak)]


def _deferrable(e: Exception) -> bool:
    # What the user wrote as `raise` or `assert` happens in Python only on the
    # branch that runs; every other error met while tracing a branch (JAX's,
    # a library's, a type error of the program) is about the program itself
    # and surfaces at once.
    return user_raised(e) is not None


def _raise_at_run_time(error: Exception):
    # the compiled program keeps this callback: it holds a copy of the exception
    # met while tracing, without the traceback whose frames would keep the tracing
    # stack (the user's function and all it reached) alive as long as the program
    where = errors.innermost_user_location(error)
    error = errors.fresh(error)
    errors.note_raised_at(error, where)
    if error.__cause__ is not None:  # `raise ... from e`: the same for `e`
        error.__cause__ = errors.fresh(error.__cause__)

    def fail(taken, *fields):
        if not np.any(taken):  # under `jax.vmap`, both branches run for every element
            return
        args = None
        if fields:  # f-string arguments formatted, arrays given, with this run's values
            it = iter(fields)
            args = tuple(a.render([next(it) for _ in a.fields]) if isinstance(a, FString)
                         else next(it) if isinstance(a, Tracer) else a for a in error.args)
        # a new exception for each run: `error` was captured once, while tracing
        run_time_errors.fail(error, args)
    return fail


def _staged_with_raise(pred, raising: _Branch, other: _Branch, init, names):
    """``lax.cond`` where one branch raises: it raises when the program takes it."""
    error = raising.raised
    assert error is not None
    if other.raised is not None:  # `_staged` traced both branches
        raise error  # both branches raise: Python would raise either way
    assert other.record is not None  # traced to its end
    spec = [NameSpec(treedef, [_leaf_spec_alone(x) for x in leaves])
            for treedef, leaves in other.record.flat]

    def failing():
        err = error
        if any(isinstance(a, (FString, Tracer)) for a in error.args):
            # an f-string message, or an array given to the exception: raise it again
            # in this trace, so its values are this trace's, given when the program runs
            try:
                _run(raising.fn, init, len(names))
            except Exception as e:  # noqa: BLE001 - the same `raise`, met again
                if user_raised(e) is not None:
                    err = e
        fields = [leaf for a in err.args
                  for leaf in (a.fields if isinstance(a, FString)
                               else [a] if isinstance(a, Tracer) else [])]
        taken = branch_guard(raising.taken(pred))
        check_on_host(_raise_at_run_time(err), taken, *fields)
        return [jnp.zeros(s.shape, s.dtype) for _, leaf_specs in spec for s in leaf_specs
                if isinstance(s, st.Aval)]

    def working():
        return _cast(_run(other.fn, init, len(names)), spec)

    branches = (failing, working) if raising.is_true else (working, failing)
    with staging():
        arrays = lax.cond(pred, *branches)
    # where the program goes on, the other branch ran: what it updated in place
    return in_place.write_back(init, _rebuild(spec, arrays), other.kept)


def _rebuild_like(rec, arrays):
    it = iter(arrays)
    out = []
    for treedef, leaves in rec.flat:
        new = [next(it) if st.is_array(leaf) else leaf for leaf in leaves]
        out.append(jax.tree_util.tree_unflatten(treedef, new))
    return tuple(out)



_q = errors.quoted


def _jumped(record: _Record, exits) -> bool:
    """Whether a branch certainly took a lowered jump (an exit flag is True)."""
    return any(record.values[k] is True for k in exits)


def _merge(t: _Record, f: _Record, names, exits=()) -> list[NameSpec]:
    """One spec per output that both branches' outputs can be cast to.

    ``names`` hold the labels of what generated code carries (the return
    value: ``errors.returning``), so messages name it by its role."""
    spec = []
    for name, vt, vf, (tt, lt), (tf, lf) in zip(names, t.values, f.values, t.flat, f.flat):
        # assigned on one branch only, where either branch leaves the loop or the
        # function (`r = i; break`): it comes out as a `MaybeUndefined` (see
        # `_staged`), read later only under a check of its flag
        unread = (is_undefined(vt) != is_undefined(vf)) and (
            _jumped(t, exits) or _jumped(f, exits))
        if isinstance(vt, UndefinedReturn) or isinstance(vf, UndefinedReturn) or unread:
            defined = (tf, lf) if is_undefined(vt) else (tt, lt)
            if is_undefined(vt) and is_undefined(vf):
                spec.append(NameSpec(tt, [StaticSpec(vt)]))
                continue
            spec.append(NameSpec(defined[0], [_leaf_spec_alone(x) for x in defined[1]]))
            continue
        if is_undefined(vt) or is_undefined(vf):
            missing = "true" if is_undefined(vt) else "false"
            assigned = "false" if missing == "true" else "true"
            if _in_a_case():
                raise errors.BranchError(
                    "a variable used after a `match` on an array must be set by every case",
                    observed=f"{_q(name)} is assigned in this `case` but not on the path "
                             f"where it does not match (no `case _:` assigns it), and "
                             f"which case matches is only known at run time",
                    variable=_q(name).strip("`"),
                    fix=f"initialize {_q(name)} before the `match`, or add a `case _:` "
                        f"that assigns it")
            raise errors.BranchError(
                ("an attribute assigned in an array-dependent `if` must be set before it or "
                 "on every branch") if "." in name else
                "a variable used after an array-dependent `if` must be set on every branch",
                observed=f"{_q(name)} is assigned on the {assigned} branch but not on the "
                         f"{missing} branch, and the condition is only known at run time",
                variable=_q(name).strip("`"),
                fix=f"initialize {_q(name)} before the `if` (or assign it on both branches)")
        if tt != tf or len(lt) != len(lf):
            raise _structure_error(name, vt, vf)
        leaves = []
        for a, b in zip(lt, lf):
            leaves.append(_leaf_spec(name, a, b))
        spec.append(NameSpec(tt, leaves))
    return spec


def _in_a_case() -> bool:
    """Whether the staged `if` running is a `case` of a lowered `match` (its line)."""
    where = errors.current_location()
    text = getattr(where, "text", None) or ""
    return text.lstrip().startswith("case ")


def _leaf_spec_alone(x) -> LeafSpec:
    if st.is_carryable(x):
        return st.aval_of(x)
    return StaticSpec(x)


def _leaf_spec(name, a, b) -> LeafSpec:
    if st.is_carryable(a) and st.is_carryable(b):
        if is_python_number(a) and is_python_number(b) and st.same_static(a, b):
            return StaticSpec(a)
        sa, sb = st.aval_of(a), st.aval_of(b)
        if sa.shape != sb.shape:
            raise errors.BranchError(
                "a variable must have the same shape on both branches of an array-dependent `if`",
                observed=f"{_q(name)} has shape {sa.shape} on the true branch but shape "
                         f"{sb.shape} on the false branch",
                variable=_q(name).strip("`"),
                fix=f"give {_q(name)} one shape on both branches (e.g. with `jnp.broadcast_to` "
                    f"or `jnp.zeros_like`), or use `jnp.where` for an elementwise choice")
        try:
            dtype, weak = st.promote(sa, sb)
        except st.NumberOverflow as e:
            exact = any(is_python_number(v) and v == e.number for v in (a, b))
            together = (f" together with {e.dtype.name}'s values" if e.dtype.kind in "iu"
                        and -2**31 <= e.number < 2**31 else "")
            raise errors.BranchError(
                "a Python number must keep its value through an array-dependent `if`",
                observed=(f"{_q(name)} is the Python int {e.number} on one branch"
                          if exact else
                          f"{_q(name)} is a Python int on one branch that may be {e.number}")
                         + f", which no integer dtype holds{together} while 64-bit types "
                           f"are off",
                variable=_q(name).strip("`"),
                fix=f"make {_q(name)} a float, or enable 64-bit types "
                    f"(`jax.config.update('jax_enable_x64', True)`)") from e
        return st.Aval(sa.shape, dtype, weak)
    if not st.is_carryable(a) and not st.is_carryable(b) and st.same_static(a, b):
        return StaticSpec(a)
    if name == errors.RETURN_VALUE:
        # (the `if` may be one a `return` made: its branches are paths, not the user's)
        raise errors.BranchError(
            "a function whose path depends on arrays must return the same Python value on "
            "every path",
            observed=f"it returns {describe(a)} on one path and {describe(b)} on another; "
                     f"staged code cannot choose between Python objects at run time",
            variable=name,
            fix="return arrays (`jnp.asarray(...)`) or the same value on every path, or make "
                "the conditions Python values")
    raise errors.BranchError(
        "a Python value must be the same on both branches of an array-dependent `if`",
        observed=f"{_q(name)} is {describe(a)} on the true branch but {describe(b)} on the "
                 f"false branch; staged code cannot choose between Python objects at run time",
        variable=_q(name).strip("`"),
        fix=f"compute {_q(name)} outside the `if`, make it the same on both branches, or "
            f"make it an array on both")


def _structure_error(name, vt, vf):
    detail = st.difference(vt, vf, _q(name).strip("`"))
    if name == errors.RETURN_VALUE and (vt is None or vf is None):
        missing = "true" if vt is None else "false"
        return errors.BranchError(
            "every path of a function must return a value when the path depends on arrays",
            observed=f"one path returns {describe(vf if vt is None else vt)} while the path "
                     f"through the {missing} branch returns None (by `return None`, a bare "
                     f"`return`, or the end of the function)",
            variable=name,
            fix=f"return {describe(vf if vt is None else vt)} on that path too (a `return` "
                f"with a value there, or at the end of the function)")
    return errors.BranchError(
        "a variable must have the same structure on both branches of an array-dependent `if`",
        observed=f"{_q(name)} is {describe(vt)} on the true branch but {describe(vf)} on the "
                 f"false branch" + (f" ({detail})" if detail else ""),
        variable=_q(name).strip("`"),
        fix=f"give {_q(name)} the same structure (pytree, list length, None-ness) on both branches")


def _cast(values, spec: list[NameSpec]):
    out = []
    for value, (treedef, leaf_specs) in zip(values, spec):
        if is_undefined(value):  # never read on this path (see `_merge`)
            for s in leaf_specs:
                if isinstance(s, st.Aval):
                    out.append(st.convert(jnp.zeros(s.shape, s.dtype), s.dtype, s.weak))
            continue
        _, leaves = st.flatten(value)
        for leaf, s in zip(leaves, leaf_specs):
            if isinstance(s, st.Aval):
                out.append(st.convert(st.as_array(leaf, s.dtype), s.dtype, s.weak))
    return out


def _rebuild(spec: list[NameSpec], arrays):
    it = iter(arrays)
    out = []
    for treedef, leaf_specs in spec:
        leaves = [next(it) if isinstance(s, st.Aval) else s.value for s in leaf_specs]
        out.append(jax.tree_util.tree_unflatten(treedef, leaves))
    return tuple(out)
