"""Tells the runtime which exceptions the handlers of a `try` catch, while its body runs.

    try:                        ->   try:
        if x > 0:                        with ag__.handled_by(lambda: (TypeError, KeyError)):
            y = 1.0                          if x > 0:
        else:                                    y = 1.0
            y = 2.0                          else:
    except (TypeError, KeyError):                y = 2.0
        y = 3.0                      except (TypeError, KeyError):
                                         y = 3.0

Under plain ``jax.jit`` an `if` on a traced value raises JAX's
``TracerBoolConversionError`` (a ``TypeError``) while tracing, and this
handler catches it: ``y`` is 3.0. Staged, the `if` would give 1.0 or 2.0.
With the handlers' classes at hand (evaluated only when a traced condition
asks, as Python evaluates them only when an exception reaches them), such a
construct raises JAX's error, as under ``jax.jit``; a handler that catches an
error autograph raises while staging (``BranchError`` is a ``ValueError``)
but not JAX's does not see it either (see ``runtime.core.handlers``). A bare
``except:`` catches ``BaseException``. Only the user's `try` statements are
marked: the passes after this one make `try` statements of their own.
"""

from __future__ import annotations

import copy

import gast

from autograph import templates
from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.Try,)  # the pass is skipped when the tree has none
REQUIRES = ()

_HANDLED = templates.Template("""
    with ag__.handled_by(lambda: CLASSES):
        BODY
""")


class _Transformer(Converter):
    def visit_Try(self, node: gast.Try):
        self.generic_visit(node)
        if not node.handlers:
            return node
        classes = [copy.deepcopy(h.type) if h.type is not None else templates.name("BaseException")
                   for h in node.handlers]
        node.body = _HANDLED.substitute(node, CLASSES=gast.Tuple(elts=classes, ctx=gast.Load()),
                                        BODY=node.body)
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
