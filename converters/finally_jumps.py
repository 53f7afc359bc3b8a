"""Moves the jumps out of a `try`'s `finally:`, keeping Python's meaning.

    try:                        ->   try_return = False
        if x > 0:                    try_value = ag__.UndefinedReturn()
            return x                 try_error = None
        y = g(x)                     try:
    finally:                             if x > 0:
        if y > 5:                            try_value = x
            return y                         try_return = True
                                         else:
                                             y = g(x)
                                     except BaseException as caught:
                                         try_error = ag__.in_flight(caught)
                                     if y > 5:
                                         return y
                                     if try_error is not None:
                                         raise try_error
                                     if try_return:
                                         return try_value

A `return`, `break` or `continue` in `finally:` replaces whatever was leaving
the `try`: an exception in flight, or a jump of the body, a handler or
`else:`. Lowered to a flag in place, such a jump could not cancel an
exception, so the `try` becomes one that catches everything (into
``try_error``, through ``ag__.in_flight``, which raises at once an autograph
error no jump may drop), the `finally:` block runs after it as ordinary
code, and what was leaving follows it: the exception raised again, or the
jump taken. The jump passes guard what follows the `finally:` block's own
jumps, so those win, as in Python. The jumps of the body, its handlers and
`else:` are recorded rather than taken (``try_return``, with the value in
``try_value``; ``try_break``; ``try_continue``), and the rest of their
blocks guarded; each flag is a lowered jump's, so a variable left unassigned
where one is set is never read. A `finally:` block that always jumps drops
what was leaving, so nothing follows it.
"""

from __future__ import annotations

import gast

from autograph import jumps, templates
from autograph.context import Context
from autograph.naming import Role
from autograph.transformer import Converter

from .break_statements import add_loop_test, not_flag

NODES = (gast.Try,)  # the pass is skipped when the tree has none
EMITS = (gast.If, gast.UnaryOp, gast.BoolOp, gast.Compare, gast.Raise, gast.Return, gast.Break,
         gast.Continue)
REQUIRES = ()

# the flag that records each kind of jump, in the order they are taken after the `finally:`
_FLAGS = ((gast.Return, "try_return", Role.RETURN_FLAG), (gast.Break, "try_break", Role.BREAK_FLAG),
          (gast.Continue, "try_continue", Role.CONTINUE_FLAG))

_CATCH = templates.Template("""
    try:
        BODY
    except BaseException:
        ERROR = ag__.in_flight(CAUGHT)
""")
_CATCH_ALL = templates.Template("""
    try:
        BODY
    except BaseException:
        ag__.in_flight(CAUGHT)
""")
_RERAISE = templates.Template("""
    if ERROR is not None:
        raise ERROR
""")
_TAKE = templates.Template("""
    if FLAG:
        JUMP
""")
_UNDEFINED_RETURN = templates.Template("VALUE = ag__.UndefinedReturn()")


def _jumps_out(stmts: list[gast.stmt]) -> list[gast.stmt]:
    """The `return`s in ``stmts``, and their `break`s and `continue`s not in a loop of theirs."""
    found: list[gast.stmt] = []

    def walk(block, in_loop: bool):
        for node in block:
            if isinstance(node, gast.Return) or (
                    isinstance(node, (gast.Break, gast.Continue)) and not in_loop):
                found.append(node)
            elif isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                continue
            elif isinstance(node, (gast.For, gast.While)):
                walk(node.body, True)
                walk(node.orelse, in_loop)  # a loop's `else:` jumps for the enclosing one
            else:
                for field in ("body", "orelse", "finalbody"):
                    walk(getattr(node, field, None) or [], in_loop)
                for handler in getattr(node, "handlers", None) or []:
                    walk(handler.body, in_loop)

    walk(stmts, False)
    return found


class _Exit(jumps.Jump):
    """The jumps out of a `try` body: each recorded in its kind's flag, not taken."""

    def __init__(self, flags: dict[type, str], value: str | None, exits: list[gast.stmt]):
        super().__init__(flags.get(gast.Return, ""))
        self.flags = flags
        self.value = value
        self.exits = {id(e) for e in exits}
        self.returns = [e for e in exits if isinstance(e, gast.Return)]

    def is_jump(self, node):
        return id(node) in self.exits

    def replace(self, node):
        out = []
        if isinstance(node, gast.Return):
            assert self.value is not None
            value = node.value if node.value is not None else templates.literal(None)
            out.append(_assign(self.value, value, node))
        out.append(jumps.flag_set(self.flags[type(node)], True, node))
        return out

    def enter_loop(self, node):
        # a loop inside the `try` that holds our `return`s; its `break`s are its own
        return any(n is r for r in self.returns for n in gast.walk(node))

    def on_loop(self, node):
        add_loop_test(node, not_flag(self.flags[gast.Return]))

    def guard(self, stmts, origin):
        flags = [templates.name(f) for f in self.flags.values()]
        test = flags[0] if len(flags) == 1 else gast.BoolOp(op=gast.Or(), values=flags)
        node = gast.If(test=gast.UnaryOp(op=gast.Not(), operand=test), body=stmts, orelse=[])
        templates.set_location(node, origin)
        return node


def _assign(target: str, value: gast.expr, origin) -> gast.stmt:
    node = gast.Assign(targets=[templates.name(target, gast.Store())], value=value,
                       type_comment=None)
    templates.set_location(node, origin)
    return node


class _Transformer(Converter):
    def visit_Try(self, node: gast.Try):
        self.generic_visit(node)  # inner `try`s first: the jumps they move out become ours
        if not _jumps_out(node.finalbody):
            return node
        namer = self.ctx.namer
        final, node.finalbody = node.finalbody, []
        inner = [node] if node.handlers or node.orelse else node.body
        exits = _jumps_out(inner)
        leaves = jumps.never_completes(final, loop_jumps=True)  # drops what was leaving
        prologue: list[gast.stmt] = []
        epilogue: list[gast.stmt] = []
        if exits:
            kinds = {type(e) for e in exits}
            flags = {kind: namer.new(flag, role) for kind, flag, role in _FLAGS if kind in kinds}
            value = namer.new("try_value") if gast.Return in kinds else None
            inner, _, _ = jumps.lower(inner, _Exit(flags, value, exits))
            prologue += [jumps.flag_set(f, False, node) for f in flags.values()]
            if value is not None and not leaves:
                prologue += _UNDEFINED_RETURN.substitute(node, VALUE=value)
            for kind, flag in flags.items():
                taken = gast.Return(value=templates.name(value)) if value and kind is gast.Return \
                    else kind()
                templates.set_location(taken, node)
                epilogue += _TAKE.substitute(node, FLAG=flag, JUMP=[taken])
        body = inner or [gast.Pass()]
        caught = namer.new("caught")
        if leaves:
            catch = _CATCH_ALL.substitute(node, BODY=body, CAUGHT=caught)
        else:
            error = namer.new("try_error")
            prologue.append(_assign(error, templates.literal(None), node))
            catch = _CATCH.substitute(node, BODY=body, CAUGHT=caught, ERROR=error)
            epilogue = _RERAISE.substitute(node, ERROR=error) + epilogue
        handler = catch[0].handlers[0]
        handler.name = templates.name(caught, gast.Store())  # `except BaseException as caught`
        templates.set_location(handler.name, node)
        return prologue + catch + final + ([] if leaves else epilogue)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
