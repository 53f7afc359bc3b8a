"""Staged blocks see every effect on outside state, or refuse it, or run as Python.

A staged loop body runs its Python once while tracing, and a staged `if` runs
both branches': an effect reached through a helper, on a container of any
kind, or through a second name for a list must come out as Python has it (the
result of plain ``jax.jit``, or of Python where ``jax.jit`` cannot run the
program), or be refused with the user's line.
"""

from __future__ import annotations

import array
import collections
import itertools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from tests.helpers import primitives, runs_as_python

LOG: list = []


def _note():
    LOG.append(1)


class Tally:
    total = 0

    def __init__(self):
        self.seen = []

    def see(self, v):
        self.seen.append(v)


TALLY = Tally()


def _count_class():
    Tally.total += 1


def _reset():
    LOG.clear()
    TALLY.seen.clear()
    Tally.total = 0


def _converted_and_jit(fn, *args):
    """``jax.jit(convert(fn))(*args)`` and ``jax.jit(fn)(*args)``, outside state reset
    before each."""
    _reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = jax.jit(autograph.convert(fn))(*args)
    _reset()
    want = jax.jit(fn)(*args)
    return got, want


# -- effects reached through helpers ---------------------------------------------------

def helper_in_a_long_loop(x):
    for i in range(20):  # staged (more than 16 steps) unless the helper's effect is seen
        _note()
        x = x + 1.0
    return x, len(LOG)


def method_in_a_long_loop(x):
    for i in range(20):
        TALLY.see(i)
        x = x + 1.0
    return x, len(TALLY.seen)


def class_attribute_in_a_long_loop(x):
    for i in range(20):
        _count_class()
        x = x + 1.0
    return x, Tally.total


@pytest.mark.parametrize("fn", [helper_in_a_long_loop, method_in_a_long_loop,
                                class_attribute_in_a_long_loop])
def test_effects_of_helpers_in_a_long_loop_happen_once_per_iteration(fn):
    got, want = _converted_and_jit(fn, jnp.float32(1.0))
    assert int(want[1]) == 20
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


def helper_in_a_traced_while(x):
    while x < 20.0:
        _note()
        x = x + 1.0
    return x


def helper_on_both_branches(x):
    if x > 0:
        _note()
        y = x
    else:
        _note()
        y = -x
    return y


@pytest.mark.parametrize("fn, error", [(helper_in_a_traced_while, autograph.LoopStateError),
                                       (helper_on_both_branches, autograph.BranchError)])
def test_effects_of_helpers_a_staged_block_cannot_repeat_are_refused_and_undone(fn, error):
    _reset()
    assert float(autograph.convert(fn)(1.0)) == fn(1.0)  # Python values: Python runs it
    _reset()
    with pytest.raises(error, match="cannot change what lies outside") as info:
        jax.jit(autograph.convert(fn))(jnp.float32(1.0))
    assert "a `list` it reads, `LOG`" in str(info.value)
    assert "test_outer_state.py:" in str(info.value)
    assert LOG == []  # undone


# -- containers of every kind ----------------------------------------------------------

DEQUE: collections.deque = collections.deque()
SEEN: set = set()
COUNTS: collections.Counter = collections.Counter()
GROUPS: collections.defaultdict = collections.defaultdict(int)
ORDER: collections.OrderedDict = collections.OrderedDict(a=1, b=2)
RAW = bytearray()
NP_BUF = np.zeros(2)
DOUBLES = array.array("d", [0.0])


def _clear_containers():
    DEQUE.clear()
    SEEN.clear()
    COUNTS.clear()
    GROUPS.clear()
    ORDER.clear()
    ORDER.update(a=1, b=2)
    RAW.clear()
    NP_BUF[:] = 0.0
    DOUBLES[0] = 0.0


def _containers_now():
    return (list(DEQUE), set(SEEN), dict(COUNTS), dict(GROUPS), list(ORDER), bytes(RAW),
            NP_BUF.tolist(), DOUBLES.tolist())


def deque_appended(x):
    DEQUE.append(1)
    return len(DEQUE)


def set_added(x):
    SEEN.add(len(SEEN))
    return len(SEEN)


def counter_counted(x):
    COUNTS["k"] += 1
    return COUNTS["k"]


