"""The base of every converter: its context, and a fast walk over the tree.

A converter subclasses :class:`Converter` and writes ``visit_<NodeType>``
methods, as with ``ast.NodeTransformer``, whose contract it keeps: a visit
returns the node, a replacement, a list of nodes (spliced into a block) or
``None`` (removed). Two things differ, both for speed, since every pass walks
the whole function:

* the method for a node type is looked up once per converter class;
* expression contexts (``Load``, ``Store``, ...) and operators (``Add``, ...),
  which have no children and no converter rewrites, are not visited.

Methods of a class defined inside the converted function are converted;
statements at class level keep their plain meaning (``visit_ClassDef``).
"""

from __future__ import annotations

import ast

import gast

from autograph.context import Context
from autograph.jumps import convert_methods

# Node types with no fields that hold nodes: contexts and operators.
_LEAVES = frozenset(
    t for t in vars(gast).values()
    if isinstance(t, type) and issubclass(t, (gast.expr_context, gast.boolop, gast.operator,
                                              gast.unaryop, gast.cmpop)))

# Per node type, the fields that may hold child nodes.
_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {}


def _fields(kind: type[ast.AST]) -> tuple[str, ...]:
    fields = _FIELDS.get(kind)
    if fields is None:
        fields = _FIELDS[kind] = tuple(f for f in kind._fields
                                       if f not in ("ctx", "op", "type_comment"))
    return fields


# Node types whose fields never hold nodes: a walk has nothing to visit in them.
_ATOMS = frozenset({gast.Constant, gast.Pass, gast.Break, gast.Continue, gast.Global,
                    gast.Nonlocal, gast.alias})


def _as_is(self, node):
    return node


def _name(self, node):
    # a name holds a node only as a parameter's annotation
    return node if node.annotation is None else Converter.generic_visit(self, node)


class Converter(gast.NodeTransformer):
    """A ``NodeTransformer`` that knows the conversion's :class:`Context`."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    def visit(self, node):
        kind = node.__class__
        table = self.__class__.__dict__.get("_dispatch")
        if table is None:
            table = {}
            self.__class__._dispatch = table
        method = table.get(kind)
        if method is None:
            method = table[kind] = self._method(kind)
        return method(self, node)

    @classmethod
    def _method(cls, kind):
        method = getattr(cls, "visit_" + kind.__name__, None)
        if method is not None:
            return method
        if cls.generic_visit is Converter.generic_visit:  # no children to rewrite
            if kind in _ATOMS:
                return _as_is
            if kind is gast.Name:
                return _name
        return cls.generic_visit

    def generic_visit(self, node):
        for field in _fields(node.__class__):
            old = getattr(node, field, None)
            if type(old) is list:
                new = []
                for value in old:
                    if isinstance(value, gast.AST) and value.__class__ not in _LEAVES:
                        value = self.visit(value)
                        if value is None:
                            continue
                        if not isinstance(value, gast.AST):
                            new.extend(value)
                            continue
                    new.append(value)
                old[:] = new
            elif isinstance(old, gast.AST) and old.__class__ not in _LEAVES:
                value = self.visit(old)
                if value is None:
                    delattr(node, field)
                else:
                    setattr(node, field, value)
        return node

    def visit_ClassDef(self, node: gast.ClassDef):
        return convert_methods(self, node)
