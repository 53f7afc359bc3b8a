"""`print` and `assert` that keep their meaning on traced values."""

from __future__ import annotations

import builtins
import enum
import functools
import sys
from collections.abc import Callable
from typing import IO, Any

import jax
import jax.numpy as jnp
import numpy as np

from autograph import errors

from ..core import handlers, host_callbacks, run_time_errors
from ..core.values import Tracer, any_traced, branch_guard, is_staging, is_traced
from . import strings
from .strings import FString


def print_(*values: Any, sep: str | None = " ", end: str | None = "\n",
           file: IO[str] | None = None, flush: bool = False) -> None:
    """``print``; with traced arguments, prints when the program runs.

    The semantics are given by this Python implementation::

        print(*values, sep=sep, end=end, file=file, flush=flush)

    The text is what the plain-Python run prints: the same ``sep``, ``end`` and
    ``file``, each traced value shown as its concrete array. On one device
    prints are ordered with each other (``jax.debug.callback(..., ordered=True)``);
    a program over several devices prints once per run, from its first device,
    each value whole (see :mod:`autograph.runtime.core.host_callbacks`). Inside a
    staged branch or loop body even Python values print when the program runs,
    once per step. Under ``jax.vmap`` each element prints what its own run
    prints: nothing from a branch it does not take or a loop it has left.

    Args:
      *values: what to print.
      sep: as for ``print``.
      end: as for ``print``.
      file: as for ``print``.
      flush: as for ``print``.
    """
    if not any_traced(values) and not is_staging():
        return builtins.print(*values, sep=sep, end=end, file=file, flush=flush)
    # in a staged branch or loop body even Python values print when the step runs
    _print_at_run_time(values, sep=sep, end=end, file=file, flush=flush)


def _print_at_run_time(values, **print_kwargs):
    # Only traced leaves cross to the host; Python values stay as they are. Under
    # `jax.vmap` the callback runs once per element, in order: an element for
    # which the enclosing staged branch is not taken (or whose loop has
    # finished) prints nothing, as its own Python run would not.
    parts = [strings.split(v) for v in values]
    taken = branch_guard()
    guarded = is_traced(taken)

    def show(*arrays):
        if guarded:
            if not np.any(arrays[0]):
                return
            arrays = arrays[1:]
        it = iter(arrays)
        shown = []
        for value, (traced, rebuild) in zip(values, parts):
            concrete = [next(it) for _ in traced]
            if isinstance(value, Tracer):
                shown.append(concrete[0])  # printed with str(): same text as a jax.Array
            else:  # inside containers repr() shows them: as the jax.Arrays they are
                shown.append(rebuild([jnp.asarray(a) for a in concrete]))
        builtins.print(*shown, **print_kwargs)

    traced = [t for group, _ in parts for t in group]
    symbolic = _symbolic_shape(traced)
    if symbolic is not None:
        # no host callback takes a value of a size known only when the program runs:
        # printed while tracing, as plain `jax.jit` and `jax.export` print
        errors.warn(f"{errors.here()}this `print` runs while "
                    f"tracing, not when the program runs: it is given a value of shape "
                    f"{symbolic}, whose symbolic dimension (a `None` of an `input_signature` "
                    f"or a spec) no host callback takes")
        builtins.print(*values, **print_kwargs)
        return
    host_callbacks.show(show, *([taken] if guarded else []), *traced)


def _symbolic_shape(traced) -> str | None:
    """The shape of the first of ``traced`` with a dimension ``jax.export`` leaves
    symbolic, as text, or None."""
    for t in traced:
        shape = tuple(getattr(t, "shape", ()))
        if any(not isinstance(d, int) for d in shape):
            return str(shape)
    return None


def autograph_print(*values, sep=" ", end="\n", file=None, flush=False):
    """Prints ``values`` when the program runs, traced or not (``autograph.print``).

    Outside a trace it prints at once, like ``print``; inside ``jax.jit`` it
    prints on every run of the compiled program, in order on one device.
    """
    _print_at_run_time(values, sep=sep, end=end, file=file, flush=flush)


def _fail_if_false(failed, message, *fields, where=None):
    if np.any(failed):
        if isinstance(message, FString):
            message = message.render(fields)
        error = AssertionError(message)
        errors.note_raised_at(error, where)
        run_time_errors.fail(error)


