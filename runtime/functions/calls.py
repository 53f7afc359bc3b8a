"""``converted_call``: calls user functions through their converted form.

What to run in place of a callee is decided here, at run time, from the
callee's type, never from attributes it carries (``functools.wraps`` copies
those onto wrappers that do something else, such as ``jax.grad``'s):

=================================  ==============================================
callee                             called as
=================================  ==============================================
made by ``autograph.convert``      its converted function (found by identity)
marked by ``do_not_convert``       itself (found by identity)
a JAX entry point taking functions itself, with its function arguments converted
                                   (``jax.vmap``, ``lax.scan``, ... ; see
                                   ``transforms``)
made by ``jax.jit``                ``jax.jit`` of the converted function, with the
                                   same options
``jax.custom_jvp``/``custom_vjp``  rebuilt around converted functions and rules
``range``, ``enumerate``, ...      the runtime's own ``range_``, ``enumerate_``,
                                   ``zip_``, ``reversed_``, ``print_``
``min``, ``float``, ``any``, ...   their operators in ``builtins`` (``min_``,
                                   ``float_``, ``any_``, ``map_``, ...): Python's
                                   meaning on traced values
a library function that calls      itself, with the user functions among its
the functions it is given          arguments converted (``functools.reduce``,
(``functools.reduce``, JAX,        ``jax.tree_util.tree_reduce``, ``optax.sgd``;
Optax, Flax, ...)                  see ``handing_converted``)
a Python function                  converted, unless a library's (the table of
                                   modules never converted: JAX, NumPy, the
                                   standard library, ...)
a method, a ``functools.partial``  the same, around the converted function
an object with a ``__call__``      its converted ``__call__``, unless a library's
anything else                      itself
=================================  ==============================================

The conversion itself is ``autograph.api.convert_for_call``, imported when a
function is first converted (:func:`_convert`): this module holds no AST code
and no converter set from outside, and ``exec(autograph.to_code(f),
{"ag__": autograph.runtime})`` runs as it is.
"""

from __future__ import annotations

import functools
import heapq
import inspect
import itertools
import os
import sys
import threading
import types
import weakref
from typing import Any, Callable

import jax

from autograph import errors, jax_internals
from autograph.callables import is_function

from ..core.values import any_traced, is_staging
from . import index_meaning, libraries, transforms

# Top-level packages whose functions are never converted.
SKIP_PACKAGES = frozenset({
    "jax", "jaxlib", "numpy", "scipy", "autograph", "optax", "flax", "equinox",
    "haiku", "chex", "jaxtyping", "ml_dtypes", "opt_einsum", "pandas", "matplotlib",
    "tqdm", "sklearn", "torch", "tensorflow", "pytest", "_pytest", "hypothesis",
    "pluggy", "typing_extensions", "gast", "IPython",
}) | frozenset(sys.stdlib_module_names)

_resolved: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_converted: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_do_not_convert: "weakref.WeakSet" = weakref.WeakSet()
_builtins: dict = {}
_SELF = object()  # in `_resolved`: the function runs as it is


def _convert(f: types.FunctionType) -> Callable:
    """``f`` converted, or ``f`` itself where it cannot be (``convert_for_call``)."""
    from autograph import api  # which imports this module: looked up when first needed
    return api.convert_for_call(f)


def register_converted(wrapper: Callable, converted: Callable) -> None:
    """Records that ``wrapper`` (made by ``autograph.convert``) runs ``converted``.

    ``wrapper`` holds ``converted``; the entry holds it weakly, since ``converted``
    shares the user's closure cells, which may hold ``wrapper`` (a decorated
    recursive closure), and an entry whose value holds its key is never freed.
    """
    _converted[wrapper] = weakref.ref(converted)


def converted_of(f) -> Callable | None:
    """The converted function behind ``f`` if ``autograph.convert`` made ``f``."""
    try:
        ref = _converted.get(f)
    except TypeError:  # unhashable
        return None
    return None if ref is None else ref()


