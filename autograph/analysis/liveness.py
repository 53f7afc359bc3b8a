"""Liveness: which names may still be read after each point.

A backward pass over the structured statements of one function (the jump
lowering passes run first, so the control-flow converters only meet `if`,
`while` and `for` without `break`/`continue`, and `return` only at the end).
Loops iterate to a fixed point. Results:

* every statement: ``Anno.LIVE_OUT`` (live right after it) and ``Anno.LIVE_IN``;
* `if`: ``Anno.BODY_LIVE_IN`` / ``Anno.ORELSE_LIVE_IN`` at the start of each branch;
* loops: ``Anno.BODY_LIVE_IN``, live at the start of the body, which includes
  what a later iteration reads.
"""

from __future__ import annotations

import contextvars

import gast

from autograph import anno
from autograph.analysis import activity
from autograph.anno import Anno


def _reads(node) -> frozenset:
    return activity.expression_scope(node).reads


def block(stmts, live_out: frozenset) -> frozenset:
    live = live_out
    for s in reversed(stmts):
        live = statement(s, live)
    return live


def _loop(node, live_out: frozenset, entry_reads: frozenset, target_kills: frozenset):
    """Fixed point of a loop head; returns (live at head, live at body start)."""
    exit_live = block(node.orelse, live_out)
    test_reads = _reads(anno.get(node, Anno.EXTRA_TEST))
    if isinstance(node, gast.While):
        test_reads |= _reads(node.test)
    head = exit_live | test_reads
    while True:
        body_in = block(node.body, head)
        new_head = exit_live | test_reads | entry_reads | (body_in - target_kills)
        if new_head == head:
            return head, body_in
        head = new_head


def statement(node, live_out: frozenset) -> frozenset:
    anno.set(node, Anno.LIVE_OUT, live_out)
    if isinstance(node, gast.If):
        body_in = block(node.body, live_out)
        orelse_in = block(node.orelse, live_out)
        anno.set(node, Anno.BODY_LIVE_IN, body_in)
        anno.set(node, Anno.ORELSE_LIVE_IN, orelse_in)
        live_in = _reads(node.test) | body_in | orelse_in
    elif isinstance(node, gast.While):
        head, body_in = _loop(node, live_out, frozenset(), frozenset())
        anno.set(node, Anno.BODY_LIVE_IN, body_in)
        live_in = head
    elif isinstance(node, gast.For):
        target = activity.expression_scope(node.target)
        head, body_in = _loop(node, live_out, target.reads, target.kills)
        anno.set(node, Anno.BODY_LIVE_IN, body_in)
        live_in = head | _reads(node.iter)
    elif isinstance(node, (gast.With, gast.AsyncWith)):
        live = block(node.body, live_out)
        for item in reversed(node.items):
            bound = activity.expression_scope(item.optional_vars).kills
            live = (live - bound) | _reads(item.context_expr)
            live |= _reads(item.optional_vars)
        live_in = live
    elif isinstance(node, gast.Try):
        after = block(node.finalbody, live_out)
        handlers: frozenset[str] = frozenset()
        for h in node.handlers:
            # `except E as e:` binds `e` before the handler runs (and unbinds it after)
            bound = activity.expression_scope(h.name).kills if h.name is not None else frozenset()
            handlers |= (block(h.body, after) - bound) | _reads(h.type)
        orelse = block(node.orelse, after)
        # an exception may leave the body anywhere: what handlers read is live throughout
        live_in = block(node.body, orelse | handlers) | handlers
    elif isinstance(node, gast.Return):
        live_in = _reads(node.value) | _EXIT_LIVE.get()
    elif isinstance(node, gast.Raise):
        live_in = _reads(node.exc) | _reads(node.cause) | _EXIT_LIVE.get()
    elif isinstance(node, gast.Match):
        live = _reads(node.subject)
        for case in node.cases:
            live |= block(case.body, live_out) | _reads(case.guard) | _reads(case.pattern)
        live_in = live | live_out
    else:
        scope = activity.statement_scope(node)
        live_in = (live_out - scope.kills) | scope.reads
    anno.set(node, Anno.LIVE_IN, live_in)
    return live_in


def closure_reads(node: gast.FunctionDef) -> frozenset:
    """Names of ``node`` that a nested user function or lambda reads.

    A closure may run at any later point (or after ``node`` returns), so
    these names stay live to the end: a later assignment, even in a branch,
    must reach the closure's cell.
    """
    reads = set()
    stack = list(node.body)
    while stack:
        child = stack.pop()
        kind = type(child)
        if kind is gast.FunctionDef and not anno.get(child, Anno.GENERATED):
            reads |= activity.function_free_reads(child)  # its own closures included
            stack.extend(child.decorator_list)
            stack.extend(d for d in child.args.defaults + child.args.kw_defaults if d is not None)
        elif kind is gast.Lambda:
            reads |= activity.expression_scope(child).reads
        else:
            activity.push_children(child, stack.append)
    return frozenset(reads) & activity.function_locals(node)


# What is live when the function being analysed exits (its closures' reads), in
# the thread (or task) analysing it.
_EXIT_LIVE: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "autograph_exit_live", default=frozenset())


def analyze_function(node: gast.FunctionDef) -> None:
    exit_live = closure_reads(node)
    anno.set(node, Anno.CLOSURE_READS, exit_live)
    token = _EXIT_LIVE.set(exit_live)
    try:
        block(node.body, exit_live)
    finally:
        _EXIT_LIVE.reset(token)
