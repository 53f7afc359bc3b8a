"""Gives each function one exit: `return` becomes an assignment of `retval`.

    def f(x):                   ->   def f(x):
        if x > 0:                        if x > 0:
            return x * 2                     retval = x * 2
        y = -x                           else:
        return y                             y = -x
                                             retval = y
                                         return retval

An `if` whose one branch always returns takes the rest of the function into
its other branch, so early returns need no flag. A `return` inside a loop, or
in a branch that returns only sometimes, also sets ``did_return``: loops gain
a ``not did_return`` test and later statements run under
``if not did_return:``. When some path can fall off the end, ``retval``
starts as ``None``, as in Python; then an array-dependent condition that
returns a value on one path and nothing on another is reported by the
runtime. A path that ends in `raise` does not fall off the end: after
``for x in xs: if ok(x): return x`` a `raise` leaves ``retval`` starting
unassigned (``ag__.UndefinedReturn()``), which no path returns.
"""

from __future__ import annotations

import gast

from autograph import jumps, templates
from autograph.context import Context
from autograph.naming import Role
from autograph.transformer import Converter

from .break_statements import add_loop_test, not_flag

NODES = (gast.Return,)  # the pass is skipped when the tree has none
EMITS = (gast.If, gast.UnaryOp, gast.BoolOp)  # guards and loop tests
REQUIRES = ()

_INIT_UNDEFINED = templates.Template("RETVAL = ag__.UndefinedReturn()")


class _Return(jumps.Jump):
    def __init__(self, flag: str, retval: str):
        super().__init__(flag)
        self.retval = retval

    def is_jump(self, node):
        return isinstance(node, gast.Return)

    def replace(self, node):
        value = node.value if node.value is not None else templates.literal(None)
        assign = gast.Assign(targets=[templates.name(self.retval, gast.Store())],
                             value=value, type_comment=None)
        templates.set_location(assign, node)
        return [assign, jumps.flag_set(self.flag, True, node)]

    def enter_loop(self, node):
        return True

    def on_loop(self, node):
        self.flag_read = True
        add_loop_test(node, not_flag(self.flag))


def _is_docstring(node) -> bool:
    return (isinstance(node, gast.Expr) and isinstance(node.value, gast.Constant)
            and isinstance(node.value.value, str))


def _is_return(node):
    return isinstance(node, gast.Return)


def _needs_lowering(body) -> bool:
    """Whether any `return` sits inside a compound statement."""
    for node in body:
        if isinstance(node, (gast.FunctionDef, gast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if block and jumps.contains(block, _is_return, enter_loops=True):
                return True
    return False


class _Transformer(Converter):
    visit_ClassDef = Converter.generic_visit  # class-level statements too


    def visit_FunctionDef(self, node: gast.FunctionDef):
        self.generic_visit(node)  # nested functions first; their returns are theirs
        if not _needs_lowering(node.body):
            return node
        jump = _Return(self.ctx.namer.new("did_return", Role.RETURN_FLAG),
                       self.ctx.namer.new("retval", Role.RETURN_VALUE))
        # a path that ends in `raise` returns nothing, but does not fall off the end
        ends = jumps.never_completes(node.body)
        body, _, always = jumps.lower(node.body, jump)
        prologue = []
        if jump.flag_read:
            prologue.append(jumps.flag_set(jump.flag, False, node))
        else:
            body = jumps.drop_unread_flags(body, jump.flag)
        if not always and not ends:
            init = gast.Assign(targets=[templates.name(jump.retval, gast.Store())],
                               value=templates.literal(None), type_comment=None)
            templates.set_location(init, node)
            prologue.append(init)
        elif jump.flag_read or not always:
            prologue.extend(_INIT_UNDEFINED.substitute(node, RETVAL=jump.retval))
        ret = gast.Return(value=templates.name(jump.retval))
        templates.set_location(ret, node.body[-1])
        docstring = body[:1] if _is_docstring(body[0]) else []
        node.body = docstring + prologue + body[len(docstring):] + [ret]
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
