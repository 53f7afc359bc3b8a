"""Python's built-in functions on traced values, with Python's meaning.

Converted code calls these in place of the built-ins (``converted_call``
finds them by identity, so a name the user rebinds keeps its own meaning).
Each takes one type check on plain Python values and then is the built-in
itself, with the same result and the same exceptions. With a traced
argument it gives Python's answer as an array, where that answer has a
static shape:

==================  ==================  =============================================
built-in            operator            with a traced argument
==================  ==================  =============================================
``float(x)``        :func:`float_`      a cast to float32 (float64 with 64-bit types
                                        on), weakly typed like a Python float
``int(x)``          :func:`int_`        truncation toward zero, to int32 (int64),
                                        weakly typed; NaN, infinities and values
                                        past the dtype raise as the program runs
``bool(x)``         :func:`bool_`       ``x != 0``, a traced bool
``complex(x, y)``   :func:`complex_`    a cast to complex64 (complex128)
``min``, ``max``    :func:`min_`,       the item Python picks (the first best, by
                    :func:`max_`        ``<``/``>``), chosen with a traced index
``any``, ``all``    :func:`any_`,       the traced `or`/`and` of the items' truth;
                    :func:`all_`        Python values still stop the iteration
``sorted``          :func:`sorted_`     a list, ordered by a stable ``argsort``
``pow``             :func:`pow_`        a negative Python int exponent of a traced
                                        integer gives a float, as Python's ``int``
``x in c``          :func:`in_`         a traced bool: an array's own ``in``, ``==``
                                        with each item of a list or tuple, or the
                                        arithmetic of a ``range``
``isinstance``,     :func:`isinstance_`, for an array that is eagerly a Python number
``type``            :func:`type_`       (one a staged `if` or loop carried), the answer
                                        for that number: ``isinstance(k, int)``
==================  ==================  =============================================

``abs``, ``round``, ``divmod``, ``sum``, ``len`` and two-argument ``pow``
call the array's own operators, which JAX defines with Python's meaning
(``round`` halves to even and gives int32 without ``ndigits``; ``divmod``
floors), so they need no operator here.

Where Python's answer has no static shape, or Python itself raises, so does
the operator, with the user's line: ``float`` of an array of more than one
element, ``min`` of a 2-D array (Python compares rows, whose truth is
ambiguous), three-argument ``pow`` of traced integers.
"""

from __future__ import annotations

import builtins
import dis
import functools
import operator
from typing import Any, Callable

import jax
import jax.numpy as jnp
import numpy as np

from autograph import errors

from ..carried import state as st
from ..core import host_callbacks, intervals, run_time_errors
from ..core.conditions import condition
from ..core.values import Tracer, branch_guard, describe, is_traced, taken_when
from ..functions.calls import handed

__all__ = ["float_", "int_", "bool_", "complex_", "min_", "max_", "any_", "all_", "sorted_",
           "pow_", "map_", "filter_", "in_", "isinstance_", "type_"]

# the operators whose built-in raises on a traced value (and calls nothing of the
# user's): inside a `try` whose handler catches that, the built-in runs instead
RAISING = frozenset({"float_", "int_", "bool_", "complex_", "min_", "max_", "any_", "all_",
                     "pow_"})

_MISSING = object()


# ---------------------------------------------------------------------------
# Casts


def _canonical(kind: type) -> np.dtype:
    return np.dtype(jax.dtypes.canonicalize_dtype(kind))


def _scalar_argument(x, name: str) -> None:
    """Refuses what Python refuses to convert: an array with dimensions, a key."""
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended):
        raise errors.BuiltinError(
            f"`{name}` of a typed PRNG key has no Python meaning",
            observed=f"the argument is a key array ({x.dtype})",
            fix="use `jax.random.key_data(key)` for its bits")
    if np.ndim(x) != 0:
        raise errors.BuiltinError(
            f"`{name}` converts only a scalar (0-d) array, as for an array outside `jax.jit`",
            observed=f"the argument is {describe(x)}",
            fix=f"pick one element (`x[0]`) or reduce the array (`x.sum()`) first; "
                f"`x.astype({name})` casts every element")


def _refuse_complex(x, name: str) -> None:
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise errors.BuiltinError(
            f"`{name}` of a complex number is a TypeError in Python",
            observed=f"the argument is {describe(x)}",
            fix="take `x.real` or `abs(x)` first")