def defaultdict_grouped(x):
    GROUPS["k"] += 1
    return GROUPS["k"]


def ordereddict_moved(x):
    ORDER.move_to_end("a")
    return 1 if next(iter(ORDER)) == "a" else 0


def bytearray_extended(x):
    RAW.append(1)
    return len(RAW)


def ndarray_updated(x):
    NP_BUF[0] += 1
    return NP_BUF[0]


def array_updated(x):
    DOUBLES[0] += 1
    return DOUBLES[0]


CONTAINER_EFFECTS = [deque_appended, set_added, counter_counted, defaultdict_grouped,
                     ordereddict_moved, bytearray_extended, ndarray_updated, array_updated]


def _in_a_long_loop(effect):
    def looped(x):
        n = 0
        for i in range(20):
            n = effect(x)
            x = x + 1.0
        return x, n
    return looped


def _in_a_branch(effect):
    def branched(x):
        if x > 0:
            effect(x)
            y = x
        else:
            y = -x
        return y
    return branched


@pytest.mark.parametrize("effect", CONTAINER_EFFECTS)
def test_every_kind_of_container_a_long_loop_updates_is_updated_once_per_iteration(effect):
    fn = _in_a_long_loop(effect)
    _clear_containers()
    want = jax.jit(fn)(jnp.float32(1.0))
    want_state = _containers_now()
    _clear_containers()
    with runs_as_python("not proven"):
        got = jax.jit(autograph.convert(fn))(jnp.float32(1.0))
    assert _containers_now() == want_state
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


@pytest.mark.parametrize("effect", CONTAINER_EFFECTS)
def test_every_kind_of_container_a_branch_updates_is_refused_and_undone(effect):
    fn = _in_a_branch(effect)
    _clear_containers()
    before = _containers_now()
    with pytest.raises(autograph.BranchError, match="cannot change what lies outside"):
        jax.jit(autograph.convert(fn))(jnp.float32(1.0))
    assert _containers_now() == before


# -- aliases and nested containers ------------------------------------------------------

def nested_in_a_long_loop(x):
    a = [x]
    b = [a]
    for i in range(20):
        b[0][0] = b[0][0] + 1.0
    return a[0]


def two_names_in_a_long_loop(x):
    a = [x]
    b = a
    for i in range(20):
        a[0] = a[0] + 1.0
        b[0] = b[0] * 1.5
    return a[0] + b[0]


def two_names_in_a_dict(x):
    state = {"k": x}
    view = {"state": state}
    alias = state
    for i in range(20):
        view["state"]["k"] = view["state"]["k"] * 0.5 + 1.0
        alias["k"] = alias["k"] + 0.25
    return state["k"]


def swapped_each_step(x):
    a = [x]
    b = [x * 0.0]
    for i in range(20):
        a, b = b, a
        a[0] = a[0] + 1.0
    return a[0] * 10.0 + b[0]


def keeps_key_order(x):
    d = {"z": x, "a": x}
    for i in range(20):
        d["z"] = d["z"] + 1.0
    return d["z"] + d["a"] * 100.0 + (1000.0 if list(d) == ["z", "a"] else 0.0)


@pytest.mark.parametrize("fn", [nested_in_a_long_loop, two_names_in_a_long_loop,
                                two_names_in_a_dict, swapped_each_step, keeps_key_order])
def test_aliases_and_nested_lists_a_scan_updates_see_its_updates(fn):
    want = jax.jit(fn)(jnp.float32(1.0))
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*unrolled")  # still one scan
        jaxpr = jax.make_jaxpr(autograph.convert(fn))(jnp.float32(1.0))
    assert "scan" in primitives(jaxpr)
    np.testing.assert_allclose(jax.jit(autograph.convert(fn))(jnp.float32(1.0)), want,
                               rtol=1e-6)


def tied_weights(x):
    emb = {"w": x}
    params = {"enc": emb, "dec": emb}  # one dict in two places
    if x > 0:
        params["enc"]["w"] = params["enc"]["w"] * 2
    params["dec"]["w"] = params["dec"]["w"] + 1
    return params["enc"]["w"], params["dec"]["w"], emb["w"]


def one_list_twice(x):
    a = [x]
    pair = [a, a]
    if x > 0:
        pair[0][0] = pair[0][0] * 2
    pair[1][0] = pair[1][0] + 1
    return pair[0][0], pair[1][0], float(pair[0] is pair[1])


