"""Marks `for` loops whose body uses the loop index as a Python value.

    for i in range(20):                   ->   (unchanged; the `for` node is annotated
        x = x + P.get(f"w{i}", 0.0)             Anno.PYTHON_INDEX = "`i` is formatted
                                                 into a string (line 2)")

Under ``jax.jit`` a loop over a ``range`` runs in Python: its index is a
Python int. Staged as one ``lax.scan`` it is a traced int32, which means the
same thing to arithmetic, comparisons and array indexing, and something else
to the rest of Python: ``f"w{i}"``, ``str(i)`` and ``"%d" % i`` give the
tracer's text; ``isinstance(i, int)``, ``i is 0``, ``i in keys`` and dict
keys see an array; ``i.bit_length()`` does not exist; ``2 ** -i`` is an
integer power (0) where Python gives a float; a ``try`` around any of these
may catch the tracing error and take its ``except`` branch. Such a loop is
annotated with the first such use, and ``for_stmt`` runs it as the Python
loop ``jax.jit`` runs.

The names the body assigns are checked for the same uses, apart
(``Anno.PYTHON_STATE``): ``for_stmt`` runs the loop as Python where such a
name holds a Python number when the loop starts (``n += 1`` then
``f"w{n}"``), since staged it would be carried as an array; a `while`
whose test is traced cannot run as Python, so there it is a clear
``LoopStateError``. The attributes the body assigns (``self.n += 1``), which
a staged loop carries too, are checked the same way, by their dotted name.

Which names hold the index: the targets of ``range``, the counter of
``enumerate``, and names assigned from expressions made of those and
constants alone (``j = 2 * i + 1``). Items of arrays (``for row in xs``)
are arrays either way: only formatting them, ``isinstance``/``type``/``is``
and hashing them count. Formatting inside ``print``, an ``assert`` message or
a ``raise`` is done when the program runs, with the value, so it counts
neither.
"""

from __future__ import annotations

import gast

from autograph import anno
from autograph.analysis.activity import walk
from autograph.anno import Anno
from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.For, gast.While)  # the pass is skipped when the tree has none
REQUIRES = ()

INDEX, ITEM = "index", "item"  # a Python int under `jax.jit`; an array's item

# Built-ins whose result depends on the argument being a Python value, not a number.
_PYTHON_VALUE_CALLS = {
    "str": "converted to a string with `str`", "repr": "converted to a string with `repr`",
    "format": "formatted with `format`", "ascii": "converted to a string with `ascii`",
    "hash": "hashed", "id": "passed to `id`", "type": "passed to `type`",
    "isinstance": "tested with `isinstance`", "issubclass": "passed to `issubclass`",
    "getattr": "used as an attribute name", "setattr": "used as an attribute name",
    "hasattr": "used as an attribute name", "delattr": "used as an attribute name",
    "chr": "passed to `chr`", "hex": "passed to `hex`", "oct": "passed to `oct`",
    "bin": "passed to `bin`", "vars": "passed to `vars`", "dir": "passed to `dir`",
    "callable": "passed to `callable`", "frozenset": "put in a set", "set": "put in a set",
}
# Calls whose arguments are formatted when the program runs (see `print_calls`).
_MESSAGE_CALLS = {"print"}
# Built-ins of numbers: their result is a Python number when their arguments are.
_NUMBER_CALLS = {"abs", "int", "float", "round", "min", "max", "pow", "divmod", "sum", "bool",
                 "complex"}
# Methods that format a string or use their argument as a key.
_KEY_METHODS = {"get": "used as a dict key", "setdefault": "used as a dict key",
                "pop": "used as a dict key", "format": "formatted with `str.format`",
                "format_map": "formatted with `str.format_map`", "join": "joined as a string"}
_PROPAGATING = (gast.BinOp, gast.UnaryOp, gast.BoolOp, gast.Compare, gast.IfExp, gast.Tuple,
                gast.List, gast.Set, gast.Dict, gast.Starred, gast.NamedExpr)


def _is_float_literal(node) -> bool:
    return (isinstance(node, gast.Constant) and isinstance(node.value, float)) or (
        isinstance(node, gast.UnaryOp) and _is_float_literal(node.operand))


