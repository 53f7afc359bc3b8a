"""How ``print``, ``assert`` and ``raise`` on traced values reach the host.

Each is a ``jax.debug.callback`` staged into the program. Where the program runs
on one device the callbacks are ordered (``ordered=True``): they run in program
order, and in call order across calls. JAX refuses ordered callbacks in a program
over more than one device, so there they are unordered, with this rule:

* :func:`show` (``print``) runs once per run of the program, on its first device
  (in a multi-process run, the process that holds that device: process 0 for a
  mesh built from ``jax.devices()``), with each traced value whole, gathered
  from its shards, as ``jax.debug.print`` shows a sharded value;
* :func:`check` (``assert``, ``raise``) runs on every device, with the verdict
  reduced over all shards first, so every device (and every process) fails at
  the same point of the program and none is left waiting in a collective for a
  device that stopped. Its other operands are each device's own shard.

Which applies is chosen while tracing: ``autograph.function`` says so through
:func:`ordering` (it knows its shardings, and traces again unordered when JAX
refuses ordered callbacks for a program); elsewhere (a converted function under
the user's own ``jax.jit``) callbacks are ordered unless JAX shows more than one
device (only one in all, or no mesh in context or on the operands).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from autograph import jax_internals

# True: ordered; False: unordered; None: decide from what the trace shows
_ORDERED: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "autograph_ordered_callbacks", default=None)
# where the function being traced notes that it staged a check
_CHECKS: contextvars.ContextVar[list | None] = contextvars.ContextVar(
    "autograph_staged_checks", default=None)


@contextlib.contextmanager
def ordering(ordered: bool, checks: list | None = None) -> Iterator[None]:
    """Stages the callbacks traced inside ordered or unordered; ``checks`` (if
    given) gets one item per :func:`check` staged."""
    token, token_checks = _ORDERED.set(ordered), _CHECKS.set(checks)
    try:
        yield
    finally:
        _CHECKS.reset(token_checks)
        _ORDERED.reset(token)


def unordered_now() -> bool:
    """Whether the function being traced stages its callbacks unordered."""
    return _ORDERED.get() is False


def refused_ordered(error: BaseException) -> bool:
    """Whether ``error`` is JAX refusing ordered callbacks in a program over several
    devices (raised when the program is lowered)."""
    return jax_internals.is_ordered_callbacks_refused(error)


def _many_devices(operands) -> bool:
    """What the trace shows of more than one device: a mesh in context or on an operand."""
    if jax.device_count() == 1:
        return False
    if jax.sharding.get_abstract_mesh().size > 1:
        return True
    for x in jax.tree_util.tree_leaves(operands):
        sharding = getattr(getattr(x, "aval", None), "sharding", None)
        if sharding is not None and sharding.mesh.size > 1:
            return True
    return False


def _ordered(operands) -> bool:
    mode = _ORDERED.get()
    return not _many_devices(operands) if mode is None else mode


def show(fn: Callable[..., None], *operands: Any) -> None:
    """Calls ``fn(*operands)`` on the host when the program runs; for ``print``.

    Ordered on one device; on many, once, on the program's first device, with
    every operand whole.
    """
    if _ordered(operands):
        jax.debug.callback(fn, *operands, ordered=True)
    else:
        jax.debug.callback(fn, *operands)


def check(fn: Callable[..., None], failed: Any, *operands: Any, in_order: bool = True) -> None:
    """Calls ``fn(failed, *operands)`` on the host when the program runs; ``fn``
    raises when ``failed`` is true; for ``assert`` and ``raise``.

    On one device, ordered (unordered with ``in_order=False``). On many,
    ``failed`` is first reduced over all shards (``jnp.any``), and ``fn`` runs
    on every device with that one verdict and its own shard of each operand, so
    all of them stop together.
    """
    notes = _CHECKS.get()
    if notes is not None:
        notes.append(True)
    fn = _verdict_on_host(fn)
    if _ordered((failed, *operands)):
        jax.debug.callback(fn, failed, *operands, ordered=in_order)
        return
    failed = jnp.any(failed)
    # TPUs run no callback per shard: there the first device checks, with whole operands
    partitioned = jax.default_backend() != "tpu"
    jax.debug.callback(fn, failed, *operands, partitioned=partitioned)


def _verdict_on_host(fn: Callable[..., None]) -> Callable[..., None]:
    """``fn`` handed its verdict as a NumPy array.

    JAX hands a callback ``jax.Array`` s, and ``np.any`` of one is ``jnp.any``: a
    program of its own, which a callback must never run. It waits for the
    device's threads, which the programs calling back hold; with enough programs
    failing at once (threads, each calling its own function) every thread waits.
    """
    def on_host(failed, *operands):
        return fn(np.asarray(failed), *operands)
    return on_host
