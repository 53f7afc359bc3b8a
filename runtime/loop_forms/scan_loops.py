"""`for` loops over a static trip count staged as one ``lax.scan`` (``runtime.loop_plan``'s
``SCAN`` form), or with ``break`` or ``return`` as a loop that stops at its exit
(``EXITING_SCAN``, run by ``runtime.bounded.counted_loop``), with the checks that keep
the staged loop computing what Python computes."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

import jax
import jax.extend.core as jax_core
import jax.numpy as jnp
import numpy as np
from jax import lax

from autograph import errors

from ..carried import attributes, objects
from ..carried.carry import Carry, TrackedList, prepare_state, stabilize
from ..carried.in_place import InPlace
from ..core import intervals, key_order
from ..core.conditions import condition
from ..core.constructs import Construct
from ..core.jaxprs import make_jaxpr_and_tree
from ..core.values import (
    fail_at_run_time,
    flag_assigned,
    guard_when_asked,
    staging,
    taken_when,
)
from ..functions.index_meaning import PythonMeaningError
from ..python.iterables import Seq
from .bounded import counted_loop
from .loop_plan import UNROLL_LIMIT

# what must hold before a scan the caller may still give up is put into the program
# (see `before_binding`)
_BEFORE_BINDING: contextvars.ContextVar[Callable | None] = contextvars.ContextVar(
    "_BEFORE_BINDING", default=None)


@contextlib.contextmanager
def before_binding(check: Callable) -> Iterator[None]:
    """Calls ``check(carry, finals)`` once ``scan_for`` has traced its body, before it
    puts the ``lax.scan`` into the program being traced (``finals``: the carried Python
    ints it hands back exactly, by position). A check that raises gives the loop up
    there: a scan put in the program and then given up would stay in it wherever its
    body prints or checks something, and run beside the loop that replaces it."""
    token = _BEFORE_BINDING.set(check)
    try:
        yield
    finally:
        _BEFORE_BINDING.reset(token)


def _check_before_binding(carry, finals) -> None:
    check = _BEFORE_BINDING.get()
    if check is not None:
        check(carry, finals)


def stabilizer(carry):
    """``counted_loop``'s hook: the carry promoted to what one step makes, or None."""
    def hook(out_avals):
        return carry.arrays if stabilize(carry, out_avals) else None
    return hook


def lifted_for(run):
    """``run(seq_or_none, ..., body, state, names, extra_test)`` with Flax objects lifted,
    or else the attributes the body assigns carried (``runtime.attributes``)."""
    def staged(seq, *rest):
        *lead, body, state, names, extra_test = rest
        lifted = objects.lift(state, (body, extra_test), Construct.FOR)
        if lifted is None:
            attrs = attributes.find(state, (body, extra_test), names, Construct.FOR, leading=1)
            return attributes.carrying(attrs, lambda wrap, values, labels: run(
                seq, *lead, wrap(body, leading=1), values, labels,
                None if extra_test is None else wrap(extra_test, returns_state=False)),
                state, names)
        return lifted.finish(run(
            seq, *lead, lifted.wrap(body, leading=1), lifted.tokens(state) + (lifted.state,),
            names + (objects.OBJECTS,),
            None if extra_test is None else lifted.wrap(extra_test, returns_state=False)))
    return staged


