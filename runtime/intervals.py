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
from typing import Any

import numpy as np

__all__ = ["overflow", "python_mismatch", "known", "describe", "STEPS"]

STEPS = 64
_LO, _HI = -(2 ** 31), 2 ** 31 - 1

Interval = tuple[float, float] | None  # None: unknown (ints are exact)


def known(value) -> Interval:
    """The interval of a concrete integer, boolean or float value, or None."""
    concrete = getattr(value, "to_concrete_value", None)  # a tracer of a known constant
    if concrete is not None:
        try:
            value = concrete()
        except Exception:  # noqa: BLE001
            return None
        if value is None:
            return None
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


def _hull(a: Interval, b: Interval) -> Interval:
    if a is None or b is None:
        return None
    return min(a[0], b[0]), max(a[1], b[1])


def _is_int(aval) -> bool:
    dtype = _numpy_dtype(aval)
    return dtype is not None and (np.issubdtype(dtype, np.integer) or dtype == np.bool_)


def _is_real(aval) -> bool:
    """An integer, boolean or real floating-point value (one an interval can describe)."""
    dtype = _numpy_dtype(aval)
    return dtype is not None and (_is_int(aval) or np.issubdtype(dtype, np.floating))


def _numpy_dtype(aval):
    """``aval``'s dtype where NumPy knows it (not a PRNG key's ``key<fry>``), or None."""
    dtype = getattr(aval, "dtype", None)
    if dtype is None or not isinstance(dtype, np.dtype):
        return None
    return dtype


def _mul(a, b):
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def _apply(name: str, params: dict, ins: list, out_aval) -> Interval:
    if not _is_real(out_aval):
        return None
    if getattr(out_aval, "dtype", None) == np.bool_:
        return 0, 1
    if any(i is None for i in ins) and name != "select_n":
        return None
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
    if name == "clamp":
        return max(ins[1][0], ins[0][0]), min(ins[1][1], ins[2][1])
    return None


def _run(jaxpr, consts: list[Interval], ins: list[Interval],
         hits: list[str] | None = None) -> list[Interval]:
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
    for eqn in jaxpr.eqns:
        args = [read(v) for v in eqn.invars]
        name = eqn.primitive.name
        if hits is not None:
            _python_meaning(eqn, name, args, hits)
        if name in ("pjit", "jit", "closed_call", "core_call") and "jaxpr" in eqn.params:
            inner = eqn.params["jaxpr"]  # a nested function: followed into
            outs = _run(inner.jaxpr, [known(c) for c in inner.consts], args)
        elif name == "cond":  # any branch may run: the hull of theirs
            outs = None
            for branch in eqn.params["branches"]:
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
    return [read(v) for v in jaxpr.outvars]


# JAX's functions for Python's `//`, `%` and `/`: their second input is the divisor
_DIVISIONS = {"floor_divide": "//", "remainder": "%", "true_divide": "/", "divide": "/",
              "fmod": "%"}


def _python_meaning(eqn, name: str, args: list[Interval], hits: list[str]) -> None:
    """Notes a division of known numbers by a known interval that holds zero: Python
    raises ``ZeroDivisionError`` there, the staged loop computes a number."""
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
                    extra: list[Interval]) -> str | None:
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
    """
    hits: list[str] = []
    ins: list[Interval] = [None] * n_carry
    _run(closed.jaxpr, [known(c) for c in closed.consts], ins + [index] + list(extra), hits)
    return hits[0] if hits else None


def overflow(closed, carry_init: list, n_carry: int, first_index: int,
             extra: list[Interval], steps: int) -> tuple[int, float] | None:
    """The first carried integer a loop would push out of int32, or None.

    The loop is followed step by step from ``carry_init``, with the step index
    ``first_index``, ``first_index + 1``, ...: an integer that stays exactly
    known (it depends on known values and the index only, as ``fact *= i``
    does) is checked at each step; one that comes to depend on an array (a
    traced branch picks it, an array is added to it) is no longer followed,
    since the Python loop would carry it as an array too.

    Args:
      closed: the body's ``ClosedJaxpr``; its inputs are the carry (``n_carry``
        values), the step index, then ``extra``; its first ``n_carry``
        outputs are the carry.
      carry_init: the carry's initial values (Python ints are followed).
      n_carry: how many inputs and outputs are carried.
      first_index: the step index of the first step.
      extra: intervals of the inputs after the index.
      steps: how many times the body runs.

    Returns:
      ``(position in the carry, the value it would reach)``, or None.
    """
    jaxpr = closed.jaxpr
    if not any(_is_int(v.aval) for v in jaxpr.outvars[:n_carry]):
        return None
    consts = [known(c) for c in closed.consts]
    state = [known(v) for v in carry_init]
    for t in range(min(steps, STEPS)):
        if all(s is None for s in state):
            return None
        index = (first_index + t, first_index + t)
        out = _run(jaxpr, consts, state + [index] + list(extra))[:n_carry]
        state = [o if o is not None and o[0] == o[1] else None for o in out]
        for i, (value, var) in enumerate(zip(state, jaxpr.outvars)):
            if (value is not None and _is_int(var.aval) and var.aval.dtype != np.bool_
                    and not _LO <= value[0] <= _HI):
                return i, value[0]
    return None


def describe(bound: float) -> str:
    return f"2**{math.log2(abs(bound)):.0f}" if abs(bound) > 2 ** 40 else f"{bound:,}"
