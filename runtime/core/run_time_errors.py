"""Errors the compiled program raises as it runs, handed back as the user's own.

A `raise` in a staged branch, a traced `assert` that fails and a read of a
variable a staged loop left unassigned all raise from a ``jax.debug.callback``
when the program runs. JAX logs such an exception to stderr, with a traceback
of its own frames, and reports it as ``JaxRuntimeError`` (``INTERNAL:
CpuCallback error ...``). Here:

* :func:`fail` raises the error from the callback and remembers it, and the
  log record JAX writes for it is dropped (its text is in the error itself);
* :func:`original` finds the remembered error behind a ``JaxRuntimeError``.
  Where autograph makes the call (``autograph.function``, or a converted
  function run outside ``jax.jit``), the caller gets that error, so
  ``except ValueError:`` around the call works as in Python. Under the user's
  own ``jax.jit`` the ``JaxRuntimeError`` reaches the caller, its message
  holding the error's text.
"""

from __future__ import annotations

import collections
import logging
import threading

import jax

from autograph import errors, jax_internals

_LOCK = threading.Lock()
# Raised by `fail` and not yet handed to a caller, oldest first: (the first line of
# the error's text, a copy of the error that no one has raised). Callbacks run on
# XLA's threads, not the caller's, so a caller finds its run's error by the text
# JAX reports. Runs under the user's own `jax.jit` never collect theirs; past
# 4,096 the oldest go, a bound no number of concurrent callers comes near.
_PENDING: collections.deque[tuple[str, BaseException]] = collections.deque(maxlen=4096)
_RAISED = "_autograph_raised_as_it_ran"  # marks the object `fail` raises, for `_Quiet`


def fail(error: BaseException, args: tuple | None = None):
    """Raises ``error`` from a callback of the running program.

    What is raised is a new exception each time, ``error``'s type with its
    attributes (and ``args``, if given), so that runs never share one object:
    ``error`` itself may be captured once, while tracing, and fail on many runs.
    """
    kept = errors.fresh(error, args)
    raised = errors.fresh(error, _noted(error, args))
    try:
        setattr(raised, _RAISED, True)
    except (AttributeError, TypeError):  # pragma: no cover - an exception with __slots__
        pass
    with _LOCK:
        _PENDING.append((_first_line(kept), kept))
    raise raised


def _noted(error: BaseException, args: tuple | None) -> tuple | None:
    """``args`` (or ``error``'s), with the notes of ``error`` (where the user's line
    raised it) appended to a one-string message: JAX's report of the failed run
    holds the message, not the notes. The caller's copy keeps the message as it is."""
    notes = getattr(error, "__notes__", None)
    given = error.args if args is None else args
    if not notes or len(given) != 1 or not isinstance(given[0], str):
        return args
    return (given[0] + "\n" + "\n".join(str(n) for n in notes),)


def _first_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0]


def _find(error: BaseException) -> int | None:
    """Where in ``_PENDING`` the exception ``error`` (a ``JaxRuntimeError``) reports
    is: the longest text it holds, the oldest of equal ones."""
    if not isinstance(error, jax.errors.JaxRuntimeError):
        return None
    text = str(error)
    best, best_len = None, -1
    for i, (line, _) in enumerate(_PENDING):
        if len(line) > best_len and line in text:
            best, best_len = i, len(line)
    return best


def original(error: BaseException) -> BaseException | None:
    """The exception :func:`fail` raised that ``error`` (a ``JaxRuntimeError``)
    reports, handed out once."""
    with _LOCK:
        i = _find(error)
        if i is None:
            return None
        found = _PENDING[i][1]
        del _PENDING[i]
        return found


def raised_as_it_ran(error: BaseException) -> bool:
    """Whether ``error`` reports an exception :func:`fail` raised: the program ran,
    and stopped there, rather than failed to be staged.

    A staged loop run eagerly (under ``jax.vmap`` without ``jax.jit``) runs as
    it is staged; a failure then is the program's own, with the effects before
    it already done, and running the loop again another way would repeat them.
    """
    with _LOCK:
        return _find(error) is not None


def reraise(error: BaseException) -> None:
    """Raises the user's exception behind ``error``, if there is one; else returns."""
    found = original(error)
    if found is not None:
        _forget_failed_runs(found)
        # (`raise E from C` keeps its cause; else JAX's report is no context of it)
        raise found.with_traceback(None) from found.__cause__


def _reports(error: BaseException, candidate: BaseException) -> bool:
    """Whether ``error`` (a ``JaxRuntimeError``) reports ``candidate``."""
    return _first_line(candidate) in str(error)


def _forget_failed_runs(found: BaseException) -> None:
    """Drops JAX's record of the failed runs that raised ``found`` (or another error
    :func:`fail` raised).

    A program with unordered callbacks (one over several devices) leaves JAX a
    token per device, which holds the error of that device's run;
    ``jax.effects_barrier()`` and the exit of the process would raise it again,
    after the caller got it.
    """
    tokens = jax_internals.output_runtime_tokens()
    for device, token in list(tokens.items()):
        try:
            token.block_until_ready()
        except jax.errors.JaxRuntimeError as e:
            if _reports(e, found) or raised_as_it_ran(e):
                del tokens[device]


class _Quiet(logging.Filter):
    """Drops JAX's log record of an exception :func:`fail` raised."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return exc is None or not getattr(exc, _RAISED, False)


for _name in jax_internals.CALLBACK_LOGGERS:
    logging.getLogger(_name).addFilter(_Quiet())
