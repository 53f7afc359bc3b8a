"""Marks the exceptions that the user's own `raise` statements raise.

    raise ValueError("x must be positive")   ->   raise ag__.raised(ValueError('x must be positive'))

``ag__.raised`` returns the exception (instantiating a class, as `raise` does)
and records that the user raised it. Inside a staged branch, such an
exception is deferred: it is raised when the program takes that branch at run
time, as Python would. Any other exception met while tracing a branch (an
error of JAX, of a library, of the program's types) propagates at once. A
bare `raise` (re-raising in an `except`) is left as it is.
"""

from __future__ import annotations

import gast

from autograph import templates
from autograph.context import Context
from autograph.jumps import convert_methods

NODES = (gast.Raise,)  # the pass is skipped when the tree has none
REQUIRES = ()

_RAISED = templates.Template("ag__.raised(EXC)")


class _Transformer(gast.NodeTransformer):
    def __init__(self, ctx: Context):
        self.ctx = ctx

    def visit_ClassDef(self, node):
        return convert_methods(self, node)

    def visit_Raise(self, node: gast.Raise):
        if node.exc is not None:
            node.exc = _RAISED.substitute_expr(node.exc, EXC=node.exc)
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
