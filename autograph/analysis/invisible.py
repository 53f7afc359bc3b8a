"""Proves that staging a static loop cannot change what the program does.

A `for` loop over a static trip count runs, under plain ``jax.jit``, as the
Python loop that unrolls it: its index is a Python int, its Python numbers stay
Python numbers, every call runs once per iteration at trace time. Staged as one
``lax.scan``, the body runs *once*, on a traced index. The two agree only where
the body does nothing a single trace could do differently. This module proves
that, or names the first thing it cannot prove; whatever it cannot prove runs
as the Python loop. It is an allowlist: nothing is assumed harmless because no
check saw a problem.

    for i in range(100):                  proven: arithmetic, `jnp` by identity,
        x = x * 0.9 + jnp.sin(x) * i      the index only in arithmetic

    for i in range(100):                  not proven: `log.info` is a call of
        x = x * 0.9                       nothing known to be free of effects
        log.info("step")                  (it would log once, staged)

    for i in range(100):                  not proven: the index reaches a
        k = i + 1                         format string, where a traced int32
        x = x + P.get(f"w{k}", 0.0)       is not the Python int it is unrolled

The proof is an abstract run of the body (and, to a bound, of the user
functions it calls) over *kinds* of values as they are in the unrolled run:

========  ===================================================================
``TRACED``  a traced array (or pytree of them): traced whether staged or not
``PYTHON``  a value known while tracing that staging leaves as it is: Python
            numbers, strings, concrete arrays, functions, modules
``LOOP``    known while tracing when unrolled, traced when staged: the index,
            items of a concrete array, a carried Python number, and what is
            computed from them
``START``   a carried variable's Python start value (``acc = 0.0``), and what
            is computed from it: as ``LOOP`` in the body; gone once the
            loop has assigned the variable a traced value
``OBJECT``  any other object, whose methods and operators are unknown
========  ===================================================================

A value's kind is a set of these (what it may be, over every iteration). The
body is proven when

* every call is of something allowed by identity (``jax.numpy``, ``lax``,
  ``jax.nn``, ``jax.random``, ``jax.scipy``, ``jax.tree_util``, ``math``,
  ``operator``, pure built-ins, array methods, read-only methods of lists and
  dicts) or of a user function whose own body is proven (recursively, within
  ``Limits``); functions handed to allowed functions (``jax.tree.map(lambda
  ...)``, ``lax.scan``) are proven too;
* nothing outside the loop's own state is written: no attribute, no
  ``global``/``nonlocal``, no item of a container that is not the loop's;
  no ``try``, ``with``, ``import``, ``yield``;
* a ``LOOP`` value meets only arithmetic, comparisons, array indexing and
  allowed array functions (never a format, a dict key, ``isinstance``,
  ``str``, a NumPy or ``math`` function, or a call not proven);
* every variable the loop carries is assigned traced values (a Python number
  the body keeps as a Python number would become an array), save a Python
  int the staged loop follows exactly, and the flags of ``break``/``return``.

The names the body reads from outside are resolved by identity when the loop
runs (``Scope``); ``autograph explain`` runs the same proof before anything is
known and reports what it could decide.
"""

from __future__ import annotations

import ast
import builtins
import collections
import contextlib
import dataclasses
import enum
import functools
import inspect
import linecache
import math
import operator
import os
import re
import sys
import sysconfig
import threading
import types
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import gast

from autograph import errors, jax_internals, tree_formats
from autograph.analysis import activity

__all__ = ["Kind", "Limits", "Scope", "SourceScope", "Verdict", "kind_of", "prove_loop",
           "prove_source_loop"]


class Kind(enum.Flag):
    """What a value may be in the unrolled (Python) run of a loop."""

    TRACED = enum.auto()
    PYTHON = enum.auto()
    LOOP = enum.auto()
    OBJECT = enum.auto()
    START = enum.auto()  # as LOOP, from a carried variable's Python start value


# known while tracing when unrolled, traced when staged
STAGED = Kind.LOOP | Kind.START


NOTHING = Kind(0)


@dataclasses.dataclass(frozen=True)
class Limits:
    """How far the proof looks before it gives up (and the loop runs as Python).

    Attributes:
      depth: the deepest chain of user functions it follows.
      functions: the most user-function bodies one proof reads.
    """

    depth: int = 8
    functions: int = 64


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The proof's answer for one loop.

    Attributes:
      proven: whether the staged body behaves as the unrolled Python loop.
      blocker: what blocked the proof, as a clause (``it calls `log.info`, which
        is not known to be free of effects``), or None.
      location: the user's line of the blocker, or None.
      pending: calls whose callee only the run can tell (``explain``, which
        runs nothing), as source text; empty at run time.
      python_ints: carried variables that start as Python ints and that the body
        computes from the index and Python values alone (``n += 1``): proven on
        condition that the staged loop follows them exactly and hands them back
        as Python ints, as the unrolled loop does (the caller checks).
      attributes: ``(object, name)`` of attributes the body sets to Python
        numbers: proven on the same condition.
    """

    proven: bool
    blocker: str | None = None
    location: errors.Location | None = None
    pending: tuple[str, ...] = ()
    python_ints: tuple[str, ...] = ()
    attributes: tuple[tuple[Any, str], ...] = ()

    @property
    def why(self) -> str:
        where = f" ({self.location.short})" if self.location is not None else ""
        return f"{self.blocker}{where}"


class _Blocked(Exception):
    def __init__(self, what: str, node: Any = None):
        super().__init__(what)
        self.what, self.node = what, node
        self.location: errors.Location | None = None


_UNSET: Any = object()
_UNKNOWN_CALLEE: Any = object()  # explain: a callee only the run can tell


@dataclasses.dataclass(frozen=True, eq=False)
class Val:
    """An abstract value: its kinds, the object itself where known, whether it may
    be a Python container (lists, dicts, tuples, namedtuples, dataclasses), and
    whether it is a container the body made itself (``fresh``)."""

    kind: Kind
    obj: Any = _UNSET
    container: bool = True
    fresh: bool = False
    at: bool = False  # `x.at` / `x.at[i]`: JAX's indexed updates
    parts: tuple | None = None  # a tuple's items, where known one by one
    outside: bool = False  # reached from a module's globals: never the loop's own

    def __eq__(self, other) -> bool:
        # the object by identity: `==` of a NumPy array is elementwise, and an object of
        # the program's own may run code of its own
        return isinstance(other, Val) and self.obj is other.obj and (
            self.kind, self.container, self.fresh, self.at, self.parts, self.outside) == (
            other.kind, other.container, other.fresh, other.at, other.parts, other.outside)

    __hash__ = None  # type: ignore[assignment]

    def join(self, other: Val) -> Val:
        same = self.obj is other.obj
        parts = None
        if (self.parts is not None and other.parts is not None
                and len(self.parts) == len(other.parts)):
            parts = tuple(a.join(b) for a, b in zip(self.parts, other.parts))
        return Val(self.kind | other.kind, self.obj if same else _UNSET,
                   self.container or other.container, self.fresh and other.fresh,
                   self.at and other.at, parts, self.outside or other.outside)


def _join(vals) -> Val:
    vals = list(vals)
    if not vals:
        return Val(Kind.PYTHON, container=False)
    out = vals[0]
    for v in vals[1:]:
        out = out.join(v)
    return out


def _data(*vals: Val, container: bool = False) -> Val:
    """The value an operation on data computes from ``vals``: traced if one surely
    is; else what they may be, where a value traced only when staged (``LOOP``)
    makes the result so too."""
    if any(v.kind == Kind.TRACED for v in vals):
        return Val(Kind.TRACED, container=container)
    kind = NOTHING
    for v in vals:
        kind |= v.kind
    kind &= ~Kind.OBJECT
    if kind & STAGED:
        kind &= ~Kind.PYTHON
    return Val(kind or Kind.PYTHON, container=container)


# ----------------------------------------------------------------------------
# kinds of run-time values

def _is_tracer(x) -> bool:
    from jax.core import Tracer
    return isinstance(x, Tracer)


def _is_array(x) -> bool:
    import jax
    import numpy as np
    return isinstance(x, (jax.Array, np.ndarray, np.generic))


def _is_numpy_array(x) -> bool:
    import numpy as np
    return isinstance(x, np.ndarray)


# a namedtuple's field: reads an item of the tuple
_TUPLE_GETTER = type(vars(collections.namedtuple("_Pair", "a b"))["a"])

_IMMUTABLE = (bool, int, float, complex, str, bytes, type(None), type(Ellipsis), range, slice)


def kind_of(value: Any, *, carried: bool = False, _depth: int = 0) -> Val:
    """The abstract value of a run-time value; ``carried``: a loop's state, whose
    values known while tracing become traced once staged (``LOOP``)."""
    concrete = Kind.START if carried else Kind.PYTHON
    if _unassigned(value):  # a variable the loop assigns first: nothing yet
        return Val(NOTHING, container=False)
    if _is_tracer(value):
        return Val(Kind.TRACED, container=False)
    if _is_numpy_array(value):  # changed in place by `a[i] = v`
        return Val(concrete, obj=value, container=True)
    if _is_array(value) or type(value) in _IMMUTABLE:
        return Val(concrete, obj=value if type(value) in (str, bytes) else _UNSET,
                   container=False)
    if isinstance(value, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType,
                          type, functools.partial, types.MethodType)):
        return Val(Kind.PYTHON, obj=value, container=False)
    plain = type(value) in (tuple, list, dict) or (
        isinstance(value, tuple) and hasattr(type(value), "_fields"))  # namedtuples
    if plain and isinstance(value, tuple) and not _plain_tuple(type(value)):
        return Val(Kind.OBJECT, obj=value)  # a namedtuple with methods of its own
    if _depth < 4 and plain and (dict.__len__(value) if isinstance(value, dict)
                                 else tuple.__len__(value) if isinstance(value, tuple)
                                 else list.__len__(value)) <= 4096:
        items = (dict.values(value) if isinstance(value, dict)
                 else tuple.__iter__(value) if isinstance(value, tuple) else list.__iter__(value))
        kind = NOTHING
        if isinstance(value, dict) and any(kind_of(k, _depth=4).kind & Kind.OBJECT
                                           for k in dict.keys(value)):
            kind |= Kind.OBJECT  # keys of the program's own classes: hashed, compared
        for item in items:
            kind |= kind_of(item, carried=carried, _depth=_depth + 1).kind
            if dataclasses.is_dataclass(item) and not isinstance(item, type) and _own_behaviour(
                    type(item), methods=True):
                kind |= Kind.OBJECT  # read from the container, its methods are unknown
        return Val(kind or concrete, obj=value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and _own_behaviour(
            type(value)):
        return Val(Kind.OBJECT, obj=value)
    if _depth < 4 and dataclasses.is_dataclass(value) and not isinstance(value, type):
        kind = NOTHING
        for f in dataclasses.fields(value):
            kind |= kind_of(getattr(value, f.name, None), carried=carried,
                            _depth=_depth + 1).kind
        return Val(kind or concrete, obj=value)
    return Val(Kind.OBJECT, obj=value)


# special methods Python calls with no call in the source; a class of the program's own
# that defines one (beyond those `dataclasses` and `namedtuple` generate) is an object
_IMPLICIT = ("__bool__", "__len__", "__iter__", "__contains__", "__getitem__", "__hash__",
             "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__format__",
             "__str__", "__repr__", "__getattr__", "__getattribute__", "__index__",
             "__int__", "__float__", "__complex__", "__round__", "__abs__", "__neg__",
             "__pos__", "__invert__", "__jax_array__", "__array__", "tree_flatten") + tuple(
    f"__{p}{op}__" for op in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow",
                              "matmul", "and", "or", "xor", "lshift", "rshift", "divmod")
    for p in ("", "r", "i"))


@functools.lru_cache(maxsize=512)
def _own_behaviour(cls: type, methods: bool = False) -> bool:
    """Whether instances of ``cls`` run code of the program's own where Python calls a
    special method (or a property); with ``methods``, also through methods of their
    own (an object whose identity the proof loses, an item of a list, has methods the
    proof cannot follow)."""
    for klass in cls.__mro__:
        if klass.__module__ == "builtins" or _library_class(klass):
            continue
        for name, attr in vars(klass).items():
            if name in ("__init__", "__post_init__", "__setattr__", "__delattr__",
                        "__match_args__", "tree_unflatten"):
                continue
            fn = getattr(attr, "__func__", attr)
            if isinstance(fn, types.FunctionType):
                if fn.__code__.co_filename == "<string>":
                    continue  # made by `dataclasses` or `namedtuple`
                if name in _IMPLICIT or (methods and not name.startswith("__")):
                    return True
            elif isinstance(attr, (property, functools.cached_property)):
                return True
    return False


def _library_class(klass: type) -> bool:
    module = sys.modules.get(klass.__module__)
    return module is not None and _library_file(module)


def _plain_tuple(cls: type) -> bool:
    """A ``namedtuple`` class (or ``tuple``) with no code of the program's own."""
    return cls is tuple or not _own_behaviour(cls)


