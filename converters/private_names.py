"""Mangles private names in a function written in a class body, as Python does there.

    class Layer:
        def scale(self, x):       ->   def scale(self, x):
            return x * self.__w            return x * self._Layer__w

Python rewrites every identifier ``__x`` (not ending in ``__``) written inside
a class body to ``_Class__x``: the attributes, the names and parameters, in
nested functions, lambdas and comprehensions too. Converted code is compiled
outside the class, so the pass does it itself, with the class the function is
written in (``ctx.class_name``, from its ``__qualname__``). A class defined in
the function mangles its own body when it is compiled; only its name and the
expressions around it are the function's. Runs first, before any pass reads
or makes names.
"""

from __future__ import annotations

import gast

from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.Name, gast.Attribute, gast.FunctionDef, gast.ClassDef, gast.alias,
         gast.Global, gast.Nonlocal, gast.MatchAs, gast.MatchStar, gast.MatchMapping)
REQUIRES = ()


def mangle(name: str, class_name: str) -> str:
    """``name`` as Python compiles it in the body of class ``class_name``.

    Examples:
      >>> mangle("__w", "Layer"), mangle("__init__", "Layer"), mangle("__w", "_Base")
      ('_Layer__w', '__init__', '_Base__w')
    """
    if not name.startswith("__") or name.endswith("__") or "." in name:
        return name
    stripped = class_name.lstrip("_")
    return f"_{stripped}{name}" if stripped else name


class _Transformer(Converter):
    def __init__(self, ctx: Context, root: gast.FunctionDef, class_name: str):
        super().__init__(ctx)
        self.root = root
        self.class_name = class_name

    def _mangle(self, name):
        return name if name is None else mangle(name, self.class_name)

    def visit_Name(self, node: gast.Name):
        node.id = self._mangle(node.id)
        return self.generic_visit(node)  # a parameter's annotation

    def visit_Attribute(self, node: gast.Attribute):
        node.attr = self._mangle(node.attr)
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: gast.FunctionDef):
        if node is not self.root:  # the converted function keeps its own name
            node.name = self._mangle(node.name)
        return self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: gast.ClassDef):
        node.name = self._mangle(node.name)
        for field in ("bases", "keywords", "decorator_list"):
            setattr(node, field, [self.visit(n) for n in getattr(node, field)])
        return node  # Python mangles its body with its own name

    def visit_alias(self, node: gast.alias):
        node.name, node.asname = self._mangle(node.name), self._mangle(node.asname)
        return node

    def visit_Global(self, node: gast.Global):
        node.names = [self._mangle(n) for n in node.names]
        return node

    visit_Nonlocal = visit_Global

    def visit_MatchAs(self, node: gast.MatchAs):
        node.name = self._mangle(node.name)
        return self.generic_visit(node)

    visit_MatchStar = visit_MatchAs

    def visit_MatchMapping(self, node: gast.MatchMapping):
        node.rest = self._mangle(node.rest)
        return self.generic_visit(node)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    if ctx.class_name is None or not ctx.class_name.strip("_"):
        return node
    return _Transformer(ctx, node, ctx.class_name).visit(node)
