"""What a converted `for` loop iterates: static-length and traced-length sequences.

``range_``, ``enumerate_``, ``zip_`` and ``reversed_`` stand in for the
built-ins in converted code. Over Python values they return the built-ins'
own results; over ranges of Python ints and arrays they return sequences of
static length that ``for_stmt`` can stage as one ``lax.scan``; with a traced
``range`` bound, sequences of traced length for a ``lax.while_loop``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from autograph import errors

from ..carried import state as st
from ..core import handlers
from ..core.values import Tracer, is_array

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1


class Seq:
    """A sequence of static length ``n`` that a ``lax.scan`` can walk.

    ``xs`` holds the arrays scanned along their leading axis (or None);
    ``element(k, x)`` makes the item at index ``k`` (a Python int or a traced
    int) from ``x``, the slice of ``xs`` at ``k``.
    """

    n: int
    xs: Any = None  # a pytree of arrays

    def element(self, k, x):
        raise NotImplementedError

    def python_slice(self, k):
        return None if self.xs is None else jax.tree_util.tree_map(lambda a: a[k], self.xs)

    def fits_int32(self, k: int) -> bool:
        """Whether the Python ints of the items from index ``k`` on fit int32, as they
        must to be computed from a staged loop's int32 step index."""
        return True

    # Outside a `for` (`list(enumerate_(range(3)))`, a built-in reached as a
    # value), the sequence is the built-in's own result.
    def __iter__(self):
        return (self.element(k, self.python_slice(k)) for k in range(self.n))

    def __len__(self) -> int:
        return self.n


class _RangeSeq(Seq):
    def __init__(self, r: range):
        self.r, self.n = r, len(r)

    def element(self, k, x):
        if isinstance(k, int):
            return self.r[k]
        return st.convert(self.r.start + k * self.r.step, np.int32, True)

    def fits_int32(self, k: int) -> bool:
        rest = self.r[k:]
        return not rest or all(_INT32_MIN <= v <= _INT32_MAX for v in (rest[0], rest[-1]))


class _ArraySeq(Seq):
    def __init__(self, a):
        n = np.shape(a)[0]
        # a symbolic dimension (under jax.export) stays symbolic: scan handles it
        self.xs, self.n = a, n if not isinstance(n, (int, np.integer)) else int(n)

    def element(self, k, x):
        return x


class _EnumerateSeq(Seq):
    def __init__(self, inner: Seq, start: int):
        self.inner, self.start, self.n, self.xs = inner, start, inner.n, inner.xs

    def element(self, k, x):
        i = self.start + k if isinstance(k, int) else st.convert(self.start + k, np.int32, True)
        return (i, self.inner.element(k, x))

    def fits_int32(self, k: int) -> bool:
        if type(self.n) is not int:  # a symbolic length (`jax.export`)
            return True
        ends = (self.start + k, self.start + self.n - 1)
        return (all(_INT32_MIN <= v <= _INT32_MAX for v in ends)
                and self.inner.fits_int32(k))


class _ZipSeq(Seq):
    def __init__(self, seqs):
        self.seqs = seqs
        self.n = min(s.n for s in seqs)
        self.xs = tuple(None if s.xs is None else
                        jax.tree_util.tree_map(lambda a: a[:self.n], s.xs) for s in seqs)

    def element(self, k, x):
        return tuple(s.element(k, xi) for s, xi in zip(self.seqs, x))

    def fits_int32(self, k: int) -> bool:
        return all(s.fits_int32(k) for s in self.seqs)


class TracedSeq:
    """A sequence whose length is traced: staged as one ``lax.while_loop``.

    ``length`` is a traced int; ``element(k)`` makes the item at the traced
    index ``k``.
    """

    def __init__(self, length, element):
        self.length, self.element = length, element


