"""Analysis results attached to AST nodes.

One small API: :func:`get`, :func:`set`, :func:`has`, :func:`copy`. Keys are
members of :class:`Anno`, whose values document what the annotation holds; any
other key is rejected, so a misspelt key fails loudly instead of reading as
"absent".
"""

from __future__ import annotations

import enum
from typing import Any

_FIELD = "_autograph_anno"


class Anno(enum.Enum):
    BODY_SCOPE = "activity.Scope of a compound statement's body (loops, function defs)."
    ORELSE_SCOPE = "activity.Scope of an `if`'s else branch."
    LIVE_OUT = "frozenset of names live right after the statement."
    LIVE_IN = "frozenset of names live right before the statement."
    BODY_LIVE_IN = "frozenset of names live at the start of the body (loops, `if`)."
    ORELSE_LIVE_IN = "frozenset of names live at the start of an `if`'s else branch."
    DEFINED_IN = "frozenset of local names that may be bound when the statement starts."
    EXTRA_TEST = "Expression a converted loop must also satisfy to run another iteration."
    FLAG_SET = "Marks an assignment of a jump flag that a pass may drop when unused."
    COUNTER_STEPS = ("dict name -> step of the counters a `while` body steps once per "
                     "iteration (found before the jump passes move the steps).")
    PYTHON_INDEX = ("Why a `for` body uses its loop index as a Python value (the loop runs as "
                    "Python over a static range), or absent.")
    PYTHON_STATE = ("Tuple of (name, why) for the names a `for` body assigns and uses as "
                    "Python values (the loop runs as Python where one starts as a Python "
                    "number).")
    CLOSURE_READS = "frozenset of a function's local names that its nested user functions read."
    TRUTH_TEST = ("Marks an `and`/`or` whose value is only tested for truth (an `if` or "
                  "`while` test, ...; see `truth_tests`).")
    GENERATED = ("Marks a function a converter made for a branch or loop body; it is called "
                 "in place.")
    MISPLACED_OPTIONS = ("Why a `set_loop_options` call configures no loop (in a `for` body, "
                         "or not the first statement of a `while` body): converted code "
                         "raises `LoopOptionsError` there when it runs.")
    UNCONVERTED_BODY = ("The user's own body of a nested function decorated with "
                        "`autograph.do_not_convert`, put back once the passes have run.")


def _table(node: Any) -> dict | None:
    return getattr(node, _FIELD, None)


def _check(key: Anno) -> None:
    if not isinstance(key, Anno):
        raise TypeError(f"annotation keys must be `Anno` members, got {key!r}")


def get(node: Any, key: Anno, default: Any = None) -> Any:
    """Returns the annotation ``key`` of ``node``, or ``default``."""
    _check(key)
    table = _table(node)
    return default if table is None else table.get(key, default)


def set(node: Any, key: Anno, value: Any) -> None:  # noqa: A001 - the API's verb
    """Attaches ``value`` to ``node`` under ``key``."""
    _check(key)
    table = _table(node)
    if table is None:
        table = {}
        setattr(node, _FIELD, table)
    table[key] = value


def has(node: Any, key: Anno) -> bool:
    """Whether ``node`` carries the annotation ``key``."""
    _check(key)
    table = _table(node)
    return table is not None and key in table


def copy(src: Any, dst: Any, key: Anno) -> None:
    """Copies the annotation ``key`` from ``src`` to ``dst`` when ``src`` has it."""
    if has(src, key):
        set(dst, key, get(src, key))