def _unassigned(value) -> bool:
    """Whether ``value`` is the runtime's stand-in for a variable not yet assigned."""
    t = type(value)
    return t.__name__ in ("Undefined", "UndefinedReturn") and t.__module__.endswith(
        "runtime.values")


# ----------------------------------------------------------------------------
# what is allowed, by identity

# modules of functions that compute on arrays and touch nothing else
_PUBLIC_PURE = ("numpy", "lax", "nn", "random", "scipy", "tree_util", "tree", "image", "ops",
                "dtypes", "debug", "experimental.ode", "nn.initializers")
# their functions name the private modules that define them as `__module__`
_PURE_MODULES = tuple(f"jax.{m}" for m in _PUBLIC_PURE) + jax_internals.private_modules(
    _PUBLIC_PURE + ("debugging", "prng", "ad_checkpoint", "custom_derivatives"))

# JAX entry points that transform a function (proven with it) or run it staged
_JAX_TRANSFORMS = ("jit", "vmap", "grad", "value_and_grad", "jacfwd", "jacrev", "jacobian",
                   "hessian", "jvp", "vjp", "linearize", "checkpoint", "remat", "named_call",
                   "eval_shape", "pure_callback", "custom_jvp", "custom_vjp", "linear_transpose",
                   "make_jaxpr")

_PURE_BUILTINS = frozenset({
    abs, len, min, max, sum, range, enumerate, zip, reversed, round, pow, divmod, float, int,
    bool, complex, tuple, list, dict, set, frozenset, sorted, any, all, map, filter, slice,
    isinstance, issubclass, type, callable, hasattr, getattr, iter, ord, chr, hash, id, str,
    repr, format, bin, hex, oct, ascii, object, max, min,
})
# built-ins that give a Python value of their argument itself: never of a `LOOP`
_PYTHON_USES = frozenset({isinstance, issubclass, type, callable, hasattr, getattr, hash, id,
                          str, repr, format, bin, hex, oct, ascii, ord, chr, iter})
# built-ins whose results follow their arguments' kinds
_NUMERIC_BUILTINS = frozenset({abs, min, max, sum, round, pow, divmod, float, int, bool,
                               complex, any, all, len})

_ARRAY_METHODS = frozenset({
    "all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "choose", "clip",
    "compress", "conj", "conjugate", "cumprod", "cumsum", "diagonal", "dot", "flatten", "item",
    "max", "mean", "min", "nonzero", "prod", "ptp", "ravel", "repeat", "reshape", "round",
    "searchsorted", "squeeze", "std", "sum", "swapaxes", "take", "trace", "transpose", "var",
    "view", "tolist", "copy", "sort",
    # on `x.at[i]`
    "set", "get", "add", "subtract", "multiply", "divide", "power", "apply",
})
_ARRAY_ATTRIBUTES = frozenset({"shape", "dtype", "ndim", "size", "weak_type", "itemsize",
                               "nbytes"})
_ARRAY_VIEWS = frozenset({"T", "mT", "real", "imag", "at", "flat"})
_READ_METHODS = frozenset({"get", "keys", "values", "items", "copy", "index", "count",
                           "_replace", "_asdict", "startswith", "endswith", "join", "split",
                           "strip", "lower", "upper", "format"})
_MUTATING_METHODS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update",
                               "setdefault", "popitem", "add", "discard", "sort", "reverse"})

_OPERATOR_WRITES = frozenset({"setitem", "delitem", "__setitem__", "__delitem__"})

_AG_PURE = frozenset({"range_", "enumerate_", "zip_", "reversed_", "and_", "or_", "not_",
                      "if_exp", "in_", "ld", "Undefined", "UndefinedReturn", "is_sequence",
                      "is_mapping", "has_match_attrs", "match_attr", "sequence_rest",
                      "mapping_rest", "item_from_end", "Bound", "operator", "assert_",
                      "raised", "reraised", "in_flight", "outer_assigned", "len_", "str_", "repr_"})
_AG_CONTROL = frozenset({"if_stmt", "for_stmt", "while_stmt"})
_AG_FORMATS = frozenset({"fstring", "str_format", "percent_format"})


@functools.lru_cache(maxsize=1)
def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    try:
        import site
        dirs.update(site.getsitepackages())
        dirs.add(site.getusersitepackages())
    except Exception:  # noqa: BLE001 - a stripped `site`
        pass
    return tuple(os.path.realpath(d) + os.sep for d in dirs if d)


def _is_library_code(fn) -> bool:
    """Whether ``fn`` was loaded from the standard library or an installed package."""
    code = getattr(fn, "__code__", None)
    filename = getattr(code, "co_filename", "")
    if not filename or filename.startswith("<"):
        return False
    return _is_library_file(filename)


@functools.lru_cache(maxsize=4096)
def _is_library_file(filename: str) -> bool:
    real = os.path.realpath(filename)
    return real.startswith(_library_dirs()) or _is_autograph(real)


def _is_autograph(path: str) -> bool:
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    root = os.path.dirname(here)
    return any(path.startswith(os.path.join(root, d) + os.sep)
               for d in ("autograph", "converters", "runtime"))


def _module_of(obj) -> str:
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str):
        module = getattr(type(obj), "__module__", "") or ""
    return module


# Libraries of pure functions built for `jax.jit`: optax's gradient transformations
# (whose `init`/`update` are closures of its own), Equinox's tree and filter functions
_PURE_LIBRARIES = ("optax", "equinox")


def _is_pure_jax(obj) -> bool:
    module = _module_of(obj)
    if module.startswith(_PURE_MODULES) or module.split(".")[0] in _PURE_LIBRARIES:
        return True
    t = type(obj).__module__ or ""
    return t.startswith(_PURE_MODULES[:1] + jax_internals.private_modules(("numpy",))) and (
        callable(obj))


def _jax_transform(obj) -> bool:
    import jax
    for name in _JAX_TRANSFORMS:
        if getattr(jax, name, None) is obj:
            return True
    # Equinox's `filter_grad`, `filter_vmap`, ...: they return the function transformed
    name = getattr(obj, "__name__", "")
    return (isinstance(name, str) and name.startswith("filter_")
            and _module_of(obj).split(".")[0] == "equinox")


def _never(f: Any) -> bool:
    return False


def _nothing(f: Any) -> Any:
    return None


_DO_NOT_CONVERT: Callable[[Any], bool] = _never
_CONVERTED_FROM: Callable[[Any], Any] = _nothing


def set_runtime_checks(do_not_convert: Callable[[Any], bool],
                       converted_from: Callable[[Any], Any]) -> None:
    """Registers how to tell a function marked by ``autograph.do_not_convert``, and
    the user function behind one made by ``autograph.convert`` (or None); the runtime
    keeps both tables."""
    global _DO_NOT_CONVERT, _CONVERTED_FROM
    _DO_NOT_CONVERT, _CONVERTED_FROM = do_not_convert, converted_from


# ----------------------------------------------------------------------------
# scopes: where names the body does not bind are found

class Scope:
    """Names a function reads from outside its body: closure cells, globals, built-ins.

    ``Scope(None)`` knows nothing (``explain``): each name read is unknown.
    """

    def __init__(self, fn: Any = None, *, carried: frozenset = frozenset(),
                 owned: frozenset = frozenset()):
        self.fn = fn
        self.carried = carried  # the loop's variables
        self.owned = owned  # ids of the lists and dicts the loop carries

    def lookup(self, name: str) -> Any:
        fn = self.fn
        if fn is None:  # explain: only the built-ins are known, unless shadowed
            return getattr(builtins, name, _UNKNOWN_CALLEE)
        code = fn.__code__
        if name in code.co_freevars and fn.__closure__ is not None:
            cell = fn.__closure__[code.co_freevars.index(name)]
            try:
                return cell.cell_contents
            except ValueError:  # an empty cell: a name not yet bound
                return _UNSET
        g = fn.__globals__
        if name in g:
            return _Global(g[name])
        b = g.get("__builtins__", builtins)
        b = b if isinstance(b, dict) else vars(b)
        return b.get(name, _UNSET)


class _Global:
    """A value a scope found among a module's globals."""

    def __init__(self, value):
        self.value = value


class SourceScope(Scope):
    """What a module's source alone tells (``autograph explain``): the built-ins, and
    the modules it imports from libraries already loaded (``jnp``, ``lax``, ``math``).
    Any other name is known only when the loop runs."""

    def __init__(self, imports: Mapping[str, str], functions: Mapping[str, Any] = {}):
        super().__init__(None)
        self.imports = dict(imports)
        self.functions = {name: SourceFunction(node, self) for name, node in functions.items()}

    def lookup(self, name: str) -> Any:
        if name in self.functions:
            return self.functions[name]
        path = self.imports.get(name)
        if path is not None:
            module = sys.modules.get(path)
            if module is None and "." in path:  # `from jax import numpy as jnp`
                parent = sys.modules.get(path.rsplit(".", 1)[0])
                module = getattr(parent, path.rsplit(".", 1)[1], None)
            if module is not None and not _is_library_module(module):
                return _UNKNOWN_CALLEE
            return module if module is not None else _UNKNOWN_CALLEE
        return getattr(builtins, name, _UNKNOWN_CALLEE)


class SourceFunction:
    """A module-level function of the source ``explain`` reads: proven from its tree."""

    def __init__(self, node, scope: Scope):
        self.node, self.scope = node, scope


def _is_library_module(module) -> bool:
    if not isinstance(module, types.ModuleType):
        return callable(module) and _is_library_code(module)
    filename = vars(module).get("__file__")  # not through a module's own `__getattr__`
    return filename is None or (isinstance(filename, str) and os.path.realpath(
        filename).startswith(_library_dirs()))


def _library_file(module: types.ModuleType) -> bool:
    filename = vars(module).get("__file__")
    return isinstance(filename, str) and os.path.realpath(filename).startswith(_library_dirs())


# ----------------------------------------------------------------------------
# the abstract run

class _Budget:
    def __init__(self, limits: Limits):
        self.limits = limits
        self.functions = 0
        self.active: set = set()
        self.pending: list[str] = []
        self.proven: dict[tuple, Val] = {}  # user functions by argument kinds: the result
        self.written: dict[tuple[int, str], tuple[Any, str]] = {}  # attributes set to
        # values known while tracing: the staged loop must hand them back as they are


def _literal_names(call: gast.Call) -> tuple[str, ...]:
    """The ``names=('a', 'b')`` a control-flow call of converted code is given."""
    for k in call.keywords:
        if k.arg == "names" and isinstance(k.value, gast.Tuple):
            return tuple(e.value for e in k.value.elts
                         if isinstance(e, gast.Constant) and isinstance(e.value, str))
    return ()


class _Choosing:
    """Inside branches (or loop bodies) a value traced once staged chooses: what
    ``body`` assigns and returns there gains ``LOOP``."""

    def __init__(self, body: "_Body"):
        self.body = body

    def __enter__(self):
        self.body.chosen += 1

    def __exit__(self, *exc):
        self.body.chosen -= 1


