"""Directives: calls that steer conversion and mean nothing at run time."""

from __future__ import annotations

import difflib
import operator
from typing import Any, Mapping, NamedTuple

import jax

from autograph import errors

# the options `set_loop_options` takes, in its order
LOOP_OPTIONS = ("maximum_iterations", "checkpoints", "checkpoint_memory")


class LoopOptions(NamedTuple):
    """What ``set_loop_options`` configured for one `while` loop, checked."""

    maximum_iterations: Any = None  # the most iterations (an int, a traced int), or None
    checkpoints: int | None = None  # copies of the state the backward pass keeps, or None
    checkpoint_memory: int | None = None  # or the bytes those copies may take, or None


def set_loop_options(*, maximum_iterations: int | None = None,
                     checkpoints: int | None = None, checkpoint_memory: int | None = None,
                     **unknown: object) -> None:
    """Sets how the traced ``while`` loop whose body starts with this call runs.

    A ``while`` loop whose condition is traced runs as ``lax.while_loop``, and
    reverse-mode ``jax.grad`` differentiates it in one of two forms:

    * bounded: with ``maximum_iterations=N`` (or a counter that bounds the
      loop, as ``while i < 10`` with ``i += 1`` in the body), as a ``lax.scan``
      of ``N`` steps that stops changing its state once the condition is
      false. Its backward pass keeps what every step computed.
    * checkpointed: any other loop. Its backward pass keeps ``checkpoints``
      copies of the loop state (by default 128, fewer for a state over 2 MiB),
      or as many as fit in ``checkpoint_memory`` bytes, and recomputes the
      steps between them; see :mod:`autograph.runtime.loop_forms.checkpointed` for the
      bounds. A loop whose trip count fits in about half the copies keeps
      every state and recomputes nothing, as a ``lax.scan`` of known length
      does; the copies are allocated (on CPU, zeroed) on every call, so more
      of them cost time on short loops.

    With ``maximum_iterations=N`` the loop stops after ``N`` iterations even if
    its condition still holds. Giving ``checkpoints`` chooses the
    checkpointed form even where the loop has a bound, for a backward pass
    whose memory does not grow with the trip count. Outside converted code,
    and for loops that run in Python, the call does nothing but check its
    options.

    An option it does not take (``max_iterations=``) and a negative bound are
    each a :class:`LoopOptionsError` naming the option and the line. A call
    that configures nothing (one in a ``for`` body, or not the first statement
    of a ``while`` body) does nothing, as outside converted code, and warns.

    Args:
      maximum_iterations: the most iterations the loop may run (0 or more).
      checkpoints: how many copies of the loop state the backward pass of the
        checkpointed form keeps (at least 2).
      checkpoint_memory: instead of ``checkpoints``, the bytes those copies may
        take: as many copies as fit (at least 2) are kept.
      **unknown: no other option exists; any is an error naming the closest.
    """
    check_loop_options({"maximum_iterations": maximum_iterations, "checkpoints": checkpoints,
                        "checkpoint_memory": checkpoint_memory, **unknown})


def check_loop_options(options: Mapping[str, Any], location=None) -> LoopOptions:
    """``options`` as a ``LoopOptions`` record; a ``LoopOptionsError`` for an option
    ``set_loop_options`` does not take, or a value out of its range (``location``:
    the user's line, if known)."""
    for name, value in options.items():
        if name not in LOOP_OPTIONS:
            close = difflib.get_close_matches(name, LOOP_OPTIONS, n=1)
            raise errors.LoopOptionsError(
                f"`set_loop_options` has no option `{name}`" + (
                    " (in the call that starts this loop's body)" if location else ""),
                observed=f"it takes {' and '.join(f'`{o}`' for o in LOOP_OPTIONS)}",
                fix=(f"did you mean `{close[0]}=`?" if close else
                     f"use {' or '.join(f'`{o}=`' for o in LOOP_OPTIONS)}"),
                location=location)
        if value is None or isinstance(value, jax.core.Tracer):
            continue  # (a traced bound is `lax.while_loop`'s to check)
        least = {"maximum_iterations": 0, "checkpoints": 2, "checkpoint_memory": 1}[name]
        try:
            n = operator.index(value)
        except TypeError:
            n = None
        if n is None or isinstance(value, bool) or n < least:
            raise errors.LoopOptionsError(
                f"`set_loop_options({name}=...)` takes an integer of at least {least}" + (
                    " (in the call that starts this loop's body)" if location else ""),
                observed=f"`{name}={value!r}`",
                fix={"maximum_iterations": "give the most iterations the loop may run, 0 or more",
                     "checkpoints": "give 2 or more copies of the loop state to keep",
                     "checkpoint_memory": "give the bytes the kept copies may take (e.g. "
                                          "`64 * 2**20` for 64 MiB)"}[name],
                location=location)
    if options.get("checkpoints") is not None and options.get("checkpoint_memory") is not None:
        raise errors.LoopOptionsError(
            "`set_loop_options` takes `checkpoints` or `checkpoint_memory`, not both" + (
                " (in the call that starts this loop's body)" if location else ""),
            observed=f"`checkpoints={options['checkpoints']!r}` and "
                     f"`checkpoint_memory={options['checkpoint_memory']!r}`",
            fix="give the number of copies, or the bytes they may take",
            location=location)
    return LoopOptions(**options)
