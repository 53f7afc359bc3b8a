"""``autograph.function``'s tracing cache: what keys it, what retraces, the retrace warning."""

from __future__ import annotations

import dataclasses
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import TensorSpec
from tests.helpers import count

# -- the tracing cache --------------------------------------------------------------


def _add_one(x):
    return x + 1


def _key_probe(x):
    if x is None or isinstance(x, str):
        return jnp.zeros(())
    return x + 1


# (calls, expected tracing count after them)
_RETRACE_TABLE = {
    "same shape: no retrace": ([jnp.zeros(3), jnp.ones(3), np.zeros(3, np.float32)], 1),
    "new shape: retrace": ([jnp.zeros(3), jnp.zeros(4)], 2),
    "Python int 1 then 2: retrace": ([1, 1, 2], 2),
    "new dtype: retrace": ([jnp.zeros(3), jnp.zeros(3, jnp.int32)], 2),
    "weak type: retrace": ([jnp.asarray(1.0), jnp.asarray(1.0, jnp.float32)], 2),
    "Python float by value": ([1.5, 1.5, 2.5], 2),
    "bool by value": ([True, False, True], 2),
    "str by value": (["a", "a", "b"], 2),
    "None by value": ([None, None], 1),
}


@pytest.mark.parametrize("case", list(_RETRACE_TABLE))
def test_retrace_table(case):
    args, expected = _RETRACE_TABLE[case]
    f = autograph.function(_key_probe)
    for a in args:
        f(a)
    assert count(f) == expected


def test_retrace_table_new_function_object_has_own_trace():
    f1 = autograph.function(_add_one)
    f2 = autograph.function(_add_one)
    x = jnp.zeros(3)
    f1(x)
    f1(x)
    f2(x)
    assert count(f1) == 1 and count(f2) == 1  # separate objects never share traces
    f3 = autograph.function(_add_one)
    assert count(f3) == 0