def _kinds(target, iterable, out: dict[str, str]) -> None:
    """The names ``target`` binds from ``iterable``, each with its kind."""
    def bind(t, kind):
        for n in gast.walk(t):
            if isinstance(n, gast.Name) and isinstance(n.ctx, gast.Store):
                out.setdefault(n.id, kind)

    call = iterable if isinstance(iterable, gast.Call) else None
    name = call.func.id if call is not None and isinstance(call.func, gast.Name) else None
    if name == "range":
        bind(target, INDEX)
    elif name == "enumerate" and call is not None and call.args and isinstance(
            target, (gast.Tuple, gast.List)) and len(target.elts) == 2:
        bind(target.elts[0], INDEX)
        _kinds(target.elts[1], call.args[0], out)
    elif name == "zip" and call is not None and isinstance(
            target, (gast.Tuple, gast.List)) and len(target.elts) == len(call.args):
        for t, a in zip(target.elts, call.args):
            _kinds(t, a, out)
    elif name == "reversed" and call is not None and len(call.args) == 1:
        _kinds(target, call.args[0], out)
    else:
        bind(target, ITEM)


class _Uses:
    """Finds the first use of the loop's index names as a Python value in its body."""

    def __init__(self, names: dict[str, str], attributes: bool = True):
        self.names = dict(names)
        self.attributes = attributes  # whether `.attr` of an index is a Python use
        self.parents: dict[int, gast.AST] = {}
        self.message = 0  # inside a print/assert message/raise: formatted at run time

    def pure(self, node) -> bool:
        """Whether ``node`` is made of index names and constants alone."""
        if isinstance(node, gast.Name):
            return node.id in self.names and self.names[node.id] == INDEX
        if isinstance(node, gast.Constant):
            return True
        if isinstance(node, gast.Call):
            return (isinstance(node.func, gast.Name) and node.func.id in _NUMBER_CALLS
                    and bool(node.args) and all(self.pure(a) for a in node.args))
        if isinstance(node, gast.Subscript):  # `idx[0]` of `idx = (i, 0)`
            return self.pure(node.value)
        if isinstance(node, _PROPAGATING):
            children = [c for c in gast.iter_child_nodes(node)
                        if isinstance(c, gast.expr)]
            return bool(children) and all(self.pure(c) for c in children)
        return False

    def propagate(self, body) -> None:
        """Adds the names assigned from index names and constants alone (to a fixpoint)."""
        # the assignments (and inner `for`s) of the body, walked once, each with the
        # names its value reads
        steps = []
        for n in walk(gast.Module(body=body, type_ignores=[])):
            if isinstance(n, gast.Assign):
                steps.append((n, n.targets, n.value))
            elif isinstance(n, (gast.AugAssign, gast.AnnAssign)) and n.value is not None:
                steps.append((n, [n.target], n.value))
            elif isinstance(n, gast.NamedExpr):
                steps.append((n, [n.target], n.value))
            elif isinstance(n, gast.For):
                steps.append((n, None, n.iter))
        reads = [{m.id for m in walk(value)
                  if isinstance(m, gast.Name) and isinstance(m.ctx, gast.Load)}
                 for _, _, value in steps]
        changed = True
        while changed:
            changed = False
            for (n, targets, value), read in zip(steps, reads):
                if read.isdisjoint(self.names):
                    continue
                if targets is None:
                    # an inner loop over a range of the index: its items are ints too
                    for t in gast.walk(n.target):
                        if isinstance(t, gast.Name) and t.id not in self.names:
                            self.names[t.id] = INDEX
                            changed = True
                    continue
                if not self.pure(value):
                    continue
                if isinstance(n, gast.AugAssign) and not self.pure(n.target):
                    continue  # `x += i` with `x` an array stays an array
                for t in targets:
                    for name in gast.walk(t):
                        if (isinstance(name, gast.Name) and isinstance(name.ctx, gast.Store)
                                and name.id not in self.names):
                            self.names[name.id] = INDEX
                            changed = True

    def find(self, body) -> str | None:
        if not _has_python_contexts(body, self.attributes):
            return None  # no node that could make a read a Python use
        self.propagate(body)
        for stmt in body:
            found = self.visit(stmt, in_try=False)
            if found:
                return found
        return None

    def visit(self, node, in_try: bool) -> str | None:
        if isinstance(node, gast.Try) and node.handlers:
            for s in node.body:
                found = self.visit(s, in_try=True)
                if found:
                    return found
            rest = [h for h in node.handlers] + node.orelse + node.finalbody
            for s in rest:
                found = self.visit(s, in_try)
                if found:
                    return found
            return None
        message = (isinstance(node, gast.Call) and isinstance(node.func, gast.Name)
                   and node.func.id in _MESSAGE_CALLS) or isinstance(node, gast.Raise)
        if isinstance(node, gast.Assert) and node.msg is not None:
            found = self.visit(node.test, in_try)
            if found:
                return found
            self.message += 1
            try:
                return self.visit(node.msg, in_try)
            finally:
                self.message -= 1
        if message:
            self.message += 1
        try:
            for child in gast.iter_child_nodes(node):
                self.parents[id(child)] = node
                found = self.visit(child, in_try)
                if found:
                    return found
        finally:
            if message:
                self.message -= 1
        if isinstance(getattr(node, "ctx", None), gast.Load) and _dotted(node) in self.names:
            return self.use(node, in_try)
        return None

    def use(self, name: gast.Name | gast.Attribute, in_try: bool) -> str | None:
        """The Python-value use of ``name`` (a name or an attribute chain, read where
        it is), or None."""
        dotted = _dotted(name)
        assert dotted is not None
        kind = self.names[dotted]
        line = getattr(name, "lineno", None)
        where = f" (line {line})" if line else ""
        said = f"`{dotted}`"
        if in_try:
            return f"{said} is used inside a `try` block, whose handler could catch a " \
                   f"tracing error{where}"
        node: gast.AST = name
        while True:
            parent = self.parents.get(id(node))
            if parent is None:
                return None
            why = self.context(node, parent, kind)
            if why:
                return f"{said} is {why}{where}"
            if not isinstance(parent, _PROPAGATING) and not (
                    isinstance(parent, gast.Call) and isinstance(parent.func, gast.Name)
                    and parent.func.id in _NUMBER_CALLS) and not (
                    isinstance(parent, gast.Subscript) and parent.value is node
                    and self.pure(node)):
                return None
            node = parent

    def context(self, node, parent, kind: str) -> str | None:
        """Why ``node`` (a value holding the index), read by ``parent``, is a Python use."""
        if isinstance(parent, gast.FormattedValue) and not self.message:
            return "formatted into a string"
        if isinstance(parent, gast.Compare):
            ops = [type(o) for o in parent.ops]
            if any(o in (gast.Is, gast.IsNot) for o in ops):
                return "compared with `is`"
            if any(o in (gast.In, gast.NotIn) for o in ops):
                return "tested for membership with `in`"
        if isinstance(parent, gast.Dict) and any(k is node for k in parent.keys):
            return "used as a dict key"
        if isinstance(parent, gast.Set):
            return "put in a set"
        if isinstance(parent, gast.BinOp) and parent.right is node:
            if isinstance(parent.op, gast.Mod) and isinstance(parent.left, (
                    gast.Constant, gast.JoinedStr)) and isinstance(
                    getattr(parent.left, "value", ""), str) and not self.message:
                return "formatted into a string with `%`"
            if (isinstance(parent.op, gast.Pow) and kind == INDEX and self.pure(node)
                    and not _is_float_literal(parent.left)):
                return "an exponent (`b ** i` of an integer `b` is exact in Python, and a " \
                       "float for negative `i`)"
        if isinstance(parent, gast.Call) and node is not parent.func:
            func = parent.func
            if isinstance(func, gast.Name) and func.id in _PYTHON_VALUE_CALLS:
                if not (self.message and func.id in ("str", "repr", "format", "ascii")):
                    return _PYTHON_VALUE_CALLS[func.id]
            if isinstance(func, gast.Attribute) and func.attr in _KEY_METHODS:
                formatting = func.attr in ("format", "format_map", "join")
                if not (self.message and formatting):
                    return _KEY_METHODS[func.attr]
        if (isinstance(parent, gast.Attribute) and kind == INDEX and self.attributes
                and self.pure(node)):
            return f"used as a Python int (`.{parent.attr}`)"
        return None


