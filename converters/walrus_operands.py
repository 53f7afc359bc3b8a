"""Lifts an `and`/`or` whose later operand binds a name with `:=` into `if` statements.

    if x > 0 and (y := g(x)) > 1:      ->   and_value = x > 0
        return y                             if and_value:
                                                 and_value = (y := g(x)) > 1
                                             if and_value:
                                                 return y

Python evaluates a later operand, and so binds its `:=` name, only when the
operands before it leave the result undecided. Inside the lambda
``logical_expressions`` makes of a later operand the name would be bound in
the lambda and lost; as a statement under an `if`, it is bound as in any
branch: in Python when the `if` runs it, and through a staged `if` (the name
an output of the branch, with the `if`'s rules) when the left operand is
traced. ``value = a`` then ``if value: value = b`` is ``a and b``: ``bool(a)``
is asked once, and the value is ``a`` or ``b``; for `or` the test is
``not value``.

Lifted are the `and`/`or` that is a statement's whole value (an assignment,
an expression statement, a `return`) or an `if` test, under any `not`, and
the `and`/`or` among its operands; elsewhere its operands' evaluation order
would change, and ``checks`` refuses a `:=` in a later operand.
"""

from __future__ import annotations

import gast

from autograph import templates
from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.NamedExpr,)  # the pass is skipped when the tree has none
EMITS = (gast.If, gast.UnaryOp)
REQUIRES = ()


def _binds(node: gast.expr) -> bool:
    return any(isinstance(n, gast.NamedExpr) for n in gast.walk(node))


def _needs_lifting(node) -> bool:
    """Whether ``node`` is an `and`/`or` with a `:=` in a later operand, or has one
    among its operands."""
    if not isinstance(node, gast.BoolOp):
        return False
    return (any(_binds(v) for v in node.values[1:])
            or any(_needs_lifting(_under_not(v)) for v in node.values))


def _under_not(node: gast.expr) -> gast.expr:
    while isinstance(node, gast.UnaryOp) and isinstance(node.op, gast.Not):
        node = node.operand
    return node


def _assign(target: str, value: gast.expr, origin) -> gast.stmt:
    node = gast.Assign(targets=[templates.name(target, gast.Store())], value=value,
                       type_comment=None)
    templates.set_location(node, origin)
    return node


class _Transformer(Converter):
    def _lift(self, node: gast.BoolOp, origin) -> tuple[list[gast.stmt], gast.expr]:
        """Statements computing ``node`` into a fresh name, and that name."""
        value = self.ctx.namer.new("and_value" if isinstance(node.op, gast.And) else "or_value")

        def guarded(body):  # the rest runs where the result is still undecided
            test: gast.expr = templates.name(value)
            if isinstance(node.op, gast.Or):
                test = gast.UnaryOp(op=gast.Not(), operand=test)
            stmt = gast.If(test=test, body=body, orelse=[])
            templates.set_location(stmt, origin)
            return stmt

        body = [_assign(value, node.values[-1], origin)]
        for operand in reversed(node.values[1:-1]):
            body = [_assign(value, operand, origin), guarded(body)]
        stmts = [_assign(value, node.values[0], origin), guarded(body)]
        out: list[gast.stmt] = []
        for stmt in stmts:  # an operand that is itself an `and`/`or` to lift
            result = self.visit(stmt)
            out.extend(result if isinstance(result, list) else [result])
        return out, templates.name(value)

    def _lifted(self, node, field: str):
        expr = getattr(node, field)
        inner = _under_not(expr) if expr is not None else None
        if not _needs_lifting(inner):
            return self.generic_visit(node)
        stmts, value = self._lift(inner, node)
        if inner is expr:
            setattr(node, field, value)
        else:  # the `not`s stay around the lifted value
            parent = expr
            while parent.operand is not inner:
                parent = parent.operand
            parent.operand = value
        return stmts + [self.generic_visit(node)]

    def visit_Assign(self, node):
        return self._lifted(node, "value")

    visit_AnnAssign = visit_Expr = visit_Return = visit_Assign

    def visit_If(self, node: gast.If):
        return self._lifted(node, "test")


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
