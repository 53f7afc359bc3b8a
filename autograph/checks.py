"""Rejects syntax that cannot be converted faithfully, before any pass runs.

Each rejection is a ``ConversionError`` naming the construct, the user's
``file:line`` and a way out. Everything not rejected here is either
converted or keeps its plain Python meaning.
"""

from __future__ import annotations

import gast

from autograph import anno, errors
from autograph.analysis import activity
from autograph.anno import Anno
from autograph.directive_calls import Directive, Resolver

_CONTROL_FLOW = (gast.If, gast.For, gast.While, gast.Return, gast.Break, gast.Continue,
                 gast.Match)


# built-ins that read the calling frame's variables, each with how many arguments it
# takes while it still reads them (`eval(s)`, not `eval(s, env)`)
_FRAME_READERS = {"locals": 0, "vars": 0, "dir": 0, "eval": 1, "exec": 1}


class _Checker(gast.NodeVisitor):
    def __init__(self, filename: str, directives: Resolver, function=None):
        self.filename = filename
        self.directives = directives
        self.function = function
        self._bound: frozenset | None = None
        self.lifted: set[int] = set()  # the `and`/`or` that `walrus_operands` lifts

    def _reject(self, node, rule: str, fix: str, observed: str | None = None):
        raise errors.ConversionError(
            rule, observed=observed, fix=fix,
            location=errors.Location(self.filename, getattr(node, "lineno", 0)))

    def visit_ClassDef(self, node):
        for item in node.body:  # methods of local classes are converted with the function
            if isinstance(item, gast.FunctionDef):
                self.visit(item)

    def visit_FunctionDef(self, node):
        if runs_as_written(node, self.directives):
            return  # a nested function kept as the user wrote it (see `pipeline`)
        self.generic_visit(node)

    def visit_Yield(self, node):
        self._reject(node, "`yield` is not supported in converted functions",
                     "write the generator as a loop that fills a list, or mark it with "
                     "`@autograph.do_not_convert`")

    visit_YieldFrom = visit_Yield

    def _reserved(self, node, name: str | None):
        if name == "ag__":
            self._reject(node, "a variable named `ag__` is not supported in converted "
                               "functions", "rename the variable",
                         observed="`ag__` is the name converted code calls its runtime by")

    def visit_Name(self, node):
        if isinstance(node.ctx, (gast.Store, gast.Del, gast.Param)):  # bound here
            self._reserved(node, node.id)

    def visit_arg(self, node):
        self._reserved(node, node.arg)

    def visit_AsyncFunctionDef(self, node):
        self._reject(node, "`async def` is not supported in converted functions",
                     "convert a synchronous function")

    def visit_Await(self, node):
        self._reject(node, "`await` is not supported in converted functions",
                     "convert a synchronous function")

    visit_AsyncFor = visit_AsyncWith = visit_Await

    def _no_walrus(self, node, where: str):
        for child in gast.walk(node):
            if isinstance(child, gast.NamedExpr):
                self._reject(
                    child, f"`:=` in {where} is not supported in converted functions",
                    f"assign `{getattr(child.target, 'id', 'the value')}` in a statement of its "
                    f"own (before the loop and at the end of its body, for a `while` test)",
                    observed=f"`{getattr(child.target, 'id', '?')} := ...` would be bound inside "
                             f"a generated function and lost")

    def visit_While(self, node):
        if node.orelse:  # (without one, `walrus_operands` moves the test into the body)
            self._no_walrus(node.test, "the condition of a `while` loop with an `else:` clause")
        else:
            self._lifted(node.test)
        self._loop_body(node)

    def visit_For(self, node):
        self._loop_body(node)

    def _loop_body(self, node):
        # the loop's own options, if any, lead a `while` body; any other is misplaced
        for field, value in gast.iter_fields(node):
            if field == "body":
                start = 0
                if value and self._is_loop_options(value[0]):
                    if isinstance(node, gast.While):
                        start = 1
                        self.generic_visit(value[0].value)  # (its arguments)
                    else:
                        anno.set(value[0].value, Anno.MISPLACED_OPTIONS,
                                 "it leads the body of a `for` loop, whose trip count is "
                                 "known before it starts; only a `while` loop takes options")
                for stmt in value[start:]:
                    self.visit(stmt)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, gast.AST):
                        self.visit(item)
            elif isinstance(value, gast.AST):
                self.visit(value)

    def _is_loop_options(self, stmt) -> bool:
        return (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)
                and self.directives.of(stmt.value.func) is Directive.LOOP_OPTIONS)

    def visit_Call(self, node):
        self._frame_reader(node)
        if (self.directives.of(node.func) is Directive.LOOP_OPTIONS
                and not anno.has(node, Anno.MISPLACED_OPTIONS)):
            # converted all the same: the call raises when it runs (see `call_trees`)
            anno.set(node, Anno.MISPLACED_OPTIONS,
                     "it is not the first statement of a `while` body, so it configures no "
                     "loop (it applies to every iteration: it cannot sit inside an `if` or "
                     "after other statements)")
        self.generic_visit(node)

    def bound(self) -> frozenset:
        """The names the function binds (a local `eval` is not the built-in)."""
        if self._bound is None:
            fn = self.function
            self._bound = frozenset() if fn is None else frozenset(
                n.id for n in activity.walk(fn) if isinstance(n, gast.Name)
                and isinstance(n.ctx, (gast.Store, gast.Param))) | activity.param_names(fn.args)
        return self._bound

    def _frame_reader(self, node):
        # `locals()`, `vars()`, `dir()`, `eval(s)`, `exec(s)`: they read the running
        # function's own variables, which in converted code are those of the generated
        # functions each block becomes (and `ag__`)
        func = node.func
        if not isinstance(func, gast.Name) or func.id not in _FRAME_READERS:
            return
        if func.id in self.bound() or len(node.args) + len(node.keywords) > _FRAME_READERS[func.id]:
            return  # another function of that name, or given the variables to read
        self._reject(
            node, f"`{func.id}()` of the function's own variables is not supported in "
                  f"converted functions",
            "pass the values it needs explicitly (a dict, arguments), or mark the function "
            "`@autograph.do_not_convert`",
            observed=f"converted, each block runs as a function of its own, so `{func.id}` "
                     f"would see the generated functions' variables, not the ones you wrote")

    def _lifted(self, expr):
        # an `and`/`or` that is a statement's whole value or an `if` test (under any
        # `not`), and those among its operands: `walrus_operands` makes them statements
        while isinstance(expr, gast.UnaryOp) and isinstance(expr.op, gast.Not):
            expr = expr.operand
        if isinstance(expr, gast.BoolOp):
            self.lifted.add(id(expr))
            for value in expr.values:
                self._lifted(value)
        elif isinstance(expr, gast.IfExp):  # a `:=` in a branch: `walrus_operands` lifts it
            self.lifted.add(id(expr))

    def visit_Assign(self, node):
        self._lifted(node.value)
        self.generic_visit(node)

    visit_AnnAssign = visit_Expr = visit_Return = visit_Assign

    def visit_If(self, node):
        self._lifted(node.test)
        self.generic_visit(node)

    def visit_BoolOp(self, node):
        if id(node) not in self.lifted:
            for value in node.values[1:]:  # evaluated inside a lambda when converted
                self._no_walrus(value, "the right operand of `and`/`or` (other than in a "
                                       "statement's value or an `if` test)")
        self.generic_visit(node)

    def visit_IfExp(self, node):
        if id(node) not in self.lifted:
            where = ("a branch of a conditional expression (other than in a statement's value "
                     "or an `if` test)")
            self._no_walrus(node.body, where)
            self._no_walrus(node.orelse, where)
        self.generic_visit(node)

    def visit_Compare(self, node):
        for operand in node.comparators[1:]:  # evaluated inside a lambda when converted
            self._no_walrus(operand, "a chained comparison (after its first two operands)")
        self.generic_visit(node)

    def visit_TryStar(self, node):
        # `except*` handlers run per exception group; the analyses do not model them
        for block in [node.body, node.orelse, node.finalbody] + [h.body for h in node.handlers]:
            for stmt in block:
                for child in gast.walk(stmt):
                    if isinstance(child, _CONTROL_FLOW) and not _in_nested_def(stmt, child):
                        kind = type(child).__name__.lower()
                        self._reject(
                            child, f"`{kind}` inside `try`/`except*` is not supported in "
                                   f"converted functions",
                            "move the control flow out of the `try`, or the `try` into a "
                            "helper marked `@autograph.do_not_convert`",
                            observed=f"`try` at line {node.lineno}")
        self.generic_visit(node)

    def visit_match_case(self, node):
        # a converted case binds its captures one after another, so a capture must
        # not rebind a name the pattern reads to reach a later one
        patterns = list(gast.walk(node.pattern))
        bound = {p.name for p in patterns if isinstance(p, (gast.MatchAs, gast.MatchStar))}
        bound |= {p.rest for p in patterns if isinstance(p, gast.MatchMapping)}
        for child in patterns:
            if isinstance(child, gast.Name) and child.id in bound:
                self._reject(
                    child, f"a `case` pattern that binds `{child.id}` and also reads it is "
                           f"not supported in converted functions",
                    f"rename the capture `{child.id}`",
                    observed=f"`{child.id}` names a class, key or value in the pattern")
        self.generic_visit(node)


