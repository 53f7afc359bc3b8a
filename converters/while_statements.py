"""Lowers `while` loops to `ag__.while_stmt`.

    while i < n:            ->   def loop_test(acc, i):
        acc = acc + x[i]             return i < n
        i = i + 1                def loop_body(acc, i):
                                     acc = acc + x[i]
                                     i = i + 1
                                     return (acc, i)
                                 (acc, i) = ag__.while_stmt(loop_test, loop_body, (acc, i), names=('acc', 'i'),
                                                            bound=ag__.Bound(1, ag__.operator.lt, lambda: n, 1))

The loop carries exactly the names its body modifies that are live at the
loop's head: read by the test, by a later iteration, or after the loop.
Temporaries the body assigns before reading are local to ``loop_body``.
``autograph.set_loop_options(maximum_iterations=N)`` as the body's first
statement (in any spelling: ``set_loop_options(...)`` imported from
autograph, ``ag.set_loop_options(...)``, an alias) becomes
``opts={'maximum_iterations': N}``.

A counter that bounds the loop is passed on as ``bound=ag__.Bound(position,
op, limit, step)``, with the counter's position in the state and the
comparison as a function of ``operator``: a conjunct of the test compares a
carried name with a limit the body does not assign (``i < 8``, ``k <= n_max``,
``count != 100``), and the body moves that name by a constant step on every
path (one ``i += 1`` among its top-level statements, no other assignment to
``i``). When reverse-mode differentiation meets the loop, ``while_stmt`` uses
it to stage the loop as the bounded, differentiable form (a masked ``lax.scan``)::

    while err > tol and i < 50:   ->   ... = ag__.while_stmt(loop_test, loop_body, (err, i, x),
        x = step(x)                          names=('err', 'i', 'x'),
        err = residual(x)                    bound=ag__.Bound(1, ag__.operator.lt,
        i += 1                                                    lambda: 50, 1))
"""

from __future__ import annotations

import gast

from autograph import anno, templates
from autograph.analysis import Analysis, carried
from autograph.anno import Anno
from autograph.context import Context
from autograph.directive_calls import Directive, Resolver, dotted
from autograph.scopes import FunctionScopes
from autograph.templates import cell_params, mark_generated, state_init, with_returns

from .for_statements import with_plan

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
_CALL_BOUND = templates.Template(
    "STATE = ag__.while_stmt(TEST_FN, BODY_FN, INIT, names=NAMES, bound=BOUND)")
# the counter's comparison, as the function of Python's `operator` module
_OPS = {gast.Lt: "lt", gast.LtE: "le", gast.Gt: "gt", gast.GtE: "ge", gast.NotEq: "ne"}
_FLIPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "ne": "ne"}
_BOUNDS = {op: templates.Template(f"ag__.Bound(INDEX, ag__.operator.{op}, lambda: LIMIT, STEP)")
           for op in _OPS.values()}


def _conjuncts(test: gast.expr):
    if isinstance(test, gast.BoolOp) and isinstance(test.op, gast.And):
        for value in test.values:
            yield from _conjuncts(value)
    else:
        yield test


def step_of(stmt: gast.stmt, name: str) -> int | None:
    """The constant ``c`` of ``name += c`` / ``name -= c`` / ``name = name + c``, or None."""
    def const(node):
        if (isinstance(node, gast.Constant) and type(node.value) is int):
            return node.value
        return None
    if (isinstance(stmt, gast.AugAssign) and isinstance(stmt.target, gast.Name)
            and stmt.target.id == name and isinstance(stmt.op, (gast.Add, gast.Sub))):
        c = const(stmt.value)
        return None if c is None else (c if isinstance(stmt.op, gast.Add) else -c)
    if (isinstance(stmt, gast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], gast.Name) and stmt.targets[0].id == name
            and isinstance(stmt.value, gast.BinOp) and isinstance(stmt.value.op, (gast.Add,
                                                                                  gast.Sub))
            and isinstance(stmt.value.left, gast.Name) and stmt.value.left.id == name):
        c = const(stmt.value.right)
        return None if c is None else (c if isinstance(stmt.value.op, gast.Add) else -c)
    return None


def _invariant(limit: gast.expr, body) -> bool:
    """A limit the body does not assign: a constant, a name or an attribute chain of one.

    (``while_stmt`` checks again, after tracing the body, that a Python-int
    limit kept its value.)
    """
    if isinstance(limit, gast.Constant):
        return type(limit.value) is int
    chain = dotted(limit)
    if chain is None:
        return False
    for node in gast.walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(getattr(node, "ctx", None), (gast.Store, gast.Del)):
            target = dotted(node)
            if target is not None and (target == chain[:len(target)] if isinstance(
                    node, gast.Name) else target == chain):
                return False
    return True


