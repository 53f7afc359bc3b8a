"""``autograph.function``: a ``tf.function``-style decorator built on ``jax.jit``.

One ``Function`` converts its Python function once (control flow to
``lax``) and keeps ``jax.jit``'s cache of traces:

* an array argument keys the cache by shape and dtype (and weak type);
* a Python scalar, string, ``None`` or other non-pytree object keys it by
  value (it is a static argument of ``jax.jit``; a float by value and sign,
  so ``0.0`` and ``-0.0`` trace apart, and all NaNs alike; a plain object
  by its attributes, so that changing one traces again: see
  :mod:`autograph.static_keys`);
* tuples, lists, dicts, NamedTuples and registered dataclasses key it by
  structure and by their leaves (hashable containers of Python values only
  by value);
* Flax NNX objects among the arguments make the call an ``nnx.jit`` call;
  an Equinox module's leaves that are not arrays are static, as under
  ``eqx.filter_jit`` (see :mod:`autograph.static_leaves`, which also says
  how results holding such leaves come back);
* separate ``Function`` objects never share traces.

``print``, ``assert`` and ``raise`` on traced values run ordered in a program
on one device. A ``Function`` whose ``in_shardings``/``out_shardings`` span
more than one device traces them unordered from the start; one that meets a
program over several devices otherwise (arguments sharded over a mesh) traces
again unordered, and keeps to unordered callbacks from then on (see
:mod:`autograph.runtime.core.host_callbacks` for what each device then runs). There
a call whose program stages a check waits for its results, so that a check
that fails on any device fails the call.
"""

from __future__ import annotations

import collections
import functools
import inspect
import sys
import threading
import types
import warnings
from typing import TYPE_CHECKING, Any, Callable, Generic, ParamSpec, TypeVar, overload

import jax
import numpy as np

from autograph import api, errors, modes
from autograph import dispatch as _dispatch
from autograph import shardings as _shardings
from autograph.callables import FunctionBase, unwrap
from autograph.concrete import (
    BoundConcreteFunction,
    ConcreteFunction,
    as_spec,
    check_spec,
    describe,
)
from autograph.runtime.carried import objects as _objects
from autograph.runtime.core import host_callbacks as _host_callbacks
from autograph.runtime.core import run_time_errors as _run_time_errors
from autograph.runtime.functions import libraries as _libraries
from autograph.runtime.functions import transforms as _transforms
from autograph.runtime.functions.calls import SKIP_PACKAGES as _SKIP_PACKAGES
from autograph.static_keys import ByValue as _ByValue
from autograph.static_keys import keyed as _keyed
from autograph.static_keys import object_state as _object_state
from autograph.static_keys import unkeyed as _unkeyed
from autograph.static_leaves import held, holds_module, release, static_outputs

_ARRAYS = (jax.Array, np.ndarray, np.generic)
_ARRAY_IMPL = _dispatch.ARRAY_IMPL  # the exact type, checked without an ABC lookup
_SCALARS = (bool, int, float, complex, str, type(None))
RETRACE_WINDOW, RETRACE_LIMIT = 10, 5


_NO_ARG = object()


def _user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning point at the user's call."""
    frame: types.FrameType | None = sys._getframe(2)
    level = 2
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not (module.split(".")[0] in ("jax", "jaxlib", "autograph", "functools")
                or errors.is_generated(frame.f_code.co_filename)):
            return level
        frame, level = frame.f_back, level + 1
    return 2


_SIMPLE_TYPES = frozenset({_ARRAY_IMPL, bool, int, float, complex, str, type(None), np.ndarray})


def _type_key(value):
    """What decides how an argument is passed to jax.jit: its type (and pytree shape)."""
    t = type(value)
    if t in _SIMPLE_TYPES or t in (list, dict):
        return t  # lists and dicts are unhashable: never static, whatever they hold
    leaves, treedef = jax.tree_util.tree_flatten(value)
    if isinstance(value, tuple):  # hashable: static when it holds no arrays
        return t, treedef, tuple(map(type, leaves))
    return t, treedef


def _mixed_container(value) -> bool:
    """A container holding a non-array leaf (a Python number, a string, ...)."""
    leaves = jax.tree_util.tree_leaves(value)
    if len(leaves) == 1 and leaves[0] is value:
        return False
    return any(not isinstance(leaf, (*_ARRAYS, jax.ShapeDtypeStruct)) for leaf in leaves)


def _is_default(value, default) -> bool:
    """Whether passing ``value`` means what leaving its parameter out means.

    The very default object means it only where it cannot change: a dict or list
    default passed explicitly and then mutated must trace again (and is an
    argument like any other), where one left out is read by Python as the
    function is traced, as under ``jax.jit``.
    """
    if value is default:
        return _immutable(value)
    if type(value) is not type(default) or type(value) not in _SIMPLE_TYPES or isinstance(
            value, (np.ndarray, jax.Array)):
        return False
    return _keyed(value) == _keyed(default)  # floats by value and sign


def _keys_changed(old, new) -> bool:
    """Whether a dict argument's keys changed: ``old`` and ``new`` are ``(text, dict
    keys)`` (``old`` None for an argument not seen before)."""
    return old is not None and old[1] is not None and new[1] is not None and old[1] != new[1]


def _change(name: str, old, new) -> str:
    """What changed in argument ``name``: ``old`` and ``new`` are ``(text, dict keys)``."""
    if old is None:
        return f"`{name}` (-> {new[0]})"
    if _keys_changed(old, new):
        added = [k for k in new[1] if k not in old[1]]
        removed = [k for k in old[1] if k not in new[1]]
        parts = ([f"added {', '.join(map(repr, added[:4]))}"] if added else []) + (
            [f"removed {', '.join(map(repr, removed[:4]))}"] if removed else [])
        return f"the keys of `{name}` ({'; '.join(parts) or 'their order'})"
    return f"`{name}` ({old[0]} -> {new[0]})"