def float_(*args: Any, **kwargs: Any) -> Any:
    """``float(x)``; a weakly typed cast when ``x`` is traced.

    The semantics are given by this Python implementation::

        return float(x)

    A traced scalar becomes the canonical float dtype (float32, or float64
    with 64-bit types on), weakly typed as a Python float is, so it
    promotes as one: ``float(n) * h`` with ``h`` bfloat16 stays bfloat16.

    Args:
      *args: ``float``'s arguments.
      **kwargs: the same.

    Returns:
      A Python float, or a traced float scalar.

    Raises:
      BuiltinError: a traced array with dimensions, or a complex one (Python's
        ``TypeError``).
    """
    if len(args) == 1 and not kwargs and isinstance(args[0], Tracer):
        x = args[0]
        _scalar_argument(x, "float")
        _refuse_complex(x, "float")
        return st.convert(x, _canonical(float), True)
    return builtins.float(*args, **kwargs)


def _python_kind(value) -> type | None:
    """The type of the Python number a traced ``value`` is eagerly (a staged `if` or
    loop made a tracer of it, see ``intervals.note_python_number``), or None."""
    if not isinstance(value, Tracer) or intervals.python_number(value) is None:
        return None
    dtype = value.dtype
    if dtype == jnp.bool_:
        return builtins.bool
    if jnp.issubdtype(dtype, jnp.integer):
        return builtins.int
    if jnp.issubdtype(dtype, jnp.complexfloating):
        return builtins.complex
    return builtins.float


def isinstance_(obj: Any, classinfo: Any) -> bool:
    """``isinstance(obj, classinfo)``; Python's answer for an array that is eagerly a
    Python number.

    The semantics are given by this Python implementation::

        return isinstance(obj, classinfo)

    A Python number that a staged `if` or loop carried is a traced array after it
    (``k = 1``, then ``k = 2`` in a branch on an array): ``isinstance(k, int)`` is
    True, as eagerly, and ``isinstance(k, jax.Array)`` False.
    """
    kind = _python_kind(obj)
    if kind is None:
        return builtins.isinstance(obj, classinfo)
    return builtins.isinstance(kind(), classinfo)


def type_(*args: Any, **kwargs: Any) -> Any:
    """``type(obj)``; the Python number type of an array that is eagerly a Python number.

    The semantics are given by this Python implementation::

        return type(*args, **kwargs)

    As for :func:`isinstance_`: ``type(k) is int`` where ``k`` is eagerly an int.
    """
    if len(args) == 1 and not kwargs:
        kind = _python_kind(args[0])
        if kind is not None:
            return kind
    return builtins.type(*args, **kwargs)


def int_(*args: Any, **kwargs: Any) -> Any:
    """``int(x)``; a weakly typed cast, truncating toward zero, when ``x`` is traced.

    The semantics are given by this Python implementation::

        return int(x)

    A traced scalar becomes the canonical integer dtype (int32, or int64
    with 64-bit types on), weakly typed as a Python int is. Where Python's
    int would differ (a float NaN or infinity, which Python refuses, or a
    number past the dtype's range, which Python holds exactly), the program
    raises as it runs: Python's ``ValueError``/``OverflowError`` for NaN and
    infinities, ``OverflowError`` naming the dtype for the rest.

    Args:
      *args: ``int``'s arguments.
      **kwargs: the same.

    Returns:
      A Python int, or a traced integer scalar.

    Raises:
      BuiltinError: a traced array with dimensions, or a complex one.
    """
    if len(args) == 1 and not kwargs and isinstance(args[0], Tracer):
        x = args[0]
        _scalar_argument(x, "int")
        _refuse_complex(x, "int")
        target = _canonical(int)
        if not _fits(x.dtype, target):
            _check_at_run_time(x, target)
        return st.convert(x, target, True)
    return builtins.int(*args, **kwargs)


def _fits(source, target: np.dtype) -> bool:
    """Whether every value of ``source`` truncates to a value of ``target``."""
    source = np.dtype(source)
    if source == np.bool_:
        return True
    if source.kind not in "iu":
        return False
    s, t = np.iinfo(source), np.iinfo(target)
    return t.min <= s.min and s.max <= t.max


def _int_fails(x, taken, *, target: np.dtype, where: str) -> None:
    """Raises, from the running program, Python's error for ``int`` of ``x``."""
    x, taken = np.asarray(x), np.asarray(taken, dtype=bool)
    if x.dtype.kind == "f":
        if np.any(taken & np.isnan(x)):
            run_time_errors.fail(ValueError("cannot convert float NaN to integer"))
        if np.any(taken & np.isinf(x)):
            run_time_errors.fail(OverflowError("cannot convert float infinity to integer"))
        x = np.trunc(x)
    info = np.iinfo(target)
    outside = taken & ((x < info.min) | (x > info.max))
    if np.any(outside):
        value = np.broadcast_to(x, outside.shape)[outside][0]
        run_time_errors.fail(OverflowError(
            f"{where}int() of {value!r} does not fit {target.name}, the dtype of integers "
            f"computed from arrays (Python's int would hold it exactly)"))


