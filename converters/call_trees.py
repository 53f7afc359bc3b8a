"""Routes calls of user functions through ``ag__.converted_call``.

    y = helper(x, k=2)       ->   y = ag__.converted_call(helper, x, k=2)
    z = jnp.sin(x)           ->   z = jnp.sin(x)
    m = min(y, z)            ->   m = ag__.converted_call(min, y, z)

Whether a callee is user code is decided at run time, by the runtime's table
of modules never converted; this pass only leaves out calls that are
certainly not user code, so generated code stays close to the source: Python
built-ins (unless the function rebinds the name), functions reached through
well-known library modules (``jnp.``, ``lax.``, ``np.``, ...), and common
methods of arrays, lists, dicts and strings. The built-ins the runtime gives
Python's meaning on traced values (``min``, ``float``, ``any``, ...; see
``runtime/python/builtins``) are calls like any other: the runtime finds its own
operator by the callee's identity, so a name the module binds to something
else (``from numpy import max``) keeps its meaning. So are ``math``'s
functions (``math.sin(x)`` of a traced ``x`` is ``jnp.sin``; see
``runtime/python/math_functions``) and ``operator``'s (``operator.truth``,
``operator.not_``: ``bool`` and ``not`` of a traced value). Inside the body of a
`try` whose handler catches the error ``int(x)`` of a traced ``x`` raises under
plain ``jax.jit``, the runtime calls the built-in itself (see
``runtime/core/handlers``). Calls of autograph's directives (``set_loop_options``, in any
spelling: found by what the name refers to, see ``directive_calls``) stay as
written, for the loop passes to read, except one that configures no loop (in a
``for`` body, or not leading a ``while`` body): it becomes
``ag__.misplaced_loop_options(reason, ...)``, which checks its options and warns
when it runs. ``super()`` gets its explicit form,
since converted code is not compiled inside the class.
"""

from __future__ import annotations

import builtins

import gast

from autograph import anno, templates
from autograph.analysis import Analysis
from autograph.analysis.activity import walk
from autograph.anno import Anno
from autograph.context import Context
from autograph.directive_calls import dotted
from autograph.scopes import LocalNamesTransformer

NODES = (gast.Call,)  # the pass is skipped when the tree has none
REQUIRES = (Analysis.SCOPES,)
KEEPS = (Analysis.SCOPES,)  # rewrites calls only: no name is bound or rebound

# Built-ins the runtime replaces where an argument is traced (`runtime/python/builtins`);
# equal to its table, as a test checks.
TRACED_BUILTINS = frozenset({"float", "int", "bool", "complex", "min", "max", "any", "all",
                             "sorted", "pow", "map", "filter", "isinstance", "type"})
BUILTIN_NAMES = frozenset(dir(builtins)) - TRACED_BUILTINS
LIBRARY_ROOTS = frozenset({
    "jnp", "jax", "lax", "np", "numpy", "cmath", "random", "functools",
    "itertools", "optax", "jr", "jsp", "scipy", "os", "sys", "time",
    "logging", "warnings", "collections", "typing", "dataclasses", "re", "string",
    "jtu", "tree_util", "ag__", "autograph", "pytest", "copy", "json",
})
LIBRARY_METHODS = frozenset({
    # array methods (names a user class is unlikely to give a method with control flow)
    "sum", "mean", "max", "min", "any", "all", "astype", "reshape", "transpose", "squeeze",
    "ravel", "flatten", "item", "tolist", "argmax", "argmin", "cumsum", "cumprod", "prod",
    "std", "var", "conj", "swapaxes", "block_until_ready", "nonzero", "argsort",
    # list, dict and str methods
    "append", "extend", "items", "keys", "values", "format", "join", "split", "strip",
    "startswith", "endswith", "lower", "upper", "setdefault", "popitem",
})


# Library functions that take functions (`jax.vmap(g)`, `lax.scan(body, ...)`):
# their calls go through `converted_call` too, whose table (runtime/transforms)
# decides by identity which arguments to convert. A superset of that table's
# names, checked by a test.
FUNCTION_TAKING = frozenset({
    "grad", "value_and_grad", "jacfwd", "jacrev", "jacobian", "hessian", "vmap", "pmap",
    "jit", "checkpoint", "remat", "named_call", "jvp", "vjp", "linearize",
    "linear_transpose", "eval_shape", "make_jaxpr", "custom_jvp", "custom_vjp",
    "closure_convert", "shard_map", "cond", "switch", "while_loop", "fori_loop", "scan", "map",
    "associative_scan", "custom_root", "custom_linear_solve", "vectorize", "tree_map",
    "minimize", "filter_grad", "filter_value_and_grad", "filter_jit", "filter_vmap",
    "filter_pmap", "filter_checkpoint", "filter_jvp", "filter_vjp", "filter_eval_shape",
})


