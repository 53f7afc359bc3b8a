"""Conversions between the standard library's trees (``ast``) and gast's.

The converters work on gast trees; the parser and the compiler speak ``ast``.
gast ships both conversions (``gast.ast_to_gast``, ``gast.gast_to_ast``) as
generic ``NodeTransformer`` walks: a method lookup by name per node, a keyword
dict per constructor call. The two here give the same trees (``gast.dump``
with attributes is equal) faster (``to_gast`` of the 14-line loop function of
``benchmarks/conversion.py``: 135 us with gast, 43 us here), because per node
class:

* the field and attribute names and the target class are looked up once and
  kept in a table;
* a parsed node's ``__dict__`` (its fields and location) is copied in one
  step, and only the values that are nodes or lists are converted;
* a node is made by assigning that dict, without a constructor call.

What gast changes besides the classes is done here too::

    ast                                   gast
    arg(arg='x', annotation=A)            Name(id='x', ctx=Param(), annotation=A,
                                               type_comment=None)
    Name(id='x', ctx=Load())              Name(id='x', ctx=Load(), annotation=None,
                                               type_comment=None)
    ExceptHandler(type=E, name='e')       ExceptHandler(type=E, name=Name(id='e',
                                               ctx=Store(), annotation=None,
                                               type_comment=None))
    FunctionDef / ClassDef (3.11)         ... and type_params=[]
    TypeVar / TypeVarTuple / ParamSpec    ... and default_value=None (3.12)
"""

from __future__ import annotations

import ast
import sys
import threading
from typing import Any, Callable

import gast

# CPython keeps the depth of its conversions between C and Python trees
# (`ast.parse`, `compile` of a tree) in interpreter-wide state, so two threads
# converting at once can fail with "SystemError: AST constructor recursion depth
# mismatch" (python/cpython#106905): each such call autograph makes holds this lock.
CPYTHON_TREES = threading.Lock()


