"""A transformer base that knows the local names of the function it is in."""

from __future__ import annotations

from autograph.analysis import activity
from autograph.context import Context
from autograph.transformer import Converter


class LocalNamesTransformer(Converter):
    """Visits everything; ``self.locals`` are the current function's local names.

    Passes use it to tell a built-in (``print``, ``range``) from a local
    variable of the same name. Methods of local classes are visited, class
    bodies are not.
    """

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self._locals: list[frozenset] = []

    @property
    def locals(self) -> frozenset:
        return self._locals[-1] if self._locals else frozenset()

    @property
    def depth(self) -> int:
        """How many functions enclose the node being visited (1: the converted one)."""
        return len(self._locals)

    def visit_FunctionDef(self, node):
        self._locals.append(activity.function_locals(node))
        try:
            return self.generic_visit(node)
        finally:
            self._locals.pop()
