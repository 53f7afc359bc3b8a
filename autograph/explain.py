"""What ``autograph explain`` says about each `if` and loop of one function.

For every `if`, `while` and `for` the converters will rewrite, this module
computes, with the same analyses and the same formulas the converters use:

* **carried in**: the names the block function takes as parameters;
* **carried out**: the names it hands back to the code after the statement;
* **local**: names the block assigns that nothing after it reads, which stay
  inside the generated function;
* whether it sets the function's return value (a `return` inside it);
* how it runs: in Python when its condition (or iterable) is a Python value,
  with ``lax`` when it is traced, and which arguments that depends on.

Nothing is imported or run: the function is parsed from its file. The jump
passes (`continue`, `break`, `return`) run first, as in the pipeline, so the
guards and flags they add are described too.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap

import gast

from autograph import analysis, anno, checks, directive_calls, tree_formats
from autograph.analysis import Analysis, activity, carried, dead_lists, invisible
from autograph.anno import Anno
from autograph.context import Context
from autograph.converters import (
    break_statements,
    continue_statements,
    index_uses,
    loop_counters,
    match_statements,
    return_statements,
    while_statements,
)
from autograph.naming import Namer, Role
from autograph.runtime.loop_forms.loop_plan import (
    CHECKPOINTS,
    PYTHON_TRIPS,
    Form,
    Iterated,
    Plan,
    plan_for,
    plan_while,
)

# as in the pipeline: counters are found before the jump passes move their steps
_JUMP_PASSES = (match_statements, loop_counters, continue_statements, break_statements,
                return_statements)
_BLOCKS = (gast.If, gast.While, gast.For)
_MARK = "_autograph_explain_user"  # set on the user's own `if`/`while`/`for` nodes


@dataclasses.dataclass
class Block:
    """One `if`, `while` or `for` as its converter will see it.

    Attributes:
      kind: ``"if"``, ``"while"`` or ``"for"``.
      line: the user's line.
      header: the user's source line (``if x > 0:``), or the generated guard.
      function: qualified name of the function the block is in.
      generated: why the jump passes added this block, or ``None`` for the user's.
      carried_in: names passed into the branch or loop functions.
      carried_out: names handed back to the code after the statement.
      local: names assigned inside that stay there.
      dead: lists the function only appends to that the block appends to: not
        carried (``analysis.dead_lists``).
      sets_return: whether a `return` inside sets the function's result.
      target: the loop variable(s) of a `for`.
      runtime: how it runs, in Python or with ``lax``.
      depends: which arguments decide that.
      under_grad: for a loop, how reverse-mode ``jax.grad`` differentiates it.
      plans: for a loop, how it runs once something it touches is traced:
        ``(when, plan)`` pairs of ``runtime.loop_plan`` plans, the usual case first.
    """

    kind: str
    line: int
    header: str
    function: str
    generated: str | None = None
    carried_in: tuple[str, ...] = ()
    carried_out: tuple[str, ...] = ()
    local: tuple[str, ...] = ()
    dead: tuple[str, ...] = ()
    sets_return: bool = False
    target: str = ""
    runtime: str = ""
    depends: str = ""
    under_grad: str = ""
    plans: tuple[tuple[str, Plan], ...] = ()


@dataclasses.dataclass
class Explanation:
    qualname: str
    filename: str
    line: int
    params: tuple[str, ...]
    blocks: list[Block]
    generated_names: dict[str, str]  # generated name -> what it stands for


def explain_function(node: gast.FunctionDef, qualname: str, filename: str,
                     source: str) -> Explanation:
    """Describes every `if` and loop of ``node``, parsed from ``source``.

    Raises:
      ConversionError: ``node`` uses syntax that cannot be converted.
    """
    module = tree_formats.parse_gast(source)
    imports = directive_calls.module_imports(module)
    top_level = {f.name: f for f in module.body if isinstance(f, gast.FunctionDef)}
    directives = directive_calls.Resolver(node, imports=imports)
    checks.check(node, filename, directives)
    user_names = _identifiers(node)
    user_nodes, user_tests = {}, {}
    cases: dict[int, str] = {}  # the line of each `case` -> `match SUBJECT: case PATTERN`
    for n in gast.walk(node):
        if isinstance(n, gast.Match):
            subject = _source_text(source, n.subject)
            for c in n.cases:
                line = getattr(c.pattern, "lineno", None)
                if line is not None:
                    cases[line] = (f"match {subject}: case "
                                   f"{ast.unparse(gast.gast_to_ast(c.pattern))}"
                                   + (f" if {_source_text(source, c.guard)}" if c.guard
                                      else "") + ":")
    for n in _walk(node):
        if isinstance(n, _BLOCKS):
            setattr(n, _MARK, True)
            user_nodes[_key(n)] = n
            if not isinstance(n, gast.For):  # the break/return passes extend `while` tests
                user_tests[_key(n)] = _source_text(source, n.test)
    ctx = Context(namer=Namer.for_tree(node), filename=filename, directives=directives)
    for converter in _JUMP_PASSES:
        node = converter.transform(node, ctx)
    analysis.run(node, (Analysis.SCOPES, Analysis.LIVENESS, Analysis.DEFINITIONS))
    roles = {n: _generated_role(n, ctx) for n in sorted(_identifiers(node) - user_names)}
    generated = {n: role for n, role in roles.items() if role}
    kept = {_key(n) for n in _walk(node) if getattr(n, _MARK, False)}
    lines = source.splitlines()
    blocks: list[Block] = []
    describer = _Describer(blocks, lines, source, user_nodes, user_tests, kept, ctx.namer.roles,
                           directives)
    describer.cases = cases
    describer.scope = invisible.SourceScope(imports, top_level)
    describer.filename = filename
    describer.function(node, qualname, {})
    params = tuple(a.id for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs)
    params += tuple(a.id for a in (node.args.vararg, node.args.kwarg) if a is not None)
    return Explanation(qualname, filename, node.lineno, params, blocks, generated)


def _source_text(source: str, node) -> str:
    """The user's text of expression ``node``, or its unparsed form if it has none."""
    if node is None:
        return ""
    text = None
    if getattr(node, "lineno", None) is not None and getattr(node, "end_lineno", None):
        try:
            text = ast.get_source_segment(source, node)
        except (TypeError, ValueError, IndexError):
            text = None
    if not text or "\n" in text:
        text = ast.unparse(gast.gast_to_ast(node))
    return text


