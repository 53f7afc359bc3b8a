"""Binds, before a `try`, the names its body assigns that may not be bound yet.

    try:                        ->   v = ag__.Undefined('v')
        v = d["key"]                 try:
    except KeyError:                     v = d['key']
        if x > 0:                    except KeyError:
            v = x                        ...
        ...

An exception can leave the body anywhere, so in a handler, in ``finally:``
and after the `try`, a name the body assigns may still be unbound. Converted
blocks pass their variables in and out as values; bound to ``Undefined``,
such a name can be handed on, and a read of it raises
``UndefinedVariableError`` (an ``UnboundLocalError``) as in Python. A name
already bound before the `try` keeps its value.
"""

from __future__ import annotations

import gast

from autograph import anno, templates
from autograph.analysis import Analysis, activity
from autograph.anno import Anno
from autograph.context import Context
from autograph.scopes import LocalNamesTransformer

NODES = (gast.Try,)  # the pass is skipped when the tree has none
REQUIRES = (Analysis.SCOPES, Analysis.DEFINITIONS)

_UNDEFINED = templates.Template("NAME = ag__.Undefined(LITERAL)")


class _Transformer(LocalNamesTransformer):
    def visit_Try(self, node: gast.Try):
        self.generic_visit(node)
        defined = anno.get(node, Anno.DEFINED_IN) or frozenset()
        names = sorted((activity.block_scope(node.body).kills & self.locals) - defined)
        if not names:
            return node
        self.ctx.maybe_undefined.update(names)
        stmts = []
        for name in names:
            stmts += _UNDEFINED.substitute(node, NAME=name, LITERAL=templates.literal(name))
        return stmts + [node]


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
