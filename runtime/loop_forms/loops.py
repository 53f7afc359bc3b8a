"""`while` and `for` loops: Python loops, ``lax.while_loop`` or ``lax.scan``.

A loop runs as a plain Python loop for as long as nothing it touches is
traced. The moment its condition, its state or the items it iterates are
traced, the rest of the loop is staged:

==============================================  ==============================
what is iterated                                staged as
==============================================  ==============================
``while`` with a traced condition               ``lax.while_loop``, which
                                                differentiates in reverse
                                                mode with checkpoints
                                                (:mod:`runtime.checkpointed`)
``while`` with most iterations (``set_loop_     ``lax.while_loop``, which
options(maximum_iterations=N)``, or a Python-   differentiates as a bounded
int counter such as ``while i < 10``)           scan (:mod:`runtime.bounded`)
``range`` of Python ints, arrays (leading       up to ``PYTHON_TRIPS``
axis), ``enumerate``/``zip``/``reversed`` of    iterations: a Python loop, as
those                                           ``jax.jit`` unrolls it; more:
                                                ``lax.scan`` over the static
                                                trip count; with ``break`` or
                                                ``return``, as the ``while``
                                                with most iterations above
``range`` with traced bounds                    as the first row
lists, tuples, dicts, other iterables           a Python loop (unrolled)
==============================================  ==============================

Carried state follows the rules in :mod:`runtime.state`; a variable whose
type, shape or structure changes across an iteration raises
``LoopStateError`` naming it.

Which form a loop takes is ``runtime.loop_plan``'s decision; this module runs it,
with the staged `while` forms here and the `for` forms in ``python_loops`` and
``scan_loops``.
"""

from __future__ import annotations

import ast
import functools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from autograph import errors, jax_internals, tree_formats
from autograph.analysis import invisible

from ..carried import attributes, objects
from ..carried.carry import Carry, KeyOrderError, infer_undefined, prepare_state
from ..carried.in_place import InPlace
from ..carried.outside import OuterState
from ..core import handlers, intervals, run_time_errors
from ..core.conditions import condition
from ..core.constructs import Construct
from ..core.values import (
    MaybeUndefined,
    UndefinedReturn,
    flag_assigned,
    guard_when_asked,
    is_python_number,
    is_traced,
    is_undefined,
    staging,
    taken_when,
)
from ..functions import calls
from ..functions.index_meaning import PythonMeaningError, tracing_static_loop
from ..functions.libraries import layers_made_before
from ..python.iterables import TracedRange, TracedSeq, as_seq, enumerate_, range_, reversed_, zip_
from . import loop_plan
from .bounded import counted_loop
from .checkpointed import checkpointed_loop
from .loop_plan import PYTHON_TRIPS as PYTHON_TRIPS  # re-exported: tests import it from here
from .loop_plan import UNROLL_LIMIT, Form, Iterated, Plan, plan_for, plan_while
from .python_loops import (
    INDEX_MAY_CAUSE,
    in_linen,
    items_from,
    note_python_loop,
    observed,
    python_for,
    python_number_used,
    st_any_traced,
    warn_unrolled,
)
from .scan_loops import (
    Int32OverflowError,
    Outgrows,
    before_binding,
    counting,
    lifted_for,
    scan_for,
    stabilizer,
)

__all__ = ["while_stmt", "for_stmt", "range_", "enumerate_", "zip_", "reversed_", "TracedRange"]

invisible.set_runtime_checks(
    calls.marked_do_not_convert,
    lambda f: getattr(f, "__wrapped__", None) if calls.converted_of(f) is not None else None)


class Bound(NamedTuple):
    """A counter that bounds a `while` loop: the test holds ``op(state[position],
    limit())``, and each iteration moves ``state[position]`` by ``step`` (a Python
    int).

    Generated code writes it as ``ag__.Bound(1, ag__.operator.lt, lambda: n, 1)``.
    """

    position: int  # where the counter is in the loop state
    op: Callable[[Any, Any], Any]  # operator.lt, le, gt, ge or ne
    limit: Callable[[], Any]
    step: int


# how messages write a bound's comparison
_SYMBOLS = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
            operator.ne: "!="}


