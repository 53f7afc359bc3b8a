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
functions. A name no path has bound yet is passed as ``ag__.Undefined('y')``
so the runtime can say which variable a branch left unset. With no `else`,
``None`` stands for a branch that hands its parameters back unchanged. When
outputs include flags of lowered jumps (``did_return``), ``exits=`` names
them: a variable left unassigned on a path that has jumped is never read.
"""

from __future__ import annotations

import gast

from autograph import anno, templates
from autograph.analysis import Analysis, activity, liveness
from autograph.anno import Anno
from autograph.context import Context
from autograph.transformer import Converter

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


def state_init(names, defined, origin) -> gast.expr:
    """The tuple of current values of ``names``; unbound ones as ``ag__.Undefined``."""
    elts = []
    for n in names:
        if n in defined:
            elts.append(templates.name(n))
        else:
            elts.append(_UNDEFINED.substitute_expr(origin, NAME=templates.literal(n)))
    node = gast.Tuple(elts=elts, ctx=gast.Load())
    templates.set_location(node, origin)
    return node


_UNDEFINED = templates.Template("ag__.Undefined(NAME)")


def shared_cells(names, copies=None, origin=None) -> list[gast.stmt]:
    """``nonlocal`` for ``names`` (and ``name = copy`` for those passed in as copies)."""
    if not names:
        return []
    stmts = [gast.Nonlocal(names=list(names))]
    for name, copy in (copies or {}).items():
        stmts.append(gast.Assign(targets=[templates.name(name, gast.Store())],
                                 value=templates.name(copy), type_comment=None))
    for stmt in stmts:
        templates.set_location(stmt, origin)
    return stmts


def mark_generated(stmts):
    """Marks the functions among ``stmts`` as made by a converter (see liveness)."""
    for s in stmts:
        if isinstance(s, gast.FunctionDef):
            anno.set(s, Anno.GENERATED, True)
    return stmts


class FunctionScopes(Converter):
    """A transformer that knows the local names of the function it is in."""

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self._locals = []
        self._captured = []

    @property
    def locals(self) -> frozenset:
        return self._locals[-1]

    @property
    def captured(self) -> frozenset:
        """Names of the current function that a user closure reads.

        Generated branch and loop functions must update them in place
        (``nonlocal``), or a closure called inside the block would see the
        value from before it.
        """
        return self._captured[-1]

    def visit_FunctionDef(self, node):
        if anno.get(node, Anno.GENERATED) and self._captured:
            # a branch or loop body works on its user function's variables, whose
            # captured set already counts the closures defined anywhere inside it
            captured = self._captured[-1]
        else:
            captured = anno.get(node, Anno.CLOSURE_READS)
            if captured is None:
                captured = liveness.closure_reads(node)
        self._locals.append(activity.function_locals(node))
        self._captured.append(captured)
        try:
            return self.generic_visit(node)
        finally:
            self._locals.pop()
            self._captured.pop()

    def generic_visit(self, node):
        # Statements live only in blocks; expressions hold none (lambdas
        # cannot), so only blocks are walked.
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
                setattr(node, field, self._block(block))
        for handler in getattr(node, "handlers", None) or ():
            handler.body = self._block(handler.body)
        return node

    def _block(self, stmts):
        out = []
        for s in stmts:
            r = self.visit(s)
            if r is None:
                continue
            out.extend(r if isinstance(r, list) else [r])
        return out


class Lowering(FunctionScopes):
    def visit_If(self, node: gast.If):
        node.body = self._block(node.body)
        node.orelse = self._block(node.orelse)
        modified = (anno.get(node, Anno.BODY_SCOPE).modified
                    | anno.get(node, Anno.ORELSE_SCOPE).modified) & self.locals
        live_out = anno.get(node, Anno.LIVE_OUT)
        outputs = tuple(sorted(modified & live_out))
        branch_reads = anno.get(node, Anno.BODY_LIVE_IN) | anno.get(node, Anno.ORELSE_LIVE_IN)
        needed = modified & branch_reads
        params = (tuple(o for o in outputs if o in needed)
                  + tuple(sorted(needed - set(outputs))))
        namer = self.ctx.namer
        # A name a closure reads lives in a cell the branches update in place; each
        # branch starts by resetting it from a copy, since a traced `if` traces both.
        captured = tuple(sorted(modified & self.captured))
        copies = {n: namer.new(n) for n in captured}
        params = tuple(p for p in params if p not in captured) + captured
        param_names = tuple(copies.get(p, p) for p in params)
        true_fn = namer.new("if_true")
        stmts = _BRANCH.substitute(node, NAME=true_fn, PARAMS=param_names,
                                   BODY=shared_cells(captured, copies, node) + node.body,
                                   OUTPUTS=outputs)
        if node.orelse or captured:
            false_fn = namer.new("if_false")
            stmts += _BRANCH.substitute(node, NAME=false_fn, PARAMS=param_names,
                                        BODY=shared_cells(captured, copies, node) + node.orelse,
                                        OUTPUTS=outputs)
            false_ref = templates.name(false_fn)
        else:
            false_ref = templates.literal(None)
        init = state_init(params, anno.get(node, Anno.DEFINED_IN), node)
        # only what goes in as ag__.Undefined can come out unassigned
        self.ctx.maybe_undefined.update(
            (set(params) & set(outputs)) - anno.get(node, Anno.DEFINED_IN))
        # `exits=` matters only where an output may still be unbound (see the docstring)
        unbound = (set(outputs) - anno.get(node, Anno.DEFINED_IN)) | (
            set(outputs) & self.ctx.maybe_undefined)
        exits = tuple(o for o in outputs if o in self.ctx.jump_flags) if unbound else ()
        if outputs:
            args = dict(OUTPUTS=outputs, TEST=node.test, TRUE_FN=true_fn, FALSE_FN=false_ref,
                        INIT=init, NAMES=templates.literal(outputs))
            if exits:
                stmts += _CALL_EXITS.substitute(node, EXITS=templates.literal(exits), **args)
            else:
                stmts += _CALL.substitute(node, **args)
            returns = tuple(o for o in outputs if o in self.ctx.return_values)
            if returns:  # the role of the return value, for the runtime's messages
                call = stmts[-1].value
                call.keywords.append(gast.keyword(arg="returns",
                                                  value=templates.literal(returns)))
        else:
            stmts += _CALL_NO_OUTPUTS.substitute(node, TEST=node.test, TRUE_FN=true_fn,
                                                 FALSE_FN=false_ref, INIT=init)
        return mark_generated(stmts)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return Lowering(ctx).visit(node)