class TracedRange(TracedSeq):
    """``range(start, stop, step)`` where a bound is traced."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step
        # Python's `range` counts in Python ints: here in int32 (int64 with 64-bit
        # types on), whatever the bounds' own dtype (`range(uint8(250), uint8(5))` is
        # empty, where uint8 arithmetic would wrap around)
        index = jax.dtypes.canonicalize_dtype(np.int64)
        unsigned = jax.dtypes.canonicalize_dtype(np.uint64)
        # (a Python int bound stays one: a literal of the staged body, whose values
        # the checks of its ints follow)
        first, last = (b if type(b) is int else jnp.asarray(b).astype(index)
                       for b in (start, stop))
        low, high = (first, last) if step > 0 else (last, first)
        count = _range_count(low, high, abs(step), index, unsigned)
        super().__init__(count, lambda k: st.convert(first + jnp.asarray(k, index) * step, index,
                                                     True))


@functools.partial(jax.jit, static_argnums=(2, 3, 4))
def _range_count(low, high, step: int, index, unsigned):
    """How many items ``range`` has from ``low`` to ``high`` by ``step`` (> 0). The span
    is exact in the unsigned dtype however far apart the bounds lie, and wraps there
    on purpose where ``high <= low``: a function of its own, so the checks that a
    staged body's own integers are Python's (``intervals.python_mismatch``) leave it."""
    span = (jnp.asarray(high, index).astype(unsigned) - jnp.asarray(low, index).astype(unsigned))
    return jnp.where(high > low, (span - 1) // step + 1, 0).astype(index)


def _dynamic_element(seq, k):
    """Item ``k`` (traced) of a static or traced sequence."""
    if isinstance(seq, TracedSeq):
        return seq.element(k)
    x = None if seq.xs is None else jax.tree_util.tree_map(lambda a: jnp.asarray(a)[k], seq.xs)
    return seq.element(k, x)


def as_seq(it):
    """``it`` as a ``Seq`` a ``lax.scan`` can walk (a range or an array), else None."""
    if isinstance(it, Seq):
        return it
    if isinstance(it, range):
        return _RangeSeq(it)
    if is_array(it) and np.ndim(it) >= 1:
        return _ArraySeq(it)
    return None


def _symbolic(value) -> bool:
    """Whether ``value`` is a symbolic dimension of ``jax.export``."""
    if type(value) is int or isinstance(value, Tracer) or not hasattr(value, "__jax_array__"):
        return False
    from jax import export
    return export.is_symbolic_dim(value)


def range_(*args: Any) -> range | TracedRange:
    """``range(*args)``; a traced bound gives a range that ``for_stmt`` stages.

    The semantics are given by this Python implementation::

        return range(*args)

    Args:
      *args: ``stop``, ``start, stop`` or ``start, stop, step``, as for
        ``range``; ``start`` and ``stop`` may be traced ints.

    Returns:
      Python's ``range`` when no argument is traced, else a ``TracedRange``.

    Raises:
      ConditionError: ``step`` is traced.
    """
    if any(_symbolic(a) for a in args):
        # a dimension `jax.export` leaves symbolic (`x.shape[0]` of a `None` dimension):
        # known when the program runs, as a traced bound is
        args = tuple(jnp.asarray(a) if _symbolic(a) else a for a in args)
    if not any(isinstance(a, Tracer) for a in args):
        return range(*args)  # Python's own semantics and errors (`range(2.5)`)
    if handlers.catching(jax.errors.TracerIntegerConversionError):
        # an `except` around it catches what `range` of a tracer raises under `jax.jit`
        handlers.warn_caught("a bound of `range`", "TracerIntegerConversionError")
        return range(*args)
    step: Any  # a Python int, or a traced value (rejected below)
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    elif len(args) == 2:
        (start, stop), step = args, 1
    else:
        start, stop, step = args
    if isinstance(step, Tracer):
        raise errors.ConditionError(
            "the step of a `range` must be a Python int",
            observed="the step is traced", fix="use a Python int step")
    for bound in (start, stop):
        if not isinstance(bound, Tracer):
            continue
        dtype = bound.dtype
        if not (jnp.issubdtype(dtype, jnp.integer) or dtype == jnp.bool_):
            raise errors.ConditionError(  # Python: "'float' object cannot be interpreted ..."
                "the bounds of a `range` must be integers",
                observed=f"a bound is a traced {dtype} array, which `range` cannot count to",
                fix="pass an integer (e.g. `jnp.int32(n)`), or convert it with "
                    "`n.astype(jnp.int32)` (or `jnp.floor`/`jnp.ceil` first) where a "
                    "fraction is meant to be cut")
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    return TracedRange(start, stop, step)


def enumerate_(iterable: Iterable[Any], start: int = 0) -> Iterable[tuple[Any, Any]] | TracedSeq:
    """``enumerate``; stays stageable when ``iterable`` is a range or an array.

    The semantics are given by this Python implementation::

        return enumerate(iterable, start)

    Args:
      iterable: what to enumerate.
      start: the first index.

    Returns:
      Python's ``enumerate`` object, or, over a range or an array (also of
      traced length), a sequence ``for_stmt`` can stage.
    """
    if isinstance(iterable, TracedSeq):
        return TracedSeq(iterable.length, lambda k: (
            st.convert(start + k, np.int32, True), iterable.element(k)))
    seq = as_seq(iterable)
    return enumerate(iterable, start) if seq is None else _EnumerateSeq(seq, start)


def zip_(*iterables: Iterable[Any], strict: bool = False) -> Iterable[tuple] | TracedSeq:
    """``zip``; stays stageable when every iterable is a range or an array.

    The semantics are given by this Python implementation::

        return zip(*iterables, strict=strict)

    Args:
      *iterables: what to zip.
      strict: as for ``zip``: iterables of different lengths raise ``ValueError``
        (for ranges and arrays of static lengths, before the loop runs).

    Returns:
      Python's ``zip`` object, or, when every iterable is a range or an array
      (also of traced length), a sequence ``for_stmt`` can stage.
    """
    if strict:
        seqs = [as_seq(it) for it in iterables]
        if not all(s is not None and type(s.n) is int for s in seqs):
            return zip(*iterables, strict=True)  # Python checks as it goes
        if len({s.n for s in seqs}) > 1:
            return zip(*iterables, strict=True)  # raises as Python does, where it does
    seqs = [it if isinstance(it, TracedSeq) else as_seq(it) for it in iterables]
    if any(isinstance(s, TracedSeq) for s in seqs) and all(s is not None for s in seqs):
        lengths = [s.length if isinstance(s, TracedSeq) else s.n for s in seqs]
        length = functools.reduce(jnp.minimum, lengths)
        return TracedSeq(length, lambda k: tuple(_dynamic_element(s, k) for s in seqs))
    if iterables and all(s is not None for s in seqs):
        return _ZipSeq(seqs)
    return zip(*iterables)


def reversed_(seq: Any) -> Any:
    """``reversed``; stays stageable for ranges and arrays.

    The semantics are given by this Python implementation::

        return reversed(seq)

    Args:
      seq: what to reverse.

    Returns:
      A reversed ``range`` (also of traced bounds) or array, else Python's
      ``reversed`` iterator.
    """
    if isinstance(seq, TracedRange):
        last = seq.start + (seq.length - 1) * seq.step
        return TracedRange(last, last - seq.length * seq.step, -seq.step)
    if isinstance(seq, range):
        return seq[::-1]
    if is_array(seq) and np.ndim(seq) >= 1:
        return seq[::-1]
    return reversed(seq)