def _key(node) -> tuple:
    return type(node).__name__, node.lineno, node.col_offset


def _walk(node):
    """Nodes of ``node``'s function, nested functions included, local classes not."""
    for child in gast.iter_child_nodes(node):
        if isinstance(child, gast.ClassDef):
            continue  # methods of local classes are converted when called
        yield child
        yield from _walk(child)


def _identifiers(node) -> set[str]:
    out = set()
    for n in gast.walk(node):
        if isinstance(n, gast.Name):
            out.add(n.id)
        elif isinstance(n, (gast.FunctionDef, gast.ClassDef)):
            out.add(n.name)
    return out


def _generated_role(name: str, ctx: Context) -> str | None:
    """What a name the jump passes made stands for, from the role they recorded."""
    role = ctx.role(name)
    if role is Role.RETURN_VALUE:
        return "the function's return value"
    if role is not None:
        return f"flag: a `{role.jump}` has run"
    return None


def _reads(node) -> frozenset:
    return activity.expression_scope(node).reads


def _names(node: gast.arguments) -> set[str]:
    out = {a.id for a in node.posonlyargs + node.args + node.kwonlyargs}
    out |= {a.id for a in (node.vararg, node.kwarg) if a is not None}
    return out


def _dependencies(fn: gast.FunctionDef, outer: dict[str, frozenset]) -> dict[str, frozenset]:
    """Which arguments each name's value may depend on, through data or control.

    Flow-insensitive: a name assigned anywhere from ``x`` depends on ``x``; a
    name assigned under ``if c:`` (or in a loop) also depends on what ``c`` reads,
    since a traced condition makes the block's outputs traced.
    """
    edges: dict[str, set] = {}

    def add(targets, sources):
        for t in targets:
            edges.setdefault(t, set()).update(sources)

    def block(stmts, control: frozenset):
        for s in stmts:
            if isinstance(s, gast.If):
                c = control | _reads(s.test)
                block(s.body, c)
                block(s.orelse, c)
            elif isinstance(s, (gast.While, gast.For)):
                c = control | _reads(anno.get(s, Anno.EXTRA_TEST))
                if isinstance(s, gast.While):
                    c |= _reads(s.test)
                else:
                    c |= _reads(s.iter)
                    add(activity.expression_scope(s.target).kills, c)
                block(s.body, c)
                block(s.orelse, c)
            elif isinstance(s, (gast.With, gast.Try)):
                for item in getattr(s, "items", ()):
                    add(activity.expression_scope(item.optional_vars).kills,
                        control | _reads(item.context_expr))
                for part in (s.body, getattr(s, "orelse", []), getattr(s, "finalbody", [])):
                    block(part, control)
                for h in getattr(s, "handlers", ()):
                    block(h.body, control)
            elif isinstance(s, gast.ClassDef):
                continue
            else:
                scope = activity.statement_scope(s)
                add(scope.modified, scope.reads | control)

    block(fn.body, frozenset())
    params = _names(fn.args)
    deps = {n: d for n, d in outer.items() if n not in params and n not in edges}
    deps.update({p: frozenset({p}) for p in params})
    changed = True
    while changed:  # values only grow, so this reaches a fixed point
        changed = False
        for target, sources in edges.items():
            new = deps.get(target, frozenset())
            for s in sources:
                new |= deps.get(s, frozenset())
            if new != deps.get(target):
                deps[target] = new
                changed = True
    return deps


