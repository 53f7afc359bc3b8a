"""`while` and `for` loops: Python loops, ``lax.while_loop`` or ``lax.scan``.

A loop runs as a plain Python loop for as long as nothing it touches is
traced. The moment its condition, its state or the items it iterates are
traced, the rest of the loop is staged:

============================================  ==============================
what is iterated                              staged as
============================================  ==============================
``while`` with a traced condition             ``lax.while_loop``
``while`` + ``set_loop_options(maximum_iterations=N)``  masked ``lax.scan`` of N
``range`` of Python ints, arrays (leading     ``lax.scan`` over the static
axis), ``enumerate``/``zip``/``reversed`` of  trip count (masked when the
those                                         loop has ``break``/``return``)
``range`` with traced bounds                  ``lax.while_loop``
lists, tuples, dicts, other iterables         a Python loop (unrolled)
============================================  ==============================

Carried state follows the rules in :mod:`runtime.state`; a variable whose
type, shape or structure changes across an iteration raises
``LoopStateError`` naming it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from autograph import errors
from . import state as st
from .conditionals import if_stmt
from .conditions import condition
from .values import (Tracer, UndefinedReturn, describe, is_array, is_traced,
                     is_undefined)

# ----------------------------------------------------------------------------
# Iterables


class _Seq:
    """A sequence of static length ``n`` that a ``lax.scan`` can walk.

    ``xs`` holds the arrays scanned along their leading axis (or None);
    ``element(k, x)`` makes the item at index ``k`` (a Python int or a traced
    int) from ``x``, the slice of ``xs`` at ``k``.
    """

    n: int
    xs = None

    def element(self, k, x):
        raise NotImplementedError

    def python_slice(self, k):
        return None if self.xs is None else jax.tree_util.tree_map(lambda a: a[k], self.xs)


class _RangeSeq(_Seq):
    def __init__(self, r: range):
        self.r, self.n = r, len(r)

    def element(self, k, x):
        if isinstance(k, int):
            return self.r[k]
        return st.convert(self.r.start + k * self.r.step, np.int32, True)


class _ArraySeq(_Seq):
    def __init__(self, a):
        self.xs, self.n = a, int(np.shape(a)[0])

    def element(self, k, x):
        return x


class _EnumerateSeq(_Seq):
    def __init__(self, inner: _Seq, start: int):
        self.inner, self.start, self.n, self.xs = inner, start, inner.n, inner.xs

    def element(self, k, x):
        i = self.start + k if isinstance(k, int) else st.convert(self.start + k, np.int32, True)
        return (i, self.inner.element(k, x))


class _ZipSeq(_Seq):
    def __init__(self, seqs):
        self.seqs = seqs
        self.n = min(s.n for s in seqs)
        self.xs = tuple(None if s.xs is None else
                        jax.tree_util.tree_map(lambda a: a[:self.n], s.xs) for s in seqs)

    def element(self, k, x):
        return tuple(s.element(k, xi) for s, xi in zip(self.seqs, x))


class _TracedSeq:
    """A sequence whose length is traced: staged as one ``lax.while_loop``.

    ``length`` is a traced int; ``element(k)`` makes the item at the traced
    index ``k``.
    """

    def __init__(self, length, element):
        self.length, self.element = length, element


class TracedRange(_TracedSeq):
    """``range(start, stop, step)`` where a bound is traced."""

    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step
        toward = 1 if step > 0 else -1
        length = jnp.maximum((jnp.asarray(stop) - start + step - toward) // step, 0)
        super().__init__(length, lambda k: st.convert(start + k * step, np.int32, True))


def _dynamic_element(seq, k):
    """Item ``k`` (traced) of a static or traced sequence."""
    if isinstance(seq, _TracedSeq):
        return seq.element(k)
    x = None if seq.xs is None else jax.tree_util.tree_map(lambda a: jnp.asarray(a)[k], seq.xs)
    return seq.element(k, x)


def _as_seq(it):
    if isinstance(it, _Seq):
        return it
    if isinstance(it, range):
        return _RangeSeq(it)
    if is_array(it) and np.ndim(it) >= 1:
        return _ArraySeq(it)
    return None


def range_(*args):
    """``range(*args)``; a traced bound gives a range that ``for_stmt`` stages."""
    if not any(isinstance(a, Tracer) for a in args):
        return range(*args)  # Python's own semantics and errors (`range(2.5)`)
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
    if step == 0:
        raise ValueError("range() arg 3 must not be zero")
    return TracedRange(start, stop, step)


def enumerate_(iterable, start=0):
    """``enumerate``; stays stageable when ``iterable`` is a range or an array."""
    if isinstance(iterable, _TracedSeq):
        return _TracedSeq(iterable.length, lambda k: (
            st.convert(start + k, np.int32, True), iterable.element(k)))
    seq = _as_seq(iterable)
    return enumerate(iterable, start) if seq is None else _EnumerateSeq(seq, start)


def zip_(*iterables):
    """``zip``; stays stageable when every iterable is a range or an array."""
    seqs = [it if isinstance(it, _TracedSeq) else _as_seq(it) for it in iterables]
    if any(isinstance(s, _TracedSeq) for s in seqs) and all(s is not None for s in seqs):
        lengths = [s.length if isinstance(s, _TracedSeq) else s.n for s in seqs]
        length = functools.reduce(jnp.minimum, lengths)
        return _TracedSeq(length, lambda k: tuple(_dynamic_element(s, k) for s in seqs))
    if iterables and all(s is not None for s in seqs):
        return _ZipSeq(seqs)
    return zip(*iterables)


def reversed_(seq):
    """``reversed``; stays stageable for ranges and arrays."""
    if isinstance(seq, TracedRange):
        last = seq.start + (seq.length - 1) * seq.step
        return TracedRange(last, last - seq.length * seq.step, -seq.step)
    if isinstance(seq, range):
        return seq[::-1]
    if is_array(seq) and np.ndim(seq) >= 1:
        return seq[::-1]
    return reversed(seq)


# ----------------------------------------------------------------------------
# Carried state


class _Carry:
    """Splits loop state into arrays to carry and Python objects held fixed."""

    def __init__(self, values, names, loop: str):
        self.names, self.loop = names, loop
        self.flat = [st.flatten(v) for v in values]
        self.treedefs = [t for t, _ in self.flat]
        self.static = []   # per name: list of (index, value) of fixed leaves
        self.arrays = []
        for _, leaves in self.flat:
            fixed = []
            for i, leaf in enumerate(leaves):
                if st.is_carryable(leaf):
                    self.arrays.append(st.as_array(leaf))
                else:
                    fixed.append((i, leaf))
            self.static.append(fixed)
        self.values = values
        self.strengthen = set()  # carried leaves the body makes strongly typed
        self.snapshot = st.object_snapshot(values)

    def unflatten(self, arrays, final: bool = False):
        if final and self.strengthen:
            arrays = [st.convert(a, a.dtype, False) if i in self.strengthen else a
                      for i, a in enumerate(arrays)]
        it = iter(arrays)
        out = []
        for (treedef, leaves), fixed in zip(self.flat, self.static):
            fixed_at = dict(fixed)
            new = [fixed_at[i] if i in fixed_at else next(it) for i in range(len(leaves))]
            out.append(jax.tree_util.tree_unflatten(treedef, new))
        return tuple(out)

    def check(self, out_values, in_arrays):
        """Flattens a body's output, checking it against the carried input."""
        hit = st.mutated_attribute(self.snapshot)
        if hit is not None:
            obj, attr = hit
            raise errors.LoopStateError(
                f"an attribute cannot be assigned inside a staged `{self.loop}` loop",
                observed=f"attribute `{attr}` of a `{type(obj).__name__}` object is assigned in "
                         f"the loop body, which runs once while tracing; the object would keep "
                         f"a traced value", variable=attr,
                fix=f"carry the value in a local variable (`v = obj.{attr}` before the loop, "
                    f"`obj.{attr} = v` after it)")
        result = []
        it = iter(in_arrays)
        for name, value, (treedef, leaves), fixed in zip(
                self.names, out_values, self.flat, self.static):
            out_treedef, out_leaves = st.flatten(value)
            before = jax.tree_util.tree_unflatten(treedef, leaves)
            if out_treedef != treedef:
                detail = st.difference(before, value, name)
                raise errors.LoopStateError(
                    f"a variable carried by a staged `{self.loop}` loop must keep its structure",
                    observed=f"`{name}` is {describe(before) if not is_undefined(before) else 'unassigned'} "
                             f"before the loop but {describe(value)} after one iteration"
                             + (f" ({detail})" if detail else "")
                             + ("; only a list that is itself a loop variable can grow, by "
                                "`append`" if detail and " items vs " in detail else ""),
                    variable=name,
                    fix=f"give `{name}` its final structure (list length, keys, None-ness) "
                        f"before the loop")
            fixed_at = dict(fixed)
            for i, leaf in enumerate(out_leaves):
                if i in fixed_at:
                    if not st.same_static(leaf, fixed_at[i]):
                        raise errors.LoopStateError(
                            f"a Python value carried by a staged `{self.loop}` loop cannot change",
                            observed=f"`{name}` is {describe(fixed_at[i])} before the loop but "
                                     f"{describe(leaf)} after one iteration",
                            variable=name,
                            fix=f"make `{name}` an array, or compute it outside the loop")
                    continue
                x_in = next(it)
                checked = self._check_leaf(name, x_in, leaf)
                if getattr(x_in, "weak_type", False) and not getattr(checked, "weak_type", True):
                    self.strengthen.add(len(result))  # Python: `best = 0.0` becomes `best = v`
                result.append(checked)
        return result

    def _check_leaf(self, name, x_in, leaf):
        if not st.is_carryable(leaf):
            raise errors.LoopStateError(
                f"a variable carried by a staged `{self.loop}` loop must stay an array",
                observed=f"`{name}` is {describe(x_in)} before the loop but {describe(leaf)} "
                         f"after one iteration", variable=name,
                fix=f"keep `{name}` an array in the loop body")
        shape_in, dtype_in, weak_in = st.aval_of(x_in)
        shape_out, dtype_out, weak_out = st.aval_of(leaf)
        if shape_in != shape_out:
            raise errors.LoopStateError(
                f"a variable carried by a staged `{self.loop}` loop must keep its shape",
                observed=f"`{name}` has shape {shape_in} before the loop, but shape {shape_out} "
                         f"after one iteration", variable=name,
                fix=f"give `{name}` its final shape before the loop (e.g. preallocate with "
                    f"`jnp.zeros` and write with `.at[i].set(...)`)")
        if dtype_in != dtype_out:
            if weak_out and not weak_in and st.promote(
                    (shape_in, dtype_in, False), (shape_out, dtype_out, True))[0] == dtype_in:
                return st.convert(st.as_array(leaf), dtype_in, False)  # `x = 0` on a float32 carry
            if not weak_in:
                raise errors.LoopStateError(
                    f"a variable carried by a staged `{self.loop}` loop must keep its dtype",
                    observed=f"`{name}` is {dtype_in.name} before the loop but {dtype_out.name} "
                             f"after one iteration; the eager result's dtype would depend on "
                             f"the number of iterations",
                    variable=name,
                    fix=f"cast `{name}` before the loop, e.g. `{name} = jnp.asarray({name}, "
                        f"jnp.{dtype_out.name})`")
        return st.as_array(leaf)