def register_do_not_convert(fn: Callable) -> None:
    """Records that converted code calls ``fn`` as it is."""
    _do_not_convert.add(fn)


def register_builtin(builtin, replacement: Callable) -> None:
    """Calls of ``builtin`` reached as a value run ``replacement``."""
    _builtins[builtin] = replacement


def marked_do_not_convert(f) -> bool:
    """Whether ``do_not_convert`` marked ``f`` itself."""
    try:
        return f in _do_not_convert
    except TypeError:  # unhashable
        return False


def library_module(fn) -> str | None:
    """The top-level package of a library whose code defines ``fn``, or None.

    The module is the one whose globals the code runs with: ``functools.wraps``
    copies ``__module__`` from the wrapped function, so a library's wrapper
    would otherwise pass for user code.
    """
    globals_ = getattr(fn, "__globals__", None)
    module = (globals_.get("__name__") if globals_ else None) or getattr(fn, "__module__", "") or ""
    top = module.split(".")[0]
    return top if top in SKIP_PACKAGES else None


def _cached(f):
    """What ``_resolved`` holds for ``f``, or None."""
    try:
        entry = _resolved[f]
    except KeyError:
        return None
    if entry is _SELF:
        return f
    return entry() if type(entry) is weakref.ref else entry


def _cache(f, target) -> None:
    """Keeps ``target``, what runs in place of ``f``, while ``f`` lives.

    A ``WeakKeyDictionary`` frees its entry when the key dies, but never while
    the value holds the key. A converted closure shares ``f``'s cells, and a
    recursive closure's cell holds ``f`` itself: such a value is kept by a weak
    reference (it lives while it runs; the next call after it is gone makes it
    again), so that ``f``, its converted twin and all they capture are freed.
    """
    if target is f:
        _resolved[f] = _SELF  # (``f`` itself would hold the key)
        return
    if _shares_cells(f, target):
        try:
            _resolved[f] = weakref.ref(target)
            return
        except TypeError:  # pragma: no cover - a target that cannot be weakly referenced
            return  # made again on each call rather than kept forever
    _resolved[f] = target


def _shares_cells(f, target) -> bool:
    """Whether ``target`` may reach ``f`` through the closure cells they share."""
    inner = getattr(f, "__wrapped__", f)  # a `jax.jit` function: the function it wraps
    return bool(getattr(inner, "__closure__", None))


def _memo(f, build: Callable):
    """``build(f)``, computed once per ``f`` (while ``f`` lives)."""
    target = _cached(f)
    if target is None:
        target = build(f)
        _cache(f, target)
    return target


def _function(f: types.FunctionType):
    if library_module(f) is not None:
        rebuilt = libraries.rebuild(f, resolve)  # a linen method: around the user's method
        if rebuilt is not None:
            return rebuilt
        # `@jax.checkpoint`, `@jax.vmap`, `jax.grad(g)` made before the call: made anew
        # around the converted `g`, with the same options
        rebuilt = jax_internals.rebuild_transformed(
            f, resolve, lambda g: library_module(g) is None)
        if rebuilt is not None:
            return rebuilt
        e = transforms.entry(f)
        if e is not None:
            return transforms.convert_arguments(f, e, resolve)
        return handing_converted(f) if _calls_back(f) else f
    return _convert(f)


# -- user functions handed to libraries ----------------------------------------------

# The libraries whose functions get converted user functions for their function
# arguments (`optax.sgd(schedule)`, `jax.tree_util.tree_reduce(fn, t)`): they call
# them on traced values. Not the standard library (beyond `_CALLING_BACK`), whose
# functions take functions to inspect, register or pickle them as often as to call them.
_CALLING_BACK_PACKAGES = frozenset({"jax", "optax", "flax", "equinox", "haiku", "numpy",
                                    "scipy", "chex"})
# Functions of those packages that keep a user function as it is, by name: host
# callbacks (`pure_callback`, `debug.callback`, `io_callback`: called on NumPy values,
# outside the trace) and registrations (`register_pytree_node`, ...).
def _keeps_its_functions(name: str) -> bool:
    return name.endswith("callback") or name.startswith("register")


