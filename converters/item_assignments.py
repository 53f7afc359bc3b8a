"""Item assignment that works on JAX arrays too: ``x[i] = v`` rebinds ``x``.

    x[i] = v            ->   x = ag__.setitem(x, i, v)
    x[i, j] += v        ->   x = ag__.setitem(x, (i, j), v, op=ag__.operator.iadd)
    x[i][j] = v         ->   x = ag__.setitem(x, i, ag__.setitem(x[i], j, v))
    self.buf[k] = v     ->   ag__.setitem_attr(self, 'buf', k, v)
    x[f()][j] += v      ->   index = f()
                             x = ag__.setitem(x, index, ag__.setitem(x[index], j, v,
                                                                     op=ag__.operator.iadd))
    a, x[i] = u, v      ->   (a, value) = (u, v)
                             x = ag__.setitem(x, i, value)

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

Every part of the target is evaluated once, in Python's order: for ``=`` the
value first, then the object, each index and each intermediate item from
left to right; for ``op=`` those, then the item, then the value. The nested
call evaluates an outer index twice and the value last, which matters only
when some part has an effect (a call other than JAX's and math's functions,
a walrus, a comprehension). Then each part up to the last effectful one,
other than local names and constants, is bound to a fresh name first, in
that order; an item read for ``op=`` before an effectful value becomes
Python's own ``item = x[i]``, ``item op= v`` and a plain store of ``item``.
Unpacking and chained targets (``a, x[i] = ...``, ``x[i] = y[j] = v``)
unpack into fresh names from the first converted target on, then store each
in order.
"""

from __future__ import annotations

import dataclasses

import gast

from autograph import anno, templates
from autograph.analysis import activity
from autograph.context import Context
from autograph.transformer import Converter

NODES = (gast.Subscript,)  # the pass is skipped when the tree has none
REQUIRES = ()  # a function's local names are computed only when one of its items is stored

# an augmented assignment's operator, as the in-place function of Python's `operator`
_OPS = {kind: templates.Template(f"ag__.operator.{name}") for kind, name in (
    (gast.Add, "iadd"), (gast.Sub, "isub"), (gast.Mult, "imul"), (gast.Div, "itruediv"),
    (gast.FloorDiv, "ifloordiv"), (gast.Mod, "imod"), (gast.Pow, "ipow"),
    (gast.MatMult, "imatmul"), (gast.BitAnd, "iand"), (gast.BitOr, "ior"),
    (gast.BitXor, "ixor"), (gast.LShift, "ilshift"), (gast.RShift, "irshift"))}

_SET = templates.Template("ag__.setitem(OBJ, INDEX, VALUE)")
_SET_ATTR = templates.Template("ag__.setitem_attr(OBJ, ATTR, INDEX, VALUE)")
_BIND = templates.Template("NAME = VALUE")

# Expressions whose evaluation may have an effect, or see one: a call runs user code, a
# walrus rebinds a name, a comprehension may draw from an iterator.
_EFFECTS = (gast.Call, gast.NamedExpr, gast.Yield, gast.YieldFrom, gast.Await, gast.ListComp,
            gast.SetComp, gast.DictComp, gast.GeneratorExp)
# Calls that only compute a value: JAX's and math's functions, and array methods that
# make a new array (so `x[i] += jnp.sin(y)` stays one call).
_PURE_MODULES = frozenset({"jnp", "lax", "math", "cmath", "jax.numpy", "jax.lax", "jax.nn",
                           "jax.random", "jax.scipy"})
_PURE_METHODS = frozenset({"sum", "mean", "max", "min", "prod", "std", "var", "astype",
                           "reshape", "transpose", "squeeze", "ravel", "flatten", "argmax",
                           "argmin", "cumsum", "cumprod", "conj", "dot", "swapaxes", "clip",
                           "round"})

# The parts of a store: (kind, which subscript) for an index and the item it picks.
_Part = tuple[str, int]
_VALUE, _OWNER, _ATTR, _READ = ("value", 0), ("obj", 0), ("attr", 0), ("read", 0)


def _index_part(k: int) -> _Part:
    return ("index", k)


def _item_part(k: int) -> _Part:
    return ("item", k)


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


