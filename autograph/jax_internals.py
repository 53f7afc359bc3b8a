"""The one door to JAX's private modules.

autograph uses public JAX wherever it can. A few things have no public form:
the concrete array type (to tell an array from a pytree without an ABC
check), JAX's C++ ``jit`` dispatcher (so that a cached call of an
``autograph.function`` never enters Python), the tracer behind
``jax.make_jaxpr`` (called directly, it is twice as fast for a small
branch), a cast that keeps weak types, and a few hooks for error reporting.
Every one of them is imported here and nowhere else::

    from autograph import jax_internals as internals
    internals.is_concrete(x)

This module checks the JAX version when it is imported: :data:`OLDEST` is the
oldest JAX the project supports (``pyproject.toml`` declares the same), and an
older one is an ``ImportError`` that says so. Each shim below names what it
relies on; ``tests/test_jax_internals.py`` checks each one against the
installed JAX and fails, naming the shim, when JAX changes what it relies on.
Nothing here picks another path silently: the two shims that probe JAX at
run time (the C++ dispatcher and the direct tracer) warn once, naming what
failed, before autograph falls back to the public API.

Importing this module changes nothing in JAX and starts no backend (no array
is made), so ``jax.distributed.initialize`` can still run after
``import autograph``.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import warnings
from typing import Any, Callable

import jax
from jax import lax

OLDEST = (0, 7, 2)  # keep in step with pyproject.toml's `jax>=` and the Makefile's test-oldest


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:3])


VERSION = _version(jax.__version__)
if VERSION < OLDEST:  # pragma: no cover - pip refuses this install
    raise ImportError(f"autograph needs jax >= {'.'.join(map(str, OLDEST))}; this is jax "
                      f"{jax.__version__} (pip install -U jax jaxlib)")

# Imported here and only here. Every name below exists in every JAX from OLDEST on.
from jax._src import ad_util as _ad_util  # noqa: E402
from jax._src import api_util as _api_util  # noqa: E402
from jax._src import core as _core  # noqa: E402
from jax._src import dispatch as _dispatch  # noqa: E402
from jax._src import linear_util as _lu  # noqa: E402
from jax._src import pjit as _pjit  # noqa: E402
from jax._src import traceback_util as _traceback_util  # noqa: E402
from jax._src import tree_util as _tree_util  # noqa: E402
from jax._src import xla_bridge as _xla_bridge  # noqa: E402
from jax._src.array import ArrayImpl  # noqa: E402
from jax._src.interpreters import ad as _ad  # noqa: E402
from jax._src.interpreters import partial_eval as _pe  # noqa: E402
from jax._src.interpreters import pxla as _pxla  # noqa: E402
from jax._src.lax.lax import _convert_element_type  # noqa: E402
from jax._src.lib import _jax  # noqa: E402
from jax._src.sharding_impls import UnspecifiedValue  # noqa: E402

__all__ = [
    "private_modules",
    "OLDEST", "VERSION", "ArrayImpl", "is_concrete", "convert_element_type", "trace_to_jaxpr",
    "bind_while", "cpp_jit_builder", "jit_info", "jit_cache_miss", "is_unspecified",
    "output_runtime_tokens",
    "exclude_from_tracebacks", "CALLBACK_LOGGERS", "backends_started",
    "has_gloo_collectives", "enable_x64", "allow_stop_gradient_transpose",
]


def _fallback(shim: str, error: BaseException) -> None:
    warnings.warn(f"autograph: this JAX ({jax.__version__}) differs from what "
                  f"`autograph.jax_internals.{shim}` relies on ({type(error).__name__}: "
                  f"{error}); autograph takes the slower public path instead",
                  RuntimeWarning, stacklevel=3)


# -- values ---------------------------------------------------------------------------

def private_modules(public: tuple[str, ...]) -> tuple[str, ...]:
    """The private modules (``jax._src.numpy``, ...) whose functions the public
    modules ``jax.numpy``, ... export: their ``__module__`` names these."""
    return tuple(f"jax._src.{name}" for name in public)


def is_concrete(value) -> bool:
    """Whether a tracer (or array) has a known value (``jax._src.core.is_concrete``):
    asking is cheaper than failing ``bool()``, whose error message is long."""
    return _core.is_concrete(value)


def convert_element_type(x, dtype, weak_type: bool):
    """``lax.convert_element_type`` that keeps or sets a weak type (Python-scalar typing);
    the public function always makes a strong one."""
    return _convert_element_type(x, dtype, weak_type=weak_type)


# -- tracing --------------------------------------------------------------------------

@functools.cache
def _direct_tracer() -> Callable[..., Any] | None:
    def trace(flat_fn, leaves):
        avals = [_core.shaped_abstractify(leaf) for leaf in leaves]
        info = _api_util.debug_info("autograph", flat_fn, tuple(avals), {})
        jaxpr, _, consts = _pe.trace_to_jaxpr_dynamic(
            _lu.wrap_init(flat_fn, debug_info=info), list(avals))
        return _core.ClosedJaxpr(jaxpr, consts)

    try:
        probe = trace(lambda a: [a + 1], [jax.ShapeDtypeStruct((), jax.numpy.float32)])
        if len(probe.jaxpr.eqns) != 1 or len(probe.out_avals) != 1:
            raise TypeError(f"a one-operation probe traced to {probe}")
    except (TypeError, ValueError, AttributeError) as e:
        _fallback("trace_to_jaxpr", e)
        return None
    return trace


def trace_to_jaxpr(flat_fn: Callable, leaves) -> Any:
    """``jax.make_jaxpr(flat_fn)(*leaves)`` without the ``jax.jit`` wrapper it traces
    through (``pe.trace_to_jaxpr_dynamic``, which returns ``(jaxpr, out_avals,
    consts)``); ``flat_fn`` takes and returns flat lists of arrays."""
    trace = _direct_tracer()
    if trace is None:
        return jax.make_jaxpr(flat_fn)(*leaves)
    return trace(flat_fn, leaves)


def with_inputs(closed, invars: list, eqns: list):
    """``closed`` (a ``ClosedJaxpr``) whose jaxpr takes ``invars`` and runs ``eqns``
    (``Jaxpr.replace``); its debug info names the inputs added as ``hoisted``."""
    jaxpr = closed.jaxpr
    info = getattr(jaxpr, "debug_info", None)
    names = getattr(info, "arg_names", None)
    if info is not None and names is not None and hasattr(info, "_replace"):
        added = len(invars) - len(jaxpr.invars)
        info = info._replace(arg_names=tuple(names) + ("hoisted",) * added)
    return closed.replace(jaxpr=jaxpr.replace(invars=invars, eqns=eqns, debug_info=info))


def bind_while(test, body, test_consts, body_consts, arrays) -> list | None:
    """``lax.while_loop`` of jaxprs already traced, without tracing them again; or None.

    ``test`` and ``body`` are closed jaxprs with no constants whose inputs are
    their constants (``test_consts``, ``body_consts``), then the carried arrays.
    ``lax.while_p`` takes them as its parameters (``cond_nconsts``, ``cond_jaxpr``,
    ``body_nconsts``, ``body_jaxpr``, the same from JAX 0.7 on). None where the
    body changes a carried type (a weak type made strong): ``lax.while_loop``
    promotes the inputs there.
    """
    carried = test.in_avals[len(test_consts):]
    if list(carried) != list(body.out_avals) or list(carried) != list(
            body.in_avals[len(body_consts):]):
        return None
    return lax.while_p.bind(*test_consts, *body_consts, *arrays,
                            cond_nconsts=len(test_consts), cond_jaxpr=test,
                            body_nconsts=len(body_consts), body_jaxpr=body)


# -- jax.jit --------------------------------------------------------------------------

def jit_info(f) -> Any:
    """The options a ``jax.jit`` function was made with (its private ``_jit_info``:
    ``static_argnums``, ``in_shardings_leaves``, ...), or None."""
    return getattr(f, "_jit_info", None)


def jit_cache_miss(f) -> Callable | None:
    """The Python cache miss of a ``jax.jit`` function (its private ``_cache_miss``),
    which traces, compiles, runs and hands C++ what later calls need; or None."""
    return getattr(f, "_cache_miss", None)


# -- functions JAX's transformations return ------------------------------------------

_REBUILD_DEPTH = 4  # wrappers around wrappers: `jax.grad` keeps `value_and_grad`'s


def _jax_code(fn) -> bool:
    """Whether ``fn`` is JAX's code, or ``contextlib``'s decorator of a function with a
    context manager, which ``jax.named_call`` returns on some versions."""
    module = str((getattr(fn, "__globals__", None) or {}).get("__name__", ""))
    return module.split(".")[0] == "jax" or module == "contextlib"


def rebuild_transformed(f: Callable, replace: Callable[[Callable], Callable],
                        is_user: Callable[[Callable], bool]) -> Callable | None:
    """``f``, a function ``jax.checkpoint``, ``jax.vmap``, ``jax.grad``,
    ``jax.named_call`` (...) returned around ``g``, made anew around ``replace(g)``,
    with every option ``f`` was made with; or None where ``f`` is not such a
    function, ``replace`` keeps ``g``, or ``g`` is not a user function
    (``is_user``) or a function made so around one (``jax.vmap(jax.grad(h))``).

    These transformations return a plain Python function of JAX's (``functools.wraps``
    sets its ``__wrapped__`` to ``g``) that keeps ``g`` and the options in its closure,
    directly or through another function of JAX's. Relies on that: the closure of
    each such function is copied, with the cell holding ``g`` (or a function rebuilt
    from one that holds it) replaced; the code and options stay JAX's own.
    """
    if not _jax_code(f):
        return None
    target = getattr(f, "__wrapped__", None)
    end, depth = target, _REBUILD_DEPTH
    while callable(end) and _jax_code(end) and depth:
        end, depth = getattr(end, "__wrapped__", None), depth - 1
    if not callable(target) or not callable(end) or _jax_code(end) or not is_user(end):
        return None
    new = replace(target)
    if new is target:
        return None
    return _with_cell(f, target, new, _REBUILD_DEPTH)


def _with_cell(fn, target, new, depth: int):
    import types

    if depth == 0 or not isinstance(fn, types.FunctionType) or not fn.__closure__:
        return None
    cells, changed = [], False
    for cell in fn.__closure__:
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            cells.append(cell)
            continue
        if value is target:
            cells.append(types.CellType(new))
            changed = True
        elif isinstance(value, types.FunctionType) and _jax_code(value):
            inner = _with_cell(value, target, new, depth - 1)
            cells.append(cell if inner is None else types.CellType(inner))
            changed = changed or inner is not None
        else:
            cells.append(cell)
    if not changed:
        return None
    out = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                             tuple(cells))
    out.__kwdefaults__ = fn.__kwdefaults__
    out.__dict__.update(fn.__dict__)
    out.__qualname__, out.__doc__, out.__module__ = fn.__qualname__, fn.__doc__, fn.__module__
    if getattr(fn, "__wrapped__", None) is target:
        out.__wrapped__ = new  # type: ignore[attr-defined]
    return out


def is_unspecified(sharding) -> bool:
    """Whether a ``jit_info`` sharding leaf is "not given"."""
    return isinstance(sharding, UnspecifiedValue)


@functools.cache
def cpp_jit_builder() -> Callable[[str, Callable], Any] | None:
    """``build(name, miss) -> dispatcher``: JAX's C++ ``jit`` dispatcher with our own cache miss.

    It relies on ``_jax.pjit``'s positional constructor, ``pxla.JitGlobalCppCacheKeys``,
    ``pjit._get_cpp_global_cache`` and a miss that returns ``(out, fastpath_data,
    rebuild_with_fdo)``. A self-test checks that a miss which hands C++ nothing is
    called again on every call; where it fails, a warning names the failure and
    ``autograph.function`` keeps its Python entry.
    """
    try:
        if not hasattr(_pjit, "_need_to_rebuild_with_fdo"):
            raise AttributeError("a cache miss returns a pair here, not the triple built below")
        info = jax.jit(lambda x: x)._jit_info  # type: ignore[attr-defined]
        fields = {f.name: getattr(info, f.name)
                  for f in dataclasses.fields(_pxla.JitGlobalCppCacheKeys)}
        key = _pxla.JitGlobalCppCacheKeys(**fields)
        cache = _pjit._get_cpp_global_cache(key.contains_explicit_attributes)

        def build(name: str, miss: Callable):
            # the miss also keys the shared cache (no other dispatcher has it), so
            # `jax.clear_caches()` empties this one too
            return _jax.pjit(name, miss, miss, (), (), key, _tree_util.dispatch_registry,
                             _pxla.cc_shard_arg, cache)

        seen: list = []

        def test_miss(*args, **kwargs):
            seen.append(args)
            return args[0] + 1, None, False

        probe = build("probe", test_miss)
        if probe(1) != 2 or probe(2) != 3 or len(seen) != 2:
            raise TypeError(f"the probe dispatcher called its miss {len(seen)} times, not 2")
    except (TypeError, ValueError, AttributeError) as e:
        _fallback("cpp_jit_builder", e)
        return None
    return build


# -- errors ---------------------------------------------------------------------------

def output_runtime_tokens() -> dict:
    """JAX's per-device tokens of runs with unordered callbacks (each holds its run's
    error, raised again by ``jax.effects_barrier()`` and at exit)."""
    return _dispatch.runtime_tokens.output_runtime_tokens


# the loggers that record an exception raised inside a host callback
CALLBACK_LOGGERS = ("jax._src.debugging", "jax._src.callback")
# the module of the frame each public JAX function enters through (its traceback filter)
TRACEBACK_FILTER_MODULE = _traceback_util.__name__


def exclude_from_tracebacks(path: str) -> None:
    """Asks JAX to drop frames under ``path`` from the tracebacks of errors it filters."""
    _traceback_util.register_exclusion(path)


# -- public API that moved -------------------------------------------------------------

def enable_x64(enabled: bool = True):
    """``jax.enable_x64(enabled)``, a context manager (JAX before 0.8 has it as
    ``jax.experimental.enable_x64``)."""
    name = "enable_x64"  # a module attribute on one JAX, an experimental one on another
    if hasattr(jax, name):
        return getattr(jax, name)(enabled)
    import importlib  # pragma: no cover - JAX before 0.8
    return getattr(importlib.import_module("jax.experimental"), name)(enabled)  # pragma: no cover


# -- processes ------------------------------------------------------------------------

def backends_started() -> bool:
    """Whether a backend (and so a device client) has been made in this process; after
    that, ``jax.distributed.initialize`` is too late."""
    return bool(_xla_bridge.backends_are_initialized())


def has_gloo_collectives() -> bool:
    """Whether this jaxlib can run collectives between CPU processes (gloo over TCP)."""
    return hasattr(_jax, "make_gloo_tcp_collectives")


# -- differentiation ------------------------------------------------------------------

@functools.cache
def allow_stop_gradient_transpose() -> None:
    """Lets reverse mode transpose ``stop_gradient`` applied to tangents (the identity).

    ``vmap`` of ``lax.cond`` with a batched predicate wraps the operands in
    ``stop_gradient``; where the cond sits in a ``custom_jvp`` rule (as the
    bounded loop form does), ``jax.grad(jax.vmap(f))`` batches the rule after
    linearizing it, so the wrapped operands are tangents, and transposing them
    fails (JAX issues #22011 and #39219). As a function ``stop_gradient`` is
    the identity, so on tangents its transpose is the identity too.

    This is the one change autograph makes to JAX's tables. It is made when the
    first loop that needs it is built (``runtime.bounded.counted_loop``), never
    at import, and only where JAX has no rule of its own; it changes no result
    JAX computes without it (without it, such a program raises).
    """
    if _ad_util.stop_gradient_p not in _ad.primitive_transposes:
        _ad.primitive_transposes[_ad_util.stop_gradient_p] = lambda ct, x: [ct]


# -- JAX's error messages -------------------------------------------------------------
# JAX tells some of its errors apart only by their text. They are read here alone,
# each with a test that makes JAX raise it (tests/test_jax_internals.py), so that a
# JAX release that rewords one breaks that test, not autograph's behaviour.

_REVERSE_WHILE = "Reverse-mode differentiation does not work for lax.while_loop"
_ORDERED_MANY_DEVICES = "ordered effects are not supported for more than 1 device"
_TRACED_SHAPE = "Shapes must be 1D sequences of concrete values of integer type, got "
_STATIC_SIZE = "size argument of jnp.nonzero"


def is_reverse_while_error(error: BaseException) -> bool:
    """JAX refusing reverse mode through a ``lax.while_loop`` (a ``ValueError``)."""
    return isinstance(error, ValueError) and _REVERSE_WHILE in str(error)


def is_ordered_callbacks_refused(error: BaseException) -> bool:
    """JAX refusing ordered callbacks in a program over several devices (a ``ValueError``
    raised when the program is lowered)."""
    return isinstance(error, ValueError) and _ORDERED_MANY_DEVICES in str(error)


def traced_shape(error: BaseException) -> str | None:
    """The shape JAX names where an array is made with a traced size
    (``jnp.zeros((1, n))``), as ``(1, int32[])``; None for any other error."""
    text = str(error)
    if not isinstance(error, TypeError) or _TRACED_SHAPE not in text:
        return None
    shape = text.split(_TRACED_SHAPE, 1)[1].split("\n", 1)[0].rstrip(".")
    # JitTracer(int32[]) and JitTracer<~int32[]> -> int32[]
    return re.sub(r"\w*Tracer[(<]~?(.*?)[)>]", r"\1", shape)


def is_static_size_error(error: BaseException) -> bool:
    """JAX asking for ``size=`` of ``jnp.where(c)``/``jnp.nonzero``/``jnp.argwhere`` of a
    traced value (a ``ConcretizationTypeError``)."""
    return isinstance(error, jax.errors.ConcretizationTypeError) and _STATIC_SIZE in str(error)
