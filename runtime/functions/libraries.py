"""Library entry points that run the user's code: rebuilt around its converted form.

Flax linen's ``apply`` and ``init`` and Equinox's filtered transformations are
library code around a function of the user's: converting the library's code
would change nothing (it is never converted), and leaving the user's code
unconverted fails on its first ``if`` on an array, inside the library. So
``autograph.convert`` of such an entry point, and converted code calling
one, get the same entry point around the user's converted code:

====================================================  ===========================================
callee                                                rebuilt as
====================================================  ===========================================
``model.apply``, ``model.init``,                      the same, with ``method=`` the converted
``model.init_with_output`` (a linen module)           method (``__call__`` unless given)
a linen module's method (``Model.__call__``,          linen's method wrapper around the converted
``model.encode``), and a linen module called          function (``@nn.compact`` kept)
``eqx.filter_jit(f)``, ``filter_grad``,               the same transformation, with the same
``filter_value_and_grad``, ``filter_vmap``,           options, of the converted ``f``
``filter_checkpoint``
====================================================  ===========================================

An entry point of these libraries that cannot be rebuilt (another version
keeps its options elsewhere) is a ``ConversionError`` naming what to convert,
raised at once rather than after the library has failed on a traced value.
Nothing here imports Flax or Equinox: an entry point is recognised only once
its library has been imported by someone else.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import sys
import types
import weakref
from typing import Any, Callable

from autograph import errors

from ..core.constructs import Construct

_LINEN_ENTRIES = ("apply", "init", "init_with_output")


def rebuild(f: Any, convert: Callable, *, memo: bool = True) -> Callable | None:
    """``f`` around its user code converted by ``convert``, or None (not such an entry point).

    ``memo``: ``convert`` is always the same function, so what is rebuilt for
    one ``f`` is kept for the next call.

    Raises:
      ConversionError: ``f`` is such an entry point but cannot be rebuilt.
    """
    how = _Rebuild(convert, memo)
    if isinstance(f, types.MethodType):
        return _linen_bound(f, how)
    if isinstance(f, types.FunctionType):
        return _linen_method(f, how) if getattr(f, "method_handler_wrapped", False) else None
    linen = _linen()
    if linen is not None and isinstance(f, linen.Module):  # a submodule called
        call = type(f).__call__
        if not getattr(call, "method_handler_wrapped", False):
            return None
        method = _linen_method(call, how)
        return None if method is call else types.MethodType(method, f)
    return _equinox(f, how)


class _Rebuild:
    """How to rebuild: the converter, and whether results are kept (see ``rebuild``)."""

    __slots__ = ("convert", "memo")

    def __init__(self, convert: Callable, memo: bool):
        self.convert, self.memo = convert, memo

    def once(self, key, build: Callable[[], Any]):
        return _memo(key, build) if self.memo else build()


# -- Flax linen -------------------------------------------------------------------------


def _linen():
    return sys.modules.get("flax.linen.module")


def _linen_bound(f: types.MethodType, how: _Rebuild) -> Callable | None:
    linen = _linen()
    if linen is None or not isinstance(f.__self__, linen.Module):
        return None
    func = f.__func__
    if getattr(func, "method_handler_wrapped", False):  # `model.__call__`, `model.encode`
        method = _linen_method(func, how)
        return f if method is func else types.MethodType(method, f.__self__)
    name = getattr(func, "__name__", "")
    if name not in _LINEN_ENTRIES or func is not getattr(linen.Module, name, None):
        return None
    module, entry = f.__self__, f

    @functools.wraps(func)
    def run(*args, method=None, **kwargs):
        return entry(*args, method=_method_of(module, method, how), **kwargs)

    return run


def _method_of(module, method, how: _Rebuild):
    """The converted form of what ``apply``/``init`` would run (``method=``, or ``__call__``)."""
    if method is None:
        method = type(module).__call__
    elif isinstance(method, str):
        method = getattr(type(module), method)
    elif isinstance(method, types.MethodType):
        method = method.__func__
    if getattr(method, "method_handler_wrapped", False):
        return _linen_method(method, how)
    return how.convert(method) if isinstance(method, types.FunctionType) else method


def _linen_method(fn: Callable, how: _Rebuild) -> Callable:
    """Linen's wrapper of a module method, around the converted user function."""
    return how.once(fn, lambda: _rewrap_linen(fn, how.convert))