def bound_arguments(signature, args, kwargs) -> dict | None:
    """The arguments of a call by parameter name, defaults included; None without a
    signature, or where the call does not fit it."""
    if signature is None:
        return None
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


def _attribute_tokens(value) -> dict | None:
    """For a plain object (keyed by its attributes), each attribute's token: an array
    by identity, anything else by its description; else None."""
    attrs = getattr(value, "__dict__", None)
    if not isinstance(attrs, dict) or _object_state(value, set()) is None:
        return None
    return {k: ("array", id(v)) if isinstance(v, jax.Array) else ("value", describe(v))
            for k, v in list(attrs.items())[:64]}


def _immutable(value) -> bool:
    """Whether ``value`` cannot change: a number, a string, None, a JAX array, a
    function, a class or module, or a tuple of such."""
    if type(value) in _SIMPLE_TYPES:
        return type(value) is not np.ndarray
    if isinstance(value, tuple):
        return all(map(_immutable, value))
    return isinstance(value, (jax.Array, types.FunctionType, types.BuiltinFunctionType,
                              types.ModuleType, type))


def _unset(*args, **kwargs):  # pragma: no cover - replaced in Function.__new__
    raise AssertionError("Function is not set up")




_P = ParamSpec("_P")  # the parameters of the user's function, kept for type checkers
_R = TypeVar("_R")

if TYPE_CHECKING:
    class _Signature(Generic[_P, _R]):
        def __call__(self, *args: _P.args, **kwargs: _P.kwargs) -> _R: ...
else:
    class _Signature:
        """At run time nothing: ``Function[P, R]`` is ``Function``."""

        __slots__ = ()

        def __class_getitem__(cls, item):
            return cls


def _signature(specs) -> tuple:
    """``input_signature`` as a tuple, one spec (or pytree of specs) per argument; a
    clear error for anything else."""
    if not isinstance(specs, (list, tuple)):
        raise TypeError(f"input_signature takes a list of `autograph.TensorSpec`s, one per "
                        f"argument; got {specs!r}")
    for k, spec in enumerate(specs):
        for leaf in jax.tree_util.tree_leaves(spec):
            if not isinstance(leaf, jax.ShapeDtypeStruct):
                raise TypeError(f"input_signature[{k}] holds {leaf!r}; give an "
                                f"`autograph.TensorSpec(shape, dtype)` (or a "
                                f"`jax.ShapeDtypeStruct`), such as `TensorSpec([None], "
                                f"jnp.float32)`")
    return tuple(specs)


