"""Finds the counters a `while` loop steps once per iteration, before jumps move them.

    while j < 30:                ->   (unchanged; the `while` node is annotated
        x = step(x)                    Anno.COUNTER_STEPS = {'j': 1})
        if x > 1.0:
            break
        j += 1

A counter is a name the body changes by one top-level ``j += c`` (``j -= c``,
``j = j + c``) statement and assigns nowhere else. Every iteration that goes
on to the next one runs that statement: a ``break`` or ``return`` before it
ends the loop, and a loop whose body can ``continue`` gets no counter. The
jump passes then move the step into guarded blocks (``if not did_break:``),
where ``while_statements`` could no longer see that it always runs; it reads
this annotation instead, to give the loop most iterations and a reverse-mode
derivative (``bound=``).
"""

from __future__ import annotations

import gast

from autograph import anno
from autograph.anno import Anno
from autograph.context import Context
from autograph.transformer import Converter

from .while_statements import step_of

NODES = (gast.While,)  # the pass is skipped when the tree has none
REQUIRES = ()


def _own_statements(stmts):
    """The statements of a loop body, not those of nested loops, functions or classes."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (gast.While, gast.For, gast.FunctionDef, gast.ClassDef,
                             gast.Lambda)):
            continue
        stack.extend(gast.iter_child_nodes(node))


def counter_steps(body: list[gast.stmt]) -> dict[str, int]:
    """``{name: step}`` for each counter of the loop ``body``."""
    if any(isinstance(n, gast.Continue) for n in _own_statements(body)):
        return {}
    stores: dict[str, int] = {}
    for n in gast.walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(n, gast.Name) and isinstance(n.ctx, (gast.Store, gast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
    steps = {}
    for stmt in body:
        target = stmt.target if isinstance(stmt, gast.AugAssign) else (
            stmt.targets[0] if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
            else None)
        if not isinstance(target, gast.Name) or stores.get(target.id) != 1:
            continue
        step = step_of(stmt, target.id)
        if step:
            steps[target.id] = step
    return steps


class _Transformer(Converter):
    def visit_While(self, node: gast.While):
        self.generic_visit(node)  # loops nested in this one have counters of their own
        steps = counter_steps(node.body)
        if steps:
            anno.set(node, Anno.COUNTER_STEPS, steps)
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
