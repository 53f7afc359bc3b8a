"""Python's ``math`` module on traced values: what each function computes on a float.

Converted code calls ``math.sin(x)`` (or ``sin(x)`` after ``from math import
sin``) through ``converted_call``, which finds the operator here by the
callee's identity, so a name the user rebinds keeps its own meaning. On
Python values each operator is the ``math`` function itself; with a traced
argument it computes the same number as an array::

    math.sin(x)          ->  jnp.sin(x)
    math.floor(x)        ->  an integer (int32, or int64 with 64-bit types), as
                             Python's ``math.floor`` gives an int
    math.sqrt(x)         ->  jnp.sqrt(x); where Python raises ``ValueError:
                             math domain error`` (x < 0), the program raises it
                             as it runs
    math.isclose(a, b)   ->  Python's test, ``abs(a - b) <= max(rel_tol *
                             max(abs(a), abs(b)), abs_tol)``, as a traced bool

A function not listed here (``math.factorial``, ``math.gcd``, ``math.comb``
and the other integer functions, ``frexp``/``modf`` and their tuples) is
Python's own, and a traced argument gets JAX's error, as under ``jax.jit``.
The constants (``math.pi``, ``math.e``, ``math.inf``) are Python floats and
need nothing.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import jax.numpy as jnp
import jax.scipy.special as jsp

from autograph import errors

from ..carried import state as st
from ..core.values import Tracer, fail_at_run_time
from . import builtins


def _traced(*args) -> bool:
    return any(isinstance(a, Tracer) for a in args)


def _scalar(x) -> None:
    """Python's ``math`` takes one number: an array with dimensions is its
    ``TypeError`` (``BuiltinError``, naming the line), never an elementwise
    result Python would not give."""
    if jnp.ndim(x) != 0:
        raise errors.BuiltinError(
            "a `math` function takes one number, not an array",
            observed=f"an array of shape {jnp.shape(x)} (Python's `math` raises `TypeError: "
                     f"only length-1 arrays can be converted to Python scalars`)",
            fix="use the `jnp` function of the same name, which works elementwise")


def _float(x):
    """``x`` as Python's ``math`` reads it: a float (a weakly typed float array)."""
    _scalar(x)
    x = jnp.asarray(x)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        x = st.convert(x, jnp.result_type(float), True)
    return x


def _domain(python: Callable, jax_fn: Callable, ok: Callable | None = None) -> Callable:
    """``python`` on Python values, ``jax_fn`` on traced ones; where ``ok`` of the
    (non-NaN) argument is false, the program raises Python's ``ValueError`` as it
    runs."""
    def op(x, /):
        if not isinstance(x, Tracer):
            return python(x)
        x = _float(x)
        if ok is not None:
            fail_at_run_time(jnp.isnan(x) | ok(x), ValueError("math domain error"))
        return jax_fn(x)
    op.__name__ = python.__name__
    op.__doc__ = f"``math.{python.__name__}``; ``{jax_fn.__name__}`` of a traced value."
    return op


def _integer(python: Callable, jax_fn: Callable) -> Callable:
    """``math.floor``/``ceil``/``trunc``: an integer, as Python's give one: the
    rounded float made one by ``int`` (``runtime/python/builtins``), so NaN, infinities and
    a number past the integer dtype raise as the program runs, as ``int`` does."""
    def op(x, /):
        if not isinstance(x, Tracer):
            return python(x)
        _scalar(x)
        x = jnp.asarray(x)
        if not jnp.issubdtype(x.dtype, jnp.inexact):
            return x  # an integer already
        return builtins.int_(jax_fn(x))
    op.__name__ = python.__name__
    op.__doc__ = f"``math.{python.__name__}``; an integer of a traced value."
    return op


def _binary(python: Callable, jax_fn: Callable) -> Callable:
    def op(x, y, /):
        if not _traced(x, y):
            return python(x, y)
        return jax_fn(_float(x), _float(y))
    op.__name__ = python.__name__
    op.__doc__ = f"``math.{python.__name__}``; ``{jax_fn.__name__}`` of traced values."
    return op


def _predicate(python: Callable, jax_fn: Callable) -> Callable:
    def op(x, /):
        if not isinstance(x, Tracer):
            return python(x)
        return jax_fn(_float(x))
    op.__name__ = python.__name__
    op.__doc__ = f"``math.{python.__name__}``; a traced bool of a traced value."
    return op


