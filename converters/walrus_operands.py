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
would change, and ``checks`` refuses a `:=` in a later operand. So is a
conditional expression in those places with a `:=` in a branch (which
``conditional_expressions`` would put in a lambda)::

    z = (y := x + 1) if x > 0 else 0.0   ->   if x > 0:
                                                  if_value = (y := x + 1)
                                              else:
                                                  if_value = 0.0
                                              z = if_value

A `while` test with a `:=` (and no `else:` clause) is evaluated where it binds
its name before each iteration, as the test of an `if` that leads the body::

    while (y := f(x)) > t:     ->   while True:
        x = y                           if not (y := f(x)) > t:
                                            break
                                        x = y
"""

from __future__ import annotations

import gast

from autograph import templates
from autograph.context import Context
from autograph.directive_calls import Directive
from autograph.transformer import Converter

NODES = (gast.NamedExpr,)  # the pass is skipped when the tree has none
EMITS = (gast.If, gast.UnaryOp, gast.Break)
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
    def _lift_choice(self, node: gast.IfExp, origin) -> tuple[list[gast.stmt], gast.expr]:
        """``a if c else b`` with a `:=` in a branch, as an `if` statement computing it
        into a fresh name; that statement, and the name."""
        value = self.ctx.namer.new("if_value")
        stmt = gast.If(test=node.test, body=[_assign(value, node.body, origin)],
                       orelse=[_assign(value, node.orelse, origin)])
        templates.set_location(stmt, origin)
        result = self.visit(stmt)
        return result if isinstance(result, list) else [result], templates.name(value)

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
        if isinstance(inner, gast.IfExp) and (_binds(inner.body) or _binds(inner.orelse)):
            stmts, value = self._lift_choice(inner, node)
        elif _needs_lifting(inner):
            stmts, value = self._lift(inner, node)
        else:
            return self.generic_visit(node)
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

    def visit_While(self, node: gast.While):
        if node.orelse or not _binds(node.test):
            return self.generic_visit(node)
        # `while (y := f(x)) > t:` -> `while True:` led by `if not (y := f(x)) > t: break`,
        # which binds `y` as any `if` test does, before every iteration
        stop = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=node.test),
                       body=[gast.Break()], orelse=[])
        templates.set_location(stop, node)
        lead = 1 if node.body and self._is_loop_options(node.body[0]) else 0
        node.test = templates.literal(True)
        node.body = node.body[:lead] + [stop] + node.body[lead:]
        return self.generic_visit(node)

    def _is_loop_options(self, stmt) -> bool:
        return (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)
                and self.ctx.directives.of(stmt.value.func) is Directive.LOOP_OPTIONS)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
