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


def run(tree: gast.AST, requires: Iterable[Analysis]) -> None:
    from autograph.analysis import activity, definitions, liveness

    requires = set(requires)
    if not requires:
        return
    activity._memo = {}
    try:
        for node in gast.walk(tree):
            if isinstance(node, gast.FunctionDef):
                activity.analyze_function(node)  # liveness and definitions build on it
                if Analysis.LIVENESS in requires:
                    liveness.analyze_function(node)
                if Analysis.DEFINITIONS in requires:
                    definitions.analyze_function(node)
    finally:
        activity._memo = None
