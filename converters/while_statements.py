"""Lowers `while` loops to `ag__.while_stmt`.

    while i < n:            ->   def loop_test(acc, i):
        acc = acc + x[i]             return i < n
        i = i + 1                def loop_body(acc, i):
                                     acc = acc + x[i]
                                     i = i + 1
                                     return (acc, i)
                                 (acc, i) = ag__.while_stmt(loop_test, loop_body, (acc, i), names=('acc', 'i'))

The loop carries exactly the names its body modifies that are live at the
loop's head: read by the test, by a later iteration, or after the loop.
Temporaries the body assigns before reading are local to ``loop_body``.
``autograph.set_loop_options(maximum_iterations=N)`` as the body's first
statement becomes ``opts={'maximum_iterations': N}``.
"""

from __future__ import annotations

import gast

from autograph import anno, templates
from autograph.analysis import Analysis, activity
from autograph.anno import Anno
from autograph.context import Context
from .if_statements import FunctionScopes, mark_generated, shared_cells, state_init

NODES = (gast.While,)  # the pass is skipped when the tree has none
REQUIRES = (Analysis.SCOPES, Analysis.LIVENESS, Analysis.DEFINITIONS)

_FUNCS = templates.Template("""
    def TEST_FN(PARAMS):
        SHARED
        return TEST
    def BODY_FN(PARAMS):
        BODY
        return STATE
""")
_CALL = templates.Template(
    "STATE = ag__.while_stmt(TEST_FN, BODY_FN, INIT, names=NAMES)")
_CALL_OPTS = templates.Template(
    "STATE = ag__.while_stmt(TEST_FN, BODY_FN, INIT, names=NAMES, opts=OPTS)")
_CALL_NO_STATE = templates.Template(
    "ag__.while_stmt(TEST_FN, BODY_FN, (), names=())")


def loop_options(body: list[gast.stmt]):
    """Splits a leading ``set_loop_options(...)`` call off ``body``."""
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Call):
        func = body[0].value.func
        name = func.attr if isinstance(func, gast.Attribute) else getattr(func, "id", None)
        if name == "set_loop_options":
            call = body[0].value
            opts = gast.Dict(keys=[templates.literal(k.arg) for k in call.keywords],
                             values=[k.value for k in call.keywords])
            return body[1:] or [gast.Pass()], opts
    return body, None


def carried(node, locals_: frozenset, extra_reads=frozenset()) -> tuple[str, ...]:
    modified = anno.get(node, Anno.BODY_SCOPE).modified & locals_
    head = anno.get(node, Anno.LIVE_OUT) | anno.get(node, Anno.BODY_LIVE_IN) | extra_reads
    return tuple(sorted(modified & head))


def cell_params(state, captured, namer, origin):
    """Loop function parameters; captured names arrive as copies put into their cells."""
    copies = {n: namer.new(n) for n in state if n in captured}
    params = tuple(copies.get(n, n) for n in state)
    return params, shared_cells(tuple(copies), {n: copies[n] for n in copies}, origin)


class _Transformer(FunctionScopes):
    def visit_While(self, node: gast.While):
        node.body = self._block(node.body)
        assert not node.orelse, "the break pass moves loop `else:` clauses out"
        body, opts = loop_options(node.body)
        state = carried(node, self.locals, activity.expression_scope(node.test).reads)
        namer = self.ctx.namer
        test_fn, body_fn = namer.new("loop_test"), namer.new("loop_body")
        params, shared = cell_params(state, self.captured, namer, node)
        stmts = mark_generated(_FUNCS.substitute(
            node, TEST_FN=test_fn, BODY_FN=body_fn, PARAMS=params, STATE=state, TEST=node.test,
            SHARED=shared or [gast.Pass()], BODY=shared + body))
        if not shared:  # no `pass` line in the generated test function
            stmts[0].body = stmts[0].body[1:]
        init = state_init(state, anno.get(node, Anno.DEFINED_IN), node)
        self.ctx.maybe_undefined.update(set(state) - anno.get(node, Anno.DEFINED_IN))
        common = dict(TEST_FN=test_fn, BODY_FN=body_fn)
        if not state and opts is None:
            return stmts + _CALL_NO_STATE.substitute(node, **common)
        names = templates.literal(state)
        if opts is None:
            return stmts + _CALL.substitute(node, STATE=state, INIT=init, NAMES=names, **common)
        return stmts + _CALL_OPTS.substitute(node, STATE=state, INIT=init, NAMES=names,
                                             OPTS=opts, **common)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