def assert_(test: Any, message_thunk: Callable[[], Any] | None = None) -> None:
    """``assert test, message``; on a traced ``test``, a check made at run time.

    The semantics are given by this Python implementation::

        if not test:
            raise AssertionError(message_thunk())

    When ``test`` is traced the check runs with the program: a false
    condition stops it with an error whose text contains ``AssertionError``
    and the message. What the message formats from traced values (an
    ``FString``) is formatted then, from the values of that run. Under
    ``jax.vmap`` only an element for which the enclosing staged branches and
    loops run fails. In a program over several devices every device checks the
    condition as reduced over all shards, so every process fails the call.

    Args:
      test: the asserted condition, a Python value or a traced scalar.
      message_thunk: computes the message; None for a bare ``assert``.

    Raises:
      AssertionError: ``test`` is a Python value and false.
    """
    if not is_traced(test):
        if not test:
            raise raised(AssertionError(str(message_thunk())) if message_thunk
                         else AssertionError())
        return
    if handlers.catching(jax.errors.TracerBoolConversionError):
        # an `except` around it catches what plain `jax.jit` raises here
        handlers.warn_caught("the condition of an `assert`")
        handlers.raise_as_jit(test)
    if handlers.catching(AssertionError):
        # checked as the program runs, where no `except` catches it: as under `jax.jit`
        handlers.raise_as_jit(test, errors.BranchError(
            "an `assert` on an array cannot be caught by `except`",
            observed="its condition is only known when the program runs, where the "
                     "`except AssertionError` around it cannot catch it",
            fix="decide with `jnp.where` or a flag instead of asserting, or make the "
                "condition a Python value"))
    fields = ()
    loc = errors.current_location()
    if message_thunk is None:
        message = "assertion failed"
        if loc is not None:
            message = f"assertion failed at {loc.short}: {loc.text.strip()}"
            loc = None  # the message names it
    else:
        message = message_thunk()
        if isinstance(message, FString):  # formatted at run time, with the fields' values
            fields = message.fields
        else:
            message = str(message)
    failed = jnp.logical_and(branch_guard(), jnp.logical_not(test))
    host_callbacks.check(functools.partial(_fail_if_false, where=loc), failed, message,
                         *fields)


_USER_RAISED = "__autograph_user_raised__"


class Raised(enum.Enum):
    """Where a user's ``raise`` (or ``assert``) ran, as marked on its exception."""

    OUTSIDE_TRY = "not inside a `try` body: a staged branch may raise it at run time"
    IN_TRY = "inside a `try` body, whose handlers may catch it: it cannot wait for run time"


def raised(exc: BaseException | type[BaseException], in_try: bool = False) -> BaseException:
    """The exception a user's ``raise exc`` raises, marked as the user's own.

    The semantics are given by this Python implementation::

        return exc() if isinstance(exc, type) else exc

    A class is instantiated, as ``raise`` does. Inside a staged branch a
    marked exception is raised at run time, only when the branch is taken;
    one raised inside a ``try`` body (``in_try``), which a handler may catch,
    cannot wait for run time.

    Args:
      exc: what the ``raise`` statement names: an exception or its class.
      in_try: whether the ``raise`` sits in the body of a ``try``.

    Returns:
      The exception to raise, marked with a ``Raised``.
    """
    if isinstance(exc, type) and issubclass(exc, BaseException):
        exc = exc()
    if isinstance(exc, BaseException):
        try:
            setattr(exc, _USER_RAISED, Raised.IN_TRY if in_try else Raised.OUTSIDE_TRY)
        except (AttributeError, TypeError):  # pragma: no cover - exotic exception types
            pass
    return exc


def reraised() -> BaseException:
    """What a bare ``raise`` outside an ``except:`` block raises: the exception being
    handled (a helper called from its caller's handler), else Python's
    ``RuntimeError``, marked as the user's (so a staged branch raises it only when
    the program takes that branch, as Python would).

    The semantics are given by this Python implementation::

        raise   # re-raises the exception being handled

    Returns:
      The exception to raise.
    """
    exc = sys.exc_info()[1]
    if exc is not None:
        return exc
    return raised(RuntimeError("No active exception to reraise"))


def in_flight(exc: BaseException) -> BaseException:
    """The exception in flight when a `finally:` block that jumps runs, kept for after it.

    The semantics are given by this Python implementation::

        return exc

    The `finally:` block's `return`, `break` or `continue` drops it, or it is
    raised again after the block (see ``converters/finally_jumps``). An
    autograph error that says a construct cannot be staged faithfully (a
    ``BranchError``, a ``LoopStateError``, ...) is raised at once instead:
    Python would not have raised it, so no jump may drop it. An
    ``UndefinedVariableError`` is Python's ``UnboundLocalError``, the
    program's own.

    Args:
      exc: what the `try` caught.

    Returns:
      ``exc``.
    """
    if isinstance(exc, errors.AutographError) and not isinstance(
            exc, errors.UndefinedVariableError):
        raise exc
    return exc


def user_raised(e: BaseException) -> Raised | None:
    """Where ``e`` was raised, if by a ``raise`` or ``assert`` of the user's converted code.

    None when it was raised by anything else (JAX, a library, a Python error).
    """
    return e.__dict__.get(_USER_RAISED) if hasattr(e, "__dict__") else None