def one_list_twice_in_a_loop(xs):
    a = [jnp.float32(0.0)]
    pair = [a, a]
    for x in xs:
        if x > 3:
            pair[0][0] = pair[0][0] + x
        pair[1][0] = pair[1][0] + 1
    return pair[0][0], pair[1][0]


@pytest.mark.parametrize("fn", [tied_weights, one_list_twice])
def test_one_container_in_two_places_stays_one_through_a_staged_if(fn):
    # both places see the branch's update, and the update after it, on either branch
    for x in (3.0, -3.0):
        want = fn(np.float32(x))
        got = jax.jit(autograph.convert(fn))(jnp.float32(x))
        np.testing.assert_allclose(np.array(got, np.float32), np.array(want, np.float32))


def test_one_container_in_two_places_through_a_loop_of_staged_ifs():
    xs = np.arange(20, dtype=np.float32)
    want = one_list_twice_in_a_loop(xs)
    got = _quietly(jax.jit(autograph.convert(one_list_twice_in_a_loop)), jnp.asarray(xs))
    np.testing.assert_allclose(np.array(got), np.array(want))


def _quietly(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def read_through_a_closure(x):
    a = [x]
    b = a
    for i in range(20):
        b[0] = b[0] + a[0]  # `a` is read from the enclosing function, `b` carried
    return a[0]


def unshared_in_the_body(x):
    a = [x]
    b = a
    for i in range(20):
        b = [b[0] + 1.0]  # no longer the same list as `a`
        a[0] = a[0] + 2.0
    return a[0] + b[0]


@pytest.mark.parametrize("fn", [read_through_a_closure, unshared_in_the_body])
def test_aliases_a_scan_cannot_carry_run_as_python(fn):
    want = jax.jit(fn)(jnp.float32(1.0))
    with pytest.warns(UserWarning, match="runs unrolled"):
        got = jax.jit(autograph.convert(fn))(jnp.float32(1.0))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def two_names_in_a_traced_while(x, n):
    a = [x]
    b = a
    i = 0
    while i < n:
        a[0] = a[0] + 1.0
        b[0] = b[0] * 2.0
        i += 1
    return a[0] + b[0]


def unshared_in_a_traced_while(x, n):
    a = [x]
    b = a
    while b[0] < n:
        b = [b[0] + 1.0]
        a[0] = a[0] + 2.0
    return a[0] + b[0]


def test_two_names_for_one_list_in_a_traced_while():
    got = jax.jit(autograph.convert(two_names_in_a_traced_while))(1.0, jnp.int32(3))
    assert float(got) == two_names_in_a_traced_while(1.0, 3) == 44.0
    with pytest.raises(autograph.LoopStateError, match="must stay shared") as info:
        jax.jit(autograph.convert(unshared_in_a_traced_while))(1.0, jnp.float32(5.0))
    assert "`b` and `a` are one object before the loop" in str(info.value)


def alias_updated_in_a_branch(x):
    a = [x]
    b = a
    if x > 0:
        a[0] += 1.0
    return b[0]


def nested_updated_in_a_branch(x):
    a = [x]
    b = [a]
    if x > 0:
        b[0][0] = b[0][0] + 1.0
    return a[0]


def two_names_updated_in_a_branch(x):
    a = [x]
    b = a
    if x > 0:
        a[0] = a[0] + 1.0
        b[0] = b[0] * 2.0
    return a[0] + b[0]


def _fill(items, x):
    if x > 0:
        items[0] = items[0] + 1.0
    else:
        items[1] = items[1] - 1.0


def helper_fills_its_argument(x):
    items = [x, x]
    _fill(items, x)
    return items[0] * 10.0 + items[1]


def updated_where_the_other_branch_raises(x):
    d = {"k": x}
    alias = d
    if x > 0:
        d["k"] = x + 1.0
    else:
        raise ValueError("negative")
    return alias["k"] * 10.0 + d["k"]


@pytest.mark.parametrize("fn", [alias_updated_in_a_branch, nested_updated_in_a_branch,
                                two_names_updated_in_a_branch, helper_fills_its_argument])
@pytest.mark.parametrize("x", [2.0, -3.0])
def test_lists_a_traced_if_updates_in_place_are_seen_through_every_name(fn, x):
    # plain `jax.jit` cannot run a traced `if`: the meaning is Python's
    assert float(jax.jit(autograph.convert(fn))(jnp.float32(x))) == fn(x)


def test_lists_updated_where_the_other_branch_raises_are_seen_through_every_name():
    got = jax.jit(autograph.convert(updated_where_the_other_branch_raises))(jnp.float32(2.0))
    assert float(got) == updated_where_the_other_branch_raises(2.0) == 33.0


def _append_if_positive(items, x):
    if x > 0:
        items.append(x)


def appends_to_its_argument(x):
    items = [x]
    _append_if_positive(items, x)
    return len(items)


def test_a_list_one_branch_grows_in_place_is_refused():
    assert autograph.convert(appends_to_its_argument)(2.0) == 2
    with pytest.raises(autograph.BranchError, match="same structure") as info:
        jax.jit(autograph.convert(appends_to_its_argument))(jnp.float32(2.0))
    assert "`items` is a list of 2 on the true branch" in str(info.value)


def updated_on_one_branch_replaced_on_the_other(x):
    d = {"k": x}
    alias = d
    if x > 0:
        d["k"] = x + 1.0
    else:
        d = {"k": -x}
    return alias["k"] * 10.0 + d["k"]


def test_a_dict_updated_on_one_branch_and_replaced_on_the_other_is_refused():
    assert autograph.convert(updated_on_one_branch_replaced_on_the_other)(2.0) == 33.0
    with pytest.raises(autograph.BranchError, match="must not be replaced") as info:
        jax.jit(autograph.convert(updated_on_one_branch_replaced_on_the_other))(jnp.float32(2.0))
    assert "`d` is updated in place on the true branch" in str(info.value)
    assert "test_outer_state.py:" in str(info.value)


# -- a list read through one name in a branch that updates it through another ----------

def alias_update_then_return_in_traced_if(x):
    la = [x]
    lb = la
    if x > 0:
        lb[0] -= x
        return la[0], lb[0]
    return x, x


def alias_update_after_traced_return(x):
    la = [x]
    lb = la
    if x > 0:
        return x, x
    lb[0] += x
    return la[0], lb[0]


def nested_update_then_return_in_traced_if(x):
    la = [x]
    lb = [la]
    if x > 0:
        lb[0][0] = 1.0
        return la[0], lb[0][0]
    return x, x


def nested_read_through_a_closure_in_a_branch(x):
    la = [x]
    lb = [la]
    if x > 0:
        la[0] = la[0] * 2.0
        y = lb[0][0]
    else:
        y = -la[0]
    return y, la[0], lb[0][0]


def alias_in_an_elif_chain(x):
    la = [x, x]
    lb = la
    if x > 1:
        lb[0] = 3.0
        return la[0]
    elif x > 0:
        lb[1] = 2.0
        return la[1] + la[0]
    lb[0] += x
    return la[0] + lb[1]


def alias_then_return_in_a_long_loop(x):
    la = [x]
    lb = la
    for i in range(20):
        lb[0] += 1.0
        if x > 0:
            return la[0], lb[0]
    return x, x


@pytest.mark.parametrize("fn", [
    alias_update_then_return_in_traced_if, alias_update_after_traced_return,
    nested_update_then_return_in_traced_if, nested_read_through_a_closure_in_a_branch,
    alias_in_an_elif_chain, alias_then_return_in_a_long_loop])
@pytest.mark.parametrize("x", [2.0, 0.5, -3.0])
def test_a_branch_sees_its_own_update_of_a_list_through_every_name(fn, x):
    # each branch runs on the list itself, so a closure's name for it sees the update
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the long loop runs as Python
        got = jax.jit(autograph.convert(fn))(jnp.float32(x))
    want = fn(np.float32(x))
    assert len(jax.tree_util.tree_leaves(got)) == len(jax.tree_util.tree_leaves(want))
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-6)