def log(x: Any, base: Any = None) -> Any:
    """``math.log(x[, base])``; ``jnp.log`` of a traced value (``x > 0`` or Python's
    ``ValueError`` as the program runs)."""
    if not _traced(x, base):
        return math.log(x) if base is None else math.log(x, base)
    x = _float(x)
    fail_at_run_time(jnp.isnan(x) | (x > 0), ValueError("math domain error"))
    out = jnp.log(x)
    if base is not None:
        base = _float(base)
        fail_at_run_time(jnp.isnan(base) | (base > 0), ValueError("math domain error"))
        out = out / jnp.log(base)
    return out


def hypot(*coordinates: Any) -> Any:
    """``math.hypot(*coordinates)``; the Euclidean norm of traced values."""
    if not _traced(*coordinates):
        return math.hypot(*coordinates)
    return jnp.sqrt(sum(jnp.square(_float(c)) for c in coordinates))


def isclose(a: Any, b: Any, *, rel_tol: Any = 1e-09, abs_tol: Any = 0.0) -> Any:
    """``math.isclose``; Python's test on traced values, as a traced bool."""
    if not _traced(a, b, rel_tol, abs_tol):
        return math.isclose(a, b, rel_tol=rel_tol, abs_tol=abs_tol)
    a, b = _float(a), _float(b)
    # equal (infinities too), or both finite and within the tolerance; NaN never
    within = jnp.abs(a - b) <= jnp.maximum(rel_tol * jnp.maximum(jnp.abs(a), jnp.abs(b)),
                                           abs_tol)
    return (a == b) | (within & ~(jnp.isinf(a) | jnp.isinf(b)))


def pow_(x: Any, y: Any, /) -> Any:
    """``math.pow``; a float power of traced values."""
    if not _traced(x, y):
        return math.pow(x, y)
    return jnp.power(_float(x), _float(y))


# math function -> its operator, for `converted_call` (by identity)
TABLE: dict[Callable, Callable] = {
    math.sqrt: _domain(math.sqrt, jnp.sqrt, lambda x: x >= 0),
    math.exp: _domain(math.exp, jnp.exp),
    math.expm1: _domain(math.expm1, jnp.expm1),
    math.log2: _domain(math.log2, jnp.log2, lambda x: x > 0),
    math.log10: _domain(math.log10, jnp.log10, lambda x: x > 0),
    math.log1p: _domain(math.log1p, jnp.log1p, lambda x: x > -1),
    math.sin: _domain(math.sin, jnp.sin, lambda x: ~jnp.isinf(x)),
    math.cos: _domain(math.cos, jnp.cos, lambda x: ~jnp.isinf(x)),
    math.tan: _domain(math.tan, jnp.tan, lambda x: ~jnp.isinf(x)),
    math.asin: _domain(math.asin, jnp.arcsin, lambda x: jnp.abs(x) <= 1),
    math.acos: _domain(math.acos, jnp.arccos, lambda x: jnp.abs(x) <= 1),
    math.atan: _domain(math.atan, jnp.arctan),
    math.sinh: _domain(math.sinh, jnp.sinh),
    math.cosh: _domain(math.cosh, jnp.cosh),
    math.tanh: _domain(math.tanh, jnp.tanh),
    math.asinh: _domain(math.asinh, jnp.arcsinh),
    math.acosh: _domain(math.acosh, jnp.arccosh, lambda x: x >= 1),
    math.atanh: _domain(math.atanh, jnp.arctanh, lambda x: jnp.abs(x) < 1),
    math.fabs: _domain(math.fabs, jnp.abs),
    math.degrees: _domain(math.degrees, jnp.degrees),
    math.radians: _domain(math.radians, jnp.radians),
    math.erf: _domain(math.erf, jsp.erf),
    math.erfc: _domain(math.erfc, jsp.erfc),
    math.lgamma: _domain(math.lgamma, jsp.gammaln),
    math.floor: _integer(math.floor, jnp.floor),
    math.ceil: _integer(math.ceil, jnp.ceil),
    math.trunc: _integer(math.trunc, jnp.trunc),
    math.isnan: _predicate(math.isnan, jnp.isnan),
    math.isinf: _predicate(math.isinf, jnp.isinf),
    math.isfinite: _predicate(math.isfinite, jnp.isfinite),
    math.atan2: _binary(math.atan2, jnp.arctan2),
    math.copysign: _binary(math.copysign, jnp.copysign),
    math.fmod: _binary(math.fmod, jnp.fmod),
    math.log: log,
    math.hypot: hypot,
    math.isclose: isclose,
    math.pow: pow_,
}
if hasattr(math, "exp2"):  # Python 3.11+
    TABLE[math.exp2] = _domain(math.exp2, jnp.exp2)
if hasattr(math, "cbrt"):
    TABLE[math.cbrt] = _domain(math.cbrt, jnp.cbrt)

__all__ = ["TABLE", "log", "hypot", "isclose", "pow_"]