def _names_the_return_value(loop):
    """Makes ``loop`` take ``returns=k``: the position among its names of the
    function's return value, which messages then call that (``errors.returning``).
    A carry error about it is said of the function: one that returns inside a
    staged loop must return one kind of value on every path (a `return` in the
    loop and none after it returns ``None``)."""
    @functools.wraps(loop)
    def run(*args, names: Sequence[str], returns: int | None = None, **kwargs):
        try:
            return loop(*args, names=errors.returning(tuple(names), returns), **kwargs)
        except errors.LoopStateError as e:
            if returns is None or e.variable != errors.RETURN_VALUE:
                raise
            raise errors.LoopStateError(
                "a function that returns inside a staged loop must return the same kind of "
                "value on every path",
                observed=e.observed,
                location=e.location,
                fix="return a value of that kind on the other paths too (e.g. a `return` "
                    "after the loop), or keep the result in a variable and return it after "
                    "the loop") from None
    return run


def misplaced_loop_options(reason: str, *args: Any, **options: Any) -> None:
    """A ``set_loop_options(...)`` call that configures no loop: it checks its options
    and does nothing, as outside converted code (under plain ``jax.jit`` too), and
    warns, with ``reason``, at the user's line."""
    from autograph import directives
    directives.set_loop_options(*args, **options)
    errors.warn(
        f"{errors.here()}this `set_loop_options` configures no loop: {reason}; it does "
        f"nothing here (make it the first statement of the body of the `while` loop it is "
        f"for, or remove it)")


@_names_the_return_value
def while_stmt(test: Callable[..., Any], body: Callable[..., Sequence[Any]],
               init: Sequence[Any], *, names: Sequence[str],
               opts: Mapping[str, Any] | None = None,
               bound: Bound | None = None,
               python_state: Sequence[tuple[int | str, tuple[str, ...], str]] = (),
               dead: Sequence[str] = ()) -> tuple:
    """Runs a converted `while` loop, in Python or as ``lax.while_loop``.

    The semantics are given by this Python implementation::

        state = init
        while test(*state):
            state = body(*state)
        return state

    As soon as ``test(*state)`` is traced, the rest of the loop is staged with
    ``lax.while_loop``: Python numbers in the state become (weakly typed)
    arrays, and each variable must keep its shape, dtype and structure, or a
    ``LoopStateError`` names it. With ``opts={'maximum_iterations': N}`` the
    staged loop stops after at most ``N`` steps, counting those run as Python
    before its test became traced.

    ``bound=Bound(position, op, limit, step)`` gives a counter that bounds
    the loop (the test holds ``op(state[position], limit())``; the body moves
    ``state[position]`` by ``step``).
    When the counter and the limit are Python ints, the loop is given as many
    most iterations as the counter allows, with no hint from the user. A loop
    with most iterations (given or inferred) runs as ``lax.while_loop`` and
    differentiates in reverse mode as a bounded ``lax.scan``
    (:func:`runtime.bounded.counted_loop`); any other staged loop runs as
    ``lax.while_loop`` and differentiates in reverse mode with checkpoints
    (:func:`runtime.checkpointed.checkpointed_loop`; ``opts={'checkpoints':
    S}`` sets how many states its backward pass keeps).

    Args:
      test: the loop's condition, evaluated on the state.
      body: runs one iteration on the state and returns the new state.
      init: the state before the loop: the values of ``names``.
      names: the loop's variables, for error messages.
      opts: ``{'maximum_iterations': N, 'checkpoints': S}`` from
        ``autograph.set_loop_options``.
      bound: the counter that bounds the loop.
      python_state: ``(position, attributes, why)`` (see ``NumberUse``) for
        the variables and attribute chains the body assigns and uses as Python
        values (``f"w{n}"``); staging a loop where one holds a Python number is
        a ``LoopStateError``, since it would be an array.
      dead: lists the function only appends to and never reads, which the
        body appends to without carrying them (``analysis.dead_lists``).

    Returns:
      The state after the loop, as a tuple.

    Raises:
      ConditionError: the condition is traced and not a single value.
      LoopStateError: a variable of a staged loop changes its type, shape or
        structure, or the limit of ``bound`` changes while the body runs.
    """
    from autograph import directives
    options = (directives.check_loop_options(opts, errors.current_location())  # the loop's line
               if opts else directives.LoopOptions())
    state = tuple(init)
    names = tuple(names)
    # The counter moves toward its limit by one step an iteration at most (or the
    # loop exits): the trips it allows from where it starts bound the loop, also
    # once a traced `break` in an earlier iteration has made the counter traced.
    first_trips = None if bound is None else _bounded_trips(bound, state)
    ran = 0  # iterations run as Python before the test is traced: they count toward
    # `maximum_iterations` (a `break` lowered into the test leaves the first test a Python one)
    while True:
        c = condition(test(*state), "a `while` loop")
        if is_traced(c):
            return handlers.staged(c, lambda: _traced_while(
                c, test, body, state, names, options, bound, first_trips, ran, python_state,
                dead))
        if not c:
            return state
        state = tuple(body(*state))
        ran += 1