def _stabilize(carry: _Carry, step_out_avals):
    """Promotes weakly typed carried arrays to the dtypes one iteration produces."""
    changed = False
    new = []
    for x, aval in zip(carry.arrays, step_out_avals):
        shape, dtype, weak = st.aval_of(x)
        if dtype != aval.dtype and weak:
            dtype2, weak2 = st.promote((shape, dtype, weak), (aval.shape, aval.dtype, aval.weak_type))
            new.append(st.convert(x, dtype2, weak2))
            changed = True
        else:
            new.append(x)
    carry.arrays = new
    return changed


def _undefined_names(values, names):
    return [(n, v) for n, v in zip(names, values) if is_undefined(v)]


def _loop_undefined_error(name, loop, reason):
    return errors.LoopStateError(
        f"a variable first assigned inside a staged `{loop}` loop must be defined before it",
        observed=f"`{name}` is first assigned in the loop body, and {reason}",
        variable=name,
        fix=f"initialize `{name}` before the loop (e.g. `{name} = jnp.zeros(...)`)")


def _infer_undefined(step, values, names, loop):
    """Gives unassigned loop variables zero values of the type one iteration makes."""
    undefined = {n for n, _ in _undefined_names(values, names)}
    carry = _Carry(values, names, loop)

    def probe(arrays):
        out = step(carry.unflatten(arrays))
        found = {}
        for n, v in zip(names, out):
            if n not in undefined:
                continue
            for leaf in jax.tree_util.tree_leaves(v, is_leaf=is_undefined):
                if not st.is_carryable(leaf) and not is_undefined(leaf):
                    label = "the return value" if isinstance(values[names.index(n)],
                                                             UndefinedReturn) else f"`{n}`"
                    raise errors.LoopStateError(
                        f"a staged `{loop}` loop can only produce arrays",
                        observed=f"{label} is {describe(leaf)}, set inside a loop whose "
                                 f"iterations depend on arrays", variable=n,
                        fix="return or assign an array (or compute the Python value outside "
                            "the loop)")
            found[n] = v
        return found

    try:
        shapes = jax.eval_shape(probe, carry.arrays)
    except TypeError as e:
        if "Undefined" in str(e):
            name = sorted(undefined)[0]
            raise _loop_undefined_error(name, loop, "one iteration does not always assign it") from None
        raise
    new = []
    for n, v in zip(names, values):
        if n in undefined:
            new.append(jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), shapes[n]))
        else:
            new.append(v)
    return tuple(new)


