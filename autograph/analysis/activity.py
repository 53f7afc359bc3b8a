"""Activity analysis: the names each statement reads, rebinds and modifies.

A name is *killed* by a statement that rebinds it (``x = ...``, ``for x in``,
``def x``, ``import x``). It is *modified* when rebound or mutated in place
(``x[i] = v``, ``x.a = v``, ``x.append(v)``): converted branches and loops
must hand modified names back out. Nested functions, lambdas and
comprehensions are scopes of their own: only their free names count as reads
of the enclosing function, and only walrus targets escape them.

Compound statements get ``Anno.BODY_SCOPE`` (and ``Anno.ORELSE_SCOPE`` for
``if``) so converters can ask what a block modifies.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from typing import Iterator

import gast

from autograph import anno
from autograph.anno import Anno

# Methods that mutate the object they are called on; `x.append(v)` counts as
# modifying `x`, so that an array-dependent branch gets its own copy of `x`.
MUTATING_METHODS = frozenset({
    "append", "extend", "insert", "pop", "remove", "clear", "update",
    "setdefault", "popitem", "add", "discard", "sort", "reverse",
})


@dataclasses.dataclass(frozen=True)
class Scope:
    reads: frozenset = frozenset()
    kills: frozenset = frozenset()
    modified: frozenset = frozenset()

    def __or__(self, other: "Scope") -> "Scope":
        return Scope(self.reads | other.reads, self.kills | other.kills,
                     self.modified | other.modified)


EMPTY = Scope()

# Scopes computed during one `analysis.run`, by node id; statements repeat in
# many questions (liveness, definitions, enclosing functions' free reads). One
# memo per run, in the thread (or task) that runs it: conversions in other
# threads keep their own.
_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("autograph_scopes_memo",
                                                                    default=None)


@contextlib.contextmanager
def memoizing() -> Iterator[None]:
    """Keeps the scopes computed inside the ``with`` block, for one ``analysis.run``."""
    token = _MEMO.set({})
    try:
        yield
    finally:
        _MEMO.reset(token)


def memoized(fn):
    get_memo = _MEMO.get

    def wrapper(node):
        memo = get_memo()
        if memo is None or node is None:
            return fn(node)
        key = (fn.__name__, id(node))
        try:
            return memo[key][1]
        except KeyError:
            result = fn(node)
            memo[key] = (node, result)  # keeps the node alive, so its id stays unique
            return result
    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


class _Collector:
    """Collects names of one expression or simple statement.

    An explicit stack instead of a ``NodeVisitor``: the analyses run this on
    every expression of every function, once per pass that needs them.
    """

    def __init__(self):
        self.reads, self.kills, self.modified = set(), set(), set()

    def scope(self) -> Scope:
        return Scope(frozenset(self.reads), frozenset(self.kills), frozenset(self.modified))

    @staticmethod
    def _root(node):
        while isinstance(node, (gast.Attribute, gast.Subscript, gast.Starred)):
            node = node.value
        return node.id if isinstance(node, gast.Name) else None

    def visit(self, node) -> None:
        reads, kills, modified = self.reads, self.kills, self.modified
        stack = [node]
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            kind = type(node)
            if kind is gast.Name:
                if type(node.ctx) is gast.Load:
                    reads.add(node.id)
                else:  # Store, Del, Param
                    kills.add(node.id)
                    modified.add(node.id)
                continue
            if kind is gast.Constant:
                continue
            if kind is gast.Subscript or kind is gast.Attribute:
                if type(node.ctx) is not gast.Load:
                    root = self._root(node)
                    if root is not None:
                        reads.add(root)
                        modified.add(root)
            elif kind is gast.Call:
                func = node.func
                if (type(func) is gast.Attribute and func.attr == "converted_call"
                        and type(func.value) is gast.Name and func.value.id == "ag__"
                        and node.args):
                    func = node.args[0]  # `ag__.converted_call(d.update, ...)` is `d.update(...)`
                if type(func) is gast.Attribute and func.attr in MUTATING_METHODS:
                    root = self._root(func.value)
                    if root is not None:
                        modified.add(root)
            elif kind is gast.AugAssign:
                if type(node.target) is gast.Name:
                    reads.add(node.target.id)  # `y += x` reads `y` before rebinding it
            elif kind is gast.Lambda:
                self._lambda(node)
                continue
            elif kind in _COMPREHENSIONS:
                self._comprehension(node, _COMPREHENSIONS[kind](node))
                continue
            push_children(node, push)

    def _lambda(self, node: gast.Lambda):
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(d)
        inner = _Collector()
        inner.visit(node.body)
        params = param_names(node.args)
        self.reads |= inner.reads - params - inner.kills
        walrus = _walrus_targets(node.body)
        self.kills |= walrus
        self.modified |= walrus

    def _comprehension(self, node, parts):
        inner = _Collector()
        targets = set()
        for gen in node.generators:
            t = _Collector()
            t.visit(gen.target)
            targets |= t.kills
            inner.visit(gen.iter)
            for cond in gen.ifs:
                inner.visit(cond)
        for part in parts:
            inner.visit(part)
        walrus = _walrus_targets(node)
        self.reads |= inner.reads - (targets - walrus)
        self.kills |= walrus
        self.modified |= walrus | (inner.modified - targets - inner.kills)


_COMPREHENSIONS = {
    gast.ListComp: lambda n: [n.elt], gast.SetComp: lambda n: [n.elt],
    gast.GeneratorExp: lambda n: [n.elt], gast.DictComp: lambda n: [n.key, n.value],
}

# Per node type, the fields that can hold child nodes (not `ctx`, not strings).
_CHILD_FIELDS: dict[type, tuple] = {}


def walk(tree) -> Iterator[gast.AST]:
    """Every node of ``tree``, ``tree`` first, as ``gast.walk`` gives them (in another
    order, and without the ``ctx`` nodes), in about half its time."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        push_children(node, stack.append)


