"""Carries ``global`` and ``nonlocal`` declarations into generated functions.

    def f(x):                         def f(x):
        global calls                      global calls
        if x > 0:              ->         def if_true():
            calls = calls + 1                 global calls
        return x                              ag__.outer_assigned('calls', ag__.Construct.IF)
                                              calls = calls + 1
                                              return ()
                                          ag__.if_stmt(x > 0, if_true, None, (), names=())
                                          return x

A declared name is never branch or loop state (the analyses leave it out of
a function's locals): each generated function that assigns it declares it
too, so the assignment reaches the same global or enclosing variable that
the user's code assigns, and starts with ``ag__.outer_assigned('calls',
ag__.Construct.IF)``, which refuses the assignment where the block is staged: a staged
branch or loop body runs once, while tracing, whether or not (and however
often) it runs when the program runs.
Runs last, after every pass that makes functions.
"""

from __future__ import annotations

import gast

from autograph import anno, templates
from autograph.analysis import activity
from autograph.anno import Anno
from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.Global, gast.Nonlocal)  # the pass is skipped when the tree has none
REQUIRES = ()


_CHECK = templates.Template("ag__.outer_assigned(NAME, CONSTRUCT)")


def _construct(generated_name: str) -> gast.expr:
    member = "IF" if generated_name.startswith("if_") else "LOOP"
    return gast.Attribute(value=gast.Attribute(value=templates.name("ag__"), attr="Construct",
                                               ctx=gast.Load()), attr=member, ctx=gast.Load())


def _assigned(fn: gast.FunctionDef) -> set[str]:
    """Names ``fn``'s own body (not its nested functions) binds."""
    names, stack = set(), list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (gast.FunctionDef, gast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, gast.Name) and isinstance(node.ctx, (gast.Store, gast.Del)):
            names.add(node.id)
        stack.extend(gast.iter_child_nodes(node))
    return names


class _Transformer(Converter):
    visit_ClassDef = Converter.generic_visit  # class-level statements too

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.declared: list[dict[str, type]] = []   # name -> gast.Global | gast.Nonlocal

    def visit_FunctionDef(self, node: gast.FunctionDef):
        if anno.get(node, Anno.GENERATED) and self.declared:
            outer = self.declared[-1]
            mine = sorted(_assigned(node) & set(outer))
            decls = []
            for kind in (gast.Global, gast.Nonlocal):
                names = [n for n in mine if outer[n] is kind]
                if names:
                    decl = kind(names=names)
                    gast.copy_location(decl, node)
                    decls.append(decl)
            # checked first, before any assignment can take effect while tracing
            checks = [_CHECK.substitute(node, NAME=templates.literal(n),
                                        CONSTRUCT=_construct(node.name))[0]
                      for n in mine]
            node.body = decls + checks + node.body
            self.declared.append(outer)
        else:
            self.declared.append(activity.declared_outer(node))
        try:
            self.generic_visit(node)
        finally:
            self.declared.pop()
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