class _Body:
    """The abstract run of one function body (a loop body, or a user function)."""

    def __init__(self, scope: Scope, budget: _Budget, depth: int, filename: str | None,
                 generated: bool):
        self.scope = scope
        self.budget = budget
        self.depth = depth
        self.filename = filename
        self.generated = generated  # converted code, whose lines map to the user's
        self.env: dict[str, Val] = {}
        self.assigned: dict[str, list] = {}  # name -> [(functions it is in, value)]
        self.within: tuple[str, ...] = ()  # the functions the body defines, being read
        self.traced_branches: set[str] = set()  # those an `if` on a traced value runs
        self.returns: list[Val] = []
        self.local_fns: dict[str, Any] = {}
        self.calling: set[int] = set()  # functions the body defines, being read for a call
        self.loop_items: dict[str, gast.AST] = {}  # nested loop body -> its iterable
        self.chosen = 0  # inside branches a Python condition chooses

    # -- names
    def read(self, name: str, node) -> Val:
        if name in self.env:
            return self.env[name]
        if name in self.local_fns:
            return Val(Kind.PYTHON, obj=self.local_fns[name], container=False)
        value = self.scope.lookup(name)
        if value is _UNKNOWN_CALLEE:
            return Val(Kind.TRACED | Kind.PYTHON, obj=_UNKNOWN_CALLEE)
        if value is _UNSET:
            return Val(Kind.PYTHON, container=False)  # raises NameError as in Python
        if isinstance(value, _Global):
            return dataclasses.replace(kind_of(value.value), outside=True)
        return kind_of(value)

    def bind(self, name: str, val: Val) -> bool:
        if self.chosen and val.kind != Kind.TRACED:
            # unrolled, the branch a Python condition takes in the last iteration
            # decides what the variable holds after the loop
            val = dataclasses.replace(val, kind=val.kind | Kind.LOOP)
        old = self.env.get(name)
        new = val if old is None else old.join(val)
        self.assigned.setdefault(name, []).append((self.within, val))
        if new != old:
            self.env[name] = new
            return True
        return False

    def assigned_value(self, name: str) -> Val | None:
        """What the body assigns to ``name``, as the code after the statement that
        assigns it sees it: traced where a branch of a staged `if` assigns it."""
        entries = self.assigned.get(name)
        if not entries:
            return None
        vals = [Val(Kind.TRACED, container=v.container) if set(chain) & self.traced_branches
                else v for chain, v in entries]
        return _join(vals)

    # -- statements
    def run(self, stmts) -> None:
        for k in range(8):  # to a fixed point: kinds only grow
            before = dict(self.env), len(self.budget.written)
            self.block(stmts)
            if k and (self.env, len(self.budget.written)) == before:
                return
        self.block(stmts)

    def block(self, stmts) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, s) -> None:
        try:
            method = getattr(self, "s_" + type(s).__name__, None)
            if method is None:
                raise _Blocked(f"it holds a `{_statement_name(s)}` statement", s)
            method(s)
        except _Blocked as b:
            if b.location is None:  # the innermost body that sees it knows the file
                b.location = _location(self, b.node if getattr(b.node, "lineno", None)
                                       else s)
            raise

    def s_Expr(self, s):
        self.expr(s.value)

    def s_Pass(self, s):
        pass

    s_Break = s_Continue = s_Pass

    def s_Assign(self, s):
        if self._control_call(s.value):
            self.expr(s.value)
            return
        val = self.expr(s.value)
        for t in s.targets:
            self.store(t, val)

    def s_AnnAssign(self, s):
        if s.value is not None:
            self.store(s.target, self.expr(s.value))

    def s_AugAssign(self, s):
        target = s.target
        load = _as_load(target)
        left, right = self.expr(load), self.expr(s.value)
        self.operands(s, left, right)  # `x += obj` runs `obj.__radd__`
        if right.kind & STAGED and _is_numpy_array(left.obj):
            # unrolled, NumPy adds a Python number into the array in place; staged, the
            # traced operand's own `__radd__` makes a new array, leaving it unchanged
            raise _Blocked(f"it updates the NumPy array `{_text(load)}` in place with a "
                           f"value computed from the loop index", s)
        if isinstance(s.op, gast.Mod) and right.kind & STAGED and _may_be_text(left, load):
            raise _Blocked("it formats a value computed from the loop index with `%=`", s)
        self.store(target, _data(left, right,
                                 container=left.container and isinstance(s.op, gast.Add)))

    def s_Return(self, s):
        val = self.expr(s.value) if s.value is not None else Val(Kind.PYTHON, container=False)
        if self.chosen and val.kind != Kind.TRACED:
            # a return under a test of the index: staged, the converted function merges
            # what its paths return into a traced value
            val = dataclasses.replace(val, kind=val.kind | Kind.LOOP)
        self.returns.append(val)

    def _chosen_by(self, val: Val):
        """A context in which what is assigned (and returned) is chosen by ``val``: a
        test or trip count that is traced once staged (``STAGED``) makes it so."""
        return _Choosing(self) if val.kind & STAGED else contextlib.nullcontext()

    def truth(self, val: Val, node) -> Val:
        """``val`` tested for truth (``if``, ``while``, ``not``, ``and``/``or``)."""
        if _runs_code(val, TRUTH):
            raise _Blocked(f"it tests `{_text(node)}` for truth, an object whose "
                           f"`__bool__` is not known to be free of effects", node)
        return val

    # In a function the body calls (read as the user wrote it; converted when it runs),
    # an `if`, `while` or `for` whose test or trip count comes from the index is a
    # Python one unrolled and a staged one staged: what it assigns or returns is then
    # known while tracing unrolled, and traced staged (`LOOP`).
    def s_If(self, s):
        test = self.truth(self.expr(s.test), s.test)
        with self._chosen_by(test):
            self.block(s.body)
            self.block(s.orelse)

    def s_While(self, s):
        bound = set(self.env)
        test = self.truth(self.expr(s.test), s.test)
        with self._chosen_by(test):
            self.block(s.body)
            test = test.join(self.truth(self.expr(s.test), s.test))
        with self._chosen_by(test):
            self.block(s.body)
            self.block(s.orelse)
        self._counts_python(s, test, bound)

    def s_For(self, s):
        bound = set(self.env)
        iterable = self.expr(s.iter)
        item = self.element(iterable)
        self.store(s.target, item)
        with self._chosen_by(iterable):
            self.block(s.body)
            self.block(s.body)
            self.block(s.orelse)
        self._counts_python(s, iterable, bound)

    def _counts_python(self, loop, trips: Val, bound: set) -> None:
        """``_refuse_python_carried`` for a loop of a function the body calls, where
        ``trips`` (its test or iterable) comes from the index: what it carries are the
        names it assigns that ``bound`` holds (those bound before it)."""
        if trips.kind & STAGED:
            self._refuse_python_carried(
                [n.id for n in activity.walk_own(loop.body) if isinstance(n, gast.Name)
                 and isinstance(n.ctx, gast.Store) and n.id in bound], loop)

    def _refuse_python_carried(self, names, node) -> None:
        """Refuses an inner loop whose trip count may come from the index that carries
        a Python number among ``names`` (`n += 1`, `s += 0.1`, `p *= 3`): exact (or
        float64) unrolled, int32 (float32) in the staged loop it becomes, which nothing
        follows step by step."""
        for name in names:
            val = self.env.get(name)
            if val is not None and val.kind & Kind.PYTHON and not val.container:
                raise _Blocked(f"an inner loop whose trip count may come from the loop "
                               f"index carries `{name}`, a Python value", node)

    def s_Raise(self, s):
        if s.exc is not None:
            self.expr(s.exc)

    def s_Assert(self, s):
        self.truth(self.expr(s.test), s.test)
        if s.msg is not None:
            self.expr(s.msg)

    def s_Delete(self, s):
        for t in s.targets:
            if not isinstance(t, gast.Name):
                raise _Blocked(f"it deletes `{_text(t)}`, which is not a local variable", s)

    def s_FunctionDef(self, s):
        if s.decorator_list:
            raise _Blocked(f"it defines `{s.name}` with a decorator", s)
        self.local_fns[s.name] = s
        # a function the converter made (a branch, a nested loop's body) or the user's:
        # its names are the body's own (the converter passes state in and out), and
        # parameters it does not share take what a caller may pass
        item = self.loop_items.get(s.name)
        params = _params(s.args)
        default_vals = {p: self.expr(d) for p, d in _defaults(s.args).items()}
        for k, p in enumerate(params):
            if p in self.env:
                continue
            if k == 0 and item is not None:
                self.bind(p, self.element(self.expr(item)))
            else:  # what a caller may pass, or the default (`def h(o=OBJ)`)
                anything = Val(Kind.TRACED | Kind.LOOP | Kind.PYTHON)
                self.bind(p, anything.join(default_vals[p]) if p in default_vals else anything)
        self.within += (s.name,)
        try:
            self.block(s.body)
        finally:
            self.within = self.within[:-1]

    def s_Global(self, s):
        raise _Blocked(f"it declares `global {', '.join(s.names)}`", s)

    def s_Nonlocal(self, s):
        # the converter's own: a loop body hands a carried variable to the closures
        # that read it (`nonlocal x; x = x_1`)
        if self.depth == 0 and self.generated and set(s.names) <= self.scope.carried:
            return
        raise _Blocked(f"it declares `nonlocal {', '.join(s.names)}`", s)

    # -- stores
    def store(self, target, val: Val) -> None:
        if isinstance(target, gast.Name):
            self.bind(target.id, val)
        elif isinstance(target, (gast.Tuple, gast.List)):
            if (val.kind & Kind.OBJECT and val.parts is None and not val.fresh
                    and not isinstance(val.obj, (tuple, list))):
                raise _Blocked(f"it unpacks `{_text(target)}` from a value that may be an "
                               f"object, whose `__iter__` is not known to be free of effects",
                               target)
            part = Val(val.kind, container=True)
            if val.parts is not None and len(val.parts) == len(target.elts) and not any(
                    isinstance(elt, gast.Starred) for elt in target.elts):
                for elt, v in zip(target.elts, val.parts):
                    self.store(elt, v)
                return
            for elt in target.elts:
                self.store(elt.value if isinstance(elt, gast.Starred) else elt, part)
        elif isinstance(target, gast.Attribute):
            self.set_attribute(target, val)
        elif isinstance(target, gast.Subscript):
            base = target.value
            self.setitem(base, self.expr(base), self.expr(target.slice), val, target)
        elif isinstance(target, gast.Starred):
            self.store(target.value, val)
        else:
            raise _Blocked(f"it assigns to `{_text(target)}`", target)

    def set_attribute(self, target, val: Val) -> None:
        """``obj.attr = val`` in the loop body itself: carried and set after the loop
        (``runtime.attributes``), so it must hold a traced value and be a plain
        attribute of a plain object; anywhere else, it is a write outside the loop."""
        base = self.expr(target.value) if isinstance(target.value, gast.Name) else None
        obj = _UNSET if base is None else base.obj
        if base is not None and base.outside:
            raise _Blocked(f"it assigns the attribute `{_text(target)}` of an object a "
                           f"module's globals hold", target)
        if (obj is not _UNSET and obj is not _UNKNOWN_CALLEE
                and not isinstance(obj, (types.ModuleType, type) + _IMMUTABLE)
                and _plain(type(obj), "__setattr__")
                and not _descriptor(type(obj), target.attr)):
            if val.kind == Kind.TRACED:
                return
            if not val.kind & (Kind.TRACED | Kind.OBJECT) and not val.container:
                # a Python number counted in an attribute (`a.steps += 1`): staged, the
                # loop must follow it exactly (checked when it has run)
                self.budget.written[(id(obj), target.attr)] = (obj, target.attr)
                return
        why = "" if val.kind == Kind.TRACED else " with a value that is not traced"
        raise _Blocked(f"it assigns the attribute `{_text(target)}`{why}", target)

    def setitem(self, base_node, base: Val, key: Val, val: Val, node) -> Val:
        """``base[key] = val``: an array's functional update, or a container's item."""
        if not base.container:
            return _data(base, key, val)
        if key.kind & STAGED:
            raise _Blocked(f"it uses a value computed from the loop index as a key of "
                           f"`{_text(base_node)}`", node)
        name = base_node.id if isinstance(base_node, gast.Name) else None
        if base.fresh and name is not None:
            return Val(base.kind | val.kind, obj=base.obj, container=True, fresh=True)
        root = base_node
        while isinstance(root, gast.Subscript):  # `b[0][k] = v`: an item of an item
            root = root.value
        if (isinstance(root, gast.Name) and root.id in self.scope.carried and self.depth == 0
                and val.kind == Kind.TRACED and not _is_numpy_array(base.obj)):
            # the loop's own lists and dicts, and those they hold: carried and written
            # back in place (`runtime.in_place`)
            return Val(base.kind | val.kind, obj=base.obj, container=True)
        raise _Blocked(f"it writes an item of `{_text(base_node)}`, which the loop does not "
                       f"own as traced state", node)

    # -- expressions
    def expr(self, e) -> Val:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise _Blocked(f"it holds `{_text(e)}`", e)
        return method(e)

    def e_Constant(self, e):
        return Val(Kind.PYTHON, container=False)

    def e_Name(self, e):
        return self.read(e.id, e)

    def e_BinOp(self, e):
        left, right = self.expr(e.left), self.expr(e.right)
        self.operands(e, left, right)
        if isinstance(e.op, gast.Pow):
            self.array_power(left, right, e)
        if isinstance(e.op, gast.Mod) and right.kind & STAGED and _may_be_text(left, e.left):
            # `"w%s" % i`, or `FMT % i` with a string held in a name
            raise _Blocked("it formats a value computed from the loop index with `%`", e)
        return _data(left, right, container=left.container and right.container)

    def array_power(self, base: Val, exponent: Val, e) -> None:
        """``x ** i``: an array to a Python int's power is repeated multiplication
        under ``jax.jit`` (``integer_pow``), ``lax.pow`` staged."""
        if base.kind & Kind.TRACED and exponent.kind & STAGED:
            raise _Blocked(f"it raises an array to a power computed from the loop index "
                           f"(`{_text(e)}`), which `jax.jit` multiplies out", e)

    def e_UnaryOp(self, e):
        v = self.expr(e.operand)
        if isinstance(e.op, gast.Not):
            self.truth(v, e.operand)
            return Val(_data(v).kind, container=False)
        self.operands(e, v)
        return _data(v)

    def e_BoolOp(self, e):
        vals = [self.truth(self.expr(v), v) for v in e.values]
        return _join(vals)

    def e_Compare(self, e):
        vals = [self.expr(e.left)] + [self.expr(c) for c in e.comparators]
        if not all(isinstance(op, (gast.Is, gast.IsNot)) for op in e.ops):
            self.operands(e, *vals)
        if any(isinstance(op, (gast.Is, gast.IsNot)) for op in e.ops):
            if any(v.kind & STAGED for v in vals):
                # unrolled, a Python number or bool (`flag is True`); staged, an array
                raise _Blocked(f"it tests the identity of a value computed from the loop index "
                               f"(`{_text(e)}`)", e)
            return Val(Kind.PYTHON, container=False)
        return _data(*vals)

    def e_IfExp(self, e):
        test = self.truth(self.expr(e.test), e.test)
        out = self.expr(e.body).join(self.expr(e.orelse))
        if test.kind != Kind.TRACED and out.kind != Kind.TRACED:
            out = dataclasses.replace(out, kind=out.kind | Kind.LOOP)
        return out

    def e_NamedExpr(self, e):
        val = self.expr(e.value)
        self.store(e.target, val)
        return val

    def e_Tuple(self, e):
        vals = [self.expr(v.value if isinstance(v, gast.Starred) else v) for v in e.elts]
        parts = None if any(isinstance(v, gast.Starred) for v in e.elts) else tuple(vals)
        return Val(_join(vals).kind if vals else Kind.PYTHON, container=True, fresh=True,
                   parts=parts if isinstance(e, gast.Tuple) else None)

    e_List = e_Tuple

    def hashed(self, val: Val, node) -> Val:
        """``val`` hashed (a dict key, a set item, looked up in a dict)."""
        if _runs_code(val, HASHING):
            raise _Blocked(f"it hashes `{_text(node)}`, an object whose `__hash__` and "
                           f"`__eq__` are not known to be free of effects", node)
        return val

    def e_Set(self, e):
        for elt in e.elts:
            self.hashed(self.expr(elt.value if isinstance(elt, gast.Starred) else elt), elt)
        val = self.e_Tuple(e)
        if val.kind & STAGED:
            raise _Blocked("it puts a value computed from the loop index in a set", e)
        return val

    def e_Dict(self, e):
        for k in e.keys:
            if k is not None and self.hashed(self.expr(k), k).kind & STAGED:
                raise _Blocked("it uses a value computed from the loop index as a dict key", k)
        vals = [self.expr(v) for v in e.values]
        return Val(_join(vals).kind if vals else Kind.PYTHON, container=True, fresh=True)

    def e_Starred(self, e):
        return self.expr(e.value)

    def e_Slice(self, e):
        vals = [self.expr(v) for v in (e.lower, e.upper, e.step) if v is not None]
        return Val(_data(*vals).kind if vals else Kind.PYTHON, container=False)

    def e_Subscript(self, e):
        base = self.expr(e.value)
        key = self.expr(e.slice)
        if _runs_code(key, HASHING + ("__index__",)) and not (
                key.obj is not _UNSET and isinstance(key.obj, (type, types.ModuleType))):
            raise _Blocked(f"it uses `{_text(e.slice)}` as a key or index, an object whose "
                           f"`__hash__` or `__index__` is not known to be free of effects", e)
        if base.at:
            return Val(_data(base, key).kind, container=False, at=True)
        if base.obj is not _UNSET and base.obj is not _UNKNOWN_CALLEE:
            obj = base.obj
            if isinstance(obj, (dict, list, tuple)) and key.kind & STAGED:
                raise _Blocked(f"it looks up a value computed from the loop index in "
                               f"`{_text(e.value)}`, a Python {type(obj).__name__}", e)
            if type(obj) is dict and isinstance(e.slice, gast.Constant):
                try:
                    return kind_of(obj[e.slice.value])
                except (KeyError, TypeError):
                    return Val(Kind.PYTHON, container=False)
            if isinstance(obj, type) and not _library_subscript(obj):
                raise _Blocked(f"it subscripts the class `{obj.__name__}`, whose "
                               f"`__class_getitem__` is not known to be free of effects", e)
            if isinstance(obj, (types.ModuleType, type)) or inspect.isroutine(obj):
                return Val(Kind.PYTHON | Kind.OBJECT)  # `list[int]`, `Callable[...]`
            if base.kind & Kind.OBJECT:
                raise _Blocked(f"it indexes `{_text(e.value)}`, a `{type(obj).__name__}` "
                               f"whose `__getitem__` is not known to be free of effects", e)
        elif base.kind & Kind.OBJECT:
            raise _Blocked(f"it indexes `{_text(e.value)}`, whose `__getitem__` is not "
                           f"known to be free of effects", e)
        if base.container and key.kind & STAGED and not (base.kind & Kind.TRACED):
            raise _Blocked(f"it looks up a value computed from the loop index in "
                           f"`{_text(e.value)}`, which may be a Python container", e)
        if key.kind & STAGED:
            return _data(base, key, container=base.container)
        return Val(base.kind, container=base.container)

    def e_Attribute(self, e):
        base = self.expr(e.value)
        name = e.attr
        if base.obj is _UNKNOWN_CALLEE:
            return Val(Kind.TRACED | Kind.PYTHON, obj=_UNKNOWN_CALLEE)
        if base.obj is not _UNSET:
            val = self.attribute_of(base.obj, name, e)
            return dataclasses.replace(val, outside=True) if base.outside else val
        if base.kind & Kind.OBJECT:
            raise _Blocked(f"it reads `{_text(e)}` of an object the proof does not know", e)
        if base.at:  # x.at[i].set
            return Val(base.kind, container=False, at=True)
        if base.kind & STAGED and name not in _ARRAY_ATTRIBUTES | _ARRAY_VIEWS:
            # unrolled, a Python int (or NumPy number): `i.__class__`, `i.bit_length`
            raise _Blocked(f"it reads `{_text(e)}` of a value computed from the loop index, "
                           f"which is a Python number unrolled and an array staged", e)
        if name in _ARRAY_ATTRIBUTES:
            return Val(Kind.PYTHON, container=True)
        if name in _ARRAY_VIEWS:
            return Val(base.kind, container=False, at=name == "at")
        return Val(base.kind, container=True)  # a field of a pytree node

    def attribute_of(self, obj, name: str, e) -> Val:
        """``obj.name`` for an object known by identity, read without running its code."""
        if isinstance(obj, types.ModuleType):
            # read from the module's dict: a name it lacks goes to its `__getattr__`
            # (PEP 562), code the proof would run itself, once, where `jax.jit` runs it
            # on every iteration; a library's (lazy submodules) is taken as loading only
            value = vars(obj).get(name, _UNSET)
            if value is _UNSET and type(obj) is types.ModuleType and (
                    "__getattr__" not in vars(obj) or _library_file(obj)):
                value = getattr(obj, name, _UNSET)
            elif value is _UNSET:
                raise _Blocked(f"it reads `{_text(e)}`, which the module `{obj.__name__}` "
                               f"computes with its own `__getattr__`", e)
            return Val(Kind.PYTHON, container=False) if value is _UNSET else kind_of(value)
        if isinstance(obj, _IMMUTABLE) or _is_array(obj):
            if name in _ARRAY_VIEWS and _is_array(obj):
                return Val(kind_of(obj).kind, container=False, at=name == "at")
            return Val(Kind.PYTHON, obj=getattr(obj, name, _UNSET), container=False)
        cls = type(obj)
        if not _plain(cls, "__getattribute__") and not isinstance(obj, type):
            raise _Blocked(f"it reads `{_text(e)}` of a `{cls.__name__}`, whose "
                           f"`__getattribute__` the proof does not follow", e)
        try:
            static = inspect.getattr_static(obj, name)
        except AttributeError:
            if hasattr(cls, "__getattr__"):
                raise _Blocked(f"it reads `{_text(e)}` of a `{cls.__name__}`, whose "
                               f"`__getattr__` the proof does not follow", e) from None
            return Val(Kind.PYTHON, container=False)  # raises AttributeError as in Python
        if isinstance(static, (property, functools.cached_property)) or (
                hasattr(type(static), "__get__") and not isinstance(
                    static, (types.FunctionType, staticmethod, classmethod,
                             types.BuiltinFunctionType, types.MethodDescriptorType,
                             types.WrapperDescriptorType, types.MemberDescriptorType,
                             types.GetSetDescriptorType, _TUPLE_GETTER))):
            raise _Blocked(f"it reads `{_text(e)}`, computed by a `{type(static).__name__}` "
                           f"the proof does not follow", e)
        if (id(obj), name) in self.budget.written:  # carried by the staged loop
            val = kind_of(static)
            return val if val.kind == Kind.TRACED else dataclasses.replace(val, kind=Kind.START)
        if isinstance(static, types.FunctionType) and not isinstance(obj, type) and (
                name not in getattr(obj, "__dict__", {})):
            return kind_of(types.MethodType(static, obj))
        if isinstance(static, (staticmethod, classmethod)):
            return kind_of(static.__get__(obj, cls))
        if isinstance(static, (types.MemberDescriptorType, types.GetSetDescriptorType,
                               types.MethodDescriptorType, types.WrapperDescriptorType,
                               types.BuiltinFunctionType, _TUPLE_GETTER)):
            return kind_of(getattr(obj, name))  # slots and built-in types' own attributes
        return kind_of(static)

    def e_Lambda(self, e):
        return Val(Kind.PYTHON, obj=e, container=False)

    def e_JoinedStr(self, e):
        for v in e.values:
            if isinstance(v, gast.FormattedValue):
                val = self.expr(v.value)
                if val.kind & (STAGED | Kind.OBJECT):
                    raise _Blocked(f"it formats `{_text(v.value)}`"
                                   + (", computed from the loop index" if val.kind & STAGED
                                      else ", an object whose formatting is not known"), v)
                if v.format_spec is not None:
                    self.expr(v.format_spec)
        return Val(Kind.PYTHON, container=False)

    def e_FormattedValue(self, e):
        return self.e_JoinedStr(gast.JoinedStr(values=[e]))

    def comprehension(self, e, elts) -> Val:
        for gen in e.generators:
            self.store(gen.target, self.element(self.expr(gen.iter)))
            for cond in gen.ifs:
                self.truth(self.expr(cond), cond)
        vals = [self.expr(x) for x in elts]
        return Val(_join(vals).kind, container=True, fresh=True)

    def e_ListComp(self, e):
        return self.comprehension(e, [e.elt])

    e_GeneratorExp = e_ListComp

    def e_SetComp(self, e):
        val = self.comprehension(e, [e.elt])
        if val.kind & STAGED:
            raise _Blocked("it puts a value computed from the loop index in a set", e)
        return val

    def e_DictComp(self, e):
        key = self.comprehension(e, [e.key])
        self.hashed(key, e.key)
        if key.kind & STAGED:
            raise _Blocked("it uses a value computed from the loop index as a dict key", e)
        return self.comprehension(e, [e.value])

    def element(self, iterable: Val) -> Val:
        """An item of ``iterable``."""
        if iterable.obj is not _UNSET and isinstance(iterable.obj, range):
            return Val(Kind.PYTHON, container=False)
        if iterable.kind & Kind.OBJECT:
            raise _Blocked("it iterates an object whose `__iter__` is not known to be free "
                           "of effects", None)
        return Val(iterable.kind, container=True)

    def operands(self, e, *vals: Val) -> None:
        for v in vals:
            if v.kind & Kind.OBJECT:
                what = f"a `{type(v.obj).__name__}`" if v.obj is not _UNSET else "an object"
                raise _Blocked(f"it applies `{_text(e)}` to {what}, whose operators are not "
                               f"known to be free of effects", e)

    # -- calls
    def _control_call(self, e) -> bool:
        return (isinstance(e, gast.Call) and _ag_name(e.func) in _AG_CONTROL)

    def e_Call(self, e):
        ag = _ag_name(e.func)
        if ag is not None:
            return self.ag_call(ag, e)
        callee = self.expr(e.func)
        return self.call(callee, e.func, e.args, e.keywords, e)

    def ag_call(self, ag: str, e) -> Val:
        args = e.args
        if ag == "converted_call":
            callee = self.expr(args[0])
            return self.call(callee, args[0], args[1:], e.keywords, e)
        if ag == "setitem":
            base = self.expr(args[0])
            return self.setitem(args[0], base, self.expr(args[1]), self.expr(args[2]), e)
        if ag in _AG_CONTROL:
            if ag == "for_stmt" and len(args) > 1 and isinstance(args[1], gast.Name):
                self.loop_items[args[1].id] = args[0]
                self.element(self.expr(args[0]))  # (its body may be read before this call)
            vals = [self.expr(a) for a in args
                    if not isinstance(a, gast.Name) or a.id not in self.local_fns]
            if ag == "if_stmt" and args and vals:
                self.truth(vals[0], args[0])
            if ag == "if_stmt" and args and vals and vals[0].kind == Kind.TRACED:
                # staged: what its branches hand back is traced, whatever they assign
                self.traced_branches.update(a.id for a in args[1:3] if isinstance(a, gast.Name))
            if ag == "if_stmt" and args and vals and vals[0].kind != Kind.TRACED:
                # branches a Python condition chooses: read again, marking what they
                # assign (see `bind`)
                self._read_chosen(args[1:3])
            if ag == "while_stmt" or (ag == "for_stmt" and vals and vals[0].kind & STAGED):
                # an inner loop whose trip count may come from the index (a `while` test
                # is its own function: any): Python unrolled, staged when staged, so
                # what its body assigns is chosen by the index
                self._read_chosen(args[:2])
                self._refuse_python_carried(_literal_names(e), e)
            return Val(_join(self.env.values()).kind if self.env else Kind.PYTHON)
        if ag == "print_":
            # `print` in converted code prints once per iteration, staged or not (when
            # the program runs, inside a staged body), and formats what it is given
            # then: a message that formats the index is the index printed
            vals = []
            for a in list(args) + [k.value for k in e.keywords]:
                inner = _ag_name(a.func) if isinstance(a, gast.Call) else None
                if inner in _AG_FORMATS:
                    vals += [self.expr(x) for x in a.args[1:]] + [
                        self.expr(k.value) for k in a.keywords]
                else:
                    vals.append(self.expr(a))
            for v in vals:
                if v.kind & Kind.OBJECT:
                    raise _Blocked("it prints an object whose formatting is not known", e)
            if not any(v.kind & (Kind.TRACED | STAGED) for v in vals):
                # `jax.jit` prints it once per iteration while tracing; staged, it would
                # print on every call
                raise _Blocked("it prints Python values only", e)
            return Val(Kind.PYTHON, container=False)
        if ag in _AG_FORMATS:
            vals = [self.expr(a) for a in args[1:]] + [self.expr(k.value) for k in e.keywords]
            if ag != "fstring":
                self.expr(args[0])
            if any(v.kind & (STAGED | Kind.OBJECT) for v in vals):
                raise _Blocked("it formats a value computed from the loop index (or an "
                               "object)", e)
            return Val(_join(vals).kind | Kind.PYTHON, container=False)
        if ag in ("str_", "repr_"):
            vals = [self.expr(a) for a in args]
            if any(v.kind & (STAGED | Kind.OBJECT) for v in vals):
                raise _Blocked("it makes a string of a value computed from the loop index", e)
            return Val(Kind.PYTHON, container=False)
        if ag in _AG_PURE:
            vals = [self.lambda_or_expr(a) for a in args]
            vals += [self.lambda_or_expr(k.value) for k in e.keywords]
            if ag in ("not_", "and_", "or_", "if_exp", "assert_") and vals:
                # the operand, the test: tested for truth (`and_`'s right side is a
                # thunk whose value is handed on, tested only by what reads it)
                self.truth(vals[0], args[0])
            if ag in ("and_", "or_") and len(vals) > 1 and any(
                    k.arg == "test" and isinstance(k.value, gast.Constant) and k.value.value
                    for k in e.keywords):
                # an `if`/`while` test: each side is tested for truth, and only that
                self.truth(vals[1], args[1])
                return Val(_data(*vals[:2]).kind, container=False)
            if ag == "in_" and len(vals) == 2:
                if _runs_code(vals[1], MEMBERSHIP) or _runs_code(vals[0], HASHING):
                    raise _Blocked(f"it tests `{_text(e)}`, of an object whose `__contains__` "
                                   f"or `__eq__` is not known to be free of effects", e)
            if ag == "range_":
                return Val(_data(*vals).kind, container=False,
                           obj=range(0) if all(v.kind == Kind.PYTHON for v in vals) else _UNSET)
            return _join(vals) if vals else Val(Kind.PYTHON, container=False)
        raise _Blocked(f"it calls `ag__.{ag}`, which the proof does not know", e)

    def _read_chosen(self, fns) -> None:
        """Reads the generated functions named by ``fns`` again, marking what they assign
        as chosen (see ``bind``)."""
        with _Choosing(self):
            for a in fns:
                fn = self.local_fns.get(a.id) if isinstance(a, gast.Name) else None
                if isinstance(fn, gast.FunctionDef):
                    self.block(fn.body)

    def lambda_or_expr(self, a) -> Val:
        if isinstance(a, gast.Lambda):
            for p in _params(a.args):
                if p not in self.env:
                    self.bind(p, Val(Kind.TRACED | Kind.LOOP | Kind.PYTHON))
            return self.expr(a.body)
        return self.expr(a)

    def call(self, callee: Val, func_node, args, keywords, e, given=None,
             what: str | None = None) -> Val:
        if given is None:
            vals = [self.expr(a) for a in args]
            kw = {k.arg: self.expr(k.value) for k in keywords}
        else:  # the values themselves (a partial's, and those of its call)
            vals, kw = given
        every = vals + list(kw.values())
        obj = callee.obj
        what = what or _text(func_node)
        if obj is _UNKNOWN_CALLEE:
            if isinstance(func_node, gast.Attribute) and func_node.attr in _MUTATING_METHODS:
                raise _Blocked(f"it calls `{what}`, which changes a container the loop does "
                               f"not own", e)
            self.budget.pending.append(what)  # and what it returns is checked then
            self.prove_function_args(args, keywords, every)
            return Val(Kind.TRACED)
        if callee.at:  # x.at[i].set(v)
            if isinstance(func_node, gast.Attribute) and func_node.attr in _ARRAY_METHODS:
                if any(v.kind & Kind.OBJECT and not _is_function_val(v) for v in every):
                    raise _Blocked(f"it hands an object the proof does not know to `{what}`", e)
                return _data(callee, *every)
            raise _Blocked(f"it calls `{what}`, which the proof does not know", e)
        if obj is _UNSET:
            return self.method_call(callee, func_node, args, keywords, every, e)
        if isinstance(obj, (gast.Lambda, gast.FunctionDef)):
            return self.local_call(obj, every, e)
        return self.call_object(obj, what, args, keywords, vals, kw, e, callee.outside)

    def method_call(self, callee: Val, func_node, args, keywords, every, e) -> Val:
        """A call of a value's method whose receiver is not known by identity."""
        what = _text(func_node)
        if not isinstance(func_node, gast.Attribute):
            raise _Blocked(f"it calls `{what}`, whose identity is not known", e)
        receiver = self.expr(func_node.value)
        name = func_node.attr
        if receiver.kind & Kind.OBJECT:
            raise _Blocked(f"it calls `{what}`, a method of an object the proof does not know",
                           e)
        if name in _MUTATING_METHODS and receiver.container:
            base = func_node.value
            if (isinstance(base, gast.Name) and base.id in self.scope.carried
                    and self.depth == 0 and not receiver.fresh):
                vals = [self.expr(a) for a in args]
                kw = {k.arg: self.expr(k.value) for k in keywords}
                return self.owned_update(name, what, vals, kw, e)
            if receiver.fresh and isinstance(base, gast.Name):
                if name in ("append", "extend", "insert", "add", "update", "setdefault"):
                    self.bind(base.id, Val(receiver.kind | _join(every).kind, container=True,
                                           fresh=True))
                return Val(receiver.kind, container=True)
            raise _Blocked(f"it calls `{what}`, which changes a container the loop does not "
                           f"own", e)
        if name in _ARRAY_METHODS or name in _READ_METHODS:
            if name in _READ_METHODS:
                self.container_read(what, every, e)
                if receiver.kind != Kind.TRACED and any(v.kind & STAGED for v in every):
                    # `"w{}".format(k)`, `d.get(k)`: the Python value of the index
                    raise _Blocked(f"it passes a value computed from the loop index to "
                                   f"`{what}`, which needs its Python value", e)
            self.prove_function_args(args, keywords, every)
            if name in ("item", "tolist"):
                return Val(receiver.kind | Kind.PYTHON if receiver.kind & STAGED
                           else receiver.kind, container=name == "tolist")
            return _data(receiver, *every, container=name in _READ_METHODS)
        raise _Blocked(f"it calls `{what}`, which is not a known array or container method", e)

    def local_call(self, fn, every, e) -> Val:
        for v in every:
            if v.kind & Kind.OBJECT:
                raise _Blocked("it passes an object to a function it defines", e)
        if isinstance(fn, gast.Lambda):
            self.bind_lambda(fn, _join(every) if every else Val(Kind.PYTHON))
            return self.expr(fn.body)
        # a function the body defines, called with these values: its body read again
        # with its parameters also taking them (read once as it was defined, a parameter
        # named like a variable of the loop took that variable's kinds)
        if id(fn) in self.calling:
            raise _Blocked(f"it calls `{fn.name}` recursively", e)
        self.calling.add(id(fn))
        try:
            for p, v in zip(_params(fn.args), every):
                old = self.env.get(p)
                self.bind(p, v if old is None else old.join(v))
            self.block(fn.body)
        finally:
            self.calling.discard(id(fn))
        return Val(Kind.TRACED | Kind.LOOP | Kind.PYTHON)

    def bind_lambda(self, fn, given: Val) -> None:
        """A lambda's parameters: what it is given, or its default (``o=OBJ``)."""
        defaults = _defaults(fn.args)
        for p in _params(fn.args):
            self.bind(p, given.join(self.expr(defaults[p])) if p in defaults else given)

    def prove_function_args(self, args, keywords, every) -> None:
        """Functions handed to an allowed function (``jax.tree.map(lambda a: ...)``)
        run with what it is given: proven with parameters of those kinds."""
        data = [v for v in every if not _is_function_val(v)]
        given = _join(data) if data else Val(Kind.PYTHON)
        given = Val(given.kind, container=True)
        nodes = list(args) + [k.value for k in keywords]
        for node in nodes:  # (`lax.switch(k, [f, g], x)`: the functions of a list too)
            for item in node.elts if isinstance(node, (gast.List, gast.Tuple)) else [node]:
                if isinstance(item, gast.Lambda):
                    self.bind_lambda(item, given)
                    self.expr(item.body)
                elif isinstance(node, (gast.List, gast.Tuple)):
                    self.handed(self.expr(item), given)
        for v in every:
            for item in (v.obj if type(v.obj) in (list, tuple) else ()):
                self.handed(kind_of(item), given)  # a list of functions held in a name
            self.handed(v, given)

    def handed(self, v: Val, given: Val) -> None:
        """``v`` handed to a function that may call it: a Python function is proven
        with parameters of the kinds ``given``; another callable must be known pure."""
        if _is_function_val(v) and not isinstance(v.obj, gast.Lambda):
            self.call_value(v, given)
        elif _foreign_callable(v):
            raise _Blocked(f"it hands `{getattr(v.obj, '__name__', type(v.obj).__name__)}` "
                           f"to a function that calls it, and it is not known to be free "
                           f"of effects", None)

    def call_value(self, fn: Val, given: Val) -> Val:
        """A call of the function ``fn`` by a library, each parameter given ``given``."""
        obj = fn.obj
        what = getattr(obj, "__qualname__", None) or type(obj).__name__
        if isinstance(obj, gast.FunctionDef):
            return Val(Kind.TRACED | Kind.LOOP | Kind.PYTHON)  # its body is the loop's own
        if isinstance(obj, _Transformed):
            for v in obj.vals:
                if _is_function_val(v):
                    self.call_value(v, given)
            return given
        if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType):
            return self.call_function(obj.__func__, what, [kind_of(obj.__self__)], None,
                                      fill=given)
        if isinstance(obj, functools.partial):
            return self.call_value(Val(Kind.PYTHON, obj=obj.func), given)
        if isinstance(obj, (types.FunctionType, SourceFunction)):
            return self.call_function(obj, what, [], None, fill=given)
        raise _Blocked(f"it hands `{what}` to a function that calls it, and the proof does "
                       f"not follow it", None)

    def call_object(self, obj, what, args, keywords, vals, kw, e, outside=False) -> Val:
        every = vals + list(kw.values())
        if isinstance(obj, (types.BuiltinFunctionType, type)) and _hashable(obj) and (
                obj in _PURE_BUILTINS):
            return self.builtin(obj, what, args, keywords, vals, every, e)
        if isinstance(obj, types.BuiltinMethodType) and isinstance(
                getattr(obj, "__self__", None), (list, dict, set, tuple, str, bytes)):
            if obj.__name__ in _MUTATING_METHODS and not isinstance(obj.__self__, (str, bytes)):
                if self.depth == 0 and id(obj.__self__) in self.scope.owned:
                    return self.owned_update(obj.__name__, what, vals, kw, e)
                raise _Blocked(f"it calls `{what}`, which changes a "
                               f"{type(obj.__self__).__name__} the loop does not own", e)
            if any(v.kind & STAGED for v in every):
                raise _Blocked(f"it passes a value computed from the loop index to `{what}`",
                               e)
            self.container_read(what, every, e)
            out = _data(*every, container=True) if every else Val(Kind.PYTHON)
            # (`D.get(k)`, `D.values()`: the container's objects, whose code is unknown)
            return Val(out.kind | (kind_of(obj.__self__).kind & Kind.OBJECT), container=True)
        if _is_module_function(obj, ("math", "cmath")):
            if any(v.kind & (STAGED | Kind.OBJECT) for v in every):
                raise _Blocked(f"it passes a value computed from the loop index to `{what}`, "
                               f"a Python function of Python numbers", e)
            return _data(*every)
        if _is_module_function(obj, ("operator",)):
            if obj.__name__ in _OPERATOR_WRITES:
                raise _Blocked(f"it calls `{what}`, which writes an item", e)
            self.operands(e, *every)
            return _data(*every)
        if _is_module_function(obj, ("numpy",)) or _module_of(obj).startswith("numpy"):
            if _numpy_effect(obj) or "out" in kw:
                raise _Blocked(f"it calls `{what}`, a NumPy function that changes state "
                               f"(the global random generator, an array it is given, a file)",
                               e)
            if any(v.kind & (STAGED | Kind.OBJECT) for v in every):
                raise _Blocked(f"it passes a value computed from the loop index to `{what}`, "
                               f"a NumPy function of values known while tracing", e)
            return _data(*every)
        if _jax_transform(obj):
            for v in every:
                if _foreign_callable(v):
                    raise _Blocked(f"it hands an object the proof does not know to `{what}`", e)
            return Val(Kind.PYTHON, obj=_Transformed(
                obj, list(args) + [k.value for k in keywords], vals + list(kw.values())),
                container=False)
        if isinstance(obj, _Transformed):
            for node, v in zip(obj.args, obj.vals):
                if _is_function_val(v):
                    self.call(v, node, args, keywords, e)
            return _data(*every, container=True)
        if isinstance(obj, functools.partial):  # `jax.tree_util.Partial` too
            return self.call_partial(obj, what, vals, kw, e)
        if _is_pure_jax(obj):
            for v in every:
                # an object of the program's own handed over as data: JAX runs its
                # `__jax_array__` or its pytree flattening
                if (v.kind & Kind.OBJECT and not _is_function_val(v) and not _foreign_callable(v)
                        and (v.obj is _UNSET or not _library_class(type(v.obj)))):
                    raise _Blocked(f"it hands an object the proof does not know to `{what}`", e)
            self.prove_function_args(args, keywords, every)
            return _data(*every, container=True)
        if _DO_NOT_CONVERT(obj):
            raise _Blocked(f"it calls `{what}`, marked `do_not_convert`, which the proof "
                           f"does not follow", e)
        if isinstance(obj, SourceFunction):
            return self.call_function(obj, what, vals, e, kw)
        original = _CONVERTED_FROM(obj)
        if isinstance(original, types.FunctionType):  # made by `autograph.convert`
            return self.call_function(original, what, vals, e, kw)
        if isinstance(obj, type):
            return self.construct(obj, what, every, e)
        if isinstance(obj, types.MethodType) and isinstance(obj.__func__, types.FunctionType):
            this = dataclasses.replace(kind_of(obj.__self__), outside=outside)
            return self.call_function(obj.__func__, what, [this] + every, e)
        if isinstance(obj, types.FunctionType):
            return self.call_function(obj, what, vals, e, kw)
        wrapped = getattr(obj, "__wrapped__", None)
        if isinstance(wrapped, types.FunctionType) and _module_of(type(obj)).startswith(
                ("jax", "jaxlib")):  # `jax.jit(f)`
            return self.call_function(wrapped, what, vals, e, kw)
        call = getattr(type(obj), "__call__", None)
        if _module_of(type(obj)).startswith("equinox.nn") and not any(
                v.kind & (STAGED | Kind.OBJECT) for v in every):
            # Equinox's layers: pytrees whose `__call__` computes on arrays
            return _data(*every, container=True)
        if isinstance(call, types.FunctionType) and not _is_library_code(call):
            return self.call_function(call, what, [kind_of(obj)] + vals, e, kw)
        raise _Blocked(f"it calls `{what}`, which is not known to be free of effects", e)

    def container_read(self, what: str, every: list[Val], e) -> None:
        """A read method of a list, dict or string (``get``, ``count``, ``format``)
        given objects: it hashes, compares or formats them, running their code."""
        for v in every:
            if _runs_code(v, HASHING + FORMATTING) and not _is_function_val(v):
                raise _Blocked(f"it calls `{what}` with an object whose `__hash__`, `__eq__` "
                               f"or formatting is not known to be free of effects", e)

    def call_partial(self, obj: functools.partial, what: str, vals, kw, e) -> Val:
        """``functools.partial(f, *a, **k)(*vals, **kw)``: ``f(*a, *vals, **k, **kw)``."""
        bound = [kind_of(a) for a in obj.args] + list(vals)
        keywords = {**{k: kind_of(v) for k, v in obj.keywords.items()}, **(kw or {})}
        return self.call(Val(Kind.PYTHON, obj=obj.func, container=False), None, [], [], e,
                         given=(bound, keywords), what=what)

    def owned_update(self, method: str, what: str, vals, kw, e) -> Val:
        """A list or dict the loop carries, changed in place: staged, it is carried and
        written back, so what goes in must be traced (as for a carried variable)."""
        every = vals + list(kw.values())
        if any(v.kind & (STAGED | Kind.OBJECT) for v in every):
            raise _Blocked(f"it calls `{what}` with a value known while tracing (staged, it "
                           f"would be a traced array)", e)
        inserted = {"append": vals, "extend": vals, "insert": vals[1:], "update": every,
                    "setdefault": vals[1:]}.get(method, [])
        if any(v.kind != Kind.TRACED for v in inserted):
            raise _Blocked(f"it calls `{what}` with a value that is not traced (staged, it "
                           f"would be a traced array)", e)
        return Val(Kind.TRACED, container=True)

    def builtin(self, obj, what, args, keywords, vals, every, e) -> Val:
        if obj in (getattr, hasattr) and len(args) >= 2 and (
                vals[0].kind & Kind.OBJECT or (vals[0].obj is not _UNSET
                                               and isinstance(args[1], gast.Constant))):
            name = args[1]
            if not (isinstance(name, gast.Constant) and isinstance(name.value, str)
                    and vals[0].obj is not _UNSET):
                raise _Blocked(f"it calls `{what}` of an object with a name the proof does "
                               f"not know", e)
            val = self.attribute_of(vals[0].obj, name.value, e)
            return val if obj is getattr else Val(Kind.PYTHON, container=False)
        if obj in _PYTHON_USES:
            if any(v.kind & STAGED for v in every):
                raise _Blocked(f"it passes a value computed from the loop index to `{what}`, "
                               f"which needs its Python value", e)
            if obj in (str, repr, format, ascii) and any(v.kind & Kind.OBJECT for v in every):
                raise _Blocked(f"it calls `{what}` of an object whose formatting is not known",
                               e)
            if obj in (isinstance, issubclass) and len(args) == 2 and vals[1].obj is not _UNSET:
                classes = vals[1].obj if isinstance(vals[1].obj, tuple) else (vals[1].obj,)
                if any(isinstance(c, type) and (_own_method(type(c), "__instancecheck__")
                                                or _own_method(type(c), "__subclasscheck__"))
                       for c in classes):
                    raise _Blocked(f"it calls `{what}` with a class whose metaclass checks "
                                   f"instances with code of its own", e)
            if obj in (hex, oct, bin, chr, ord) and any(_runs_code(v, ("__index__",))
                                                         for v in every):
                raise _Blocked(f"it calls `{what}` of an object whose `__index__` is not known "
                               f"to be free of effects", e)
            if obj in (hash, iter) and any(_runs_code(v, HASHING if obj is hash else MEMBERSHIP)
                                           for v in every):
                raise _Blocked(f"it calls `{what}` of an object whose `__{obj.__name__}__` is "
                               f"not known to be free of effects", e)
            return Val(Kind.PYTHON, container=obj is iter)
        if obj is pow and len(vals) >= 2:
            self.array_power(vals[0], vals[1], e)
        if obj is pow and len(every) > 2 and any(v.kind & STAGED for v in every):
            raise _Blocked(f"it passes a value computed from the loop index to `{what}` with a "
                           f"modulus, which works on Python ints only", e)
        if obj in (map, filter, sorted, min, max):
            self.prove_function_args(args, keywords, every)
        for v in every:
            if v.kind & Kind.OBJECT and obj not in (len, tuple, list, dict, zip, enumerate,
                                                    reversed, iter):
                raise _Blocked(f"it calls `{what}` of an object the proof does not know", e)
            if v.kind & Kind.OBJECT and v.obj is not _UNSET and not (
                    type(v.obj) in (list, tuple, dict) or (
                        isinstance(v.obj, tuple) and _plain_tuple(type(v.obj)))):
                raise _Blocked(f"it calls `{what}` of a `{type(v.obj).__name__}`", e)
            if v.kind & Kind.OBJECT and v.obj is _UNSET and not v.fresh:
                # not a list or tuple the body built: it may be the object itself, whose
                # `__len__` or `__iter__` would run
                raise _Blocked(f"it calls `{what}` of a value that may be an object the proof "
                               f"does not know", e)
        if obj is len:
            return Val(Kind.PYTHON, container=False)
        if obj is range:
            kind = _data(*every).kind
            return Val(kind, obj=range(0) if kind == Kind.PYTHON else _UNSET, container=False)
        if obj in (tuple, list, dict, set, frozenset, zip, enumerate, reversed, map, filter,
                   sorted, slice):
            if obj in (set, frozenset) and any(v.kind & STAGED for v in every):
                raise _Blocked("it puts a value computed from the loop index in a set", e)
            if obj is enumerate:
                return Val(_join(every).kind | Kind.LOOP, container=True, fresh=True)
            return Val(_join(every).kind if every else Kind.PYTHON, container=True, fresh=True)
        return _data(*every, container=obj in (divmod,))

    def construct(self, cls, what, every, e) -> Val:
        if cls in (tuple, list, dict, set, frozenset, slice, range, int, float, bool, complex,
                   object):
            return _data(*every, container=cls in (tuple, list, dict, set, frozenset))
        if _own_method(type(cls), "__call__"):  # a metaclass of the program's own
            raise _Blocked(f"it constructs a `{what}`, whose metaclass's `__call__` is not "
                           f"known to be free of effects", e)
        if issubclass(cls, tuple) and hasattr(cls, "_fields") and not _own_method(cls, "__new__"):
            return Val(_join(every).kind if every else Kind.PYTHON, container=True)
        init = getattr(cls, "__init__", None)
        generated = getattr(getattr(init, "__code__", None), "co_filename", "") == "<string>"
        factories = [f.default_factory for f in dataclasses.fields(cls)
                     if f.default_factory is not dataclasses.MISSING] if dataclasses.is_dataclass(
            cls) else []
        if any(not (isinstance(f, type) and f.__module__ == "builtins") for f in factories):
            raise _Blocked(f"it constructs a `{what}`, whose fields' default factories are "
                           f"not known to be free of effects", e)
        own = any(_own_method(cls, m) for m in ("__new__", "__setattr__"))
        if (dataclasses.is_dataclass(cls) and generated and not hasattr(cls, "__post_init__")
                and not own):
            for v in every:
                if v.kind & Kind.OBJECT:
                    raise _Blocked(f"it constructs a `{what}` of an object", e)
            return Val(_join(every).kind if every else Kind.PYTHON, container=True)
        raise _Blocked(f"it constructs a `{what}`, whose constructor is not known to be free "
                       f"of effects", e)

    def call_function(self, fn: Any, what: str, vals: list[Val], e,
                      kw: Mapping[str, Val] | None = None, fill: Val | None = None) -> Val:
        """A call of a Python function: proven if its body is, with these arguments
        (and ``fill`` for each parameter they leave, where a library calls it)."""
        if isinstance(fn, SourceFunction):
            return self.call_body(fn.node, fn.node, fn.scope, self.filename, what, vals, e,
                                  kw, defaults=None, fill=fill)
        if _DO_NOT_CONVERT(fn):
            raise _Blocked(f"it calls `{what}`, marked `do_not_convert`, which the proof "
                           f"does not follow", e)
        if _is_library_code(fn):
            raise _Blocked(f"it calls `{what}`, a library function not known to be free of "
                           f"effects", e)
        node = _function_node(fn)
        if node is None:
            raise _Blocked(f"it calls `{what}`, whose source is not available", e)
        return self.call_body((fn.__code__, _closure_ids(fn)), node, Scope(fn),
                              fn.__code__.co_filename, what, vals,
                              e, kw, defaults=fn, fill=fill)

    def call_body(self, key, node, scope: Scope, filename, what, vals, e, kw, defaults,
                  fill: Val | None = None):
        budget = self.budget
        memo = (key, _signature(vals), _signature((kw or {}).values()), tuple(kw or ()),
                None if fill is None else _signature([fill]), len(budget.written))
        if memo in budget.proven:  # the same function with arguments of the same kinds
            return budget.proven[memo]
        if self.depth >= budget.limits.depth or budget.functions >= budget.limits.functions:
            raise _Blocked(f"it calls `{what}`, past the depth or number of functions the "
                           f"proof follows", e)
        if key in budget.active:
            raise _Blocked(f"it calls `{what}` recursively", e)
        budget.functions += 1
        budget.active.add(key)
        try:
            inner = _Body(scope, budget, self.depth + 1, filename, generated=False)
            _bind_arguments(inner, node, defaults, vals, dict(kw or {}), fill)
            inner.run(node.body)
        except _Blocked as b:
            b.what = f"in `{what}`, {b.what}"
            raise
        finally:
            budget.active.discard(key)
        out = _join(inner.returns) if inner.returns else Val(Kind.PYTHON, container=False)
        budget.proven[memo] = out
        return out


