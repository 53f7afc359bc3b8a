"""Generated code written as Python source with named, checked placeholders.

A placeholder is an UPPER_CASE identifier. ``Template`` parses its source once,
at import; ``substitute`` fills every placeholder and checks the fill::

    _IF = Template('''
        STATE = ag__.if_stmt(TEST, TRUE_FN, FALSE_FN, INIT, names=NAMES)
    ''')
    stmts = _IF.substitute(STATE=("y",), TEST=node.test, TRUE_FN="if_true", ...)

What a placeholder may receive depends on where it stands:

* an identifier position (``def NAME(...)``, a name being read or assigned):
  a ``str``; a tuple of ``str`` expands to a tuple of names, and inside a
  parameter list to several parameters;
* an expression position: a gast expression (see :func:`literal` for
  constants);
* a statement position (the placeholder alone on a line): a list of gast
  statements, spliced in place.

Filling a placeholder with the wrong kind, leaving one unfilled or passing a
keyword the template does not use raises ``TypeError``. Inserted nodes are
never rescanned, so user code that happens to contain an UPPER_CASE name is
safe. Nodes that come from the template take the location of ``origin``.
"""

from __future__ import annotations

import re
import textwrap
from typing import Any, Mapping, Sequence

import gast

from autograph import anno, tree_formats
from autograph.analysis.activity import walk
from autograph.naming import Role

_PLACEHOLDER = re.compile(r"^[A-Z][A-Z0-9_]*$")
_LOC_FIELDS = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def literal(value: Any) -> gast.expr:
    """A gast expression for a Python literal (str, number, bool, None, tuple)."""
    if isinstance(value, tuple):
        return gast.Tuple(elts=[literal(v) for v in value], ctx=gast.Load())
    if isinstance(value, list):
        return gast.List(elts=[literal(v) for v in value], ctx=gast.Load())
    if value is None or isinstance(value, (str, int, float, bool)):
        return gast.Constant(value=value, kind=None)
    raise TypeError(f"not a literal: {value!r}")


def name(identifier: str, ctx: gast.AST | None = None) -> gast.Name:
    """A name made by a converter (marked, so later passes can tell it from the user's)."""
    node = gast.Name(id=identifier, ctx=ctx or gast.Load(), annotation=None, type_comment=None)
    anno.set(node, anno.Anno.GENERATED, True)
    return node


def set_location(node: gast.AST, origin: gast.AST | None) -> None:
    """Gives ``node`` and its descendants without a location that of ``origin``."""
    if origin is None or getattr(origin, "lineno", None) is None:
        return
    for child in walk(node):
        if getattr(child, "lineno", None) is None and "lineno" in getattr(child, "_attributes", ()):
            for field in _LOC_FIELDS:
                setattr(child, field, getattr(origin, field, None))


class Template:
    """Python source with UPPER_CASE placeholders; see the module docstring."""

    def __init__(self, source: str):
        self.source = textwrap.dedent(source).strip("\n")
        self._tree = tree_formats.parse_gast(self.source).body
        for node in self._tree:
            for child in gast.walk(node):
                for field in _LOC_FIELDS:  # so that set_location() applies
                    if hasattr(child, field):
                        delattr(child, field)
        self.placeholders = frozenset(self._find_placeholders())

    def _find_placeholders(self):
        for stmt in self._tree:
            for node in gast.walk(stmt):
                if isinstance(node, gast.Name) and _PLACEHOLDER.match(node.id):
                    yield node.id
                elif isinstance(node, gast.FunctionDef) and _PLACEHOLDER.match(node.name):
                    yield node.name

    def substitute(self, origin: gast.AST | None = None, **values: Any) -> list[gast.stmt]:
        """Returns fresh statements with every placeholder filled from ``values``."""
        missing = self.placeholders - values.keys()
        unused = values.keys() - self.placeholders
        if missing or unused:
            raise TypeError(f"template placeholders unfilled: {sorted(missing)}, "
                            f"keywords unused: {sorted(unused)}\n{self.source}")
        location = _location(origin)
        filler = _Filler(values)
        out: list[gast.stmt] = []
        for stmt in self._tree:
            out.extend(filler.statement(_copy(stmt, location)))
        return out

    def substitute_expr(self, origin: gast.AST | None = None, **values: Any) -> gast.expr:
        """Like ``substitute`` for a template that is one expression."""
        (stmt,) = self.substitute(origin, **values)
        if not isinstance(stmt, gast.Expr):
            raise TypeError(f"template is not an expression:\n{self.source}")
        return stmt.value