@lifted_for
def scan_for(seq: Seq, k0: int, body, state, names, extra_test):
    n = seq.n - k0
    if n <= 0:
        return state
    xs = None if seq.xs is None else jax.tree_util.tree_map(
        lambda a: jnp.asarray(a)[k0:seq.n], seq.xs)
    ks = jnp.arange(k0, seq.n, dtype=np.int32)
    x0 = None if xs is None else jax.tree_util.tree_map(lambda a: a[0], xs)
    shared = InPlace(state, names, Construct.FOR)  # lists and dicts: carried once, written back
    body, extra_test = shared.wrap(body, leading=1), shared.wrap(extra_test, returns_state=False)
    state = prepare_state(shared.state, names, Construct.FOR,
                          lambda s: tuple(body(seq.element(ks[0], x0), *s)), may_skip=False)
    carry = Carry(state, names, Construct.FOR)
    lists = {i: len(v) for i, v in enumerate(state) if isinstance(v, list)}
    appended_count = {}

    def one(arrays, k, x):
        values = list(carry.unflatten(arrays))
        before = {i: list(values[i]) for i in lists}  # the body may append in place
        for i in lists:
            values[i] = TrackedList(values[i])
        out = list(flag_assigned(values, tuple(body(seq.element(k, x), *values))))
        grown = []
        for i, base_len in lists.items():
            v = out[i]
            if isinstance(v, list) and list.__len__(v) > base_len:
                if getattr(values[i], "read", False):
                    raise errors.LoopStateError(
                        "a list appended to in a staged `for` loop cannot be read in the loop",
                        observed=f"the loop body reads `{names[i]}` and appends to it; staged, "
                                 f"the appended items exist only after the loop",
                        variable=names[i],
                        fix=f"carry the item you need (e.g. `last = {names[i]}[-1]` before the "
                            f"loop, updated in the body) and append to `{names[i]}` only")
                # growing by `insert`, `[x] + ys` or a new list is not appending,
                # even when the old items are unchanged (an empty list has none)
                appended = isinstance(v, TrackedList) and v.grown_by_appending(values[i])
                v = list(list.__iter__(v))
                if not appended or not all(a is b for a, b in zip(v[:base_len], before[i])):
                    raise errors.LoopStateError(
                        "a list grown in a staged `for` loop may only be appended to",
                        observed=f"`{names[i]}` grows in one iteration other than by appending "
                                 f"at its end",
                        variable=names[i], fix="only append to the list inside the loop")
                grown.append(v[base_len:])
                appended_count[i] = len(v) - base_len
                out[i] = before[i]
            elif isinstance(v, TrackedList):
                out[i] = list(list.__iter__(v))
                grown.append([])
            else:
                grown.append([])
        return carry.check(tuple(out), arrays), grown

    if extra_test is not None:
        out = _exiting_for(seq, k0, xs, one, carry, names, extra_test, lists)
        return shared.finish(out)

    # The body's Python runs once, into a jaxpr that `lax.scan` replays. Where a
    # weakly typed carry comes out with another dtype (`s = 0` then `s = s + x`),
    # the carry is promoted to what the step made of it (`stabilize`, as
    # `counted_loop` does) and the step traced again.
    step_types: list = []  # of the last trace: (carry in, carry out) avals

    def step(arrays, kx):
        k, x = kx
        out = one(arrays, k, x)
        step_types[:] = [[jax.typeof(a) for a in arrays], [jax.typeof(a) for a in out[0]]]
        return key_order.ordered(out)  # appended dicts keep their keys' order

    def trace():
        with staging():
            return make_jaxpr_and_tree(step, carry.arrays, (ks[0], x0))

    closed, out_tree = trace()
    if not _same_types(*step_types):
        stabilize(carry, step_types[1])
        closed, out_tree = trace()
    extra = [intervals.known(x) for x in jax.tree_util.tree_leaves(xs)]
    finals = _refuse_int_overflow(closed, carry, k0, extra, seq.n - k0, to_end=True)
    # Python floats of the index (`i * 0.1`): the values plain `jax.jit` computes, scanned
    try:
        hoisted = (intervals.hoist_python_floats(closed, len(carry.arrays), k0, seq.n - 1, extra)
                   if type(seq.n) is int else None)
    except intervals.PythonValueUnknown as e:
        raise _mismatch(str(e)) from None
    tables: list = []
    if hoisted is not None:
        closed, tables = hoisted
    _refuse_python_mismatch(closed, carry, (k0, seq.n - 1), extra + [None] * len(tables),
                            floats=type(seq.n) is int and seq.n - k0 <= intervals.FOLLOW_LIMIT)
    run = jax_core.jaxpr_as_fun(closed)

    def replay(arrays, kxh):
        k, x, h = kxh
        out = jax.tree_util.tree_unflatten(
            out_tree, run(*jax.tree_util.tree_leaves((arrays, (k, x))), *h))
        return key_order.ordered(out)

    _check_before_binding(carry, finals)
    with staging():
        final, grown = lax.scan(replay, carry.arrays, (ks, xs, tuple(tables)))
    final = [finals.get(i, a) for i, a in enumerate(final)]  # Python ints, as under jit
    values = list(carry.unflatten(final, final=True))
    for (i, base_len), items in zip(lists.items(), grown):
        if items:
            m = appended_count[i]
            extra = [key_order.tree_map(lambda a, k=k: a[k], items[j])
                     for k in range(n) for j in range(m)]
            values[i] = list(values[i]) + extra
    return shared.finish(tuple(values))