def test_retrace_table_input_signature_none_dimension():
    @autograph.function(input_signature=[TensorSpec([None], jnp.int32)])
    def collatz(x):
        return jnp.where(x % 2 == 0, x // 2, 3 * x + 1)

    np.testing.assert_array_equal(collatz(jnp.array([1, 2])), [4, 1])
    np.testing.assert_array_equal(collatz(jnp.array([3, 4])), [10, 2])
    assert count(collatz) == 1
    collatz(jnp.array([1, 2, 3]))
    collatz(jnp.array([1, 2, 3, 4]))
    collatz(jnp.array([5, 6]))
    collatz(jnp.array([5, 6, 7]))
    assert count(collatz) == 3  # once per concrete length


def test_python_values_are_static():
    @autograph.function
    def pw(x, n):
        for _ in range(n):  # a Python range: n must stay a Python int
            x = x * 2
        return x

    np.testing.assert_allclose(pw(jnp.ones(2), 3), [8.0, 8.0])
    np.testing.assert_allclose(pw(jnp.ones(2), 3), [8.0, 8.0])
    assert count(pw) == 1
    np.testing.assert_allclose(pw(jnp.ones(2), 1), [2.0, 2.0])
    assert count(pw) == 2


class _Pair(NamedTuple):
    a: object
    b: object


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class _State:
    w: jax.Array
    b: jax.Array


def test_namedtuple_keys_by_structure_and_leaves():
    f = autograph.function(lambda p: p.a + p.b)
    f(_Pair(jnp.zeros(2), jnp.ones(2)))
    f(_Pair(jnp.ones(2), jnp.zeros(2)))
    assert count(f) == 1
    f(_Pair(jnp.ones(3), jnp.zeros(3)))
    assert count(f) == 2
    assert f(_Pair(1, 2)) == 3
    assert count(f) == 3
    assert f(_Pair(1, 2)) == 3
    assert count(f) == 3
    assert f(_Pair(1, 4)) == 5  # hashable container of Python values: by value
    assert count(f) == 4


def test_tuple_list_dict_dataclass_structure_and_leaves():
    f = autograph.function(lambda t: t[0] * 2)
    f((jnp.ones(2), jnp.ones(2)))
    f((jnp.zeros(2), jnp.ones(2)))
    assert count(f) == 1
    f((jnp.zeros(2), jnp.ones(2), jnp.ones(2)))  # new structure
    assert count(f) == 2
    f([jnp.zeros(2), jnp.ones(2)])  # a list is another structure
    assert count(f) == 3
    f([jnp.ones(2), jnp.ones(2)])
    assert count(f) == 3

    g = autograph.function(lambda d: d["w"] + d["b"])
    g({"w": jnp.ones(2), "b": jnp.ones(2)})
    g({"b": jnp.zeros(2), "w": jnp.ones(2)})
    assert count(g) == 1
    g({"w": jnp.ones(2), "b": jnp.ones(1)})
    assert count(g) == 2

    h = autograph.function(lambda s: s.w * 2 + s.b)
    np.testing.assert_allclose(h(_State(jnp.ones(2), jnp.ones(2))), [3.0, 3.0])
    h(_State(jnp.zeros(2), jnp.ones(2)))
    assert count(h) == 1
    h(_State(jnp.zeros(3), jnp.ones(3)))
    assert count(h) == 2


def test_hashable_tuple_of_python_values_by_value():
    f = autograph.function(lambda t: t[0] * 10)
    assert f((1, "a")) == 10
    assert f((1, "a")) == 10
    assert count(f) == 1
    assert f((2, "a")) == 20
    assert count(f) == 2


def test_python_floats_key_by_value_and_sign():
    # `==` makes 0.0 and -0.0 one static value and NaN never equal to itself; jax.jit
    # traces Python floats, so -0.0 keeps its sign there
    f = autograph.function(lambda x, s: x * jnp.copysign(1.0, s))
    x = jnp.float32(2.0)
    assert [float(f(x, s)) for s in (0.0, -0.0, 0.0)] == [2.0, -2.0, 2.0]
    assert count(f) == 2
    assert float(f(x, (-0.0, "a")[0])) == -2.0
    t = autograph.function(lambda x, t: x * jnp.copysign(1.0, t[0]))
    assert [float(t(x, (s, "a"))) for s in (0.0, -0.0)] == [2.0, -2.0]  # static tuples too
    assert [float(t(x, [s])) for s in (0.0, -0.0)] == [2.0, -2.0]  # lists: leaf by leaf
    d = autograph.function(lambda x, s=-0.0: x * jnp.copysign(1.0, s))
    assert [float(d(x)), float(d(x, 0.0)), float(d(x, -0.0))] == [-2.0, 2.0, -2.0]
    assert count(d) == 2
    concrete = [f.get_concrete_function(TensorSpec((), jnp.float32), s) for s in (0.0, -0.0)]
    assert [float(c(x)) for c in concrete] == [2.0, -2.0]

    g = autograph.function(lambda x, s: x + s)
    for _ in range(3):
        assert np.isnan(g(x, float("nan")))
    assert count(g) == 1


def test_python_int_in_container_with_array_stays_python():
    # Each leaf keys the cache by its own rule: the array by shape/dtype, the int by value.
    @autograph.function
    def tile(t):
        x, n = t
        return jnp.tile(x, n)

    assert tile((jnp.ones(2), 3)).shape == (6,)
    assert tile((jnp.ones(2), 2)).shape == (4,)
    assert count(tile) == 2


def test_str_in_dict_with_array():
    @autograph.function
    def act(cfg):
        if cfg["act"] == "relu":
            return jnp.maximum(cfg["x"], 0.0)
        return cfg["x"]

    np.testing.assert_allclose(act({"x": jnp.array([-1.0, 2.0]), "act": "relu"}), [0.0, 2.0])
    np.testing.assert_allclose(act({"x": jnp.array([-1.0, 2.0]), "act": "id"}), [-1.0, 2.0])


def test_hashable_object_keys_by_hash():
    @dataclasses.dataclass(frozen=True)
    class Cfg:
        k: int

    f = autograph.function(lambda x, c: x * c.k)
    x = jnp.ones(2)
    np.testing.assert_allclose(f(x, Cfg(2)), [2.0, 2.0])
    np.testing.assert_allclose(f(x, Cfg(2)), [2.0, 2.0])  # equal and same hash: cache hit
    assert count(f) == 1
    np.testing.assert_allclose(f(x, Cfg(3)), [3.0, 3.0])
    assert count(f) == 2


def test_unhashable_non_pytree_clear_error():
    class Opaque:
        __hash__ = None
        k = 2

    f = autograph.function(lambda x, cfg: x * cfg.k)
    with pytest.raises(TypeError) as info:
        f(jnp.ones(2), Opaque())
    msg = str(info.value)
    assert "cfg" in msg and "Opaque" in msg and "hashable" in msg


class _Cfg:
    def __init__(self, scale):
        self.scale = scale


def _scaled(x, cfg):
    if x.sum() > 0:
        return x * cfg.scale
    return x


def test_plain_object_keys_by_its_attributes():
    f = autograph.function(_scaled)
    x, cfg = jnp.ones(2), _Cfg(2.0)
    np.testing.assert_allclose(f(x, cfg), [2.0, 2.0])
    np.testing.assert_allclose(f(x, cfg), [2.0, 2.0])
    assert count(f) == 1  # unchanged: no retrace
    cfg.scale = 5.0
    np.testing.assert_allclose(f(x, cfg), [5.0, 5.0])  # the new value, not the old trace
    np.testing.assert_allclose(f(x, cfg), [5.0, 5.0])
    assert count(f) == 2
    np.testing.assert_allclose(f(x, _Cfg(5.0)), [5.0, 5.0])  # an equal object: by value
    assert count(f) == 2
    cfg.extra = "new attribute"
    f(x, cfg)
    assert count(f) == 3


def test_plain_object_in_a_container_and_nested_in_an_object():
    f = autograph.function(lambda x, d: _scaled(x, d["cfg"].inner))
    outer = _Cfg(1.0)
    outer.inner = _Cfg(3.0)
    x = jnp.ones(2)
    np.testing.assert_allclose(f(x, {"cfg": outer}), [3.0, 3.0])
    np.testing.assert_allclose(f(x, {"cfg": outer}), [3.0, 3.0])
    assert count(f) == 1
    outer.inner.scale = 4.0
    np.testing.assert_allclose(f(x, {"cfg": outer}), [4.0, 4.0])
    assert count(f) == 2


def test_plain_object_holding_arrays_and_slots():
    class Slotted:
        __slots__ = ("w", "table")

        def __init__(self, w, table):
            self.w, self.table = w, table

    f = autograph.function(lambda x, o: x * o.w + o.table.sum())
    x = jnp.ones(2)
    obj = Slotted(jnp.full(2, 2.0), np.zeros(3, np.float32))
    np.testing.assert_allclose(f(x, obj), [2.0, 2.0])
    np.testing.assert_allclose(f(x, obj), [2.0, 2.0])
    assert count(f) == 1
    obj.w = jnp.full(2, 3.0)  # a new JAX array
    np.testing.assert_allclose(f(x, obj), [3.0, 3.0])
    obj.table[0] = 1.0  # a NumPy array changed in place
    np.testing.assert_allclose(f(x, obj), [4.0, 4.0])
    assert count(f) == 3


def test_mutable_dataclass_keys_by_its_fields():
    @dataclasses.dataclass
    class Settings:  # defines `__eq__`, so it is unhashable
        scale: float

    f = autograph.function(_scaled)
    x, cfg = jnp.ones(2), Settings(2.0)
    np.testing.assert_allclose(f(x, cfg), [2.0, 2.0])
    np.testing.assert_allclose(f(x, cfg), [2.0, 2.0])
    cfg.scale = 6.0
    np.testing.assert_allclose(f(x, cfg), [6.0, 6.0])
    assert count(f) == 2


def test_method_sees_an_attribute_changed_between_calls():
    class Scaler:
        def __init__(self, s):
            self.s = s

        @autograph.function
        def f(self, x):
            if x.sum() > 0:
                return x * self.s
            return x

    m, x = Scaler(2.0), jnp.ones(2)
    np.testing.assert_allclose(m.f(x), [2.0, 2.0])
    m.s = 7.0
    np.testing.assert_allclose(m.f(x), [7.0, 7.0])
    np.testing.assert_allclose(m.f(x), [7.0, 7.0])
    assert count(Scaler.f) == 2


def test_positional_or_keyword_same_trace():
    @autograph.function
    def f(x, n=2):
        return x * n

    x = jnp.ones(2)
    f(x)
    f(x=x)  # the same array, passed by name
    assert count(f) == 1


def test_default_or_explicit_same_trace():
    @autograph.function
    def f(x, n=2):
        return x * n

    x = jnp.ones(2)
    f(x)
    f(x, 2)
    f(x, n=2)
    assert count(f) == 1


def test_reduce_retracing_python_numbers():
    @autograph.function(reduce_retracing=True)
    def f(x, s):
        return x * s

    x = jnp.ones(2)
    for s in (1.0, 2.0, 3.0):
        np.testing.assert_allclose(f(x, s), [s, s])
    assert count(f) == 1


def test_many_calls_then_retrace_still_counted():
    f = autograph.function(_add_one)
    x = jnp.zeros(2)
    for _ in range(25):  # past the retrace window: the fast path
        f(x)
    assert count(f) == 1
    f(jnp.zeros(3))
    f(jnp.zeros(3))
    f(1)
    assert count(f) == 3


# -- retrace warning -----------------------------------------------------------------


def _calls_warnings(f, calls):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for args in calls:
            f(*args)
    return [w for w in caught if "traced" in str(w.message)]


def test_retrace_warning_after_six_traces_in_ten_calls():
    f = autograph.function(_add_one)
    got = _calls_warnings(f, [(jnp.zeros(i),) for i in range(1, 7)])
    assert len(got) == 1
    msg = str(got[0].message)
    assert "`x`" in msg and "float32[5]" in msg and "float32[6]" in msg
    assert "input_signature" in msg and "array" in msg


def test_no_retrace_warning_for_five_traces():
    f = autograph.function(_add_one)
    assert _calls_warnings(f, [(jnp.zeros(i),) for i in range(1, 6)]) == []
    assert count(f) == 5


def test_no_retrace_warning_when_traces_are_spread_out():
    f = autograph.function(_add_one)
    # a new shape every other call: 6 traces in 12 calls, never 6 in 10
    assert _calls_warnings(f, [(jnp.zeros(i // 2 + 1),) for i in range(12)]) == []


def test_retrace_warning_names_python_argument():
    def scale(x, n):
        return x * n

    f = autograph.function(scale)
    got = _calls_warnings(f, [(jnp.ones(2), n) for n in range(1, 8)])
    assert len(got) == 1  # once
    msg = str(got[0].message)
    assert "`n`" in msg and "5 -> 6" in msg and "scale" in msg


def test_retrace_warning_after_fast_path():
    f = autograph.function(_add_one)
    calls = [(jnp.zeros(1),)] * 15 + [(jnp.zeros(i),) for i in range(2, 8)]
    assert len(_calls_warnings(f, calls)) == 1


def test_retrace_warning_points_at_caller():
    f = autograph.function(_add_one)
    got = _calls_warnings(f, [(i,) for i in range(1, 8)])
    assert len(got) == 1
    assert got[0].filename == __file__, got[0].filename


class _Weights:
    def __init__(self):
        self.w = jnp.ones(3)
        self.calls = 0


def _apply_gradient(model, x):
    model.calls += 1  # a Python side effect: while tracing, as `jax.jit` runs it
    g = jax.grad(lambda w: jnp.sum((w * x - 1.0) ** 2))(model.w)
    model.w = model.w - 0.1 * g  # a traced value on the object given
    return jnp.sum(model.w)


def test_a_traced_value_assigned_to_an_argument_objects_attribute_is_refused_and_undone():
    f = autograph.function(_apply_gradient)
    m = _Weights()
    w = m.w
    with pytest.raises(autograph.AutographError, match="cannot assign a traced value to an "
                                                       "attribute of an object it is given") as e:
        f(m, jnp.arange(3.0))
    assert "attribute `w` of the `_Weights` object given as `model`" in str(e.value)
    assert "obj.w = new" in str(e.value)
    assert m.w is w  # not a tracer: put back as it was
    assert m.calls == 1  # a Python value it set stays, as under tracing


def test_the_retrace_warning_names_an_array_attribute_that_is_new_each_call():
    class Model:
        def __init__(self):
            self.w = jnp.ones(3)

    f = autograph.function(lambda model, x: jnp.sum(model.w * x))
    m, x = Model(), jnp.arange(3.0)
    with pytest.warns(UserWarning, match=r"a change in `model.w` \(a new array\)") as w:
        for _ in range(8):
            m.w = m.w + 1.0
            f(m, x)
    message = str(w[0].message)
    assert "pass the array itself as an argument (`model.w`)" in message
    assert "Python numbers" not in message  # not the advice for Python values
