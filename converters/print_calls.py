"""Routes `print(...)` through ``ag__.print_``, which also prints traced values.

    print("step", i, "loss", loss)   ->   ag__.print_("step", i, "loss", loss)
    print(f"{i}: {loss:.4f}")        ->   ag__.print_(ag__.fstring(lambda v0, v1: f'{v0}: {v1:.4f}', i, loss))
    print("step {}".format(i))       ->   ag__.print_(ag__.str_format('step {}', i))
    print("%d: %.3f" % (i, loss))    ->   ag__.print_(ag__.percent_format('%d: %.3f', (i, loss)))
    print("x=" + str(x), repr(x))    ->   ag__.print_('x=' + ag__.str_(x), ag__.repr_(x))

With no traced argument ``print_`` is the built-in ``print``. With one, it
prints at run time through ``jax.debug.callback``, in program order on one
device (on several: once per run, from the first), the same text the
plain-Python run prints. The formatting inside its arguments (and in
the message of an `assert` or a `raise`, see ``assert_statements`` and
``raise_statements``) is done when the program runs, with the same format
specs and conversions: f-strings, ``.format(...)``, ``%`` on a string
literal, and the built-ins ``str``, ``repr`` and ``format``. Each operator
(``runtime/python/strings``) formats at once when no operand is traced, as Python
does. A function that rebinds ``print`` (or ``str``, ``repr``, ``format``)
keeps it.
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


# Built-ins that format, their runtime operators, and how many arguments they may take
_FORMATTING_BUILTINS = {"str": ("str_", 1, 1), "repr": ("repr_", 1, 1),
                        "format": ("format_", 1, 2)}
_STR_FORMAT = templates.Template("ag__.str_format(TEMPLATE)")
_PERCENT_FORMAT = templates.Template("ag__.percent_format(TEMPLATE, VALUES)")


class _Formatting(gast.NodeTransformer):
    """Rewrites the formatting inside one expression to be done when the program runs."""

    def __init__(self, local_names: frozenset):
        self.local_names = local_names

    def visit_JoinedStr(self, node: gast.JoinedStr):
        return deferred_fstring(node)

    def visit_Call(self, node: gast.Call):
        self.generic_visit(node)
        func = node.func
        if isinstance(func, gast.Attribute) and func.attr == "format":
            call = _STR_FORMAT.substitute_expr(node, TEMPLATE=func.value)
            call.args = call.args + list(node.args)
            call.keywords = list(node.keywords)
            return call
        if (isinstance(func, gast.Name) and func.id in _FORMATTING_BUILTINS
                and func.id not in self.local_names and not node.keywords
                and not any(isinstance(a, gast.Starred) for a in node.args)):
            attr, fewest, most = _FORMATTING_BUILTINS[func.id]
            if fewest <= len(node.args) <= most:
                node.func = gast.copy_location(
                    gast.Attribute(value=templates.name("ag__"), attr=attr, ctx=gast.Load()),
                    func)
        return node

    def visit_BinOp(self, node: gast.BinOp):
        self.generic_visit(node)
        left = node.left
        if (isinstance(node.op, gast.Mod) and isinstance(left, gast.Constant)
                and isinstance(left.value, str)):
            return _PERCENT_FORMAT.substitute_expr(node, TEMPLATE=left, VALUES=node.right)
        return node


def deferred_text(node: gast.expr, local_names: frozenset) -> gast.expr:
    """``node`` with the formatting it does (f-strings, ``.format``, ``%`` on a string
    literal, ``str``/``repr``/``format``) done by the runtime's string operators,
    which wait for run time where a value is traced."""
    return _Formatting(local_names).visit(node)


class _Transformer(LocalNamesTransformer):
    def visit_Call(self, node: gast.Call):
        self.generic_visit(node)
        func = node.func
        if (isinstance(func, gast.Name) and func.id == "print"
                and "print" not in self.locals):
            node.func = gast.copy_location(
                gast.Attribute(value=templates.name("ag__"), attr="print_", ctx=gast.Load()), func)
            node.args = [deferred_text(a, self.locals) for a in node.args]
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