def _closure_ids(fn: types.FunctionType) -> tuple:
    """What ``fn``'s closure holds, by identity: two closures of one ``def`` are proven
    apart (one may hold an object the other does not)."""
    ids: list[int | None] = []
    for cell in fn.__closure__ or ():
        try:
            ids.append(id(cell.cell_contents))
        except ValueError:  # an empty cell
            ids.append(None)
    return tuple(ids)


def _signature(vals) -> tuple:
    """What the proof of a function depends on in its arguments."""
    return tuple((v.kind, v.container, v.fresh, v.at, v.outside,
                  None if v.obj is _UNSET else id(v.obj),
                  None if v.parts is None else _signature(v.parts)) for v in vals)


def _plain(cls: type, method: str) -> bool:
    """Whether ``cls`` takes ``method`` (``__setattr__``, ...) from a built-in type."""
    for klass in cls.__mro__:
        if method in vars(klass):
            return klass.__module__ == "builtins"
    return True


# the special methods Python calls on an object without a call in the source
TRUTH = ("__bool__", "__len__")
MEMBERSHIP = ("__contains__", "__iter__", "__getitem__", "__eq__")
HASHING = ("__hash__", "__eq__")
FORMATTING = ("__format__", "__str__", "__repr__")


def _may_be_text(val: Val, node) -> bool:
    """Whether ``val`` (the left side of ``%``) may be a string: a Python value not
    known to be a number (a traced array, or a value of the index, is one)."""
    if val.kind & (Kind.TRACED | STAGED) and not val.kind & (Kind.PYTHON | Kind.OBJECT):
        return False
    if isinstance(node, gast.Constant):
        return isinstance(node.value, (str, bytes))
    return not isinstance(val.obj, (int, float, complex)) or isinstance(val.obj, bool)


