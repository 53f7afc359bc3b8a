"""The blocks the runtime stages, as the words of its messages and their error classes."""

from __future__ import annotations

import enum

from autograph import errors


class Construct(enum.Enum):
    """A block that a staged ``if`` or loop runs, by the words messages use for it.

    ``str()`` gives those words (``the staged `while` loop``); ``error`` is the
    class of the errors the block raises: ``BranchError`` for an ``if``,
    ``LoopStateError`` for a loop.
    """

    IF = "`if`"
    WHILE = "`while` loop"
    FOR = "`for` loop"
    LOOP = "loop"  # a loop of either kind

    def __str__(self) -> str:
        return self.value

    @property
    def error(self) -> type[errors.AutographError]:
        return errors.BranchError if self is Construct.IF else errors.LoopStateError

    @property
    def is_loop(self) -> bool:
        return self is not Construct.IF
