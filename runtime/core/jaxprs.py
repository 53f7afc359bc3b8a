"""Tracing a branch or a loop body into a jaxpr, once.

The operators trace every branch of a staged ``if`` and every staged loop
body exactly once, into a jaxpr they replay later (so the user's Python runs
once). ``jax.make_jaxpr(f)(*args)`` does that by wrapping ``f`` in ``jax.jit``
and tracing the wrapper: for a small branch, about 240 µs of which 130 µs is
the wrapping. :func:`make_jaxpr` calls JAX's tracer directly
(:func:`autograph.jax_internals.trace_to_jaxpr`); both give the same jaxpr::

    closed = make_jaxpr(lambda: [x * 2 + s])   # x, s: tracers of the enclosing trace
    # { lambda a:f32[4] b:f32[]; . let c = mul a 2.0; d = add c b in (d,) }

Values the function closes over (tracers of the enclosing trace included)
become the jaxpr's constants, as with ``jax.make_jaxpr``.
"""

from __future__ import annotations

from typing import Callable

import jax
import jax.extend.core as jax_core
import numpy as np

from autograph import jax_internals

__all__ = ["aval_struct", "make_jaxpr", "make_jaxpr_and_tree", "same_program", "trace_loop",
           "unused_inputs", "without_consts", "without_inputs"]


def aval_struct(aval) -> jax.ShapeDtypeStruct:
    """``aval`` (``jax.typeof(x)``, a jaxpr variable's) as a ``jax.ShapeDtypeStruct``, to
    trace with: shape, dtype and weak type."""
    return jax.ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=aval.weak_type)


def make_jaxpr(fn: Callable, *args) -> jax_core.ClosedJaxpr:
    """``jax.make_jaxpr(fn)(*args)``: ``args`` are pytrees of arrays, tracers or
    ``jax.ShapeDtypeStruct``; the jaxpr takes and returns their flattened leaves."""
    return make_jaxpr_and_tree(fn, *args)[0]


def make_jaxpr_and_tree(fn: Callable, *args):
    """:func:`make_jaxpr`, and the pytree structure of what ``fn`` returns."""
    trees: list = []

    def flat_out(*a):
        leaves, tree = jax.tree_util.tree_flatten(fn(*a))
        trees.append(tree)
        return leaves

    leaves, tree = jax.tree_util.tree_flatten(args)

    def flat_fn(*flat):
        return flat_out(*jax.tree_util.tree_unflatten(tree, flat))

    return jax_internals.trace_to_jaxpr(flat_fn, leaves), trees[-1]


def trace_loop(test: Callable, body: Callable, arrays, stabilize: Callable | None, *extra):
    """The jaxprs of a staged loop's test and body, traced once more where needed.

    ``test(arrays)`` gives a bool, ``body(arrays, *extra)`` the next arrays
    (``extra``: avals of more inputs, as a step index). ``stabilize(out_avals)``
    returns the arrays promoted to the dtypes one step makes, or None when they
    already match; the loop is traced again from those (twice at most: promoting
    one dtype may promote another on the next step).

    Returns:
      ``(arrays, test_jaxpr, body_jaxpr)``, ``arrays`` as the loop starts from.
    """
    def trace(arrays):
        return (make_jaxpr(lambda a: jax.numpy.asarray(test(list(a)), bool), arrays),
                make_jaxpr(lambda a, *e: list(body(list(a), *e)), arrays, *extra))

    arrays = list(arrays)
    test_jaxpr, body_jaxpr = trace(arrays)
    for _ in range(2):
        promoted = None if stabilize is None else stabilize(body_jaxpr.out_avals)
        if promoted is None:
            break
        arrays = list(promoted)
        test_jaxpr, body_jaxpr = trace(arrays)
    return arrays, test_jaxpr, body_jaxpr


def without_consts(closed: jax_core.ClosedJaxpr) -> jax_core.ClosedJaxpr:
    """The same jaxpr with its constants turned into leading inputs."""
    jaxpr = closed.jaxpr
    opened = jaxpr.replace(constvars=[], invars=list(jaxpr.constvars) + list(jaxpr.invars))
    return jax_core.ClosedJaxpr(opened, [])


def unused_inputs(closed: jax_core.ClosedJaxpr, positions) -> bool:
    """Whether no equation and no output of ``closed`` reads its inputs at ``positions``."""
    jaxpr = closed.jaxpr
    wanted = {id(jaxpr.invars[i]) for i in positions}
    for eqn in jaxpr.eqns:
        if any(id(v) in wanted for v in eqn.invars):
            return False
    return not any(id(v) in wanted for v in jaxpr.outvars)


def without_inputs(closed: jax_core.ClosedJaxpr, positions) -> jax_core.ClosedJaxpr:
    """``closed`` without its inputs at ``positions`` (see :func:`unused_inputs`)."""
    jaxpr = closed.jaxpr
    dropped = set(positions)
    kept = [v for i, v in enumerate(jaxpr.invars) if i not in dropped]
    return jax_core.ClosedJaxpr(jaxpr.replace(invars=kept), closed.consts)


def same_program(a: jax_core.ClosedJaxpr, b: jax_core.ClosedJaxpr) -> bool:
    """Whether two traces computed the same program: the same equations, printed, and
    the same constants (a tracer of an enclosing trace by identity, a concrete array by
    dtype and bits), in their nested jaxprs too.

    Printing shows a constant's type, not its value: two traces that close over
    different arrays of one type print alike, so the values are compared here."""
    if str(a.jaxpr) != str(b.jaxpr):
        return False
    (ca, fa), (cb, fb) = _consts_and_functions(a), _consts_and_functions(b)
    return (len(ca) == len(cb) and all(_same_const(x, y) for x, y in zip(ca, cb))
            and len(fa) == len(fb) and all(_same_function(x, y) for x, y in zip(fa, fb)))


def _consts_and_functions(closed) -> tuple[list, list]:
    """The constants of ``closed`` and its nested jaxprs, and the functions their
    equations hold as parameters (a callback's, a custom derivative's): what the
    printed jaxpr does not show."""
    consts, functions = list(closed.consts), []
    todo = list(closed.jaxpr.eqns)
    while todo:
        eqn = todo.pop(0)
        for param in eqn.params.values():
            for p in (param if isinstance(param, (tuple, list)) else (param,)):
                if isinstance(p, jax_core.ClosedJaxpr):
                    consts.extend(p.consts)
                    todo.extend(p.jaxpr.eqns)
                elif isinstance(p, jax_core.Jaxpr):
                    todo.extend(p.eqns)
                elif callable(p) and not isinstance(p, type):
                    functions.append(p)
    return consts, functions


def _same_function(f, g) -> bool:
    """The same function: itself, or one equal to it (JAX's wrapped functions compare
    their parts). A closure made anew on each trace (what a traced ``print`` shows)
    is another function: what it closes over may differ."""
    if f is g:
        return True
    try:
        return bool(f == g)
    except Exception:  # noqa: BLE001 - a function whose == is not a plain bool
        return False


def _same_const(x, y) -> bool:
    if x is y:
        return True
    if isinstance(x, jax.core.Tracer) or isinstance(y, jax.core.Tracer):
        return False
    try:
        xa, ya = np.asarray(x), np.asarray(y)
    except Exception:  # noqa: BLE001 - a constant that is not an array: only itself
        return False
    return (xa.dtype == ya.dtype and xa.shape == ya.shape
            and xa.tobytes() == ya.tobytes())