def _runs_code(val: Val, methods: tuple[str, ...]) -> bool:
    """Whether using ``val`` this way (a truth test, ``in``, a hash, a format) may run
    code of an object the proof does not know: a value that may be an object, unless
    it is known by identity and its type has none of ``methods`` of the program's own
    (Python's, a library's, or what `dataclasses` generates)."""
    if not val.kind & Kind.OBJECT:
        return False
    obj = val.obj
    if obj is _UNSET or obj is _UNKNOWN_CALLEE:
        return True
    if isinstance(obj, (gast.AST, _Transformed, SourceFunction)):
        return False
    return any(_own_method(type(obj), m) for m in methods)


def _own_method(cls: type, name: str) -> bool:
    """Whether ``cls`` takes ``name`` from a class of the program's own (not from
    Python, a library, or code `dataclasses`/`namedtuple` generate)."""
    for klass in cls.__mro__:
        if name in vars(klass):
            if klass.__module__ == "builtins" or _library_class(klass):
                return False
            attr = vars(klass)[name]
            fn = getattr(attr, "__func__", attr)
            return not (isinstance(fn, types.FunctionType)
                        and fn.__code__.co_filename == "<string>")
    return False


def _library_subscript(cls: type) -> bool:
    """Whether ``cls[...]`` runs a library's code (``list[int]``, an enum's lookup,
    ``typing``'s generics), not code of the program's own."""
    for name, owner in (("__class_getitem__", cls), ("__getitem__", type(cls))):
        try:
            method = inspect.getattr_static(owner, name)
        except AttributeError:
            continue
        fn = getattr(method, "__func__", method)
        if isinstance(fn, types.FunctionType) and not _is_library_code(fn):
            return False
    return True