def _effectful(node) -> bool:
    """Whether evaluating ``node`` may have an effect (a lambda's body is not evaluated)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, _EFFECTS) and not (isinstance(n, gast.Call) and _pure_call(n)):
            return True
        if not isinstance(n, gast.Lambda):
            stack.extend(gast.iter_child_nodes(n))
    return False


def _pure_call(node: gast.Call) -> bool:
    """``jnp.f(...)``, ``math.f(...)``, ``x.sum()``...: only the arguments may have effects."""
    func = node.func
    if not isinstance(func, gast.Attribute):
        return False
    if func.attr in _PURE_METHODS:
        return True
    path, owner = [], func.value
    while isinstance(owner, gast.Attribute):
        path.append(owner.attr)
        owner = owner.value
    if not isinstance(owner, gast.Name):
        return False
    path.append(owner.id)
    return any(".".join(reversed(path[i:])) in _PURE_MODULES for i in range(len(path)))


def _walrus_targets(node) -> frozenset:
    return frozenset(n.target.id for n in gast.walk(node)
                     if isinstance(n, gast.NamedExpr) and isinstance(n.target, gast.Name))


def _convertible(target) -> bool:
    """A subscript whose base is a name, or an attribute or subscript chain of one."""
    node = target
    while isinstance(node, (gast.Subscript, gast.Attribute)):
        node = node.value
    return isinstance(node, gast.Name) and isinstance(target, gast.Subscript)


def _leaves(target):
    """The targets a (possibly nested, possibly starred) unpacking target assigns."""
    if isinstance(target, (gast.Tuple, gast.List)):
        for elt in target.elts:
            yield from _leaves(elt)
    elif isinstance(target, gast.Starred):
        yield from _leaves(target.value)
    else:
        yield target


@dataclasses.dataclass
class _Store:
    """``root[s1]...[sn] (op)= value`` taken apart; ``root`` is a name, or ``owner.attr``."""
    root: gast.Name | None  # the local variable rebound, when the root is a name
    owner: gast.expr | None  # the object whose attribute is the root, otherwise
    attr: str | None
    slices: list            # s1 ... sn as written
    value: gast.expr
    op: gast.operator | None

    @classmethod
    def of(cls, target: gast.Subscript, value, op) -> "_Store":
        slices = []
        node = target
        while isinstance(node, gast.Subscript):
            slices.append(node.slice)
            node = node.value
        slices.reverse()
        if isinstance(node, gast.Attribute):
            return cls(None, node.value, node.attr, slices, value, op)
        return cls(node, None, None, slices, value, op)

    def python_order(self) -> list[_Part]:
        """The parts in the order Python evaluates them."""
        n = len(self.slices)
        target: list[_Part] = [_OWNER, _ATTR] if self.root is None else []
        for k in range(n):
            target += [_index_part(k)] + ([_item_part(k)] if k < n - 1 else [])
        return target + [_READ, _VALUE] if self.op else [_VALUE] + target

    def call_order(self) -> list[_Part]:
        """The parts in the order the nested ``ag__.setitem`` call evaluates them."""
        n = len(self.slices)
        root: list[_Part] = [_OWNER, _ATTR] if self.root is None else []
        order: list[_Part] = ([_OWNER] if self.root is None else []) + [_index_part(0)]
        for k in range(1, n):
            order += root
            for j in range(k):
                order += [_index_part(j), _item_part(j)]
            order.append(_index_part(k))
        order.append(_VALUE)
        # setitem reads the item for op= after its arguments, setitem_attr the attribute
        late: list[_Part] = [_READ] if self.op else []
        if self.root is None:
            late = [_ATTR] + late if n == 1 else late + [_ATTR]
        return order + late


@dataclasses.dataclass
class _Function:
    """A function being converted; its names are computed when one of its items is stored."""
    node: gast.FunctionDef
    locals: frozenset | None = None  # its local names
    stable: frozenset = frozenset()  # those no nested function rebinds (`nonlocal`)


class _Transformer(Converter):
    def __init__(self, ctx: Context):
        super().__init__(ctx)
        self.functions: list[_Function] = []
        self.walrus: frozenset = frozenset()  # names a walrus in the current statement binds

    def visit_FunctionDef(self, node):
        self.functions.append(_Function(node))
        try:
            return self.generic_visit(node)
        finally:
            self.functions.pop()

    def _locals(self) -> tuple[frozenset, frozenset]:
        """The current function's local names, and those no nested function rebinds."""
        current = self.functions[-1]
        if current.locals is None:
            current.locals = activity.function_locals(current.node)
            rebound = {n for child in gast.walk(current.node) if isinstance(child, gast.Nonlocal)
                       for n in child.names}
            current.stable = current.locals - rebound
        return current.locals, current.stable

    def _rebindable(self, target) -> bool:
        """Only a local variable can be rebound to the new array: a global or a
        closure's variable keeps Python's meaning (in place, or JAX's own error)."""
        node = target
        while isinstance(node, gast.Subscript):
            node = node.value
        if isinstance(node, gast.Attribute):
            return True
        return node.id in self._locals()[0]

    def _converted(self, target) -> bool:
        return _convertible(target) and self._rebindable(target)

    def _trivial(self, node) -> bool:
        """A constant, or a local name nothing in the statement can rebind (in
        tuples and slices too): it reads the same whenever it is evaluated."""
        if isinstance(node, gast.Name):
            if anno.get(node, anno.Anno.GENERATED):
                return True  # a fresh name this pass bound
            return node.id in self._locals()[1] and node.id not in self.walrus
        if isinstance(node, gast.Constant):
            return True
        if isinstance(node, gast.UnaryOp):
            return isinstance(node.operand, gast.Constant)
        if isinstance(node, gast.Tuple):
            return all(self._trivial(e) for e in node.elts)
        if isinstance(node, gast.Slice):
            return all(p is None or self._trivial(p) for p in (node.lower, node.upper, node.step))
        return False

    def _parts(self, store: _Store) -> dict[_Part, gast.expr | None]:
        """Each part's expression (None: an item read), as it stands in Python's order."""
        parts: dict[_Part, gast.expr | None] = {
            _VALUE: store.value, _OWNER: store.owner, _ATTR: None, _READ: None}
        for k, s in enumerate(store.slices):
            parts[_index_part(k)] = s
            parts[_item_part(k)] = None
        return parts

    def _bound_first(self, store: _Store) -> list[_Part]:
        """The parts to bind to fresh names before the call, in Python's order."""
        parts = self._parts(store)
        python = store.python_order()
        effects = [i for i, p in enumerate(python)
                   if parts[p] is not None and _effectful(parts[p])]
        if not effects:
            return []
        plain = {p for p in python if parts[p] is not None and self._trivial(parts[p])}
        if [p for p in store.call_order() if p not in plain] == [p for p in python
                                                                if p not in plain]:
            return []  # the call already evaluates each part once, in Python's order
        return [p for p in python[:effects[-1] + 1] if p not in plain]

    def _store(self, target: gast.Subscript, value, op, origin) -> list[gast.stmt]:
        """The statements that store ``value`` (combined by ``op``) at ``target``."""
        store = _Store.of(target, value, op)
        lowering = _Lowering(store, self.ctx.namer, origin)
        for part in self._bound_first(store):
            lowering.bind(part)
        return lowering.statements()

    def _assign(self, target, value, origin) -> list[gast.stmt]:
        """``target = value`` for one target of an assignment, ``value`` already evaluated."""
        if self._converted(target):
            return self._store(target, value, None, origin)
        leaves = list(_leaves(target))
        if not isinstance(target, (gast.Tuple, gast.List)) or not any(
                self._converted(leaf) for leaf in leaves):
            return [gast.copy_location(gast.Assign(targets=[target], value=value,
                                                   type_comment=None), origin)]
        first = next(i for i, leaf in enumerate(leaves) if self._converted(leaf))
        fresh = {id(leaf): self.ctx.namer.new("value") for leaf in leaves[first:]}

        def pattern(node):
            if isinstance(node, (gast.Tuple, gast.List)):
                return type(node)(elts=[pattern(e) for e in node.elts], ctx=gast.Store())
            if isinstance(node, gast.Starred):
                return gast.Starred(value=pattern(node.value), ctx=gast.Store())
            return templates.name(fresh[id(node)], gast.Store()) if id(node) in fresh else node

        unpack = gast.Assign(targets=[pattern(target)], value=value, type_comment=None)
        stmts = [gast.copy_location(unpack, origin)]
        for leaf in leaves[first:]:
            stmts += self._assign(leaf, templates.name(fresh[id(leaf)]), origin)
        return stmts

    def visit_Assign(self, node: gast.Assign):
        if not any(self._converted(leaf) for t in node.targets for leaf in _leaves(t)):
            return node
        self.walrus = _walrus_targets(node)
        try:
            if len(node.targets) == 1:
                return self._assign(node.targets[0], node.value, node)
            value, stmts = node.value, []
            if not (isinstance(value, (gast.Name, gast.Constant)) and self._trivial(value)):
                bound = self.ctx.namer.new("value")  # evaluated once, stored in each target
                stmts += _BIND.substitute(node, NAME=bound, VALUE=value)
                value = templates.name(bound)
            for target in node.targets:
                stmts += self._assign(target, gast.copy_location(_copy_simple(value), value),
                                      node)
            return stmts
        finally:
            self.walrus = frozenset()

    def visit_AugAssign(self, node: gast.AugAssign):
        if not (self._converted(node.target) and type(node.op) in _OPS):
            return node
        self.walrus = _walrus_targets(node)
        try:
            return self._store(node.target, node.value, node.op, node)
        finally:
            self.walrus = frozenset()


