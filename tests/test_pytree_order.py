"""Containers come out of staged blocks as they went in: dict key order, type, factory.

Each program records, while it runs (or traces), the containers it ends with:
their types, keys in order and ``default_factory``; and it returns arrays
built from ``list(d.values())``, whose order the keys decide. Converted runs
(jitted) must match the plain Python run and, where it can run the program,
plain ``jax.jit``, on inputs that take different branches and trip counts.
"""

import collections
import dataclasses
import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph.runtime.core import key_order
from tests.helpers import primitives, runs_as_python

P = collections.namedtuple("P", "z a")


@functools.partial(jax.tree_util.register_dataclass, data_fields=["z", "a"], meta_fields=[])
@dataclasses.dataclass
class Pair:
    z: object
    a: object


SEEN: list = []


def shape_of(x):
    """Types, keys in order and default factories of the containers in ``x``."""
    if isinstance(x, dict):
        return (type(x).__name__, getattr(x, "default_factory", None),
                [(k, shape_of(v)) for k, v in x.items()])
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [shape_of(v) for v in x])
    if dataclasses.is_dataclass(x):
        return (type(x).__name__, [shape_of(getattr(x, f.name)) for f in dataclasses.fields(x)])
    return "leaf"


def record(x):
    SEEN.append(shape_of(x))


# --- loops -----------------------------------------------------------------------

def scan_over_a_static_range(x):  # more than 16 steps: one lax.scan
    d = {"w": x, "b": x * 0}
    for i in range(20):
        d["b"] = d["b"] + 1
    record(d)
    return jnp.stack(list(d.values()))


def while_with_a_traced_test(x):
    d = collections.OrderedDict(z=x, a=x * 0)
    e = collections.defaultdict(list, {"z": x, "a": x})
    while d["z"] < 10.0:
        d["z"] = d["z"] + 3.0
        e["a"] = e["a"] * 2.0
    record((d, e))
    return jnp.concatenate([jnp.stack(list(d.values())), jnp.stack(list(e.values()))])


def fori_over_a_traced_count(x, n):
    d = {"z": P({"y": x, "b": x}, [Pair({"q": x, "c": x}, x)]),
         "a": collections.defaultdict(int, {"k": x, "e": x})}
    for i in range(n):
        d["a"]["k"] = d["a"]["k"] + 1.0
        d["z"][1][0].z["q"] = d["z"][1][0].z["q"] * 2.0
    record(d)
    return jnp.stack(list(d["a"].values()) + list(d["z"][1][0].z.values()))


def reads_the_values_in_the_body(x):
    d = {"w": x, "b": x * 0}
    s = jnp.zeros(2)
    for i in range(20):
        s = s * 0.5 + jnp.stack(list(d.values()))
        d["b"] = d["b"] + 1
    record(d)
    return s


def first_assigned_in_the_body(x):
    i = 0.0
    while i < x + 3.0:  # at least once on every input here
        d = {"z": x * i, "a": x}
        i = i + 1.0
    record(d)
    return jnp.stack(list(d.values()))


def rebuilt_in_another_order(x):
    d = {"a": x * 0, "z": x}
    for i in range(20):
        d = {"z": d["z"], "a": d["a"] + 1}
    record(d)
    return jnp.stack(list(d.values()))


def appends_dicts(x):
    ys = []
    for i in range(20):
        ys.append({"z": x * i, "a": x})
    record(ys)
    return jnp.stack([jnp.stack(list(y.values())) for y in ys])


# --- branches ----------------------------------------------------------------------

def if_building_dicts(x):
    if x > 0:
        d = {"z": x, "a": x + 1}
        e = collections.defaultdict(list, {"z": x, "a": x})
    else:
        d = {"z": x - 1, "a": x}
        e = collections.defaultdict(list, {"z": -x, "a": x})
    record((d, e))
    return jnp.concatenate([jnp.stack(list(d.values())), jnp.stack(list(e.values()))])


