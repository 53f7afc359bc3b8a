"""Lowers `for` loops to `ag__.for_stmt`.

    for i in range(n):      ->   def loop_body(i, y):
        y = y * 0.99 + i             y = y * 0.99 + i
                                     return (y,)
                                 (y,) = ag__.for_stmt(ag__.range_(n), loop_body, (y,), names=('y',))

The loop target is the body's first parameter; the carried names follow, as
for `while`. A target that is itself live after the loop (Python keeps the
last value) is carried too, assigned from a fresh ``itr`` parameter.
``range``, ``enumerate``, ``zip`` and ``reversed`` in the iterable become the
runtime's ``range_``, ``enumerate_``, ``zip_`` and ``reversed_``, which
``for_stmt`` can stage as one ``lax.scan`` or ``lax.while_loop``. A test left
by the `break`/`return` passes (``Anno.EXTRA_TEST``) becomes
``extra_test=loop_test``. A loop whose body uses its index as a Python
value (``Anno.PYTHON_INDEX``, see ``index_uses``) gets ``python_index=`` with
the reason: ``for_stmt`` then runs it as Python; one whose body uses a name it
assigns so (``Anno.PYTHON_STATE``) gets ``python_state=``.
"""

from __future__ import annotations

import gast

from autograph import anno, templates
from autograph.analysis import Analysis, activity, carried
from autograph.anno import Anno
from autograph.context import Context
from autograph.scopes import FunctionScopes
from autograph.templates import (
    cell_params,
    mark_generated,
    shared_cells,
    state_init,
    with_returns,
)

NODES = (gast.For,)  # the pass is skipped when the tree has none
REQUIRES = (Analysis.SCOPES, Analysis.LIVENESS, Analysis.DEFINITIONS)

_ITERABLES = {"range": "range_", "enumerate": "enumerate_", "zip": "zip_",
              "reversed": "reversed_"}

_BODY = templates.Template("""
    def BODY_FN(ITER, PARAMS):
        BODY
        return STATE
""")
_TEST = templates.Template("""
    def TEST_FN(PARAMS):
        SHARED
        return TEST
""")
_CALL = templates.Template("STATE = ag__.for_stmt(ITERABLE, BODY_FN, INIT, names=NAMES)")
_CALL_TEST = templates.Template(
    "STATE = ag__.for_stmt(ITERABLE, BODY_FN, INIT, names=NAMES, extra_test=TEST_FN)")
_CALL_NO_STATE = templates.Template("ag__.for_stmt(ITERABLE, BODY_FN, (), names=())")


def with_plan(stmts: list[gast.stmt], node: gast.For | gast.While,
              call: str = "for_stmt") -> list[gast.stmt]:
    """Adds ``python_index=`` and ``python_state=`` (see ``index_uses``) to the
    ``call`` (``for_stmt`` or ``while_stmt``) in ``stmts``.

    Each ``python_state=`` entry is ``(position, attributes, why)``: the position
    among the loop's ``names`` of the variable, or of the object an attribute
    chain (``self.n``) starts at, or else the free variable that object is (see
    ``runtime.loop_forms.python_loops.NumberUse``). A variable the loop does not
    carry is assigned before each use in every iteration, and needs none.
    """
    why = anno.get(node, Anno.PYTHON_INDEX)
    uses = anno.get(node, Anno.PYTHON_STATE)
    if why or uses:
        for n in gast.walk(gast.Module(body=stmts, type_ignores=[])):
            if (isinstance(n, gast.Call) and isinstance(n.func, gast.Attribute)
                    and n.func.attr == call):
                if why:
                    n.keywords.append(gast.keyword(arg="python_index",
                                                   value=templates.literal(why)))
                entries = _number_uses(uses or (), _names(n))
                if entries:
                    n.keywords.append(gast.keyword(arg="python_state",
                                                   value=templates.literal(entries)))
    return stmts


