"""The public conversion API: ``convert``, ``to_code`` and ``do_not_convert``."""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
import inspect
import os
import sys
import threading
import types
import warnings
import weakref
from typing import Callable, Iterator, ParamSpec, TypeVar, overload

import jax

from autograph import directive_calls, errors, loader, parsing, pipeline
from autograph.callables import is_function, unwrap
from autograph.converters import index_uses
from autograph.runtime.carried import objects as _objects
from autograph.runtime.core import run_time_errors as _run_time_errors
from autograph.runtime.functions import calls as _calls
from autograph.runtime.functions import libraries as _libraries
from autograph.runtime.functions import transforms as _transforms
from autograph.runtime.functions.index_meaning import PYTHON_PARAMS


class _CodeCache:
    """code object -> {recursive: Compiled}, by identity, dropped with the code.

    Code objects compare by value, so two equal code objects (the same source
    compiled twice) would share an entry in a ``WeakKeyDictionary``, and the
    entry would go with the first of them. Keys here are identities.

    Safe to use from several threads: an entry is read in one step, and added
    or removed under a lock.
    """

    def __init__(self):
        self._entries: dict[int, tuple] = {}
        self._lock = threading.Lock()

    def get(self, code):
        entry = self._entries.get(id(code))
        return entry[1] if entry is not None and entry[0]() is code else None

    def setdefault(self, code, value):
        with self._lock:
            current = self.get(code)
            if current is not None:
                return current
            key = id(code)
            # (the callback runs as the code object goes, before its id can be reused)
            ref = weakref.ref(code, lambda _: self._entries.pop(key, None))
            self._entries[key] = (ref, value)
            return value

    def pop(self, code, default=None):
        with self._lock:
            entry = self._entries.get(id(code))
            if entry is not None and entry[0]() is code:
                del self._entries[id(code)]
                return entry[1]
            return default

    def __contains__(self, code) -> bool:
        return self.get(code) is not None

    def __len__(self) -> int:
        return len(self._entries)


_P = ParamSpec("_P")  # the parameters of a converted function: those of the user's
_R = TypeVar("_R")

_CODE_CACHE = _CodeCache()
# code object -> the error that refused its conversion, and whether a warning said so
_REFUSED = _CodeCache()
_USER_FUNCTION: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # convert's wrappers


def _runtime():
    from autograph import runtime
    return runtime


def _plain_callable(fn) -> bool:
    """Whether ``convert`` leaves ``fn`` as it is: converted already, or not convertible."""
    return (_calls.converted_of(fn) is not None or _calls.marked_do_not_convert(fn)
            or is_function(fn) or is_function(getattr(type(fn), "__call__", None)))


def _compile(fn: types.FunctionType, recursive: bool) -> loader.Compiled:
    code = fn.__code__
    entry = _CODE_CACHE.get(code)
    if entry is not None and recursive in entry:
        return entry[recursive]
    refused = _REFUSED.get(code)
    if refused is not None:  # the syntax decides, so it is decided once
        raise errors.fresh(refused.error)  # each caller its own exception
    # Conversions of different functions run at once (each keeps its analyses'
    # state to itself); a function raced for by several threads is converted once.
    with _CONVERTING.hold(code), _collector_paused():
        entry = _CODE_CACHE.get(code)
        if entry is not None and recursive in entry:
            return entry[recursive]
        try:
            return _compile_locked(fn, code, recursive)
        except errors.ConversionError as e:
            _REFUSED.setdefault(code, _Refusal(errors.fresh(e)))  # facts, never raised
            raise


class _PerCode:
    """One lock per code object, made while some thread holds or awaits it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._held: dict[int, list] = {}  # id(code) -> [its lock, threads holding or waiting]

    @contextlib.contextmanager
    def hold(self, code) -> Iterator[None]:
        key = id(code)  # the caller keeps `code` alive, so its id stays its own
        with self._lock:
            entry = self._held.setdefault(key, [threading.RLock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._lock:
                entry[1] -= 1
                if not entry[1]:
                    del self._held[key]


_CONVERTING = _PerCode()
_COLLECTOR = threading.Lock()
# conversions running, and the collector's thresholds from before the first began
_PAUSED: list = [0, None]


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Pauses automatic garbage collection while conversions run.

    Conversion allocates many short-lived nodes and frees them all at the end:
    collecting cycles in between only walks the rest of the heap again. The
    pause sets the collector's first threshold to 0 (no automatic collection)
    and never touches ``gc.isenabled()``, which stays the user's: a
    ``gc.disable()`` or ``gc.enable()`` made meanwhile, in any thread, holds.
    Nested and concurrent conversions share one pause; the thresholds come
    back when the last one ends, unless someone else changed them meanwhile.
    """
    with _COLLECTOR:
        if not _PAUSED[0]:
            before = gc.get_threshold()
            _PAUSED[1] = before
            gc.set_threshold(0, *before[1:])
        _PAUSED[0] += 1
    try:
        yield
    finally:
        with _COLLECTOR:
            _PAUSED[0] -= 1
            before = _PAUSED[1]
            if not _PAUSED[0] and before is not None:
                _PAUSED[1] = None
                if gc.get_threshold() == (0, *before[1:]):  # not changed since
                    gc.set_threshold(*before)


