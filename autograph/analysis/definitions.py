"""Which local names may be bound when each statement starts.

A forward pass over one function: parameters are bound at entry; a statement
adds the names it rebinds; branches join by union; a loop body may run zero
or more times. The names an `if` test or a `for` iterable binds with `:=`
count as bound when the `if` or `for` starts: its converted form evaluates
them before it takes its inputs. ``Anno.DEFINED_IN`` on `if` and loop statements lets
converters pass ``ag__.Undefined('y')`` for a name no path has bound yet,
instead of reading an unbound local.
"""

from __future__ import annotations

import gast

from autograph import anno
from autograph.analysis import activity
from autograph.anno import Anno


def block(stmts, defined: frozenset) -> frozenset:
    for s in stmts:
        defined = statement(s, defined)
    return defined


def statement(node, defined: frozenset) -> frozenset:
    # the header of an `if` or `for` (its test, its iterable) runs before the converted
    # block takes its inputs: a name it binds with `:=` is bound by then
    if isinstance(node, gast.If):
        defined = defined | activity.expression_scope(node.test).kills
    elif isinstance(node, gast.For):
        defined = defined | activity.expression_scope(node.iter).kills
    anno.set(node, Anno.DEFINED_IN, defined)
    if isinstance(node, gast.If):
        return block(node.body, defined) | block(node.orelse, defined)
    if isinstance(node, (gast.While, gast.For)):
        d = defined
        if isinstance(node, gast.For):
            d = d | activity.expression_scope(node.target).kills
        out = block(node.body, d)
        out = block(node.body, d | out)  # bindings from an earlier iteration
        return defined | out | block(node.orelse, defined | out)
    if isinstance(node, gast.With):
        d = defined
        for item in node.items:
            d = d | activity.expression_scope(item.context_expr).kills
            d = d | activity.expression_scope(item.optional_vars).kills
        return block(node.body, d)
    if isinstance(node, gast.Try):
        out = block(node.body, defined)
        for h in node.handlers:
            out |= block(h.body, defined | out | activity.expression_scope(h.name).kills)
        out |= block(node.orelse, out)
        return block(node.finalbody, defined | out)
    return defined | activity.statement_scope(node).kills


def analyze_function(node: gast.FunctionDef) -> None:
    params = frozenset(activity.param_names(node.args))
    block(node.body, params)
