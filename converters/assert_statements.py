"""Lowers `assert` to ``ag__.assert_``, a check that also works on traced values.

    assert x > 0, "x must be positive"  ->  ag__.assert_(x > 0, lambda: 'x must be positive')
    assert x > 0, "bad %s" % x          ->  ag__.assert_(x > 0,
                                                         lambda: ag__.percent_format('bad %s', x))

On a Python value it is Python's `assert`. On a traced value it becomes a
run-time check that raises with the message when the condition is false;
the formatting in the message is done then, with the values of that run
(see ``print_calls``).
"""

from __future__ import annotations

import gast

from autograph import templates
from autograph.analysis import Analysis
from autograph.context import Context
from autograph.scopes import LocalNamesTransformer

from .print_calls import deferred_text

NODES = (gast.Assert,)  # the pass is skipped when the tree has none
REQUIRES = (Analysis.SCOPES,)  # `str`, `repr`, `format`: the built-ins, unless rebound
KEEPS = (Analysis.SCOPES,)  # an `assert` becomes a call: no name is bound or rebound

_ASSERT = templates.Template("ag__.assert_(TEST, lambda: MSG)")
_ASSERT_NO_MSG = templates.Template("ag__.assert_(TEST)")


class _Transformer(LocalNamesTransformer):

    def visit_Assert(self, node: gast.Assert):
        if node.msg is None:
            call = _ASSERT_NO_MSG.substitute_expr(node, TEST=node.test)
        else:
            # formatted when the check fails
            msg = deferred_text(node.msg, self.locals)
            call = _ASSERT.substitute_expr(node, TEST=node.test, MSG=msg)
        return gast.copy_location(gast.Expr(value=call), node)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