class _TrackedList(list):
    """A list given to a staged loop body; remembers whether the body read it.

    Items appended in a staged loop become the scan's outputs: inside the
    body the list holds only the items from before the loop, so a body that
    reads the list it appends to would see stale items.
    """

    read = False

    def _reading(name):
        method = getattr(list, name)

        def wrapper(self, *args):
            self.read = True
            return method(self, *args)
        wrapper.__name__ = name
        return wrapper

    for _name in ("__getitem__", "__iter__", "__len__", "__contains__", "__reversed__",
                  "index", "count", "copy", "__eq__"):
        locals()[_name] = _reading(_name)
    del _name, _reading


# ----------------------------------------------------------------------------
# while


def while_stmt(test, body, init, *, names, opts=None):
    """Runs a converted `while` loop, in Python or as ``lax.while_loop``.

    The semantics are given by this Python implementation::

        state = init
        while test(*state):
            state = body(*state)
        return state

    As soon as ``test(*state)`` is traced, the rest of the loop is staged with
    ``lax.while_loop``: Python numbers in the state become (weakly typed)
    arrays, and each variable must keep its shape, dtype and structure, or a
    ``LoopStateError`` names it. With ``opts={'maximum_iterations': N}`` the
    staged loop is a ``lax.scan`` of ``N`` masked steps instead, which reverse
    mode ``jax.grad`` can differentiate.
    """
    state = tuple(init)
    names = tuple(names)
    while True:
        c = condition(test(*state), "a `while` loop")
        if is_traced(c):
            return _staged_while(test, body, state, names, opts or {})
        if not c:
            return state
        state = tuple(body(*state))