def _has_python_contexts(body, attributes: bool) -> bool:
    """Whether ``body`` has a node that can make a read a Python use (see
    ``_Uses.context``, and a ``try`` with handlers): without one, no read is."""
    for n in walk(gast.Module(body=body, type_ignores=[])):
        if isinstance(n, (gast.FormattedValue, gast.Dict, gast.Set)):
            return True
        if isinstance(n, gast.Compare) and any(
                isinstance(o, (gast.Is, gast.IsNot, gast.In, gast.NotIn)) for o in n.ops):
            return True
        if isinstance(n, gast.BinOp) and (isinstance(n.op, gast.Pow) or (
                isinstance(n.op, gast.Mod) and isinstance(n.left, (gast.Constant, gast.JoinedStr))
                and isinstance(getattr(n.left, "value", ""), str))):
            return True
        if isinstance(n, gast.Call) and (
                (isinstance(n.func, gast.Name) and n.func.id in _PYTHON_VALUE_CALLS)
                or (isinstance(n.func, gast.Attribute) and n.func.attr in _KEY_METHODS)):
            return True
        if isinstance(n, gast.Try) and n.handlers:
            return True
        if attributes and isinstance(n, gast.Attribute):
            return True
    return False


def _dotted(node) -> str | None:
    """``node`` as a dotted name (``x``, ``self.n``, ``a.b.c``), or None for any other
    expression."""
    if isinstance(node, gast.Name):
        return node.id
    if isinstance(node, gast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def python_use(node: gast.For) -> str | None:
    """The first use of ``node``'s loop index as a Python value in its body, or None."""
    names: dict[str, str] = {}
    _kinds(node.target, node.iter, names)
    return _Uses(names).find(node.body)


def parameter_uses(node: gast.FunctionDef) -> dict[str, str]:
    """``{parameter: why}`` for the parameters ``node`` uses as Python values, were
    they Python ints (a staged loop's index passed to a helper; see
    ``runtime/functions/index_meaning``). Attributes do not count: a parameter is usually
    an array, whose ``.shape`` and ``.sum()`` a traced index has too."""
    args = node.args
    params = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs
              if isinstance(a, gast.Name)]
    if not params or _Uses(dict.fromkeys(params, INDEX), attributes=False).find(
            node.body) is None:
        return {}
    found = {}
    for p in params:
        why = _Uses({p: INDEX}, attributes=False).find(node.body)
        if why:
            found[p] = why
    return found