def if_updating_a_dict(x):
    d = {"z": x, "a": x}
    n = P({"y": x, "b": x}, Pair({"q": x, "c": x}, x))
    if x > 0:
        d["z"] = x + 1
        n = P({"y": x, "b": x * 2}, Pair({"q": x, "c": x * 3}, x))
        s = jnp.stack(list(d.values()))
    else:
        s = -jnp.stack(list(d.values()))
    record((d, n))
    return jnp.concatenate([s, jnp.stack(list(n.z.values()) + list(n.a.z.values()))])


def conditional_expression(x):
    d = P({"z": x, "a": x * 2}, 1) if x > 0 else P({"z": -x, "a": x}, 1)
    record(d)
    return jnp.stack(list(d.z.values()))


def run(fn, *args):
    SEEN.clear()
    out = fn(*args)
    return np.asarray(out), SEEN[-1]


@pytest.mark.parametrize("fn", [
    scan_over_a_static_range, while_with_a_traced_test, reads_the_values_in_the_body,
    first_assigned_in_the_body, rebuilt_in_another_order, appends_dicts, if_building_dicts,
    if_updating_a_dict, conditional_expression])
@pytest.mark.parametrize("x", [-2.0, 0.5, 4.0])
def test_containers_come_out_as_in_python(fn, x):
    want, want_shape = run(fn, np.float32(x))
    got, got_shape = run(autograph.function(fn), np.float32(x))
    assert got_shape == want_shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("n", [0, 3, 20])
def test_fori_over_a_traced_count(n):
    want, want_shape = run(fori_over_a_traced_count, np.float32(1.5), n)
    got, got_shape = run(autograph.function(fori_over_a_traced_count), np.float32(1.5), n)
    assert got_shape == want_shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("fn", [scan_over_a_static_range, reads_the_values_in_the_body,
                                rebuilt_in_another_order, appends_dicts])
def test_what_plain_jit_runs_gives_the_same(fn):
    want, want_shape = run(jax.jit(fn), 1.0)
    got, got_shape = run(jax.jit(autograph.convert(fn)), 1.0)
    assert got_shape == want_shape
    np.testing.assert_allclose(got, want)


def test_the_brief_example_values():
    got, _ = run(jax.jit(autograph.convert(scan_over_a_static_range)), 1.0)
    np.testing.assert_allclose(got, [1.0, 20.0])


# --- an order only known when the program runs ---------------------------------------

def branches_building_different_orders(x):
    if x > 0:
        d = {"z": x, "a": x}
    else:
        d = {"a": x, "z": -x}
    return jnp.stack(list(d.values()))


def reordered_on_one_branch(x):
    d = {"w": x, "b": 0.5}
    if x > 0:
        d["w"] = d.pop("w")
    return jnp.stack(list(d.values())), [ord(k) for k in d]


def nested_reordered_on_one_branch(x):
    d = {"p": {"w": x, "b": 0.5}, "q": x}
    if x > 0:
        d["p"]["w"] = d["p"].pop("w")
    return jnp.stack(list(d["p"].values()))


@pytest.mark.parametrize("fn, name, orders", [
    (branches_building_different_orders, "d", "['z', 'a'] after the true branch but ['a', 'z']"),
    (reordered_on_one_branch, "d", "['b', 'w'] after the true branch but ['w', 'b']"),
    (nested_reordered_on_one_branch, "d['p']", "['b', 'w'] after the true branch but ['w', 'b']")])
def test_branches_leaving_a_dict_in_two_orders_are_refused(fn, name, orders):
    for x in (1.0, -1.0):  # Python values: Python runs it
        for got, want in zip(jax.tree_util.tree_leaves(autograph.convert(fn)(x)),
                             jax.tree_util.tree_leaves(fn(x))):
            np.testing.assert_allclose(got, want)
    with pytest.raises(autograph.BranchError, match="keys in one order") as info:
        jax.jit(autograph.convert(fn))(jnp.float32(1.0))
    assert f"`{name}` has its keys in the order {orders} after the false branch" in str(
        info.value)
    assert "test_pytree_order.py:" in str(info.value)