def _prepare(values, names, loop, step, may_skip: bool):
    """Resolves unassigned variables before staging a loop."""
    undefined = _undefined_names(values, names)
    for n, v in undefined:
        if not isinstance(v, UndefinedReturn) and may_skip:
            raise _loop_undefined_error(
                n, loop, "the number of iterations is only known at run time, so the loop "
                         "may run zero times")
    if undefined:
        values = _infer_undefined(step, values, names, loop)
    for n, v in zip(names, values):
        if isinstance(v, list):
            # A list carried by the loop keeps its length; appending needs a static trip count.
            pass
    return values


def _staged_while(test, body, state, names, opts, loop="while"):
    maximum = opts.get("maximum_iterations")
    state = _prepare(state, names, loop, lambda s: tuple(body(*s)), may_skip=True)
    carry = _Carry(state, names, loop)
    lengths = {n: len(v) for n, v in zip(names, state) if isinstance(v, list)}

    def body_arrays(arrays):
        out = tuple(body(*carry.unflatten(arrays)))
        for n, v in zip(names, out):
            if n in lengths and isinstance(v, list) and len(v) > lengths[n]:
                raise errors.LoopStateError(
                    "a list cannot grow in a loop whose trip count is only known at run time",
                    observed=f"`{n}` grows from {lengths[n]} to {len(v)} items in one iteration",
                    variable=n,
                    fix=f"preallocate an array (`jnp.zeros((max_len, ...))`) and write item i "
                        f"with `.at[i].set(...)`, or loop over a static `range`")
        return carry.check(out, arrays)

    def cond_arrays(arrays):
        c = condition(test(*carry.unflatten(arrays)), f"a `{loop}` loop")
        return jnp.asarray(c, dtype=bool)

    if maximum is None:
        final = lax.while_loop(cond_arrays, body_arrays, carry.arrays)
        return carry.unflatten(final, final=True)

    if _stabilize(carry, jax.eval_shape(body_arrays, carry.arrays)):
        _stabilize(carry, jax.eval_shape(body_arrays, carry.arrays))

    def step(arrays, _):
        keep = cond_arrays(arrays)
        return lax.cond(keep, body_arrays, lambda a: list(a), arrays), None

    final, _ = lax.scan(step, carry.arrays, None, length=int(maximum))
    return carry.unflatten(final, final=True)


