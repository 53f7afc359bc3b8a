"""Source text of a gast tree, with the user line behind each generated line.

Built on the standard library's unparser (``ast._Unparser``), which it reuses
for the rare constructs, but it reads gast trees as they are, without a copy
into ``ast`` classes first, and it spends less per node:

* a node's ``visit_*`` method is looked up once per class, not by name per node;
* output lines are counted once per statement (when a new line is started),
  not on every write;
* the ``with`` helpers (blocks, brackets) are plain objects, not generators,
  and the visitors of the nodes converted code is mostly made of (names,
  calls, assignments, tuples, ``if``) use no ``with`` at all.

Where the standard visitors test for ``ast`` classes (``elif`` chains, a
docstring, ``1 .real``, a tuple subscript, an annotated name), or read what
gast spells differently (parameters and handler names are ``Name`` nodes),
the visitors here accept both. The output is what ``ast.unparse`` writes for
the same tree (``gast.gast_to_ast``), with three deliberate differences: a
tuple assigned to is parenthesized (``(y,) = f()`` rather than ``y, = f()``),
no blank line comes before a nested ``def``, and type comments are left out.

Precedences (whether an operand needs brackets) are stored per node by the
parent and dropped once the node is written, so a node object that occurs
twice in a tree is written in each place as a copy of it would be.

Example::

    source, line_map = unparse(converted)  # a gast.FunctionDef
    # source: "def f(x):\n    ...\n"; line_map: {1: 12, 2: 13, ...}

For the 14-line loop function of ``benchmarks/conversion.py`` (its converted
tree has about 350 nodes) the copy into ``ast`` and the standard unparser took
0.64 ms; this takes 0.10 ms.
"""

from __future__ import annotations

import ast

import gast

from autograph import tree_formats

_P = ast._Precedence  # type: ignore[attr-defined]  # private, not in typeshed
_NEXT = {p: p.next() for p in _P}
_TUPLE, _TEST, _CMP, _ATOM = _P.TUPLE, _P.TEST, _P.CMP, _P.ATOM
_CMP_NEXT, _TEST_NEXT, _BOR_NEXT = _NEXT[_P.CMP], _NEXT[_P.TEST], _NEXT[_P.BOR]

# the classes the standard visitors test for, in both spellings
_CONSTANTS = (ast.Constant, gast.Constant)
_TUPLES = (ast.Tuple, gast.Tuple)
_NAMES = (ast.Name, gast.Name)
_IFS = (ast.If, gast.If)
_EXPRS = (ast.Expr, gast.Expr)
_WITH_DOCSTRING = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module,
                   gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Module)
# constants written as their repr (others may need care: floats, tuples, escapes)
_REPR = frozenset({int, bool, type(None)})


class _Delimit:
    """``with``: writes ``start`` on entry and ``end`` on a normal exit."""

    __slots__ = ("unparser", "start", "end")

    def __init__(self, unparser, start, end):
        self.unparser = unparser
        self.start = start
        self.end = end

    def __enter__(self):
        self.unparser._source.append(self.start)

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.unparser._source.append(self.end)


class _Nothing:
    """``with`` that does nothing."""

    __slots__ = ()

    def __enter__(self):
        return None

    def __exit__(self, kind, value, traceback):
        return None


_NOTHING = _Nothing()


class _Block:
    """``with``: writes ``:`` (and ``extra``) and indents the body."""

    __slots__ = ("unparser", "extra")

    def __init__(self, unparser, extra):
        self.unparser = unparser
        self.extra = extra

    def __enter__(self):
        unparser = self.unparser
        unparser._source.append(":")
        if self.extra:
            unparser._source.append(self.extra)
        unparser._indent += 1

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.unparser._indent -= 1


class _Buffered:
    """``with``: writes go to ``buffer`` until the exit.

    What is written there counts toward the line number, as every write does:
    text written into a buffer and then into the output counts twice, as it
    always has.
    """

    __slots__ = ("unparser", "buffer", "original")

    def __init__(self, unparser, buffer):
        self.unparser = unparser
        self.buffer = buffer

    def __enter__(self):
        self.original = self.unparser._source
        self.unparser._source = self.buffer
        return self.buffer

    def __exit__(self, kind, value, traceback):
        if kind is None:
            self.unparser._source = self.original
            self.unparser._line += "".join(self.buffer).count("\n")