_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef)


def walk_own(stmts) -> Iterator[gast.AST]:
    """The nodes of ``stmts`` that belong to the function they are in: a function,
    lambda or class defined there is given, its inside is not."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            push_children(node, stack.append)


def push_children(node, push) -> None:
    """Calls ``push`` on each child node of ``node`` (not its ``ctx``)."""
    kind = type(node)
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _CHILD_FIELDS[kind] = tuple(
            f for f in kind._fields if f not in ("ctx", "type_comment", "type_params"))
    for f in fields:
        value = getattr(node, f, None)
        if type(value) is list:
            for item in value:
                if isinstance(item, gast.AST):
                    push(item)
        elif isinstance(value, gast.AST):
            push(value)


def param_names(args: gast.arguments) -> set:
    """The names of a function's parameters, ``*args`` and ``**kwargs`` included."""
    out = set()
    for a in args.posonlyargs + args.args + args.kwonlyargs:
        out.add(a.id)
    for a in (args.vararg, args.kwarg):
        if a is not None:
            out.add(a.id)
    return out


def _walrus_targets(node) -> set:
    return {n.target.id for n in gast.walk(node)
            if isinstance(n, gast.NamedExpr) and isinstance(n.target, gast.Name)}


@memoized
def expression_scope(node) -> Scope:
    if node is None:
        return EMPTY
    c = _Collector()
    c.visit(node)
    return c.scope()


@memoized
def function_free_reads(node: gast.FunctionDef) -> frozenset:
    """Names a nested function reads from enclosing scopes."""
    body = block_scope(node.body)
    local = param_names(node.args) | body.kills
    return frozenset(body.reads - local)


@memoized
def statement_scope(node: gast.stmt) -> Scope:
    """The scope of one statement, annotating compound statements' blocks."""
    if isinstance(node, gast.If):
        body, orelse = block_scope(node.body), block_scope(node.orelse)
        anno.set(node, Anno.BODY_SCOPE, body)
        anno.set(node, Anno.ORELSE_SCOPE, orelse)
        return expression_scope(node.test) | body | orelse
    if isinstance(node, gast.While):
        body = block_scope(node.body)
        anno.set(node, Anno.BODY_SCOPE, body)
        extra = expression_scope(anno.get(node, Anno.EXTRA_TEST))
        return expression_scope(node.test) | extra | body | block_scope(node.orelse)
    if isinstance(node, gast.For):
        body = block_scope(node.body)
        anno.set(node, Anno.BODY_SCOPE, body)
        extra = expression_scope(anno.get(node, Anno.EXTRA_TEST))
        return (expression_scope(node.iter) | expression_scope(node.target) | extra
                | body | block_scope(node.orelse))
    if isinstance(node, (gast.With, gast.AsyncWith)):
        items = EMPTY
        for item in node.items:
            items = (items | expression_scope(item.context_expr)
                     | expression_scope(item.optional_vars))
        return items | block_scope(node.body)
    if isinstance(node, gast.Try):
        out = block_scope(node.body) | block_scope(node.orelse) | block_scope(node.finalbody)
        for h in node.handlers:
            out = out | expression_scope(h.type) | block_scope(h.body)
            if h.name is not None:
                out = out | expression_scope(h.name)
        return out
    if isinstance(node, gast.FunctionDef):
        outer = EMPTY
        for d in node.decorator_list + node.args.defaults + [
                d for d in node.args.kw_defaults if d is not None]:
            outer = outer | expression_scope(d)
        name = frozenset({node.name})
        return outer | Scope(function_free_reads(node), name, name)
    if isinstance(node, gast.ClassDef):
        inner = EMPTY
        for child in node.bases + node.keywords + node.decorator_list:
            inner = inner | expression_scope(child)
        body = block_scope(node.body)
        name = frozenset({node.name})
        return inner | Scope(body.reads, name, name)
    if isinstance(node, (gast.Import, gast.ImportFrom)):
        names = frozenset((a.asname or a.name).split(".")[0] for a in node.names)
        return Scope(frozenset(), names, names)
    if isinstance(node, gast.Match):
        out = expression_scope(node.subject)
        for case in node.cases:
            out = out | expression_scope(case.pattern) | expression_scope(case.guard)
            out = out | block_scope(case.body)
        return out
    return expression_scope(node)


def block_scope(stmts) -> Scope:
    out = EMPTY
    for s in stmts:
        out = out | statement_scope(s)
    return out


def analyze_function(node: gast.FunctionDef) -> Scope:
    scope = block_scope(node.body)
    anno.set(node, Anno.BODY_SCOPE, scope)
    return scope


def function_locals(node: gast.FunctionDef) -> frozenset:
    """Parameters and every name the function's own body rebinds.

    Read from the annotations of the last analysis when present.
    """
    scope = anno.get(node, Anno.BODY_SCOPE)
    if scope is None:
        scope = block_scope(node.body)
    return (frozenset(param_names(node.args)) | scope.kills) - declared_outer(node).keys()


def declared_outer(node: gast.FunctionDef) -> dict[str, type]:
    """Names the function's own body declares, each with ``gast.Global`` or ``gast.Nonlocal``."""
    names: dict[str, type] = {}
    stack = list(node.body)
    while stack:
        stmt = stack.pop()
        if isinstance(stmt, (gast.Global, gast.Nonlocal)):
            names.update(dict.fromkeys(stmt.names, type(stmt)))
        elif not isinstance(stmt, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            for field in ("body", "orelse", "finalbody", "handlers"):
                stack.extend(getattr(stmt, field, None) or ())
    return names
