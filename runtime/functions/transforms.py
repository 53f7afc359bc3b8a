"""JAX's function-taking entry points, seen from converted code.

A function handed to ``jax.vmap``, ``jax.grad``, ``lax.scan`` and the rest
is traced by JAX, so an ``if`` on its traced argument fails unless the
function is converted first. Converted code calls these entry points through
``converted_call``, which looks them up here by identity and converts their
function arguments (only those: every other argument passes unchanged)::

    jax.vmap(g)(xs)        ->   jax.vmap(<g converted>)(xs)
    lax.cond(p, t, f, x)   ->   lax.cond(p, <t converted>, <f converted>, x)

Objects that JAX's own transformations built around a user function are
rebuilt around the converted function, with the same options:

* a ``jax.jit`` function (``PjitFunction``) keeps ``static_argnums``,
  ``donate_argnums``, shardings and the other options of ``jax.jit``;
* a ``jax.custom_jvp`` / ``jax.custom_vjp`` function keeps its rules (which
  are converted too) and ``nondiff_argnums``.

Whatever cannot be rebuilt faithfully is called as it is, which is what plain
``jax.jit`` does with it.
"""

from __future__ import annotations

import contextvars
import functools
import sys
import threading
from typing import Any, Callable, NamedTuple

import jax

from autograph import jax_internals


class Entry(NamedTuple):
    """Which arguments of a library entry point are functions.

    ``positions`` and ``keywords`` name the arguments that are a function or a
    list or tuple of functions (``lax.switch``'s branches); any other pytree
    argument is data and passes unchanged.
    """

    positions: tuple[int, ...]
    keywords: tuple[str, ...]
    reverse: bool = False   # reverse-mode differentiation: names loops it cannot go through


def _e(positions, *keywords) -> Entry:
    return Entry(tuple(positions) if isinstance(positions, tuple) else (positions,), keywords)


def _r(positions, *keywords) -> Entry:
    return _e(positions, *keywords)._replace(reverse=True)


# module -> {attribute: Entry}. A module is read only once it has been imported
# by someone else: this table never imports Flax, Equinox or jax submodules.
TABLE: dict[str, dict[str, Entry]] = {
    "jax": {
        "grad": _r(0, "fun"), "value_and_grad": _r(0, "fun"), "jacfwd": _e(0, "fun"),
        "jacrev": _r(0, "fun"), "jacobian": _r(0, "fun"), "hessian": _r(0, "fun"),
        "vmap": _e(0, "fun"), "pmap": _e(0, "fun"), "jit": _e(0, "fun"),
        "checkpoint": _e(0, "fun"), "remat": _e(0, "fun"), "named_call": _e(0, "fun"),
        "jvp": _e(0, "fun"), "vjp": _e(0, "fun"), "linearize": _e(0, "fun"),
        "linear_transpose": _e(0, "fun"), "eval_shape": _e(0, "fun"),
        "make_jaxpr": _e(0, "fun"), "custom_jvp": _e(0, "fun"), "custom_vjp": _e(0, "fun"),
        "closure_convert": _e(0, "fun"), "shard_map": _e(0, "f"),
    },
    "jax.lax": {
        "cond": _e((1, 2), "true_fun", "false_fun"), "switch": _e(1, "branches"),
        "while_loop": _e((0, 1), "cond_fun", "body_fun"), "fori_loop": _e(2, "body_fun"),
        "scan": _e(0, "f"), "map": _e(0, "f"), "associative_scan": _e(0, "fn"),
        "custom_root": _e((0, 2, 3), "f", "solve", "tangent_solve"),
        "custom_linear_solve": _e((0, 2, 3), "matvec", "solve", "transpose_solve"),
    },
    "jax.numpy": {"vectorize": _e(0, "pyfunc")},
    "jax.tree_util": {"tree_map": _e(0, "f")},
    "jax.tree": {"map": _e(0, "f")},
    "jax.scipy.optimize": {"minimize": _e(0, "fun")},
    "flax.nnx": {
        "grad": _r(0, "f"), "value_and_grad": _r(0, "f"), "jit": _e(0, "fun"),
        "vmap": _e(0, "f"), "scan": _e(0, "f"), "remat": _e(0, "f"),
        "cond": _e((1, 2), "true_fun", "false_fun"), "switch": _e(1, "branches"),
        "while_loop": _e((0, 1), "cond_fun", "body_fun"), "fori_loop": _e(2, "body_fun"),
    },
    "equinox": {
        "filter_grad": _r(0, "fun"), "filter_value_and_grad": _r(0, "fun"),
        "filter_jit": _e(0, "fun"), "filter_vmap": _e(0, "fun"), "filter_pmap": _e(0, "fun"),
        "filter_checkpoint": _e(0, "fun"), "filter_jvp": _e(0, "fn"), "filter_vjp": _e(0, "fun"),
        "filter_eval_shape": _e(0, "fun"),
    },
}

