"""The `except` clauses around the code running now, for constructs that would raise.

Under plain ``jax.jit`` an ``if`` (``while``, ``assert``, ``and``, ``range``) on a
traced value raises JAX's error (``TracerBoolConversionError``, a ``TypeError``)
while tracing, and an ``except`` around it catches that error::

    try:                                  ->   try:
        if x > 0:                                with ag__.handled_by((lambda: Exception,)):
            y = 1.0                                  ...
        else:                                  except Exception:
            y = 2.0                                y = 3.0
    except Exception:
        y = 3.0

Staging the ``if`` would make the program take the other path (``y`` the
value of the branch, where ``jax.jit`` gives 3.0). So where an ``except``
around the running code catches the error plain ``jax.jit`` would raise, the
construct does what ``jax.jit`` does: its condition raises JAX's error, which
the handler catches (with a warning saying so). Where the handlers catch an
error autograph raises while staging (a ``BranchError`` is a ``ValueError``)
but not JAX's, the construct raises JAX's error, from autograph's, which no
handler there catches: as under ``jax.jit``, the program fails, and says why.

The handlers are those of the `try` statements whose bodies are running, in
converted code, in this thread (a function called from such a body runs in it
too, as under ``jax.jit``); a handler's classes are evaluated only when a
traced condition asks.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import Any, NoReturn

from autograph import errors

# per `try` body running, outermost first: its handlers, each the function that
# evaluates its class (or tuple of classes), or None for one whose expression may
# do more than look names up (`except which():`), which is not evaluated here
_Handlers = tuple[Callable[[], Any] | None, ...]
_HANDLERS: contextvars.ContextVar[tuple[_Handlers, ...]] = contextvars.ContextVar(
    "autograph_handlers", default=())


@contextlib.contextmanager
def handled_by(handlers: _Handlers) -> Iterator[None]:
    """Marks the body of a `try` with these ``except`` clauses, in order."""
    token = _HANDLERS.set(_HANDLERS.get() + (tuple(handlers),))
    try:
        yield
    finally:
        _HANDLERS.reset(token)


def active() -> bool:
    """Whether the running code is inside the body of a `try` with handlers."""
    return bool(_HANDLERS.get())


def _classes(value) -> Iterator[type]:
    if isinstance(value, tuple):
        for v in value:
            yield from _classes(v)
    elif isinstance(value, type):
        yield value


def catching(error: type[BaseException]) -> bool:
    """Whether an ``except`` around the running code would see ``error`` raised here.

    Python tries the innermost `try` first, each of its handlers in order, and
    stops at the first that matches. A handler whose class cannot be evaluated
    (``except optional_lib.Error:`` where it is None), or that is not evaluated
    here, counts: raised, the error reaches it, and Python evaluates it, as under
    ``jax.jit``. A class matches by its bases, as ``except`` matches (not by an
    ABC's ``register``).
    """
    for handlers in reversed(_HANDLERS.get()):
        for handler in handlers:
            if handler is None:
                return True
            try:
                named = handler()
            except Exception:  # noqa: BLE001 - raised as the error reaches it
                return True
            if any(c in error.__mro__ for c in _classes(named)):
                return True
    return False


def jit_error(pred) -> Exception:
    """What plain ``jax.jit`` raises on ``bool(pred)`` of the traced ``pred``."""
    try:
        bool(pred)
    except Exception as e:  # noqa: BLE001 - JAX's own, whichever it is
        return e
    raise AssertionError("a traced condition had a truth value")  # pragma: no cover


def raise_as_jit(pred, cause: BaseException | None = None) -> NoReturn:
    """Raises what plain ``jax.jit`` raises on ``bool(pred)`` of the traced ``pred``
    (from ``cause``, the error autograph would have raised instead)."""
    raise jit_error(pred) from cause


def warn_caught(what: str, error: str = "TracerBoolConversionError") -> None:
    """Warns that ``what`` (its traced part) raises JAX's ``error`` for a handler."""
    errors.warn(
        f"{errors.here()}{what} is traced, and an `except` around it catches the {error} "
        f"plain `jax.jit` raises there: it raises that error, as under `jax.jit` (staged, "
        f"the program would take another path); to stage it, catch narrower exceptions "
        f"than `TypeError`, or move it out of the `try`")


def staged(pred, run: Callable[[], Any]) -> Any:
    """``run()``, which stages a construct on the traced condition ``pred``: an
    error raised while staging it (autograph's, or the user's code's on a branch
    or step Python might never run) that an ``except`` around it would catch is
    raised as JAX's error on ``pred`` instead, from it (see above). (Where the
    handlers catch JAX's error, ``conditions.condition`` raised it already.)"""
    if not active():
        return run()
    try:
        return run()
    except Exception as e:  # noqa: BLE001 - whichever a handler there would catch
        # autograph's own error, or one the branch not taken raises while it is traced
        # (`d["missing"]` under `except KeyError:`, which Python would never meet); not
        # one the runtime raises for a frame of its own to catch (a loop's staging
        # attempt given up: `KeyOrderError`, `Outgrows`, ...)
        if _runtime_signal(e) or not catching(type(e)):
            raise
        raise_as_jit(pred, e)


def _runtime_signal(e: BaseException) -> bool:
    module = type(e).__module__ or ""
    return module.startswith("autograph.") and module != "autograph.errors"


def as_jit_where_caught(builtin: Callable, replacement: Callable) -> Callable:
    """``replacement`` of ``builtin`` (``float``, ``int``, ``math.sqrt``, ...), which
    gives Python's answer on traced values where plain ``jax.jit`` raises: inside
    the body of a `try` whose handler would catch what ``builtin`` raises on them,
    ``builtin`` itself, as under ``jax.jit`` (``try: return float(x) except
    TypeError: return x``, written in a helper the body calls too)."""
    from .values import any_traced

    def call(*args: Any, **kwargs: Any) -> Any:
        if active() and "key" not in kwargs and any_traced((args, kwargs)):
            try:
                return builtin(*args, **kwargs)
            except Exception as e:  # noqa: BLE001 - whichever a handler there catches
                if catching(type(e)):
                    raise
        return replacement(*args, **kwargs)

    call.__name__ = getattr(replacement, "__name__", "replacement")
    call.__qualname__ = getattr(replacement, "__qualname__", call.__name__)
    call.__doc__ = replacement.__doc__
    call.__wrapped__ = replacement  # type: ignore[attr-defined]
    return call