def state_uses(node: gast.For | gast.While) -> tuple[tuple[str, str], ...]:
    """``((name, why), ...)`` for the names ``node``'s body assigns and uses as Python
    values (``n += 1`` then ``f"w{n}"``): were one a Python number when the loop
    starts, a staged loop would carry it as an array."""
    targets: dict[str, str] = {}
    if isinstance(node, gast.For):
        _kinds(node.target, node.iter, targets)
    # names, and attribute chains (`self.n`), that the body assigns
    assigned = sorted({d for n in walk(gast.Module(body=node.body, type_ignores=[]))
                       if isinstance(n, (gast.Name, gast.Attribute))
                       and isinstance(n.ctx, gast.Store)
                       and (d := _dotted(n)) is not None and d not in targets})
    if not assigned or _Uses(dict.fromkeys(assigned, ITEM), attributes=False).find(
            node.body) is None:
        return ()
    found = []
    for name in assigned:
        why = _Uses({name: ITEM}, attributes=False).find(node.body)
        if why:
            found.append((name, why))
    return tuple(found)


def leaves_at_once(node: gast.For) -> str | None:
    """Why ``node``'s body always leaves the loop in its first iteration (it ends
    with ``return`` or ``break`` and no ``continue`` of this loop precedes it), or
    None. Such a loop runs at most once: as the Python loop ``jax.jit`` runs, it
    never reaches the code after it that an exit there would skip, where a staged
    exit (a traced flag) would trace that code too."""
    if not node.body or not isinstance(node.body[-1], (gast.Return, gast.Break)):
        return None
    todo: list = list(node.body)
    while todo:
        n = todo.pop()
        if isinstance(n, gast.Continue):
            return None
        if isinstance(n, (gast.For, gast.While, gast.FunctionDef, gast.AsyncFunctionDef,
                          gast.Lambda, gast.ClassDef)):
            todo.extend(getattr(n, "orelse", []))  # their own `continue`s are theirs
            continue
        todo.extend(gast.iter_child_nodes(n))
    jump = "return" if isinstance(node.body[-1], gast.Return) else "break"
    return (f"the body always leaves the loop in its first iteration (the `{jump}` of line "
            f"{getattr(node.body[-1], 'lineno', '?')})")


class _Transformer(Converter):
    def visit_For(self, node: gast.For):
        self.generic_visit(node)  # loops nested in this one have plans of their own
        why = leaves_at_once(node) or python_use(node)
        if why:
            anno.set(node, Anno.PYTHON_INDEX, why)
        uses = state_uses(node)
        if uses:
            anno.set(node, Anno.PYTHON_STATE, uses)
        return node

    def visit_While(self, node: gast.While):
        self.generic_visit(node)
        uses = state_uses(node)
        if uses:
            anno.set(node, Anno.PYTHON_STATE, uses)
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