class _Describer:
    def __init__(self, blocks, lines, source, user_nodes, user_tests, kept, roles,
                 directives):
        self.directives = directives
        self.blocks = blocks
        self.lines = lines
        self.source = source
        self.user_nodes = user_nodes
        self.user_tests = user_tests
        self.kept = kept
        self.roles = roles  # generated name -> naming.Role
        self.scope: invisible.Scope = invisible.Scope(None)
        self.filename = ""
        self.cases: dict[int, str] = {}
        self._write_only: frozenset = frozenset()  # of the function being described

    def function(self, fn: gast.FunctionDef, qualname: str, outer_deps: dict) -> None:
        deps = _dependencies(fn, outer_deps)
        outer, self._write_only = self._write_only, dead_lists.write_only_lists(fn)
        try:
            # what the block converters pass around (`FunctionScopes.block_locals`)
            self._block(fn.body, qualname, activity.function_locals(fn) - self._write_only,
                        deps)
        finally:
            self._write_only = outer

    def _block(self, stmts, qualname, locals_, deps):
        for s in stmts:
            if isinstance(s, gast.FunctionDef):
                self.function(s, f"{qualname}.<locals>.{s.name}", deps)
                continue
            if isinstance(s, gast.ClassDef):
                continue
            if isinstance(s, _BLOCKS):
                self.blocks.append(self._describe(s, qualname, locals_, deps))
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], gast.stmt):
                    self._block(inner, qualname, locals_, deps)
            for h in getattr(s, "handlers", None) or ():
                self._block(h.body, qualname, locals_, deps)

    # -- one block --------------------------------------------------------

    def _text(self, node) -> str:
        return _source_text(self.source, node)

    def _origin(self, node):
        """The user's node for ``node`` (itself, or the one a jump pass replaced)."""
        if getattr(node, _MARK, False):
            return node
        key = _key(node)
        if key in self.user_nodes and key not in self.kept:
            return self.user_nodes[key]
        return None

    def _describe(self, node, qualname, locals_, deps) -> Block:
        kind = type(node).__name__.lower()
        origin = self._origin(node)
        if origin is not None:
            header = self.lines[node.lineno - 1].strip() if node.lineno <= len(self.lines) else ""
            generated = None
            if origin is not node:
                generated = (f"rewritten by the jump lowering as `{kind} "
                             f"{self._text(node.test)}:` around the code that follows it, "
                             f"so the jump needs no flag")
        elif isinstance(node, gast.If) and node.lineno in self.cases:
            header = self.cases[node.lineno]
            generated = (f"a `case` of a `match`, tested as `if "
                         f"{ast.unparse(gast.gast_to_ast(node.test))}:`")
        else:
            header = f"{kind} {ast.unparse(gast.gast_to_ast(node.test))}:"
            generated = self._why_generated(node)
        block = Block(kind=kind, line=node.lineno, header=header, function=qualname,
                      generated=generated)
        if isinstance(node, gast.If):
            self._if(node, block, locals_)
            test = self.user_tests.get(_key(origin)) if origin is not None else None
            if test is None and origin is None:  # generated: its test is no text of the user's
                test = ast.unparse(gast.gast_to_ast(node.test))
            self._if_runtime(node, test or self._text(node.test), block, deps)
        else:
            self._loop(node, block, locals_)
            self._loop_runtime(node, origin, block, deps)
        return block

    def _why_generated(self, node) -> str:
        jumps = {self.roles[n].jump for n in _reads(node.test) if n in self.roles}
        for jump in ("continue", "break", "return"):
            if jump in jumps:
                return f"added by the `{jump}` lowering: what follows runs only if no `{jump}` ran"
        return "added by the jump lowering"

    def _dead(self, node, block: Block) -> None:
        block.dead = dead_lists.appended_in(node, self._write_only)  # as `with_dead_lists`

    def _if(self, node: gast.If, block: Block, locals_) -> None:
        self._dead(node, block)
        state = carried.branch_state(node, locals_)  # what `if_statements` lowers it with
        block.carried_in, block.carried_out, block.local = (state.params, state.outputs,
                                                            state.local)
        outputs = state.outputs
        block.sets_return = any(self.roles.get(n) is Role.RETURN_VALUE for n in outputs)

    def _loop(self, node, block: Block, locals_) -> None:
        self._dead(node, block)
        state = carried.loop_state(node, locals_)  # what the loop converters lower it with
        block.carried_in = state.params
        block.carried_out = tuple(n for n in state.params if n in anno.get(node, Anno.LIVE_OUT))
        block.local = state.local  # (a `for` target is shown apart)
        block.sets_return = any(self.roles.get(n) is Role.RETURN_VALUE
                                for n in block.carried_out)

    # -- how it runs ------------------------------------------------------

    def _depends(self, names, deps) -> list[str]:
        out = set()
        for n in names:
            out |= deps.get(n, frozenset())
        return sorted(out)

    def _dep_clause(self, what: str, args: list[str]) -> str:
        """Which arguments make ``what`` traced."""
        if not args:
            return (f"`{what}` depends on no argument: it stays a Python value unless a "
                    f"global or closed-over value it reads is traced")
        if args == [what]:
            return (f"`{what}` is an argument: traced when it is an array argument of "
                    f"`jax.jit`, `jax.grad` or `jax.vmap`")
        listed = ", ".join(f"`{a}`" for a in args)
        if len(args) == 1:
            return (f"`{what}` depends on the argument {listed}: traced when that is an "
                    f"array argument of `jax.jit`, `jax.grad` or `jax.vmap`")
        return (f"`{what}` depends on the arguments {listed}: traced when any of them is "
                f"an array argument of `jax.jit`, `jax.grad` or `jax.vmap`")

    def _if_runtime(self, node, test: str, block: Block, deps) -> None:
        block.runtime = (f"a Python `if` when `{test}` is a Python value (a bool, a number, "
                         f"a concrete array); `lax.cond`, tracing both branches, when it "
                         f"is traced")
        block.depends = self._dep_clause(test, self._depends(_reads(node.test), deps))

    def _loop_runtime(self, node, origin, block: Block, deps) -> None:
        extra = anno.get(node, Anno.EXTRA_TEST)
        early = ""
        if extra is not None:
            early = (f"; it also stops once `{self._text(extra)}` is false (a `break` or "
                     f"`return` inside), by masking the remaining steps when staged")
        if isinstance(node, gast.While):
            test = self.user_tests.get(_key(origin), "") if origin is not None else ""
            test = test or self._text(node.test)
            rewritten = self._text(node.test)
            if rewritten != test and extra is None:
                early = (f"; the jump lowering makes its test `{rewritten}`, so it also stops "
                         f"once a `break` or `return` inside has run")
            options = _loop_options(node.body, self.directives)
            block.plans, counter = self._while_plans(node, options, block.carried_in)
            block.runtime = (f"a Python `while` as long as `{test}` is a Python value; from "
                             f"the first test that is traced, the rest runs as "
                             + _cases((when, f"{plan.form.value} ({plan.reason})")
                                      for when, plan in block.plans)
                             + early + _python_state_note(origin or node, staged=True))
            block.depends = self._dep_clause(
                rewritten, self._depends(_reads(node.test) | _reads(extra), deps))
            block.under_grad = _cases((when, _under_grad(plan, counter))
                                      for when, plan in block.plans)
            return
        iterable = origin.iter if origin is not None else node.iter
        it_text = self._text(iterable)
        block.target = self._text(origin.target if origin is not None else node.target)
        func = iterable.func.id if (isinstance(iterable, gast.Call)
                                    and isinstance(iterable.func, gast.Name)) else None
        why = index_uses.python_use(origin if origin is not None else node)
        exits = extra is not None
        if func == "range":
            block.plans = _static_plans(_literal_trips(iterable), why, exits)
            if _literal_trips(iterable) is None:
                block.plans += (("with a traced bound", plan_for(Iterated.TRACED_RANGE)),)
            before = ("a Python loop while the bounds are Python ints and the loop state holds "
                      "no traced value; once the state is traced, ")
        elif isinstance(iterable, _PYTHON_ITERABLES):
            block.plans = (("", plan_for(Iterated.OTHER)),)
            before = f"a Python loop while neither `{it_text}` nor the loop state is traced; "
        else:
            via = (f" (`{func}` of ranges and arrays stays stageable)"
                   if func in ("enumerate", "zip", "reversed") else "")
            block.plans = tuple((f"when `{it_text}` is an array{via} and it or the state is "
                                 f"traced, {when}", plan)
                                for when, plan in _static_plans(None, why, exits))
            block.plans += (("when it is a list, tuple, dict or other iterable",
                             plan_for(Iterated.OTHER)),)
            before = f"a Python loop while neither `{it_text}` nor the loop state is traced; "
        if why:
            before = ""
        proof = self._proof(origin if origin is not None else node, block, why)
        if proof is not None and not proof.proven:
            block.plans = tuple((when, plan_for(Iterated.STATIC, plan.trips, exits=exits,
                                                unproven=proof.why)
                                 if plan.form in (Form.SCAN, Form.EXITING_SCAN) else plan)
                                for when, plan in block.plans)
        block.runtime = before + _ways(block.plans) + early
        if proof is not None and proof.proven and proof.pending:
            calls = ", ".join(f"`{c}`" for c in proof.pending[:6])
            block.runtime += (f"; it stages only if the calls of {calls} are proven free of "
                              f"effects when the loop runs (by what they are: `jnp`/`lax` "
                              f"functions, helpers that only compute on arrays); otherwise it "
                              f"runs as the Python loop `jax.jit` unrolls")
        if any(p.form in (Form.SCAN, Form.EXITING_SCAN) for _, p in block.plans):
            block.runtime += (
                "; a staged body whose numbers computed from the index alone would differ "
                "from Python's (an integer past its dtype, a division by zero), or that "
                "`lax.scan` cannot trace, runs as the Python loop after all")
        if why:
            block.runtime += ("; use the index only in arithmetic, comparisons and array "
                              "indexing to let a long loop stage as one `lax.scan`")
        else:
            block.runtime += _python_state_note(origin if origin is not None else node)
        if func == "range" and not why:
            block.under_grad = "; ".join(f"{when}, {_under_grad(plan)}" if when
                                         else _under_grad(plan) for when, plan in block.plans)
        clauses = [self._dep_clause(it_text, self._depends(_reads(node.iter), deps))]
        if block.carried_in:
            state = ", ".join(f"`{n}`" for n in block.carried_in)
            args = self._depends(block.carried_in, deps)
            clauses.append(f"the state ({state}) depends on "
                           + (", ".join(f"`{a}`" for a in args) if args else "no argument"))
        block.depends = "; ".join(clauses)

    def _proof(self, node, block: Block, why: str | None):
        """The staging proof of a static `for` that could stage (see
        ``analysis.invisible``), from the source alone; None where it cannot stage."""
        if why or not any(p.form in (Form.SCAN, Form.EXITING_SCAN) for _, p in block.plans):
            return None
        if not isinstance(node, gast.For):
            return None
        # the user's own variables: the flags the jump lowering adds only stop the loop
        carried = tuple(n for n in block.carried_in if n not in self.roles)
        return invisible.prove_source_loop(node, self.scope, carried, self.filename)

    def _while_plans(self, node: gast.While, options: dict[str, str], state):
        """The plans of a staged `while` (see ``runtime.loop_plan.plan_while``), with when
        each holds, and the counter that bounds it or None."""
        if options:  # the converter passes no counter then
            return (("", plan_while(maximum_iterations=options.get("maximum_iterations"),
                                    checkpoints=options.get("checkpoints"),
                                    checkpoint_memory=options.get("checkpoint_memory"))),), None
        body, _ = while_statements.loop_options(node.body, self.directives)
        bound = while_statements.counter_bound(node, body, state)
        if bound is None:
            return (("", plan_while()),), None
        # ag__.Bound(position, op, lambda: limit, step)
        name, limit = state[bound.args[0].value], self._text(bound.args[2].body)
        counted = plan_while(counter_trips=f"the trips `{name}` has left before `{limit}`")
        return ((f"where `{name}` starts as a Python int and its limit `{limit}` is one",
                 counted), ("otherwise", plan_while())), name