class Function(_Signature[_P, _R], functools.partial, FunctionBase):
    """A converted, ``jax.jit``-compiled function with ``tf.function``'s habits.

    Create one with :func:`autograph.function`. Calling it runs the compiled
    function; ``get_concrete_function``, ``lower`` and ``trace`` give the
    ahead-of-time forms. ``python_function`` is the function it wraps.

    It is a ``functools.partial`` of its call path, so that a call goes from C
    straight into one short Python function and then into ``jax.jit``.
    """

    _options: dict[str, Any]  # as given: the unordered twin is made with them

    def __new__(cls, fn: Callable, **options):
        self = super().__new__(cls, _unset)
        self._options = options
        self._setup(fn, **options)
        self._entries = {True: self._entry(counting=True), False: self._entry(counting=False)}
        self._use_entry(counting=True)
        modes.register(self)
        return self

    def __init__(self, *args, **kwargs):
        pass  # all done in __new__

    def _setup(self, fn: Callable, *, input_signature=None, autograph: bool = True,
               reduce_retracing: bool = False, strict: bool | None = None,
               _ordered: bool | None = None, **jit_kwargs):
        self.python_function = fn
        plain, _ = unwrap(fn)
        self._name = getattr(plain, "__qualname__", getattr(plain, "__name__", "function"))
        self._target = api.convert(fn, strict=strict) if autograph else fn
        self.input_signature = None if input_signature is None else _signature(input_signature)
        self.reduce_retracing = reduce_retracing
        self._jit_kwargs = jit_kwargs
        self._user_argnums = _as_tuple(jit_kwargs.pop("static_argnums", None))
        self._user_argnames = _as_tuple(jit_kwargs.pop("static_argnames", None))
        self._signature: inspect.Signature | None
        try:
            self._signature = inspect.signature(fn)
        except (TypeError, ValueError):
            self._signature = None
        params = list(self._signature.parameters.values()) if self._signature is not None else []
        simple = self._signature is not None and all(
            p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
        # calls giving exactly these positional arrays take the fast path; others
        # are first put in one canonical form (defaults filled in)
        self._n_positional = len(params) if simple else -1
        self._canonicalize = self._signature is not None and not any(
            p.kind is p.VAR_POSITIONAL for p in params)
        defaults = [p.default for p in params if p.default is not p.empty and p.kind in (
            p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._default_tail = tuple(defaults) if simple else ()
        self._n_required = (len(params) - len(defaults)) if simple else -1
        # where a Python float is a static argument of the jitted function
        named = {i: p.name for i, p in enumerate(params)
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)}
        self._static_at = set(self._user_argnums) | {
            i for i, name in named.items() if name in self._user_argnames}
        self._static_names = set(self._user_argnames) | {
            name for i, name in named.items() if i in self._user_argnums}
        self._by_types: dict = {}
        self._flat_keys: set = set()
        self._positional_jit_options = bool(
            {"in_shardings", "donate_argnums", "donate_argnames"} & set(jit_kwargs)) or bool(
            jit_kwargs.get("static_argnums")) or bool(jit_kwargs.get("static_argnames"))
        self._variants: dict = {}
        self._traces = 0
        self._traced_here = threading.local()  # how many of them this thread made
        self._calls_cell = [0]
        self._last_trace_call = [0]
        self._counting = True
        self._trace_calls: collections.deque = collections.deque(maxlen=RETRACE_WINDOW)
        self._last_trace: dict | None = None
        self._last_held: dict = {}  # argument -> its attributes' tokens, at the last trace
        self._warned = False
        # callbacks ordered unless the shardings span devices; `_unordered` is the
        # Function that traces them unordered, once one is needed
        self._ordered = not _shardings.spans_devices(jit_kwargs) if _ordered is None \
            else _ordered
        self._unordered: Function | None = None
        self._many_devices = False  # a program ran over several devices: calls go there
        self._graph_calls = False  # a call passed Flax NNX objects (see `_call_jitted`)
        self._checks: list = []  # one item per check staged (`assert`, `raise`)
        target, record = self._target, self._record_trace
        ordered, checks = self._ordered, self._checks

        code = getattr(plain, "__code__", None)
        names: tuple = code.co_varnames[:code.co_argcount] if code is not None else ()

        tracing = self._tracing = threading.local()

        def traced(*args, **kwargs):
            watched = _keyed_objects(args, kwargs, names)
            args = tuple(map(_unkeyed, args))
            kwargs = {k: _unkeyed(v) for k, v in kwargs.items()}
            record(args, kwargs)
            before = [(name, obj, dict(vars(obj))) for name, obj in watched]
            depth = getattr(tracing, "depth", 0)
            tracing.depth = depth + 1
            try:
                with _host_callbacks.ordering(ordered, checks):
                    out = static_outputs(target(*args, **kwargs))
            except BaseException:
                _refuse_traced_attributes(before, refuse=False)
                raise
            finally:
                tracing.depth = depth
            _refuse_traced_attributes(before)
            return out

        if self._signature is not None:
            # lets jax.jit map names to positions (inspect reads a function's __signature__)
            traced.__signature__ = self._signature  # type: ignore[attr-defined]
        traced.__name__ = getattr(plain, "__name__", "function")
        traced.__qualname__ = self._name
        if hasattr(plain, "__code__"):  # JAX's messages name the user's file and line
            traced.__wrapped__ = plain  # type: ignore[attr-defined]
        self._traced = traced
        self._jit = self._variant((), ())
        self._flat_jit = jax.jit(self._run_flat, static_argnums=1,
                                 **{k: v for k, v in jit_kwargs.items() if k == "out_shardings"})
        for attr in ("__module__", "__name__", "__qualname__", "__doc__"):
            if hasattr(plain, attr):
                setattr(self, attr, getattr(plain, attr))
        for attr, value in getattr(plain, "__dict__", {}).items():
            self.__dict__.setdefault(attr, value)  # marks such as linen's `compact`
        self.__wrapped__ = plain

    # -- calling ---------------------------------------------------------------

    def _entry(self, counting: bool):
        """A call path, with everything it reads in local variables.

        Calls are counted (for the retrace warning) only while the last trace
        is fewer than ``RETRACE_WINDOW`` calls back; after that the function
        switches to the path that does not count, until the next trace.
        """
        jit, general, array_type = self._jit, self._call_general, _ARRAY_IMPL
        n_positional, reraise = self._n_positional, _run_time_errors.reraise
        checking, eager, python_function = modes.CHECKING, modes.eager, self.python_function
        calls, last_trace, use = self._calls_cell, self._last_trace_call, self._use_entry
        again = self._again_unordered
        if self.input_signature is not None or not self._ordered:
            # unordered callbacks: every call goes through `general`, which waits for
            # the results of a program that checks something
            def checked_entry(*args, **kwargs):
                if checking[0] and eager() and not _any_tracer(args, kwargs):
                    return python_function(*args, **kwargs)
                try:
                    try:
                        return general(args, kwargs)
                    except jax.errors.JaxRuntimeError as e:
                        reraise(e)
                        raise
                except Exception as e:
                    errors.filter_traceback(e)
                    raise
            return checked_entry
        if counting or checking[0]:
            def counting_entry(*args, **kwargs):
                if checking[0] and eager() and not _any_tracer(args, kwargs):
                    return python_function(*args, **kwargs)
                try:
                    try:
                        out = general(args, kwargs)
                    except jax.errors.JaxRuntimeError as e:
                        reraise(e)
                        raise
                except Exception as e:
                    errors.filter_traceback(e)
                    raise
                if counting and calls[0] - last_trace[0] >= RETRACE_WINDOW:
                    use(counting=False)
                return out
            return counting_entry

        n_required = self._n_required
        if (n_positional >= 0 and not self._jit_kwargs and not self._graph_calls
                and not self._user_argnums and not self._user_argnames):
            cpp = _dispatch.cpp_entry(self._name, jit, (n_required, n_positional), general,
                                      again)
            if cpp is not None:
                return cpp  # plain array calls stay in jax.jit's C++ dispatch

        def entry(first=_NO_ARG, /, *rest, **kwargs):
            try:  # (costs nothing until an exception)
                if type(first) is array_type and not rest and not kwargs and n_positional == 1:
                    return jit(first)  # the commonest call: one array, no Python frame more
                args = rest if first is _NO_ARG else (first,) + rest
                if not kwargs and n_required <= len(args) <= n_positional:
                    for a in args:
                        if type(a) is not array_type:
                            return general(args, kwargs)
                    return jit(*args)  # all arrays: straight to jax.jit's C++ path
                return general(args, kwargs)
            except Exception as e:  # (costs nothing until an exception)
                # the user's own exception, raised as the program ran; or a program
                # over several devices, run again with unordered callbacks
                if again(e):
                    return general(rest if first is _NO_ARG else (first,) + rest, kwargs)
                errors.filter_traceback(e)
                raise
        return entry

    def _again_unordered(self, error: BaseException) -> bool:
        """Whether a call that raised ``error`` is to run again (through ``general``):
        JAX refused its program's ordered callbacks over several devices, so calls now
        go to the twin that stages them unordered. Raises instead the user's own
        exception behind a ``JaxRuntimeError``."""
        if isinstance(error, jax.errors.JaxRuntimeError):
            _run_time_errors.reraise(error)
            return False
        if self._ordered and _host_callbacks.refused_ordered(error):
            self._many_devices = True
            twin = self._twin()
            self._entries = {True: twin, False: twin}
            self._use_entry(self._counting)
            return True
        return False

    def _twin(self) -> Function:
        """This function with its callbacks staged unordered (made on first use)."""
        if self._unordered is None:
            self._unordered = Function(self.python_function,
                                       **{**self._options, "_ordered": False})
        return self._unordered

    def _eager_mode_changed(self) -> None:
        """Makes the call paths again, for ``modes.CHECKING`` or ``_graph_calls`` now: while
        eager mode may be on somewhere every call checks it, and otherwise plain calls go
        straight to ``jax.jit``'s C++ dispatch."""
        if self._many_devices:
            return  # calls go to the twin, which checks
        self._entries = {True: self._entry(counting=True), False: self._entry(counting=False)}
        self._use_entry(self._counting)

    def _use_entry(self, counting: bool) -> None:
        self._counting = counting
        # partial's own __setstate__ (C code, not in typeshed) swaps the callable in place
        self.__setstate__(  # type: ignore[attr-defined]
            (self._entries[counting], (), {}, self.__dict__))

    @property
    def _calls(self) -> int:
        return self._calls_cell[0]

    def _call_general(self, args, kwargs, bound: bool = False):
        if self._ordered and (self._many_devices or _host_callbacks.unordered_now()):
            return self._twin()._call_general(args, kwargs, bound)
        try:
            out = self._call_jitted(args, kwargs, bound)
        except ValueError as e:
            if not self._again_unordered(e):
                raise
            return self._twin()._call_general(args, kwargs, bound)
        if self._checks and not self._ordered:
            _wait(out)  # a check that fails on any device fails this call
        return out

    def _call_jitted(self, args, kwargs, bound: bool):
        self._calls_cell[0] += 1
        if _objects.has_graph_nodes(args, kwargs):
            if not self._graph_calls:
                # jax.jit's C++ dispatch would flatten the NNX objects on every call, only
                # to hand the call to Python: the call paths are made again without it
                self._graph_calls = True
                self._eager_mode_changed()
            return self._graph_jit(*args, **kwargs)
        if args and _libraries.is_linen_module(args[0]):
            # a linen method, run by linen's `init`/`apply` (compiled where those are):
            # its module is bound to variables `jax.jit` cannot take, so it is converted only
            return self._target(*args, **kwargs)
        if self.input_signature is not None:
            args, kwargs = self._check_signature(args, kwargs, skip=1 if bound else 0)
        if self._canonicalize:
            args, kwargs = self._canonical(args, kwargs)
            if not kwargs and self._n_required >= 0 and self.input_signature is None:
                short = self._without_defaults(args)
                if all(map(_dispatch.plain, short)):
                    # arrays (in lists, tuples, dicts): the call the C++ entry makes,
                    # with the defaults left to Python while tracing, so that `f(x)`,
                    # `f(x, 2)` and `f(x, n=2)` share one trace
                    return self._jit(*short)
        if not kwargs:
            for a in args:
                if not isinstance(a, _ARRAYS):
                    break
            else:
                return self._jit(*args)
        key = (tuple(map(_type_key, args)), tuple((k, _type_key(v)) for k, v in kwargs.items()))
        if key in self._flat_keys:
            return self._call_flat(args, kwargs)
        jitted = self._by_types.get(key)
        if jitted is None:  # static or dynamic follows from the types (and pytree structures)
            if not self._positional_jit_options and holds_module((args, kwargs)):
                self._flat_keys.add(key)  # Equinox's rule: a module's other leaves are static
                return self._call_flat(args, kwargs)
            jitted = self._by_types[key] = self._for(args, kwargs)
        mine = getattr(self._traced_here, "n", 0)  # traces this thread made so far
        keyed_args, keyed_kwargs = self._jit_args(args, kwargs)
        try:
            return jitted(*keyed_args, **keyed_kwargs)
        except (TypeError, jax.errors.ConcretizationTypeError):
            # A container holding Python values that the function needs as such
            # (a string, an int used as a shape): key the cache on their values.
            if self._positional_jit_options or not any(
                    _mixed_container(a) for a in list(args) + list(kwargs.values())):
                raise
            self._flat_keys.add(key)
            # that attempt was ours, not a trace of the user's (another thread's stay)
            self._traces -= getattr(self._traced_here, "n", 0) - mine
            return self._call_flat(args, kwargs)

    @functools.cached_property
    def _graph_jit(self):
        """``nnx.jit`` of the function: Flax objects among the arguments are updated in place."""
        from flax import nnx
        return nnx.jit(self._traced, static_argnums=self._user_argnums or None,
                       static_argnames=self._user_argnames or None, **self._jit_kwargs)

    def _canonical(self, args, kwargs):
        """One form per call: defaults filled in, keyword arguments by position."""
        if not kwargs and self._n_required <= len(args) <= self._n_positional:
            return args + self._default_tail[len(args) - self._n_required:], kwargs
        assert self._signature is not None  # _canonicalize says there is one
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"`{self._name}`: {e}") from None
        bound.apply_defaults()
        return bound.args, bound.kwargs

    def _without_defaults(self, args: tuple) -> tuple:
        """``args`` less the trailing ones that are their parameter's default."""
        n, first = len(args), self._n_required
        while n > first and _is_default(args[n - 1], self._default_tail[n - 1 - first]):
            n -= 1
        return args[:n]

    def _call_flat(self, args, kwargs):
        """Calls with Python values inside containers: each keys the cache by value."""
        leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
        dynamic_at = tuple(i for i, leaf in enumerate(leaves)
                           if isinstance(leaf, (*_ARRAYS, jax.ShapeDtypeStruct)))
        at = set(dynamic_at)
        template = tuple(None if i in at else _keyed(leaf) for i, leaf in enumerate(leaves))
        if not _hashable(template):
            bad = next(leaf for leaf in template if not _hashable(leaf))
            raise TypeError(f"an argument of `{self._name}` holds a `{type(bad).__name__}` "
                            f"object, which is neither an array nor hashable; autograph.function "
                            f"cannot key its cache on it")
        return release(self._flat_jit([leaves[i] for i in dynamic_at],
                                      (treedef, dynamic_at, template)))

    def _run_flat(self, dynamic, static):
        treedef, dynamic_at, template = static
        leaves = list(map(_unkeyed, template))
        for i, value in zip(dynamic_at, dynamic):
            leaves[i] = value
        args, kwargs = jax.tree_util.tree_unflatten(treedef, leaves)
        return held(self._traced(*args, **kwargs))  # `release`d after the call

    def tracing_here(self) -> bool:
        """Whether this thread is tracing this function now (a call of it is then a
        recursion, which converted code runs inline: see ``calls.converted_call``)."""
        return getattr(self._tracing, "depth", 0) > 0

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        return _BoundFunction(self, obj)

    def _is_static(self, value) -> bool:
        if isinstance(value, (*_ARRAYS, jax.ShapeDtypeStruct)):
            return False
        if isinstance(value, _SCALARS):
            return not (self.reduce_retracing and not isinstance(value, (str, type(None))))
        leaves = jax.tree_util.tree_leaves(value)
        if not leaves:
            return True  # an empty container, or a non-pytree object
        if len(leaves) == 1 and leaves[0] is value:
            return True  # an object JAX does not know: keyed by its state or its hash
        return not any(isinstance(leaf, (*_ARRAYS, jax.ShapeDtypeStruct)) for leaf in leaves) \
            and _hashable(value)

    def _jit_args(self, args, kwargs):
        """The arguments as the jitted function takes them: static floats keyed faithfully."""
        at, names, static = self._static_at, self._static_names, self._is_static
        return (tuple(_keyed(a) if i in at or static(a) else a for i, a in enumerate(args)),
                {k: _keyed(v) if k in names or static(v) else v for k, v in kwargs.items()})

    def _for(self, args, kwargs):
        """The ``jax.jit`` variant whose static arguments fit these arguments."""
        positions = tuple(i for i, a in enumerate(args) if self._is_static(a))
        names = tuple(sorted(k for k, v in kwargs.items() if self._is_static(v)))
        for where, value in [(i, args[i]) for i in positions] + [(k, kwargs[k]) for k in names]:
            if not _hashable(_keyed(value)):
                raise TypeError(
                    f"argument {self._arg_name(where)} of `{self._name}` is a "
                    f"`{type(value).__name__}` object, which autograph.function can neither "
                    f"trace (it is not an array or a pytree) nor key its cache on (it is not "
                    f"hashable); make it hashable, register it as a pytree "
                    f"(`jax.tree_util.register_dataclass`), or pass its arrays instead")
        return self._variant(positions, names)

    def _variant(self, positions, names):
        key = (positions, names)
        jitted = self._variants.get(key)
        if jitted is None:
            # the entries of `in_shardings` for arguments made static here drop out
            kwargs = _shardings.without_static(self._jit_kwargs, positions, self._user_argnums)
            argnums = tuple(sorted(set(self._user_argnums) | set(positions)))
            argnames = tuple(sorted(set(self._user_argnames) | set(names)))
            if argnums:
                kwargs["static_argnums"] = argnums
            if argnames:
                kwargs["static_argnames"] = argnames
            jitted = self._variants[key] = jax.jit(self._traced, **kwargs)
        return jitted

    def _arg_name(self, where) -> str:
        if isinstance(where, str):
            return f"`{where}`"
        if self._signature is not None:
            params = list(self._signature.parameters.values())
            if where < len(params) and params[where].kind in (
                    params[where].POSITIONAL_ONLY, params[where].POSITIONAL_OR_KEYWORD):
                return f"`{params[where].name}`"
        return f"#{where}"

    # -- input_signature -------------------------------------------------------

    def _check_signature(self, args, kwargs, skip: int = 0):
        """Checks a call against ``input_signature``; Python numbers become arrays."""
        specs = self.input_signature
        assert specs is not None  # called for functions with an input_signature only
        # (name, index in `*args` or None, value), one per argument: `*args` spread out
        values: list[tuple[str, int | None, Any]]
        if self._signature is not None:
            try:
                bound = self._signature.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"`{self._name}`: {e}") from None
            values = []
            for name, value in bound.arguments.items():
                if self._signature.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
                    values.extend((name, i, v) for i, v in enumerate(value))
                else:
                    values.append((name, None, value))
            values = values[skip:]
        else:
            bound = None
            values = []
            values.extend((f"#{k}", None, a) for k, a in enumerate(args))
            values = values[skip:]
        if len(values) != len(specs):
            raise TypeError(
                f"`{self._name}` has an input_signature of {len(specs)} arguments but was "
                f"called with {len(values)}: input_signature={list(specs)}")
        converted = {}
        for (name, i, value), spec in zip(values, specs):
            label = f"`{name}`" if i is None else f"`{name}[{i}]`"
            new = check_spec(self._name, label, spec, value)
            if new is not value:
                converted[name, i] = new
        if not converted:
            return args, kwargs
        if bound is None or self._signature is None:
            return tuple(converted.get((f"#{i}", None), a) for i, a in enumerate(args)), kwargs
        for name, value in bound.arguments.items():
            if self._signature.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
                bound.arguments[name] = tuple(converted.get((name, i), v)
                                              for i, v in enumerate(value))
            elif (name, None) in converted:
                bound.arguments[name] = converted[name, None]
        return bound.args, bound.kwargs

    # -- tracing bookkeeping ---------------------------------------------------

    def _record_trace(self, args, kwargs):
        self._traces += 1
        self._traced_here.n = getattr(self._traced_here, "n", 0) + 1
        if not self._counting:  # the previous trace is a window or more back
            self._calls_cell[0] = 1
            self._trace_calls.clear()
            self._use_entry(counting=True)
        self._last_trace_call[0] = self._calls_cell[0]
        arguments = bound_arguments(self._signature, args, kwargs)
        # (its text, and a dict's keys: never the values, which may be tracers)
        described = {} if arguments is None else {
            k: (describe(v), tuple(v) if isinstance(v, dict) else None)
            for k, v in arguments.items()}
        last = self._last_trace
        moved = [] if last is None else [
            (k, last.get(k), v) for k, v in described.items() if last.get(k) != v]
        changed = [_change(k, old, new) for k, old, new in moved]
        keys_changed = any(_keys_changed(old, new) for _, old, new in moved)
        self._last_trace = described
        # the attributes of plain objects, which key the cache (arrays by identity)
        if arguments is None:
            arguments = {**{f"#{i}": a for i, a in enumerate(args)}, **kwargs}
        held = {k: _attribute_tokens(v) for k, v in arguments.items()}
        new_arrays = [f"`{k}.{a}`" for k, tokens in held.items()
                      for a, t in (tokens or {}).items()
                      if self._last_held.get(k) and a in self._last_held[k]
                      and self._last_held[k][a] != t and t[0] == "array"]
        self._last_held = held
        from_array = not changed and bool(new_arrays)  # an array attribute, and only that
        if from_array:
            changed = [f"{new_arrays[0]} (a new array)"]
        self._trace_calls.append(self._calls)
        recent = [c for c in self._trace_calls if c > self._calls - RETRACE_WINDOW]
        if len(recent) > RETRACE_LIMIT and not self._warned:
            self._warned = True
            what = ", ".join(changed) or "the arguments"
            advice = self._retrace_advice(keys_changed) if not from_array else (
                "an array an argument holds as an attribute keys the cache by its identity "
                "(a plain object is read as a constant), so each new array is a trace of "
                f"its own; pass the array itself as an argument (`{new_arrays[0][1:-1]}`), "
                "or make the object a pytree (`jax.tree_util.register_dataclass`), whose "
                "arrays key the cache by shape and dtype")
            warnings.warn(
                f"`{self._name}` was traced {len(recent)} times in its last "
                f"{RETRACE_WINDOW} calls; the last trace came from a change in {what}. "
                f"Tracing and compiling are slow: {advice}",
                stacklevel=_user_stacklevel())

    def _retrace_advice(self, keys_changed: bool = False) -> str:
        """What to do about frequent traces, given what the function already has."""
        if keys_changed:
            return ("a dict with other keys is another structure, and each structure is a "
                    "trace of its own; keep the keys the same from call to call (fill the "
                    "entries a call lacks with zeros, and pass a mask)")
        if self.input_signature is not None:
            if any(getattr(spec, "symbolic", False) for spec in
                   jax.tree_util.tree_leaves(self.input_signature,
                                             is_leaf=lambda s: hasattr(s, "declared_shape"))):
                return ("a `None` dimension of `input_signature` checks the arguments, but "
                        "XLA compiles for concrete shapes, so each new size is a trace and "
                        "a compile of its own; call the concrete function "
                        "`f.get_concrete_function()` returns instead (one symbolic trace "
                        "serves every size, compiled per size), or pad the arrays to a few "
                        "fixed sizes and mask the padding")
            return "pass arrays for the values that change, not Python values"
        advice = ("pass arrays rather than Python numbers (arrays key the cache by shape and "
                  "dtype, Python values by value), or give `input_signature=`")
        return advice if self.reduce_retracing else advice + " / `reduce_retracing=True`"

    def experimental_get_tracing_count(self) -> int:
        """How many times the Python function has been traced so far."""
        twin = self._unordered
        return self._traces + (0 if twin is None else twin._traces)

    # -- ahead of time -----------------------------------------------------------

    def lower(self, *args, **kwargs):
        """``jax.jit(...).lower`` for these arguments (arrays or specs)."""
        if self._many_devices:
            return self._twin().lower(*args, **kwargs)
        keyed_args, keyed_kwargs = self._jit_args(args, kwargs)
        try:
            return self._for(args, kwargs).lower(*keyed_args, **keyed_kwargs)
        except ValueError as e:
            if not self._again_unordered(e):
                raise
            return self._twin().lower(*args, **kwargs)

    def trace(self, *args, **kwargs):
        """``jax.jit(...).trace`` for these arguments (arrays or specs)."""
        if self._many_devices:
            return self._twin().trace(*args, **kwargs)
        keyed_args, keyed_kwargs = self._jit_args(args, kwargs)
        return self._for(args, kwargs).trace(*keyed_args, **keyed_kwargs)

    def get_concrete_function(self, *args, **kwargs) -> "ConcreteFunction":
        """The function traced for one signature.

        Args:
          *args, **kwargs: arrays, ``TensorSpec``/``jax.ShapeDtypeStruct``s, or
            Python values (static). With none, the ``input_signature``.
        """
        if not args and not kwargs:
            if self.input_signature is None:
                raise TypeError(f"`{self._name}`.get_concrete_function() needs argument "
                                f"specs, or an input_signature on the function")
            args = self.input_signature
        if self._many_devices:
            return self._twin().get_concrete_function(*args, **kwargs)
        args = tuple(as_spec(a) for a in args)
        kwargs = {k: as_spec(v) for k, v in kwargs.items()}
        return ConcreteFunction(self._name, self._for(args, kwargs), args, kwargs,
                                jit_args=self._jit_args(args, kwargs),
                                signature=self._signature, arg_name=self._arg_name)

    def __repr__(self) -> str:
        return f"<autograph.Function {self._name}>"

    def __reduce__(self):
        raise TypeError("autograph.Function objects cannot be pickled; export them with jax.export")