class _EntryPoints:
    """The entry points of ``TABLE``'s modules imported so far, by identity.

    A module is read once someone else has imported it. Each read makes a new
    table, swapped in whole, so a lookup in another thread finds all of a
    module's entry points or none of them.
    """

    def __init__(self, table: dict[str, dict[str, Entry]]):
        self._table = table
        self._read: frozenset[str] = frozenset()  # the modules read
        self._by_id: dict[int, tuple[Any, Entry]] = {}
        self._reading = threading.Lock()

    def get(self, f) -> Entry | None:
        if len(self._read) < len(self._table) and any(
                m in sys.modules for m in self._table.keys() - self._read):
            self._read_imported()
        found = self._by_id.get(id(f))
        return found[1] if found is not None and found[0] is f else None

    def _read_imported(self) -> None:
        with self._reading:
            new = frozenset(m for m in self._table.keys() - self._read if m in sys.modules)
            by_id = dict(self._by_id)
            for module in new:
                for attr, e in self._table[module].items():
                    obj = getattr(sys.modules[module], attr, None)
                    if obj is not None and id(obj) not in by_id:
                        by_id[id(obj)] = (obj, e)  # the object is kept, so its id stays its own
            self._by_id = by_id
            self._read = self._read | new


_ENTRY_POINTS = _EntryPoints(TABLE)


def entry(f) -> Entry | None:
    """The table's entry for ``f`` (looked up by identity), or None."""
    return _ENTRY_POINTS.get(f)


def convert_arguments(f, e: Entry, resolve: Callable) -> Callable:
    """``f`` with the function arguments that ``e`` names resolved on each call."""

    def call(*args, **kwargs):
        positional = list(args)
        for i in e.positions:
            if i < len(positional):
                positional[i] = _function_argument(positional[i], resolve)
        for k in e.keywords:
            if k in kwargs:
                kwargs[k] = _function_argument(kwargs[k], resolve)
        out = f(*positional, **kwargs)
        return _naming_unbounded_loops(out) if e.reverse and callable(out) else out

    functools.update_wrapper(call, f)
    return call


# Locations of `while` loops with no known bound that were staged as a plain
# `lax.while_loop`, since their body has effects the derivative would repeat (see
# `checkpointed.checkpointed_loop`): the loops JAX's "Reverse-mode differentiation
# does not work for lax.while_loop" is about. One list per derivative being traced,
# in the tracing thread's context, so concurrent traces never see each other's loops.
_UNBOUNDED: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "autograph_unbounded_under_reverse", default=None)


def note_unbounded_under_reverse(where) -> None:
    """Records that the `while` loop at ``where`` is staged as a plain ``lax.while_loop``
    in the derivative now being traced (if any)."""
    found = _UNBOUNDED.get()
    if found is not None and len(found) < 8:
        found.append(where)


def _naming_unbounded_loops(gradient_fn):
    """``gradient_fn`` whose JAX error about `while` loops names the user's loop."""

    def run(*args, **kwargs):
        found: list = []
        token = _UNBOUNDED.set(found)
        try:
            return gradient_fn(*args, **kwargs)
        except ValueError as e:
            if not jax_internals.is_reverse_while_error(e) or not found:
                raise
            where = found[0]
            from autograph import errors
            raise errors.LoopStateError(
                "reverse-mode differentiation cannot go through a `while` loop that prints "
                "or has other ordered effects, when its trip count is only known at run time",
                observed="its derivative would run the body again and repeat the effects, so "
                         "this loop is staged as a plain `lax.while_loop`, which `jax.grad` "
                         "cannot differentiate" + (f" (and {len(found) - 1} more)"
                                                   if len(found) > 1 else ""),
                fix="move the `print` out of the loop, or add "
                    "`autograph.set_loop_options(maximum_iterations=N)` as the first "
                    "statement of the loop body, or bound the loop by a counter (`while ... "
                    "and i < N:` with `i += 1` in the body)",
                location=where) from e
        finally:
            _UNBOUNDED.reset(token)
            outer = _UNBOUNDED.get()
            if outer is not None:  # a derivative inside another: the outer one meets them too
                outer.extend(found[:8 - len(outer)])

    functools.update_wrapper(run, gradient_fn)
    return run