def _traced_while(c, test, body, state, names, options, bound, first_trips, ran,
                  python_state, dead):
    """The `while` loop from its first traced test ``c`` on, as ``lax.while_loop``."""
    _refuse_python_numbers(python_state, state, names, (test, body))
    trips = None if bound is None else _bounded_trips(bound, state)
    if trips is None and bound is not None and is_traced(state[bound.position]):
        trips = first_trips
    maximum = options.maximum_iterations
    if is_traced(maximum):
        raise errors.LoopOptionsError(
            "a staged `while` loop takes `set_loop_options(maximum_iterations=...)` "
            "as a Python int", observed="`maximum_iterations` is a traced array, and "
            "it sizes the loop's compiled form",
            fix="pass a Python int (a static argument of `jax.jit`, or a constant); "
                "for a bound known only when the program runs, test it in the loop's "
                "condition (`while i < n and ...`)")
    if maximum is not None and ran:
        if ran >= maximum:
            return state
        maximum -= ran
    plan = plan_while(maximum_iterations=maximum,
                      checkpoints=options.checkpoints,
                      checkpoint_memory=options.checkpoint_memory, counter_trips=trips)
    # a count from the counter: its limit must hold while the body runs
    limit = bound.limit() if bound is not None and plan.test_bounds else None
    lifted = objects.lift(state, (test, body), Construct.WHILE)
    outside = None
    if lifted is not None:  # Flax objects the body updates: carried, written back
        out = lifted.finish(_staged_while(
            lifted.wrap(test, returns_state=False), lifted.wrap(body),
            lifted.tokens(state) + (lifted.state,), names + (objects.OBJECTS,), plan))
    else:
        # attributes the body assigns on the objects it reaches: carried, set after
        attrs = attributes.find(state, (test, body), names, Construct.WHILE)
        outside = OuterState((test, body), state, names + tuple(dead),
                             owned=frozenset() if attrs is None else attrs.ids())
        out = attributes.carrying(attrs, lambda wrap, values, labels: _staged_while(
            wrap(test, returns_state=False), wrap(body), values, labels, plan),
            state, names)
    if bound is not None and limit is not None and _limit_changed(bound.limit(), limit):
        raise errors.LoopStateError(
            "the limit of a loop's counter must not change inside the loop",
            observed=f"`{names[bound.position]} {_SYMBOLS[bound.op]} ...` bounds the loop, "
                     f"and its limit "
                     f"changed from {limit} to {_describe_limit(bound.limit())} while "
                     f"the body ran",
            variable=names[bound.position],
            fix="compute the limit before the loop, in a variable the body keeps")
    changed = None if outside is None else outside.changed()
    if outside is not None and changed is not None:
        outside.restore()  # its trip count is traced: Python cannot run it
        raise _changes_outside(Construct.WHILE, changed)
    return out


def _refuse_python_numbers(uses, state, names, fns) -> None:
    """A staged `while` carries its Python numbers as arrays: one its body uses as a
    Python value (see ``python_state``) would change meaning, so it is refused."""
    found = python_number_used(uses, state, names, fns) if uses else None
    if found is None:
        return
    use, why = found
    name = use.label(names)
    raise errors.LoopStateError(
        "a staged `while` loop cannot use a Python number it carries as a Python value",
        observed=f"{why}; the loop's test is traced, so it runs as `lax.while_loop`, where "
                 f"`{name}` is a traced array (formatting it gives the tracer's text)",
        variable=name,
        fix=f"use `{name}` only in arithmetic, comparisons and array indexing inside the loop "
            f"(`print` formats traced values when the program runs), or make the loop's test "
            f"a Python value")


def _limit_changed(now, before) -> bool:
    """Whether a counter's limit changed while a staged body ran: a limit the body
    carries (an attribute it assigns) is traced afterwards, so it changed."""
    return is_traced(now) or now != before