class _BoundFunction:
    """A ``Function`` bound to an instance, as a method.

    Traces are keyed by the instance's attributes when it is a plain object
    (so that changing one traces again), and by its leaves when it is a
    pytree; ``input_signature`` and concrete functions leave ``self`` out, as
    in TensorFlow.
    """

    def __init__(self, function: Function, obj):
        self._function, self._obj = function, obj
        self.__wrapped__ = function.__wrapped__

    def __call__(self, *args, **kwargs):
        if modes.CHECKING[0] and modes.eager() and not _any_tracer(args, kwargs):
            return self._function.python_function(self._obj, *args, **kwargs)
        try:
            try:
                return self._function._call_general((self._obj,) + args, kwargs, bound=True)
            except jax.errors.JaxRuntimeError as e:
                _run_time_errors.reraise(e)
                raise
        except Exception as e:
            errors.filter_traceback(e)
            raise

    def get_concrete_function(self, *args, **kwargs):
        if not args and not kwargs and self._function.input_signature is not None:
            args = self._function.input_signature
        return BoundConcreteFunction(
            self._function.get_concrete_function(self._obj, *args, **kwargs), self._obj)

    def lower(self, *args, **kwargs):
        return self._function.lower(self._obj, *args, **kwargs)

    def trace(self, *args, **kwargs):
        return self._function.trace(self._obj, *args, **kwargs)

    def experimental_get_tracing_count(self) -> int:
        return self._function.experimental_get_tracing_count()

    @property
    def python_function(self):
        return self._function.python_function.__get__(self._obj)

    def __getattr__(self, name):  # the rest of `Function`'s interface
        function = self.__dict__.get("_function")
        if function is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(function, name)