# literal iterables of Python values, which no array can be
_PYTHON_ITERABLES = (gast.List, gast.Tuple, gast.Dict, gast.Set, gast.ListComp, gast.DictComp,
                     gast.SetComp, gast.GeneratorExp)


def _literal_trips(call: gast.Call) -> int | None:
    """The trip count of ``range(...)`` with int literal arguments, or None."""
    args = [a.value for a in call.args if isinstance(a, gast.Constant)]
    if len(args) != len(call.args) or call.keywords or not all(type(a) is int for a in args):
        return None
    try:
        return len(range(*args))
    except (TypeError, ValueError):  # `range()`, `range(0, 1, 0)`: the loop raises instead
        return None


def _static_plans(trips: int | None, why: str | None, exits: bool):
    """The plans of a `for` over a static sequence of ``trips`` iterations (None:
    unknown here), with when each holds."""
    if trips is not None:
        return (("", plan_for(Iterated.STATIC, trips, python_index=why, exits=exits)),)
    short = plan_for(Iterated.STATIC, PYTHON_TRIPS, python_index=why, exits=exits)
    long = plan_for(Iterated.STATIC, PYTHON_TRIPS + 1, python_index=why, exits=exits)
    if short.form is long.form:
        return (("whatever is traced", long),)
    return ((f"with at most {PYTHON_TRIPS} iterations left", short),
            (f"with more than {PYTHON_TRIPS}", long))