def _describe_limit(limit) -> str:
    return "a value the body computes" if is_traced(limit) else str(limit)


def _changes_outside(loop: Construct, changed: str) -> errors.LoopStateError:
    """The error for a staged loop body that changes ``changed`` (see ``state.OuterState``)."""
    return errors.LoopStateError(
        f"a staged {loop}'s body cannot change what lies outside the loop",
        observed=f"the body changes {changed}; staged, its Python runs once while tracing, "
                 f"not once per iteration",
        fix="carry the value in a local variable of the function (assigned in the loop, used "
            "after it)")


def _bounded_trips(bound: Bound, state) -> int | None:
    """The most iterations a counter-bounded loop can run, or None (not Python ints)."""
    position, op, limit, step = bound
    start = state[position]
    if type(start) is not int:
        return None
    end = limit()
    if isinstance(end, np.integer):
        end = int(end)
    if type(end) is not int:
        return None
    if op in (operator.lt, operator.le) and step > 0:
        span = end - start + (op is operator.le)
        return max(0, -(-span // step))
    if op in (operator.gt, operator.ge) and step < 0:
        span = start - end + (op is operator.ge)
        return max(0, -(-span // -step))
    if op is operator.ne and (end - start) % step == 0 and (end - start) // step >= 0:
        return (end - start) // step
    return None


def _staged_while(test, body, state, names, plan: Plan, loop: Construct = Construct.WHILE):
    born = [i for i, v in enumerate(state)
            if is_undefined(v) and not isinstance(v, UndefinedReturn)]
    try:
        with layers_made_before(loop):
            if born:
                return _with_defined_flag(test, body, state, names, plan, loop, born)
            return _staged_while_defined(test, body, state, names, plan, loop)
    except TypeError as e:
        error = _traced_shape(e, loop)
        if error is None:
            raise
        raise error from None


def _traced_shape(e: TypeError, loop: Construct) -> errors.LoopStateError | None:
    """The error for an array the staged loop's body makes with a shape it traces, or None.

    Plain ``jax.jit`` fails there too: a staged loop's values keep one shape,
    known while tracing. The error names the user's line that asked for the
    shape and the variable it assigns.
    """
    shape = jax_internals.traced_shape(e)  # a shape that holds a traced value
    if shape is None:
        return None
    location = errors.innermost_user_location(e)
    variable = None if location is None else _made_name(location.text)
    made, fixed = (f"`{variable}`",) * 2 if variable else ("an array", "the array")
    return errors.LoopStateError(
        f"an array made in a staged {loop} must have a shape known before the loop runs",
        observed=f"the body makes {made} of shape {shape}, whose traced sizes are known only "
                 f"when the program runs; staged, every value has one shape, fixed while "
                 f"tracing",
        variable=variable, location=location,
        fix=f"give {fixed} a fixed shape (the largest it can take) and mask the part beyond "
            f"the size with `jnp.where`, or make the size a Python value (for an argument, "
            f"a static argument: `static_argnums`)")


def _made_name(text: str) -> str | None:
    """The name the one line ``text`` binds to the result of a call (``v = jnp.zeros(...)``)."""
    try:
        tree = tree_formats.parse(text.strip())
    except SyntaxError:
        return None
    stmt = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(stmt, (ast.Assign, ast.AnnAssign)) or not isinstance(stmt.value, ast.Call):
        return None
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
    return targets[0].id if len(targets) == 1 and isinstance(targets[0], ast.Name) else None


def _with_defined_flag(test, body, state, names, plan: Plan, loop, born):
    """A staged loop that assigns variables first: each carried with a "defined" flag.

    The loop may run zero times, or leave before the assignment (``if y > t:
    break`` above ``last = y``), so each such variable starts as a placeholder
    of the shape and dtype one iteration gives it, as a ``MaybeUndefined``
    whose flag is false; an iteration that assigns it makes the flag true
    (``values.flag_assigned``), one that does not hands it on. After the loop a read
    checks the flag when the program runs.
    """
    undefined = {i: state[i] for i in born}
    filled = infer_undefined(lambda s: tuple(body(*s)), state, names, loop)
    start = tuple(MaybeUndefined(undefined[i], v.value if isinstance(v, MaybeUndefined) else v,
                                 False) if i in undefined else v
                  for i, v in enumerate(filled))

    return _staged_while_defined(test, body, start, names, plan, loop)


def _staged_while_defined(test, body, state, names, plan: Plan,
                          loop: Construct = Construct.WHILE):
    """The staged loop the plan names: ``BOUNDED`` (``counted_loop``) or ``CHECKPOINTED``."""
    shared = InPlace(state, names, loop)  # lists and dicts: carried once, written back
    test, body = shared.wrap(test, returns_state=False), shared.wrap(body)
    state = prepare_state(shared.state, names, loop, lambda s: tuple(body(*s)), may_skip=True)
    carry = Carry(state, names, loop)
    lengths = {n: len(v) for n, v in zip(names, state) if isinstance(v, list)}
    kept: set[int] = set()  # carried leaves the body's last trace hands back as they came

    def body_arrays(arrays):
        checked = _body_arrays(arrays)
        kept.clear()
        kept.update(i for i, (a, b) in enumerate(zip(arrays, checked)) if a is b)
        return checked

    def _body_arrays(arrays):
        values = carry.unflatten(arrays)
        # under `jax.vmap`, what the body prints or checks holds where it still loops
        with taken_when(guard_when_asked(lambda: cond_arrays(arrays), (test,))):
            out = flag_assigned(values, tuple(body(*values)))
        for n, v in zip(names, out):
            if n in lengths and isinstance(v, list) and len(v) > lengths[n]:
                raise errors.LoopStateError(
                    "a list cannot grow in a loop whose trip count is only known at run time",
                    observed=f"`{n}` grows from {lengths[n]} to {len(v)} items in one iteration",
                    variable=n,
                    fix="preallocate an array (`jnp.zeros((max_len, ...))`) and write item i "
                        "with `.at[i].set(...)`, or loop over a static `range`")
        return carry.check(out, arrays)

    def cond_arrays(arrays):
        c = condition(test(*carry.unflatten(arrays)), f"a {loop}")
        return jnp.asarray(c, dtype=bool)

    def run(test_arrays, step_arrays, arrays, stabilize, check=None):
        if plan.form is Form.CHECKPOINTED:
            return checkpointed_loop(test_arrays, step_arrays, arrays,
                                     checkpoints=plan.checkpoints, maximum=plan.maximum,
                                     checkpoint_memory=plan.checkpoint_memory,
                                     stabilize=stabilize, check=check)
        return counted_loop(test_arrays, lambda a, k: step_arrays(a), arrays,
                            int(plan.maximum), stabilize=stabilize,
                            test_bounds=plan.test_bounds, check=check)

    def follow(closed):
        # exactly followed only: a traced branch may be the user's `jnp.where`, which
        # makes an array eagerly too
        followed = intervals.follow(closed, carry.starts, len(carry.arrays), 0, [],
                                    intervals.STEPS, python_only=True, branches=False,
                                    beyond=True)
        if followed.overflow is not None:
            raise Outgrows(followed, carry)

    with staging():
        try:
            final = run(cond_arrays, body_arrays, carry.arrays, stabilizer(carry),
                        follow if any(intervals.python_int(v) is not None for v in carry.starts)
                        else None)
        except Outgrows as found:
            if found.carry is not carry:
                raise  # an inner loop's
            final = counting(run, cond_arrays, body_arrays, found)
    # a Python number the body never changes comes out as itself, as from the Python
    # loop (after any number of steps), not as the array it was carried as
    final = [carry.starts[i] if i in kept and is_python_number(carry.starts[i]) else a
             for i, a in enumerate(final)]
    return shared.finish(carry.unflatten(final, final=True))


# ----------------------------------------------------------------------------
# for


@_names_the_return_value
def for_stmt(iterable: Iterable[Any], body: Callable[..., Sequence[Any]],
             init: Sequence[Any], *, names: Sequence[str],
             extra_test: Callable[..., Any] | None = None,
             python_index: str | None = None,
             python_state: Sequence[tuple[int | str, tuple[str, ...], str]] = (),
             dead: Sequence[str] = ()) -> tuple:
    """Runs a converted `for` loop, in Python or staged.

    The semantics are given by this Python implementation::

        state = init
        for item in iterable:
            if extra_test is not None and not extra_test(*state):
                break
            state = body(item, *state)
        return state

    ``extra_test`` comes from ``break`` and ``return`` in the body. Ranges of
    Python ints and arrays (also through ``enumerate_``, ``zip_`` and
    ``reversed_``) have a static trip count. With at most ``PYTHON_TRIPS``
    iterations left the loop runs in Python, as ``jax.jit`` unrolls it, so the
    index and Python numbers keep their meaning (a traced ``extra_test``
    guards each later iteration with a ``lax.cond``). Longer, once the state
    or the items are traced, the remaining iterations run as one ``lax.scan``
    (or, with ``extra_test``, a loop that stops when it exits), so compile
    time does not grow with the trip count and reverse-mode ``jax.grad``
    works. A ``range`` with traced bounds runs as
    ``lax.while_loop``. Any other iterable is iterated in Python.

    Args:
      iterable: what the loop iterates: a Python iterable, an array (along
        its leading axis), or what ``range_``, ``enumerate_``, ``zip_`` and
        ``reversed_`` return.
      body: runs one iteration on the item and the state and returns the new
        state.
      init: the state before the loop: the values of ``names``.
      names: the loop's variables, for error messages.
      extra_test: whether the loop goes on, evaluated on the state before each
        iteration; None when the body has no ``break`` or ``return``.
      python_index: why the body uses the loop index as a Python value
        (``f"w{i}"``, ``str(i)``, ``isinstance(i, int)``), found when the loop
        was converted; such a loop over a static range runs as Python.
      python_state: ``(position, attributes, why)`` (see ``NumberUse``) for
        the variables and attribute chains the body assigns and uses as
        Python values; where one holds a Python number when the loop
        starts (a staged loop would carry it as an array), the loop runs as
        Python too.
      dead: lists the function only appends to and never reads, which the
        body appends to without carrying them (``analysis.dead_lists``).

    Returns:
      The state after the loop, as a tuple.

    Raises:
      LoopStateError: a variable of a staged loop changes its type, shape or
        structure.
    """
    state = tuple(init)
    names = tuple(names)
    if isinstance(iterable, TracedSeq):
        return _traced_seq_for(iterable, plan_for(Iterated.TRACED_RANGE), tuple(dead), body,
                               state, names, extra_test)
    seq = as_seq(iterable)
    if seq is None:  # Form.PYTHON
        return python_for(iterable, body, state, names, extra_test, dead=dead)
    if python_index is None and python_state:
        found = python_number_used(python_state, state, names, (body, extra_test))
        python_index = None if found is None else found[1]
    if python_index is None and type(seq.n) is int and not seq.fits_int32(0):
        python_index = "its index does not fit int32"
    iterations = None  # the attributes each iteration run as Python assigns
    peeled = False  # an iteration ran as Python to put a dict's keys in the body's order
    k = 0
    while k < seq.n:
        trips = seq.n - k if type(seq.n) is int else None
        plan = plan_for(Iterated.STATIC, trips, python_index=python_index,
                        exits=extra_test is not None)
        if plan.form is Form.UNROLLED:
            long = seq.n > loop_plan.PYTHON_TRIPS  # (read here: tests lower the threshold)
            if python_index is not None and long and st_any_traced((state, seq.xs)):
                note_python_loop(python_index, seq.n)
            return python_for(items_from(seq, k), body, state, names, extra_test, dead=dead)
        x = seq.python_slice(k)
        if plan.form is Form.EXITING_SCAN and extra_test is not None:
            c = condition(extra_test(*state), "a `for` loop's exit test")
            if is_traced(c):
                plan, verdict = _proven(plan, seq, k, x, body, state, names, extra_test,
                                        exiting=True, dead=dead)
                if plan.form is Form.UNROLLED:
                    return _unproven_for(plan, seq, k, body, state, names, extra_test,
                                         dead=dead)
                out = scan_for(seq, k, body, state, names, extra_test)
                plan = _followed(plan, verdict, names, out, extra_test)
                if plan.form is Form.UNROLLED:
                    return _unproven_for(plan, seq, k, body, state, names, extra_test,
                                         dead=dead)
                return out
            if not c:
                return state
        if (st_any_traced(state) or (x is not None and st_any_traced(x)) or (
                iterations is not None and iterations.assigned_traced())) and not in_linen():
            plan, verdict = _proven(plan, seq, k, x, body, state, names, extra_test,
                                    dead=dead)
            if plan.form is Form.UNROLLED:
                return _unproven_for(plan, seq, k, body, state, names, extra_test, dead=dead)
            owned = attributes.owned_ids(state, (body, extra_test), names, leading=1)
            outside = OuterState((body, extra_test), state, names + tuple(dead), owned=owned)
            if not outside.can_rewind_all():
                plan = plan_for(Iterated.STATIC, trips, exits=extra_test is not None,
                                rewindable=False)
            if plan.form is Form.UNROLLED:
                # a generator (or a builtin iterator) cannot be put back after a staging
                # attempt draws from it
                warn_unrolled(errors.LoopStateError(
                    "the body reads an iterator that cannot be rewound",
                    observed=f"the body reaches {outside.forward_only()}, whose items a "
                             f"staged body would draw once (and which cannot be rewound)"))
                return python_for(items_from(seq, k), body, state, names, extra_test,
                                   dead=dead)
            try:
                with tracing_static_loop(), before_binding(
                        _follows(plan, verdict, extra_test, outside)):
                    out = scan_for(seq, k, body, state, names, extra_test)
                changed = outside.changed()
                if changed is not None:
                    raise _changes_outside(Construct.FOR, changed)
                plan = _followed(plan, verdict, names, out, extra_test)
                if plan.form is Form.UNROLLED:
                    outside.restore()  # what the staged trace set, run again by Python
                    return _unproven_for(plan, seq, k, body, state, names, extra_test,
                                         dead=dead)
                return out
            except _NotFollowed as e:  # found before the scan was put in the program
                outside.restore()
                return _unproven_for(e.plan, seq, k, body, state, names, extra_test,
                                     dead=dead)
            # Never worse than `jax.jit`, which unrolls this loop: a static trip count
            # lets Python run what `lax.scan` cannot stage, whatever stopped it (a carry
            # that grows or changes dtype, a library that cannot be traced inside a scan),
            # so any error is caught here and `_unrolls_after` decides.
            except Exception as e:  # noqa: BLE001
                if (isinstance(e, KeyOrderError) and not peeled
                        and not run_time_errors.raised_as_it_ran(e)):
                    # the body puts a dict's keys in another order: run as Python, the
                    # first iteration leaves them in the order the others may keep
                    outside.restore()
                    peeled = True
                    state = python_for([seq.element(k, x)], body, state, names, extra_test,
                                        dead=dead)
                    k += 1
                    continue
                if not _unrolls_after(e, seq.n - k, extra_test is not None):
                    raise
                outside.restore()  # what the staging attempt changed, run again by Python
                if isinstance(e, PythonMeaningError):
                    note_python_loop(observed(e), seq.n - k)
                    try:
                        return python_for(items_from(seq, k), body, state, names,
                                          extra_test, dead=dead)
                    except Exception as unrolled:  # noqa: BLE001 - the program's own
                        raise unrolled from None
                # the warning only once the unrolled loop traced: an error of the
                # program itself (a sharding `jax.jit` rejects too) recurs there, and
                # is raised as `jax.jit` raises it, with no word about unrolling
                try:
                    state = python_for(items_from(seq, k), body, state, names, extra_test,
                                        dead=dead)
                except Exception as unrolled:  # noqa: BLE001 - raised without the staging error
                    raise unrolled from None
                warn_unrolled(e)
                return state
        if iterations is None:
            iterations = attributes.Iterations(state, (body, extra_test), names, leading=1)
        iterations.start()
        state = tuple(body(seq.element(k, x), *state))
        k += 1
    return state


def _proven(plan: Plan, seq, k: int, x, body, state, names, extra_test, *,
            exiting: bool = False, dead: Sequence[str] = ()) -> tuple[Plan, invisible.Verdict]:
    """The plan once the proof has read the body: staged only where staging cannot
    change what the program does (see ``autograph.analysis.invisible``), and the
    verdict, whose Python numbers the staged loop must hand back as they are."""
    verdict = invisible.prove_loop(body, extra_test, state, names, seq.element(k, x),
                                   dead=tuple(dead))
    why = None if verdict.proven else verdict.why
    if why is None and exiting and verdict.attributes:
        # staged from a traced exit test, nothing could undo what it sets if it then
        # had to run as Python
        obj, name = verdict.attributes[0]
        why = f"it counts a Python number in `{type(obj).__name__}.{name}` while its exit is traced"
    if why is None:
        return plan, verdict
    return plan_for(Iterated.STATIC, plan.trips, exits=extra_test is not None,
                    unproven=why), verdict


def _followed(plan: Plan, verdict: invisible.Verdict, names, out, extra_test) -> Plan:
    """The plan after staging: a Python int the loop carries, or a Python number it
    counts in an attribute, that the staged loop could not follow exactly (past
    ``intervals.FOLLOW_LIMIT`` steps, or computed in a way it cannot follow) comes
    out traced, where the unrolled loop keeps a Python number: Python then."""
    late = [f"`{n}`" for n in verdict.python_ints if is_traced(out[names.index(n)])]
    late += [f"`{type(o).__name__}.{a}`" for o, a in verdict.attributes
             if is_traced(getattr(o, a, None))]
    return plan if not late else _keeps_a_python_number(plan, extra_test, late[0])


def _keeps_a_python_number(plan: Plan, extra_test, what: str) -> Plan:
    """The plan of a loop that keeps a Python number in ``what`` (a quoted name) that
    the staged loop cannot hand back as one: the Python loop."""
    return plan_for(Iterated.STATIC, plan.trips, exits=extra_test is not None,
                    unproven=f"the loop keeps a Python number in {what} that the staged "
                             f"loop cannot hand back as a Python number")


class _NotFollowed(Exception):
    """A staged loop would hand back traced what the Python loop keeps a Python number
    (see ``_follows``); ``plan`` runs it as Python."""

    def __init__(self, plan: Plan):
        super().__init__(plan.reason)
        self.plan = plan


def _follows(plan: Plan, verdict: invisible.Verdict, extra_test, outside: OuterState):
    """``_followed``'s test of the carried Python ints, made once the staged body is
    traced and before its scan is put in the program (``scan_loops.before_binding``):
    an int carried at a position the staged loop does not follow exactly (``finals``)
    raises ``_NotFollowed``. What tracing the body changed outside the loop raises
    the loop's error there too; what the lists and dicts the loop carries change
    through another name is compared after the scan, which writes them back."""
    def check(carry, finals):
        changed = outside.changed()
        if changed is not None:
            raise _changes_outside(Construct.FOR, changed)
        for n in verdict.python_ints:
            if any(i not in finals for i, owner in enumerate(carry.owners) if owner == n):
                raise _NotFollowed(_keeps_a_python_number(plan, extra_test, f"`{n}`"))
    return check


def _unproven_for(plan: Plan, seq, k: int, body, state, names, extra_test, dead=()):
    """A loop the proof could not clear: the Python loop plain `jax.jit` unrolls."""
    note_python_loop(plan.reason, seq.n - k, proof=True)
    return python_for(items_from(seq, k), body, state, names, extra_test, dead=dead)


def _unrolls_after(error: Exception, trips: int, exits: bool) -> bool:
    """Whether a static loop whose staging failed with ``error`` runs unrolled instead.

    A branch or condition rule broken only because the index is traced (``if i
    == 10: mode = "decay"``) holds once it is a Python int; autograph's other
    errors (a refusal, an unassigned variable) would recur when the loop is
    unrolled, and so would an error raised as the program ran eagerly.
    """
    if trips > UNROLL_LIMIT or (isinstance(error, errors.AutographError)
                                and not isinstance(error, INDEX_MAY_CAUSE)):
        return False
    if run_time_errors.raised_as_it_ran(error):
        return False  # run eagerly (`jax.vmap` without `jit`), it failed with its effects done
    # unrolled, each step after a traced exit test is a staged branch, which carries
    # the integer as int32 all the same. (One a traced branch picks, in a loop with no
    # exit, runs unrolled: the branch may be the user's own `jnp.where`, which plain
    # `jax.jit` runs unrolled too.)
    return not (isinstance(error, Int32OverflowError) and exits)


@lifted_for
def _traced_seq_for(seq: TracedSeq, plan: Plan, dead: tuple, body, state, names, extra_test):
    def test(k, *s):
        more = k < seq.length
        if extra_test is not None:
            from ..branches.logical import and_
            return and_(more, lambda: extra_test(*s))
        return more

    def loop_body(k, *s):
        return (k + 1,) + tuple(body(seq.element(k), *s))

    outside = OuterState((body, extra_test), state, names + dead)
    out = _staged_while(test, loop_body, (np.int32(0),) + tuple(state),
                        (errors.LOOP_INDEX,) + tuple(names), plan, loop=Construct.FOR)
    changed = outside.changed()
    if changed is not None:
        outside.restore()  # its trip count is traced: Python cannot run it
        raise _changes_outside(Construct.FOR, changed)
    return tuple(out[1:])