# ----------------------------------------------------------------------------
# for


def for_stmt(iterable, body, init, *, names, extra_test=None):
    """Runs a converted `for` loop, in Python or staged.

    The semantics are given by this Python implementation::

        state = init
        for item in iterable:
            if extra_test is not None and not extra_test(*state):
                break
            state = body(item, *state)
        return state

    ``extra_test`` comes from ``break`` and ``return`` in the body. Ranges of
    Python ints and arrays (also through ``enumerate_``, ``zip_`` and
    ``reversed_``) have a static trip count: once the state or the items are
    traced, the remaining iterations run as one ``lax.scan`` (masked by
    ``extra_test``), so compile time does not grow with the trip count and
    reverse-mode ``jax.grad`` works. A ``range`` with traced bounds runs as
    ``lax.while_loop``. Any other iterable is iterated in Python.
    """
    state = tuple(init)
    names = tuple(names)
    if isinstance(iterable, _TracedSeq):
        return _traced_seq_for(iterable, body, state, names, extra_test)
    seq = _as_seq(iterable)
    if seq is None:
        return _python_for(iterable, body, state, names, extra_test)
    k = 0
    while k < seq.n:
        if extra_test is not None:
            c = condition(extra_test(*state), "a `for` loop's exit test")
            if is_traced(c):
                return _scan_for(seq, k, body, state, names, extra_test)
            if not c:
                return state
        x = seq.python_slice(k)
        if st_any_traced(state) or (x is not None and st_any_traced(x)):
            try:
                return _scan_for(seq, k, body, state, names, extra_test)
            except _NEEDS_PYTHON_INDEX as e:
                if seq.n - k > UNROLL_LIMIT:
                    raise
                _warn_unrolled(e)
                return _python_for((seq.element(j, seq.python_slice(j)) for j in range(k, seq.n)),
                                   body, state, names, extra_test)
        state = tuple(body(seq.element(k, x), *state))
        k += 1
    return state


# A body that needs its loop index as a Python value (`layers[i]`, `range(i)`)
# cannot be traced with a traced index; such loops run unrolled instead.
_NEEDS_PYTHON_INDEX = (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError)
UNROLL_LIMIT = 1000


def _warn_unrolled(error) -> None:
    import warnings
    loc = errors.current_location()
    where = f"{loc.short}: " if loc is not None else ""
    reason = str(error).strip().splitlines()[0]
    warnings.warn(
        f"{where}this `for` loop runs unrolled in Python, because its body uses the loop "
        f"index or item as a Python value ({reason}); iterate over the Python list "
        f"itself, or index arrays with the traced index, to stage it as one `lax.scan`",
        stacklevel=3)


def st_any_traced(tree) -> bool:
    return any(isinstance(leaf, Tracer)
               for leaf in jax.tree_util.tree_leaves(tree, is_leaf=is_undefined))


def _python_for(iterable, body, state, names, extra_test):
    for item in iterable:
        if extra_test is not None:
            c = condition(extra_test(*state), "a `for` loop's exit test")
            if is_traced(c):
                state = if_stmt(c, lambda *s, item=item: body(item, *s), None, state,
                                names=names)
                continue
            if not c:
                break
        state = tuple(body(item, *state))
    return state


