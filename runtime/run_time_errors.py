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

import logging
import threading

import jax

from autograph import jax_internals

_LOCK = threading.Lock()
_RECENT: list[BaseException] = []  # raised by `fail`, newest last; a few at most
_KEEP = 8


def fail(error: BaseException):
    """Raises ``error`` from a callback of the running program."""
    with _LOCK:
        _RECENT.append(error)
        del _RECENT[:-_KEEP]
    raise error


def _find(error: BaseException) -> int | None:
    """Where in ``_RECENT`` the exception ``error`` (a ``JaxRuntimeError``) reports is."""
    if not isinstance(error, jax.errors.JaxRuntimeError):
        return None
    for i in range(len(_RECENT) - 1, -1, -1):
        if _reports(error, _RECENT[i]):
            return i
    return None


def original(error: BaseException) -> BaseException | None:
    """The exception :func:`fail` raised that ``error`` (a ``JaxRuntimeError``) reports."""
    with _LOCK:
        i = _find(error)
        return None if i is None else _RECENT.pop(i)


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
        raise found.with_traceback(None) from None


def _reports(error: BaseException, candidate: BaseException) -> bool:
    """Whether ``error`` (a ``JaxRuntimeError``) reports ``candidate``."""
    return f"{type(candidate).__name__}: {candidate}".splitlines()[0] in str(error)


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
        if exc is None:
            return True
        with _LOCK:
            return not any(exc is e for e in _RECENT)


for _name in jax_internals.CALLBACK_LOGGERS:
    logging.getLogger(_name).addFilter(_Quiet())
