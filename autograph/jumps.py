"""Lowers jumps (`continue`, `break`, `return`) into flags and guarded blocks.

The three jump passes share one algorithm. Within a block, a jump becomes an
assignment of a flag (``did_break = True``); the statements after anything
that may have jumped run under ``if not did_break:``; statements after a
definite jump are dead and dropped. An ``if`` whose one branch always jumps
and whose other never does takes the rest of the block into the other branch
instead, so the common ``if c: continue`` needs no flag at all::

    for x in xs:                ->   for x in xs:
        if x < 0:                        if not x < 0:
            continue                         total = total + x
        total = total + x

Flag assignments whose flag is never read are removed afterwards.
"""

from __future__ import annotations

from typing import Callable

import gast

from autograph import anno, templates
from autograph.anno import Anno


class Jump:
    """What one pass lowers; subclasses say what a jump is and where to look."""

    def __init__(self, flag: str):
        self.flag = flag
        self.flag_read = False

    def is_jump(self, node: gast.stmt) -> bool:
        raise NotImplementedError

    def replace(self, node: gast.stmt) -> list[gast.stmt]:
        """Statements that stand for the jump: set the flag (and the value)."""
        return [flag_set(self.flag, True, node)]

    def enter_loop(self, node: gast.stmt) -> bool:
        """Whether a jump inside this nested loop belongs to the current pass."""
        return False

    def on_loop(self, node: gast.stmt) -> None:
        """Called for a nested loop (entered) whose body may jump."""

    def guard(self, stmts: list[gast.stmt], origin: gast.stmt) -> gast.stmt:
        self.flag_read = True
        node = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=templates.name(self.flag)),
                       body=stmts, orelse=[])
        templates.set_location(node, origin)
        return node


def flag_set(flag: str, value, origin) -> gast.stmt:
    node = gast.Assign(targets=[templates.name(flag, gast.Store())],
                       value=templates.literal(value), type_comment=None)
    templates.set_location(node, origin)
    anno.set(node, Anno.FLAG_SET, flag)
    return node


def lower(stmts: list[gast.stmt], jump: Jump) -> tuple[list[gast.stmt], bool, bool]:
    """Lowers one block; returns (statements, may jump, always jumps)."""
    out: list[gast.stmt] = []
    block_may = False
    for i, node in enumerate(stmts):
        if jump.is_jump(node):
            out.extend(jump.replace(node))
            return out, True, True
        rest = stmts[i + 1:]
        if isinstance(node, gast.If):
            body, b_may, b_always = lower(node.body, jump)
            orelse, o_may, o_always = lower(node.orelse, jump)
            moved = False
            if rest and b_always and not o_may:
                orelse, o_may, o_always = lower(node.orelse + rest, jump)
                moved = True
            elif rest and o_always and not b_may:
                body, b_may, b_always = lower(node.body + rest, jump)
                moved = True
            node.body, node.orelse = body or [gast.Pass()], orelse
            may, always = b_may or o_may, b_always and o_always
            if moved:  # the rest of the block now lives inside the `if`
                out.append(node)
                return out, may, always
        elif isinstance(node, (gast.With, gast.AsyncWith)):
            node.body, may, always = lower(node.body, jump)
        elif isinstance(node, gast.Try):
            may, always = _lower_try(node, jump)
        elif isinstance(node, (gast.While, gast.For)) and jump.enter_loop(node):
            # `while True:` without `break` ends only through the jump
            endless = isinstance(node, gast.While) and _always_true(node.test)
            node.body, may, _ = lower(node.body, jump)
            if may:
                jump.on_loop(node)
            always = may and endless
        elif isinstance(node, (gast.While, gast.For)) and node.orelse:
            # a loop's `else:` runs after it, in the enclosing loop: its jumps are ours
            node.orelse, may, always = lower(node.orelse, jump)
            always = False
        else:
            may = always = False
        out.append(node)
        block_may = block_may or may
        if always:
            return out, True, True
        if may and rest:
            rest_out, _, rest_always = lower(rest, jump)
            out.append(jump.guard(rest_out, rest[0]))
            return out, True, rest_always  # it jumped already, or the rest jumps
    return out, block_may, False


