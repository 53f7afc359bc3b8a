"""Whether a staged loop's integers can outgrow int32: interval arithmetic on its body.

Under ``jax.jit`` a Python loop runs in Python: an integer it carries (``fact *=
i``, ``p = p * 2``) is a Python int, exact however large, and JAX refuses one
that does not fit int32 where it becomes an array. A loop staged as one
``lax.scan`` carries it as int32 instead, which wraps around silently. Before
staging, :func:`overflow` runs the body's jaxpr on intervals, from the values
the loop starts with, for its first steps (up to ``STEPS``)::

    p = 1                         # [1, 1]
    for i in range(40):           # i in [0, 39]
        p = p * 2                 # [1, 2], [1, 4], ... [1, 2**31]: outgrows int32
        x = x + 1.0

A value the analysis cannot follow (it comes from an array, a float, an
operation not listed below) is unbounded and never reported; so is growth that
needs more than ``STEPS`` steps to show (a counter stepping by one).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["overflow", "known", "describe", "STEPS"]

STEPS = 64
_LO, _HI = -(2 ** 31), 2 ** 31 - 1

Interval = tuple[int, int] | None  # None: unknown


def known(value) -> Interval:
    """The interval of a concrete integer (or boolean) value, or None."""
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
    if a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer):
        if a.size == 0:
            return None
        return int(a.min()), int(a.max())
    return None


def _hull(a: Interval, b: Interval) -> Interval:
    if a is None or b is None:
        return None
    return min(a[0], b[0]), max(a[1], b[1])


def _is_int(aval) -> bool:
    dtype = getattr(aval, "dtype", None)
    return dtype is not None and (np.issubdtype(dtype, np.integer) or dtype == np.bool_)


def _mul(a, b):
    products = [x * y for x in a for y in b]
    return min(products), max(products)


def _apply(name: str, params: dict, ins: list, out_aval) -> Interval:
    if not _is_int(out_aval):
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
    if name == "rem":  # |x rem y| < |y|, with the sign of x
        bound = max(abs(ins[1][0]), abs(ins[1][1])) - 1
        if bound < 0:
            return None
        return (-bound if ins[0][0] < 0 else 0), (bound if ins[0][1] > 0 else 0)
    if name == "div":  # |x // y| <= |x| for integer y != 0
        bound = max(abs(ins[0][0]), abs(ins[0][1]))
        return -bound, bound
    if name == "clamp":
        return max(ins[1][0], ins[0][0]), min(ins[1][1], ins[2][1])
    return None


def _run(jaxpr, consts: list[Interval], ins: list[Interval]) -> list[Interval]:
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
        for out in eqn.outvars:
            env[out] = _apply(eqn.primitive.name, eqn.params, args, out.aval) if len(
                eqn.outvars) == 1 else None
    return [read(v) for v in jaxpr.outvars]


def overflow(closed, carry_init: list, n_carry: int, other_inputs: list[Interval],
             steps: int) -> tuple[int, int] | None:
    """The first carried integer a loop may push out of int32, or None.

    Args:
      closed: the body's ``ClosedJaxpr``: inputs are the carry (``n_carry``
        values) then ``other_inputs``; its first ``n_carry`` outputs are the carry.
      carry_init: the carry's initial values (concrete ones are followed).
      n_carry: how many inputs and outputs are carried.
      other_inputs: intervals of the other inputs (the step index, say).
      steps: how many times the body runs.

    Returns:
      ``(position in the carry, a bound it may reach)``, or None.
    """
    jaxpr = closed.jaxpr
    if not any(_is_int(v.aval) for v in jaxpr.outvars[:n_carry]):
        return None
    consts = [known(c) for c in closed.consts]
    state = [known(v) for v in carry_init]
    if all(s is None for s in state):
        return None
    for _ in range(min(steps, STEPS)):
        out = _run(jaxpr, consts, state + list(other_inputs))[:n_carry]
        new = [_hull(s, o) for s, o in zip(state, out)]
        for i, (interval, var) in enumerate(zip(new, jaxpr.outvars)):
            if interval is not None and _is_int(var.aval) and var.aval.dtype != np.bool_ and (
                    interval[0] < _LO or interval[1] > _HI):
                return i, interval[1] if interval[1] > _HI else interval[0]
        if new == state:
            return None
        state = new
    return None


def describe(bound: int) -> str:
    return f"2**{math.log2(abs(bound)):.0f}" if abs(bound) > 2 ** 40 else f"{bound:,}"
