"""Marks the `and`/`or` expressions whose value is only tested for truth.

    if x > 0 and y:          ->   (unchanged; the `and` is annotated Anno.TRUTH_TEST, and
        x = x - 1                  `logical_expressions` lowers it to
                                   ag__.and_(x > 0, lambda: y, test=True))

The test of an `if`, a `while`, a conditional expression or an `assert`, the
operand of `not`, and the operands of an `and`/`or` so used are read only
for their truth. There a traced operand and a Python one (``y = None``, a
string, a list) combine by their truths, where the expression's value (the
array's ``False``, or ``None``) could not be one array. It runs before the
passes that lower these statements, while their tests are still in place.
"""

from __future__ import annotations

import gast

from autograph import anno
from autograph.analysis import Analysis
from autograph.anno import Anno
from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.BoolOp,)  # the pass is skipped when the tree has none
REQUIRES = ()
KEEPS = tuple(Analysis)  # annotates only


def _mark(node) -> None:
    while isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not):
        node = node.operand
    if isinstance(node, gast.BoolOp):
        anno.set(node, Anno.TRUTH_TEST, True)
        for value in node.values:
            _mark(value)


class _Transformer(Converter):
    def _tested(self, node):
        _mark(node.test)
        return self.generic_visit(node)

    visit_If = visit_While = visit_IfExp = visit_Assert = _tested

    def visit_UnaryOp(self, node: gast.UnaryOp):
        if isinstance(node.op, gast.Not):
            _mark(node.operand)
        return self.generic_visit(node)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