def _keyed_owner(f):
    """The object ``f`` is bound to (a method's ``self``, or ``f`` itself where it is an
    object whose class defines ``__call__``), where traces are keyed by its attributes
    (``static_keys``): an instance of a class of the program's own; else None."""
    if isinstance(f, types.MethodType):
        owner = f.__self__
        if not isinstance(f.__func__, types.FunctionType):
            return None
    elif isinstance(f, (types.FunctionType, types.BuiltinFunctionType, functools.partial,
                        type, Function, _BoundFunction)):
        return None
    else:
        owner = f
        if not isinstance(getattr(type(f), "__call__", None), types.FunctionType):
            return None
    module = str(getattr(type(owner), "__module__", "") or "")
    if isinstance(owner, type) or module.split(".")[0] in _SKIP_PACKAGES:
        return None  # a class (a classmethod's), or a library's object (a linen module)
    return owner if _object_state(owner, set()) is not None else None


def _keyed_objects(args, kwargs, params: tuple) -> list[tuple[str, Any]]:
    """The plain objects among the arguments, which the cache keys by their attributes
    (``static_keys``), with the parameter each is given as."""
    found = [(f"`{params[i]}`" if i < len(params) else f"argument {i}", a)
             for i, a in enumerate(args)]
    found += [(f"`{k}`", v) for k, v in kwargs.items()]
    return [(where, _unkeyed(v)) for where, v in found
            if type(v) is _ByValue and isinstance(getattr(_unkeyed(v), "__dict__", None), dict)]