def _descriptor(cls: type, name: str) -> bool:
    """Whether ``cls`` computes attribute ``name`` (a property, a slot is fine)."""
    try:
        static = inspect.getattr_static(cls, name)
    except AttributeError:
        return False
    return hasattr(type(static), "__set__") and not isinstance(static, types.MemberDescriptorType)


class _Transformed:
    """What a JAX transformation of some functions returns (``jax.vmap(f)``)."""

    def __init__(self, transform, args, vals):
        self.transform, self.args, self.vals = transform, args, vals


def _is_function_val(v: Val) -> bool:
    obj = v.obj
    if obj is _UNSET or obj is _UNKNOWN_CALLEE:
        return False
    return isinstance(obj, (gast.Lambda, gast.FunctionDef, types.FunctionType,
                            types.MethodType, functools.partial, _Transformed, SourceFunction))


_BUILTIN_CALLABLES = (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodWrapperType,
                      types.WrapperDescriptorType, types.MethodDescriptorType,
                      types.ClassMethodDescriptorType)


def _foreign_callable(v: Val) -> bool:
    """A callable handed to a function that calls it (``map(print, xs)``,
    ``jax.tree.map(f, t)``) that is not a Python function (those are proven) and not
    known to be pure: a built-in such as ``print``, a class, an object's ``__call__``."""
    obj = v.obj
    if obj is _UNSET or obj is _UNKNOWN_CALLEE or _is_function_val(v) or not callable(obj):
        return False
    if not (isinstance(obj, _BUILTIN_CALLABLES + (type,)) or v.kind & Kind.OBJECT):
        return False
    if _hashable(obj) and (obj in _PURE_BUILTINS or obj in (int, float, bool, complex)):
        return False
    if _is_module_function(obj, ("math", "cmath")) or (
            _is_module_function(obj, ("operator",)) and obj.__name__ not in _OPERATOR_WRITES):
        return False
    if isinstance(obj, types.BuiltinMethodType) and isinstance(
            getattr(obj, "__self__", None), (list, dict, tuple, str, bytes)):
        return obj.__name__ in _MUTATING_METHODS
    return not _is_pure_jax(obj)


