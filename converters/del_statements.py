"""Lowers ``del name`` to an assignment of ``ag__.Undefined``.

    del tmp           ->   tmp = ag__.Undefined('tmp', deleted=True)

After it, the user's reads of ``tmp`` go through ``ag__.ld`` (see
``undefined_reads``), which raises ``UndefinedVariableError``, an
``UnboundLocalError`` naming ``tmp`` and the user's line, as Python raises
at such a read. As an assignment, the deletion flows through branches and
loops like any other: deleted on one branch of a traced `if` and read after
it is the usual error for a variable set on one branch only. ``del x[i]`` and
``del x.attr``, and ``del`` of a ``global``/``nonlocal`` name, keep their
Python meaning.
"""

from __future__ import annotations

import gast

from autograph import templates
from autograph.analysis import Analysis
from autograph.context import Context
from autograph.scopes import LocalNamesTransformer

NODES = (gast.Delete,)  # the pass is skipped when the tree has none
REQUIRES = (Analysis.SCOPES,)
KEEPS = (Analysis.SCOPES,)  # `del x` and `x = ...` both rebind `x`

_UNDEFINE = templates.Template("NAME = ag__.Undefined(LITERAL, deleted=True)")


def _names(target):
    if isinstance(target, gast.Name):
        return [target]
    if isinstance(target, (gast.Tuple, gast.List)):
        return [n for elt in target.elts for n in _names(elt)]
    return []


class _Transformer(LocalNamesTransformer):
    def visit_Delete(self, node: gast.Delete):
        out, rest = [], []
        for target in node.targets:
            names = _names(target)
            if not names or any(n.id not in self.locals for n in names):  # `global` ones
                rest.append(target)
                continue
            for name in names:
                out += _UNDEFINE.substitute(node, NAME=name.id,
                                            LITERAL=templates.literal(name.id))
                self.ctx.maybe_undefined.add(name.id)
        if rest:
            node.targets = rest
            out.insert(0, node)
        return out


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