def _rewrap_linen(fn, convert: Callable) -> Callable:
    user = getattr(fn, "__wrapped__", None)
    linen = _linen()
    wrap = getattr(linen, "wrap_method_once", None)
    if not isinstance(user, types.FunctionType) or wrap is None:
        raise _cannot(fn.__qualname__, "linen's wrapper of this method holds no function "
                                       "autograph can reach",
                      "decorate the method with `@autograph.convert` (below `@nn.compact`)")
    converted = convert(user)
    if converted is user:
        return fn  # library code (a Flax layer), converted already, or not convertible

    def method(*args, **kwargs):
        return converted(*args, **kwargs)

    # linen reads the method's name and its `compact` mark
    functools.update_wrapper(method, user)
    return wrap(method)


def is_linen_module(value) -> bool:
    """Whether ``value`` is a Flax linen module."""
    linen = _linen()
    return linen is not None and isinstance(value, linen.Module)


def _running_module():
    """The Flax linen module whose method is running, or None."""
    context = getattr(_linen(), "_context", None)
    stack = getattr(context, "module_stack", None)
    return stack[-1] if stack else None


def _layers(module, prefix: str = "") -> dict[str, str]:
    """The submodules and variables ``module`` has made so far: path -> what it is."""
    found: dict[str, str] = {}
    for name, child in list(getattr(module._state, "children", {}).items()):
        path = f"{prefix}{name}"
        if isinstance(child, str):  # a variable, by its collection
            found[path] = f"`{child}` variable"
        else:
            found[path] = f"`nn.{type(child).__name__}`" if type(child).__module__.startswith(
                "flax.") else f"`{type(child).__name__}`"
            found.update(_layers(child, path + "."))
    return found


@contextlib.contextmanager
def layers_made_before(construct: Construct):
    """Refuses a staged block, in a linen method, that makes a layer or a parameter.

    Linen makes a layer's parameters when it is first called; inside a staged
    block (``lax.cond``, ``lax.while_loop``) they would be made of values that
    exist only in that block (``init`` fails on a leaked tracer, ``apply`` on a
    parameter it cannot find). The error names the layer.
    """
    module = _running_module()
    if module is None:
        yield
        return
    before = _layers(module)
    try:
        yield
    except Exception as e:
        made = _made(module, before)
        if made is None:
            raise
        raise _made_inside(made, construct) from e
    made = _made(module, before)
    if made is not None:
        raise _made_inside(made, construct)


def _made(module, before) -> tuple[str, str] | None:
    new = [(path, kind) for path, kind in _layers(module).items() if path not in before]
    return new[0] if new else None


def _made_inside(made: tuple[str, str], construct: Construct) -> errors.LoopStateError:
    path, kind = made
    owner, _, name = path.rpartition(".")
    if "variable" in kind:
        what = (f"`{owner}` makes its {kind} `{name}` (linen makes a layer's parameters on its "
                f"first call)" if owner else f"the module makes its {kind} `{name}`")
    else:
        what = f"`{path}` ({kind}) is created"
    return errors.LoopStateError(
        f"a Flax linen layer cannot be created or first called inside a {construct} that "
        f"stops on an array-dependent condition",
        observed=f"{what} inside the loop; once its exit depends on arrays the rest of the "
                 f"loop is staged, and linen would make parameters from values that exist "
                 f"only inside the staged loop",
        variable=path,
        fix="create the layers before the loop (in `setup`, or in a list built before it) "
            "and call each once before the loop, where linen makes its parameters; or stage "
            "the loop with linen's `nn.while_loop`")


# -- Equinox ----------------------------------------------------------------------------


