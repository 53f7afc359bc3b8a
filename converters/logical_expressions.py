"""Lowers `and`, `or`, `not`, `in` and chained comparisons to runtime operators.

    a and b or not c        ->   ag__.or_(ag__.and_(a, lambda: b), lambda: ag__.not_(c))
    0 < x < 1               ->   ag__.and_(0 < x, lambda: x < 1)
    if x > 0 and y: ...     ->   ag__.if_stmt(ag__.and_(x > 0, lambda: y, test=True), ...)
    c in xs, c not in xs    ->   ag__.in_(c, xs), ag__.not_(ag__.in_(c, xs))

Right operands become lambdas, so Python values keep Python's short-circuit
semantics; traced values combine with ``jnp.logical_and``/``or``/``not``. An
`and`/`or` whose value is only tested for truth (``Anno.TRUTH_TEST``, see
``truth_tests``) passes ``test=True``, so a Python operand decides by its truth
beside a traced one. `in` on an array is the array's own, a traced bool where
either side is traced, rather than a Python bool; inside the body of a `try`
with handlers it stays Python's `in`, whose tracing error a handler may catch,
as under plain ``jax.jit``. In a chained comparison a middle operand that is
not a plain name or constant is evaluated once, through a walrus name.
"""

from __future__ import annotations

import gast

from autograph import anno, templates
from autograph.anno import Anno
from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.BoolOp, gast.UnaryOp, gast.Compare,)  # the pass is skipped when the tree has none
REQUIRES = ()

_AND = templates.Template("ag__.and_(LEFT, lambda: RIGHT)")
_OR = templates.Template("ag__.or_(LEFT, lambda: RIGHT)")
_NOT = templates.Template("ag__.not_(OPERAND)")
_AND_TEST = templates.Template("ag__.and_(LEFT, lambda: RIGHT, test=True)")
_OR_TEST = templates.Template("ag__.or_(LEFT, lambda: RIGHT, test=True)")
_IN = templates.Template("ag__.in_(ITEM, CONTAINER)")
_NOT_IN = templates.Template("ag__.not_(ag__.in_(ITEM, CONTAINER))")


def _simple(node) -> bool:
    return isinstance(node, (gast.Name, gast.Constant)) or (
        isinstance(node, gast.Attribute) and _simple(node.value))


class _Transformer(Converter):
    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.catching: list[bool] = [False]  # per user function: inside a `try` with handlers

    def visit_FunctionDef(self, node: gast.FunctionDef):
        if anno.get(node, Anno.GENERATED):  # a block's function runs where it is
            return self.generic_visit(node)
        self.catching.append(False)
        try:
            return self.generic_visit(node)
        finally:
            self.catching.pop()

    def visit_Try(self, node: gast.Try):
        # the pass rewrites expressions inside statements, never a statement itself
        outer = self.catching[-1]
        self.catching[-1] = outer or bool(node.handlers)
        try:
            for stmt in node.body:
                self.visit(stmt)
        finally:
            self.catching[-1] = outer
        for stmt in node.handlers + node.orelse + node.finalbody:
            self.visit(stmt)
        return node

    visit_TryStar = visit_Try

    def _membership(self, node: gast.Compare) -> gast.expr:
        """``node`` (one comparison), with `in`/`not in` made ``ag__.in_``."""
        op = node.ops[0]
        if isinstance(op, (gast.In, gast.NotIn)) and not self.catching[-1]:
            template = _IN if isinstance(op, gast.In) else _NOT_IN
            return template.substitute_expr(node, ITEM=node.left,
                                             CONTAINER=node.comparators[0])
        return node

    def visit_BoolOp(self, node: gast.BoolOp):
        self.generic_visit(node)
        if anno.get(node, Anno.TRUTH_TEST):
            template = _AND_TEST if isinstance(node.op, gast.And) else _OR_TEST
        else:
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
            return self._membership(node)
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
            parts.append(self._membership(gast.copy_location(
                gast.Compare(left=left, ops=[op], comparators=[operands[i + 1]]), node)))
        result = parts[-1]
        for left in reversed(parts[:-1]):
            result = _AND.substitute_expr(node, LEFT=left, RIGHT=result)
        return result


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
