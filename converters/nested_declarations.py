"""Moves ``global`` and ``nonlocal`` statements out of blocks, to the top of their function.

    def f(x):                         def f(x):
        if x > 0:                          global calls
            global calls          ->       if x > 0:
            calls = calls + 1                  calls = calls + 1
        return x                           return x

Python applies a declaration anywhere in a function's body to the whole
function; the passes that turn a block into a function (``if_true``,
``loop_body``) would take it along, out of the function it declares names
for. At the top, the analyses see it, and ``global_statements`` copies it
into each generated function that assigns those names. A block left with no
statement gets ``pass``. Runs first, before any pass that makes functions.
"""

from __future__ import annotations

import gast

from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.Global, gast.Nonlocal)  # the pass is skipped when the tree has none
REQUIRES = ()

_DECLARATIONS = (gast.Global, gast.Nonlocal)
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)


def _lift(stmts: list, found: list) -> list:
    """``stmts`` without the declarations nested in its blocks, which go to ``found``."""
    for stmt in stmts:
        if isinstance(stmt, _SCOPES):
            continue  # their declarations are their own
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            block = getattr(stmt, field, None)
            if not block:
                continue
            if field in ("handlers", "cases"):
                for clause in block:
                    clause.body = _lift_block(clause.body, found, clause)
            else:
                setattr(stmt, field, _lift_block(block, found, stmt))
    return stmts


def _lift_block(block: list, found: list, owner: gast.AST) -> list:
    kept = [s for s in block if not isinstance(s, _DECLARATIONS)]
    found.extend(s for s in block if isinstance(s, _DECLARATIONS))
    if not kept:  # a block of declarations only
        kept = [gast.copy_location(gast.Pass(), block[0])]
    return _lift(kept, found)


def _merged(found: list) -> list:
    """One statement per kind, the names in order of first declaration."""
    out = []
    for kind in _DECLARATIONS:
        names = list(dict.fromkeys(n for s in found if isinstance(s, kind) for n in s.names))
        if names:
            first = next(s for s in found if isinstance(s, kind))
            out.append(gast.copy_location(kind(names=names), first))
    return out


class _Transformer(Converter):
    def visit_FunctionDef(self, node: gast.FunctionDef):
        self.generic_visit(node)  # nested functions keep their own declarations
        found: list = []
        node.body = _lift(node.body, found)
        if found:
            at = 0
            while at < len(node.body) and (isinstance(node.body[at], _DECLARATIONS) or (
                    at == 0 and isinstance(node.body[0], gast.Expr)
                    and isinstance(node.body[0].value, gast.Constant)
                    and isinstance(node.body[0].value.value, str))):
                at += 1  # after the docstring and the declarations already at the top
            node.body[at:at] = _merged(found)
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