def counter_bound(node: gast.While, body: list[gast.stmt], state) -> gast.expr | None:
    """``ag__.Bound(position, op, lambda: limit, step)`` for a counter that bounds the
    loop (``position``: where it is in ``state``), or None."""
    for conj in _conjuncts(node.test):
        if not (isinstance(conj, gast.Compare) and len(conj.ops) == 1
                and type(conj.ops[0]) in _OPS):
            continue
        op = _OPS[type(conj.ops[0])]
        left, right = conj.left, conj.comparators[0]
        if isinstance(left, gast.Name) and left.id in state:
            name, limit = left.id, right
        elif isinstance(right, gast.Name) and right.id in state:
            name, limit, op = right.id, left, _FLIPPED[op]
        else:
            continue
        if not _invariant(limit, body):
            continue
        known = anno.get(node, Anno.COUNTER_STEPS) or {}  # see `loop_counters`
        if name in known:
            found = [known[name]]
        else:
            steps = [step_of(stmt, name) for stmt in body]
            stores = sum(1 for n in gast.walk(gast.Module(body=body, type_ignores=[]))
                         if isinstance(n, gast.Name) and n.id == name
                         and isinstance(n.ctx, (gast.Store, gast.Del)))
            found = [c for c in steps if c is not None]
            if len(found) != 1 or stores != 1 or found[0] == 0:
                continue
        return _BOUNDS[op].substitute_expr(node, INDEX=templates.literal(state.index(name)),
                                           LIMIT=limit, STEP=templates.literal(found[0]))
    return None
_CALL_NO_STATE = templates.Template(
    "ag__.while_stmt(TEST_FN, BODY_FN, (), names=())")


def loop_options(body: list[gast.stmt], directives: Resolver):
    """Splits a leading ``set_loop_options(...)`` call off ``body``.

    The call is found by what its function refers to (``directives``), in any
    spelling: ``set_loop_options``, ``ag.set_loop_options``, an alias.
    """
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Call):
        if directives.of(body[0].value.func) is Directive.LOOP_OPTIONS:
            call = body[0].value
            opts = gast.Dict(keys=[templates.literal(k.arg) for k in call.keywords],
                             values=[k.value for k in call.keywords])
            return body[1:] or [gast.Pass()], opts
    return body, None


class Lowering(FunctionScopes):
    def visit_While(self, node: gast.While):
        # names are handed out before the body is lowered: outer loops first
        test_fn, body_fn = self.ctx.namer.new("loop_test"), self.ctx.namer.new("loop_body")
        node.body = self._block_in_loop(node)
        assert not node.orelse, "the break pass moves loop `else:` clauses out"
        body, opts = loop_options(node.body, self.ctx.directives)
        state = carried.loop_state(node, self.block_locals).params
        namer = self.ctx.namer
        params, shared = cell_params(state, self.captured | self.in_try, namer, node)
        stmts = mark_generated(_FUNCS.substitute(
            node, TEST_FN=test_fn, BODY_FN=body_fn, PARAMS=params, STATE=state, TEST=node.test,
            SHARED=shared or [gast.Pass()], BODY=shared + body))
        if not shared:  # no `pass` line in the generated test function
            stmts[0].body = stmts[0].body[1:]
        init = state_init(state, anno.get(node, Anno.DEFINED_IN), node)
        self.ctx.maybe_undefined.update(set(state) - anno.get(node, Anno.DEFINED_IN))
        common = dict(TEST_FN=test_fn, BODY_FN=body_fn)
        if not state and opts is None:
            return self.with_dead_lists(stmts + _CALL_NO_STATE.substitute(node, **common), node)
        names = templates.literal(state)
        bound = counter_bound(node, body, state) if opts is None else None
        if bound is not None:
            call = _CALL_BOUND.substitute(node, STATE=state, INIT=init, NAMES=names, BOUND=bound,
                                          **common)
        elif opts is None:
            call = _CALL.substitute(node, STATE=state, INIT=init, NAMES=names, **common)
        else:
            call = _CALL_OPTS.substitute(node, STATE=state, INIT=init, NAMES=names, OPTS=opts,
                                         **common)
        return stmts + with_plan(self.with_dead_lists(
            with_returns(call, state, self.ctx.namer.roles), node), node, "while_stmt")


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return Lowering(ctx).visit(node)