# Functions of the standard library that call the functions they are given.
_CALLING_BACK = frozenset({
    functools.reduce, itertools.accumulate, itertools.starmap, itertools.takewhile,
    itertools.dropwhile, itertools.filterfalse, itertools.groupby, heapq.nlargest,
    heapq.nsmallest, heapq.merge,
})
_builtin_wrappers: dict = {}  # (builtins live as long as the process)


def _calls_back(f) -> bool:
    """Whether library function ``f`` gets converted user functions for its arguments."""
    if _keeps_its_functions(getattr(f, "__name__", "")):
        return False
    try:
        if f in _CALLING_BACK:  # `heapq.nsmallest`, a Python function of the stdlib
            return True
    except TypeError:  # pragma: no cover - unhashable
        return False
    return library_module(f) in _CALLING_BACK_PACKAGES


def _user_callable(x) -> bool:
    """A user's function, method or ``functools.partial`` of one (decided by identity),
    carrying no attributes of its own: a library may read those (SciPy's
    ``event.terminal``) or set them, and the converted twin has none."""
    if type(x) is functools.partial:
        return _user_callable(x.func)
    fn = x.__func__ if isinstance(x, types.MethodType) else x
    return (isinstance(fn, types.FunctionType) and library_module(fn) is None
            and not fn.__dict__ and converted_of(x) is None and not marked_do_not_convert(x))


def handed(x):
    """``x`` as converted code hands it to a library: a user function converted.

    Only a function handed as an argument itself: functions inside a list or
    tuple are data to the library (``functools.reduce(pick_best, [relu, tanh])``,
    ``jax.tree_util.tree_leaves((f, g))``), which may hand them back, and they
    must come back as themselves.
    """
    if not _user_callable(x):
        return x
    try:
        return resolve(x)
    except Exception:  # noqa: BLE001 - never worse: the library gets the function itself
        return x


def handing_converted(f: Callable) -> Callable:
    """``f`` called with the user functions among its arguments converted.

    Converted code that hands a user function or lambda to a library
    (``functools.reduce(pick, xs)``, ``optax.sgd(schedule)``,
    ``jax.tree_util.tree_reduce(fn, tree)``) hands its converted twin, so the
    library's calls of it on traced values run its `if`s and loops as converted
    code does. Which arguments are user functions is decided by identity on each
    call (see ``handed``); anything else passes unchanged, and so does a function
    that cannot be converted or that carries attributes of its own.
    """
    def call(*args, **kwargs):
        return f(*[handed(a) for a in args], **{k: handed(v) for k, v in kwargs.items()})

    try:
        functools.update_wrapper(call, f)
    except AttributeError:  # pragma: no cover - a callable without a name
        pass
    return call


def _jit(f):
    inner = resolve(f.__wrapped__)
    return f if inner is f.__wrapped__ else transforms.rejit(f, inner)


