"""Tells the runtime which exceptions the handlers of a `try` catch, while its body runs.

    try:                        ->   try:
        if x > 0:                        with ag__.handled_by((lambda: (TypeError, KeyError),
            y = 1.0                                            lambda: lib.Error)):
        else:                                if x > 0:
            y = 2.0                              y = 1.0
    except (TypeError, KeyError):            else:
        y = 3.0                                  y = 2.0
    except lib.Error:                    except (TypeError, KeyError):
        y = 4.0                              y = 3.0
                                         except lib.Error:
                                             y = 4.0

Under plain ``jax.jit`` an `if` on a traced value raises JAX's
``TracerBoolConversionError`` (a ``TypeError``) while tracing, and this
handler catches it: ``y`` is 3.0. Staged, the `if` would give 1.0 or 2.0.
With the handlers' classes at hand (each evaluated only when a traced
condition asks, in order, as Python evaluates them when an exception reaches
them; one whose expression does more than look names up, ``except
which():``, is passed as ``None`` and never evaluated here), such a
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
    with ag__.handled_by(HANDLERS):
        BODY
""")


def _looked_up(expr) -> bool:
    """Whether evaluating ``expr`` only looks names up (``KeyError``, ``lib.Error``,
    a tuple of such): then the runtime may evaluate it as often as it asks."""
    if isinstance(expr, gast.Name):
        return True
    if isinstance(expr, gast.Attribute):
        return _looked_up(expr.value)
    if isinstance(expr, gast.Tuple):
        return all(_looked_up(e) for e in expr.elts)
    return False


def _handler(h: gast.ExceptHandler) -> gast.expr:
    if h.type is None:  # a bare `except:`
        return gast.Lambda(args=_no_args(), body=templates.name("BaseException"))
    if not _looked_up(h.type):  # `except which():` runs once, when an error reaches it
        return templates.literal(None)
    return gast.Lambda(args=_no_args(), body=copy.deepcopy(h.type))


def _no_args() -> gast.arguments:
    return gast.arguments(args=[], posonlyargs=[], vararg=None, kwonlyargs=[],
                          kw_defaults=[], kwarg=None, defaults=[])


class _Transformer(Converter):
    def visit_Try(self, node: gast.Try):
        self.generic_visit(node)
        if not node.handlers:
            return node
        handlers = gast.Tuple(elts=[_handler(h) for h in node.handlers], ctx=gast.Load())
        node.body = _HANDLED.substitute(node, HANDLERS=handlers, BODY=node.body)
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
