"""Whether a staged loop's integers can outgrow int32: interval arithmetic on its body.

Under ``jax.jit`` a Python loop runs in Python: an integer it carries (``fact *=
i``, ``p = p * 2``) is a Python int, exact however large, and JAX refuses one
that does not fit int32 where it becomes an array. A loop staged as one
``lax.scan`` carries it as int32 instead, which wraps around silently. Before
staging, :func:`overflow` runs the body's jaxpr on intervals, from the values
the loop starts with, for its first steps (up to ``STEPS``)::

    p = 1                         # 1
    for i in range(40):           # i = 0, 1, 2, ...
        p = p * 2                 # 2, 4, ... 2**31: outgrows int32
        x = x + 1.0

An integer that comes to depend on an array (picked by a traced branch, added
to an array) is no longer followed: the Python loop would carry it as an
int32 array too. Neither is a value the analysis cannot follow (a float, an
operation not listed below), nor growth that needs more than ``STEPS`` steps
to show (a counter stepping by one).
"""

from __future__ import annotations

import math
import weakref
from typing import Any, Callable, NamedTuple

import numpy as np

from autograph import jax_internals

__all__ = ["overflow", "follow", "Followed", "python_mismatch", "known", "describe", "STEPS"]

STEPS = 64
FOLLOW_LIMIT = 10_000  # most steps a carried Python int is followed to its final value
_LARGEST = 1 << 16  # elements of the largest constant array given an interval


def _limits(aval) -> tuple[int, int]:
    """The least and greatest value of ``aval``'s integer dtype (int32, or int64 with
    64-bit types on)."""
    info = np.iinfo(aval.dtype)
    return int(info.min), int(info.max)

Interval = tuple[float, float] | None  # None: unknown (ints are exact)


def known(value) -> Interval:
    """The interval of a concrete integer, boolean or float value, or None."""
    kind = type(value)
    if kind is int or kind is bool:  # (the literals of jaxprs, read at every step)
        return int(value), int(value)
    if kind is float:
        return (value, value) if math.isfinite(value) else None
    if isinstance(value, (np.generic, np.ndarray)) and value.ndim == 0:
        integer, real = _kind(value)
        if integer:
            return int(value), int(value)
        v = float(value) if real else math.nan
        return (v, v) if math.isfinite(v) else None
    concrete = getattr(value, "to_concrete_value", None)  # a tracer of a known constant
    if concrete is not None:
        try:
            value = concrete()
        except Exception:  # noqa: BLE001
            return None
        if value is None:
            return None
    if getattr(value, "size", 0) > _LARGEST:
        return None  # a weight matrix, say: not a number the loop computes from its index
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - a tracer, an opaque object
        return None
    if _numpy_dtype(a) is None or a.size == 0:
        return None
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        return int(a.min()), int(a.max())
    if np.issubdtype(a.dtype, np.floating) and np.isfinite(a).all():
        return float(a.min()), float(a.max())
    return None


# Tracers that hold a Python number eagerly. A staged `if` whose branches leave Python
# numbers (`h = h * 2` on one, `h` on the other) makes a weakly typed tracer of them,
# and so does a staged loop that carries one; id -> (a weak reference to it, the range
# of what it holds eagerly, whether that range is the hull of the exact ints the
# branches left). Bounded.
_PYTHON_NUMBERS: dict[int, tuple[Any, tuple, bool]] = {}


def note_python_number(tracer, interval: tuple, exact: bool = False) -> None:
    """Notes that ``tracer`` is, eagerly, a Python number in ``interval``: ``exact``
    where that is the hull of the exact ints the branches of a staged `if` left,
    else a range it is known to stay in (its dtype's, for a loop's carry)."""
    try:
        ref = weakref.ref(tracer)
    except TypeError:
        return
    if len(_PYTHON_NUMBERS) >= 4096:
        _PYTHON_NUMBERS.clear()
    _PYTHON_NUMBERS[id(tracer)] = (ref, interval, exact)


def note_python_int(tracer, interval: tuple[int, int]) -> None:
    """Notes that ``tracer`` is, eagerly, a Python int in ``interval`` (exactly)."""
    note_python_number(tracer, interval, exact=True)


def python_int(value) -> tuple[int, int] | None:
    """The interval of what ``value`` is eagerly where that is a Python int: a Python
    int itself, or a tracer noted by :func:`note_python_int`; else None."""
    if type(value) is int:
        return value, value
    found = _PYTHON_NUMBERS.get(id(value))
    if found is not None and found[2] and found[0]() is value:
        return found[1]
    return None


class Derived(NamedTuple):
    """An output of a traced branch that is a Python int eagerly (see
    :func:`note_derived_ints`) whose range passes its dtype's limits."""

    position: int  # among the branch's outputs
    interval: tuple[int, int]  # as integer arithmetic gives it
    shadow: Callable[[], Any] | None  # its value in float32, from the branch's inputs