def _scan_for(seq: _Seq, k0: int, body, state, names, extra_test):
    n = seq.n - k0
    if n <= 0:
        return state
    xs = None if seq.xs is None else jax.tree_util.tree_map(lambda a: jnp.asarray(a)[k0:seq.n], seq.xs)
    ks = jnp.arange(k0, seq.n, dtype=np.int32)
    x0 = None if xs is None else jax.tree_util.tree_map(lambda a: a[0], xs)
    state = _prepare(state, names, "for", lambda s: tuple(body(seq.element(ks[0], x0), *s)),
                     may_skip=False)
    carry = _Carry(state, names, "for")
    lists = {i: len(v) for i, v in enumerate(state) if isinstance(v, list)}
    appended_count = {}

    def one(arrays, k, x):
        values = list(carry.unflatten(arrays))
        before = {i: list(values[i]) for i in lists}  # the body may append in place
        for i in lists:
            values[i] = _TrackedList(values[i])
        out = list(body(seq.element(k, x), *values))
        grown = []
        for i, base_len in lists.items():
            v = out[i]
            if isinstance(v, list) and list.__len__(v) > base_len:
                if getattr(values[i], "read", False):
                    raise errors.LoopStateError(
                        "a list appended to in a staged `for` loop cannot be read in the loop",
                        observed=f"the loop body reads `{names[i]}` and appends to it; staged, "
                                 f"the appended items exist only after the loop",
                        variable=names[i],
                        fix=f"carry the item you need (e.g. `last = {names[i]}[-1]` before the "
                            f"loop, updated in the body) and append to `{names[i]}` only")
                v = list(list.__iter__(v))
                if not all(a is b for a, b in zip(v[:base_len], before[i])):
                    raise errors.LoopStateError(
                        "a list grown in a staged `for` loop may only be appended to",
                        observed=f"`{names[i]}` changes its items and grows in one iteration",
                        variable=names[i], fix="only append to the list inside the loop")
                grown.append(v[base_len:])
                appended_count[i] = len(v) - base_len
                out[i] = before[i]
            elif isinstance(v, _TrackedList):
                out[i] = list(list.__iter__(v))
                grown.append([])
            else:
                grown.append([])
        return carry.check(tuple(out), arrays), grown

    if extra_test is None:
        def step(arrays, kx):
            k, x = kx
            return one(arrays, k, x)
    else:
        def step(arrays, kx):
            k, x = kx
            keep = condition(extra_test(*carry.unflatten(arrays)), "a `for` loop's exit test")
            if not is_traced(keep):
                keep = jnp.asarray(keep, bool)
            new, grown = one(arrays, k, x)
            if any(grown):
                name = names[next(i for i, g in zip(lists, grown) if g)]
                raise errors.LoopStateError(
                    "a list cannot grow in a loop that may stop early",
                    observed=f"`{name}` is appended to in a loop with `break` or `return`, so "
                             f"its final length is only known at run time",
                    variable=name,
                    fix="preallocate an array and write item i with `.at[i].set(...)`, "
                        "keeping a count of the items written")
            new = [jnp.where(keep, a, b) for a, b in zip(new, arrays)]
            return new, grown
        # masked steps select between the new and the old state, so the
        # state's dtypes must already be those one iteration produces
        probe = lambda arrays: one(arrays, ks[0], x0)[0]
        if _stabilize(carry, jax.eval_shape(probe, carry.arrays)):
            _stabilize(carry, jax.eval_shape(probe, carry.arrays))

    try:
        final, grown = lax.scan(step, carry.arrays, (ks, xs))
    except TypeError as e:
        if "carry" not in str(e):
            raise
        _stabilize(carry, jax.eval_shape(lambda a: one(a, ks[0], x0)[0], carry.arrays))
        final, grown = lax.scan(step, carry.arrays, (ks, xs))
    values = list(carry.unflatten(final, final=True))
    for (i, base_len), items in zip(lists.items(), grown):
        if items:
            m = appended_count[i]
            extra = [jax.tree_util.tree_map(lambda a, k=k: a[k], items[j])
                     for k in range(n) for j in range(m)]
            values[i] = list(values[i]) + extra
    return tuple(values)


def _traced_seq_for(seq: _TracedSeq, body, state, names, extra_test):
    def test(k, *s):
        more = k < seq.length
        if extra_test is not None:
            from .logical import and_
            return and_(more, lambda: extra_test(*s))
        return more

    def loop_body(k, *s):
        return (k + 1,) + tuple(body(seq.element(k), *s))

    out = _staged_while(test, loop_body, (jnp.int32(0),) + tuple(state),
                        ("<loop index>",) + tuple(names), {}, loop="for")
    return tuple(out[1:])
