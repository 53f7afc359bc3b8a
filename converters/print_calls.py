"""Routes `print(...)` through ``ag__.print_``, which also prints traced values.

    print("step", i, "loss", loss)   ->   ag__.print_("step", i, "loss", loss)

With no traced argument ``print_`` is the built-in ``print``. With one, it
prints at run time, in program order, through ``jax.debug.print``, the same
text the plain-Python run prints. A function that rebinds ``print`` keeps it.
"""

from __future__ import annotations

import gast

from autograph import templates
from autograph.analysis import Analysis
from autograph.context import Context
from autograph.scopes import LocalNamesTransformer

NODES = (gast.Call,)  # the pass is skipped when the tree has none
REQUIRES = (Analysis.SCOPES,)


class _Transformer(LocalNamesTransformer):
    def visit_Call(self, node: gast.Call):
        self.generic_visit(node)
        func = node.func
        if (isinstance(func, gast.Name) and func.id == "print"
                and "print" not in self.locals):
            node.func = gast.copy_location(
                gast.Attribute(value=templates.name("ag__"), attr="print_", ctx=gast.Load()), func)
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