def note_derived_ints(closed, outputs) -> list[Derived] | None:
    """Notes which of ``outputs`` (the tracers ``closed``, a traced branch, returns)
    are Python ints eagerly: those it computes from the Python ints it closes over
    (tracers noted by :func:`note_python_int`) and literals alone (``h * 5``), each
    with the interval integer arithmetic gives, kept within its dtype's limits.

    Returns None where none is, else those whose interval passes the limits: staged,
    they would wrap around where eagerly they are exact.
    """
    consts: list[Interval] = [python_int(c) for c in closed.consts]
    if all(c is None for c in consts):
        return None
    jaxpr = closed.jaxpr
    ints = [v for v, value in zip(jaxpr.outvars, outputs)
            if _is_int(v.aval) and getattr(value, "weak_type", False)]
    if not ints:
        return None
    found = _run(jaxpr, consts, [None] * len(jaxpr.invars), eqns=_needed(jaxpr.eqns, ints))
    beyond: list[Derived] = []
    for j, (value, interval, var) in enumerate(zip(outputs, found, jaxpr.outvars)):
        if (interval is None or not _is_int(var.aval) or var.aval.dtype == np.bool_
                or not getattr(value, "weak_type", False) or python_number(value) is not None):
            continue
        lo, hi = _limits(var.aval)
        a, b = int(interval[0]), int(interval[1])
        if a < lo or b > hi:
            beyond.append(Derived(j, (a, b), _shadow(closed, var)))
        note_python_int(value, (min(max(a, lo), hi), max(min(b, hi), lo)))
    return beyond


# primitives whose float32 counterpart follows an integer's magnitude (see `_shadow`)
_SHADOWED = {"add", "sub", "mul", "neg", "abs", "max", "min", "sign", "square",
             "integer_pow", "select_n", "convert_element_type", "lt", "le", "gt", "ge",
             "eq", "ne", "not", "and", "or", "div", "rem"}


def _shadow(closed, var) -> Callable[[], Any] | None:
    """A function computing ``var`` of ``closed`` (an int) in float32, from the values
    the branch closes over: its magnitude tells where the exact int passes int32
    (within float32's rounding, 2**-24 of it). None where an operation on the way
    has no float counterpart here."""
    import jax.numpy as jnp
    from jax import lax

    jaxpr = closed.jaxpr
    eqns = _needed(jaxpr.eqns, [var])
    if any(e.primitive.name not in _SHADOWED for e in eqns):
        return None
    if any(v in jaxpr.invars for e in eqns for v in e.invars):
        return None

    def as_float(x):
        dtype = getattr(x, "dtype", None)
        if dtype is not None and np.dtype(dtype) == np.bool_:
            return x
        return jnp.asarray(x, jnp.float32)

    def run():
        env = {v: as_float(c) for v, c in zip(jaxpr.constvars, closed.consts)}

        def read(v):
            return as_float(v.val) if type(v).__name__ == "Literal" else env[v]

        for e in eqns:
            args = [read(v) for v in e.invars]
            name = e.primitive.name
            if name == "convert_element_type":
                out = args[0]
            elif name == "integer_pow":
                out = args[0] ** e.params["y"]
            elif name == "square":
                out = args[0] * args[0]
            elif name == "div":  # integer division rounds toward zero
                out = jnp.trunc(args[0] / args[1])
            elif name == "rem":
                out = jnp.fmod(args[0], args[1])
            elif name == "select_n":
                out = lax.select_n(args[0], *args[1:])
            else:
                out = e.primitive.bind(*args, **e.params)
            env[e.outvars[0]] = out
        return read(var)

    return run


def python_number(value) -> tuple | None:
    """The range of what ``value`` is eagerly where that is a Python int or float: the
    number itself, or a tracer noted by :func:`note_python_number`; else None."""
    if type(value) in (int, float):
        return value, value
    found = _PYTHON_NUMBERS.get(id(value))
    if found is not None and found[0]() is value:
        return found[1]
    return None


def _hull(a: Interval, b: Interval) -> Interval:
    if a is None or b is None:
        return None
    return min(a[0], b[0]), max(a[1], b[1])


_KINDS: dict[Any, tuple[bool, bool]] = {}  # dtype -> (an integer or bool, real)


def _kind(aval) -> tuple[bool, bool]:
    dtype = _numpy_dtype(aval)
    found = _KINDS.get(dtype)
    if found is None:
        integer = dtype is not None and (np.issubdtype(dtype, np.integer) or dtype == np.bool_)
        found = (integer, integer or (dtype is not None and np.issubdtype(dtype, np.floating)))
        _KINDS[dtype] = found
    return found


def _is_int(aval) -> bool:
    return _kind(aval)[0]


def _is_real(aval) -> bool:
    """An integer, boolean or real floating-point value (one an interval can describe)."""
    return _kind(aval)[1]


def _numpy_dtype(aval):
    """``aval``'s dtype where NumPy knows it (not a PRNG key's ``key<fry>``), or None."""
    dtype = getattr(aval, "dtype", None)
    if dtype is None or not isinstance(dtype, np.dtype):
        return None
    return dtype


def _exact(i: Interval) -> bool:
    return i is not None and i[0] == i[1]


_COMPARISONS = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
                "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
                "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
                "and": lambda a, b: bool(a) and bool(b), "or": lambda a, b: bool(a) or bool(b)}


