"""`print` and `assert` that keep their meaning on traced values."""

from __future__ import annotations

import builtins

import jax
import numpy as np

from autograph import errors
from .values import Tracer, is_traced


def _has_tracer(values) -> bool:
    return any(isinstance(leaf, Tracer) for leaf in jax.tree_util.tree_leaves(values))


def print_(*values, sep: str | None = " ", end: str | None = "\n", file=None, flush=False):
    """``print``; with traced arguments, prints at run time via ``jax.debug.print``.

    The text is what the plain-Python run prints: each value as ``str()`` of its
    concrete value, joined by ``sep``. Prints are ordered with each other.
    """
    if not _has_tracer(values):
        return builtins.print(*values, sep=sep, end=end, file=file, flush=flush)
    sep = " " if sep is None else sep
    end = "\n" if end is None else end
    # Python values are formatted now; traced ones when the program runs.
    parts, traced = [], []
    for v in values:
        if _has_tracer(v):
            parts.append("{}")
            traced.append(v)
        else:
            parts.append(str(v).replace("{", "{{").replace("}", "}}"))
    fmt = sep.replace("{", "{{").replace("}", "}}").join(parts)
    if end != "\n":
        fmt += end.replace("{", "{{").replace("}", "}}")
    jax.debug.print(fmt, *traced, ordered=True)


def autograph_print(*values, sep=" ", end="\n"):
    """Prints ``values`` when the program runs, traced or not (``autograph.print``)."""
    if not _has_tracer(values):
        return builtins.print(*values, sep=sep, end=end)
    return print_(*values, sep=sep, end=end)


def _fail_if_false(ok, message):
    if not np.all(ok):
        raise AssertionError(message)


def assert_(test, message_thunk=None):
    """``assert test, message``; on a traced ``test``, a check made at run time.

    The semantics are given by this Python implementation::

        if not test:
            raise AssertionError(message_thunk())

    When ``test`` is traced the message is formatted while tracing and the
    check runs with the program: a false condition stops it with an error
    whose text contains ``AssertionError`` and the message.
    """
    if not is_traced(test):
        if not test:
            raise AssertionError(message_thunk()) if message_thunk else AssertionError
        return
    if message_thunk is None:
        message = "assertion failed"
        loc = errors.current_location()
        if loc is not None:
            message = f"assertion failed at {loc.short}: {loc.text.strip()}"
    else:
        message = str(message_thunk())
    jax.debug.callback(_fail_if_false, test, message, ordered=True)
