"""Loops whose trip count is only known at run time, differentiable in reverse mode.

A staged ``while`` with no most-iterations count runs::

    while test(state):
        state = body(state)

``lax.while_loop`` runs it, but reverse-mode differentiation (``jax.grad``)
cannot go through it: how many steps there are to undo is known only once the
loop has run. Here the loop is a ``jax.custom_jvp`` whose primal is that
``lax.while_loop``. Its rule runs the loop once more as a *sweep* that also
keeps some of its states, and gives the output tangent as the linear map
``t -> J t`` (``J``: the loop's Jacobian at its inputs). The sweep and the map
are one primitive, ``checkpointed_while``, with a rule for each
transformation:

* evaluated (``jax.jvp``, ``jax.jacfwd``): the map is a ``lax.while_loop``
  that carries the state and its tangent, as JAX differentiates a
  ``while_loop`` forward;
* transposed (``jax.grad``, ``jax.vjp``): ``c -> J^T c``, the checkpointed
  backward pass below, which starts from the states the sweep kept;
* batched (``jax.vmap``): the same primitive over the batched loop, whose
  elements advance in lock step (an element whose test has failed keeps its
  state), so the sweep and the backward pass follow one schedule for the
  whole batch;
* differentiated again (``jax.hessian``, ``jax.grad(jax.grad(f))``): the
  second derivatives ``SECOND`` (``c -> c^T D^2 Phi [., d]``) and ``TANGENT2``
  (``D^2 Phi [t, d]``), each the other's transpose, so reverse over reverse
  works as forward over reverse does; beyond the second, the derivatives of
  the *augmented* loop, which carries the tangents along (``_third``).

Which of these happens is JAX's choice after the loop is traced
(``jax.grad(jax.jit(f))`` traces the loop before the gradient sees it), so
nothing here depends on the mode at trace time. The body and the test are
traced once, into jaxprs every form replays; values they close over (tracers
of enclosing traces included) become explicit inputs, so they get tangents
and cotangents too. Integer and boolean state gets none. The derivative
forms leave out the body's run-time checks and prints (callbacks that return
nothing): the primal loop makes them, once per step.

The backward pass keeps ``S`` states (``set_loop_options(checkpoints=S)``, or
as many as fit in ``set_loop_options(checkpoint_memory=B)`` bytes; by default
128, fewer for a state over 2 MiB); ``T``, about ``S/2`` of them, serve the
sweep:

1. The sweep counts the loop's ``n`` steps and keeps its state every ``s``
   steps in ``T`` slots: ``s`` starts at 1 and doubles whenever the slots are
   full, which frees every other slot (no state is moved). After the sweep
   ``s`` is the least power of two with ``n <= s * T``.
2. From the last step back: the state before the step is recomputed from the
   nearest kept state and the step's ``jax.vjp`` is applied to the
   cotangent. While recomputing, states are kept in the free slots where
   binomial checkpointing (Griewank's *revolve*) places them.

Bounds, for ``n`` steps of a state of ``B`` bytes:

* memory: ``(S + 1) * B`` for the kept states, plus the working state and its
  cotangent, whatever ``n`` is;
* time: the sweep's ``n`` steps and ``n`` vjp steps. With ``n <= T`` every
  state is kept and nothing is recomputed; otherwise each step is recomputed
  at most ``r`` times, the least ``r`` with ``C(S - T + 1 + r, r) >= s``
  (``C``: binomial coefficient). With ``S = 128``: ``n = 1,000`` gives
  ``s = 16``, ``r = 1``; ``n = 100,000`` gives ``s = 2048``, ``r = 2``;
  ``n = 10^7`` gives ``r = 4``.

Under ``jax.vmap`` the loop runs until every element's test has failed, as
``lax.while_loop`` does, and the kept states are the batch's.
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.extend.core as jax_core
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.core import ShapedArray
from jax.custom_derivatives import SymbolicZero
from jax.interpreters import ad, batching, mlir

from autograph import errors, jax_internals

from ..core.jaxprs import aval_struct, make_jaxpr, trace_loop, without_consts
from ..functions import transforms
from .loop_plan import CHECKPOINTS  # states the backward pass keeps, by default

__all__ = ["checkpointed_loop", "default_checkpoints", "CHECKPOINTS"]

_CHECKPOINT_BYTES = 256 * 2**20  # fewer by default where that many states would pass this
_MIN_CHECKPOINTS = 8
_REPETITIONS = 64  # the most recomputations per step the plan tells apart


def _known_size(shape) -> int:
    """The elements of ``shape``, a symbolic dimension (an export for every size)
    counted as 1: the number of checkpoints must be known while tracing, and a
    size known only when the program runs cannot lower it."""
    n = 1
    for d in shape:
        n *= d if isinstance(d, int) else 1
    return n


def default_checkpoints(state_bytes: int, memory: int | None = None) -> int:
    """How many states the backward pass keeps for a loop state of ``state_bytes`` bytes:
    as many as fit in ``memory`` bytes (at least 2), or by default ``CHECKPOINTS``,
    fewer where those would take more than 256 MiB."""
    if memory is not None:
        return max(2, int(memory) // max(state_bytes, 1) - 1)  # and the scratch slot
    fit = _CHECKPOINT_BYTES // max(state_bytes, 1)
    return int(min(CHECKPOINTS, max(_MIN_CHECKPOINTS, fit)))


def checkpointed_loop(test: Callable[[list], Any], body: Callable[[list], Sequence[Any]],
                      arrays: Sequence[Any], *, checkpoints: int | None = None,
                      maximum: int | None = None,
                      stabilize: Callable[[Sequence[Any]], Sequence[Any] | None] | None = None,
                      checkpoint_memory: int | None = None,
                      check: Callable[[Any], None] | None = None) -> list:
    """Runs ``body`` while ``test(arrays)``, differentiably in forward and reverse mode.

    Args:
      test: ``test(arrays) -> bool`` (a scalar, traced or not).
      body: ``body(arrays) -> arrays`` with the same avals.
      arrays: the carried arrays (a list).
      checkpoints: how many states the backward pass keeps (at least 2); None:
        :func:`default_checkpoints`.
      maximum: the most steps (the loop also stops after that many), or None.
      checkpoint_memory: without ``checkpoints``, the bytes the kept states may
        take (:func:`default_checkpoints`), or None.
      stabilize: optional ``stabilize(out_avals) -> arrays or None``: given
        what one step of ``body`` produces, new initial arrays (promoted to
        the dtypes the body makes), or None when they already match.
      check: optional ``check(body_jaxpr)``, called once the body is traced
        (its inputs: the arrays; with ``maximum``, then the step count); it
        may raise to refuse the loop.

    Returns:
      The final arrays, as a list.

    Raises:
      ValueError: ``checkpoints`` is less than 2.
    """
    if checkpoints is not None and int(checkpoints) < 2:
        raise ValueError(f"checkpoints must be >= 2, got {checkpoints}")
    if maximum is not None:  # a step count in the state, checked by the test
        limit = int(maximum)
        counted = checkpointed_loop(
            lambda a: jnp.logical_and(a[-1] < limit, test(a[:-1])),
            lambda a: list(body(a[:-1])) + [a[-1] + 1], list(arrays) + [jnp.int32(0)],
            checkpoints=checkpoints, checkpoint_memory=checkpoint_memory,
            stabilize=None if stabilize is None else _counted(stabilize), check=check)
        return counted[:-1]
    arrays, test_jaxpr, body_jaxpr = trace_loop(test, body, arrays, stabilize)
    if check is not None:
        check(body_jaxpr)
    if checkpoints is None:
        checkpoints = default_checkpoints(
            sum(_known_size(a.shape) * a.dtype.itemsize for a in body_jaxpr.in_avals),
            checkpoint_memory)
    consts = list(test_jaxpr.consts) + list(body_jaxpr.consts)
    n_test = len(test_jaxpr.consts)
    test_open, body_open = without_consts(test_jaxpr), without_consts(body_jaxpr)
    run_test, run_body = jax_core.jaxpr_as_fun(test_open), jax_core.jaxpr_as_fun(body_open)

    def primal(consts, arrays):
        bound = jax_internals.bind_while(test_open, body_open, consts[:n_test],
                                         consts[n_test:], arrays)
        if bound is not None:  # the jaxprs as they are, not traced again
            return list(bound)
        return list(lax.while_loop(lambda a: run_test(*consts[:n_test], *a)[0],
                                   lambda a: run_body(*consts[n_test:], *a), list(arrays)))

    # The derivative replays the test and the body: run-time checks and prints
    # (callbacks with no result) are left out there, the primal loop makes them.
    test_pure, body_pure = _without_effects(test_jaxpr), _without_effects(body_jaxpr)
    if test_pure is None or body_pure is None:  # an effect the replay would repeat
        return _not_differentiated(primal, consts, arrays)
    if not arrays:
        return primal(consts, arrays)
    # the jaxprs the derivative forms run, made when a derivative is first asked for
    const_avals = [aval_struct(v.aval) for v in test_jaxpr.jaxpr.constvars
                   + body_jaxpr.jaxpr.constvars]
    array_avals = [aval_struct(a) for a in body_jaxpr.in_avals]

    @functools.cache
    def loop() -> _Spec:
        run_t = jax_core.jaxpr_as_fun(without_consts(test_pure))
        run_b = jax_core.jaxpr_as_fun(without_consts(body_pure))
        test_all = make_jaxpr(lambda c, a: [run_t(*c[:n_test], *a)[0]], const_avals, array_avals)
        body_all = make_jaxpr(lambda c, a: list(run_b(*c[n_test:], *a)), const_avals,
                              array_avals)
        return _Spec(test=test_all, body=body_all, n_consts=len(consts),
                     checkpoints=int(checkpoints))

    effects = bool(test_jaxpr.effects or body_jaxpr.effects)
    run = jax.custom_jvp(primal)
    run.defjvp(functools.partial(_loop_jvp, loop, primal if effects else None),
               symbolic_zeros=True)
    try:
        return list(run(consts, arrays))
    except NotImplementedError:  # effects `custom_jvp` refuses
        return _not_differentiated(primal, consts, arrays)


def _counted(stabilize):
    """``stabilize`` for a state that ends with a step count."""
    def hook(out_avals):
        promoted = stabilize(out_avals[:-1])
        return None if promoted is None else list(promoted) + [jnp.int32(0)]
    return hook


def _not_differentiated(primal, consts, arrays) -> list:
    """The plain ``lax.while_loop``; reverse mode names this loop in its error."""
    where = errors.current_location()
    if where is not None:
        transforms.note_unbounded_under_reverse(where)
    return primal(consts, arrays)


def _without_effects(closed: jax_core.ClosedJaxpr) -> jax_core.ClosedJaxpr | None:
    """``closed`` without its callbacks that return nothing; None if other effects remain."""
    jaxpr = closed.jaxpr
    if not jaxpr.effects:
        return closed
    eqns = [e for e in jaxpr.eqns if not (e.effects and not e.outvars)]
    if any(e.effects for e in eqns):
        return None
    return jax_core.ClosedJaxpr(jaxpr.replace(eqns=eqns, effects=type(jaxpr.effects)()),
                                closed.consts)


def _inexact(dtype) -> bool:
    return bool(jnp.issubdtype(dtype, jnp.inexact))


class _Spec(NamedTuple):
    """A loop: its test and body as jaxprs of ``(*consts, *arrays)``."""

    test: jax_core.ClosedJaxpr  # -> [bool[*lanes]]
    body: jax_core.ClosedJaxpr  # -> arrays
    n_consts: int
    checkpoints: int

    def __repr__(self) -> str:  # the primitive's parameter in a printed jaxpr
        return (f"while(test: {len(self.test.jaxpr.eqns)} eqns, body: "
                f"{len(self.body.jaxpr.eqns)} eqns, checkpoints={self.checkpoints})")

    def __hash__(self) -> int:
        return hash((id(self.test), id(self.body), self.n_consts, self.checkpoints))

    def __eq__(self, other) -> bool:
        return (isinstance(other, _Spec) and self.test is other.test
                and self.body is other.body and self.n_consts == other.n_consts
                and self.checkpoints == other.checkpoints)

    @property
    def n_arrays(self) -> int:
        return len(self.body.out_avals)

    @property
    def floats(self) -> tuple[int, ...]:
        """The carried arrays that have tangents (inexact dtypes)."""
        avals = self.body.in_avals[self.n_consts:]
        return tuple(i for i, a in enumerate(avals) if _inexact(a.dtype))

    def run_test(self, consts, arrays):
        return jax_core.jaxpr_as_fun(self.test)(*consts, *arrays)[0]

    def run_body(self, consts, arrays) -> list:
        return list(jax_core.jaxpr_as_fun(self.body)(*consts, *arrays))


def _loop_jvp(make_loop: Callable[[], _Spec], primal: Callable | None, primals, tangents):
    """The ``custom_jvp`` rule: the sweep, and the output tangent as the linear map."""
    loop = make_loop()
    consts, arrays = primals
    t_consts, t_arrays = tangents
    swept = _checkpointed_while_p.bind(*consts, *arrays, loop=loop, form=Form.SWEEP,
                                       lanes=0, tbatch=(), diff=())
    out, saved = swept[:loop.n_arrays], swept[loop.n_arrays:]
    if primal is not None:  # the sweep leaves out the body's effects; they happen here
        out = primal(consts, arrays)
    floats = loop.floats
    diff = tuple(i for i, t in enumerate(t_consts)
                 if not isinstance(t, SymbolicZero) and _inexact(jnp.result_type(consts[i])))
    t_out: list[Any] = [np.zeros(jnp.shape(v), jax.dtypes.float0) for v in out]
    if all(isinstance(t_arrays[i], SymbolicZero) for i in floats) and not diff:
        for i in floats:
            t_out[i] = jnp.zeros_like(out[i])
        return out, t_out
    lin = [_instantiate(t_arrays[i]) for i in floats] + [t_consts[i] for i in diff]
    found = _checkpointed_while_p.bind(*consts, *arrays, *saved, *lin, loop=loop,
                                       form=Form.TANGENT, lanes=0, tbatch=(), diff=diff)
    for i, t in zip(floats, found):
        t_out[i] = t
    return out, t_out


def _instantiate(t):
    if isinstance(t, SymbolicZero):
        return jnp.zeros(t.shape, t.dtype)  # it answers for its aval
    return t


# -- the primitive ----------------------------------------------------------------------


class Form(enum.Enum):
    """What ``checkpointed_while`` computes.

    Inputs are ``*consts, *arrays`` (the loop's inputs), then for the other
    forms what the sweep kept and the linear inputs. ``Phi(consts, arrays)``
    is the loop's map to its final inexact arrays; its derivatives are taken
    in the inexact arrays and in the consts that ``diff`` (and ``diff2``) name.
    """

    SWEEP = "sweep"  # -> final arrays, kept states (one per array), their positions, n
    TANGENT = "tangent"  # lin: t: tangents of the inexact arrays, then of the consts in `diff`
    #                      -> D Phi [t]: tangents of the inexact arrays after the loop
    COTANGENT = "cotangent"  # lin: c: cotangents of the inexact arrays after the loop
    #                          -> c^T D Phi: theirs before it, then those of the consts in `diff`
    # The second derivatives, bilinear in their two linear inputs; each is the
    # other's transpose, so `jax.grad(jax.grad(f))` goes through them:
    SECOND = "second"  # lin: c as for COTANGENT, then d: a tangent as for TANGENT, over
    #                    `diff2` -> c^T D^2 Phi [., d], laid out as COTANGENT's result
    TANGENT2 = "tangent2"  # lin: t as for TANGENT (over `diff`), then d (over `diff2`)
    #                        -> D^2 Phi [t, d], laid out as TANGENT's result


# Parameters besides `loop` and `form`:
#   lanes: leading dimensions of every carried array that are batch elements
#     (`jax.vmap`): the test gives a bool per element, and an element whose test
#     fails keeps its state while the others go on.
#   tbatch: sizes of leading dimensions only the linear values have (`jax.vmap`
#     over tangents alone, as `jax.jacfwd` does); the linear value of a carried
#     array has the shape tbatch + lanes + its own.
#   diff: the consts (indices) whose tangents are linear inputs or outputs.
# The kept states have the shape (S + 1,) + lanes + their own.
_checkpointed_while_p = jax_core.Primitive("checkpointed_while")
_checkpointed_while_p.multiple_results = True


def _n_primal(loop: _Spec, form: Form) -> int:
    n = loop.n_consts + loop.n_arrays
    return n if form is Form.SWEEP else n + loop.n_arrays + 2


def _split(args, loop: _Spec, form: Form):
    """(consts, arrays, kept (states..., positions, n), linear inputs) of ``args``."""
    c, a = loop.n_consts, loop.n_consts + loop.n_arrays
    p = _n_primal(loop, form)
    return list(args[:c]), list(args[c:a]), list(args[a:p]), list(args[p:])


class _Steps:
    """Steps of one loop at given consts: forward and differentiated."""

    def __init__(self, loop: _Spec, consts, lanes: int, tbatch: tuple[int, ...],
                 diff: tuple[int, ...], masked: bool = False):
        self.loop, self.consts, self.lanes, self.tbatch, self.diff = (
            loop, list(consts), lanes, tbatch, diff)
        self.floats = loop.floats
        # a step where the test fails changes nothing: always so with lanes, and on
        # request, for a schedule (kept states, n) longer than this loop's own
        self.masked = masked or lanes > 0

    def test(self, arrays):
        return self.loop.run_test(self.consts, arrays)

    def active(self, arrays):
        return jnp.any(self.test(arrays))

    def _keep(self, mask, new, old, linear: bool) -> list:
        """``new`` where an element's test held, else ``old``."""
        if not self.masked:
            return list(new)
        lead = (1,) * len(self.tbatch) if linear else ()

        def pick(n, o):
            m = mask.reshape(lead + mask.shape + (1,) * (o.ndim - len(lead) - mask.ndim))
            return jnp.where(m, n, o)
        return [pick(n, o) for n, o in zip(new, old)]

    def _tmap(self, fn):
        for _ in self.tbatch:
            fn = jax.vmap(fn)
        return fn

    def _differentiable(self, arrays):
        """``f(inexact arrays, diff consts) -> (inexact arrays, the others)`` and its inputs."""
        floats = self.floats

        def f(xf, dc):
            x = list(arrays)
            for i, v in zip(floats, xf):
                x[i] = v
            c = list(self.consts)
            for i, v in zip(self.diff, dc):
                c[i] = v
            out = self.loop.run_body(c, x)
            return [out[i] for i in floats], [v for i, v in enumerate(out) if i not in floats]

        return f, [arrays[i] for i in floats], [self.consts[i] for i in self.diff]

    def _merge(self, xf, others) -> list:
        it_f, it_o = iter(xf), iter(others)
        return [next(it_f) if i in self.floats else next(it_o)
                for i in range(self.loop.n_arrays)]

    def step(self, arrays) -> list:
        out = self.loop.run_body(self.consts, arrays)
        if self.masked:
            out = self._keep(self.test(arrays), out, arrays, linear=False)
        return out

    def jvp_step(self, arrays, t, t_consts):
        """The next arrays, and the tangents of their inexact ones."""
        f, xf, dc = self._differentiable(arrays)
        out_f, lin, others = jax.linearize(f, xf, dc, has_aux=True)
        t_out = list(self._tmap(lin)(list(t), list(t_consts)))
        out = self._merge(out_f, others)
        if self.masked:
            mask = self.test(arrays)
            out = self._keep(mask, out, arrays, linear=False)
            t_out = self._keep(mask, t_out, t, linear=True)
        return out, t_out

    def vjp_step(self, arrays, ct, ct_consts):
        """The cotangents before the step, from those after it; the consts' summed."""
        f, xf, dc = self._differentiable(arrays)
        _, pullback, _ = jax.vjp(f, xf, dc, has_aux=True)
        if not self.masked:
            c_x, c_c = self._tmap(pullback)(list(ct))
            return list(c_x), [a + b for a, b in zip(ct_consts, c_c)]
        # an element whose test failed is not changed by the step
        mask = self.test(arrays)
        c_in = self._keep(mask, ct, [jnp.zeros_like(c) for c in ct], linear=True)
        c_x, c_c = self._tmap(pullback)(c_in)
        c_x = self._keep(mask, c_x, ct, linear=True)
        return list(c_x), [a + b for a, b in zip(ct_consts, c_c)]


def _slots(checkpoints: int) -> int:
    """How many of the ``checkpoints`` slots the sweep uses: even, about half."""
    return 2 * max(1, checkpoints // 4)


def _write(buf, slot, values) -> list:
    return [lax.dynamic_update_index_in_dim(b, v, slot, 0) for b, v in zip(buf, values)]


def _read(buf, slot) -> list:
    return [lax.dynamic_index_in_dim(b, slot, 0, keepdims=False) for b in buf]


def _sweep(steps: _Steps, arrays, checkpoints: int):
    """The loop from ``arrays``, keeping its state every ``stride`` steps (see above).

    ``order[:count]`` are the slots of the kept states by position, and
    ``order[count:]`` the free ones: doubling the stride keeps every other
    state and frees the slots between, in order, for the states to come.
    """
    sweep_slots = _slots(checkpoints)
    thinned = np.concatenate([np.arange(0, sweep_slots, 2), np.arange(1, sweep_slots, 2)])

    def keep_then_run(s):  # keep x (at k, a multiple of stride), then run `stride` steps
        x, k, stride, count, order, buf, pos = s
        full = count == sweep_slots
        order = lax.cond(full, lambda o: o[thinned], lambda o: o, order)
        count, stride = jnp.where(full, sweep_slots // 2, count), jnp.where(full, 2 * stride,
                                                                             stride)
        slot = order[count]
        buf = _write(buf, slot, x)
        pos = lax.dynamic_update_index_in_dim(pos, k, slot, 0)
        x, j = lax.while_loop(lambda t: (t[1] < stride) & steps.active(t[0]),
                              lambda t: (steps.step(t[0]), t[1] + 1), (x, jnp.int32(0)))
        return x, k + j, stride, count + 1, order, buf, pos

    def fill(s):  # while the slots last: keep every state, one step per iteration
        x, k, buf, pos = s
        buf, pos = _write(buf, k, x), lax.dynamic_update_index_in_dim(pos, k, k, 0)
        return steps.step(x), k + 1, buf, pos

    buf = [jnp.zeros((checkpoints + 1,) + jnp.shape(a), jnp.result_type(a)) for a in arrays]
    pos = jnp.full((checkpoints + 1,), -1, jnp.int32)
    # the first `sweep_slots` steps as `keep_then_run` takes them at stride 1, in one
    # loop (a loop that ends there needs nothing more); then on, from where it left
    x, k, buf, pos = lax.while_loop(lambda s: (s[1] < sweep_slots) & steps.active(s[0]),
                                    fill, (list(arrays), jnp.int32(0), buf, pos))
    x, n, stride, _, _, buf, pos = lax.while_loop(
        lambda s: steps.active(s[0]), keep_then_run,
        (x, k, jnp.int32(1), k, jnp.arange(sweep_slots, dtype=jnp.int32), buf, pos))
    pos = jnp.where((pos >= 0) & (pos % stride == 0), pos, -1)  # slots freed by doubling
    return list(x) + list(buf) + [pos, n]


def _backward(steps: _Steps, buf, pos, n, ct, checkpoints: int) -> list:
    """``J^T ct``: from the last step back, from the states the sweep kept.

    The kept states form a stack, by position (each new one lies past the
    others, and the highest is undone first). ``perm`` orders the slots:
    ``perm[:sp]`` hold the kept states, the lowest position first, and
    ``perm[sp:checkpoints]`` are free; ``at[:sp]`` are their positions. The
    slot ``checkpoints`` is scratch: a step that keeps nothing writes there, so
    every step writes and no step branches on it.
    """
    scratch = checkpoints
    slot_ids = jnp.arange(checkpoints + 1, dtype=jnp.int32)

    def put(array, value, index):
        return lax.dynamic_update_index_in_dim(array, value, index, 0)

    def get(array, index):
        return lax.dynamic_index_in_dim(array, index, 0, keepdims=False)

    def advance(s):  # from the state on top of the stack to the one at `end - 1`
        buf, perm, at, sp, cur, where, end, c, c_consts = s

        def one(u):
            # binomial checkpointing while not everything fits; once it does (and it
            # then stays so: each step keeps its state), every state but the last
            buf, at, sp, cur, where, target = u
            fitting = end - where <= checkpoints - sp + 2
            cur, where = steps.step(cur), where + 1
            keep = jnp.where(fitting, where + 1 < end, where == target)
            buf = _write(buf, jnp.where(keep, get(perm, sp), scratch), cur)
            at = put(at, where, jnp.where(keep, sp, checkpoints))
            sp = sp + keep
            target = lax.cond(keep & ~fitting,
                              lambda: _plan(where, end, checkpoints - sp, checkpoints),
                              lambda: target)
            return buf, at, sp, cur, where, target

        # one loop, so the body is traced and compiled once
        buf, at, sp, cur, where, _ = lax.while_loop(
            lambda u: u[4] + 1 < end, one,
            (buf, at, sp, cur, where, _plan(where, end, checkpoints - sp, checkpoints)))
        return buf, perm, at, sp, cur, where, end, c, c_consts

    def undo(s):  # the last step not undone yet, while its state is at hand
        buf, perm, at, sp, cur, where, end, c, c_consts = s
        c, c_consts = steps.vjp_step(cur, c, c_consts)
        sp = sp - (get(at, sp - 1) == where)  # that state is no longer needed
        return (buf, perm, at, sp, _read(buf, get(perm, sp - 1)), get(at, sp - 1), where,
                c, c_consts)

    def sweep_back(s):
        s = advance(s)
        return lax.while_loop(lambda s: (s[5] + 1 == s[6]) & (s[6] > 0), undo, s)

    # kept slots by position; then the free ones, the scratch slot last
    big = jnp.iinfo(jnp.int32).max
    perm = jnp.argsort(jnp.where(pos >= 0, pos, jnp.where(slot_ids < scratch, big - 1, big)))
    perm = perm.astype(jnp.int32)
    at = pos[perm]
    sp = jnp.sum(pos >= 0).astype(jnp.int32)
    c_consts = [jnp.zeros(steps.tbatch + jnp.shape(steps.consts[i]),
                          jnp.result_type(steps.consts[i])) for i in steps.diff]
    s = (list(buf), perm, at, sp, _read(buf, get(perm, sp - 1)), get(at, sp - 1), n,
         list(ct), c_consts)
    s = lax.while_loop(lambda s: s[6] > 0, sweep_back, s)
    return list(s[7]) + list(s[8])


@functools.lru_cache(maxsize=16)
def _binomials(most: int) -> np.ndarray:
    """``C(f + r, r)`` at ``[f, r - 1]``, for ``f`` up to ``most + 1`` and ``r`` from 1 to
    ``_REPETITIONS``, in float32 (infinite past its range)."""
    with np.errstate(over="ignore"):
        return np.array([[float(math.comb(f + r, r)) for r in range(1, _REPETITIONS + 1)]
                         for f in range(most + 2)]).astype(np.float32)


def _plan(at, end, free, most: int):
    """Where to keep the next state on the way from ``at`` to ``end``, or -1.

    Binomial checkpointing: with ``free`` slots (at most ``most``) besides the
    state at ``at``, ``end - at`` steps are undone with ``r`` recomputations
    each when ``end - at <= C(free + 1 + r, r)``; the state kept next leaves at
    most ``C(free + r, r)`` steps after it. The binomials are a table, read
    by ``free``.
    """
    length = (end - at).astype(jnp.float32)
    table = jnp.asarray(_binomials(most))
    row = jnp.clip(free, 0, most)
    beta = lax.dynamic_index_in_dim(table, row + 1, 0, keepdims=False)  # C(free + 1 + r, r)
    # (beta_less, read below: C(free + r, r))
    fits = beta >= length
    i = jnp.where(jnp.any(fits), jnp.argmax(fits), _REPETITIONS - 1).astype(jnp.int32)
    beta_less = lax.dynamic_slice(table, (row.astype(jnp.int32), i), (1, 1))[0, 0]
    m = jnp.clip(length - jnp.floor(beta_less), 1, jnp.maximum(length - 1, 1))
    return jnp.where((length >= 2) & (free >= 1), at + m.astype(jnp.int32), -1)


def _tangent(steps: _Steps, arrays, t, t_consts) -> list:
    """``J t``: the loop, carrying the tangents of its inexact arrays."""
    _, t = lax.while_loop(lambda s: steps.active(s[0]),
                          lambda s: steps.jvp_step(s[0], s[1], t_consts), (list(arrays), list(t)))
    return list(t)


def _impl(*args, loop: _Spec, form: Form, lanes: int, tbatch: tuple[int, ...],
          diff: tuple[int, ...], diff2: tuple[int, ...] = ()):
    consts, arrays, kept, lin = _split(args, loop, form)
    steps = _Steps(loop, consts, lanes, tbatch, diff)
    if form is Form.SWEEP:
        return _sweep(steps, arrays, loop.checkpoints)
    if form is Form.TANGENT:
        n_f = len(loop.floats)
        return _tangent(steps, arrays, lin[:n_f], lin[n_f:])
    if form is Form.COTANGENT:
        return _backward(steps, kept[:-2], kept[-2], kept[-1], lin, loop.checkpoints)
    # a second derivative: one of the above, differentiated forward in consts and
    # arrays along `d`, for each element of the linear inputs' batch
    first = Form.COTANGENT if form is Form.SECOND else Form.TANGENT
    split = _second_split(loop, form, diff)

    def one(lin):
        t_consts, t_arrays = _dots(loop, consts, arrays, lin[split:], diff2)
        t_kept = _kept_tangents(loop, lanes, consts, arrays, t_consts, t_arrays, kept)
        return jax.jvp(lambda c, a, k: _impl(*c, *a, *k, *lin[:split], loop=loop, form=first,
                                             lanes=lanes, tbatch=(), diff=diff),
                       (consts, arrays, kept), (t_consts, t_arrays, t_kept))[1]

    for _ in tbatch:
        one = jax.vmap(one)
    return list(one(list(lin)))


def _zero_tangent(v):
    """A zero tangent for ``v`` as ``jax.jvp`` takes it (``float0`` for integers)."""
    if _inexact(jnp.result_type(v)):
        return jnp.zeros(jnp.shape(v), jnp.result_type(v))
    return np.zeros(jnp.shape(v), jax.dtypes.float0)


def _dots(loop: _Spec, consts, arrays, d, diff2) -> tuple[list, list]:
    """Tangents of ``consts`` and ``arrays``: ``d`` (of the inexact arrays, then of
    the consts in ``diff2``), zero elsewhere."""
    t_arrays = [_zero_tangent(a) for a in arrays]
    for i, t in zip(loop.floats, d):
        t_arrays[i] = t
    t_consts = [_zero_tangent(c) for c in consts]
    for i, t in zip(diff2, d[len(loop.floats):]):
        t_consts[i] = t
    return t_consts, t_arrays


def _abstract_eval(*avals, loop: _Spec, form: Form, lanes: int, tbatch: tuple[int, ...],
                   diff: tuple[int, ...], diff2: tuple[int, ...] = ()):
    consts, arrays, _, lin = _split(avals, loop, form)
    if form is Form.SWEEP:
        slots = loop.checkpoints + 1
        return (list(arrays) + [a.update(shape=(slots,) + a.shape) for a in arrays]
                + [ShapedArray((slots,), jnp.int32), ShapedArray((), jnp.int32)])
    # (co)tangents are weakly typed where their arrays are, as JAX's are: the
    # derivative of a function of a Python float is a weak float, as eagerly
    out = [a.update(weak_type=arrays[i].weak_type) for a, i in zip(lin, loop.floats)]
    if form in (Form.COTANGENT, Form.SECOND):
        out += [consts[i].update(shape=tbatch + consts[i].shape) for i in diff]
    return out


def _second_split(loop: _Spec, form: Form, diff) -> int:
    """Where a second form's linear inputs pass from its first argument (``c`` for
    ``SECOND``, ``t`` for ``TANGENT2``) to ``d``."""
    n_f = len(loop.floats)
    return n_f if form is Form.SECOND else n_f + len(diff)


def _linear_groups(loop: _Spec, form: Form, diff, diff2) -> list[tuple[int, int]]:
    """The ranges of the linear inputs the form is linear in, each group alone."""
    n_f = len(loop.floats)
    if form is Form.SWEEP:
        return []
    if form is Form.TANGENT:
        return [(0, n_f + len(diff))]
    if form is Form.COTANGENT:
        return [(0, n_f)]
    split = _second_split(loop, form, diff)
    return [(0, split), (split, split + n_f + len(diff2))]


def _jvp(primals, tangents, *, loop: _Spec, form: Form, lanes: int, tbatch: tuple[int, ...],
         diff: tuple[int, ...], diff2: tuple[int, ...] = ()):
    """Forward mode through any form, as forms again wherever one serves.

    The kept states are a cache of the consts and arrays: they get no
    tangent here, and each form's derivative in the consts and arrays finds
    what it needs from theirs. So every derivative up to the second is one
    of the forms, which transpose into each other (``jax.grad`` of
    ``jax.grad``); a third is a second of the augmented loop (:func:`_third`).
    """
    params = dict(lanes=lanes, tbatch=tbatch)
    out = _checkpointed_while_p.bind(*primals, loop=loop, form=form, diff=diff, diff2=diff2,
                                     **params)
    n = _n_primal(loop, form)
    consts, arrays, kept, lin = _split(primals, loop, form)
    t_consts, t_arrays, _, t_lin = _split(tangents, loop, form)
    parts: list[list] = []
    for lo, hi in _linear_groups(loop, form, diff, diff2):  # linear (bilinear) in these
        if any(type(t) is not ad.Zero for t in t_lin[lo:hi]):
            new = list(lin)
            new[lo:hi] = map(ad.instantiate_zeros, t_lin[lo:hi])
            parts.append(_checkpointed_while_p.bind(*primals[:n], *new, loop=loop, form=form,
                                                    diff=diff, diff2=diff2, **params))
    d2 = tuple(i for i, t in enumerate(t_consts)
               if type(t) is not ad.Zero and _inexact(jnp.result_type(consts[i])))
    d_floats = [t_arrays[i] for i in loop.floats]
    if d2 or any(type(t) is not ad.Zero for t in d_floats):
        d = [ad.instantiate_zeros(t) for t in d_floats] + [t_consts[i] for i in d2]
        if form is Form.SWEEP:  # the final arrays' tangents; the kept states get none
            found = _checkpointed_while_p.bind(*consts, *arrays, *out[loop.n_arrays:], *d,
                                               loop=loop, form=Form.TANGENT, diff=d2, **params)
            aligned: list = [None] * len(out)
            for i, t in zip(loop.floats, found):
                aligned[i] = t
            parts.append(aligned)
        elif form in (Form.TANGENT, Form.COTANGENT):
            d = [jnp.broadcast_to(x, tbatch + jnp.shape(x)) for x in d]
            second = Form.TANGENT2 if form is Form.TANGENT else Form.SECOND
            parts.append(_checkpointed_while_p.bind(*primals[:n], *lin, *d, loop=loop,
                                                    form=second, diff=diff, diff2=d2, **params))
        else:
            parts.append(_third(loop, form, primals, tangents, diff, diff2, params))
    total: list = [None] * len(out)
    for part in parts:
        total = [t if p is None else p if t is None else t + p for t, p in zip(total, part)]
    return out, [t if t is not None and _inexact(v.dtype) else _zero(v)
                 for v, t in zip(out, total)]


def _third(loop: _Spec, form: Form, primals, tangents, diff, diff2, params) -> list:
    """A second derivative's derivative in its consts and arrays.

    A second derivative of the loop is a first derivative of its *augmented*
    loop (:func:`_augmented`), which carries the tangents of the inexact arrays
    along: ``SECOND`` is part of that loop's ``COTANGENT``, ``TANGENT2`` part of
    its ``TANGENT``. Written so, its derivative is of the forms above again,
    to any order, in forward and in reverse mode.
    """
    consts, arrays, _, lin = _split(primals, loop, form)
    t_consts, t_arrays, _, _ = _split(tangents, loop, form)
    t_consts = [_zero_tangent(c) if type(t) is ad.Zero else t for c, t in zip(consts, t_consts)]
    t_arrays = [_zero_tangent(a) if type(t) is ad.Zero else t for a, t in zip(arrays, t_arrays)]
    n_f, lanes = len(loop.floats), params["lanes"]
    second = form is Form.SECOND
    split = _second_split(loop, form, diff)
    carried = diff2 if second else diff  # the consts whose tangents it carries
    aug = _augmented(loop, carried)

    def value(consts, arrays, lin):
        first, d = lin[:split], lin[split:]
        t = d if second else first
        c_a, a_a = list(consts) + list(t[n_f:]), list(arrays) + list(t[:n_f])
        kept = _checkpointed_while_p.bind(*c_a, *a_a, loop=aug, form=Form.SWEEP, lanes=lanes,
                                          tbatch=(), diff=())[aug.n_arrays:]
        if second:  # the gradient of <c, D Phi [d]> in the arrays and the consts in diff
            ct = [jnp.zeros_like(arrays[i]) for i in loop.floats] + list(first)
            out = _checkpointed_while_p.bind(*c_a, *a_a, *kept, *ct, loop=aug,
                                             form=Form.COTANGENT, lanes=lanes, tbatch=(),
                                             diff=diff)
            return list(out[:n_f]) + list(out[2 * n_f:])
        along = list(d[:n_f]) + [jnp.zeros_like(v) for v in first[:n_f]] + list(d[n_f:])
        out = _checkpointed_while_p.bind(*c_a, *a_a, *kept, *along, loop=aug,
                                         form=Form.TANGENT, lanes=lanes, tbatch=(), diff=diff2)
        return list(out[n_f:])  # the change of D Phi [t] along d

    for _ in params["tbatch"]:  # an augmented loop for each element of the linear batch
        value = jax.vmap(value, in_axes=(None, None, 0))
    return list(jax.jvp(lambda c, a: value(c, a, lin), (consts, arrays),
                        (t_consts, t_arrays))[1])


def _augmented(loop: _Spec, carried: tuple[int, ...]) -> _Spec:
    """The loop that also carries the tangents of ``loop``'s inexact arrays and has
    those of its consts in ``carried`` as consts of its own: its consts are
    ``(*consts, *their tangents)``, its arrays ``(*arrays, *their tangents)``."""
    n_c, n_a = loop.n_consts, loop.n_arrays
    avals = [aval_struct(a) for a in loop.body.in_avals]
    c_avals, a_avals = avals[:n_c], avals[n_c:]
    plain = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in avals]
    c_aug = c_avals + [plain[i] for i in carried]
    a_aug = a_avals + [plain[n_c + i] for i in loop.floats]

    def test(c, a):
        return [loop.run_test(c[:n_c], a[:n_a])]

    def body(c, a):
        steps = _Steps(loop, c[:n_c], 0, (), carried)
        f, xf, dc = steps._differentiable(a[:n_a])
        out_f, t_out, others = jax.jvp(f, (xf, dc), (list(a[n_a:]), list(c[n_c:])),
                                       has_aux=True)
        return steps._merge(out_f, others) + [t.astype(v.dtype) for t, v in zip(t_out, out_f)]

    return _Spec(test=make_jaxpr(test, c_aug, a_aug), body=make_jaxpr(body, c_aug, a_aug),
                 n_consts=n_c + len(carried), checkpoints=loop.checkpoints)


def _kept_tangents(loop: _Spec, lanes: int, consts, arrays, t_consts, t_arrays, kept) -> list:
    """The tangents of the kept states (zero for the positions and ``n``), for the
    tangents of the loop's consts and arrays: the loop run again along the
    sweep's schedule with its tangents, keeping them where the sweep kept its
    states. Under ``jax.vmap`` the schedule (``n`` steps) is the batch's, which
    may run past an element's end: masked steps keep it there."""
    pos, n = kept[-2], kept[-1]
    floats = loop.floats
    scratch = loop.checkpoints

    def step(c, x):
        return _Steps(loop, c, lanes, (), (), masked=True).step(x)

    def advance(s):
        k, x, t, buf = s
        hit = pos == k
        buf = _write(buf, jnp.where(jnp.any(hit), jnp.argmax(hit), scratch), t)
        t_all = [_zero_tangent(v) for v in x]
        for i, v in zip(floats, t):
            t_all[i] = v
        x, t_out = jax.jvp(step, (consts, x), (t_consts, t_all))
        return k + 1, x, [t_out[i] for i in floats], buf

    buf = [jnp.zeros((scratch + 1,) + jnp.shape(arrays[i]), jnp.result_type(arrays[i]))
           for i in floats]
    _, _, _, buf = lax.while_loop(lambda s: s[0] < n, advance,
                                  (jnp.int32(0), list(arrays), [t_arrays[i] for i in floats],
                                   buf))
    out = [_zero_tangent(k) for k in kept]
    for j, i in enumerate(floats):
        out[i] = buf[j]
    return out


def _zero(v) -> ad.Zero:
    """The symbolic zero tangent of ``v``."""
    return ad.Zero(jax.typeof(v).to_tangent_aval())


def _transpose(cts, *args, loop: _Spec, form: Form, lanes: int, tbatch: tuple[int, ...],
               diff: tuple[int, ...], diff2: tuple[int, ...] = ()):
    n = _n_primal(loop, form)
    primals = args[:n]
    if form is Form.SWEEP or any(ad.is_undefined_primal(x) for x in primals):
        raise NotImplementedError("a loop's derivative is linear in its tangents only")
    cts = [ad.instantiate_zeros(c) for c in cts]
    lin = list(args[n:])

    def bind(form, *lin, diff, diff2=()):
        return list(_checkpointed_while_p.bind(*primals, *lin, loop=loop, form=form,
                                               lanes=lanes, tbatch=tbatch, diff=diff,
                                               diff2=diff2))

    if form is Form.TANGENT:
        return [None] * n + bind(Form.COTANGENT, *cts, diff=diff)
    if form is Form.COTANGENT:
        return [None] * n + bind(Form.TANGENT, *cts, diff=diff)
    # the second derivatives, of c^T Phi: D^2 Phi is symmetric in its two arguments
    split = _second_split(loop, form, diff)
    first, second = lin[:split], lin[split:]
    if any(ad.is_undefined_primal(x) for x in first):
        if form is Form.SECOND:  # in c: v -> D^2 Phi [v, d]
            found = bind(Form.TANGENT2, *cts, *second, diff=diff, diff2=diff2)
        else:  # in t: w -> w^T D^2 Phi [., d]
            found = bind(Form.SECOND, *cts, *second, diff=diff, diff2=diff2)
        return [None] * n + found + [None] * len(second)
    if form is Form.SECOND:  # in d: v -> c^T D^2 Phi [., v], its rows and columns swapped
        found = bind(Form.SECOND, *first, *cts, diff=diff2, diff2=diff)
    else:  # in d: w -> w^T D^2 Phi [t, .]
        found = bind(Form.SECOND, *cts, *first, diff=diff2, diff2=diff)
    return [None] * n + [None] * len(first) + found


def _lin_consts(loop: _Spec, form: Form, diff, diff2) -> list[int | None]:
    """For each linear input: the const whose tangent (cotangent) it is, or None for
    one of an inexact array."""
    arrays: list[int | None] = [None] * len(loop.floats)
    return {Form.SWEEP: [], Form.TANGENT: arrays + list(diff), Form.COTANGENT: arrays,
            Form.SECOND: arrays + arrays + list(diff2),
            Form.TANGENT2: arrays + list(diff) + arrays + list(diff2)}[form]


def _batch(args, dims, *, loop: _Spec, form: Form, lanes: int, tbatch: tuple[int, ...],
           diff: tuple[int, ...], diff2: tuple[int, ...] = ()):
    consts, arrays, kept, lin = _split(args, loop, form)
    c_dims, a_dims, k_dims, l_dims = _split(dims, loop, form)
    size = next(jnp.shape(x)[d] for x, d in zip(args, dims) if d is not None)
    lead = len(tbatch)
    params = dict(loop=loop, form=form, diff=diff, diff2=diff2)
    if any(d is not None for d in k_dims[-2:]):
        # The sweep of a batched loop keeps one schedule for the batch; a schedule
        # batched here came through something that chose between it and another
        # value per element (a staged `if` around the loop, batched after it was
        # differentiated, selects its residuals). Each element's backward pass then
        # runs with its own schedule, one element after another, as a batch of one
        # (its steps masked: the schedule may be the batch's, longer than its own).
        schedule = {len(consts) + len(arrays) + len(kept) - k for k in (1, 2)}

        def one(xs):
            inner = [None if j in schedule else 0 for j in range(len(xs))]
            out, at = _batch([x if d is None else x[None] for x, d in zip(xs, inner)],
                             inner, loop=loop, form=form, lanes=lanes, tbatch=tbatch,
                             diff=diff, diff2=diff2)
            return [o if d is None else jnp.squeeze(o, d) for o, d in zip(out, at)]

        out = lax.map(one, [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)])
        return out, [0] * len(out)
    if all(d is None for d in c_dims + a_dims):
        # only the tangents (cotangents) are batched: one more tbatch dimension
        if any(d is not None for d in k_dims):
            raise NotImplementedError("the kept states are batched, the loop is not")
        lin = [batching.bdim_at_front(x, d, size) for x, d in zip(lin, l_dims)]
        out = _checkpointed_while_p.bind(*consts, *arrays, *kept, *lin, lanes=lanes,
                                         tbatch=(size,) + tbatch, **params)
        return out, [0] * len(out)

    # the loop itself is batched: one more lane, which every carried array has
    owners = _lin_consts(loop, form, diff, diff2)
    batched = [d is not None for d in c_dims]
    if form in (Form.COTANGENT, Form.SECOND):  # each element has its own cotangent of these
        for i in diff:
            batched[i] = True
    for owner, d in zip(owners, l_dims):  # a const whose tangent is batched is batched too
        if owner is not None and d is not None:
            batched[owner] = True
    consts = [batching.bdim_at_front(x, d, size) if b else x
              for x, d, b in zip(consts, c_dims, batched)]
    arrays = [batching.bdim_at_front(x, d, size) for x, d in zip(arrays, a_dims)]
    states = [_at_axis(x, d, size, 1) for x, d in zip(kept[:-2], k_dims[:-2])]
    kept = states + kept[-2:]
    lin = [_at_axis(x, d, size, lead) if i is None or batched[i] else x
           for x, d, i in zip(lin, l_dims, owners)]
    params["loop"] = _batched(loop, consts, arrays, [0 if b else None for b in batched])
    out = _checkpointed_while_p.bind(*consts, *arrays, *kept, *lin, lanes=lanes + 1,
                                     tbatch=tbatch, **params)
    if form is Form.SWEEP:
        return out, [0] * loop.n_arrays + [1] * loop.n_arrays + [None, None]
    return out, [lead] * len(out)


