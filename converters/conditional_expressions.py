"""Lowers conditional expressions to ``ag__.if_exp``.

    y = a if x > 0 else b    ->   y = ag__.if_exp(x > 0, lambda: a, lambda: b)

Only the chosen branch runs when the condition is a Python value; a traced
condition stages both as one ``lax.cond``, with the same type promotion as
`if` statements.
"""

from __future__ import annotations

import gast

from autograph import templates
from autograph.context import Context
from autograph.jumps import convert_methods

NODES = (gast.IfExp,)  # the pass is skipped when the tree has none
REQUIRES = ()

_IF_EXP = templates.Template("ag__.if_exp(TEST, lambda: BODY, lambda: ORELSE)")


class _Transformer(gast.NodeTransformer):
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def visit_ClassDef(self, node):
        return convert_methods(self, node)

    def visit_IfExp(self, node: gast.IfExp):
        self.generic_visit(node)
        return _IF_EXP.substitute_expr(node, TEST=node.test, BODY=node.body, ORELSE=node.orelse)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
