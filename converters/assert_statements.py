"""Lowers `assert` to ``ag__.assert_``, a check that also works on traced values.

    assert x > 0, "x must be positive"   ->   ag__.assert_(x > 0, lambda: 'x must be positive')

On a Python value it is Python's `assert`. On a traced value it becomes a
run-time check that raises with the message when the condition is false.
"""

from __future__ import annotations

import gast

from autograph import templates
from autograph.analysis import Analysis
from autograph.context import Context
from autograph.transformer import Converter

from .print_calls import deferred_fstring

NODES = (gast.Assert,)  # the pass is skipped when the tree has none
REQUIRES = ()
KEEPS = (Analysis.SCOPES,)  # an `assert` becomes a call: no name is bound or rebound

_ASSERT = templates.Template("ag__.assert_(TEST, lambda: MSG)")
_ASSERT_NO_MSG = templates.Template("ag__.assert_(TEST)")


class _Transformer(Converter):

    def visit_Assert(self, node: gast.Assert):
        if isinstance(node.msg, gast.JoinedStr):  # formatted when the check fails
            node.msg = deferred_fstring(node.msg)
        if node.msg is None:
            call = _ASSERT_NO_MSG.substitute_expr(node, TEST=node.test)
        else:
            call = _ASSERT.substitute_expr(node, TEST=node.test, MSG=node.msg)
        return gast.copy_location(gast.Expr(value=call), node)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
