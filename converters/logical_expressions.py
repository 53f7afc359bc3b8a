"""Lowers `and`, `or`, `not` and chained comparisons to runtime operators.

    a and b or not c        ->   ag__.or_(ag__.and_(a, lambda: b), lambda: ag__.not_(c))
    0 < x < 1               ->   ag__.and_(0 < x, lambda: x < 1)

Right operands become lambdas, so Python values keep Python's short-circuit
semantics; traced values combine with ``jnp.logical_and``/``or``/``not``. In
a chained comparison a middle operand that is not a plain name or constant
is evaluated once, through a walrus name.
"""

from __future__ import annotations

import gast

from autograph import templates
from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.BoolOp, gast.UnaryOp, gast.Compare,)  # the pass is skipped when the tree has none
REQUIRES = ()

_AND = templates.Template("ag__.and_(LEFT, lambda: RIGHT)")
_OR = templates.Template("ag__.or_(LEFT, lambda: RIGHT)")
_NOT = templates.Template("ag__.not_(OPERAND)")


def _simple(node) -> bool:
    return isinstance(node, (gast.Name, gast.Constant)) or (
        isinstance(node, gast.Attribute) and _simple(node.value))


class _Transformer(Converter):

    def visit_BoolOp(self, node: gast.BoolOp):
        self.generic_visit(node)
        template = _AND if isinstance(node.op, gast.And) else _OR
        result = node.values[-1]
        for left in reversed(node.values[:-1]):
            result = template.substitute_expr(node, LEFT=left, RIGHT=result)
        return result

    def visit_UnaryOp(self, node: gast.UnaryOp):
        self.generic_visit(node)
        if isinstance(node.op, gast.Not):
            return _NOT.substitute_expr(node, OPERAND=node.operand)
        return node

    def visit_Compare(self, node: gast.Compare):
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        operands = [node.left] + list(node.comparators)
        for i in range(1, len(operands) - 1):  # middle operands are read twice
            if not _simple(operands[i]):
                tmp = self.ctx.namer.new("cmp")
                operands[i] = gast.NamedExpr(target=templates.name(tmp, gast.Store()),
                                             value=operands[i])
        parts = []
        for i, op in enumerate(node.ops):
            left = operands[i]
            if isinstance(left, gast.NamedExpr) and i > 0:
                left = templates.name(left.target.id)
            parts.append(gast.copy_location(
                gast.Compare(left=left, ops=[op], comparators=[operands[i + 1]]), node))
        result = parts[-1]
        for left in reversed(parts[:-1]):
            result = _AND.substitute_expr(node, LEFT=left, RIGHT=result)
        return result


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