def resolve(f):
    """The callable to run in place of ``f`` inside converted code."""
    inner = converted_of(f)
    if inner is not None:
        return inner
    if marked_do_not_convert(f):
        return f
    if isinstance(f, types.FunctionType):
        target = _cached(f)
        if target is None:
            target = _function(f)
            # one the converter refused is asked again on its next call: its caller
            # may be strict (an error then), where this one warned
            if target is not f or library_module(f) is not None:
                _cache(f, target)
        return target
    if isinstance(f, types.MethodType):
        rebuilt = libraries.rebuild(f, resolve)  # `model.apply` of a linen module
        if rebuilt is not None:
            return rebuilt
        func = resolve(f.__func__)
        return f if func is f.__func__ else types.MethodType(func, f.__self__)
    if type(f) is functools.partial:
        func = resolve(f.func)
        return f if func is f.func else functools.partial(func, *f.args, **f.keywords)
    if transforms.is_jit(f):
        return _memo(f, _jit)
    if transforms.is_custom_derivative(f):
        return _memo(f, lambda g: transforms.rebuild_custom_derivative(g, resolve))
    if isinstance(f, type) or isinstance(f, types.BuiltinFunctionType):
        try:
            replacement = _builtins.get(f)
            if replacement is None and (f in _CALLING_BACK or (
                    isinstance(f, types.BuiltinFunctionType) and _calls_back(f))):
                replacement = _builtin_wrappers.get(f)
                if replacement is None:
                    replacement = _builtin_wrappers[f] = handing_converted(f)
        except TypeError:  # pragma: no cover - unhashable type objects
            return f
        return f if replacement is None else replacement
    rebuilt = libraries.rebuild(f, resolve)  # a linen module, Equinox's `filter_jit(f)`
    if rebuilt is not None:
        return rebuilt
    call = getattr(type(f), "__call__", None)
    if isinstance(call, types.FunctionType) and library_module(call) is None:
        converted = resolve(call)
        if converted is not call:
            return types.MethodType(converted, f)
    elif call is not None and transforms.is_jit(call) and library_module(
            getattr(call, "__wrapped__", call)) is None:
        # `__call__` under `jax.jit` (`@partial(jax.jit, static_argnums=0)`): the
        # jitted function rebuilt around the converted one, bound as Python would
        converted = resolve(call)
        if converted is not call:
            return types.MethodType(converted, f)
    return f


# How many times one function may be active inside its own staged branches and
# loop bodies: a recursion whose stopping condition is traced never stops, since
# both branches of the staged `if` are traced, each making the recursive call.
RECURSION_LIMIT = 24
_active = threading.local()