# NumPy functions that write: into an array they are given, to a file, or NumPy's
# own settings
_NUMPY_WRITES = frozenset({
    "copyto", "put", "place", "putmask", "put_along_axis", "fill_diagonal", "save", "savez",
    "savez_compressed", "savetxt", "tofile", "seterr", "seterrcall", "setbufsize",
    "set_printoptions", "printoptions", "fill", "resize", "itemset", "setflags", "at",
    "load", "loadtxt", "genfromtxt", "fromfile", "memmap",
})


def _numpy_effect(obj) -> bool:
    """A NumPy callable that is not a pure function of its arguments: anything of
    ``numpy.random`` (its module functions draw from the global generator; a
    generator's methods change it), and the functions that write."""
    module = _module_of(obj)
    owner = getattr(obj, "__self__", None)
    if module.startswith("numpy.random") or _module_of(type(owner)).startswith("numpy.random"):
        return True
    return getattr(obj, "__name__", None) in _NUMPY_WRITES


def _hashable(obj) -> bool:
    if _own_method(type(obj), "__hash__"):
        return False  # it would run the program's own code
    try:
        hash(obj)
    except TypeError:
        return False
    return True


def _is_module_function(obj, modules: tuple[str, ...]) -> bool:
    module = getattr(obj, "__module__", None)
    if module is None and isinstance(obj, types.BuiltinFunctionType):
        self_ = getattr(obj, "__self__", None)
        module = getattr(self_, "__name__", None) if isinstance(self_, types.ModuleType) else None
    return isinstance(module, str) and module.split(".")[0] in modules and callable(obj) and (
        module.split(".")[0] != "operator" or obj is getattr(operator, obj.__name__, None)) and (
        module.split(".")[0] not in ("math", "cmath")
        or obj is getattr(math if module == "math" else sys.modules.get(module), obj.__name__,
                          None))