def _ways(plans) -> str:
    """What the plans say, as one clause: ``form (reason)``, each after when it holds."""
    return "; ".join(f"{when + ', ' if when else ''}{plan.form.value} ({plan.reason})"
                     for when, plan in plans)


def _cases(cases) -> str:
    """``(when, what)`` pairs as one clause: the first case's condition after it (so the
    clause starts with what happens), the others' before."""
    parts = []
    for k, (when, what) in enumerate(cases):
        parts.append(f"{what} {when}" if k == 0 and when else f"{when}, {what}" if when else what)
    return "; ".join(parts)


def _under_grad(plan: Plan, counter: str | None = None) -> str:
    """How reverse-mode ``jax.grad`` differentiates a loop run as ``plan`` says."""
    if plan.form is Form.CHECKPOINTED:
        if plan.checkpoint_memory is not None:
            return (f"with checkpoints: the backward pass keeps as many copies of the loop "
                    f"state as fit in {plan.checkpoint_memory} bytes "
                    f"(`set_loop_options(checkpoint_memory=...)`), every state where the loop "
                    f"runs for fewer steps than about half of them, and recomputes the steps "
                    f"between them otherwise; memory does not grow with the trip count")
        if plan.checkpoints is not None:
            return (f"with checkpoints: the backward pass keeps {plan.checkpoints} copies of "
                    f"the loop state (`set_loop_options(checkpoints=...)`) and recomputes the "
                    f"steps between them; memory does not grow with the trip count")
        return (f"with checkpoints: the backward pass keeps {CHECKPOINTS} copies of the loop "
                f"state (fewer for a state over 2 MiB) and recomputes the steps between them, "
                f"so its memory does not grow with the trip count; "
                f"`set_loop_options(checkpoints=S)` sets how many copies")
    if plan.form is Form.BOUNDED and plan.test_bounds:
        return (f"as a masked `lax.scan` of as many steps as the counter `{counter}` allows "
                f"(the backward pass keeps what every step computed)")
    if plan.form is Form.BOUNDED:
        return (f"as a masked `lax.scan` of {plan.maximum} steps (`maximum_iterations`), whose "
                f"backward pass keeps what every step computed")
    if plan.form is Form.EXITING_SCAN:
        return "as a masked `lax.scan`, whose backward pass keeps what every step computed"
    if plan.form is Form.SCAN:
        return "as the `lax.scan`, step by step"
    return "step by step, as the Python loop ran"

