"""Running ``autograph.function``s as plain Python, for debugging."""

from __future__ import annotations

import contextlib
import contextvars
import threading
import weakref

# Inside a `run_eagerly(True)` block: an `_On` (see there); elsewhere None.
_EAGER: contextvars.ContextVar[_On | None] = contextvars.ContextVar("autograph_run_eagerly",
                                                                   default=None)
# The process-wide switch (`run_functions_eagerly`), for every thread.
_GLOBAL = [False]
_OPEN = [0]  # `_On` objects alive: contexts that may run eagerly
# Whether eager mode may be on anywhere, which every Function's call path reads.
# Only while it is can a call run eagerly, so only then do Functions check
# `eager()` on each call; otherwise their plain calls stay in jax.jit's C++ dispatch.
CHECKING = [False]
_FUNCTIONS: "weakref.WeakSet" = weakref.WeakSet()
# one change of CHECKING, and its telling, at a time; reentrant, as an `_On` may
# be collected while the Functions are being told
_SWITCHING = threading.RLock()


def register(function) -> None:
    """Tracks a Function, to be told when ``CHECKING`` changes."""
    _FUNCTIONS.add(function)


def _update(opened: int = 0) -> None:
    """Sets ``CHECKING`` from the switches and tells every Function when it changes."""
    with _SWITCHING:
        _OPEN[0] += opened
        checking = _GLOBAL[0] or _OPEN[0] > 0
        if checking == CHECKING[0]:
            return
        CHECKING[0] = checking
        for function in list(_FUNCTIONS):
            function._eager_mode_changed()


class _On:
    """The value of ``_EAGER`` inside a ``run_eagerly(True)`` block.

    A context copied inside the block (an ``asyncio`` task's) holds the same
    object, so it lives, and Functions check eager mode, for as long as some
    context may still run eagerly.
    """

    __slots__ = ()

    def __init__(self):
        _update(opened=1)

    def __del__(self):
        _update(opened=-1)


def eager() -> bool:
    return _GLOBAL[0] or _EAGER.get() is not None


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Makes every ``autograph.function`` run its plain Python function.

    Nothing is converted, traced or compiled, so ``print``, ``pdb`` and
    breakpoints see concrete values, as in TensorFlow's
    ``tf.config.run_functions_eagerly``. It applies to every thread; the
    scoped form, :func:`run_eagerly`, to the current thread or task only.
    """
    _GLOBAL[0] = bool(run_eagerly)
    _update()


def functions_run_eagerly() -> bool:
    """Whether ``autograph.function``s currently run as plain Python."""
    return eager()


@contextlib.contextmanager
def run_eagerly(enabled: bool = True):
    """Within the ``with`` block, ``autograph.function``s run as plain Python.

    Examples:
      >>> import autograph
      >>> with autograph.run_eagerly():
      ...     autograph.functions_run_eagerly()
      True
      >>> autograph.functions_run_eagerly()
      False
    """
    token = _EAGER.set(_On() if enabled else None)
    try:
        yield
    finally:
        _EAGER.reset(token)
