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

from autograph import jax_internals

__all__ = ["make_jaxpr", "make_jaxpr_and_tree", "trace_loop", "without_consts"]


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