def _is_at_update(func) -> bool:
    """``x.at[i].set(...)`` and friends: JAX's indexed updates."""
    value = func.value
    return (isinstance(value, gast.Subscript) and isinstance(value.value, gast.Attribute)
            and value.value.attr == "at")


_CALL = templates.Template("ag__.converted_call(FUNC)")
_MISPLACED_OPTIONS = templates.Template("ag__.misplaced_loop_options(REASON)")


def _root(node):
    while isinstance(node, gast.Attribute):
        node = node.value
    return node


# Library functions that take functions only to wrap or inspect them, never worth
# routing: their calls stay as written.
_WRAPPING = frozenset({"partial", "wraps", "update_wrapper", "lru_cache", "cache",
                       "singledispatch", "signature", "getsource"})


class _Transformer(LocalNamesTransformer):
    def __init__(self, ctx: Context, defs: frozenset = frozenset()):
        super().__init__(ctx)
        self.defs = defs  # the names of the functions the converted function defines

    def _function_like(self, arg) -> bool:
        """Whether argument ``arg`` may be a user function: a lambda, a function the
        tree defines, a ``functools.partial(...)``, a name from outside the function
        that may hold one (``Resolver.may_be_user_function``). Not the functions in a
        list or tuple, which the runtime hands as they are (``calls.handed``)."""
        if isinstance(arg, gast.Lambda):
            return True
        if isinstance(arg, gast.Call):
            chain = dotted(arg.func)
            return chain is not None and chain[-1] == "partial"
        if isinstance(arg, gast.Name):
            if arg.id in self.defs:
                return True
            return arg.id not in self.locals and self.ctx.directives.may_be_user_function(arg.id)
        return False

    def _hands_functions(self, node: gast.Call) -> bool:
        """A library call that may hand a user function to the library (``functools.reduce(
        pick, xs)``): routed, so the runtime can hand it converted (see ``calls``)."""
        func = node.func
        if not isinstance(func, gast.Attribute) or func.attr in LIBRARY_METHODS \
                or func.attr in _WRAPPING or _is_at_update(func):
            return False
        root = _root(func)
        if isinstance(root, gast.Name) and root.id in ("ag__", "autograph"):
            return False  # the runtime's own operators (`ag__.fstring(lambda ...)`)
        return any(self._function_like(a) for a in node.args) or any(
            self._function_like(k.value) for k in node.keywords)

    def _is_library(self, func) -> bool:
        local = self.locals
        if isinstance(func, gast.Name):
            return func.id in BUILTIN_NAMES and func.id not in local
        if isinstance(func, gast.Attribute):
            if func.attr in LIBRARY_METHODS or _is_at_update(func):
                return True
            root = _root(func)
            return (isinstance(root, gast.Name) and root.id in LIBRARY_ROOTS
                    and root.id not in local and func.attr not in FUNCTION_TAKING)
        return False

    def visit_Call(self, node: gast.Call):
        self.generic_visit(node)
        func = node.func
        if (isinstance(func, gast.Name) and func.id == "super" and not node.args
                and self.ctx.super_args is not None and self.depth == 1
                and "super" not in self.locals):  # not a local function named `super`
            node.args = [templates.name(a) for a in self.ctx.super_args]
            return node
        reason = anno.get(node, Anno.MISPLACED_OPTIONS)
        if reason is not None:  # `set_loop_options` where it configures no loop
            call = _MISPLACED_OPTIONS.substitute_expr(node, REASON=templates.literal(reason))
            call.args = call.args + list(node.args)
            call.keywords = list(node.keywords)
            return call
        if not self.ctx.recursive or self.ctx.directives.of(func) is not None:
            return node
        if self._is_library(func) and not self._hands_functions(node):
            return node
        call = _CALL.substitute_expr(node, FUNC=func)
        call.args = call.args + list(node.args)
        call.keywords = list(node.keywords)
        return call


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    defs = frozenset(n.name for n in walk(node)
                     if isinstance(n, gast.FunctionDef) and n is not node)
    return _Transformer(ctx, defs).visit(node)