def _bind_arguments(body: _Body, node, fn, vals: list[Val], kw: dict[str, Val],
                    fill: Val | None = None) -> None:
    args = node.args
    positional = [a.id for a in args.posonlyargs + args.args]
    for k, name in enumerate(positional):
        if k < len(vals):
            body.bind(name, vals[k])
        elif name in kw:
            body.bind(name, kw.pop(name))
        else:
            body.bind(name, _default(fn, name) if fill is None else fill)
    if args.vararg is not None:
        rest = vals[len(positional):] + ([fill] if fill is not None else [])
        body.bind(args.vararg.id, Val(_join(rest).kind if rest else Kind.PYTHON,
                                      container=True, fresh=True))
    for a in args.kwonlyargs:
        body.bind(a.id, kw.pop(a.id) if a.id in kw else (
            _default(fn, a.id) if fill is None else fill))
    if args.kwarg is not None:
        rest = list(kw.values()) + ([fill] if fill is not None else [])
        body.bind(args.kwarg.id, Val(_join(rest).kind if rest else Kind.PYTHON,
                                     container=True, fresh=True))


def _default(fn, name: str) -> Val:
    if fn is None:  # from source alone: a default is a value known while tracing
        return Val(Kind.PYTHON)
    try:
        p = inspect.signature(fn).parameters[name]
    except (KeyError, TypeError, ValueError):
        return Val(Kind.PYTHON)
    if p.default is inspect.Parameter.empty:
        return Val(Kind.PYTHON)
    return kind_of(p.default)


def _defaults(args) -> dict:
    """The default expression of each parameter that has one, by name."""
    positional = [a.id for a in args.posonlyargs + args.args]
    defaults = dict(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    defaults.update({a.id: d for a, d in zip(args.kwonlyargs, args.kw_defaults)
                     if d is not None})
    return defaults


def _params(args) -> list[str]:
    names = [a.id for a in args.posonlyargs + args.args + args.kwonlyargs]
    for extra in (args.vararg, args.kwarg):
        if extra is not None:
            names.append(extra.id)
    return names


def _ag_name(func) -> str | None:
    if (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Name)
            and func.value.id == "ag__"):
        return func.attr
    if (isinstance(func, gast.Attribute) and isinstance(func.value, gast.Attribute)
            and isinstance(func.value.value, gast.Name) and func.value.value.id == "ag__"):
        return func.value.attr  # ag__.operator.lt
    return None


def _as_load(target):
    if isinstance(target, gast.Name):
        return gast.Name(id=target.id, ctx=gast.Load(), annotation=None, type_comment=None)
    if isinstance(target, gast.Attribute):
        return gast.Attribute(value=target.value, attr=target.attr, ctx=gast.Load())
    if isinstance(target, gast.Subscript):
        return gast.Subscript(value=target.value, slice=target.slice, ctx=gast.Load())
    return target


def _statement_name(s) -> str:
    return {"Try": "try", "TryStar": "try", "With": "with", "AsyncWith": "async with",
            "Import": "import", "ImportFrom": "import", "ClassDef": "class",
            "AsyncFunctionDef": "async def", "AsyncFor": "async for", "Match": "match"}.get(
        type(s).__name__, type(s).__name__)


def _text(node) -> str:
    """The source text of ``node`` for a message, with converted calls as written."""
    if node is None:
        return "?"
    try:
        text = ast.unparse(tree_formats.to_ast(node)).strip()
    except Exception:  # noqa: BLE001 - a description only
        return type(node).__name__
    text = re.sub(r"ag__\.converted_call\(([\w.]+)(, )?", r"\1(", text)
    return text if len(text) <= 60 else text[:57] + "..."


# ----------------------------------------------------------------------------
# sources of functions

_NODES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_NODES_LOCK = threading.Lock()


def _function_node(fn: types.FunctionType):
    """The gast ``FunctionDef`` of a user function (None: no source)."""
    code = fn.__code__
    with _NODES_LOCK:
        hit = _NODES.get(code, _UNSET)
    if hit is not _UNSET:
        return hit
    node = None
    try:
        from autograph import parsing
        node = parsing.parse_function(fn).node
    except Exception:  # noqa: BLE001 - no source: not proven
        node = None
    with _NODES_LOCK:
        _NODES[code] = node
    return node


def _generated_node(code: types.CodeType):
    """The gast ``FunctionDef`` of a function of converted code, from its lines."""
    with _NODES_LOCK:
        hit = _NODES.get(code, _UNSET)
    if hit is not _UNSET:
        return hit
    node = None
    lines = linecache.getlines(code.co_filename)
    if lines:
        try:
            tree = tree_formats.parse_gast("".join(lines))
        except SyntaxError:
            tree = None
        if tree is not None:
            for n in gast.walk(tree):
                if (isinstance(n, gast.FunctionDef) and n.name == code.co_name
                        and n.lineno == code.co_firstlineno):
                    node = n
                    break
    with _NODES_LOCK:
        _NODES[code] = node
    return node


# ----------------------------------------------------------------------------
# entry points

def _location(body: _Body, node) -> errors.Location | None:
    lineno = getattr(node, "lineno", None)
    if lineno is None or body.filename is None:
        return None
    if body.generated:
        return errors.user_location(body.filename, lineno)
    return errors.Location(body.filename, lineno)


def _dead_lists(fn, dead) -> frozenset:
    """The ids of the lists ``fn``'s closure holds under the names in ``dead``."""
    found = set()
    code = getattr(fn, "__code__", None)
    for name, cell in zip(getattr(code, "co_freevars", ()), getattr(fn, "__closure__", None)
                          or ()):
        if name in dead:
            try:
                value = cell.cell_contents
            except ValueError:
                continue
            if type(value) is list:
                found.add(id(value))
    return frozenset(found)


def prove_loop(body_fn: Callable, extra_test: Callable | None, state, names, item,
               *, limits: Limits = Limits(), dead: tuple = ()) -> Verdict:
    """Whether staging a static loop's remaining iterations leaves the program as is.

    Args:
      body_fn: the converted loop body, ``body(item, *state)``.
      extra_test: the converted exit test, ``extra_test(*state)``, or None.
      state: the loop's state when it would stage (the values of ``names``).
      names: the loop's variables.
      item: the loop's item at the first iteration that would stage.
      limits: how far the proof looks.
      dead: lists the function only appends to and never reads (the body's
        closure holds them under these names): the loop's own, as what it carries.

    Returns:
      The verdict; not proven where the body's source is not available.
    """
    code = getattr(body_fn, "__code__", None)
    node = _generated_node(code) if code is not None else None
    if node is None or code is None:
        return Verdict(False, "the source of the loop body is not available")
    numpy = _numpy_item(item)
    if numpy is not None:
        return Verdict(False, f"its items are NumPy {numpy} numbers, which Python computes "
                              f"with in NumPy's types (a staged loop would compute in JAX's)")
    budget = _Budget(limits)
    owned = frozenset(id(v) for v in state if type(v) in (list, dict)) | _dead_lists(
        body_fn, dead)
    body = _Body(Scope(body_fn, carried=frozenset(names), owned=owned), budget, 0,
                 code.co_filename, generated=True)
    params = _params(node.args)
    body.bind(params[0], _item_kind(item))
    for name, value in zip(params[1:], state):
        body.bind(name, kind_of(value, carried=True))
    body.assigned.clear()
    tests = []
    if extra_test is not None:
        tcode = getattr(extra_test, "__code__", None)
        tnode = _generated_node(tcode) if tcode is not None else None
        if tnode is None:
            return Verdict(False, "the source of the loop's exit test is not available")
        tests = [gast.Expr(value=r.value) for r in tnode.body if isinstance(r, gast.Return)]
        if len(tests) != len(tnode.body):
            tests = list(tnode.body)
        flags = frozenset(a.args[0].id for r in tests for a in gast.walk(r)
                          if isinstance(a, gast.Call) and _ag_name(a.func) == "not_"
                          and len(a.args) == 1 and isinstance(a.args[0], gast.Name)
                          and type(state[list(names).index(a.args[0].id)]) is bool
                          if a.args[0].id in names)
    else:
        flags = frozenset()
    ints = frozenset(n for n, v in zip(names, state) if type(v) is int or _unassigned(v))
    return _verdict(body, node.body + tests, frozenset(names), ints, flags)


def _verdict(body: _Body, stmts, carried: frozenset,
             ints: frozenset = frozenset(), flags: frozenset = frozenset()) -> Verdict:
    followed = []
    try:
        body.run(stmts)
        for name in sorted(carried):
            val = body.assigned_value(name)
            if val is None or val.kind == Kind.TRACED:
                continue
            if val.kind & Kind.TRACED and not val.kind & (Kind.LOOP | Kind.PYTHON | Kind.OBJECT):
                continue  # traced once an iteration has assigned it (`c = b; b = a; a = x`)
            if name in flags and not val.kind & ~(Kind.PYTHON | Kind.LOOP):
                continue  # a `break`/`return` flag: it only stops the loop, staged or not
            if name in ints and not val.kind & (Kind.TRACED | Kind.OBJECT) and not val.container:
                followed.append(name)
                continue
            what = "a value known while tracing" if val.kind & STAGED else "a Python value"
            if val.kind & Kind.OBJECT:
                what = "an object"
            raise _Blocked(f"the loop keeps {what} in `{name}` (staged, it would be a "
                           f"traced array)")
    except _Blocked as b:
        return Verdict(False, b.what, b.location, tuple(dict.fromkeys(body.budget.pending)))
    except RecursionError:
        return Verdict(False, "the body is too deeply nested for the proof")
    return Verdict(True, pending=tuple(dict.fromkeys(body.budget.pending)),
                   python_ints=tuple(followed), attributes=tuple(body.budget.written.values()))


def _numpy_item(item) -> str | None:
    """The dtype of a NumPy part of a loop's item whose arithmetic JAX does not repeat:
    integers (``k / 3`` is float64 in NumPy) and dtypes JAX narrows (float64 without
    64-bit types); else None. Unrolled, such an item stays a NumPy number."""
    import jax
    import numpy as np
    for leaf in jax.tree_util.tree_leaves(item):
        if isinstance(leaf, (np.generic, np.ndarray)) and not _is_tracer(leaf):
            dtype = np.dtype(leaf.dtype)
            if dtype.kind in "iu" or jax.dtypes.canonicalize_dtype(dtype) != dtype:
                return str(dtype)
    return None


def _item_kind(item) -> Val:
    """An item of the loop: traced parts stay traced; Python and concrete parts are
    known while tracing only when unrolled."""
    if type(item) is tuple:
        parts = tuple(_item_kind(x) for x in item)
        return Val(_join(parts).kind if parts else Kind.LOOP, container=True, parts=parts)
    import jax
    kind = NOTHING
    for leaf in jax.tree_util.tree_leaves(item):
        kind |= Kind.TRACED if _is_tracer(leaf) else Kind.LOOP
    return Val(kind or Kind.LOOP, container=not (_is_tracer(item) or _is_array(item)
                                                 or isinstance(item, _IMMUTABLE)))


def prove_source_loop(node: gast.For, scope: Scope, carried, filename: str, *,
                      limits: Limits = Limits()) -> Verdict:
    """The proof of a user's `for` loop from its source alone (``autograph explain``).

    Its state (``carried``) is taken as traced and its target as the index; calls
    of names ``scope`` cannot tell are left ``pending``, decided when the loop runs.
    """
    body = _Body(scope, _Budget(limits), 0, filename, generated=False)
    for name in carried:
        body.bind(name, Val(Kind.TRACED))
    try:
        body.store(node.target, Val(Kind.LOOP, container=False))
    except _Blocked as b:
        return Verdict(False, b.what, _location(body, b.node))
    body.assigned.clear()
    return _verdict(body, node.body, frozenset(carried) - _target_names(node.target))


def _target_names(target) -> frozenset:
    return frozenset(n.id for n in gast.walk(target) if isinstance(n, gast.Name))