def _truncated(a: int, b: int) -> int:
    """``a / b`` rounded toward zero, as XLA divides integers."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


# Integer operations computed exactly where their inputs are known
_EXACT: dict[str, Callable[..., int]] = {
    "div": _truncated, "rem": lambda a, b: a - b * _truncated(a, b),
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
    "not": lambda a: ~a}


def _truth(name: str, ins: list) -> Interval:
    """A boolean's interval: exact where the operation's inputs are."""
    if name in _COMPARISONS and len(ins) == 2 and all(_exact(i) for i in ins):
        v = int(_COMPARISONS[name](ins[0][0], ins[1][0]))
        return v, v
    if name == "not" and len(ins) == 1 and _exact(ins[0]):
        return int(not ins[0][0]), int(not ins[0][0])
    if name in ("convert_element_type", "copy", "copy_p", "reshape", "squeeze",
                "expand_dims", "broadcast_in_dim") and ins and _exact(ins[0]):
        return int(bool(ins[0][0])), int(bool(ins[0][0]))
    return 0, 1


def _mul(a, b):
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def _apply(name: str, params: dict, ins: list, out_aval) -> Interval:
    if not _is_real(out_aval):
        return None
    if getattr(out_aval, "dtype", None) == np.bool_:
        return _truth(name, ins)
    if name == "select_n" and ins and _exact(ins[0]) and ins[0][0] + 1 < len(ins):
        return ins[1 + int(ins[0][0])]  # a known choice picks its case
    if any(i is None for i in ins) and name != "select_n":
        return None
    if _is_int(out_aval) and ins and all(_exact(i) for i in ins) and name in _EXACT:
        try:
            v = _EXACT[name](*[int(i[0]) for i in ins])
        except ZeroDivisionError:
            return None
        return v, v
    if (not _is_int(out_aval) and name in _PYTHON_FLOAT and ins
            and all(_exact(i) for i in ins)):
        try:
            v = _PYTHON_FLOAT[name](*[float(i[0]) for i in ins])
        except (ArithmeticError, ValueError):
            return None
        return (v, v) if isinstance(v, float) and math.isfinite(v) else None
    if name == "sign":
        lo, hi = ins[0]
        return (lo > 0) - (lo < 0), (hi > 0) - (hi < 0)
    if name == "add":
        return ins[0][0] + ins[1][0], ins[0][1] + ins[1][1]
    if name == "sub":
        return ins[0][0] - ins[1][1], ins[0][1] - ins[1][0]
    if name == "mul":
        return _mul(ins[0], ins[1])
    if name == "neg":
        return -ins[0][1], -ins[0][0]
    if name == "max":
        return max(ins[0][0], ins[1][0]), max(ins[0][1], ins[1][1])
    if name == "min":
        return min(ins[0][0], ins[1][0]), min(ins[0][1], ins[1][1])
    if name == "abs":
        lo, hi = ins[0]
        return (0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))
    if name == "integer_pow":
        y = params.get("y")
        if not isinstance(y, int) or y < 0:
            return None
        if y == 0:
            return 1, 1
        ends = [ins[0][0] ** y, ins[0][1] ** y]
        lo = 0 if (y % 2 == 0 and ins[0][0] <= 0 <= ins[0][1]) else min(ends)
        return lo, max(ends)
    if name == "select_n":
        cases = ins[1:]
        if any(c is None for c in cases):
            return None
        lo, hi = cases[0]
        for c in cases[1:]:
            lo, hi = min(lo, c[0]), max(hi, c[1])
        return lo, hi
    if name == "convert_element_type" and _is_int(out_aval):
        return _to_int(ins[0], out_aval)
    if (name == "convert_element_type" and not getattr(out_aval, "weak_type", False)
            and _numpy_dtype(out_aval) is not None
            and np.issubdtype(_numpy_dtype(out_aval), np.floating)):
        # a number given a float dtype of its own (`jnp.float16(i * 0.1)`): rounded to it
        dtype = _numpy_dtype(out_aval)
        lo, hi = (float(np.asarray(b).astype(dtype)) for b in ins[0])
        return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None
    if name in ("convert_element_type", "copy", "copy_p", "reshape", "squeeze",
                "expand_dims", "broadcast_in_dim"):
        return ins[0]
    if name == "rem" and _is_int(out_aval):  # |x rem y| < |y|, with the sign of x
        bound = max(abs(ins[1][0]), abs(ins[1][1])) - 1
        if bound < 0:
            return None
        return (-bound if ins[0][0] < 0 else 0), (bound if ins[0][1] > 0 else 0)
    if name == "div":  # |x // y| <= |x| for integer y != 0
        if not _is_int(out_aval):
            return None
        bound = max(abs(ins[0][0]), abs(ins[0][1]))
        return -bound, bound
    if name == "shift_left" and _is_int(out_aval):
        if ins[1][0] < 0 or ins[0][0] < 0:
            return None
        return ins[0][0] << ins[1][0], ins[0][1] << ins[1][1]
    if name == "clamp":  # clamp(a, x, b) = min(max(x, a), b), each bound monotonic
        lo, hi = max(ins[1][0], ins[0][0]), max(ins[1][1], ins[0][1])
        return min(lo, ins[2][0]), min(hi, ins[2][1])
    return None


# float operations computed as Python computes them (in float64) where their inputs
# are exactly known: what `i / 3`, `0.999 ** t` or `math.sqrt(i)` give in the Python
# loop `jax.jit` runs
_PYTHON_FLOAT: dict[str, Callable[..., Any]] = {
    "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "sqrt": math.sqrt,
    "exp": math.exp, "log": math.log, "sin": math.sin, "cos": math.cos, "tan": math.tan,
    "tanh": math.tanh, "log1p": math.log1p, "expm1": math.expm1}


def _to_int(interval: Interval, out_aval) -> Interval:
    """A number's interval cast to an integer dtype: truncated toward zero (a
    monotonic map), or unknown where a bound is not finite or out of the dtype's range."""
    if interval is None:
        return None
    lo, hi = interval
    if isinstance(lo, int) and isinstance(hi, int):
        return lo, hi
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    lo, hi = math.trunc(lo), math.trunc(hi)
    info = np.iinfo(out_aval.dtype)
    return (lo, hi) if info.min <= lo and hi <= info.max else None