def nested_alias_return_in_traced_range(x, n):
    la = [x]
    lb = [la]
    for i in range(n):
        la[0] = 1.0
        return lb[0][0]
    return x


def alias_return_in_traced_while(x, n):
    la = [x]
    lb = la
    i = 0
    while i < n:
        lb[0] -= 1.0
        if la[0] < 0:
            return la[0]
        i += 1
    return x


@pytest.mark.parametrize("fn, seen", [
    (nested_alias_return_in_traced_range, "`la`, a `list` it also reads as `lb[0]`"),
    (alias_return_in_traced_while, "`lb`, a `list` it also reads as `la`")])
def test_a_list_a_traced_loop_carries_and_reads_through_another_name_is_refused(fn, seen):
    # the loop carries the list as a copy: the other name would read it as it was
    assert autograph.convert(fn)(1.5, 3) == fn(1.5, 3)  # Python values: Python runs it
    with pytest.raises(autograph.LoopStateError, match="cannot change what lies outside") as info:
        jax.jit(autograph.convert(fn))(jnp.float32(1.5), jnp.int32(3))
    assert seen + " (one object)" in str(info.value)
    assert "test_outer_state.py:" in str(info.value)


# -- builtin iterators --------------------------------------------------------------------

def next_in_a_long_loop(x):
    it = itertools.cycle([0, 1, 1, 0, 0])
    mm = [[x, 0.5], [1.0, -x]]
    for i in range(19):
        mm[0][next(it)] = x + i
    return jnp.asarray(mm)