def converted_call(f: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Calls ``f(*args, **kwargs)``, converting ``f`` first when it is user code.

    The semantics are given by this Python implementation::

        return f(*args, **kwargs)

    What runs in place of ``f`` is chosen by its type (the module docstring's
    table). Inside a staged branch or loop body, a function called with traced
    arguments may be active in its own staged code at most ``RECURSION_LIMIT``
    levels deep.

    Args:
      f: the callee.
      *args: its positional arguments.
      **kwargs: its keyword arguments.

    Returns:
      What the call returns.

    Raises:
      ConversionError: a recursion inside staged code goes deeper than
        ``RECURSION_LIMIT``.
    """
    target = resolve(f)
    if is_function(target) and target.tracing_here():
        # an `autograph.function` calling itself inside its own trace: its converted
        # function, inline (one trace, not one per level; a `jax.jit` traced inside
        # its own trace is JAX's RecursionError), so that a recursion with a traced
        # stopping condition meets the limit below
        target = resolve(target.python_function)
    if not is_staging():
        return target(*args, **kwargs)
    index_meaning.check_call(target, args, kwargs)
    if not any_traced((args, kwargs)):
        # its stopping condition reads Python values: a recursion (`fact(n - 1)`)
        # stops as in Python, whatever staged branch it runs in
        return target(*args, **kwargs)
    depths = getattr(_active, "depths", None)
    if depths is None:
        depths = _active.depths = {}
    key = id(target)
    depth = depths.get(key, 0)
    name = getattr(f, "__qualname__", getattr(f, "__name__", repr(f)))
    if depth >= RECURSION_LIMIT:
        raise _too_deep(name, depth, errors.current_location())
    depths[key] = depth + 1
    try:
        return target(*args, **kwargs)
    except RecursionError as e:
        # Python's own limit, met first (each level of converted code takes several
        # Python frames): said once, where the recursion started, with room to say it
        if depth != 0 or depths.get(key, 0) != 1:
            raise
        raise _too_deep(name, None, errors.current_location()) from e
    finally:
        depths[key] = depth


def _too_deep(name: str, depth: int | None, location) -> errors.ConversionError:
    how = (f"{depth} levels deep" if depth is not None
           else "until Python's recursion limit stopped it")
    return errors.ConversionError(
        "a recursive call with array arguments inside its own staged branches went "
        "deeper than autograph follows",
        observed=f"`{name}` called itself {how} inside its own staged branches (with "
                 f"array arguments); if its stopping condition depends on arrays, it never "
                 f"stops when staged: both branches of a staged `if` are traced, so each "
                 f"level makes the recursive call again",
        variable=name,
        fix=f"write the recursion as a `while` loop carrying the accumulated value, or make "
            f"the stopping condition a Python value (e.g. a static argument); a recursion "
            f"with a Python stopping condition is followed {RECURSION_LIMIT} levels deep "
            f"inside staged branches",
        location=location)


# JAX's errors for a traced value used as a Python one (`if x > 0:` on a tracer)
_TRACER_ERRORS = (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError,
                  jax.errors.TracerArrayConversionError)
_NOTED_CALLEE = "_autograph_noted_callee"


def note_static_size(error: BaseException) -> None:
    """Adds to JAX's error for ``jnp.where(c)`` (one argument), ``jnp.nonzero`` or
    ``jnp.argwhere`` of a traced value the call's line and the fix (``size=``)."""
    if not jax_internals.is_static_size_error(error):
        return
    where = errors.innermost_user_location(error)
    at = f" ({where.short}: `{where.text.strip()}`)" if where is not None else ""
    try:
        error.add_note(
            f"autograph: `jnp.where` with one argument, `jnp.nonzero` and `jnp.argwhere`"
            f"{at} give as many indices as there are true elements, a number known only "
            f"when the program runs; give `size=N` (and `fill_value=`) for a fixed length, "
            f"or use the three-argument `jnp.where(c, x, y)`")
    except (AttributeError, TypeError):  # pragma: no cover - an exception with __slots__
        pass


def note_unconverted_callee(error: BaseException) -> None:
    """Adds to a JAX tracer error which user function ran unconverted, where
    converted code called library code (``optax.sgd(schedule)``,
    ``functools.reduce(fn, ...)``) that called it, and how to hand the library a
    converted one.

    Read from the traceback: a frame of the user's own (neither generated nor a
    library's) below the innermost frame of converted code ran unconverted.
    """
    if not isinstance(error, _TRACER_ERRORS) or getattr(error, _NOTED_CALLEE, False):
        return
    frames = errors.traceback_entries(error)
    converted = [i for i, t in enumerate(frames)
                 if errors.is_generated(t.tb_frame.f_code.co_filename)]
    if not converted:
        return
    library = user = None
    for t in frames[converted[-1] + 1:]:
        module = t.tb_frame.f_globals.get("__name__", "") or ""
        top = module.split(".")[0]
        if top in SKIP_PACKAGES:
            # (JAX's public functions enter through its traceback filter)
            if (library is None and top != "autograph"
                    and module != jax_internals.TRACEBACK_FILTER_MODULE):
                library = module
        else:
            user = t  # called by a library, or by a built-in (`map`, `functools.reduce`)
            break
    if user is None:
        return
    code = user.tb_frame.f_code
    lam = code.co_name == "<lambda>"
    who = "a lambda" if lam else f"`{code.co_qualname}`"
    by = f"the library `{library}` called it" if library else \
        "a library or built-in (such as `map` or `functools.reduce`) called it"
    at = f"{os.path.basename(code.co_filename)}:{user.tb_lineno}"
    if code.co_flags & inspect.CO_GENERATOR:
        note = (f"autograph: {who} ({at}) is a generator, which runs as written (a step "
                f"at a time, as its consumer asks), as under plain `jax.jit`: control flow "
                f"on a traced value there is Python's. Choose with `jnp.where`, or move "
                f"the `if`/`while` out of the generator into the converted function")
    else:
        note = (f"autograph: {who} ({at}) ran unconverted: {by}, and only the functions "
                f"converted code calls are converted. Hand it a converted function: "
                f"`autograph.convert({'fn' if lam else code.co_name})`")
    try:
        error.add_note(note)
        setattr(error, _NOTED_CALLEE, True)
    except (AttributeError, TypeError):  # pragma: no cover - an exception with __slots__
        pass