def _run(jaxpr, consts: list[Interval], ins: list[Interval],
         hits: list[str] | None = None, eqns=None, want=None,
         floats: bool = False) -> list[Interval]:
    """The intervals of ``jaxpr``'s outputs. With ``hits``, the operations of its
    top level (the user's own; not JAX's internals, which may wrap on purpose)
    whose inputs are all known and whose Python meaning differs from what the
    staged loop computes are described there (see :func:`python_mismatch`)."""
    env: dict[Any, Interval] = {}

    def read(v):
        if type(v).__name__ == "Literal":
            return known(v.val)
        return env.get(v)

    for v, c in zip(jaxpr.constvars, consts):
        env[v] = c
    for v, i in zip(jaxpr.invars, ins):
        env[v] = i
    integral: set = set()  # float values the index makes that hold whole numbers exactly
    for eqn in jaxpr.eqns if eqns is None else eqns:
        args = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        if hits is not None:
            _python_meaning(eqn, name, args, hits)
            if floats:
                _python_float(eqn, name, args, hits, integral)
        if name in ("pjit", "jit", "closed_call", "core_call") and "jaxpr" in eqn.params:
            inner = eqn.params["jaxpr"]  # a nested function: followed into
            outs = _run(inner.jaxpr, [known(c) for c in inner.consts], args)
        elif name == "cond":  # any branch may run: the hull of theirs
            outs = None
            branches = eqn.params["branches"]
            if _exact(args[0]) and 0 <= args[0][0] < len(branches) and hits is None:
                branches = [branches[int(args[0][0])]]  # a known index picks its branch
            for branch in branches:
                got = _run(branch.jaxpr, [known(c) for c in branch.consts], args[1:], hits)
                outs = got if outs is None else [_hull(a, b) for a, b in zip(outs, got)]
        elif len(eqn.outvars) == 1:
            outs = [_apply(name, eqn.params, args, eqn.outvars[0].aval)]
        else:
            outs = [None] * len(eqn.outvars)
        for out, interval in zip(eqn.outvars, outs or [None] * len(eqn.outvars)):
            env[out] = interval if _is_real(out.aval) else None
        if hits is not None and len(eqn.outvars) == 1 and all(a is not None for a in args):
            _outgrows(eqn.outvars[0], env[eqn.outvars[0]], hits)
    return [read(v) for v in (jaxpr.outvars if want is None else want)]


# JAX's functions for Python's `//`, `%` and `/`: their second input is the divisor
_DIVISIONS = {"floor_divide": "//", "remainder": "%", "true_divide": "/", "divide": "/",
              "fmod": "%", "divmod": "divmod"}
_SHIFTS = {"shift_left": "<<", "shift_right_arithmetic": ">>", "shift_right_logical": ">>"}


def _python_meaning(eqn, name: str, args: list[Interval], hits: list[str]) -> None:
    """Notes a division of known numbers by a known interval that holds zero: Python
    raises ``ZeroDivisionError`` there, the staged loop computes a number. So does a
    shift of known integers by a count that may be negative (``ValueError``)."""
    if name in _SHIFTS and len(args) == 2 and args[0] is not None and args[1] is not None:
        if args[1][0] < 0:
            hits.append(f"shifts by a negative count (`{_SHIFTS[name]}` by a value below 0 "
                        f"at some step), where Python raises ValueError")
        return
    op = None
    if name in ("pjit", "jit"):
        op = _DIVISIONS.get(str(eqn.params.get("name")))
    elif name in ("div", "rem"):
        op = "/" if name == "div" else "%"
    if op is None or len(args) != 2 or args[0] is None or args[1] is None:
        return
    lo, hi = args[1]
    if lo <= 0 <= hi:
        hits.append(f"divides by zero (`{op}` by a value that is 0 at some step), where "
                    f"Python raises ZeroDivisionError")


# operations whose float result Python computes exactly the same (no rounding of its own)
_EXACT_FLOAT = frozenset({
    "convert_element_type", "copy", "copy_p", "reshape", "squeeze", "expand_dims",
    "broadcast_in_dim", "select_n", "neg", "abs", "max", "min", "floor", "ceil", "round",
    "sign", "clamp", "stop_gradient"})
_WHOLE = 2 ** 24  # float32 holds every whole number up to this exactly


