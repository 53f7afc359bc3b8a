"""Item assignment that works on JAX arrays too: ``x[i] = v`` rebinds ``x``.

    x[i] = v            ->   x = ag__.setitem(x, i, v)
    x[i, j] += v        ->   x = ag__.setitem(x, (i, j), v, op='+')
    x[i][j] = v         ->   x = ag__.setitem(x, i, ag__.setitem(x[i], j, v))
    self.buf[k] = v     ->   ag__.setitem_attr(self, 'buf', k, v)

``ag__.setitem`` decides by type at run time: a JAX array (traced or not)
gets a new array, ``x.at[i].set(v)`` (``x.at[i].set(x[i] + v)`` for ``+=``,
which, like NumPy, writes a repeated index once); a list, dict, NumPy array
or any other object is updated in place, as in Python, and handed back. So
one converted function works for both, and a JAX array updated this way is
carried through branches and loops like any other variable. Another name
bound to the same JAX array does not see the update. For an attribute
(``self.buf[k] = v``), the attribute is rebound only when its value is a JAX
array, which is allowed only where attribute assignment is. A global or a
closure's variable is never rebound: ``CACHE[k] = v`` keeps Python's meaning.
"""

from __future__ import annotations

import gast

from autograph import templates
from autograph.analysis import activity
from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.Subscript,)  # the pass is skipped when the tree has none
REQUIRES = ()  # a function's local names are computed only when one of its items is stored

_OPS = {gast.Add: "+", gast.Sub: "-", gast.Mult: "*", gast.Div: "/", gast.FloorDiv: "//",
        gast.Mod: "%", gast.Pow: "**", gast.MatMult: "@", gast.BitAnd: "&", gast.BitOr: "|",
        gast.BitXor: "^", gast.LShift: "<<", gast.RShift: ">>"}

_SET = templates.Template("ag__.setitem(OBJ, INDEX, VALUE)")
_SET_OP = templates.Template("ag__.setitem(OBJ, INDEX, VALUE, op=OP)")
_SET_ATTR = templates.Template("ag__.setitem_attr(OBJ, ATTR, INDEX, VALUE)")
_SET_ATTR_OP = templates.Template("ag__.setitem_attr(OBJ, ATTR, INDEX, VALUE, op=OP)")


def _load(node):
    """A fresh copy of ``node`` (a name, attribute or subscript chain) read, not stored."""
    if isinstance(node, gast.Name):
        return gast.copy_location(gast.Name(id=node.id, ctx=gast.Load(), annotation=None,
                                            type_comment=None), node)
    if isinstance(node, gast.Attribute):
        return gast.copy_location(gast.Attribute(value=_load(node.value), attr=node.attr,
                                                 ctx=gast.Load()), node)
    if isinstance(node, gast.Subscript):
        return gast.copy_location(gast.Subscript(value=_load(node.value), slice=node.slice,
                                                 ctx=gast.Load()), node)
    return node


def _index(node):
    """The subscript as a value: ``a:b`` becomes ``slice(a, b, None)``, in tuples too."""
    if isinstance(node, gast.Slice):
        parts = [p if p is not None else templates.literal(None)
                 for p in (node.lower, node.upper, node.step)]
        call = gast.Call(func=gast.Name(id="slice", ctx=gast.Load(), annotation=None,
                                        type_comment=None), args=parts, keywords=[])
        return gast.copy_location(call, node)
    if isinstance(node, gast.Tuple):
        return gast.copy_location(gast.Tuple(elts=[_index(e) for e in node.elts],
                                             ctx=gast.Load()), node)
    return node


def _convertible(target) -> bool:
    """A subscript whose base is a name, or an attribute or subscript chain of one."""
    node = target
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    return isinstance(node, gast.Name) and isinstance(target, gast.Subscript)


class _Transformer(Converter):
    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.functions: list[list] = []   # [node, its local names or None (not computed)]

    def visit_FunctionDef(self, node):
        self.functions.append([node, None])
        try:
            return self.generic_visit(node)
        finally:
            self.functions.pop()

    def _rebindable(self, target) -> bool:
        """Only a local variable can be rebound to the new array: a global or a
        closure's variable keeps Python's meaning (in place, or JAX's own error)."""
        node = target
        while isinstance(node, gast.Subscript):
            node = node.value
        if isinstance(node, gast.Attribute):
            return True
        current = self.functions[-1]
        if current[1] is None:
            current[1] = activity.function_locals(current[0])
        return node.id in current[1]

    def _update(self, target: gast.Subscript, value, op, origin):
        """The statement that stores ``value`` (combined by ``op``) at ``target``."""
        base = target.value
        op_arg = {} if op is None else {"OP": templates.literal(op)}
        if isinstance(base, gast.Attribute):
            template = _SET_ATTR if op is None else _SET_ATTR_OP
            call = template.substitute_expr(origin, OBJ=_load(base.value),
                                            ATTR=templates.literal(base.attr),
                                            INDEX=_index(target.slice), VALUE=value, **op_arg)
            return gast.copy_location(gast.Expr(value=call), origin)
        template = _SET if op is None else _SET_OP
        call = template.substitute_expr(origin, OBJ=_load(base), INDEX=_index(target.slice),
                                        VALUE=value, **op_arg)
        if isinstance(base, gast.Subscript):  # x[i][j] = v: store the updated x[i] in x
            return self._update(base, call, None, origin)
        assign = gast.Assign(targets=[gast.Name(id=base.id, ctx=gast.Store(), annotation=None,
                                                type_comment=None)],
                             value=call, type_comment=None)
        return gast.copy_location(assign, origin)

    def visit_Assign(self, node: gast.Assign):
        target = node.targets[0]
        if len(node.targets) == 1 and _convertible(target) and self._rebindable(target):
            return self._update(target, node.value, None, node)
        return node

    def visit_AugAssign(self, node: gast.AugAssign):
        if (_convertible(node.target) and self._rebindable(node.target)
                and type(node.op) in _OPS):
            return self._update(node.target, node.value, _OPS[type(node.op)], node)
        return node


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
