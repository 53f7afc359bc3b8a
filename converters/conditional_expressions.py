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
from autograph.transformer import Converter

NODES = (gast.IfExp,)  # the pass is skipped when the tree has none
REQUIRES = ()

_IF_EXP = templates.Template("ag__.if_exp(TEST, lambda: BODY, lambda: ORELSE)")


class _Transformer(Converter):

    def visit_IfExp(self, node: gast.IfExp):
        self.generic_visit(node)
        return _IF_EXP.substitute_expr(node, TEST=node.test, BODY=node.body, ORELSE=node.orelse)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
