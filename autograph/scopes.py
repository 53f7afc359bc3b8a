"""Converter bases that know the local names of the function they are in."""

from __future__ import annotations

import gast

from autograph import anno, templates
from autograph.analysis import activity, dead_lists, liveness
from autograph.anno import Anno
from autograph.context import Context
from autograph.transformer import Converter


class LocalNamesTransformer(Converter):
    """Visits everything; ``self.locals`` are the current function's local names.

    Passes use it to tell a built-in (``print``, ``range``) from a local
    variable of the same name. Methods of local classes are visited, class
    bodies are not.
    """

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self._locals: list[frozenset] = []

    @property
    def locals(self) -> frozenset:
        return self._locals[-1] if self._locals else frozenset()

    @property
    def depth(self) -> int:
        """How many functions enclose the node being visited (1: the converted one)."""
        return len(self._locals)

    def visit_FunctionDef(self, node):
        self._locals.append(activity.function_locals(node))
        try:
            return self.generic_visit(node)
        finally:
            self._locals.pop()


class FunctionScopes(Converter):
    """A transformer that knows the local names of the function it is in."""

    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self._locals: list[frozenset] = []
        self._captured: list[frozenset] = []
        self._write_only: list[frozenset] = []
        self._in_try: list[frozenset] = []
        # the loops around the statement being lowered, innermost last (in this function)
        self.enclosing_loops: list[gast.stmt] = []

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

    @property
    def in_try(self) -> frozenset:
        """Names of the current function that the body of a ``try`` with a handler or
        a ``finally:`` assigns.

        A generated branch or loop function that carries one out updates it in place
        too (``nonlocal``): a handler (or the ``finally:``) that an exception raised
        in the block reaches sees what the block assigned before it, as in Python,
        where a loop leaves a variable with what the iterations before the exception
        assigned. (Only names the block carries out: the function binds those.)
        """
        return self._in_try[-1]

    @property
    def block_locals(self) -> frozenset:
        """The local names a lowered block may pass around: all but the lists the
        function only appends to (``dead_lists``), which no block needs to carry."""
        return self._locals[-1] - self._write_only[-1]

    def with_dead_lists(self, stmts: list[gast.stmt], block: gast.stmt) -> list[gast.stmt]:
        """Adds ``dead=('hist', ...)`` to the operator call ending ``stmts`` (the
        lowered ``block``): the lists the function only appends to that the block
        appends to. The block does not carry them; the runtime's watch of what a
        staged block changes outside its state lets their growth pass."""
        used = dead_lists.appended_in(block, self._write_only[-1])
        call = stmts[-1].value if stmts else None
        if used and isinstance(call, gast.Call):
            call.keywords.append(gast.keyword(arg="dead", value=templates.literal(used)))
        return stmts

    def visit_FunctionDef(self, node):
        if anno.get(node, Anno.GENERATED) and self._captured:
            # a branch or loop body works on its user function's variables, whose
            # captured set already counts the closures defined anywhere inside it
            captured = self._captured[-1]
            write_only = self._write_only[-1]
            in_try = self._in_try[-1]
        else:
            # (the user's variables: a return value or a jump flag the passes made is
            # read only on the path that completes)
            in_try = frozenset(n for n in _assigned_in_try(node)
                               if n not in self.ctx.namer.roles)
            write_only = dead_lists.write_only_lists(node)
            captured = anno.get(node, Anno.CLOSURE_READS)
            if captured is None:
                captured = liveness.closure_reads(node)
        self._locals.append(activity.function_locals(node))
        self._captured.append(captured)
        self._write_only.append(write_only)
        self._in_try.append(in_try)
        loops = self.enclosing_loops
        if not anno.get(node, Anno.GENERATED):
            self.enclosing_loops = []  # a user function of its own: its loops only
        try:
            return self.generic_visit(node)
        finally:
            self._locals.pop()
            self._captured.pop()
            self._write_only.pop()
            self._in_try.pop()
            self.enclosing_loops = loops

    def _block_in_loop(self, node):
        """Lowers a loop's body, with ``node`` among the enclosing loops."""
        self.enclosing_loops.append(node)
        try:
            return self._block(node.body)
        finally:
            self.enclosing_loops.pop()

    def generic_visit(self, node):
        # Statements live only in blocks; expressions hold none (lambdas
        # cannot), so only blocks are walked.
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and block and isinstance(block[0], gast.stmt):
                # a block of only a dropped flag (`except KeyError: continue`) is a `pass`
                # (an `else:` may go; a `finally:` only where a handler stays)
                lowered = self._block(block)
                keep = field == "body" or (field == "finalbody" and not node.handlers)
                setattr(node, field, lowered or ([gast.Pass()] if keep else []))
        for handler in getattr(node, "handlers", None) or ():
            handler.body = self._block(handler.body) or [gast.Pass()]
        return node

    def _block(self, stmts):
        out = []
        for s in stmts:
            flag = anno.get(s, Anno.FLAG_SET)
            if flag is not None and flag not in anno.get(s, Anno.LIVE_OUT, (flag,)):
                continue  # a jump flag set where nothing reads it any more
            r = self.visit(s)
            if r is None:
                continue
            out.extend(r if isinstance(r, list) else [r])
        return out


def _assigned_in_try(node: gast.FunctionDef) -> frozenset:
    """The local names of ``node`` that the body of one of its `try` statements with a
    handler or a ``finally:`` assigns (not in a nested function)."""
    found = {n.id for t in activity.walk_own(node.body)
             if type(t) is gast.Try and (t.handlers or t.finalbody)
             for n in activity.walk_own(t.body)
             if type(n) is gast.Name and type(n.ctx) is gast.Store}
    return frozenset(found) & activity.function_locals(node) if found else frozenset()
