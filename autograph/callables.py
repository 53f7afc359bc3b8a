"""What a callable handed to autograph is made of, decided by its type alone.

:func:`unwrap` gives the plain function behind a method, ``functools.partial``,
``jax.jit`` function or callable object, and how to wrap the converted one the
same way; :func:`is_function` tells an ``autograph.function``. Both ``api`` and
``function`` use them, so they live here, below both.
"""

from __future__ import annotations

import functools
import types
from typing import TYPE_CHECKING, TypeGuard

from autograph.runtime.functions import transforms as _transforms

if TYPE_CHECKING:  # (for the type checker only: `function` imports this module)
    from autograph.function import Function


class FunctionBase:
    """The base of ``autograph.function``'s ``Function``: lets the modules it
    imports (``api``, ``export``) recognise one without importing it."""

    __slots__ = ()


def is_function(fn) -> TypeGuard[Function]:
    """Whether ``fn`` is an ``autograph.function``."""
    return isinstance(fn, FunctionBase)


def unwrap(fn):
    """The plain function behind ``fn`` (and how to re-wrap the converted one).

    Decided by ``fn``'s type alone: attributes such as ``__wrapped__`` are
    copied by ``functools.wraps`` onto wrappers that do something else.
    """
    if isinstance(fn, (staticmethod, classmethod)):
        fn = fn.__func__
    if isinstance(fn, types.MethodType):  # its function may be wrapped (`@jax.jit`)
        inner, rewrap = unwrap(fn.__func__)
        return inner, lambda f: types.MethodType(rewrap(f), fn.__self__)
    if type(fn) is functools.partial:
        inner, rewrap = unwrap(fn.func)
        return inner, lambda f: functools.partial(rewrap(f), *fn.args, **fn.keywords)
    if isinstance(fn, types.FunctionType):
        return fn, lambda f: f
    if _transforms.is_jit(fn):
        inner, rewrap = unwrap(fn.__wrapped__)
        return inner, lambda f: _transforms.rejit(fn, rewrap(f))
    call = getattr(type(fn), "__call__", None)
    if isinstance(call, types.FunctionType):
        return call, lambda f: types.MethodType(f, fn)
    raise TypeError(f"autograph can convert Python functions, methods, partials, `jax.jit` "
                    f"functions and callable objects; got a `{type(fn).__name__}` object")
