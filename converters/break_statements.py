"""Lowers `break` into a flag that the loop also tests, and loop `else:` clauses.

    while x > 1:                ->   did_break = False
        if x % 7 == 0:               while not did_break and x > 1:
            break                        if x % 7 == 0:
        x = x // 2                           did_break = True
    else:                                else:
        x = 0                                x = x // 2
                                     if not did_break:
                                         x = 0

An exit at the top of a `while` body needs no flag: the loop tests it too.

    while x > 1:                ->   while x > 1 and not x % 7 == 0:
        if x % 7 == 0:                   x = x // 2
            break
        x = x // 2

A `for` loop cannot grow its test in Python syntax, so the flag test is
attached to it as ``Anno.EXTRA_TEST`` for the `for` converter. A loop's
`else:` runs after the loop under ``if not did_break:`` (unconditionally when
the loop has no `break`).
"""

from __future__ import annotations

import gast

from autograph import anno, jumps, templates
from autograph.anno import Anno
from autograph.context import Context
from autograph.naming import Role
from autograph.transformer import Converter

NODES = (gast.While, gast.For,)  # the pass is skipped when the tree has none
EMITS = (gast.If, gast.UnaryOp, gast.BoolOp)  # guards and loop tests
REQUIRES = ()


class _Break(jumps.Jump):
    def is_jump(self, node):
        return isinstance(node, gast.Break)


def not_flag(flag: str) -> gast.expr:
    return gast.UnaryOp(op=gast.Not(), operand=templates.name(flag))


def add_loop_test(node, test: gast.expr) -> None:
    """Makes a loop also require ``test`` before each iteration."""
    if isinstance(node, gast.While):
        node.test = gast.BoolOp(op=gast.And(), values=[test] + _conjuncts(node.test))
        templates.set_location(node.test, node)
        return
    extra = anno.get(node, Anno.EXTRA_TEST)
    if extra is not None:
        test = gast.BoolOp(op=gast.And(), values=[test, extra])
    templates.set_location(test, node)
    anno.set(node, Anno.EXTRA_TEST, test)


def _conjuncts(test: gast.expr) -> list[gast.expr]:
    if isinstance(test, gast.BoolOp) and isinstance(test.op, gast.And):
        return list(test.values)
    return [test]


def _is_exit(stmt: gast.stmt) -> bool:
    """``if test: break`` and nothing else."""
    return (isinstance(stmt, gast.If) and not stmt.orelse and len(stmt.body) == 1
            and isinstance(stmt.body[0], gast.Break)
            # a test that binds a name with `:=` stays a statement, where the name it
            # binds reaches the body (see `walrus_operands`)
            and not any(isinstance(n, gast.NamedExpr) for n in gast.walk(stmt.test)))


def _fold_leading_exits(node: gast.While) -> None:
    """``while c: if b: break`` at the top of the body becomes ``while c and not b:``.

    The tests run in the same order, once an iteration, so nothing changes but
    the cost: no flag to carry, no conditional in the loop body.
    """
    exits = []
    while len(node.body) > 1 and _is_exit(node.body[0]):
        exits.append(node.body.pop(0).test)
    if exits:
        node.test = gast.BoolOp(op=gast.And(), values=_conjuncts(node.test) + [
            gast.UnaryOp(op=gast.Not(), operand=t) for t in exits])
        templates.set_location(node.test, node)


class _Transformer(Converter):
    visit_ClassDef = Converter.generic_visit  # class-level statements too


    def _block(self, stmts):
        out = []
        for node in stmts:
            result = self.visit(node)
            out.extend(result if isinstance(result, list) else [result])
        return out

    def generic_visit(self, node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
                setattr(node, field, self._block(block))
        for h in getattr(node, "handlers", []) or []:
            h.body = self._block(h.body)
        return node

    def _loop(self, node):
        self.generic_visit(node)
        if isinstance(node, gast.While) and not node.orelse:
            _fold_leading_exits(node)
        orelse, node.orelse = node.orelse, []
        if not jumps.contains(node.body, lambda n: isinstance(n, gast.Break), False):
            return [node] + orelse
        jump = _Break(self.ctx.namer.new("did_break", Role.BREAK_FLAG))
        node.body, _, _ = jumps.lower(node.body, jump)
        add_loop_test(node, not_flag(jump.flag))
        out = [jumps.flag_set(jump.flag, False, node), node]
        if orelse:
            out.append(jump.guard(orelse, orelse[0]))
        return out

    visit_While = visit_For = _loop


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