def _check_at_run_time(x, target: np.dtype) -> None:
    location = errors.current_location()
    where = f"{location.short}: " if location is not None else ""
    taken = branch_guard()
    info = np.iinfo(target)
    if jnp.issubdtype(jnp.result_type(x), jnp.floating):
        t = jnp.trunc(x)
        bad = jnp.isnan(x) | jnp.isinf(x) | (t < info.min) | (t > info.max)
    elif jnp.issubdtype(jnp.result_type(x), jnp.unsignedinteger):
        bad = x > jnp.asarray(info.max).astype(jnp.result_type(x))  # no negative to wrap
    else:
        bad = (x < info.min) | (x > info.max)
    failed = jnp.any(jnp.logical_and(taken, bad))
    # through the callbacks `assert` uses: on many devices every shard stops together
    host_callbacks.check(functools.partial(_int_check, target=target, where=where), failed,
                         x, taken, in_order=False)


def _int_check(failed, x, taken, *, target: np.dtype, where: str) -> None:
    """``_int_fails`` where the verdict over every shard (``failed``) holds; a shard
    whose own values all fit reports the failure found elsewhere."""
    if not np.any(failed):
        return
    _int_fails(x, taken, target=target, where=where)
    run_time_errors.fail(OverflowError(
        f"{where}int() of a value that does not fit {np.dtype(target).name} (on another "
        f"device's shard)"))


def bool_(*args: Any, **kwargs: Any) -> Any:
    """``bool(x)``; ``x != 0`` when ``x`` is traced.

    The semantics are given by this Python implementation::

        return bool(x)

    Args:
      *args: ``bool``'s arguments.
      **kwargs: the same.

    Returns:
      A Python bool, or a traced boolean scalar.

    Raises:
      ConditionError: a traced array of more than one element, whose truth is
        ambiguous (Python's ``ValueError``).
    """
    if len(args) == 1 and not kwargs and isinstance(args[0], Tracer):
        return _truth(args[0], "`bool`")
    return builtins.bool(*args, **kwargs)


def complex_(*args: Any, **kwargs: Any) -> Any:
    """``complex(real, imag)``; a weakly typed complex scalar when an argument is traced.

    The semantics are given by this Python implementation::

        return complex(real, imag)

    As in Python, a complex ``imag`` is multiplied by ``1j``: the result's
    real part is ``real.real - imag.imag`` and its imaginary part ``real.imag
    + imag.real``, each term only where its operand is complex (so signed
    zeros and NaN come out as Python's).

    Args:
      *args: ``complex``'s arguments.
      **kwargs: the same.

    Returns:
      A Python complex, or a traced complex scalar.

    Raises:
      BuiltinError: a traced array with dimensions.
    """
    if not any(isinstance(a, Tracer) for a in (*args, *kwargs.values())) or len(args) > 2:
        return builtins.complex(*args, **kwargs)
    bound = dict(zip(("real", "imag"), args))
    for name, value in kwargs.items():
        if name not in ("real", "imag") or name in bound:
            return builtins.complex(*args, **kwargs)  # Python's TypeError
        bound[name] = value
    real, imag = bound.get("real", 0), bound.get("imag", _MISSING)
    if isinstance(real, str) or isinstance(imag, str):
        return builtins.complex(*args, **kwargs)  # Python's TypeError
    dtype = _canonical(complex)
    parts: list[Any] = []
    for value in (real, imag):
        if value is _MISSING:
            parts.append(None)
            continue
        value = st.as_array(value)
        _scalar_argument(value, "complex")
        parts.append(value)
    re, im = parts
    real_part, imag_part = jnp.real(re), (jnp.imag(re) if _is_complex(re) else None)
    if im is not None:
        imag_part = jnp.real(im) if imag_part is None else imag_part + jnp.real(im)
        if _is_complex(im):
            real_part = real_part - jnp.imag(im)
    part = np.dtype(jnp.finfo(dtype).dtype)
    real_part = st.convert(real_part, part, False)
    imag_part = (jnp.zeros((), part) if imag_part is None
                 else st.convert(imag_part, part, False))
    return st.convert(jax.lax.complex(real_part, imag_part), dtype, True)


def _is_complex(x) -> bool:
    return jnp.issubdtype(x.dtype, jnp.complexfloating)


# ---------------------------------------------------------------------------
# Truth and comparisons


