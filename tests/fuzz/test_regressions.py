"""Minimal programs from failures the differential fuzzer found (tests/fuzz/test_fuzz.py).

Each is checked by the fuzzer's own harness (plain Python vs the converted
function, eagerly on NumPy values and under ``jax.jit``) and by a direct
assertion of the expected behaviour. A test here fails for as long as the
library has the bug; none is marked xfail or skip.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from tests.fuzz import harness

X_POS = harness.make_inputs(1.5, [1.0, 2.0, 3.0], 2)
X_NEG = harness.make_inputs(-1.5, [1.0, 2.0, 3.0], 2)
X_ZERO = harness.make_inputs(0.0, [1.0, -2.0, 0.5], 3)


def _check(fn, *input_sets):
    outcome = harness.check_function(fn, input_sets)
    assert not outcome.failed, outcome.report()
    return outcome


# ---------------------------------------------------------------------------
# `and`/`or` on traced numbers returned a bool instead of an operand.
# Fuzzer minimal program: `return x and x`; jit gave True where Python gives x.
# (Fixed in 3ea4487.)


def and_or_values(x, v, n):
    a = x - x
    return (a or x), (x and v.sum()), (a and x)


def test_and_or_on_traced_numbers_return_an_operand():
    _check(and_or_values, X_NEG, X_ZERO, X_POS)
    got = jax.jit(autograph.convert(and_or_values))(*X_NEG)
    np.testing.assert_allclose(np.asarray(got[0]), -1.5)
    np.testing.assert_allclose(np.asarray(got[1]), 6.0)
    np.testing.assert_allclose(np.asarray(got[2]), 0.0)


# ---------------------------------------------------------------------------
# An array function given an unassigned variable raised JAX's internal
# "Triggering __jax_array__() during abstractification is no longer supported"
# ValueError instead of UndefinedVariableError. (Fixed in 3ea4487.)


def mean_of_unassigned(x, v, n):
    if x > 0:
        c = v
    return jnp.mean(c)


def test_array_function_of_unassigned_variable_raises_undefined_variable_error():
    _check(mean_of_unassigned, X_NEG, X_POS)
    with pytest.raises(autograph.UndefinedVariableError):
        autograph.convert(mean_of_unassigned)(*X_NEG)


# ---------------------------------------------------------------------------
# Copying a variable that no path assigned (`b = c`) does not raise in
# converted code: Python raises UnboundLocalError at the read, the converted
# function (eager, on NumPy values) returns normally. Fuzzer minimal program
# (seed 1002):
#
#     x -= x
#     i1 = x
#     while i1 < 2 and x - x > x + x:   # false: the body never runs
#         c = x
#         i1 += 1
#     b = c                               # UnboundLocalError in Python
#
# Observed: convert(f)(x, v, n) returns; expected: UnboundLocalError
# (UndefinedVariableError).


def copy_of_unassigned_after_loop(x, v, n):
    i = 0
    while i < 2 and x > 0:
        c = x
        i += 1
    b = c
    return x


def copy_of_unassigned_after_if(x, v, n):
    if x > 0:
        c = x
    b = c
    return x


@pytest.mark.parametrize("fn", [copy_of_unassigned_after_loop, copy_of_unassigned_after_if])
def test_copy_of_unassigned_variable_raises(fn):
    with pytest.raises(UnboundLocalError):
        fn(*X_NEG)
    with pytest.raises(UnboundLocalError):  # UndefinedVariableError is one
        autograph.convert(fn)(*X_NEG)
    _check(fn, X_NEG, X_POS)


# ---------------------------------------------------------------------------
# The value of a variable that may be unassigned after a loop (`k`) flagged
# the `if`'s other output, the return value, which came out as the internal
# MaybeUndefined('k') instead of x: the `if` took `k` (an input, not an
# output) as the return value's incoming value.


def maybe_undefined_returned(x, v, n):
    i = 0
    while i < n:
        k = x
        i += 1
    if n > 1:
        return x
    for e in range(2):
        k = e
    return k


def test_output_not_read_by_the_branches_is_not_flagged():
    _check(maybe_undefined_returned, X_NEG, X_POS, X_ZERO)
    got = jax.jit(autograph.convert(maybe_undefined_returned))(*X_POS)
    np.testing.assert_allclose(np.asarray(got), 1.5)


# ---------------------------------------------------------------------------
# A list updated through one name in a traced branch and read through another
# (an alias the branch reads through a closure, or a list holding it) next to a
# lowered `return`: the other name read the list as it was before the `if`
# (x > 0: (1.5, 0.0) where Python gives (0.0, 0.0)), and the update was not
# written back where the branch did not hand the list on.


def alias_update_then_return_in_traced_if(x, v, n):
    la = [x]
    lb = la
    if x > 0:
        lb[0] -= x
        return la[0], lb[0]
    return x, x


def alias_after_traced_return(x, v, n):
    la = [x]
    lb = la
    if x > 0:
        return x, x
    lb[0] += x
    return la[0], lb[0]


def nested_alias_return_in_traced_range(x, v, n):
    la = [x]
    lb = [la]
    for i in range(n):
        la[0] = 1.0
        return lb[0][0]
    return x


def test_alias_of_a_list_next_to_a_lowered_return():
    _check(alias_update_then_return_in_traced_if, X_NEG, X_POS)
    got = jax.jit(autograph.convert(alias_update_then_return_in_traced_if))(*X_POS)
    np.testing.assert_allclose(np.asarray(got), [0.0, 0.0])
    _check(alias_after_traced_return, X_NEG, X_POS)
    got = jax.jit(autograph.convert(alias_after_traced_return))(*X_NEG)
    np.testing.assert_allclose(np.asarray(got), [-3.0, -3.0])
    # a traced loop carries `la` as a copy: the read through `lb[0]` is refused
    _check(nested_alias_return_in_traced_range, X_NEG, X_POS)
    with pytest.raises(autograph.LoopStateError, match="also reads as `lb"):
        jax.jit(autograph.convert(nested_alias_return_in_traced_range))(*X_POS)


# ---------------------------------------------------------------------------
# A dict whose keys a traced `if` (or a loop over a traced range) puts in
# another order came out in the old order: keys [119, 98] where Python gives
# [98, 119] for x > 0. The order after the block depends on the condition (or
# the trip count), so the block is refused.


def dict_reorder_in_traced_if(x, v, n):
    d = {"w": x, "b": 0.5}
    if x > 0:
        d["w"] = d.pop("w")
    return jnp.stack(list(d.values())), [ord(k) for k in d]


def dict_reorder_in_traced_range(x, v, n):
    d = {"w": x, "b": 0.5}
    for i in range(n):
        d["w"] = d.pop("w")
    return jnp.stack(list(d.values())), [ord(k) for k in d]


def dict_reorder_on_both_branches(x, v, n):
    d = {"w": x, "b": 0.5}
    if x > 0:
        d["w"] = d.pop("w") + 1.0
    else:
        d["w"] = d.pop("w") - 1.0
    return jnp.stack(list(d.values())), [ord(k) for k in d]


def test_dict_key_order_set_in_a_staged_block():
    _check(dict_reorder_in_traced_if, X_NEG, X_POS)
    with pytest.raises(autograph.BranchError, match="keys in one order"):
        jax.jit(autograph.convert(dict_reorder_in_traced_if))(*X_POS)
    _check(dict_reorder_in_traced_range, X_NEG, X_POS)
    with pytest.raises(autograph.LoopStateError, match="order of its keys"):
        jax.jit(autograph.convert(dict_reorder_in_traced_range))(*X_POS)
    _check(dict_reorder_on_both_branches, X_NEG, X_POS)
    _, keys = jax.jit(autograph.convert(dict_reorder_on_both_branches))(*X_POS)
    assert [int(k) for k in keys] == [98, 119]


# ---------------------------------------------------------------------------
# `next()` on an iterator whose position the watch of outside state could not
# see (`itertools.cycle`): a staged loop over a static range drew from it once
# while tracing, so only `mm[0][0]` was written (plain `jax.jit` gives
# mm[0] = [19.5, 18.5]); over a traced range the result was wrong instead of
# a LoopStateError.


def next_in_staged_range(x, v, n):
    it = itertools.cycle([0, 1, 1, 0, 0])
    mm = [[x, 0.5], [1.0, -x]]
    for i in range(19):
        mm[0][next(it)] = x + i
    return jnp.asarray(mm)


def next_in_traced_range(x, v, n):
    it = itertools.cycle([0, 1, 1, 0, 0])
    mm = [[x, 0.5], [1.0, -x]]
    for i in range(n):
        mm[next(it)][next(it)] += 5.0
    return jnp.asarray(mm)


def test_builtin_iterator_drawn_from_in_a_staged_loop():
    _check(next_in_staged_range, X_NEG, X_POS)
    got = jax.jit(autograph.convert(next_in_staged_range))(*X_POS)
    np.testing.assert_allclose(np.asarray(got)[0], [19.5, 18.5])
    _check(next_in_traced_range, X_NEG, X_POS)
    with pytest.raises(autograph.LoopStateError, match="position of a `cycle`"):
        jax.jit(autograph.convert(next_in_traced_range))(*X_POS)
