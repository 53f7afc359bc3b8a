"""``jax.jit``'s own C++ dispatch for the plain calls of an ``autograph.function``.

A cached call of ``jax.jit`` never leaves C++: it reads the arguments' types,
shapes and dtypes, finds the compiled program and runs it. A Python function
in front of it (to tell arrays from Python values, which ``autograph.function``
keys by value) costs about 0.2 µs a call, 7% of ``x + 1``.

:func:`cpp_entry` builds a dispatcher of the same C++ kind whose cache miss
is ours. The miss sends a call of plain arrays to the ``jax.jit`` function's
own miss, which traces, compiles and hands C++ what it needs to run later
calls of the same signature by itself (arrays, and lists, tuples and dicts of
arrays, which ``general`` would hand to the same ``jax.jit`` function). Any other
call (a Python number, a keyword, a namedtuple or other pytree node, an object)
goes to ``general`` and hands C++ nothing, so every later call of that
signature comes back to Python::

    f(x)         # arrays: C++ finds the program, no Python frame runs
    f(params, x) # a dict of arrays: the same
    f(x, 2.0)    # a Python float: the miss runs, ``general`` keys it by value

The C++ constructor is private to JAX and has changed between releases, so the
dispatcher is built only where a self-test passes; elsewhere ``cpp_entry``
returns ``None`` and the caller keeps its Python entry.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable

import jax


def _array_type() -> type:
    """jax.Array's concrete type, named rather than made: making an array would start
    the backend, which must wait for ``jax.distributed.initialize``."""
    try:
        from jax._src.array import ArrayImpl
    except ImportError:  # pragma: no cover - a JAX that moved it: every call takes `general`
        return jax.Array
    return ArrayImpl


ARRAY_IMPL = _array_type()


def plain(value) -> bool:
    """An array, or a list, tuple or dict (exactly those types) of plain values."""
    kind = type(value)
    if kind is ARRAY_IMPL:
        return True
    if kind is list or kind is tuple:
        return all(map(plain, value))
    if kind is dict:
        return all(map(plain, value.values()))
    return False


@functools.cache
def _constructor() -> Callable[..., Any] | None:
    """A function ``(name, miss) -> dispatcher``, where this JAX has one that works."""
    try:
        from jax._src import pjit as _pjit
        from jax._src import tree_util
        from jax._src.interpreters import pxla
        from jax._src.lib import _jax

        if not hasattr(_pjit, "_need_to_rebuild_with_fdo"):
            return None  # a miss returns a pair there, not the triple built below
        info = jax.jit(lambda x: x)._jit_info  # type: ignore[attr-defined]
        fields = {f.name: getattr(info, f.name)
                  for f in dataclasses.fields(pxla.JitGlobalCppCacheKeys)}
        key = pxla.JitGlobalCppCacheKeys(**fields)
        cache = _pjit._get_cpp_global_cache(key.contains_explicit_attributes)

        def build(name: str, miss: Callable):
            # the miss also keys the shared cache (no other dispatcher has it), so
            # `jax.clear_caches()` empties this one too
            return _jax.pjit(name, miss, miss, (), (), key, tree_util.dispatch_registry,
                             pxla.cc_shard_arg, cache)

        # self-test: a miss that hands C++ nothing is called again on every call
        seen: list = []

        def test_miss(*args, **kwargs):
            seen.append(args)
            return args[0] + 1, None, False

        probe = build("probe", test_miss)
        if probe(1) != 2 or probe(2) != 3 or len(seen) != 2:
            return None
        return build
    except Exception:  # noqa: BLE001 - any failure means: keep the Python entry
        return None


def cpp_entry(name: str, jitted, n_args: tuple[int, int], general: Callable,
              again: Callable[[BaseException], bool]):
    """A C++ dispatcher for ``jitted`` on ``n_args`` positional arrays, or ``None``.

    Args:
      name: the function's name, for JAX's messages.
      jitted: the ``jax.jit`` function that plain calls run.
      n_args: the fewest and most positional arrays a plain call passes (the
        parameters left out take their defaults, as Python constants, as
        ``general`` would make them).
      general: ``general(args, kwargs)`` runs any other call.
      again: called with an exception a call raised, before it propagates: it
        may raise another instead (the user's own exception behind a
        ``JaxRuntimeError``), or return True to run the call through ``general``.
    """
    build = _constructor()
    if build is None:
        return None
    jit_miss = getattr(jitted, "_cache_miss", None)
    if jit_miss is None:
        return None
    fewest, most = n_args

    def miss(*args, **kwargs):
        try:
            if not kwargs and fewest <= len(args) <= most and all(map(plain, args)):
                return jit_miss(*args)
            return general(args, kwargs), None, False
        except Exception as e:
            if not again(e):
                raise
        return general(args, kwargs), None, False

    try:
        return build(name, miss)
    except Exception:  # noqa: BLE001
        return None