def _truth(x, what: str):
    """Python's truth of ``x``: a Python bool, or a traced boolean scalar."""
    if not isinstance(x, Tracer):
        return builtins.bool(x)
    if jax.dtypes.issubdtype(x.dtype, jax.dtypes.extended) or int(np.prod(np.shape(x))) != 1:
        raise errors.ConditionError(
            f"{what} needs the truth of a single value",
            observed=f"the value is {describe(x)}, whose truth is ambiguous (Python's "
                     f"`ValueError` for an array of more than one element)",
            fix="reduce it to one boolean with `.any()` or `.all()`")
    c = condition(x, what)
    return c if is_traced(c) else builtins.bool(c)


def _compare(op: Callable, a, b, name: str):
    """``op(a, b)`` for ``name`` (``min`` ...): a Python bool or a traced boolean scalar."""
    result = op(a, b)
    if not isinstance(result, Tracer):
        return builtins.bool(result)
    if int(np.prod(np.shape(result))) != 1:
        _refuse_ambiguous(name, f"comparing {describe(a)} with {describe(b)}")
    return _truth(result, f"`{name}`")


def _refuse_ambiguous(name: str, what: str):
    """Python's comparison of arrays of more than one element: its truth is ambiguous."""
    if name == "sorted":
        fix = "compare single values: `jnp.sort(a)` sorts the elements of an array"
    else:
        fix = (f"compare single values: `jnp.{name}(a)` is the "
               f"{'least' if name == 'min' else 'greatest'} element of an array, "
               f"`jnp.{name}imum(a, b)` the elementwise {name}imum")
    raise errors.ConditionError(
        f"`{name}` compares its items, and each comparison must be a single value",
        observed=f"{what} gives an array of more than one element, whose truth is "
                 f"ambiguous (Python's `ValueError`)",
        fix=fix)


def _or(a, b):
    if not is_traced(a):
        return True if a else b
    if not is_traced(b):
        return True if b else a
    return jax.lax.bitwise_or(a, b)


def _and(a, b):
    if not is_traced(a):
        return b if a else False
    if not is_traced(b):
        return a if b else False
    return jax.lax.bitwise_and(a, b)


# ---------------------------------------------------------------------------
# Choosing among items with a traced index


def _stacked(items: list, name: str):
    """``items`` (pytrees of one structure) as a treedef and one column per leaf: the
    leaves stacked along a new axis (their dtypes joined as in a traced `if`), or the
    Python value every item has there."""
    flat = [st.flatten(item) for item in items]
    treedef = flat[0][0]
    for item, (other, _) in zip(items, flat):
        if other != treedef:
            raise errors.BuiltinError(
                f"`{name}` with traced comparisons returns one of its items, which must then "
                f"have one structure",
                observed=f"the items are {st.kind_of(items[0])} and {st.kind_of(item)}",
                fix="make every item the same kind of value (e.g. all arrays, or all tuples "
                    "of the same length)")
    columns: list[tuple[Any, Any]] = []
    for j in range(len(flat[0][1])):
        leaves = [leaves[j] for _, leaves in flat]
        if all(_same(leaves[0], leaf) for leaf in leaves[1:]):
            columns.append((None, leaves[0]))
            continue
        if not all(st.is_carryable(leaf) for leaf in leaves):
            raise errors.BuiltinError(
                f"`{name}` with traced comparisons returns one of its items, whose Python "
                f"values must then agree",
                observed=f"the items hold {describe(leaves[0])} and "
                         f"{describe(next(x for x in leaves if not _same(leaves[0], x)))}",
                fix="pass arrays or numbers, or compute the result from the index Python's "
                    "answer would have")
        shapes = {np.shape(leaf) for leaf in leaves}
        if len(shapes) > 1:
            raise errors.BuiltinError(
                f"`{name}` with traced comparisons returns one of its items, which must then "
                f"have one shape",
                observed=f"the items have shapes {sorted(shapes)}",
                fix="broadcast the items to one shape first")
        avals = [st.aval_of(leaf) for leaf in leaves]
        dtype, weak = avals[0].dtype, avals[0].weak
        for aval in avals[1:]:
            dtype, weak = st.promote(st.Aval((), dtype, weak), aval)
        stacked = jnp.stack([st.convert(st.as_array(leaf), dtype, weak) for leaf in leaves])
        columns.append(((dtype, weak), stacked))
    return treedef, columns


def _same(a, b) -> bool:
    """Whether two leaves are one value that needs no choosing (a tracer only itself)."""
    if isinstance(a, Tracer) or isinstance(b, Tracer):
        return a is b
    return st.same_static(a, b)


def _take(stacked, index):
    """The item at ``index`` (a traced integer scalar, or a vector of them: a list)."""
    treedef, columns = stacked

    def leaf(column, k):
        kind, value = column
        return value if kind is None else st.convert(value[k], kind[0], kind[1])

    if np.ndim(index) == 0:
        return treedef.unflatten([leaf(c, index) for c in columns])
    gathered = [(kind, value if kind is None else value[index]) for kind, value in columns]
    return [treedef.unflatten([leaf(c, k) for c in gathered]) for k in range(len(index))]