def _equinox(f, how: _Rebuild) -> Callable | None:
    t = type(f)
    remake = _EQUINOX.get(t.__name__)
    if remake is None or not t.__module__.startswith("equinox."):
        return None
    eqx = sys.modules["equinox"]
    user = getattr(f, "__wrapped__", None)
    if not callable(user):
        return None
    converted = how.convert(user)
    if converted is user:
        return f
    if isinstance(converted, types.MethodType) and _is_module(eqx, converted.__self__):
        # a module called as the function (`eqx.filter_jit(model)`): still a pytree
        converted = eqx.Partial(converted.__func__, converted.__self__)
    try:
        return how.once(f, lambda: remake(eqx, f, converted))
    except (AttributeError, TypeError) as e:  # another Equinox keeps its options elsewhere
        name = getattr(user, "__qualname__", type(user).__name__)
        raise _cannot(f"eqx.{_PUBLIC[t.__name__]}({name})",
                      f"its options cannot be read ({type(e).__name__}: {e})",
                      f"convert the function first: `eqx.{_PUBLIC[t.__name__]}("
                      f"autograph.convert({name}), ...)`") from None


def _is_module(eqx, value) -> bool:
    return isinstance(value, eqx.Module)


def _rejit(eqx, f, fn):
    """``eqx.filter_jit`` of ``fn`` with ``f``'s options (its ``jax.jit`` keywords kept)."""
    new = eqx.filter_jit(fn)
    return eqx.module_update_wrapper(dataclasses.replace(
        f, _signature=new._signature, _dynamic_fun=new._dynamic_fun,
        _static_fun=new._static_fun))


# Equinox wrapper class -> how to make it again around another function. Each row
# reads private fields of Equinox 0.13; tests/test_equinox.py has one test per row.
_EQUINOX: dict[str, Callable[[Any, Any, Callable], Callable]] = {
    "_JitWrapper": _rejit,
    "_ValueAndGradWrapper": lambda eqx, f, fn: eqx.filter_value_and_grad(
        fn, has_aux=f._has_aux, **f._gradkwargs),
    "_GradWrapper": lambda eqx, f, fn: eqx.filter_grad(
        fn, has_aux=f._has_aux, **f._fun_value_and_grad._gradkwargs),
    "_VmapWrapper": lambda eqx, f, fn: eqx.filter_vmap(
        fn, in_axes=f._in_axes, out_axes=f._out_axes, axis_name=f._axis_name,
        axis_size=f._axis_size, **f._vmapkwargs),
    "_CheckpointWrapper": lambda eqx, f, fn: eqx.filter_checkpoint(
        fn, prevent_cse=f._prevent_cse, policy=f._policy),
}
_PUBLIC = {"_JitWrapper": "filter_jit", "_ValueAndGradWrapper": "filter_value_and_grad",
           "_GradWrapper": "filter_grad", "_VmapWrapper": "filter_vmap",
           "_CheckpointWrapper": "filter_checkpoint"}


# -- shared -----------------------------------------------------------------------------

# id(entry point) -> (a reference to it, rebuilt): weak where the entry point allows
# it, so an entry leaves with the object; bounded for those held strongly, and for a
# rebuilt function that itself holds its entry point
_rebuilt: dict[int, tuple[Callable[[], Any], Any]] = {}
_MEMO_BOUND = 4096


def _memo(key, build: Callable[[], Any]):
    """``build()``, made once per ``key`` object (linen's methods and Equinox's wrappers
    are made once, at class creation or by the user, and called many times)."""
    ident = id(key)
    found = _rebuilt.get(ident)
    if found is not None and found[0]() is key:
        return found[1]
    value = build()
    if len(_rebuilt) >= _MEMO_BOUND:
        _rebuilt.clear()
    _rebuilt[ident] = (_reference(key, ident), value)
    return value


def _reference(key, ident: int) -> Callable[[], Any]:
    """A weak reference to ``key`` whose entry leaves ``_rebuilt`` with it, or a strong
    one where ``key`` takes no weak references."""
    def forget(ref) -> None:
        entry = _rebuilt.get(ident)
        if entry is not None and entry[0] is ref:  # not a later object at the same id
            _rebuilt.pop(ident, None)
    try:
        return weakref.ref(key, forget)
    except TypeError:
        return lambda: key


def _cannot(what: str, observed: str, fix: str) -> errors.ConversionError:
    return errors.ConversionError(
        f"`{what}` runs library code around your function, which autograph cannot rebuild "
        f"around the converted function",
        observed=observed, fix=fix)
