"""`runtime.carry` alone: the state a staged loop carries.

``Carry`` splits a loop's state (any pytree) into the arrays the loop carries
(arrays and Python numbers) and the Python objects it holds fixed; it rebuilds
the state from the arrays, and ``check`` refuses a body's output whose
structure, shape, dtype or fixed Python values differ, with ``LoopStateError``
(``KeyOrderError`` for a dict whose keys change order) naming the variable.
Also: ``stabilize``, ``prepare_state``/``infer_undefined`` and ``TrackedList``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.core import ShapedArray

import autograph
from autograph.runtime.carried.carry import (
    Carry,
    KeyOrderError,
    TrackedList,
    infer_undefined,
    prepare_state,
    stabilize,
)
from autograph.runtime.core.constructs import Construct
from autograph.runtime.core.values import Undefined

NAMES = ("x", "d", "n", "l")


def _state():
    return (jnp.arange(3.0), {"b": 1, "a": (2.0, "mode")}, None, [jnp.int32(4), "tag"])


def _same_tree(a, b):
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb
    for x, y in zip(la, lb):
        if isinstance(x, str) or isinstance(y, str):
            assert x == y
        else:
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


# ---------------------------------------------------------------------------
# Splitting and rebuilding


def test_carried_arrays_and_fixed_python_objects():
    c = Carry(_state(), NAMES, Construct.WHILE)
    # arrays and Python numbers are carried, as arrays; strings and None are held fixed
    assert len(c.arrays) == 4
    assert all(isinstance(a, jax.Array) for a in c.arrays)
    assert sorted(c.owners) == ["d", "d", "l", "x"]
    assert sorted(v for s in c.static for _, v in s) == ["mode", "tag"]
    # a Python int is carried as a weakly typed int32, as JAX would make it
    (one,) = [a for a, s in zip(c.arrays, c.starts) if type(s) is int]
    assert one.dtype == jnp.int32 and one.weak_type and int(one) == 1
    (two,) = [a for a, s in zip(c.arrays, c.starts) if type(s) is float]
    assert jnp.issubdtype(two.dtype, jnp.floating) and two.weak_type and float(two) == 2.0


def test_unflatten_round_trip():
    state = _state()
    c = Carry(state, NAMES, Construct.WHILE)
    out = c.unflatten(c.arrays)
    assert isinstance(out, tuple) and len(out) == 4
    _same_tree(out, state)
    assert list(out[1]) == ["b", "a"]  # a dict keeps its keys' order
    assert out[1]["a"][1] == "mode" and out[2] is None and out[3][1] == "tag"


def test_unflatten_puts_new_arrays_in_place():
    state = _state()
    c = Carry(state, NAMES, Construct.WHILE)
    new = [a + 10 for a in c.arrays]
    out = c.unflatten(new)
    np.testing.assert_array_equal(np.asarray(out[0]), np.arange(3.0) + 10)
    assert int(out[1]["b"]) == 11 and float(out[1]["a"][0]) == 12.0
    assert int(out[3][0]) == 14
    assert out[1]["a"][1] == "mode"  # fixed leaves are the originals


def test_unflatten_of_empty_and_flat_states():
    c = Carry((), (), Construct.FOR)
    assert c.arrays == [] and c.unflatten([]) == ()
    c = Carry((1.5, "s"), ("a", "b"), Construct.FOR)
    assert len(c.arrays) == 1
    assert c.unflatten([jnp.float32(3.0)]) == (3.0, "s")


def test_check_accepts_the_same_structure():
    state = _state()
    c = Carry(state, NAMES, Construct.WHILE)
    out = c.check(state, c.arrays)
    assert len(out) == len(c.arrays)
    for a, b in zip(out, c.arrays):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        assert a.dtype == b.dtype


# ---------------------------------------------------------------------------
# check refuses a changed state


def _changed(**changes):
    x, d, n, lst = _state()
    values = {"x": x, "d": d, "n": n, "l": lst}
    values.update(changes)
    return tuple(values[k] for k in NAMES)


@pytest.mark.parametrize("out, variable, words", [
    (_changed(x=jnp.arange(3)), "x", "dtype"),
    (_changed(x=jnp.arange(4.0)), "x", "shape"),
    (_changed(x=jnp.arange(3.0)[None]), "x", "shape"),
    (_changed(n=3), "n", "structure"),
    (_changed(l=[jnp.int32(4), "tag", 1]), "l", "structure"),
    (_changed(d={"b": 1}), "d", "structure"),
    (_changed(d={"b": 1, "a": (2.0, "other")}), "d", "cannot change"),
    (_changed(d={"b": "s", "a": (2.0, "mode")}), "d", "stay an array"),
    (_changed(l=[jnp.float32(4), "tag"]), "l", "dtype"),
    (_changed(d={"b": 1.5, "a": (2.0, "mode")}), "d", "keep its value"),
])
def test_check_refuses_a_changed_state(out, variable, words):
    c = Carry(_state(), NAMES, Construct.WHILE)
    with pytest.raises(autograph.LoopStateError) as info:
        c.check(out, c.arrays)
    assert info.value.variable == variable
    assert words in str(info.value)
    assert "`while`" in str(info.value)  # the loop it names


def test_check_refuses_reordered_keys():
    c = Carry(_state(), NAMES, Construct.FOR)
    out = _changed(d={"a": (2.0, "mode"), "b": 1})
    with pytest.raises(KeyOrderError) as info:
        c.check(out, c.arrays)
    assert issubclass(KeyOrderError, autograph.LoopStateError)
    assert info.value.variable == "d"


def test_check_refuses_an_assigned_attribute():
    class Box:
        pass

    box = Box()
    box.v = 1
    c = Carry((box, 0.0), ("box", "s"), Construct.WHILE)
    box.v = 2  # as a body run while tracing would
    with pytest.raises(autograph.LoopStateError) as info:
        c.check((box, 1.0), c.arrays)
    assert info.value.variable == "v"


def test_check_casts_a_python_number_to_the_carried_dtype():
    # `x = 0` on a float32 carry: the number takes the carry's dtype
    c = Carry((jnp.float32(2.0),), ("x",), Construct.WHILE)
    (out,) = c.check((0,), c.arrays)
    assert out.dtype == jnp.float32 and not out.weak_type and float(out) == 0.0


def test_check_lets_a_python_number_become_a_strong_array():
    # `best = 0.0` before the loop, `best = v` in it: the carry ends strongly typed
    c = Carry((0.0,), ("best",), Construct.WHILE)
    (out,) = c.check((jnp.float32(1.5),), c.arrays)
    assert float(out) == 1.5
    assert c.strengthen == {0}
    (final,) = c.unflatten([jnp.asarray(1.5, dtype=jnp.float32)], final=True)
    assert not final.weak_type


def test_check_refuses_a_narrowing_of_a_python_number():
    # -1 made uint8 would wrap around when staged
    c = Carry((-1,), ("k",), Construct.WHILE)
    with pytest.raises(autograph.LoopStateError) as info:
        c.check((jnp.uint8(3),), c.arrays)
    assert info.value.variable == "k"
    assert "keep its value" in str(info.value)


# ---------------------------------------------------------------------------
# stabilize


def test_stabilize_promotes_weak_arrays_to_what_the_body_makes():
    c = Carry((0, jnp.int32(1)), ("a", "b"), Construct.WHILE)
    changed = stabilize(c, [ShapedArray((), jnp.float32), ShapedArray((), jnp.int32)])
    assert changed
    assert c.arrays[0].dtype == jnp.float32  # the weak int becomes a float
    assert c.arrays[1].dtype == jnp.int32


def test_stabilize_leaves_strong_arrays_and_matching_ones():
    c = Carry((jnp.int32(0), 1.0), ("a", "b"), Construct.WHILE)
    assert not stabilize(c, [ShapedArray((), jnp.float32), ShapedArray((), jnp.float32)])
    assert c.arrays[0].dtype == jnp.int32  # strong: the check refuses it later, not here


# ---------------------------------------------------------------------------
# Unassigned variables


def test_prepare_state_refuses_a_variable_assigned_first_in_a_loop_that_may_skip():
    state = (Undefined("y"), 1.0)
    with pytest.raises(autograph.LoopStateError) as info:
        prepare_state(state, ("y", "x"), Construct.WHILE, lambda s: (s[1] * 2.0, s[1]), may_skip=True)
    assert info.value.variable == "y"


def test_infer_undefined_gives_zeros_of_what_one_iteration_makes():
    state = (Undefined("y"), jnp.ones(2), 3)
    out = infer_undefined(lambda s: (jnp.stack([s[1], s[1]]), s[1] + 1.0, s[2] + 1), state,
                          ("y", "x", "k"), Construct.FOR)
    assert out[0].shape == (2, 2) and out[0].dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(out[0]), 0.0)
    assert out[1] is state[1] and out[2] == 3  # the others are untouched
    again = prepare_state(state, ("y", "x", "k"), Construct.FOR,
                          lambda s: (jnp.stack([s[1], s[1]]), s[1] + 1.0, s[2] + 1),
                          may_skip=False)
    assert again[0].shape == (2, 2)


def test_infer_undefined_refuses_a_python_object():
    state = (Undefined("y"), 1.0)
    with pytest.raises(autograph.LoopStateError) as info:
        infer_undefined(lambda s: ("text", s[1]), state, ("y", "x"), Construct.WHILE)
    assert info.value.variable == "y"


# ---------------------------------------------------------------------------
# TrackedList


def test_tracked_list_notes_reads_and_changes():
    ys = TrackedList([1, 2])
    assert not ys.read and not ys.changed
    grown = ys + [3]
    assert grown == [1, 2, 3] and grown.root is ys
    assert grown.grown_by_appending(ys)
    assert ys.read  # `==` read the items
    other = TrackedList([1])
    assert not other.changed
    other.insert(0, 5)
    assert other.changed and not other.grown_by_appending(other)
    front = TrackedList([1])
    assert [0] + front == [0, 1]
    assert front.changed  # new items before the old ones


def test_tracked_list_is_a_list_to_jax():
    ys = TrackedList([jnp.float32(1.0), jnp.float32(2.0)])
    leaves, tree = jax.tree_util.tree_flatten(ys)
    assert len(leaves) == 2
    rebuilt = jax.tree_util.tree_unflatten(tree, leaves)
    assert type(rebuilt) is list
    assert float(jax.grad(lambda v: v[0] * v[1])(ys)[0]) == 2.0

