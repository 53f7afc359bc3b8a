"""Whether a staged loop index reaches code that uses it as a Python value.

A `for` loop over a static range whose body uses its index as a Python
value (``f"w{i}"``, ``str(i)``, ``isinstance(i, int)``) runs as Python, as
under ``jax.jit``: the converter finds such uses in the body itself
(``converters/index_uses``). A helper the body calls may use its parameter
so too::

    def weight(i):
        return P.get(f"w{i}", 0.0)   # a Python int under jax.jit

    for i in range(20):
        x = x + weight(i)            # staged: `i` a traced int32

Each converted function records which of its parameters it uses as a Python
value (``python_params``). While a loop over a static range is traced for
staging (:func:`tracing_static_loop`), ``converted_call`` asks
:func:`check_call` before such a call: a traced integer scalar passed to such
a parameter raises :class:`PythonMeaningError`, and the loop runs as Python.
"""

from __future__ import annotations

import contextlib
import inspect
import threading

from autograph import errors

from ..core.values import Tracer

__all__ = ["PythonMeaningError", "tracing_static_loop", "check_call", "PYTHON_PARAMS"]

# The attribute of a converted function: {parameter: why it is used as a Python value}.
PYTHON_PARAMS = "_autograph_python_params"

_STATE = threading.local()


class PythonMeaningError(errors.LoopStateError):
    """Numbers computed from a staged loop's index would not mean what Python says."""


@contextlib.contextmanager
def tracing_static_loop():
    """Marks the tracing of the body of a loop over a static range, staged."""
    depth = getattr(_STATE, "depth", 0)
    _STATE.depth = depth + 1
    try:
        yield
    finally:
        _STATE.depth = depth


def check_call(target, args, kwargs) -> None:
    """Raises ``PythonMeaningError`` where ``target`` is about to use a traced integer
    scalar as a Python value, while a static loop's body is traced for staging."""
    if not getattr(_STATE, "depth", 0):
        return
    fn = getattr(target, "__func__", target)
    uses = getattr(fn, PYTHON_PARAMS, None)
    if not uses:
        return
    try:
        bound = inspect.signature(target).bind_partial(*args, **kwargs).arguments
    except (TypeError, ValueError):
        return  # the call itself fails, as it would unstaged
    for name, why in uses.items():
        value = bound.get(name)
        if isinstance(value, Tracer) and value.ndim == 0 and str(value.dtype).startswith(
                ("int", "uint")):
            qualname = getattr(fn, "__qualname__", name)
            raise PythonMeaningError(
                "a staged loop's index would reach a function that uses it as a Python value",
                observed=f"`{qualname}` is called with a traced integer as `{name}`, and "
                         f"{why}",
                variable=name)
