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


def _functions(tree: gast.AST, kinds: tuple | None) -> list:
    """The function definitions in ``tree`` (outer ones first), or only those whose
    own body (not a nested function's) holds a node of ``kinds``: one walk."""
    from autograph.analysis.activity import push_children

    found: list[tuple[gast.FunctionDef, set[type]]] = []  # (function, node types it holds)
    stack: list[tuple[gast.AST, set[type] | None]] = [(tree, None)]
    pop = stack.pop
    while stack:
        node, owner = pop()
        if owner is not None:
            owner.add(type(node))
        if type(node) is gast.FunctionDef:  # its decorators and defaults are the owner's
            inner: set[type] = set()
            found.append((node, inner))
            stack.extend((s, inner) for s in node.body)
            for part in (node.decorator_list, [node.args], [node.returns]):
                stack.extend((p, owner) for p in part if p is not None)
            continue
        push_children(node, lambda child: stack.append((child, owner)))
    return [fn for fn, held in found
            if kinds is None or any(issubclass(t, kinds) for t in held)]


def run(tree: gast.AST, requires: Iterable[Analysis], kinds: tuple | None = None) -> None:
    """Analyses every function in ``tree``, or only those whose own body holds
    a node of ``kinds`` (what the pass about to run rewrites)."""
    from autograph.analysis import activity, definitions, liveness

    requires = set(requires)
    if not requires:
        return
    with activity.memoizing():
        for node in _functions(tree, kinds):
            activity.analyze_function(node)  # liveness and definitions build on it
            if Analysis.LIVENESS in requires:
                liveness.analyze_function(node)
            if Analysis.DEFINITIONS in requires:
                definitions.analyze_function(node)