def _compile_locked(fn, code, recursive: bool) -> loader.Compiled:
    if errors.is_generated(code.co_filename):
        raise TypeError(f"{fn.__qualname__} is already converted")
    parsed = parsing.parse_function(fn)
    python_params = index_uses.parameter_uses(parsed.node)
    super_args = parsing.super_args(parsed.node, code.co_qualname, code.co_freevars)
    node = pipeline.convert_tree(parsed.node, parsed.filename, recursive=recursive,
                                 super_args=super_args,
                                 class_name=parsing.enclosing_class(code.co_qualname),
                                 namespace=directive_calls.live_namespace(fn))
    source, line_map = loader.unparse(node)
    compiled = loader.compile_function(
        source, line_map, name=fn.__qualname__, user_file=parsed.filename,
        user_line=code.co_firstlineno, freevars=code.co_freevars)
    compiled.python_params = python_params
    # (its generated source and source map go with it, as the user's code object goes)
    _CODE_CACHE.setdefault(code, {})[recursive] = compiled
    return compiled


def _converted_function(fn: types.FunctionType, recursive: bool) -> types.FunctionType:
    if errors.is_generated(fn.__code__.co_filename):
        return fn  # converted already, or defined inside converted code
    compiled = _compile(fn, recursive)
    new = loader.instantiate(compiled, fn, _runtime())
    if compiled.python_params:  # see runtime/index_meaning
        setattr(new, PYTHON_PARAMS, compiled.python_params)
    if fn.__name__ == "<lambda>":
        new.__name__ = "<lambda>"
    return new


class _Refusal:
    """Why a function was not converted, and whether a warning has said so."""

    def __init__(self, error: errors.ConversionError):
        self.error = error
        self.warned = False


STRICT_ENVIRONMENT_VARIABLE = "AUTOGRAPH_STRICT"
# the strictness of the converted function now running, for the callees it converts
_STRICT: contextvars.ContextVar[bool | None] = contextvars.ContextVar("autograph_strict",
                                                                      default=None)


def _strict(strict: bool | None) -> bool:
    """Whether a function that cannot be converted is an error rather than a warning."""
    if strict is None:
        strict = _STRICT.get()
    if strict is None:
        value = os.environ.get(STRICT_ENVIRONMENT_VARIABLE, "")
        strict = value.strip().lower() not in ("", "0", "false", "no", "off")
    return strict


def _unconverted(fn: types.FunctionType, error: errors.ConversionError, strict: bool | None,
                 *, once: bool) -> types.FunctionType:
    """``fn`` itself, with a warning saying why it runs unconverted; or ``error``, when strict.

    ``once``: warn only the first time ``fn``'s code is refused (a callee, reached
    on every call of its caller); otherwise on every ``convert``.
    """
    if _strict(strict):
        raise errors.fresh(error) from None  # (not chained to the caller's own copy)
    if once and fn.__code__.co_flags & inspect.CO_GENERATOR:
        # a generator that converted code calls runs a step at a time, as its consumer
        # asks: as written, as under plain `jax.jit` (a `@contextlib.contextmanager`, a
        # helper that yields items), with nothing to say unless it meets a traced value
        # (then JAX's error is noted with it, see `calls.note_unconverted_callee`);
        # `convert(gen)` itself still says it converts nothing
        return fn
    refusal = _REFUSED.get(fn.__code__)
    if once and refusal is not None:
        if refusal.warned:
            return fn
        refusal.warned = True
    if isinstance(error, errors.SourceUnavailableError) or error.location is None:
        reason = error.rule
    else:
        reason = f"{error.location.short}: {error.rule}"
    fix = f" (fix: {error.fix})" if error.fix else ""
    # at the user's line: the call of `convert`, or the converted line calling `fn`
    errors.warn(f"autograph: `{fn.__qualname__}` runs unconverted: {reason}{fix}; with "
                f"`strict=True` or {STRICT_ENVIRONMENT_VARIABLE}=1 this is an error instead")
    return fn


_WARNED_LOST: "weakref.WeakSet" = weakref.WeakSet()  # functions warned about lost updates


