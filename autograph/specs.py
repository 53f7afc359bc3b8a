"""``TensorSpec``: the shape and dtype of an argument, with ``None`` for any size."""

from __future__ import annotations

import itertools
import operator
import re
from typing import Sequence

import jax
import jax.export
import numpy as np

# Every `None` of every spec is its own symbolic dimension, and every name one that
# all specs naming it share, all in one scope, so that specs can be used together
# (a trace mixes dimensions of all args).
_SCOPE = jax.export.SymbolicScope()
_NAMES = itertools.count()


_AUTOMATIC = re.compile(r"d\d+$")  # the names `None`s get


def _shape(shape) -> tuple:
    """``shape`` as a tuple of sizes (ints of 0 or more), ``None``s and names; a clear
    error for anything else."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(f"TensorSpec takes a shape as a sequence of sizes and `None`s, such as "
                        f"`[None, 3]`; got {shape!r}")
    out: list[int | str | None] = []
    for d in shape:
        if d is None:
            out.append(None)
            continue
        if isinstance(d, str):
            if not d.isidentifier() or _AUTOMATIC.match(d):
                raise ValueError(f"TensorSpec: the shape {shape!r} names a size {d!r}; a name "
                                 f"is an identifier (`\"batch\"`), not of the form `d<n>`, "
                                 f"which unnamed sizes take")
            out.append(d)
            continue
        try:
            n = operator.index(d)
        except TypeError:
            raise TypeError(f"TensorSpec: a size of the shape {shape!r} is {d!r}; sizes are "
                            f"ints of 0 or more, `None` for any size, or a name for a size "
                            f"other specs share") from None
        if n < 0:
            raise ValueError(f"TensorSpec: the shape {shape!r} has the size {n}; sizes are 0 "
                             f"or more, or `None` for any size")
        out.append(n)
    return tuple(out)


class TensorSpec(jax.ShapeDtypeStruct):
    """Describes an array argument: a shape (``None`` for any size) and a dtype.

    A ``TensorSpec`` is a ``jax.ShapeDtypeStruct``, so it can be passed to
    ``jax.eval_shape``, ``jax.jit(f).lower`` and ``jax.export``. Each ``None``
    becomes a symbolic dimension there, distinct from every other spec's;
    :meth:`matches` checks a concrete value against the spec.

    Args:
      shape: a sequence of ints or ``None``.
      dtype: anything ``numpy.dtype`` accepts (``jnp.float32``, ``"int32"``).
      name: an optional name, shown in error messages.

    Examples:
      >>> import jax.numpy as jnp
      >>> spec = TensorSpec([None, 3], jnp.float32)
      >>> spec
      TensorSpec(shape=(None, 3), dtype=float32)
      >>> spec.matches(jnp.zeros((5, 3)))
      True
    """

    def __init__(self, shape: Sequence[int | str | None], dtype, name: str | None = None):
        declared = _shape(shape)
        unknown = [d for d in declared if not isinstance(d, int)]
        actual: tuple  # symbolic sizes (jax.export dimension expressions) where unknown
        if unknown:
            names = ",".join(d if isinstance(d, str) else f"d{next(_NAMES)}" for d in unknown)
            it = iter(jax.export.symbolic_shape(names, scope=_SCOPE))
            actual = tuple(d if isinstance(d, int) else next(it) for d in declared)
        else:
            actual = declared
        super().__init__(actual, np.dtype(dtype))
        self.declared_shape = declared
        self.name = name

    @property
    def symbolic(self) -> bool:
        """Whether a size of the shape is any size (``None`` or a name)."""
        return any(not isinstance(d, int) for d in self.declared_shape)

    def matches(self, value) -> bool:
        """Whether ``value`` (an array or another spec) fits this spec."""
        return not self.mismatch(value)

    def mismatch(self, value) -> str | None:
        """Why ``value`` does not fit the spec, or ``None`` if it does."""
        shape = tuple(getattr(value, "declared_shape", None) or np.shape(value))
        dtype = getattr(value, "dtype", None)  # (a traced value has one; never made an array)
        dtype = np.dtype(dtype if dtype is not None else np.asarray(value).dtype)
        if dtype != self.dtype:
            return f"dtype {dtype.name} instead of {self.dtype.name}"
        if len(shape) != len(self.declared_shape) or any(
                isinstance(d, int) and d != s for d, s in zip(self.declared_shape, shape)):
            return f"shape {shape} instead of {self.declared_shape}"
        return None

    def __repr__(self) -> str:
        name = f", name={self.name!r}" if self.name else ""
        return f"TensorSpec(shape={self.declared_shape}, dtype={self.dtype.name}{name})"

    def __eq__(self, other):
        return (isinstance(other, TensorSpec) and other.declared_shape == self.declared_shape
                and other.dtype == self.dtype)

    def __hash__(self):
        return hash((self.declared_shape, self.dtype))