def _at_axis(x, d, size, axis):
    """``x`` with its batch dimension ``d`` (None: broadcast) moved to ``axis``."""
    x = batching.bdim_at_front(x, d, size)
    return jnp.moveaxis(x, 0, axis) if axis else x


def _batched(loop: _Spec, consts, arrays, axes) -> _Spec:
    """``loop`` over one more lane: consts batched where ``axes`` says, arrays all."""
    c_avals = [jax.ShapeDtypeStruct(jnp.shape(c), jnp.result_type(c)) for c in consts]
    a_avals = [jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a)) for a in arrays]

    def over_lanes(jaxpr):
        run = jax_core.jaxpr_as_fun(jaxpr)
        lanes = jax.vmap(lambda c, a: list(run(*c, *a)), in_axes=(axes, 0))
        return make_jaxpr(lambda c, a: lanes(c, a), c_avals, a_avals)

    return loop._replace(test=over_lanes(loop.test), body=over_lanes(loop.body))


_checkpointed_while_p.def_impl(_impl)
_checkpointed_while_p.def_abstract_eval(_abstract_eval)
mlir.register_lowering(_checkpointed_while_p, mlir.lower_fun(_impl, multiple_results=True))
ad.primitive_jvps[_checkpointed_while_p] = _jvp
ad.primitive_transposes[_checkpointed_while_p] = _transpose
batching.primitive_batchers[_checkpointed_while_p] = _batch