def _warn_lost_updates(fn: types.FunctionType) -> None:
    """Warns, once per function, that the NNX variables it changed were copies."""
    if fn in _WARNED_LOST:
        return
    _WARNED_LOST.add(fn)
    warnings.warn(
        f"autograph: `{fn.__qualname__}` changes Flax NNX variables of its arguments under "
        f"a plain JAX transformation such as `jax.jit`, which hands NNX objects in as "
        f"copies: the changes are lost. Compile it with `nnx.jit(autograph.convert(f))` or "
        f"`autograph.function(f)`, which write them back into your objects",
        stacklevel=_outside_libraries(3))


def _outside_libraries(level: int) -> int:
    """The ``stacklevel`` of the first caller, from ``level`` up, outside JAX and autograph."""
    frame: types.FrameType | None = sys._getframe(level)
    while frame is not None and (frame.f_globals.get("__name__", "").split(".")[0] in (
            "jax", "jaxlib", "autograph", "functools") or errors.is_generated(
            frame.f_code.co_filename)):
        frame, level = frame.f_back, level + 1
    return level


def _check_outputs(result, fn):
    from autograph.runtime.core.values import Undefined, raise_undefined
    for leaf in jax.tree_util.tree_leaves(result, is_leaf=lambda x: isinstance(x, Undefined)):
        if isinstance(leaf, Undefined):
            raise_undefined(leaf)
    return result


@overload
def convert(fn: Callable[_P, _R], *, recursive: bool = True,
            strict: bool | None = None) -> Callable[_P, _R]: ...
@overload
def convert(fn: None = None, *, recursive: bool = True,
            strict: bool | None = None) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]: ...
def convert(fn: Callable | None = None, *, recursive: bool = True,
            strict: bool | None = None) -> Callable:
    """Converts the Python control flow of ``fn`` into JAX-compatible code.

    The result has the same signature as ``fn``. It does not compile anything
    itself: called with Python or NumPy values it computes exactly what ``fn``
    computes; under ``jax.jit``, ``jax.grad`` or ``jax.vmap`` every ``if``,
    ``while`` and ``for`` whose condition is traced is staged with ``lax``.

    Args:
      fn: a function, method, ``functools.partial`` or callable object. When
        omitted, ``convert`` returns a decorator.
      recursive: also convert the user functions ``fn`` calls (at the time they
        are called). JAX, NumPy and the standard library are never converted.
      strict: what to do with a function that cannot be converted (syntax that
        cannot be converted faithfully, or no source): by default it runs
        unconverted, as ``jax.jit`` would run it, with one warning naming the
        construct and its ``file:line``; with ``strict=True`` that is a
        ``ConversionError`` instead, for ``fn`` and for the functions it calls.
        ``None`` (the default) reads the environment variable
        ``AUTOGRAPH_STRICT`` (``1`` means strict).

    Returns:
      The converted callable, or ``fn`` itself where it cannot be converted.

    Raises:
      ConversionError: ``strict`` and ``fn`` cannot be converted.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> import autograph
      >>> @autograph.convert
      ... def relu_or_square(x):
      ...     if x > 0:
      ...         y = x * x
      ...     else:
      ...         y = 0.0
      ...     return y
      >>> jax.jit(relu_or_square)(3.0)
      Array(9., dtype=float32, weak_type=True)
      >>> relu_or_square(-2.0)
      0.0
    """
    if fn is None:
        return functools.partial(convert, recursive=recursive, strict=strict)
    if _plain_callable(fn):
        return fn
    # a library's entry point around the user's code (linen's `apply`, Equinox's
    # `filter_jit(f)`): the same entry point around the converted code
    rebuilt = _libraries.rebuild(
        fn, functools.partial(convert, recursive=recursive, strict=strict), memo=False)
    if rebuilt is not None:
        return rebuilt
    if _transforms.is_custom_derivative(fn):
        return _transforms.rebuild_custom_derivative(fn, _calls.resolve)
    if isinstance(fn, types.BuiltinFunctionType):
        return fn  # no Python source: nothing to convert
    try:
        plain, rewrap = unwrap(fn)
    except TypeError:
        if not callable(fn):
            raise
        warnings.warn(f"autograph: a `{type(fn).__name__}` object has no Python function to "
                      f"convert and runs unconverted; convert the function or method it "
                      f"calls instead", stacklevel=2)
        return fn
    library = _calls.library_module(plain)
    if library not in (None, "autograph"):  # (autograph's own doctests run as autograph)
        # the library the function comes from (`functools.wraps` keeps its module)
        shown = (getattr(plain, "__module__", None) or library).split(".")[0]
        shown = shown if shown in _calls.SKIP_PACKAGES else library
        inner = _transformed_user_function(plain)
        if inner is not None:
            warnings.warn(_transformed_message(inner, library) + "; it runs unconverted",
                          stacklevel=2)
            return fn
        warnings.warn(
            f"autograph: `{plain.__qualname__}` is {shown}'s code and runs unconverted; "
            f"convert your own code instead: decorate the function or method it calls (for "
            f"a module, its `__call__`) with `@autograph.convert`, or pass "
            f"`autograph.convert(f)` to a wrapper such as `{shown}.<transform>(f)`",
            stacklevel=2)
        return fn
    if _transforms.is_jit(fn) and _transforms.jit_options(fn) is None:
        warnings.warn(f"autograph: the `jax.jit` options of `{plain.__qualname__}` cannot be "
                      f"read; it runs unconverted", stacklevel=2)
        return fn
    try:
        converted = _converted_function(plain, recursive)
    except errors.ConversionError as e:  # never worse than `jax.jit`, which runs it as it is
        _unconverted(plain, e, strict, once=False)
        return fn

    @functools.wraps(plain)
    def wrapper(*args, **kwargs):
        # the callees converted while it runs follow its `strict`
        token = None if strict is None else _STRICT.set(strict)
        watch = _objects.watch_copies(args, kwargs, sys._getframe(1).f_globals.get(
            "__name__", ""))
        try:
            result = converted(*args, **kwargs)
            if watch is not None and watch.changed():
                _warn_lost_updates(plain)
        except Exception as e:
            _run_time_errors.reraise(e)  # the user's own exception, raised as the program ran
            _calls.note_unconverted_callee(e)
            _calls.note_static_size(e)
            errors.clean_generated_names(e)
            errors.annotate_traceback(e)
            errors.filter_traceback(e)
            raise
        finally:
            if token is not None:
                _STRICT.reset(token)
        return _check_outputs(result, plain)

    _calls.register_converted(wrapper, converted)
    _USER_FUNCTION[wrapper] = weakref.ref(plain)  # (held by `wrapper`, see register_converted)
    return rewrap(wrapper)


