"""Static analyses that converters declare in ``REQUIRES``.

``run(tree, requires)`` computes the requested analyses, fresh, for every
function definition in ``tree`` (user functions and generated ones alike) and
attaches the results to nodes through :mod:`autograph.anno`.
"""

from __future__ import annotations

import enum
from typing import Iterable

import gast


class Analysis(enum.Enum):
    SCOPES = "what each compound statement's blocks read, rebind and modify"
    LIVENESS = "which names are live before/after statements and at block starts"
    DEFINITIONS = "which local names may be bound when a statement starts"


def _directly_contains(fn: gast.FunctionDef, kinds: tuple) -> bool:
    """Whether ``fn``'s own body (not a nested function's) holds a node of ``kinds``."""
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, kinds):
            return True
        if isinstance(node, (gast.FunctionDef, gast.ClassDef, gast.Lambda)):
            continue
        stack.extend(gast.iter_child_nodes(node))
    return False


def run(tree: gast.AST, requires: Iterable[Analysis], kinds: tuple | None = None) -> None:
    """Analyses every function in ``tree``, or only those whose own body holds
    a node of ``kinds`` (what the pass about to run rewrites)."""
    from autograph.analysis import activity, definitions, liveness

    requires = set(requires)
    if not requires:
        return
    activity._memo = {}
    try:
        for node in gast.walk(tree):
            if isinstance(node, gast.FunctionDef) and (
                    kinds is None or _directly_contains(node, kinds)):
                activity.analyze_function(node)  # liveness and definitions build on it
                if Analysis.LIVENESS in requires:
                    liveness.analyze_function(node)
                if Analysis.DEFINITIONS in requires:
                    definitions.analyze_function(node)
    finally:
        activity._memo = None
