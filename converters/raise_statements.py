"""Marks the exceptions that the user's own `raise` statements raise.

    raise ValueError("x must be positive")   ->   raise ag__.raised(ValueError('x must be positive'))

``ag__.raised`` returns the exception (instantiating a class, as `raise` does)
and records that the user raised it. Inside a staged branch, such an
exception is deferred: it is raised when the program takes that branch at run
time, as Python would. Any other exception met while tracing a branch (an
error of JAX, of a library, of the program's types) propagates at once. A
bare `raise` in an `except` block is left as it is; elsewhere (a helper called
from its caller's handler, or a mistake) it becomes ``raise ag__.reraised()``:
the exception being handled, or Python's `RuntimeError` when none is, which a
staged branch raises only when taken. The formatting in
its arguments (``raise ValueError(f"bad {x:.2f}")``, ``"bad {}".format(x)``,
see ``print_calls``) is done when the branch raises at run time. Inside the body of
a `try` it becomes ``ag__.raised(E, in_try=True)``: no handler could catch it
at run time, so a staged branch refuses it while tracing instead.
"""

from __future__ import annotations

import gast

from autograph import anno, templates
from autograph.analysis import Analysis
from autograph.anno import Anno
from autograph.context import Context
from autograph.scopes import LocalNamesTransformer

from .print_calls import deferred_text

NODES = (gast.Raise,)  # the pass is skipped when the tree has none
REQUIRES = (Analysis.SCOPES,)  # `str`, `repr`, `format`: the built-ins, unless rebound
KEEPS = (Analysis.SCOPES,)  # wraps the raised expression: no name is bound or rebound

_RAISED = templates.Template("ag__.raised(EXC)")
_RAISED_IN_TRY = templates.Template("ag__.raised(EXC, in_try=True)")
_RERAISED = templates.Template("ag__.reraised()")


class _Transformer(LocalNamesTransformer):
    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.try_depth = 0
        self.handler_depth = 0

    def visit_FunctionDef(self, node):
        # a nested function's own `try`s and handlers
        depth, self.try_depth = self.try_depth, 0
        handlers, self.handler_depth = self.handler_depth, 0
        try:
            return super().visit_FunctionDef(node)
        finally:
            self.try_depth, self.handler_depth = depth, handlers

    def visit_Try(self, node: gast.Try):
        # a `raise` in the body may be caught by this `try`'s own handlers
        self.try_depth += 1
        node.body = [self.visit(s) for s in node.body]
        self.try_depth -= 1
        self.handler_depth += 1
        for h in node.handlers:
            self.visit(h)
        self.handler_depth -= 1
        node.orelse = [self.visit(s) for s in node.orelse]
        node.finalbody = [self.visit(s) for s in node.finalbody]
        return node

    def visit_Raise(self, node: gast.Raise):
        if isinstance(node.exc, gast.Name) and anno.get(node.exc, Anno.GENERATED):
            return node  # what a `try` caught raised again (``finally_jumps``): not the user's
        if isinstance(node.exc, gast.Call):  # `raise E(f"...")`: formatted when raised
            node.exc.args = [deferred_text(a, self.locals) for a in node.exc.args]
        if node.exc is not None:
            template = _RAISED_IN_TRY if self.try_depth else _RAISED
            node.exc = template.substitute_expr(node.exc, EXC=node.exc)
        elif not self.handler_depth and not self.try_depth:
            # a bare `raise` outside any handler: what is being handled when it runs, or
            # Python's RuntimeError (in a staged branch, when the branch is taken)
            node.exc = _RERAISED.substitute_expr(node)
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