def reordered_on_both_branches(x):
    d = {"w": x, "b": 0.5}
    e = d
    if x > 0:
        d["w"] = d.pop("w") + 1.0
    else:
        d["w"] = d.pop("w") - 1.0
    record(e)
    return jnp.stack(list(e.values()))


def rebuilt_in_one_new_order(x):
    d = {"w": x, "b": 0.5}
    if x > 0:
        d = {"b": d["b"], "w": d["w"] + 1.0}
    else:
        d = {"b": d["b"] * 2.0, "w": d["w"]}
    record(d)
    return jnp.stack(list(d.values()))


@pytest.mark.parametrize("fn", [reordered_on_both_branches, rebuilt_in_one_new_order])
@pytest.mark.parametrize("x", [-2.0, 4.0])
def test_branches_leaving_one_new_order_hand_it_on(fn, x):
    # the dict updated in place takes the new order: every name for it sees it
    want, want_shape = run(fn, np.float32(x))
    got, got_shape = run(jax.jit(autograph.convert(fn)), jnp.float32(x))
    assert got_shape == want_shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


def reordered_in_a_traced_range(x, n):
    d = {"w": x, "b": 0.5}
    for i in range(n):
        d["w"] = d.pop("w")
    return jnp.stack(list(d.values()))


def reordered_in_a_traced_while(x, n):
    d = {"w": x, "b": 0.5}
    i = 0
    while i < n:
        d["w"] = d.pop("w") + 1.0
        i += 1
    return jnp.stack(list(d.values()))


@pytest.mark.parametrize("fn, loop", [(reordered_in_a_traced_range, "for"),
                                      (reordered_in_a_traced_while, "while")])
def test_a_traced_loop_that_reorders_a_dict_is_refused(fn, loop):
    # after zero iterations the keys keep their order, after one or more they do not
    with pytest.raises(autograph.LoopStateError, match="must keep the order of its keys") as info:
        jax.jit(autograph.convert(fn))(jnp.float32(1.0), jnp.int32(3))
    assert f"staged `{loop}` loop" in str(info.value)
    assert "`d` has its keys in the order ['w', 'b'] before the loop but ['b', 'w']" in str(
        info.value)
    assert "test_pytree_order.py:" in str(info.value)


def decayed_with_tree_map(w, tol):
    params = {"w": w, "b": jnp.zeros(())}  # not in sorted order
    loss = jnp.sum(params["w"] ** 2)
    while loss > tol:
        params = jax.tree.map(lambda p: p * 0.9, params)  # gives the keys sorted: b, w
        loss = jnp.sum(params["w"] ** 2)
    return params


def test_a_loop_that_sorts_a_dict_through_tree_map_says_so():
    with pytest.raises(autograph.LoopStateError, match="must keep the order of its keys") as e:
        jax.jit(autograph.convert(decayed_with_tree_map))(jnp.ones(2), 1.5)
    assert "`jax.tree.map`" in str(e.value) and "in the order ['b', 'w'] to begin" in str(
        e.value)


def descended_from_a_dict_argument(p, x):
    loss = jnp.sum((p["w"] * x + p["b"]) ** 2)
    while loss > 0.1:
        p = {"w": p["w"] * 0.9, "b": p["b"] * 0.9}  # the user's order, not jit's
        loss = jnp.sum((p["w"] * x + p["b"]) ** 2)
    return loss


def test_a_loop_rebuilding_a_dict_jit_handed_over_sorted_says_so():
    params = {"w": jnp.ones(3), "b": jnp.ones(3) * 0.5}
    with pytest.raises(autograph.LoopStateError, match="must keep the order of its keys") as e:
        jax.jit(autograph.convert(descended_from_a_dict_argument))(params, jnp.ones(3))
    # the fix names where the sorted order came from, and a change that applies
    assert "`jax.jit`, `jax.grad` and `jax.vmap` hand a dict argument over with its keys " \
           "sorted" in str(e.value)
    assert "where `p` is built anew, build it with its keys in the order ['b', 'w']" in str(
        e.value)
    assert "to begin with" not in str(e.value)  # it did begin with that order