def _pick(index, items: list, name: str):
    """``items[index]``: the item itself for a Python ``index``."""
    if not is_traced(index):
        return items[index]
    return _take(_stacked(items, name), index)


# ---------------------------------------------------------------------------
# min and max


def min_(*args: Any, **kwargs: Any) -> Any:
    """``min(...)``: Python's pick, with a traced index where comparisons are traced.

    The semantics are given by this Python implementation::

        items = list(args[0]) if len(args) == 1 else list(args)
        if not items:
            return default  # or ValueError without one
        keys = items if key is None else [key(v) for v in items]
        best = 0
        for k in range(1, len(items)):
            if keys[k] < keys[best]:
                best = k
        return items[best]

    so ties go to the first item and a NaN is passed over unless it comes
    first. Where a comparison is traced, ``best`` is a traced index and the
    result is the item there: the items' leaves are stacked (their dtypes
    joined as the branches of a traced `if`), so gradients reach only the
    item picked, as in Python. ``default`` is used only for an empty
    iterable, which is known while tracing.

    A traced array ``a`` is iterated along its first axis, as Python does:
    for a 1-D array ``min(a)`` is its least element (``a.min()``, with
    Python's NaN rule and ``a[argmin]``'s gradient). Its rows must hold one
    element each, since Python compares them.

    Args:
      *args: one iterable, or two or more values.
      **kwargs: ``key`` and ``default``, as for ``min``.

    Returns:
      The least item.

    Raises:
      ConditionError: a comparison of arrays of more than one element (rows
        of a 2-D array, say), whose truth is ambiguous.
      BuiltinError: traced comparisons pick among items of different
        structures or shapes.
    """
    return _extreme(builtins.min, operator.lt, args, kwargs)


def max_(*args: Any, **kwargs: Any) -> Any:
    """``max(...)``: Python's pick, with a traced index where comparisons are traced.

    The semantics are given by this Python implementation::

        items = list(args[0]) if len(args) == 1 else list(args)
        if not items:
            return default  # or ValueError without one
        keys = items if key is None else [key(v) for v in items]
        best = 0
        for k in range(1, len(items)):
            if keys[k] > keys[best]:
                best = k
        return items[best]

    with traced comparisons as for :func:`min_`.

    Args:
      *args: one iterable, or two or more values.
      **kwargs: ``key`` and ``default``, as for ``max``.

    Returns:
      The greatest item.

    Raises:
      ConditionError: a comparison of arrays of more than one element.
      BuiltinError: traced comparisons pick among items of different
        structures or shapes.
    """
    return _extreme(builtins.max, operator.gt, args, kwargs)


def _extreme(builtin: Callable, better: Callable, args: tuple, kwargs: dict):
    name = builtin.__name__
    if not args or set(kwargs) - {"key", "default"}:
        return builtin(*args, **kwargs)
    key = kwargs.get("key")
    if key is not None:  # a user function converted (`calls.handing_converted`)
        kwargs = dict(kwargs, key=handed(key))
        key = kwargs["key"]
    if len(args) == 1:
        iterable = args[0]
        if isinstance(iterable, Tracer):
            if key is None and np.ndim(iterable) >= 1 and iterable.shape[0] > 0:
                return _array_extreme(iterable, better, name)
            if np.ndim(iterable) == 0 or iterable.shape[0] == 0:
                return builtin(*args, **kwargs)  # Python's TypeError, or the default
        items = iterable if type(iterable) in (list, tuple) else list(iterable)
    elif "default" in kwargs:
        return builtin(*args, **kwargs)  # Python's TypeError
    else:
        items = args
    if key is None:
        if not any(isinstance(v, Tracer) for v in items):
            return builtin(items, **kwargs)
        keys = items
    else:
        keys = [key(v) for v in items]
        if not any(isinstance(k, Tracer) for k in keys):
            # the keys decide alone: the built-in compares them, calling `key` once each
            if not items:
                return builtin(items, **kwargs)
            return items[builtin(range(len(items)), key=keys.__getitem__)]
    if not items:
        return builtin(items, **kwargs)
    return _pick(_best(keys, better, name), list(items), name)


def _best(keys, better: Callable, name: str):
    """The index of the first best key, as Python's loop finds it (traced where a
    comparison is)."""
    best: Any = 0
    best_key = keys[0]
    stacked = None
    for k in range(1, len(keys)):
        c = _compare(better, keys[k], best_key, name)
        if not is_traced(c):
            if c:
                best, best_key = k, keys[k]
            continue
        if stacked is None:
            stacked = _stacked(list(keys), name)
        best = jnp.where(c, k, best)
        best_key = _take(stacked, best)
    return best


