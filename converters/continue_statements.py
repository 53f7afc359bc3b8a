"""Lowers `continue` into guarded blocks (and a flag where one is needed).

    while i < n:                ->   while i < n:
        i = i + 1                        i = i + 1
        if i % 2 == 0:                   if not i % 2 == 0:
            continue                         total = total + i
        total = total + i

A `continue` nested deeper (inside an `if` inside an `if`) sets
``did_continue``, which the body resets at its start; everything after it in
the body then runs under ``if not did_continue:``.
"""

from __future__ import annotations

import gast

from autograph import jumps
from autograph.context import Context
from autograph.naming import Role
from autograph.transformer import Converter

NODES = (gast.Continue,)  # the pass is skipped when the tree has none
EMITS = (gast.If, gast.UnaryOp, gast.BoolOp)  # guards and loop tests
REQUIRES = ()


class _Continue(jumps.Jump):
    def is_jump(self, node):
        return isinstance(node, gast.Continue)


class _Transformer(Converter):
    visit_ClassDef = Converter.generic_visit  # class-level statements too


    def _loop(self, node):
        self.generic_visit(node)  # inner loops first: their `continue`s are theirs
        if not jumps.contains(node.body, lambda n: isinstance(n, gast.Continue), False):
            return node
        jump = _Continue(self.ctx.namer.new("did_continue", Role.CONTINUE_FLAG))
        body, _, _ = jumps.lower(node.body, jump)
        if jump.flag_read:
            node.body = [jumps.flag_set(jump.flag, False, node)] + body
        else:
            node.body = jumps.drop_unread_flags(body, jump.flag)
        return node

    visit_While = visit_For = _loop


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
