"""Routes `print(...)` through ``ag__.print_``, which also prints traced values.

    print("step", i, "loss", loss)   ->   ag__.print_("step", i, "loss", loss)
    print(f"{i}: {loss:.4f}")        ->   ag__.print_(ag__.fstring(lambda v0, v1: f'{v0}: {v1:.4f}', i, loss))

With no traced argument ``print_`` is the built-in ``print``. With one, it
prints at run time, in program order, through ``jax.debug.callback``, the same
text the plain-Python run prints. An f-string argument (and the message of an
`assert`, see ``assert_statements``) is formatted when the program runs, with
the same format specs and conversions: ``ag__.fstring`` evaluates its fields
now and formats them at once when none is traced. A function that rebinds
``print`` keeps it.
"""

from __future__ import annotations

import gast

from autograph import templates
from autograph.analysis import Analysis
from autograph.context import Context
from autograph.scopes import LocalNamesTransformer

NODES = (gast.Call,)  # the pass is skipped when the tree has none
REQUIRES = (Analysis.SCOPES,)
KEEPS = (Analysis.SCOPES,)  # rewrites calls only: no name is bound or rebound


def deferred_fstring(node: gast.JoinedStr) -> gast.expr:
    """``f"..{e}.."`` as ``ag__.fstring(lambda v0: f"..{v0}..", e)``: formatted later."""
    fields: list[gast.expr] = []

    def replace(value):
        if isinstance(value, gast.FormattedValue):
            param = f"v{len(fields)}"
            fields.append(value.value)
            spec = value.format_spec
            if isinstance(spec, gast.JoinedStr):
                spec = gast.JoinedStr(values=[replace(v) for v in spec.values])
            return gast.FormattedValue(value=gast.Name(id=param, ctx=gast.Load(),
                                                       annotation=None, type_comment=None),
                                       conversion=value.conversion, format_spec=spec)
        return value

    body = gast.JoinedStr(values=[replace(v) for v in node.values])
    if not fields:
        return node
    params = [gast.Name(id=f"v{i}", ctx=gast.Param(), annotation=None, type_comment=None)
              for i in range(len(fields))]
    lam = gast.Lambda(args=gast.arguments(args=params, posonlyargs=[], vararg=None,
                                          kwonlyargs=[], kw_defaults=[], kwarg=None,
                                          defaults=[]), body=body)
    call = gast.Call(func=gast.Attribute(value=templates.name("ag__"), attr="fstring",
                                         ctx=gast.Load()), args=[lam] + fields, keywords=[])
    templates.set_location(call, node)
    return call


class _Transformer(LocalNamesTransformer):
    def visit_Call(self, node: gast.Call):
        self.generic_visit(node)
        func = node.func
        if (isinstance(func, gast.Name) and func.id == "print"
                and "print" not in self.locals):
            node.func = gast.copy_location(
                gast.Attribute(value=templates.name("ag__"), attr="print_", ctx=gast.Load()), func)
            node.args = [deferred_fstring(a) if isinstance(a, gast.JoinedStr) else a
                         for a in node.args]
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