def _lower_try(node: gast.Try, jump: Jump) -> tuple[bool, bool]:
    """Lowers the jumps of a `try`'s body, handlers and `else:`; ``finally:`` runs anyway.

    The `else:` runs only when the body finished without jumping, so it is
    guarded by the flag when the body may jump. (Jumps inside ``finally:`` are
    moved out of it by ``finally_jumps`` first.)
    """
    node.body, b_may, b_always = lower(node.body, jump)
    node.body = node.body or [gast.Pass()]
    h_may, h_always = False, True
    for handler in node.handlers:
        handler.body, may, always = lower(handler.body, jump)
        handler.body = handler.body or [gast.Pass()]
        h_may, h_always = h_may or may, h_always and always
    orelse, o_may, o_always = lower(node.orelse, jump)
    if b_always:
        orelse, o_may, o_always = [], False, False
    elif b_may and orelse:
        orelse = [jump.guard(orelse, node.orelse[0])]
    node.orelse = orelse
    return b_may or h_may or o_may, (b_always or o_always) and h_always


def _always_true(test) -> bool:
    return isinstance(test, gast.Constant) and bool(test.value) is True


def never_completes(stmts: list[gast.stmt], loop_jumps: bool = False) -> bool:
    """Whether no path through ``stmts`` reaches their end: each returns or raises first
    (or, with ``loop_jumps``, leaves by a `break` or `continue` of the enclosing loop).

    Decided from the statements alone, so a loop counts as one that may end
    (its test may be false at once) unless it is ``while True:`` without a
    ``break`` of its own, or its ``else:`` never completes.
    """
    def ends(block):
        return never_completes(block, loop_jumps)

    leaves = (gast.Return, gast.Raise) + ((gast.Break, gast.Continue) if loop_jumps else ())
    for node in stmts:
        if isinstance(node, leaves):
            return True
        if isinstance(node, gast.If):
            done = ends(node.body) and ends(node.orelse)
        elif isinstance(node, (gast.With, gast.AsyncWith)):
            done = ends(node.body)
        elif isinstance(node, gast.Try):
            body = ends(node.body) or ends(node.orelse)
            done = ends(node.finalbody) or (body and all(ends(h.body) for h in node.handlers))
        elif isinstance(node, (gast.While, gast.For)):
            breaks = contains(node.body, _is_break, enter_loops=False)
            endless = isinstance(node, gast.While) and _always_true(node.test)
            done = not breaks and (endless or ends(node.orelse))
        else:
            done = False
        if done:
            return True
    return False


def _is_break(node) -> bool:
    return isinstance(node, gast.Break)


def contains(stmts, is_jump: Callable[[gast.stmt], bool], enter_loops: bool) -> bool:
    """Whether a jump occurs in ``stmts``, not counting nested functions."""
    for node in stmts:
        if is_jump(node):
            return True
        if isinstance(node, (gast.FunctionDef, gast.ClassDef, gast.Lambda)):
            continue
        if isinstance(node, (gast.While, gast.For)) and not enter_loops:
            if contains(node.orelse, is_jump, enter_loops):  # an inner loop's else is ours
                return True
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if block and contains(block, is_jump, enter_loops):
                return True
        if isinstance(node, gast.ExceptHandler) and contains(node.body, is_jump, enter_loops):
            return True
    return False


def drop_unread_flags(stmts: list[gast.stmt], flag: str) -> list[gast.stmt]:
    """Removes assignments of ``flag``; simplifies ``if c: pass else: X``."""
    out = []
    for node in stmts:
        if anno.get(node, Anno.FLAG_SET) == flag:
            continue
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if block and not isinstance(node, (gast.FunctionDef, gast.ClassDef)):
                setattr(node, field, drop_unread_flags(block, flag))
        if isinstance(node, gast.If):
            empty_body = all(isinstance(s, gast.Pass) for s in node.body)
            if empty_body and not node.orelse:
                if any(isinstance(n, gast.Call) for n in gast.walk(node.test)):
                    out.append(gast.copy_location(gast.Expr(value=node.test), node))
                continue
            if empty_body:
                node = gast.copy_location(
                    gast.If(test=gast.UnaryOp(op=gast.Not(), operand=node.test),
                            body=node.orelse, orelse=[]), node)
        out.append(node)
    return out or [gast.Pass()]


def convert_methods(transformer, node: gast.ClassDef) -> gast.ClassDef:
    """Lets a pass rewrite the methods of a class defined in a converted function.

    Only the methods: statements at class level keep their plain meaning.
    """
    body = []
    for item in node.body:
        if isinstance(item, gast.FunctionDef):
            item = transformer.visit(item)
        body.extend(item if isinstance(item, list) else [item])
    node.body = body
    return node
