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

The C++ constructor is private to JAX and has changed between releases: it is
built in :func:`autograph.jax_internals.cpp_jit_builder`, which checks it
with a self-test; where that fails (with a warning), ``cpp_entry`` returns
``None`` and the caller keeps its Python entry.
"""

from __future__ import annotations

from typing import Callable

from autograph import jax_internals

ARRAY_IMPL = jax_internals.ArrayImpl  # jax.Array's concrete type


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
    build = jax_internals.cpp_jit_builder()
    if build is None:
        return None
    jit_miss = jax_internals.jit_cache_miss(jitted)
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

    return build(name, miss)