def _whole(v, integral: set) -> bool:
    """Whether ``v`` (an input of an equation) is an integer, or a float that holds a
    whole number float32 holds exactly (a literal ``2.0``, a converted index)."""
    if type(v).__name__ == "Literal":
        value = known(v.val)
        return value is not None and float(value[0]).is_integer() and value[0] == value[1]
    return v in integral or not np.issubdtype(getattr(v.aval, "dtype", np.float32), np.floating)


def _python_float(eqn, name: str, args: list[Interval], hits: list[str],
                  integral: set) -> None:
    """Notes a weakly typed float the body computes from the index and constants alone
    (``i * 0.1``, ``0.9 ** i``, ``i / 3``): Python computes it in float64, and plain
    ``jax.jit`` rounds the result once to float32; a staged loop computes it in
    float32. Whole numbers within float32's exact range are the same either way."""
    if any(a is None for a in args):
        return
    if len(eqn.outvars) != 1:
        # `divmod` of such floats: Python's two numbers, in float64
        if (name in ("pjit", "jit") and str(eqn.params.get("name")) == "divmod"
                and any(getattr(o.aval, "weak_type", False) and _numpy_dtype(o.aval) is not None
                        and np.issubdtype(_numpy_dtype(o.aval), np.floating)
                        for o in eqn.outvars)):
            hits.append("computes `divmod` of floats from the index and constants, which "
                        "Python computes in float64 and a staged loop in float32")
        return
    out = eqn.outvars[0]
    dtype = _numpy_dtype(out.aval)
    if dtype is None or not np.issubdtype(dtype, np.floating):
        return
    whole = all(_whole(v, integral) for v in eqn.invars)
    if name in _EXACT_FLOAT or (whole and name in ("add", "sub", "mul")):
        # the same in float32 and in Python, rounded once; a whole number stays whole
        bound = _apply(name, eqn.params, args, out.aval) if whole else None
        if bound is not None and max(abs(bound[0]), abs(bound[1])) <= _WHOLE:
            integral.add(out)
        return
    if not getattr(out.aval, "weak_type", False):
        return  # `jnp.float32(i) * 0.1`: float32 arithmetic under `jax.jit` too
    op = eqn.params.get("name", name) if name in ("pjit", "jit") else name
    hits.append(f"computes `{op}` on floats from the index and constants, which Python "
                f"computes in float64 (rounded once to float32 under `jax.jit`) and a "
                f"staged loop in float32")


def _outgrows(var, interval: Interval, hits: list[str]) -> None:
    """Notes an integer of known value that its dtype cannot hold."""
    if interval is None or not _is_int(var.aval) or var.aval.dtype == np.bool_:
        return
    info = np.iinfo(var.aval.dtype)
    if interval[0] < info.min or interval[1] > info.max:
        end = interval[1] if interval[1] > info.max else interval[0]
        hits.append(f"computes an integer that reaches {describe(end)}, which {var.aval.dtype} "
                    f"cannot hold (Python's integers are exact)")


def python_mismatch(closed, n_carry: int, index: tuple[int, int],
                    extra: list[Interval], floats: bool = False) -> str | None:
    """Why staging a loop body would change what its Python computes, or None.

    Under ``jax.jit`` a loop over a static range runs in Python, so the
    numbers computed from its index alone (and from constants) are Python
    numbers: exact integers, and a division by zero raises. Staged, they are
    int32 arrays. The body's jaxpr is run once on intervals, with the index
    over its whole range and the carry unknown; an operation of the body's
    own (not inside a library function) whose inputs are all known and that
    would wrap around or divide by zero at some step is described. Values
    that depend on the carry or on other arrays are left alone: the Python
    loop computes them with JAX too.

    Args:
      closed: the body's ``ClosedJaxpr``: the carry (``n_carry`` values), the
        step index, then inputs whose intervals are ``extra``.
      n_carry: how many inputs are carried.
      index: the smallest and largest step index.
      extra: intervals of the inputs after the index.
      floats: whether a weakly typed float computed from known numbers alone (a
        Python float under ``jax.jit``, ``i * 0.1``) counts too: float32 rounds it
        differently (see ``hoist_python_floats``, which takes most out first).
    """
    hits: list[str] = []
    ins: list[Interval] = [None] * n_carry
    _run(closed.jaxpr, [known(c) for c in closed.consts], ins + [index] + list(extra), hits,
         floats=floats)
    return hits[0] if hits else None


class PythonValueUnknown(Exception):
    """A Python value of the index the staged loop would compute another way, which
    ``hoist_python_floats`` cannot compute as Python does (the message says what)."""