def _loop_options(body, directives: directive_calls.Resolver) -> dict[str, str]:
    """The keywords of a leading ``set_loop_options(...)`` call, as source text."""
    _, opts = while_statements.loop_options(body, directives)
    if opts is None:
        return {}
    call = body[0].value
    return {k.arg: ast.unparse(gast.gast_to_ast(k.value)) for k in call.keywords
            if k.arg is not None}


def _python_state_note(node, staged: bool = False) -> str:
    """What the loop does with a Python number its body uses as a Python value."""
    uses = index_uses.state_uses(node)
    if not uses:
        return ""
    names = ", ".join(f"`{n}`" for n, _ in uses)
    if staged:
        return (f"; staging it is refused (`LoopStateError`) while {names} holds a Python "
                f"number, since {uses[0][1]}")
    return (f"; it runs as the Python loop wherever {names} starts as a Python number, "
            f"since {uses[0][1]}")


def render(exp: Explanation, style=None, width: int = 100) -> str:
    """The text ``autograph explain`` prints for ``exp``."""
    bold = style.bold if style is not None else (lambda s: s)
    out = [bold(f"{exp.qualname} ({exp.filename}:{exp.line})"),
           "parameters: " + (", ".join(exp.params) or "(none)")]
    if not exp.blocks:
        out.append("no `if`, `while` or `for`: nothing here becomes `lax` control flow "
                   "(user functions it calls are converted when called)")
    current = exp.qualname

    def field(label: str, text: str) -> None:
        out.append(textwrap.fill(text, width, initial_indent=f"  {label:<13}",
                                 subsequent_indent=" " * 15, break_on_hyphens=False))

    def clauses(label: str, text: str) -> None:
        """One line (wrapped) per clause of ``text``: a short list, not one sentence."""
        for i, part in enumerate(_clauses(text)):
            out.append(textwrap.fill(part, width,
                                     initial_indent=f"  {label if i == 0 else '':<13}"
                                     + ("" if i == 0 else "- "),
                                     subsequent_indent=" " * 17, break_on_hyphens=False))

    for b in exp.blocks:
        out.append("")
        if b.function != current:
            out.append(bold(f"in nested function {b.function}"))
            current = b.function
        out.append(bold(f"{exp.filename}:{b.line}  {b.header}"))
        if b.generated:
            field("note:", b.generated)
        if b.kind == "for":
            field("loop target:", f"{b.target} (the body function's first parameter)")
        if b.kind == "if":
            field("carried in:", f"{_list(b.carried_in)} (parameters of the branch functions)")
            field("carried out:", f"{_list(b.carried_out)} (returned by the branches, "
                                  f"read after the `if`)")
        else:
            field("carried in:", f"{_list(b.carried_in)} (the loop state, passed through "
                                 f"every iteration)")
            field("carried out:", f"{_list(b.carried_out)} (read after the loop)")
        if b.sets_return:
            field("returns:", "yes: a `return` inside sets the function's result")
        field("local:", f"{_list(b.local)} (assigned inside, not needed after it)")
        if b.dead:
            field("not carried:", f"{_list(b.dead)} (lists the function only appends to and "
                                  f"never reads: dead, whatever they hold)")
        clauses("runs as:", b.runtime)
        clauses("depends on:", b.depends)
        if b.under_grad:
            clauses("under grad:", b.under_grad)
    if exp.generated_names:
        out.append("")
        field_text = "; ".join(f"`{n}`: {role}" for n, role in exp.generated_names.items())
        out.append(textwrap.fill("generated names: " + field_text, width,
                                 subsequent_indent="  ", break_on_hyphens=False))
    return "\n".join(out) + "\n"


def _clauses(text: str) -> list[str]:
    """``text`` split at its ``; `` (outside backticks and brackets)."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(text):
        if ch == "`":
            quoted = not quoted
        elif not quoted and ch in "([":
            depth += 1
        elif not quoted and ch in ")]":
            depth -= 1
        elif ch == ";" and not quoted and depth == 0 and text[i + 1:i + 2] == " ":
            parts.append(text[start:i])
            start = i + 2
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _list(names) -> str:
    return ", ".join(names) if names else "(none)"