def _function_argument(x, resolve):
    if isinstance(x, (list, tuple)) and not hasattr(x, "_fields"):
        return type(x)(_function_argument(v, resolve) for v in x)
    return resolve(x) if callable(x) else x


# -- rebuilding JAX's own wrappers ------------------------------------------------------

_PJIT_TYPE = type(jax.jit(lambda: None))


def is_jit(f) -> bool:
    """Whether ``f`` is a function made by ``jax.jit``."""
    return type(f) is _PJIT_TYPE


def jit_options(f) -> dict | None:
    """The options ``f`` was made with by ``jax.jit``, or None where unknown."""
    info = jax_internals.jit_info(f)
    if info is None:
        return None
    try:
        opts: dict = dict(static_argnums=info.static_argnums, static_argnames=info.static_argnames,
                          donate_argnums=info.donate_argnums,
                          donate_argnames=info.donate_argnames,
                          keep_unused=info.keep_unused, inline=info.inline)
        if info.user_specified_in_shardings:
            opts["in_shardings"] = jax.tree_util.tree_unflatten(
                info.in_shardings_treedef, info.in_shardings_leaves)
        if not all(_unspecified(s) for s in info.out_shardings_leaves):
            opts["out_shardings"] = jax.tree_util.tree_unflatten(
                info.out_shardings_treedef, info.out_shardings_leaves)
        if any(v is not None for v in info.in_layouts_leaves + info.out_layouts_leaves):
            return None  # layouts: not rebuilt; the function runs as it is
        if info.compiler_options_kvs:
            opts["compiler_options"] = dict(info.compiler_options_kvs)
        if info.device is not None or info.backend is not None:
            return None
        return opts
    except AttributeError:  # another JAX version's PjitInfo
        return None


def _unspecified(s) -> bool:
    return jax_internals.is_unspecified(s)


def rejit(f, inner: Callable) -> Callable:
    """``jax.jit(inner)`` with the options ``f`` was made with; ``f`` where unknown."""
    opts = jit_options(f)
    if opts is None:
        return f
    try:
        new = jax.jit(inner, **opts)
    except (TypeError, ValueError):
        return f
    return new


def is_custom_derivative(f) -> bool:
    return isinstance(f, (jax.custom_jvp, jax.custom_vjp))


def rebuild_custom_derivative(f, resolve: Callable) -> Callable:
    """A ``custom_jvp``/``custom_vjp`` like ``f`` around converted functions."""
    fun = resolve(f.fun)
    new: jax.custom_jvp | jax.custom_vjp
    try:
        if isinstance(f, jax.custom_jvp):
            jvp = f.jvp if f.jvp is None else resolve(f.jvp)
            if fun is f.fun and jvp is f.jvp:
                return f
            new = new_jvp = jax.custom_jvp(fun, nondiff_argnums=f.nondiff_argnums)
            if jvp is not None:
                new_jvp.defjvp(jvp, symbolic_zeros=f.symbolic_zeros)
        else:
            fwd = f.fwd if f.fwd is None else resolve(f.fwd)
            bwd = f.bwd if f.bwd is None else resolve(f.bwd)
            if fun is f.fun and fwd is f.fwd and bwd is f.bwd:
                return f
            new = new_vjp = jax.custom_vjp(fun, nondiff_argnums=f.nondiff_argnums)
            if fwd is not None and bwd is not None:  # defvjp sets both
                new_vjp.defvjp(fwd, bwd, symbolic_zeros=f.symbolic_zeros,
                           optimize_remat=getattr(f, "optimize_remat", False))
    except (TypeError, ValueError, AttributeError):
        return f
    functools.update_wrapper(new, f, updated=())
    return new