def _array_extreme(a, better: Callable, name: str):
    """``min(a)``/``max(a)`` of a traced array: over its first axis."""
    n = a.shape[0]
    if n == 1:
        return a[0]  # Python compares nothing
    if int(np.prod(a.shape[1:])) != 1 or jnp.issubdtype(a.dtype, jnp.complexfloating):
        return _extreme({"min": builtins.min, "max": builtins.max}[name], better, (list(a),), {})
    flat = jnp.reshape(a, (n,))
    if jnp.issubdtype(flat.dtype, jnp.floating):
        # Python passes over a NaN (no comparison with it holds) unless it comes first
        fill = jnp.inf if name == "min" else -jnp.inf
        index = (jnp.argmin if name == "min" else jnp.argmax)(
            jnp.where(jnp.isnan(flat), fill, flat))
        index = jnp.where(jnp.isnan(flat[0]), 0, index)
    else:
        index = (jnp.argmin if name == "min" else jnp.argmax)(flat)
    return a[index]


# ---------------------------------------------------------------------------
# any and all


def any_(iterable: Any, /) -> Any:
    """``any(iterable)``; the traced `or` of the items' truth where one is traced.

    The semantics are given by this Python implementation::

        for item in iterable:
            if item:
                return True
        return False

    An item that is a Python value decides as in Python, and a true one
    stops the iteration (a generator is not run further). Items drawn after
    a traced one are evaluated where it is false, so a check inside a
    generator fails only there. A traced array is iterated along its first
    axis: for a 1-D array ``any(a)`` is ``jnp.any(a)``.

    Args:
      iterable: the items.

    Returns:
      A Python bool, or a traced boolean scalar.

    Raises:
      ConditionError: an item that is an array of more than one element.
    """
    return _any_all(iterable, True)


def all_(iterable: Any, /) -> Any:
    """``all(iterable)``; the traced `and` of the items' truth where one is traced.

    The semantics are given by this Python implementation::

        for item in iterable:
            if not item:
                return False
        return True

    with traced items as for :func:`any_`.

    Args:
      iterable: the items.

    Returns:
      A Python bool, or a traced boolean scalar.

    Raises:
      ConditionError: an item that is an array of more than one element.
    """
    return _any_all(iterable, False)


_END = object()


def _any_all(iterable, stop_at: bool):
    name = "`any`" if stop_at else "`all`"
    if isinstance(iterable, Tracer) and np.ndim(iterable) >= 1:
        if iterable.shape[0] == 0:
            return not stop_at
        if int(np.prod(iterable.shape[1:])) == 1:
            return (jnp.any if stop_at else jnp.all)(iterable)
    it = iter(iterable)
    so_far: Any = not stop_at  # the result of the items seen, where it is still open
    checked = False  # whether a generator's `:=` bindings were looked at
    while True:
        if is_traced(so_far):  # the next item is drawn only where the result is open
            if not checked:
                _refuse_binding_generator(iterable, name)
                checked = True
            with taken_when(jnp.logical_not(so_far) if stop_at else so_far):
                item = next(it, _END)
        else:
            item = next(it, _END)
        if item is _END:
            return so_far
        truth = _truth(item, name)
        if not is_traced(truth):
            if truth == stop_at:
                return stop_at
            continue
        so_far = _or(so_far, truth) if stop_at else _and(so_far, truth)


def _refuse_binding_generator(iterable, name: str) -> None:
    """A generator that binds a name of the function around it (``(m := v) > 2 for v in
    xs``) leaves there the item Python stopped at: where that is known only when the
    program runs, drawing the items after it would bind the name to the last one."""
    code = getattr(iterable, "gi_code", None)
    if code is None:
        return
    bound = sorted({i.argval for i in dis.get_instructions(code) if i.opname == "STORE_DEREF"
                    and i.argval in code.co_freevars})
    if bound:
        raise errors.ConditionError(
            f"a generator given to {name} cannot bind a name with `:=` where the item "
            f"{name} stops at is known only when the program runs",
            observed=f"the generator binds `{bound[0]}` as it runs; Python stops drawing at "
                     f"the first item that decides, and that item depends on traced values",
            variable=bound[0],
            fix=f"compute `{bound[0]}` with `jnp.argmax` over a boolean array (the first "
                f"item that decides), or loop over the items with a `for` and `break`")


# ---------------------------------------------------------------------------
# sorted