def _transformed_user_function(plain):
    """The function of the program's own that a library's wrapper (``jax.grad(f)``,
    ``jax.vmap(f)``: JAX's code, with ``f``'s name) wraps, or None."""
    inner = getattr(plain, "__wrapped__", None)
    while inner is not None and _calls.library_module(inner) not in (None, "autograph"):
        inner = getattr(inner, "__wrapped__", None)
    return inner if isinstance(inner, types.FunctionType) else None


def _transformed_message(inner, library: str) -> str:
    name = inner.__qualname__
    return (f"autograph: this is {library.split('.')[0]}'s transformation of `{name}` "
            f"(`jax.grad({name})`, `jax.vmap({name})`, ...), which calls `{name}` "
            f"unconverted; convert `{name}` and transform that: "
            f"`jax.vmap(autograph.convert({name}))`, or `autograph.to_code({name})` to see it")


def to_code(fn: Callable, *, recursive: bool = True) -> str:
    """Returns the converted source of ``fn``: readable, runnable Python.

    Generated code refers to the runtime as ``ag__``. The same function always
    converts to the same text.

    Examples:
      >>> import autograph
      >>> def sign(x):
      ...     if x > 0:
      ...         s = 1.0
      ...     else:
      ...         s = -1.0
      ...     return s
      >>> print(autograph.to_code(sign))
      def sign(x):
          def if_true():
              s = 1.0
              return (s,)
          def if_false():
              s = -1.0
              return (s,)
          (s,) = ag__.if_stmt(x > 0, if_true, if_false, (), names=('s',))
          return s
      <BLANKLINE>
    """
    if is_function(fn):
        fn = fn.python_function
    plain, _ = unwrap(fn)
    inner = _transformed_user_function(plain)
    if inner is not None and _calls.library_module(plain) not in (None, "autograph"):
        raise TypeError(_transformed_message(inner, _calls.library_module(plain) or "a library"))
    user = _USER_FUNCTION.get(plain)
    plain = plain if user is None else user()
    return _compile(plain, recursive).source


def do_not_convert(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Marks ``fn`` so that converted code calls it as it is.

    The mark belongs to ``fn`` itself: a wrapper made around ``fn`` later (by
    ``functools.wraps`` or a JAX transformation) is decided on its own.
    """
    try:
        _calls.register_do_not_convert(fn)
    except TypeError:
        raise TypeError(f"do_not_convert needs an object that can be weakly referenced; "
                        f"got a `{type(fn).__name__}`") from None
    return fn


def convert_for_call(fn: types.FunctionType) -> Callable:
    """The converter ``converted_call`` uses.

    A function that cannot be converted is called as it is, with one warning
    (the first time); under a strict caller, or with ``AUTOGRAPH_STRICT=1``,
    its ``ConversionError`` is raised instead. Errors of the program itself,
    raised once the converted function runs, are never caught here.
    """
    try:
        return _converted_function(fn, True)
    except errors.ConversionError as e:
        return _unconverted(fn, e, None, once=True)