def moved_to_the_end_in_a_long_loop(x):
    d = {"w": x, "b": x * 0}
    for i in range(20):
        d["w"] = d.pop("w") + 1.0
    record(d)
    return jnp.stack(list(d.values()))


def first_key_moved_each_step(x):
    d = {"w": x, "b": x * 0}
    for i in range(20):
        k = next(iter(d))
        d[k] = d.pop(k) + 1.0
    record(d)
    return jnp.stack(list(d.values()))


def test_a_long_loop_that_reorders_a_dict_once_stages_the_rest():
    # its first iteration runs as Python and leaves the order the body keeps
    fn = moved_to_the_end_in_a_long_loop
    want, want_shape = run(jax.jit(fn), 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, got_shape = run(jax.jit(autograph.convert(fn)), 1.0)
        assert "scan" in primitives(jax.make_jaxpr(autograph.convert(fn))(1.0))
    assert got_shape == want_shape
    np.testing.assert_allclose(got, want)


def test_a_long_loop_that_reorders_a_dict_each_step_runs_as_python():
    fn = first_key_moved_each_step
    want, want_shape = run(jax.jit(fn), 1.0)
    with runs_as_python("next"):
        got, got_shape = run(jax.jit(autograph.convert(fn)), 1.0)
    assert got_shape == want_shape
    np.testing.assert_allclose(got, want)


def test_key_order_treedefs():
    d = collections.defaultdict(list, {"w": 1, "b": 2})
    leaves, treedef = jax.tree_util.tree_flatten(key_order.ordered(d))
    assert leaves == [2, 1]  # JAX's order, so that leaves line up with any same-keyed dict
    back = jax.tree_util.tree_unflatten(treedef, leaves)
    assert type(back) is collections.defaultdict and back.default_factory is list
    assert list(back) == ["w", "b"]
    other = jax.tree_util.tree_structure(key_order.ordered(
        collections.defaultdict(list, {"b": 0, "w": 0})))
    assert other == treedef  # key order is not structure
    assert jax.tree_util.tree_structure(key_order.ordered(
        collections.defaultdict(int, {"b": 0, "w": 0}))) != treedef
    nested = [P({"y": 1, "b": 2}, 3)]
    assert key_order.tree_map(lambda v: v * 10, nested) == [P({"y": 10, "b": 20}, 30)]
    assert list(key_order.tree_map(lambda v: v, nested)[0].z) == ["y", "b"]
    plain = (1, [2.0])
    assert key_order.ordered(plain) is plain  # nothing to wrap


def loop_with_a_traced_break(x):  # a bounded loop: lax.while_loop, or nested scans
    d = {"z": x, "a": x * 0}
    e = collections.defaultdict(list, {"w": x, "b": x})
    for i in range(20):
        if d["a"] > x * 3:
            break
        d = {"z": d["z"], "a": d["a"] + 1}
        e["b"] = e["b"] + 1
    record((d, e))
    return jnp.concatenate([jnp.stack(list(d.values())), jnp.stack(list(e.values()))])


@pytest.mark.parametrize("x", [-2.0, 0.5, 4.0, 9.0])
def test_loop_with_a_traced_break(x):
    want, want_shape = run(loop_with_a_traced_break, np.float32(x))
    cf = autograph.function(loop_with_a_traced_break)
    got, got_shape = run(cf, np.float32(x))
    assert got_shape == want_shape
    np.testing.assert_allclose(got, want)
    grad = jax.grad(lambda v: autograph.convert(loop_with_a_traced_break)(v).sum())(x)
    assert np.isfinite(grad)


def keys_of_mixed_types_through_a_staged_if(x):
    d = {"b": x, 1: x}  # JAX cannot sort these keys
    if x > 0:
        d[1] = d[1] + 1
    return d["b"] + d[1]


@pytest.mark.parametrize("x", [1.0, -1.0])
def test_a_dict_with_keys_of_mixed_types_goes_through_a_staged_if(x):
    got = jax.jit(autograph.convert(keys_of_mixed_types_through_a_staged_if))(jnp.float32(x))
    assert float(got) == float(keys_of_mixed_types_through_a_staged_if(jnp.float32(x)))