def hoist_python_floats(closed, n_carry: int, first: int, last: int,
                        extra: list[Interval]):
    """The body's weakly typed floats computed from the index and constants alone
    (``i * 0.1``, ``1 - 0.999 ** t``), taken out of it as inputs, with their values
    at each step as Python computes them; or None where the body has none.

    Under ``jax.jit`` such a number is a Python float (float64), rounded once to
    float32 where it meets an array; a loop staged as one ``lax.scan`` would compute
    it in float32. Given as a scanned input, it is the value plain ``jax.jit``
    uses. The jaxpr keeps its inputs (the carry, the index, then ``extra``) and
    takes the hoisted values after them; a value whose steps cannot all be
    computed exactly here stays in the body (``python_mismatch`` then tells).

    Returns:
      ``(closed, tables)``: the new body, and one NumPy array per hoisted value
      (``last - first + 1`` steps, of the value's dtype).

    Raises:
      PythonValueUnknown: a value Python's operators make of such floats, or a
        comparison of them (a Python bool under ``jax.jit``), whose value at some
        step cannot be computed here: staged, it would be float32 arithmetic, and a
        comparison may come out the other way.
    """
    jaxpr = closed.jaxpr
    if last < first or last - first >= FOLLOW_LIMIT:
        return None
    index = jaxpr.invars[n_carry] if len(jaxpr.invars) > n_carry else None
    if index is None:
        return None
    # the values that depend on the index and on no other input (a constant whose value
    # is not known here, a tracer of an outer trace, is another input)
    from_index, other = {index}, set(jaxpr.invars) - {index}
    other |= {v for v, c in zip(jaxpr.constvars, closed.consts) if known(c) is None}
    for eqn in jaxpr.eqns:
        ins = [v for v in eqn.invars if type(v).__name__ != "Literal"]
        if any(v in other for v in ins) or eqn.effects:
            other.update(eqn.outvars)
        elif any(v in from_index for v in ins):
            from_index.update(eqn.outvars)
    # made by Python's operators on Python numbers: a `jnp.sin` of one is float32
    # arithmetic under `jax.jit` too (on the number rounded once), and stays in the body
    python_made = {o for eqn in jaxpr.eqns if _python_operator(eqn) for o in eqn.outvars}
    any_float = {v for v in from_index if v is not index and getattr(v.aval, "shape", None) == ()
                 and getattr(v.aval, "weak_type", False) and not _is_int(v.aval)
                 and _is_real(v.aval)}
    floats = any_float & python_made
    if not any_float:
        return None
    # a comparison of such a float Python makes (`max(i * 0.1, 0.3) == 0.3`, where the
    # `max` is autograph's): a Python bool under `jax.jit`; each must be followed
    compared = [o for eqn in jaxpr.eqns if eqn.primitive.name in _COMPARE and any(
        v in any_float for v in eqn.invars if type(v).__name__ != "Literal") for o in eqn.outvars]
    # what Python computes from those floats is Python's too: `i * 0.1 > 0.3` is a
    # float64 comparison under `jax.jit` (True at i = 3), a float32 one staged (False)
    # (and one cast to the dtype of the array it meets, `float16`: rounded once there)
    for eqn in jaxpr.eqns:
        if any(v in floats for v in eqn.invars if type(v).__name__ != "Literal") and (
                _python_operator(eqn)) and all(
                o in from_index and getattr(o.aval, "shape", None) == () and _is_real(o.aval)
                and (getattr(o.aval, "weak_type", False) or o.aval.dtype == np.bool_
                     or eqn.primitive.name == "convert_element_type")
                for o in eqn.outvars):
            floats.update(eqn.outvars)
    used_elsewhere = {v for eqn in jaxpr.eqns if not set(eqn.outvars) <= floats
                      for v in eqn.invars if type(v).__name__ != "Literal"} | set(jaxpr.outvars)
    frontier = [v for v in dict.fromkeys(
        v for eqn in jaxpr.eqns for v in eqn.outvars if v in floats)
        if v in used_elsewhere]
    if not frontier:
        if any(o in used_elsewhere for o in compared):
            raise PythonValueUnknown(_UNFOLLOWED)
        return None
    eqns = _needed(jaxpr.eqns, frontier)
    consts = [known(c) for c in closed.consts]
    rows = []
    for k in range(first, last + 1):
        step_ins: list[Interval] = [None] * n_carry
        step_ins += [(k, k), *extra]
        got = _run(jaxpr, consts, step_ins, eqns=eqns, want=frontier)
        rows.append(got)
    hoisted = [i for i, v in enumerate(frontier) if all(_exact(r[i]) for r in rows)]
    # (what Python's operators make and this cannot follow would be float32 staged)
    lost = [v for i, v in enumerate(frontier) if i not in hoisted]
    followed = {frontier[i] for i in hoisted}
    if lost or any(o not in followed and o in used_elsewhere for o in compared):
        raise PythonValueUnknown(_UNFOLLOWED)
    if not hoisted:
        return None
    taken = [frontier[i] for i in hoisted]
    kept = [e for e in jaxpr.eqns if not any(o in taken for o in e.outvars)]
    new = jax_internals.with_inputs(closed, list(jaxpr.invars) + taken,
                                    _needed(kept, jaxpr.outvars, effects=True))
    tables = [np.asarray([_value(r[i]) for r in rows], dtype=frontier[i].aval.dtype)
              for i in hoisted]
    return new, tables


# the primitives (and JAX's functions, by name) that Python's operators and the number
# built-ins become on a traced number: `+`, `*`, `/`, `//`, `%`, `**`, `abs`, `round`,
# comparisons, `min`/`max`, `float()`
_PYTHON_PRIMITIVES = frozenset({
    "convert_element_type", "add", "sub", "mul", "div", "rem", "pow", "integer_pow", "neg",
    "abs", "max", "min", "floor", "ceil", "round", "sign", "select_n", "eq", "ne", "lt", "le",
    "gt", "ge", "and", "or", "not", "copy", "square"})