def sorted_(iterable: Any, /, *, key: Callable | None = None, reverse: bool = False) -> list:
    """``sorted(iterable)``; a stable ``argsort`` where the keys are traced.

    The semantics are given by this Python implementation::

        return sorted(iterable, key=key, reverse=reverse)

    With traced keys the order is that of a stable ``jnp.argsort`` of them
    (``descending`` for ``reverse``, equal keys keeping their order, as
    Python's sort does), and the result is a Python list of the items in that
    order: for a 1-D array, a list of its elements as 0-d arrays, as Python
    gives. Each key must be a single value. A NaN key sorts last, where
    Python's sort leaves NaN wherever its comparisons (all false) put it.

    Args:
      iterable: the items.
      key: computes each item's sort key, once per item.
      reverse: sort in descending order.

    Returns:
      A new list.

    Raises:
      ConditionError: a key that is an array of more than one element.
      BuiltinError: traced keys order items of different structures or
        shapes.
    """
    if isinstance(iterable, Tracer) and key is None and np.ndim(iterable) >= 1:
        n = iterable.shape[0]
        if n <= 1:
            return list(iterable)
        if int(np.prod(iterable.shape[1:])) == 1 and not jnp.issubdtype(
                iterable.dtype, jnp.complexfloating):
            order = jnp.argsort(jnp.reshape(iterable, (n,)), stable=True,
                                descending=builtins.bool(reverse))
            return list(iterable[order])
    items = list(iterable)
    if key is None:
        keys = items
    else:
        key = handed(key)  # a user function converted (`calls.handing_converted`)
        keys = [key(v) for v in items]
    if not any(isinstance(k, Tracer) for k in keys):
        # Python's own sort, where it can decide: tuples whose Python parts differ
        # never compare their traced ones
        try:
            ranked = builtins.sorted(range(len(items)), key=keys.__getitem__, reverse=reverse)
        except jax.errors.TracerBoolConversionError:
            pass
        else:
            return [items[k] for k in ranked]
    if len(items) <= 1:
        return items
    for k in keys:
        for part in (k if type(k) is tuple else (k,)):
            if isinstance(part, Tracer) and int(np.prod(np.shape(part))) != 1:
                _refuse_ambiguous("sorted", f"comparing items of {describe(part)}")
    treedef, columns = _stacked(list(keys), "sorted")
    leaves = treedef.num_leaves
    if not (treedef == jax.tree_util.tree_structure(keys[0]) and (
            leaves == 1 or type(keys[0]) is tuple and len(keys[0]) == leaves)):
        raise errors.BuiltinError(
            "`sorted` orders traced keys only when each key is one number or a tuple of "
            "numbers",
            observed=f"the keys are {st.kind_of(keys[0])}",
            fix="make the key one number or a tuple of numbers, or sort the arrays with "
                "`jnp.lexsort`")
    return _take(_stacked(items, "sorted"), _lexicographic_order(columns, len(items), reverse))


def _lexicographic_order(columns, n: int, reverse) -> Any:
    """The stable order of ``n`` keys given as ``columns`` (one per element of the key,
    the first deciding first), as Python's ``sorted`` orders tuples."""
    operands = []
    for kind, value in columns:
        if kind is None:
            continue  # one value for every key: it decides nothing
        column = jnp.reshape(value, (n,))
        if jnp.issubdtype(column.dtype, jnp.complexfloating):
            raise errors.BuiltinError(
                "`sorted` cannot order complex keys (Python's `<` refuses them)",
                observed=f"a key holds {describe(value[0])}",
                fix="sort by `abs(z)` or by `(z.real, z.imag)`")
        if builtins.bool(reverse):  # descending, equal keys keeping their order
            column = -column if jnp.issubdtype(column.dtype, jnp.floating) else ~column
        operands.append(column)
    operands.append(jnp.arange(n, dtype=np.int32))  # the items' order breaks ties
    return jax.lax.sort(tuple(operands), num_keys=len(operands))[-1]


# ---------------------------------------------------------------------------
# pow


def pow_(base: Any, exp: Any, mod: Any = None) -> Any:
    """``pow(base, exp, mod)``; a traced integer to a negative Python int gives a float.

    The semantics are given by this Python implementation::

        return pow(base, exp, mod)

    Two arguments call the array's own ``**``, apart from one case JAX
    refuses and Python answers: a traced integer ``base`` and a negative
    Python int ``exp`` give a float (``pow(n, -1)`` is ``1 / n``), weakly
    typed as Python's float is.

    Args:
      base: the base.
      exp: the exponent.
      mod: the modulus, for Python integers only.

    Returns:
      ``base ** exp`` (modulo ``mod``).

    Raises:
      BuiltinError: ``mod`` with a traced argument (Python's modular power of
        exact integers has no fixed-width counterpart).
    """
    if mod is not None:
        if any(isinstance(v, Tracer) for v in (base, exp, mod)):
            raise errors.BuiltinError(
                "three-argument `pow` works on Python integers only",
                observed=f"`pow` gets {describe(base)}, {describe(exp)} and {describe(mod)}",
                fix="pass Python ints, or compute `(base ** exp) % mod` with arrays (exact "
                    "only while `base ** exp` fits the dtype)")
        return builtins.pow(base, exp, mod)
    if (isinstance(base, Tracer) and type(exp) is int and exp < 0
            and np.dtype(base.dtype).kind in "biu"):
        base = st.convert(base, _canonical(float), True)
    return builtins.pow(base, exp)


