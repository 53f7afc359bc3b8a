"""Deterministic fresh names for generated code.

``Namer.new("loop_body")`` returns ``loop_body``, then ``loop_body_1``, ...,
skipping every name the function already uses and every name handed out. No
``id()``, hash, time or random value ever enters a name, so the same function
always converts to the same bytes.
"""

from __future__ import annotations

from typing import Iterable

import gast


class Namer:
    def __init__(self, taken: Iterable[str] = ()):
        self._taken = set(taken)

    @classmethod
    def for_tree(cls, tree: gast.AST) -> "Namer":
        """A namer that avoids every identifier appearing in ``tree``."""
        taken = set()
        for node in gast.walk(tree):
            if isinstance(node, gast.Name):
                taken.add(node.id)
            elif isinstance(node, (gast.FunctionDef, gast.ClassDef)):
                taken.add(node.name)
            elif isinstance(node, gast.alias):
                taken.add((node.asname or node.name).split(".")[0])
        return cls(taken)

    def new(self, base: str) -> str:
        name, n = base, 0
        while name in self._taken:
            n += 1
            name = f"{base}_{n}"
        self._taken.add(name)
        return name
