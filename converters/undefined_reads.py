"""Checks the user's reads of variables a converted block may leave unassigned.

    if x > 0:                  ->   (y,) = ag__.if_stmt(x > 0, if_true, None, (ag__.Undefined('y'),), ...)
        y = 1.0                     z = ag__.ld(y)
    z = y

Python raises ``UnboundLocalError`` at such a read; ``ag__.ld`` raises
``UndefinedVariableError`` (a subclass) when the value is ``Undefined``.
An augmented assignment reads its target first, so the read comes before it
(``y = ag__.ld(y)``, then ``y += 1``: an in-place ``+=`` still updates the
object itself).
Only names the `if`/loop passes recorded as possibly unassigned are
wrapped, and only where the user's code reads them: handing an unassigned
value on to the next converted block is not a read in Python either.
"""

from __future__ import annotations

import gast

from autograph import anno, templates
from autograph.anno import Anno
from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.Name,)  # the pass is skipped when the tree has none
REQUIRES = ()

_LD = templates.Template("ag__.ld(NAME)")
_LD_TARGET = templates.Template("NAME = ag__.ld(NAME)")


class _Transformer(Converter):
    visit_ClassDef = Converter.generic_visit  # class-level statements too


    def visit_Name(self, node: gast.Name):
        if (isinstance(node.ctx, gast.Load) and node.id in self.ctx.maybe_undefined
                and not anno.get(node, Anno.GENERATED)):
            return _LD.substitute_expr(node, NAME=node.id)
        return node

    def visit_AugAssign(self, node: gast.AugAssign):
        node = self.generic_visit(node)
        target = node.target
        if (isinstance(target, gast.Name) and target.id in self.ctx.maybe_undefined
                and not anno.get(target, Anno.GENERATED)):
            return _LD_TARGET.substitute(node, NAME=target.id) + [node]
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    if not ctx.maybe_undefined:
        return node
    return _Transformer(ctx).visit(node)
