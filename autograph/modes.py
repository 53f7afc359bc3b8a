"""Running ``autograph.function``s as plain Python, for debugging."""

from __future__ import annotations

import contextlib
import contextvars

_EAGER = contextvars.ContextVar("autograph_run_eagerly", default=False)
# Functions whose call path skips the ContextVar (it is on every call's path)
# until eager mode is first switched on; then they are told to check it.
import weakref  # noqa: E402

EVER_EAGER = [False]
_FUNCTIONS: "weakref.WeakSet" = weakref.WeakSet()


def register(function) -> None:
    """Tracks a Function, to be told when eager mode is first used."""
    _FUNCTIONS.add(function)


def _set(value: bool):
    if not EVER_EAGER[0]:
        EVER_EAGER[0] = True
        for function in list(_FUNCTIONS):
            function._eager_mode_used()
    return _EAGER.set(value)


# The process-wide switch (`run_functions_eagerly`), for every thread.
_GLOBAL = [False]


def eager() -> bool:
    return _GLOBAL[0] or _EAGER.get()


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Makes every ``autograph.function`` run its plain Python function.

    Nothing is converted, traced or compiled, so ``print``, ``pdb`` and
    breakpoints see concrete values, as in TensorFlow's
    ``tf.config.run_functions_eagerly``. It applies to every thread; the
    scoped form, :func:`run_eagerly`, to the current thread or task only.
    """
    if run_eagerly and not EVER_EAGER[0]:
        _set(False)  # tells every Function to start checking
    _GLOBAL[0] = bool(run_eagerly)


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
    token = _set(bool(enabled))
    try:
        yield
    finally:
        _EAGER.reset(token)