def zipped_iterators_in_a_long_loop(x):
    it = zip(itertools.count(), map(float, itertools.cycle([0.5, 1.5])))
    for i in range(20):
        k, w = next(it)
        x = x * 0.9 + w * k
    return x


def keys_drawn_in_a_long_loop(x):
    it = iter({f"k{j}": j for j in range(30)})
    s = x
    for i in range(20):
        s = s + len(next(it))
    return s


@pytest.mark.parametrize("fn", [next_in_a_long_loop, zipped_iterators_in_a_long_loop,
                                keys_drawn_in_a_long_loop])
def test_builtin_iterators_a_long_loop_draws_from_advance_once_per_iteration(fn):
    # a builtin iterator cannot be put back after a staging attempt: the loop runs as
    # Python, as under `jax.jit`
    want = jax.jit(fn)(jnp.float32(1.5))
    with runs_as_python("not proven"):
        got = jax.jit(autograph.convert(fn))(jnp.float32(1.5))
    np.testing.assert_allclose(got, want, rtol=1e-6)


def next_in_a_traced_range(x, n):
    it = itertools.cycle([0, 1, 1, 0, 0])
    mm = [[x, 0.5], [1.0, -x]]
    for i in range(n):
        mm[next(it)][next(it)] += 5.0
    return jnp.asarray(mm)


def next_in_a_traced_while(x, n):
    it = itertools.count()
    i = 0
    while i < n:
        x = x + next(it)
        i += 1
    return x


def next_in_a_traced_branch(x, n):
    it = itertools.cycle([1.0, 2.0])
    if x > 0:
        x = x + next(it)
    return x, next(it)


@pytest.mark.parametrize("fn, error, kind", [
    (next_in_a_traced_range, autograph.LoopStateError, "cycle"),
    (next_in_a_traced_while, autograph.LoopStateError, "count"),
    (next_in_a_traced_branch, autograph.BranchError, "cycle")])
def test_builtin_iterators_a_staged_block_draws_from_are_refused(fn, error, kind):
    want = fn(1.5, 3)
    assert jax.tree_util.tree_all(jax.tree_util.tree_map(
        lambda g, w: np.allclose(g, w), autograph.convert(fn)(1.5, 3), want))
    with pytest.raises(error, match="cannot change what lies outside") as info:
        jax.jit(autograph.convert(fn))(jnp.float32(1.5), jnp.int32(3))
    assert f"the position of a `{kind}` it draws from" in str(info.value)
    assert "test_outer_state.py:" in str(info.value)


def unused_iterator_in_a_traced_loop(x, n):
    it = map(float, range(10))
    i = 0
    while i < n:
        x = x * 2.0
        i += 1
    return x, next(it)


def test_a_builtin_iterator_a_staged_block_only_reaches_is_not_refused():
    got = jax.jit(autograph.convert(unused_iterator_in_a_traced_loop))(jnp.float32(1.5),
                                                                      jnp.int32(3))
    assert (float(got[0]), got[1]) == unused_iterator_in_a_traced_loop(1.5, 3) == (12.0, 0.0)