def _in_nested_def(root, node) -> bool:
    for child in gast.walk(root):
        if isinstance(child, (gast.FunctionDef, gast.Lambda, gast.ClassDef)) and child is not node:
            if any(n is node for n in gast.walk(child)):
                return True
    return False


def is_generator(fn: gast.FunctionDef) -> bool:
    """Whether ``fn``'s own body (not a function or class inside it) yields."""
    return any(isinstance(node, (gast.Yield, gast.YieldFrom))
               for node in activity.walk_own(fn.body))


def runs_as_written(fn: gast.FunctionDef, directives: Resolver) -> bool:
    """Whether ``fn``, a function defined inside the converted one, keeps the body the
    user wrote: it is decorated with ``do_not_convert``, or it is a generator, which
    no pass can lower (a generator's body runs a step at a time, as its consumer asks;
    plain Python, as under ``jax.jit``)."""
    return is_generator(fn) or any(
        directives.of(d) is Directive.DO_NOT_CONVERT for d in fn.decorator_list)


def check(node: gast.FunctionDef, filename: str, directives: Resolver | None = None) -> None:
    """Raises ``ConversionError`` for the first unsupported construct in ``node``.

    ``directives`` tells which calls are ``set_loop_options`` (by default,
    found in ``node`` alone, as for a function read from a file).
    """
    checker = _Checker(filename, directives if directives is not None else Resolver(node),
                       node)
    if isinstance(node, gast.AsyncFunctionDef):
        checker.visit_AsyncFunctionDef(node)
    checker.visit(node.args)  # (a parameter named `ag__`)
    for stmt in node.body:
        checker.visit(stmt)
