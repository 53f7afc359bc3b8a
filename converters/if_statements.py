"""Lowers `if` statements to `ag__.if_stmt`.

    if x > 0:                   ->   def if_true():
        y = x * 2.0                      y = x * 2.0
    else:                                return (y,)
        y = -x                       def if_false():
                                         y = -x
                                         return (y,)
                                     (y,) = ag__.if_stmt(x > 0, if_true, if_false, (), names=('y',))

Each branch becomes a function. Its outputs are the names the `if` modifies
that are live after it; its parameters are the modified names a branch reads
before (or without) assigning them, passed in as the tuple after the branch
functions, outputs first and in their order: the runtime finds the value of
the j-th output at position j, so an output the branches do not read is a
parameter too where one they read (or any other input) comes after it. A
name no path has bound yet, or that the branches do not read, is passed as
``ag__.Undefined('y')`` so the runtime can say which variable a branch left
unset. With no `else`, ``None`` stands for a branch that hands its
parameters back unchanged. When
outputs include flags of lowered jumps (``did_return``), ``exits=`` gives
their positions among the outputs: a variable left unassigned on a path that
has jumped is never read. ``returns=k`` says that the k-th output holds the
function's return value (see ``templates.with_returns``).
"""

from __future__ import annotations

import gast

from autograph import anno, templates
from autograph.analysis import Analysis, carried
from autograph.anno import Anno
from autograph.context import Context
from autograph.scopes import FunctionScopes
from autograph.templates import mark_generated, shared_cells, state_init, with_returns

NODES = (gast.If,)  # the pass is skipped when the tree has none
REQUIRES = (Analysis.SCOPES, Analysis.LIVENESS, Analysis.DEFINITIONS)

_BRANCH = templates.Template("""
    def NAME(PARAMS):
        BODY
        return OUTPUTS
""")
_CALL = templates.Template("OUTPUTS = ag__.if_stmt(TEST, TRUE_FN, FALSE_FN, INIT, names=NAMES)")
_CALL_EXITS = templates.Template(
    "OUTPUTS = ag__.if_stmt(TEST, TRUE_FN, FALSE_FN, INIT, names=NAMES, exits=EXITS)")
_CALL_NO_OUTPUTS = templates.Template("ag__.if_stmt(TEST, TRUE_FN, FALSE_FN, INIT, names=())")


class Lowering(FunctionScopes):
    def visit_If(self, node: gast.If):
        # names are handed out before the branches are lowered: outer blocks first
        true_fn = self.ctx.namer.new("if_true")
        false_fn = self.ctx.namer.new("if_false") if node.orelse else None
        node.body = self._block(node.body)
        node.orelse = self._block(node.orelse)
        state = carried.branch_state(node, self.block_locals)
        outputs = state.outputs
        modified = set(state.params) | set(state.outputs) | set(state.local)
        namer = self.ctx.namer
        # A name a closure reads lives in a cell the branches update in place (and so
        # does an output a handler may read, see `in_try`); each branch starts by
        # resetting it from a copy, since a traced `if` traces both.
        captured = tuple(sorted((modified & self.captured) | (set(outputs) & self.in_try)))
        copies = {n: namer.new(n) for n in captured}
        params, unread = _outputs_first(
            outputs, tuple(p for p in state.params if p not in captured) + captured)
        param_names = tuple(copies.get(p, p) for p in params)
        stmts = _BRANCH.substitute(node, NAME=true_fn, PARAMS=param_names,
                                   BODY=shared_cells(captured, copies, node) + node.body,
                                   OUTPUTS=outputs)
        if node.orelse or captured:
            false_fn = false_fn or namer.new("if_false")
            stmts += _BRANCH.substitute(node, NAME=false_fn, PARAMS=param_names,
                                        BODY=shared_cells(captured, copies, node) + node.orelse,
                                        OUTPUTS=outputs)
            false_ref = templates.name(false_fn)
        else:
            false_ref = templates.literal(None)
        init = state_init(params, anno.get(node, Anno.DEFINED_IN) - unread, node)
        # only what goes in as ag__.Undefined can come out unassigned (an output the
        # branches do not read is assigned on both)
        self.ctx.maybe_undefined.update(
            (set(params) & set(outputs)) - anno.get(node, Anno.DEFINED_IN) - unread)
        # `exits=` matters only where an output may still be unbound (see the docstring)
        unbound = (set(outputs) - anno.get(node, Anno.DEFINED_IN)) | (
            set(outputs) & self.ctx.maybe_undefined)
        for loop in self.enclosing_loops:
            # carried from one iteration to the next, and not bound before the loop:
            # bound by an earlier iteration, or (on the first) not yet
            carried_in = (anno.get(loop, Anno.BODY_LIVE_IN) or frozenset()) - anno.get(
                loop, Anno.DEFINED_IN)
            unbound |= set(outputs) & carried_in
        # positions of the jump flags among the outputs
        exits = tuple(k for k, o in enumerate(outputs) if self.ctx.is_jump_flag(o)) \
            if unbound else ()
        if outputs:
            args = dict(OUTPUTS=outputs, TEST=node.test, TRUE_FN=true_fn, FALSE_FN=false_ref,
                        INIT=init, NAMES=templates.literal(outputs))
            if exits:
                stmts += _CALL_EXITS.substitute(node, EXITS=templates.literal(exits), **args)
            else:
                stmts += _CALL.substitute(node, **args)
            stmts = with_returns(stmts, outputs, self.ctx.namer.roles)
        else:
            stmts += _CALL_NO_OUTPUTS.substitute(node, TEST=node.test, TRUE_FN=true_fn,
                                                 FALSE_FN=false_ref, INIT=init)
        return mark_generated(self.with_dead_lists(stmts, node))


def _outputs_first(outputs: tuple[str, ...],
                   inputs: tuple[str, ...]) -> tuple[tuple[str, ...], frozenset[str]]:
    """The branches' parameters, and those among them the branches do not read.

    ``ag__.if_stmt`` takes the value of ``outputs[j]`` at position ``j`` of its
    inputs, and the other inputs after all the outputs: so each output up to
    the last one the branches read (all of them, where other inputs follow)
    is a parameter, one they do not read passed as ``ag__.Undefined``.
    """
    others = tuple(p for p in inputs if p not in outputs)
    if others:
        lead = outputs
    else:
        lead = outputs[:max((j + 1 for j, o in enumerate(outputs) if o in inputs), default=0)]
    return lead + others, frozenset(lead) - frozenset(inputs)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return Lowering(ctx).visit(node)