def _names(call: gast.Call) -> tuple[str, ...]:
    """The ``names=`` a loop call gives its variables, in the order of its state."""
    for k in call.keywords:
        if k.arg == "names" and isinstance(k.value, gast.Tuple):
            return tuple(e.value for e in k.value.elts if isinstance(e, gast.Constant))
    return ()


def _number_uses(uses, names: tuple[str, ...]) -> tuple:
    entries = []
    for label, why in uses:
        root, *path = label.split(".")
        if root in names:
            entries.append((names.index(root), tuple(path), why))
        elif path:
            entries.append((root, tuple(path), why))
    return tuple(entries)


class Lowering(FunctionScopes):
    def _iterable(self, node: gast.expr) -> gast.expr:
        if (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
                and node.func.id in _ITERABLES and node.func.id not in self.locals):
            node.func = gast.copy_location(
                gast.Attribute(value=templates.name("ag__"), attr=_ITERABLES[node.func.id],
                               ctx=gast.Load()), node.func)
            node.args = [self._iterable(a) for a in node.args]
        return node

    def visit_For(self, node: gast.For):
        # names are handed out before the body is lowered: outer loops first
        namer = self.ctx.namer
        test_fn = namer.new("loop_test") if anno.get(node, Anno.EXTRA_TEST) is not None else None
        body_fn = namer.new("loop_body")
        node.body = self._block_in_loop(node)
        assert not node.orelse, "the break pass moves loop `else:` clauses out"
        extra = anno.get(node, Anno.EXTRA_TEST)
        # (with the target, when it is live after the loop: Python keeps its last value)
        state = carried.loop_state(node, self.block_locals).params
        target_names = activity.expression_scope(node.target).kills
        body = node.body
        captured_target = sorted((target_names & self.captured) - set(state))
        if (isinstance(node.target, gast.Name) and node.target.id not in state
                and not captured_target):
            iterate = node.target.id
        else:
            iterate = namer.new("itr")
            assign = gast.Assign(targets=[node.target], value=templates.name(iterate),
                                 type_comment=None)
            templates.set_location(assign, node.target)
            body = [assign] + body
        params, shared = cell_params(state, self.captured | self.in_try, namer, node)
        if captured_target:  # Python's late binding: closures see the loop's last item
            if shared:
                shared[0].names.extend(captured_target)
            else:
                shared = shared_cells(captured_target, origin=node)
        body = shared + body
        stmts = mark_generated(
            _BODY.substitute(node, BODY_FN=body_fn, ITER=iterate, PARAMS=params, STATE=state,
                             BODY=body))
        iterable = self._iterable(node.iter)
        if not state and extra is None:
            return stmts + with_plan(self.with_dead_lists(
                _CALL_NO_STATE.substitute(node, ITERABLE=iterable, BODY_FN=body_fn), node), node)
        init = state_init(state, anno.get(node, Anno.DEFINED_IN), node)
        self.ctx.maybe_undefined.update(set(state) - anno.get(node, Anno.DEFINED_IN))
        common = dict(STATE=state, ITERABLE=iterable, BODY_FN=body_fn, INIT=init,
                      NAMES=templates.literal(state))
        if extra is None:
            return stmts + with_plan(self.with_dead_lists(with_returns(
                _CALL.substitute(node, **common), state, self.ctx.namer.roles), node), node)
        test_params, test_shared = cell_params(state, self.captured | self.in_try, namer, node)
        test = _TEST.substitute(node, TEST_FN=test_fn, PARAMS=test_params, TEST=extra,
                                SHARED=test_shared or [gast.Pass()])
        if not test_shared:
            test[0].body = test[0].body[1:]
        stmts = mark_generated(test) + stmts  # the test first, as for `while`
        return stmts + with_plan(self.with_dead_lists(with_returns(
            _CALL_TEST.substitute(node, TEST_FN=test_fn, **common), state,
            self.ctx.namer.roles), node), node)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return Lowering(ctx).visit(node)