# ---------------------------------------------------------------------------
# in


def in_(item: Any, container: Any) -> Any:
    """``item in container``; a traced bool where either side is traced.

    The semantics are given by this Python implementation::

        return item in container

    A JAX array's own ``in`` (a 1-D array and a scalar: ``jnp.any(container
    == item)``) is kept as a traced bool rather than made a Python bool. A
    list or tuple compares the item with each element, as Python does
    (``is``, then ``==``), and a ``range`` checks bounds and step. Other
    containers (dicts, sets, strings) are Python's own, which cannot hold or
    hash a traced value.

    Args:
      item: what to look for.
      container: where to look.

    Returns:
      A Python bool, or a traced boolean scalar.

    Raises:
      ConditionError: a comparison with a list element gives an array of more
        than one element.
    """
    if isinstance(container, Tracer) or (
            isinstance(item, Tracer) and isinstance(container, jax.Array)):
        # an array's `in`, as NumPy's and newer JAX's define it, kept traced (JAX before
        # 0.8 gives tracers no `__contains__`)
        return jnp.any(jnp.asarray(container) == item)
    if type(container) in (list, tuple) and (isinstance(item, Tracer) or any(
            isinstance(v, Tracer) for v in container)):
        found: Any = False
        for element in container:
            if element is item:
                return True
            c = _truth(element == item, "`in`")
            found = _or(found, c)
            if found is True:
                return True
        return found
    if isinstance(item, Tracer):
        if isinstance(container, range):
            return _in_range(item, container)
        if isinstance(container, np.ndarray):  # NumPy's `in`, of any shape
            return jnp.any(jnp.asarray(container) == item)
    return item in container


def _in_range(item, r: range):
    _truth(item, "`in`")  # a single value, as Python compares one
    x = jnp.reshape(item, ())
    if len(r) == 0:
        return False
    if jnp.issubdtype(x.dtype, jnp.complexfloating):
        return _and(_in_range(jnp.real(x), r), jnp.imag(x) == 0)
    if x.dtype == jnp.bool_:
        x = x.astype(_canonical(int))
    first, last = r[0], r[-1]
    low, high = builtins.min(first, last), builtins.max(first, last)
    return (x >= low) & (x <= high) & ((x - first) % abs(r.step) == 0)



# ---------------------------------------------------------------------------
# map and filter


def map_(function: Callable, iterable: Any, /, *iterables: Any) -> Any:
    """``map(function, iterable, ...)``, with a user function converted.

    The semantics are given by this Python implementation::

        return map(function, iterable, *iterables)

    A user function (or method, or ``functools.partial`` of one) is called as
    its converted twin, so its `if`s on traced values work (see
    ``calls.handing_converted``); the result is Python's lazy ``map`` object.

    Args:
      function: called on the items.
      iterable: the items (with ``iterables``, one argument each).
      *iterables: more items, in step.

    Returns:
      An iterator over the results.
    """
    return builtins.map(handed(function), iterable, *iterables)


def filter_(function: Callable | None, iterable: Any, /) -> Any:
    """``filter(function, iterable)``, with a user function converted.

    The semantics are given by this Python implementation::

        return filter(function, iterable)

    As lazy as Python's. An item whose test is traced cannot be kept or left
    out while tracing: how many items the result holds would be known only
    when the program runs, so that is a ``BuiltinError`` naming the item.

    Args:
      function: the test, called on each item; ``None`` tests the items'
        own truth.
      iterable: the items.

    Returns:
      An iterator over the items whose test is true.

    Raises:
      BuiltinError: an item's test is traced.
    """
    test = handed(function)

    def verdict(item):
        value = item if test is None else test(item)
        if isinstance(value, Tracer):
            raise errors.BuiltinError(
                "`filter` keeps the items whose test is true: a traced test leaves how "
                "many it keeps to the running program, and a list has its length while "
                "tracing",
                observed=f"the test of an item is {describe(value)}",
                fix="keep every item with a mask: `keep = jnp.array([test(x) for x in "
                    "xs])`, then `jnp.where(keep, xs, fill)` or a sum weighted by it")
        return value

    return builtins.filter(verdict, iterable)  # Python's own: as lazy, same type