def _location(origin) -> tuple | None:
    """``origin``'s location fields, or None when it has none."""
    if origin is None or getattr(origin, "lineno", None) is None:
        return None
    return tuple(getattr(origin, field, None) for field in _LOC_FIELDS)


def _copy(node, location: tuple | None):
    """A fresh copy of a template tree (faster than ``copy.deepcopy``), located at
    ``location`` (template nodes have no location of their own)."""
    kind = node.__class__
    if kind in _SHARED:
        return node  # a context or an operator: no fields, no location, never changed
    new = kind.__new__(kind)  # every field is set below: no need for gast's checks
    for field in node._fields:
        value = getattr(node, field, None)
        if type(value) is list:
            value = [_copy(v, location) if isinstance(v, gast.AST) else v for v in value]
        elif isinstance(value, gast.AST):
            value = _copy(value, location)
        setattr(new, field, value)
    if location is not None and "lineno" in kind._attributes:
        new.lineno, new.col_offset, new.end_lineno, new.end_col_offset = location
    return new


# Node types with no fields: contexts (`Load`) and operators (`Add`).
_SHARED = frozenset(t for t in vars(gast).values()
                    if isinstance(t, type) and issubclass(t, gast.AST)
                    and not getattr(t, "_fields", ())
                    and issubclass(t, (gast.expr_context, gast.boolop, gast.operator,
                                       gast.unaryop, gast.cmpop)))
# Per node type, its fields that can hold nodes a placeholder may stand in.
_FILLED_FIELDS: dict[type, tuple[str, ...]] = {}


class _Filler(gast.NodeTransformer):
    def __init__(self, values: dict[str, Any]):
        self.values = values

    def visit(self, node):
        kind = node.__class__
        method = _FILLER_METHODS.get(kind)
        if method is None:
            method = _FILLER_METHODS[kind] = getattr(_Filler, "visit_" + kind.__name__,
                                                     _Filler.generic_visit)
        return method(self, node)

    def statement(self, stmt: gast.stmt) -> list[gast.stmt]:
        if (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Name)
                and stmt.value.id in self.values):
            value = self.values[stmt.value.id]
            if isinstance(value, gast.expr):
                return [gast.Expr(value=value)]
            if isinstance(value, gast.stmt):
                return [value]
            if isinstance(value, Sequence) and all(isinstance(v, gast.stmt) for v in value):
                return list(value) or [gast.Pass()]
            raise TypeError(f"placeholder {stmt.value.id} stands for statements; "
                            f"got {value!r}")
        return [self.visit(stmt)]

    def _body(self, stmts: list[gast.stmt]) -> list[gast.stmt]:
        out = []
        for s in stmts:
            out.extend(self.statement(s))
        return out

    def generic_visit(self, node):
        # Written out (not NodeTransformer's) so that spliced user statements
        # and inserted expressions are never visited again.
        kind = node.__class__
        fields = _FILLED_FIELDS.get(kind)
        if fields is None:
            fields = _FILLED_FIELDS[kind] = tuple(
                f for f in kind._fields if f not in ("ctx", "op", "type_comment"))
        for field in fields:
            old = getattr(node, field, None)
            if isinstance(old, list):
                if old and isinstance(old[0], gast.stmt):
                    setattr(node, field, self._body(old))
                else:
                    items = [self.visit(i) if isinstance(i, gast.AST) else i for i in old]
                    setattr(node, field, [i for i in items if i is not None])
            elif isinstance(old, gast.AST):
                setattr(node, field, self.visit(old))
        return node

    def visit_FunctionDef(self, node: gast.FunctionDef):
        if node.name in self.values:
            value = self.values[node.name]
            if not isinstance(value, str):
                raise TypeError(f"placeholder {node.name} names a function; got {value!r}")
            node.name = value
        return self.generic_visit(node)

    def visit_arguments(self, node: gast.arguments):
        args: list = []
        for arg in node.args:
            if isinstance(arg, gast.Name) and arg.id in self.values:
                value = self.values[arg.id]
                names = (value,) if isinstance(value, str) else tuple(value)
                if not all(isinstance(n, str) for n in names):
                    raise TypeError(f"placeholder {arg.id} stands for parameters; got {value!r}")
                args.extend(name(n, gast.Param()) for n in names)
            else:
                args.append(arg)
        node.args = args
        return node

    def visit_Name(self, node: gast.Name):
        if node.id not in self.values:
            return node
        value = self.values[node.id]
        if isinstance(value, str):
            return gast.copy_location(name(value, node.ctx), node)
        if isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
            elts = [gast.copy_location(name(v, type(node.ctx)()), node) for v in value]
            return gast.copy_location(gast.Tuple(elts=elts, ctx=node.ctx), node)
        if isinstance(value, gast.expr):
            if not isinstance(node.ctx, gast.Load):
                raise TypeError(f"placeholder {node.id} is assigned to; it needs a name")
            return value
        raise TypeError(f"placeholder {node.id} stands for an expression; got {value!r}")