def parse(text: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(text)``, holding :data:`CPYTHON_TREES`."""
    with CPYTHON_TREES:
        return ast.parse(text, filename=filename)


def parse_gast(text: str) -> Any:
    """``gast.parse(text)``: the gast tree of :func:`parse`."""
    return to_gast(parse(text))

_LOCATION = ("lineno", "col_offset", "end_lineno", "end_col_offset")
_MISSING = object()
# values that are no nodes and hold none
_PLAIN = frozenset({str, int, float, complex, bool, bytes, type(None), type(...)})

# ast class -> its converter (a node of that class -> the gast node, or None
# where gast has no such class, as gast's own walk gives)
_TO_GAST: dict[type, Callable[[Any], Any]] = {}


def to_gast(node: Any) -> Any:
    """The gast tree of a standard-library tree (``gast.ast_to_gast``, faster).

    Lists are converted item by item; anything else that is not a node (a name,
    a constant's value, None) is returned as it is.
    """
    convert = _TO_GAST.get(node.__class__)
    if convert is not None:
        return convert(node)
    if isinstance(node, list):
        return [to_gast(item) for item in node]
    if isinstance(node, ast.AST):
        return _converter(node.__class__)(node)
    return node


def _converter(kind: type[ast.AST]) -> Callable[[Any], Any]:
    convert = _TO_GAST.get(kind)
    if convert is None:
        special = _SPECIAL.get(kind.__name__)
        convert = _TO_GAST[kind] = special or _generic(kind)
    return convert


def _generic(kind: type[ast.AST]) -> Callable[[Any], Any]:
    """The converter that copies every field and attribute the node has."""
    target = getattr(gast, kind.__name__, None)
    if target is None:
        return lambda node: None
    fields = tuple(kind._fields)
    attributes = tuple(kind._attributes)
    make = target.__new__
    if not fields and not attributes:  # contexts and operators
        return lambda node: make(target)
    table = _TO_GAST
    names = frozenset(fields + attributes)

    def convert(node):
        state = node.__dict__.copy()
        if state.keys() != names:  # a made node: some field absent, or more attributes
            return _convert_present(node, target, fields, attributes)
        for name in fields:
            value = state[name]
            kind = value.__class__
            if kind in _PLAIN:
                continue
            child = table.get(kind)
            if child is not None:
                state[name] = child(value)
            elif kind is list:
                state[name] = [(table.get(item.__class__) or to_gast)(item) for item in value]
            else:
                state[name] = to_gast(value)
        new = make(target)
        new.__dict__ = state
        return new

    return convert


def _convert_present(node, target, fields, attributes):
    """The gast node of the fields and attributes ``node`` has (by ``getattr``)."""
    state = {}
    for name in fields:
        value = getattr(node, name, _MISSING)
        if value is not _MISSING:
            state[name] = to_gast(value)
    for name in attributes:
        value = getattr(node, name, _MISSING)
        if value is not _MISSING:
            state[name] = value
    new = target.__new__(target)
    new.__dict__ = state
    return new


def _made(kind, state, node, copy_location):
    """A ``kind`` node of fields ``state`` at the location of ``node``.

    The location is set as ``copy_location`` sets it; that function itself is
    called only for a node with some location absent, whose rules differ.
    """
    new = kind.__new__(kind)
    new.__dict__ = state
    source = node.__dict__
    lineno = source.get("lineno")
    col_offset = source.get("col_offset")
    end_lineno = source.get("end_lineno")
    end_col_offset = source.get("end_col_offset")
    if None in (lineno, col_offset, end_lineno, end_col_offset):
        return copy_location(new, node)
    state["lineno"] = lineno
    state["col_offset"] = col_offset
    state["end_lineno"] = end_lineno
    state["end_col_offset"] = end_col_offset
    return new


def _name(node):
    ctx = node.ctx
    state = {"id": node.id, "ctx": (_TO_GAST.get(ctx.__class__) or to_gast)(ctx),
             "annotation": None, "type_comment": None}
    return _made(gast.Name, state, node, ast.copy_location)


def _arg(node):
    state = {"id": node.arg, "ctx": gast.Param(), "annotation": to_gast(node.annotation),
             "type_comment": to_gast(node.type_comment)}
    return _made(gast.Name, state, node, ast.copy_location)


def _except_handler(node):
    if not node.name:
        return _generic_handler(node)
    state = {"type": to_gast(node.type), "name": gast.Name(node.name, gast.Store(), None, None),
             "body": to_gast(node.body)}
    return _made(gast.ExceptHandler, state, node, ast.copy_location)


_generic_handler = _generic(ast.ExceptHandler)
_SPECIAL: dict[str, Callable[[Any], Any]] = {
    "Name": _name, "arg": _arg, "ExceptHandler": _except_handler}

if sys.version_info < (3, 12):  # no type parameters yet: gast adds an empty list

    def _function(kind):
        def convert(node):
            state = {"name": node.name, "args": to_gast(node.args), "body": to_gast(node.body),
                     "decorator_list": to_gast(node.decorator_list),
                     "returns": to_gast(node.returns),
                     "type_comment": to_gast(node.type_comment), "type_params": []}
            return _made(kind, state, node, gast.copy_location)
        return convert

    def _class(node):
        state = {"name": node.name, "bases": to_gast(node.bases),
                 "keywords": to_gast(node.keywords), "body": to_gast(node.body),
                 "decorator_list": to_gast(node.decorator_list), "type_params": []}
        return _made(gast.ClassDef, state, node, gast.copy_location)

    _SPECIAL.update(FunctionDef=_function(gast.FunctionDef),
                    AsyncFunctionDef=_function(gast.AsyncFunctionDef), ClassDef=_class)

if sys.version_info[:2] == (3, 12):  # type parameters without defaults: gast adds None

    def _type_param(kind, with_bound):
        def convert(node):
            state = {"name": node.name}
            if with_bound:
                state["bound"] = to_gast(node.bound)
            state["default_value"] = None
            return _made(kind, state, node, gast.copy_location)
        return convert

    _SPECIAL.update(TypeVar=_type_param(gast.TypeVar, True),
                    TypeVarTuple=_type_param(gast.TypeVarTuple, False),
                    ParamSpec=_type_param(gast.ParamSpec, False))


# gast class -> (ast class, its fields)
_TO_AST: dict[type, tuple[type, tuple[str, ...]]] = {}


def to_ast(node: Any) -> Any:
    """The standard-library tree of a gast tree (``gast.gast_to_ast``, faster).

    Fields keep their names, except that gast spells parameters and handler
    names as ``Name`` nodes where ``ast`` has ``arg`` nodes and strings.
    """
    if isinstance(node, list):
        return [to_ast(n) for n in node]
    if not isinstance(node, gast.AST):
        return node
    kind = node.__class__
    entry = _TO_AST.get(kind)
    if entry is None:
        target = getattr(ast, kind.__name__)
        entry = _TO_AST[kind] = (target, tuple(target._fields))
    target, fields = entry
    if kind is gast.arguments:
        return ast.arguments(
            posonlyargs=[_to_arg(a) for a in node.posonlyargs],
            args=[_to_arg(a) for a in node.args], vararg=_to_arg(node.vararg),
            kwonlyargs=[_to_arg(a) for a in node.kwonlyargs],
            kw_defaults=to_ast(node.kw_defaults), kwarg=_to_arg(node.kwarg),
            defaults=to_ast(node.defaults))
    new = target()
    for field in fields:
        value = getattr(node, field, None)
        if field == "name" and kind is gast.ExceptHandler and value is not None:
            value = value.id
        elif type(value) is list:
            value = [to_ast(v) for v in value]
        elif isinstance(value, gast.AST):
            value = to_ast(value)
        elif value is None and field == "type_params":  # (Python 3.12+)
            value = []
        setattr(new, field, value)
    for attr in _LOCATION:
        value = getattr(node, attr, None)
        if value is not None:
            setattr(new, attr, value)
    return new


def _to_arg(node):
    if node is None:
        return None
    new = ast.arg(arg=node.id, annotation=to_ast(node.annotation),
                  type_comment=getattr(node, "type_comment", None))
    for attr in _LOCATION:
        value = getattr(node, attr, None)
        if value is not None:
            setattr(new, attr, value)
    return new