# -- what a staging attempt changed is undone before Python runs the loop ---------------

def carried_list_and_a_helper_effect(x):
    acc = [x]
    for i in range(20):
        acc[0] = acc[0] + 1.0
        _note()
    return acc[0], len(LOG)


def test_a_loop_run_as_python_after_staging_starts_from_its_own_lists_as_they_were():
    got, want = _converted_and_jit(carried_list_and_a_helper_effect, jnp.float32(1.0))
    assert float(want[0]) == 21.0
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)


# -- NumPy arrays a loop carries ----------------------------------------------------------

def numpy_array_updated_in_place(x):
    buf = np.zeros(2)
    view = buf
    for i in range(20):
        buf[0] += 1
        x = x + 1.0
    return view[0] + x


def numpy_array_rebound(x):
    acc = np.zeros(3, np.float32)
    for i in range(20):
        acc = acc + x
    return acc


def test_a_numpy_array_updated_in_place_by_a_long_loop_runs_as_python():
    want = jax.jit(numpy_array_updated_in_place)(jnp.float32(1.0))
    with runs_as_python("buf"):
        got = jax.jit(autograph.convert(numpy_array_updated_in_place))(jnp.float32(1.0))
    assert float(got) == float(want) == 41.0
    # a NumPy array the body rebinds is carried like any array: still one scan
    jaxpr = jax.make_jaxpr(autograph.convert(numpy_array_rebound))(jnp.float32(1.0))
    assert "scan" in primitives(jaxpr)


def draws_from_its_iterator_in_a_branch(xs, t):
    it = iter(xs)
    total = 0.0
    for x in it:
        if x > t:
            total = total + 100 * next(it)  # eagerly, only where the branch is taken
        total = total + x
    return total


def test_a_branch_that_draws_from_an_array_iterator_is_refused():
    # both branches are traced, so `next(it)` would run on every step: the generator
    # over the array yields at one place, and its variables show that it moved
    assert draws_from_its_iterator_in_a_branch(np.arange(6.0), 100.0) == 15.0
    with pytest.raises(autograph.BranchError, match="position of a `generator`"):
        jax.jit(autograph.convert(draws_from_its_iterator_in_a_branch))(
            jnp.arange(6.0), jnp.float32(100.0))


def adds_to_a_local_set(x):
    seen_values = set()
    if x > 0:
        seen_values.add(1)
    return x


def test_a_local_set_changed_in_a_staged_branch_is_named():
    with pytest.raises(autograph.errors.BranchError) as e:
        jax.jit(autograph.convert(adds_to_a_local_set))(jnp.float32(2.0))
    assert "`seen_values`" in str(e.value) and "<input" not in str(e.value)


class _Seen:
    def __init__(self):
        self.seen = 0

    def __call__(self, batch):
        self.seen = self.seen + batch.shape[0]  # a metric object, as Keras keeps one


_SEEN = _Seen()


def counts_batches_and_prints(xs):
    step = 0
    for x in xs:  # 17 batches: staging is tried, and given up for the attribute
        step += 1
        _SEEN(x)
        if step % 8 == 0:
            print("step", step, "seen", _SEEN.seen)
    return step


def test_a_staging_attempt_given_up_leaves_nothing_in_the_program(capfd):
    # the body's `print` sits under an `if` that the staged attempt traced: had its
    # scan been put in the program before the attempt was given up, it would print
    # "seen 2" on every call beside the unrolled loop's own prints
    _SEEN.seen = 0
    with pytest.warns(UserWarning, match="runs unrolled"):
        f = autograph.function(counts_batches_and_prints)
        assert int(f(jnp.ones((17, 2)))) == 17
    jax.effects_barrier()
    assert capfd.readouterr().out == "step 8 seen 16\nstep 16 seen 32\n"  # while tracing
    assert int(f(jnp.ones((17, 2)))) == 17
    jax.effects_barrier()
    assert capfd.readouterr().out == ""  # as under `jax.jit`: nothing at run time
    with pytest.warns(UserWarning, match="runs unrolled"):
        jaxpr = jax.make_jaxpr(autograph.convert(counts_batches_and_prints))(jnp.ones((17, 2)))
    assert "scan" not in primitives(jaxpr) and "debug_callback" not in primitives(jaxpr)