# unparser class -> node class -> (its visitor, whether it is a statement)
_VISITORS: dict[type, dict[type, tuple]] = {}


class Unparser(ast._Unparser):  # type: ignore[name-defined]  # private, not in typeshed
    """``ast.unparse`` for gast trees that also records the user line of each output line.

    ``line_map`` maps a line of the output (from 1) to the line of the user's
    statement it was written for.
    """

    def __init__(self, **kwargs):  # nested f-strings pass `_avoid_backslashes` (3.11)
        super().__init__(**kwargs)
        self.line_map: dict[int, int] = {}
        self._line = 1  # the output line being written
        self._counted = 0  # how many parts of `_source` `_line` has counted
        self._origin = None  # user line of the statement being written
        self._repr_strings = not getattr(self, "_avoid_backslashes", False)
        visitors = _VISITORS.get(type(self))
        if visitors is None:
            visitors = _VISITORS[type(self)] = {}
        self._visitors = visitors

    # -- output -------------------------------------------------------------

    def visit(self, node):
        self._source: list[str] = []
        self._counted = 0
        self.traverse(node)
        return "".join(self._source)

    def fill(self, text=""):
        source = self._source
        if source:
            pending = source[self._counted:]
            self._line += 1 + (pending[0].count("\n") if len(pending) == 1
                               else "".join(pending).count("\n"))
            source.append("\n")
        source.append("    " * self._indent + text)
        self._counted = len(source)
        if "\n" in text:
            self._line += text.count("\n")
        if self._origin is not None:
            self.line_map.setdefault(self._line, self._origin)

    def maybe_newline(self):
        pass  # no blank line before each nested `def`: generated code stays compact

    def get_type_comment(self, node):
        return None  # generated nodes may lack `lineno`, which the default reads

    def buffered(self, buffer=None):
        return _Buffered(self, [] if buffer is None else buffer)

    def block(self, *, extra=None):
        return _Block(self, extra)

    def delimit(self, start, end):
        return _Delimit(self, start, end)

    def delimit_if(self, start, end, condition):
        return _Delimit(self, start, end) if condition else _NOTHING

    def require_parens(self, precedence, node):
        if self._precedences.get(node, _TEST) > precedence:
            return _Delimit(self, "(", ")")
        return _NOTHING

    def get_precedence(self, node):
        return self._precedences.get(node, _TEST)

    # -- traversal ----------------------------------------------------------

    def traverse(self, node):
        entry = self._visitors.get(node.__class__)
        if entry is None:
            if isinstance(node, list):
                for item in node:
                    self.traverse(item)
                return
            entry = self._visitor(node.__class__)
        visit, statement = entry
        if statement:
            previous = self._origin
            self._origin = getattr(node, "lineno", None) or previous
            visit(self, node)
            self._origin = previous
        else:
            visit(self, node)
            # the parent sets a node's precedence just before writing it; drop it
            # after, so another occurrence of the same node starts afresh
            self._precedences.pop(node, None)

    def _visitor(self, kind):
        visit = getattr(type(self), "visit_" + kind.__name__, None)
        if visit is None:
            visit = ast.NodeVisitor.generic_visit
        entry = self._visitors[kind] = (visit, issubclass(kind, ast.stmt))
        return entry

    # -- statements ---------------------------------------------------------

    def visit_Assign(self, node):
        self.fill()
        precedences = self._precedences
        for target in node.targets:
            # a tuple target gets brackets: `(y,) = ...` reads better than `y, = ...`
            precedences[target] = _ATOM if isinstance(target, _TUPLES) else _TUPLE
            self.traverse(target)
            self._source.append(" = ")
        self.traverse(node.value)

    def visit_AnnAssign(self, node):
        self.fill()
        bracket = not node.simple and isinstance(node.target, _NAMES)
        if bracket:
            self._source.append("(")
        self.traverse(node.target)
        if bracket:
            self._source.append(")")
        self._source.append(": ")
        self.traverse(node.annotation)
        if node.value:
            self._source.append(" = ")
            self.traverse(node.value)

    def visit_If(self, node):
        self.fill("if ")
        self.traverse(node.test)
        self._body(node.body)
        orelse = node.orelse
        # an `if` alone in an `else` is an `elif` (written for the outer statement's line)
        while len(orelse) == 1 and isinstance(orelse[0], _IFS):
            inner = orelse[0]
            self.fill("elif ")
            self.traverse(inner.test)
            self._body(inner.body)
            orelse = inner.orelse
        if orelse:
            self.fill("else")
            self._body(orelse)

    def _body(self, statements):
        self._source.append(":")
        self._indent += 1
        self.traverse(statements)
        self._indent -= 1

    def visit_ExceptHandler(self, node):
        if not isinstance(node, gast.ExceptHandler):
            return super().visit_ExceptHandler(node)
        self.fill("except*" if self._in_try_star else "except")
        if node.type:
            self._source.append(" ")
            self.traverse(node.type)
        name = node.name.id if node.name is not None else None  # gast: a Name node
        if name:
            self._source.append(" as ")
            self._source.append(name)
        self._body(node.body)

    def get_raw_docstring(self, node):
        if not isinstance(node, _WITH_DOCSTRING) or not node.body:
            return None
        first = node.body[0]
        if not isinstance(first, _EXPRS):
            return None
        value = first.value
        if isinstance(value, _CONSTANTS) and isinstance(value.value, str):
            return value
        return None

    # -- parameters ---------------------------------------------------------

    def visit_arguments(self, node):
        if not isinstance(node, gast.arguments):
            return super().visit_arguments(node)
        # gast writes parameters as Name nodes (`id`, `annotation`)
        write = self._source.append
        positional = node.posonlyargs + node.args
        defaults = [None] * (len(positional) - len(node.defaults)) + node.defaults
        slash_after = len(node.posonlyargs)
        for index, (parameter, default) in enumerate(zip(positional, defaults)):
            if index:
                write(", ")
            self._parameter(parameter)
            if default:
                write("=")
                self.traverse(default)
            if index + 1 == slash_after:
                write(", /")
        written = bool(positional)
        if node.vararg or node.kwonlyargs:
            if written:
                write(", ")
            written = True
            write("*")
            if node.vararg:
                self._parameter(node.vararg)
        for parameter, default in zip(node.kwonlyargs, node.kw_defaults):
            write(", ")
            self._parameter(parameter)
            if default:
                write("=")
                self.traverse(default)
        if node.kwarg:
            if written:
                write(", ")
            write("**")
            self._parameter(node.kwarg)

    def _parameter(self, node):
        self._source.append(node.id)
        if node.annotation:
            self._source.append(": ")
            self.traverse(node.annotation)

    # -- expressions --------------------------------------------------------

    def visit_Name(self, node):
        self._source.append(node.id)

    def visit_Constant(self, node):
        value = node.value
        kind = value.__class__
        if node.kind != "u" and (kind in _REPR or (kind is str and self._repr_strings)):
            self._source.append(repr(value))
        else:
            super().visit_Constant(node)

    def visit_JoinedStr(self, node):
        # f-strings are rare here: the standard visitor writes them from an ast copy
        if isinstance(node, gast.JoinedStr):
            node = tree_formats.to_ast(node)
        super().visit_JoinedStr(node)

    def visit_Tuple(self, node):
        elts = node.elts
        bracket = not elts or self._precedences.get(node, _TEST) > _TUPLE
        write = self._source.append
        if bracket:
            write("(")
        if len(elts) == 1:
            self.traverse(elts[0])
            write(",")
        else:
            for index, item in enumerate(elts):
                if index:
                    write(", ")
                self.traverse(item)
        if bracket:
            write(")")

    def visit_Attribute(self, node):
        value = node.value
        self._precedences[value] = _ATOM
        self.traverse(value)
        # `1.real` does not parse: `1 .real` does
        if isinstance(value, _CONSTANTS) and isinstance(value.value, int):
            self._source.append(" ")
        self._source.append(".")
        self._source.append(node.attr)

    def visit_Subscript(self, node):
        value = node.value
        self._precedences[value] = _ATOM
        self.traverse(value)
        self._source.append("[")
        index = node.slice
        if isinstance(index, _TUPLES) and index.elts:  # `a[i, j]`, without brackets
            self.items_view(self.traverse, index.elts)
        else:
            self.traverse(index)
        self._source.append("]")

    def visit_Call(self, node):
        func = node.func
        self._precedences[func] = _ATOM
        self.traverse(func)
        write = self._source.append
        write("(")
        comma = False
        for argument in node.args:
            if comma:
                write(", ")
            comma = True
            self.traverse(argument)
        for keyword in node.keywords:
            if comma:
                write(", ")
            comma = True
            self.traverse(keyword)
        write(")")

    def visit_keyword(self, node):
        if node.arg is None:
            self._source.append("**")
        else:
            self._source.append(node.arg)
            self._source.append("=")
        self.traverse(node.value)

    def visit_BinOp(self, node):
        operator = self.binop[node.op.__class__.__name__]
        precedence = self.binop_precedence[operator]
        bracket = self._precedences.get(node, _TEST) > precedence
        if operator in self.binop_rassoc:  # `**` groups to the right
            left, right = _NEXT[precedence], precedence
        else:
            left, right = precedence, _NEXT[precedence]
        write = self._source.append
        if bracket:
            write("(")
        self._precedences[node.left] = left
        self.traverse(node.left)
        write(f" {operator} ")
        self._precedences[node.right] = right
        self.traverse(node.right)
        if bracket:
            write(")")

    # The standard visitors below set the precedence of several children before
    # writing the first; these set each just before writing it (see the module's
    # docstring).

    def visit_Compare(self, node):
        bracket = self._precedences.get(node, _TEST) > _CMP
        write = self._source.append
        if bracket:
            write("(")
        self._precedences[node.left] = _CMP_NEXT
        self.traverse(node.left)
        for operator, operand in zip(node.ops, node.comparators):
            write(" " + self.cmpops[operator.__class__.__name__] + " ")
            self._precedences[operand] = _CMP_NEXT
            self.traverse(operand)
        if bracket:
            write(")")

    def visit_IfExp(self, node):
        bracket = self._precedences.get(node, _TEST) > _TEST
        write = self._source.append
        if bracket:
            write("(")
        self._precedences[node.body] = _TEST_NEXT
        self.traverse(node.body)
        write(" if ")
        self._precedences[node.test] = _TEST_NEXT
        self.traverse(node.test)
        write(" else ")
        self._precedences[node.orelse] = _TEST
        self.traverse(node.orelse)
        if bracket:
            write(")")

    def visit_NamedExpr(self, node):
        bracket = self._precedences.get(node, _TEST) > _P.NAMED_EXPR
        write = self._source.append
        if bracket:
            write("(")
        self._precedences[node.target] = _ATOM
        self.traverse(node.target)
        write(" := ")
        self._precedences[node.value] = _ATOM
        self.traverse(node.value)
        if bracket:
            write(")")

    def visit_comprehension(self, node):
        write = self._source.append
        write(" async for " if node.is_async else " for ")
        self._precedences[node.target] = _TUPLE
        self.traverse(node.target)
        write(" in ")
        self._precedences[node.iter] = _TEST_NEXT
        self.traverse(node.iter)
        for condition in node.ifs:
            write(" if ")
            self._precedences[condition] = _TEST_NEXT
            self.traverse(condition)

    def visit_MatchOr(self, node):
        bracket = self._precedences.get(node, _TEST) > _P.BOR
        write = self._source.append
        if bracket:
            write("(")
        for index, pattern in enumerate(node.patterns):
            if index:
                write(" | ")
            self._precedences[pattern] = _BOR_NEXT
            self.traverse(pattern)
        if bracket:
            write(")")


def unparse(node: gast.AST) -> tuple[str, dict[int, int]]:
    """Source text of a gast tree, and a map from its lines to user lines."""
    unparser = Unparser()
    try:
        source = unparser.visit(node)
    except AttributeError:  # a made node lacks a field: write a full copy instead
        unparser = Unparser()
        source = unparser.visit(tree_formats.to_ast(node))
    return source + "\n", unparser.line_map