def _refuse_traced_attributes(before, refuse: bool = True) -> None:
    """Puts back the attributes tracing gave a traced value on an argument object, and
    (with ``refuse``) says so: the object would keep a tracer past the call (its
    attributes are part of the cache's key, read as constants, never carried out)."""
    for where, obj, attrs in before:
        leaked = [k for k, v in vars(obj).items()
                  if attrs.get(k, _MISSING) is not v and _any_tracer((v,), {})]
        if not leaked:
            continue
        for k in leaked:  # (what else tracing set stays, as it does under `jax.jit`)
            if k in attrs:
                vars(obj)[k] = attrs[k]
            else:
                del vars(obj)[k]
        if not refuse:
            continue
        name = leaked[0]
        raise errors.AutographError(
            "an `autograph.function` cannot assign a traced value to an attribute of an "
            "object it is given",
            observed=f"attribute `{name}` of the `{type(obj).__name__}` object given as "
                     f"{where} is assigned a value computed from the traced arguments; it "
                     f"would hold a tracer after the call (the object's attributes are "
                     f"read as constants that key the trace, not carried in and out)",
            variable=name,
            fix=f"return the new value and assign it after the call (`new = f(obj, ...)`, "
                f"then `obj.{name} = new`), or pass the arrays themselves (or a pytree "
                f"holding them) as arguments")


