"""Deterministic fresh names for generated code.

``Namer.new("loop_body")`` returns ``loop_body``, then ``loop_body_1``, ...,
skipping every name the function already uses and every name handed out. No
``id()``, hash, time or random value ever enters a name, so the same function
always converts to the same bytes.
"""

from __future__ import annotations

import enum
from typing import Iterable

import gast


class Role(enum.Enum):
    """What a generated name holds, recorded when the name is handed out.

    Passes, ``explain`` and the operator calls they emit read the role, never
    the name: a user variable called ``did_break`` is just a variable.
    """

    BREAK_FLAG = "break"  # the value: the jump a flag records
    CONTINUE_FLAG = "continue"
    RETURN_FLAG = "return"
    RETURN_VALUE = "return value"  # the function's result, set by a lowered `return`

    @property
    def jump(self) -> str | None:
        """The keyword whose having run a flag records, or None for other roles."""
        return None if self is Role.RETURN_VALUE else self.value


class Namer:
    def __init__(self, taken: Iterable[str] = ()):
        self._taken = set(taken)
        self.roles: dict[str, Role] = {}  # the generated names that hold a role

    @classmethod
    def for_tree(cls, tree: gast.AST, kinds: set | None = None) -> "Namer":
        """A namer that avoids every identifier appearing in ``tree``.

        The same walk adds the type of every node of ``tree`` to ``kinds``.
        """
        from autograph.analysis.activity import push_children

        taken, seen = set(), set() if kinds is None else kinds
        stack = [tree]
        while stack:
            node = stack.pop()
            kind = type(node)
            seen.add(kind)
            if kind is gast.Name:
                taken.add(node.id)
                continue
            if kind is gast.FunctionDef or kind is gast.ClassDef:
                taken.add(node.name)
            elif kind is gast.alias:
                taken.add((node.asname or node.name).split(".")[0])
            elif kind is gast.MatchAs or kind is gast.MatchStar or kind is gast.MatchMapping:
                # the names patterns bind are strings, not Name nodes (None: no name)
                taken.add(node.rest if kind is gast.MatchMapping else node.name)
            push_children(node, stack.append)
        return cls(taken)

    def new(self, base: str, role: Role | None = None) -> str:
        """A fresh name from ``base``; ``role``, if given, is recorded for it."""
        name, n = base, 0
        while name in self._taken:
            n += 1
            name = f"{base}_{n}"
        self._taken.add(name)
        if role is not None:
            self.roles[name] = role
        return name