_FILLER_METHODS: dict[type, Any] = {}


# Pieces every block converter (`if`, `while`, `for`) emits.

def state_init(names, defined, origin) -> gast.expr:
    """The tuple of current values of ``names``; unbound ones as ``ag__.Undefined``."""
    elts = []
    for n in names:
        if n in defined:
            elts.append(name(n))
        else:
            elts.append(_UNDEFINED.substitute_expr(origin, NAME=literal(n)))
    node = gast.Tuple(elts=elts, ctx=gast.Load())
    set_location(node, origin)
    return node


_UNDEFINED = Template("ag__.Undefined(NAME)")


def shared_cells(names, copies=None, origin=None) -> list[gast.stmt]:
    """``nonlocal`` for ``names`` (and ``name = copy`` for those passed in as copies)."""
    if not names:
        return []
    stmts = [gast.Nonlocal(names=list(names))]
    for cell, copy in (copies or {}).items():
        stmts.append(gast.Assign(targets=[name(cell, gast.Store())],
                                 value=name(copy), type_comment=None))
    for stmt in stmts:
        set_location(stmt, origin)
    return stmts


def mark_generated(stmts):
    """Marks the functions among ``stmts`` as made by a converter (see liveness)."""
    for s in stmts:
        if isinstance(s, gast.FunctionDef):
            anno.set(s, anno.Anno.GENERATED, True)
    return stmts


def cell_params(state, captured, namer, origin):
    """Loop function parameters; captured names arrive as copies put into their cells."""
    copies = {n: namer.new(n) for n in state if n in captured}
    params = tuple(copies.get(n, n) for n in state)
    return params, shared_cells(tuple(copies), {n: copies[n] for n in copies}, origin)


def with_returns(stmts: list[gast.stmt], names, roles: Mapping[str, Role]) -> list[gast.stmt]:
    """Adds ``returns=k`` to the operator call ending ``stmts`` when ``names[k]``
    holds the function's return value (``roles``: the namer's), so the runtime's
    messages say so by its position, never by the variable's name."""
    for k, n in enumerate(names):
        if roles.get(n) is Role.RETURN_VALUE:
            call = stmts[-1].value
            call.keywords.append(gast.keyword(arg="returns", value=literal(k)))
            break
    return stmts