def _refuse_int_overflow(closed, carry, first_index: int, extra, steps: int,
                         to_end: bool = False) -> dict[int, int]:
    """A staged loop computes the integers it carries in int32, where the Python
    loop ``jax.jit`` runs keeps them exact: one that would outgrow int32 within
    the loop's first steps (``fact *= i``) is refused, and the loop runs as Python.

    ``closed`` is the body's jaxpr (the carry, the step index from
    ``first_index``, then inputs whose intervals are ``extra``), ``steps`` its
    trip count. With ``to_end``, the loop is followed to its last step where
    it is short enough (``intervals.FOLLOW_LIMIT``), and the carried Python
    ints that stay exactly known are returned, by position in the carry, with
    their final values: under ``jax.jit`` they come out of the loop as Python
    ints (``n += 1`` then ``jnp.zeros(n)``).
    """
    if type(steps) is not int or type(first_index) is not int:
        return {}  # a symbolic length (`jax.export`): no steps to follow
    followed = _followed_ints(closed, carry, first_index, extra, steps, to_end)
    if followed.overflow is None:
        return {i: v for i, v in followed.finals.items() if i not in carry.strengthen}
    raise overflow_error(followed, carry.owners[followed.overflow[0]], steps)


def _within(followed: intervals.Followed, steps) -> str:
    if steps is None:
        return f"after {followed.steps} steps, and this run of the loop made that many"
    return f"within the loop's {steps} steps"


def _followed_ints(closed, carry, first_index, extra, steps, to_end: bool = False):
    """``intervals.follow`` of the carry's integers (see ``_refuse_int_overflow``)."""
    if type(steps) is not int or type(first_index) is not int:
        return intervals.Followed(None, {})  # a symbolic length (`jax.export`)
    return intervals.follow(closed, carry.starts, len(carry.arrays), first_index, extra,
                            steps if to_end else min(steps, intervals.STEPS))


def overflow_error(followed: intervals.Followed, name: str, steps) -> Int32OverflowError:
    """The error for the overflow ``followed`` found, of the carried ``name``, in a
    loop of ``steps`` steps (None: known only at run time)."""
    assert followed.overflow is not None
    bound = followed.overflow[1]
    within = _within(followed, steps)
    short = ("run a loop short enough to run as Python" if steps is not None else
             f"start it as an array of the dtype it should wrap in (`jnp.{followed.dtype}(1)`)")
    if followed.branched:
        error = Int32OverflowError(
            f"an integer carried by a staged loop would outgrow {followed.dtype}",
            observed=f"`{name}` is a Python int that a traced branch updates (a Python "
                     f"`if` when the function runs eagerly); it may reach "
                     f"{intervals.describe(bound)} {within}; staged, the loop computes it "
                     f"in {followed.dtype}, which wraps around",
            variable=name,
            fix="compute it as a float (`1.0` rather than `1`), or reduce it as you go "
                "(`h = (h * 31 + i) % m`), or start it as an array of the dtype it should "
                f"wrap in (`jnp.{followed.dtype}(1)`)")
    else:
        error = Int32OverflowError(
            f"an integer carried by a staged loop would outgrow {followed.dtype}",
            observed=f"`{name}` reaches {intervals.describe(bound)} {within}; staged, the "
                     f"loop computes it in {followed.dtype}, which wraps around (a Python loop "
                     f"keeps it exact)",
            variable=name,
            fix=f"compute it as a float (`1.0` rather than `1`), or reduce it as you go (`h = "
                f"(h * 31 + i) % m`), or {short}")
    error.branched = followed.branched
    return error


class Int32OverflowError(errors.LoopStateError):
    """A carried integer would outgrow int32 (see ``_refuse_int_overflow``); ``branched``
    where a traced branch picks it."""

    branched = False


def _refuse_python_mismatch(closed, carry, index: tuple[int, int], extra,
                            floats: bool = False) -> None:
    """A number the body computes from the index alone is a Python number under
    ``jax.jit`` and an int32 array staged: where the two differ at some step (an
    integer that outgrows its dtype, a division by zero), the loop runs as Python
    (see ``intervals.python_mismatch``)."""
    if type(index[0]) is not int or type(index[1]) is not int:
        return
    why = intervals.python_mismatch(closed, len(carry.arrays), index, extra, floats=floats)
    if why is not None:
        raise _mismatch(why)


def _mismatch(why: str) -> PythonMeaningError:
    return PythonMeaningError(
        "a staged loop would compute its index's numbers differently from Python",
        observed=f"the body {why}")




def _same_types(avals_in, avals_out) -> bool:
    """Whether a loop step's carry comes out with the shapes and dtypes it went in with."""
    return len(avals_in) == len(avals_out) and all(
        a.shape == b.shape and a.dtype == b.dtype for a, b in zip(avals_in, avals_out))