_MISSING = object()


def _any_tracer(args, kwargs) -> bool:
    """Whether a call is being traced (inside ``jax.jit``, ``jax.vmap``, ...): eager mode
    then still traces the function, as ``tf.function`` does inside a graph."""
    return any(isinstance(leaf, jax.core.Tracer)
               for leaf in jax.tree_util.tree_leaves((args, kwargs)))


def _wait(out) -> None:
    """Waits for a call's results (for its effects, where it returns no array)."""
    leaves = jax.tree_util.tree_leaves(out)
    if any(isinstance(leaf, jax.core.Tracer) for leaf in leaves):
        return  # called while tracing: nothing runs yet
    arrays = [leaf for leaf in leaves if isinstance(leaf, jax.Array)]
    if arrays:
        jax.block_until_ready(arrays)
    else:
        jax.effects_barrier()


def _hashable(value) -> bool:
    try:
        hash(value)
        return True
    except TypeError:
        return False


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    if isinstance(x, (int, str)):
        return (x,)
    return tuple(x)


@overload
def function(fn: Callable[_P, _R], *, input_signature=None, autograph: bool = True,
             reduce_retracing: bool = False, strict: bool | None = None,
             **jit_kwargs: Any) -> Function[_P, _R]: ...
@overload
def function(fn: None = None, *, input_signature=None, autograph: bool = True,
             reduce_retracing: bool = False, strict: bool | None = None,
             **jit_kwargs: Any) -> Callable[[Callable[_P, _R]], Function[_P, _R]]: ...