_PYTHON_FUNCTIONS = frozenset({"floor_divide", "remainder", "true_divide", "divide", "_where",
                               "round", "power", "fmod", "divmod"})


_COMPARE = frozenset(_COMPARISONS) - {"and", "or"}
_UNFOLLOWED = ("computes or compares floats from the index and constants (Python in float64, a "
               "staged loop in float32) in a way whose result it cannot follow")


def _python_operator(eqn) -> bool:
    name = eqn.primitive.name
    if name in ("pjit", "jit"):
        return str(eqn.params.get("name")) in _PYTHON_FUNCTIONS
    return name in _PYTHON_PRIMITIVES


def _value(interval: Interval) -> float:
    assert interval is not None
    return interval[0]


def _needed(eqns: list, targets, effects: bool = False) -> list:
    """The equations of ``eqns`` that ``targets`` depend on (with ``effects``, also
    those that have an effect), in order."""
    needed = {v for v in targets if type(v).__name__ != "Literal"}
    kept = []
    for eqn in reversed(eqns):
        if (effects and eqn.effects) or any(o in needed for o in eqn.outvars):
            kept.append(eqn)
            needed.update(v for v in eqn.invars if type(v).__name__ != "Literal")
    kept.reverse()
    return kept


def overflow(closed, carry_init: list, n_carry: int, first_index: int,
             extra: list[Interval], steps: int) -> tuple[int, float] | None:
    """The first carried integer a loop would push out of int32 in its first
    ``STEPS`` steps, or None (see :func:`follow`)."""
    return follow(closed, carry_init, n_carry, first_index, extra, min(steps, STEPS)).overflow


class Followed(NamedTuple):
    """What following a loop's carried integers step by step found."""

    overflow: tuple[int, float] | None  # (position in the carry, the value it would reach)
    finals: dict[int, int]  # position -> exact final value, for Python ints followed to the end
    steps: int = 0  # at the overflow, the steps run when it would happen (1 for the first)
    branched: bool = False  # the overflow is of a value a traced branch picks at some step
    dtype: str = "int32"  # the dtype it would leave


def follow(closed, carry_init: list, n_carry: int, first_index: int,
           extra: list[Interval], steps: int, python_only: bool = False,
           branches: bool = True, beyond: bool = False) -> Followed:
    """Follows a loop's carried integers step by step, exactly.

    The loop is followed from ``carry_init``, with the step index
    ``first_index``, ``first_index + 1``, ...: an integer that stays exactly
    known (it depends on known values and the index only, as ``fact *= i``
    and ``n += 1`` do) is checked at each step; one that comes to depend on
    an array (an array is added to it) is no longer followed, since the
    Python loop would carry it as an array too. Only the part of the body the
    carried integers depend on is run. A loop of at most ``FOLLOW_LIMIT``
    steps is followed to its end (else its first ``STEPS``), and the carried
    values that started as Python ints and stay known to the end are given as
    ``finals``: under ``jax.jit`` the Python loop leaves them Python ints.

    A Python int that a traced branch picks (``if x[i] > 0: fact *= i``, or a
    traced ``break`` before ``fact *= i``) stays a Python int in the Python
    loop run eagerly, where the branch is a Python ``if``: it is then followed
    for the first ``STEPS`` steps as an interval, the hull of what each branch
    makes of it (inputs other than the carry and the index unknown), and an
    overflow found so is ``branched``: some run of the loop may reach it.

    Args:
      closed: the body's ``ClosedJaxpr``; its inputs are the carry (``n_carry``
        values), the step index, then ``extra``; its first ``n_carry``
        outputs are the carry.
      carry_init: the carry's initial values (known integers are followed).
      n_carry: how many inputs and outputs are carried.
      first_index: the step index of the first step.
      extra: intervals of the inputs after the index.
      steps: how many times the body runs.
      python_only: whether only the values that start as Python ints are checked
        (an int32 array wraps around in the Python loop too).
      branches: whether Python ints are also followed through traced branches.
        The hull cannot tell a converted `if` (a Python `if` eagerly) from the
        user's own ``jnp.where`` or ``lax.cond``, which make arrays eagerly too:
        what a found overflow then means is the caller's to decide.
      beyond: the loop may run longer than ``steps`` (its trip count is known
        only when it runs): an integer that follows a polynomial of degree at
        most 2 over the steps followed (a counter ``s += c``, a sum of the
        index ``s += i``) is extrapolated, and the step where it would leave
        its dtype is the overflow found (``Followed.steps``).
    """
    jaxpr = closed.jaxpr
    state = [known(v) if _is_int(o.aval) else None
             for v, o in zip(carry_init, jaxpr.outvars[:n_carry])]
    python = [python_int(v) is not None for v in carry_init]
    # a Python int stopped being exact: a traced branch may pick it (or already did)
    branched = any(p and type(v) is not int for p, v in zip(python, carry_init))
    if all(s is None for s in state) and not branched:
        return Followed(None, {})
    eqns = _needed(jaxpr.eqns, [jaxpr.outvars[i] for i, s in enumerate(state) if s is not None])
    consts = [known(c) for c in closed.consts]
    run = steps if steps <= FOLLOW_LIMIT else min(steps, STEPS)
    lost = False  # every carried integer stopped being followed
    history: dict[int, list[int]] = {}  # the last exact values of the Python ints
    for t in range(run):
        if all(s is None for s in state):
            lost = True
            break
        index = (first_index + t, first_index + t)
        out = _run(jaxpr, consts, state + [index] + list(extra), eqns=eqns)[:n_carry]
        branched = branched or any(
            o is not None and o[0] != o[1] and p for o, p in zip(out, python))
        state = [o if o is not None and o[0] == o[1] else None for o in out]
        for i, (value, var) in enumerate(zip(state, jaxpr.outvars)):
            if value is None or var.aval.dtype == np.bool_ or (python_only and not python[i]):
                continue
            lo, hi = _limits(var.aval)
            if not lo <= value[0] <= hi:
                return Followed((i, value[0]), {}, t + 1, dtype=var.aval.dtype.name)
            if beyond:
                seen = history.setdefault(i, [])
                seen.append(int(value[0]))
                del seen[:-_EXTRAPOLATED]
    if beyond:
        first = None  # (steps, position, value) of the first to leave its dtype
        for i, seen in history.items():
            if state[i] is None or len(seen) < _EXTRAPOLATED:
                continue
            more = _steps_to_leave(seen, _limits(jaxpr.outvars[i].aval))
            # (a step count past int32 is no count a staged loop keeps)
            if more is not None and run + more < 2**31 - 1 and (
                    first is None or run + more < first[0]):
                first = (run + more, i, _polynomial(seen, more))
        if first is not None:
            t, i, reached = first
            return Followed((i, reached), {}, t, dtype=jaxpr.outvars[i].aval.dtype.name)
    if branched and branches:
        found = _follow_branches(closed, carry_init, n_carry, first_index, min(steps, STEPS))
        if found is not None:
            return found
    if lost or run < steps:
        return Followed(None, {})
    finals = {i: int(s[0]) for i, (s, v) in enumerate(zip(state, carry_init))
              if s is not None and type(v) is int}
    return Followed(None, finals)


