"""``converted_call``: calls user functions through their converted form.

Whether a callee is converted is decided here, at run time, from a table of
modules that are never converted (JAX, NumPy, the standard library, ...).
The conversion itself is registered by ``autograph.api`` through
:func:`set_converter`, which keeps this module free of AST code.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
import weakref
from typing import Callable

# Top-level packages whose functions are never converted.
SKIP_PACKAGES = frozenset({
    "jax", "jaxlib", "numpy", "scipy", "autograph", "optax", "flax", "equinox",
    "haiku", "chex", "jaxtyping", "ml_dtypes", "opt_einsum", "pandas", "matplotlib",
    "tqdm", "sklearn", "torch", "tensorflow", "pytest", "_pytest", "hypothesis",
    "pluggy", "typing_extensions", "gast", "IPython",
}) | frozenset(sys.stdlib_module_names)

_converter: Callable | None = None
_resolved: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def set_converter(fn: Callable) -> None:
    """Registers ``fn(function) -> converted function or the function itself``."""
    global _converter
    _converter = fn


def _skipped(fn) -> bool:
    if getattr(fn, "__autograph_do_not_convert__", False):
        return True
    # The module whose code defines `fn`: `functools.wraps` copies `__module__`
    # from the wrapped function, so a library's wrapper would pass for user code.
    globals_ = getattr(fn, "__globals__", None)
    module = (globals_.get("__name__") if globals_ else None) or getattr(fn, "__module__", "") or ""
    return module.split(".")[0] in SKIP_PACKAGES


def resolve(f):
    """The callable to run in place of ``f`` inside converted code."""
    inner = getattr(f, "__autograph_converted__", None)
    if inner is not None:
        return inner
    if isinstance(f, types.FunctionType):
        try:
            return _resolved[f]
        except (KeyError, TypeError):
            pass
        target = f if (_skipped(f) or _converter is None) else _converter(f)
        try:
            _resolved[f] = target
        except TypeError:  # pragma: no cover
            pass
        return target
    if isinstance(f, types.MethodType):
        func = resolve(f.__func__)
        return f if func is f.__func__ else types.MethodType(func, f.__self__)
    if isinstance(f, functools.partial):
        func = resolve(f.func)
        return f if func is f.func else functools.partial(func, *f.args, **f.keywords)
    if isinstance(f, type) or inspect.isbuiltin(f) or not callable(f):
        return f
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType) and not _skipped(call):
        converted = resolve(call)
        if converted is not call:
            return types.MethodType(converted, f)
    return f


def converted_call(f, *args, **kwargs):
    """Calls ``f(*args, **kwargs)``, converting ``f`` first when it is user code."""
    return resolve(f)(*args, **kwargs)