def function(fn: Callable | None = None, *, input_signature=None, autograph: bool = True,
             reduce_retracing: bool = False, strict: bool | None = None, **jit_kwargs: Any):
    """Converts ``fn``'s control flow and compiles it with ``jax.jit``.

    Usable bare (``@autograph.function``) or with options
    (``@autograph.function(static_argnums=1)``). The ``jax.jit`` keyword
    arguments (``static_argnums``, ``static_argnames``, ``donate_argnums``,
    ``in_shardings``, ``out_shardings``, ...) pass through unchanged.

    Args:
      fn: a function, method, lambda, ``functools.partial`` or callable object.
      input_signature: a sequence of :class:`TensorSpec` (or
        ``jax.ShapeDtypeStruct``), one per argument; calls must match it
        (``TypeError`` for a dtype, ``ValueError`` for a shape). ``None`` in a
        shape accepts any size; each new size is traced once.
      autograph: convert Python control flow (``True``) or only jit (``False``).
      reduce_retracing: treat Python numbers as (weakly typed) arrays instead of
        keying the cache by their values.
      strict: a function that cannot be converted is a ``ConversionError``
        instead of running unconverted with a warning (see ``convert``).
      **jit_kwargs: passed to ``jax.jit``.

    Returns:
      A :class:`Function`.

    Examples:
      >>> import jax.numpy as jnp
      >>> import autograph
      >>> @autograph.function
      ... def clip(x):
      ...     if x.sum() > 1.0:
      ...         x = x / x.sum()
      ...     return x
      >>> clip(jnp.array([1.0, 3.0]))
      Array([0.25, 0.75], dtype=float32)
      >>> clip.experimental_get_tracing_count()
      1
    """
    def wrap(f):
        if isinstance(f, Function):  # `function(function(f))`: `f`, with the options of
            # the inner one where these leave theirs as by default
            given = {k: v for k, v, default in (
                ("input_signature", input_signature, None), ("autograph", autograph, True),
                ("reduce_retracing", reduce_retracing, False), ("strict", strict, None))
                if v is not default}
            return Function(f.python_function, **{**f._options, **given, **jit_kwargs})
        if isinstance(f, (staticmethod, classmethod)):
            # above `@staticmethod` / `@classmethod`: the function converted, bound as
            # the decorator under it binds it
            return type(f)(wrap(f.__func__))
        owner = _keyed_owner(f)
        if owner is not None:
            # a bound method or a callable object of a plain class (`m.call =
            # autograph.function(m.call)`): its function bound to the object, whose
            # attributes key the traces as they do for a method decorated in its class
            method = f.__func__ if isinstance(f, types.MethodType) else type(f).__call__
            return _BoundFunction(wrap(method), owner)
        options = _transforms.jit_options(f) if _transforms.is_jit(f) else None
        if options is not None:  # a `jax.jit` function: its options, then the given ones
            f, jit_kwargs_ = f.__wrapped__, {**options, **jit_kwargs}
        else:
            jit_kwargs_ = jit_kwargs
        return Function(f, input_signature=input_signature, autograph=autograph,
                        reduce_retracing=reduce_retracing, strict=strict, **jit_kwargs_)

    return wrap if fn is None else wrap(fn)