def _exiting_for(seq, k0, xs, one, carry, names, extra_test, lists):
    """A static-trip `for` with `break` or `return`: a loop that stops when it exits."""
    def test(arrays):  # `counted_loop` makes it a boolean array
        return condition(extra_test(*carry.unflatten(arrays)), "a `for` loop's exit test")

    def body(arrays, k):
        x = None if xs is None else jax.tree_util.tree_map(
            lambda a: lax.dynamic_index_in_dim(a, k, keepdims=False), xs)
        with taken_when(guard_when_asked(lambda: test(arrays), (extra_test,))):  # see above
            new, grown = one(arrays, k + k0, x)
        if any(grown):
            name = names[next(i for i, g in zip(lists, grown) if g)]
            raise errors.LoopStateError(
                "a list cannot grow in a loop that may stop early",
                observed=f"`{name}` is appended to in a loop with `break` or `return`, so "
                         f"its final length is only known at run time",
                variable=name,
                fix="preallocate an array and write item i with `.at[i].set(...)`, "
                    "keeping a count of the items written")
        return new

    with staging():
        n = seq.n - k0

        def run(test, step, arrays, stabilize, check=None):
            return counted_loop(test, step, arrays, n, stabilize=stabilize, check=check)

        try:
            final = run(test, body, carry.arrays, stabilizer(carry),
                        check=lambda closed: _check_exiting(closed, carry, k0, n))
        except Outgrows as found:
            if found.carry is not carry:
                raise  # an inner loop's
            # a step counts where the loop goes on after it, or where it changed the
            # integer: the step that exits (`if i > x: break` before `fact *= i`) may
            # leave it as it was
            final = counting(run, test, body, found, goes_on=test)
    return carry.unflatten(final, final=True)


class Outgrows(Exception):
    """A loop's check of its own body found a carried Python int that its steps push
    out of its dtype (``followed``); raised from the trace, caught by the loop whose
    ``carry`` it is, which then runs ``counting``."""

    def __init__(self, followed: intervals.Followed, carry):
        super().__init__()
        self.followed, self.carry = followed, carry


def counting(run, test, step, found: Outgrows, goes_on=None) -> list:
    """The loop ``run(test, step, arrays, stabilize)`` makes, counting its steps: it
    fails when the program runs where it ran as many as ``found`` says a carried Python
    int needs to outgrow its dtype (eagerly an exact Python int; staged, it wraps
    around). A loop that stops sooner keeps it exact, as the Python loop does.

    Every step counts, or with ``goes_on(new arrays)`` (a loop that may exit inside
    a step) those after which the loop goes on or the integer changed.
    """
    followed, carry = found.followed, found.carry
    assert followed.overflow is not None
    position = followed.overflow[0]
    hook = stabilizer(carry)

    def stabilize(out_avals):
        arrays = hook(out_avals[:-1])
        return None if arrays is None else list(arrays) + [jnp.int32(0)]

    def counted_step(a, *rest):
        new = list(step(a[:-1], *rest))
        if goes_on is None:
            return new + [a[-1] + 1]
        made = jnp.logical_or(new[position] != a[position], goes_on(new))
        return new + [a[-1] + made.astype(jnp.int32)]

    counted = run(lambda a: test(a[:-1]), counted_step, list(carry.arrays) + [jnp.int32(0)],
                  stabilize)
    fail_at_run_time(counted[-1] < followed.steps,
                     overflow_error(followed, carry.owners[position], None))
    return list(counted[:-1])


def _check_exiting(closed, carry, k0: int, n: int) -> None:
    """The checks of ``scan_for`` for the body of a loop that may stop early (its step
    index counts from 0; the body adds ``k0``). An integer that would outgrow int32
    is checked last: the loop is then counted (``counting``)."""
    if type(n) is int:
        # its floats of the index are not given as Python computes them (as a loop's
        # without an exit are): one Python computes in float64 keeps the loop in Python,
        # unless it is too long to unroll (its exit may be traced): then float32, said so
        # (its integers must be Python's all the same)
        why = intervals.python_mismatch(closed, len(carry.arrays), (0, n - 1), [], floats=True)
        if why is not None and n <= UNROLL_LIMIT:
            raise _mismatch(why)
        if why is not None:
            _refuse_python_mismatch(closed, carry, (0, n - 1), [])
            errors.warn(f"{errors.here()}this `for` loop, which "
                        f"may stop early, is staged though its body {why}: its {n} steps are "
                        f"more than the {UNROLL_LIMIT} it would run unrolled; compute such "
                        f"floats from `jnp.float32(i)` to make them float32 by design")
    _check_before_binding(carry, {})  # a loop that may stop early hands back no Python int
    followed = _followed_ints(closed, carry, 0, [], n)
    if followed.overflow is not None:
        raise Outgrows(followed, carry)