class _Lowering:
    """Builds the statements for one ``_Store``, with some of its parts bound first."""

    def __init__(self, store: _Store, namer, origin):
        self.store, self.namer, self.origin = store, namer, origin
        self.bound: dict[_Part, str] = {}  # part -> the fresh name it is bound to
        self.stmts: list[gast.stmt] = []

    def use(self, part: _Part, default):
        """The part's fresh name if it is bound, else ``default``."""
        return templates.name(self.bound[part]) if part in self.bound else default

    def container(self, k: int):
        """The object the k-th subscript indexes (``x``, ``self.buf``, ``x[i]``, ...)."""
        store = self.store
        if k > 0:
            item = gast.Subscript(value=self.container(k - 1), slice=self.subscript(k - 1),
                                  ctx=gast.Load())
            return self.use(_item_part(k - 1), item)
        if store.root is not None:
            return _load(store.root)
        attribute = gast.Attribute(value=self.use(_OWNER, _load(store.owner)), attr=store.attr,
                                   ctx=gast.Load())
        return self.use(_ATTR, attribute)

    def subscript(self, k: int):
        """The k-th subscript as written in a load (``x[a:b]``)."""
        return self.use(_index_part(k), self.store.slices[k])

    def index(self, k: int):
        """The k-th subscript as a value (``slice(a, b, None)``)."""
        return self.use(_index_part(k), _index(self.store.slices[k]))

    def bind(self, part: _Part) -> None:
        """Binds ``part`` to a fresh name; the next statements use the name."""
        store, last = self.store, len(self.store.slices) - 1
        if part == _VALUE and store.op is not None:
            return  # bound together with the item it updates (_READ)
        if part == _VALUE:
            expr, base = store.value, "value"
        elif part == _OWNER:
            expr, base = store.owner, "obj"
        elif part == _ATTR:
            expr, base = self.container(0), str(store.attr)
        elif part == _READ:
            expr, base = gast.Subscript(value=self.container(last), slice=self.subscript(last),
                                        ctx=gast.Load()), "item"
        elif part[0] == "index":
            expr, base = _index(store.slices[part[1]]), "index"
        else:  # an intermediate item
            expr, base = self.container(part[1] + 1), "item"
        name = self.namer.new(base)
        self.stmts += _BIND.substitute(self.origin, NAME=name, VALUE=expr)
        self.bound[part] = name
        if part == _READ:  # Python's own `item op= value`, then a plain store of the item
            update = gast.AugAssign(target=templates.name(name, gast.Store()), op=store.op,
                                    value=store.value)
            self.stmts.append(gast.copy_location(update, self.origin))

    def statements(self) -> list[gast.stmt]:
        """The bindings, then the (nested) ``ag__.setitem`` call."""
        store, origin, last = self.store, self.origin, len(self.store.slices) - 1
        op = None if store.op is None or _READ in self.bound else _OPS[
            type(store.op)].substitute_expr(origin)
        new = self.use(_READ, self.use(_VALUE, store.value))
        for k in range(last, 0, -1):
            call = _SET.substitute_expr(origin, OBJ=self.container(k), INDEX=self.index(k),
                                        VALUE=new)
            new = _with_keywords(call, op=op if k == last else None)
        op = op if last == 0 else None
        if store.root is None:
            call = _SET_ATTR.substitute_expr(
                origin, OBJ=self.use(_OWNER, _load(store.owner)),
                ATTR=templates.literal(store.attr), INDEX=self.index(0), VALUE=new)
            current = self.use(_ATTR, None) if _ATTR in self.bound else None
            call = _with_keywords(call, op=op, current=current)
            return self.stmts + [gast.copy_location(gast.Expr(value=call), origin)]
        call = _SET.substitute_expr(origin, OBJ=self.container(0), INDEX=self.index(0),
                                    VALUE=new)
        rebound = gast.copy_location(gast.Name(id=store.root.id, ctx=gast.Store(),
                                               annotation=None, type_comment=None), store.root)
        assign = gast.Assign(targets=[rebound], value=_with_keywords(call, op=op),
                             type_comment=None)
        return self.stmts + [gast.copy_location(assign, origin)]


def _copy_simple(node: gast.Name | gast.Constant) -> gast.expr:
    """A fresh copy of a name (keeping its marks) or a constant."""
    if isinstance(node, gast.Constant):
        return gast.Constant(value=node.value, kind=None)
    copy = _load(node)
    anno.copy(node, copy, anno.Anno.GENERATED)
    return copy


def _with_keywords(call: gast.Call, **keywords) -> gast.Call:
    """``call`` with ``name=value`` appended for each keyword whose value is not None
    (a string is passed as a literal, an expression as it is)."""
    for key, value in keywords.items():
        if value is not None:
            if isinstance(value, str):
                value = templates.literal(value)
            call.keywords.append(gast.keyword(arg=key, value=value))
    return call


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx).visit(node)