_EXTRAPOLATED = 8  # last values a polynomial must fit to be extrapolated
_FARTHEST = 1 << 62  # steps looked ahead


def _polynomial(seen: list[int], j: int) -> int:
    """The value ``j`` steps after the last of ``seen``, whose second differences are
    constant."""
    d1 = seen[-1] - seen[-2]
    d2 = seen[-1] - 2 * seen[-2] + seen[-3]
    return seen[-1] + j * d1 + j * (j + 1) // 2 * d2


def _steps_to_leave(seen: list[int], limits: tuple[int, int]) -> int | None:
    """The least ``j >= 1`` whose value ``j`` steps on (see :func:`_polynomial`) lies
    outside ``limits``; None where ``seen`` is no polynomial of degree at most 2, or
    stays inside."""
    second = {seen[k] - 2 * seen[k - 1] + seen[k - 2] for k in range(2, len(seen))}
    if len(second) != 1:
        return None
    lo, hi = limits

    def out(j: int) -> bool:
        v = _polynomial(seen, j)
        return not lo <= v <= hi

    # the values are monotone on each side of the vertex: search each side for the
    # first step out
    d1, d2 = seen[-1] - seen[-2], second.pop()
    turn = 1
    if d2 != 0:  # j + 1/2 + d1/d2 = 0 at the vertex
        turn = min(max(1, int(-d1 / d2)), _FARTHEST)
    for a, b in ((1, turn), (turn, _FARTHEST)):
        if a > b or not out(b) and not out(a):
            continue
        if out(a):
            return a
        while b - a > 1:  # out(b), not out(a)
            m = (a + b) // 2
            a, b = (a, m) if out(m) else (m, b)
        return b
    return None


def _follow_branches(closed, carry_init: list, n_carry: int, first_index: int,
                     steps: int) -> Followed | None:
    """``follow``'s second pass: the Python ints of the carry as intervals (the hull of
    what each traced branch makes of them), the other inputs unknown; the first that
    may leave int32, or None."""
    jaxpr = closed.jaxpr
    state: list[Interval] = [python_int(v) if _is_int(o.aval) else None
                             for v, o in zip(carry_init, jaxpr.outvars[:n_carry])]
    eqns = _needed(jaxpr.eqns, [jaxpr.outvars[i] for i, s in enumerate(state) if s is not None])
    consts = [known(c) for c in closed.consts]
    unknown: list[Interval] = [None] * (len(jaxpr.invars) - n_carry - 1)
    for t in range(steps):
        if all(s is None for s in state):
            return None
        index = (first_index + t, first_index + t)
        state = _run(jaxpr, consts, state + [index] + unknown, eqns=eqns)[:n_carry]
        for i, (value, var) in enumerate(zip(state, jaxpr.outvars)):
            if value is None or var.aval.dtype == np.bool_:
                continue
            lo, hi = _limits(var.aval)
            if not (lo <= value[0] and value[1] <= hi):
                end = value[1] if value[1] > hi else value[0]
                return Followed((i, end), {}, t + 1, branched=True, dtype=var.aval.dtype.name)
    return None


def describe(bound: float) -> str:
    return f"2**{math.log2(abs(bound)):.0f}" if abs(bound) > 2 ** 40 else f"{bound:,}"
