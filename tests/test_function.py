"""``autograph.function``: the tf.function-style decorator (conversion + jax.jit).

Covers the call forms, the tracing cache (what keys it, what retraces), the
retrace warning, ``TensorSpec`` and ``input_signature``, concrete functions,
eager mode, call trees, jax transformations and the AOT API.
Print and assert on traced values are in ``test_side_effects.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import TensorSpec, pipeline
from autograph.runtime import calls as ag_calls


def count(f) -> int:
    return f.experimental_get_tracing_count()


@pytest.fixture
def eager_off():
    """Leaves eager mode off whatever a test does."""
    yield
    autograph.run_functions_eagerly(False)


# -- call forms -------------------------------------------------------------------


def test_decorator_bare_converts_control_flow():
    @autograph.function
    def clip(x):
        if x.sum() > 1.0:
            x = x / x.sum()
        return x

    np.testing.assert_allclose(clip(jnp.array([1.0, 3.0])), [0.25, 0.75])
    np.testing.assert_allclose(clip(jnp.array([0.25, 0.5])), [0.25, 0.5])
    assert count(clip) == 1
    assert isinstance(clip, autograph.Function)


def test_decorator_with_options_and_call_form():
    def pw(x, n):
        for _ in range(n):
            x = x * 2
        return x

    f = autograph.function(pw, static_argnums=1)
    g = autograph.function(static_argnums=(1,))(pw)
    np.testing.assert_allclose(f(jnp.ones(2), 3), [8.0, 8.0])
    np.testing.assert_allclose(g(jnp.ones(2), 2), [4.0, 4.0])


def test_metadata_and_python_function():
    def scale(x):
        """Doubles x."""
        return x * 2

    f = autograph.function(scale)
    assert f.python_function is scale
    assert f.__name__ == "scale"
    assert f.__doc__ == "Doubles x."
    assert f.__wrapped__ is scale
    assert "scale" in repr(f)


def test_autograph_false_only_jits():
    def f(x):
        if x.sum() > 0:
            return x
        return -x

    plain = autograph.function(f, autograph=False)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        plain(jnp.ones(2))
    np.testing.assert_allclose(autograph.function(f)(-jnp.ones(2)), [1.0, 1.0])


def test_lambda():
    f = autograph.function(lambda x: x * 2 if x.sum() > 0 else -x)
    np.testing.assert_allclose(f(jnp.ones(2)), [2.0, 2.0])
    np.testing.assert_allclose(f(-jnp.ones(2)), [1.0, 1.0])
    assert count(f) == 1


def test_functools_partial():
    def scaled(x, k):
        if x.sum() > 0:
            return x * k
        return x

    f = autograph.function(functools.partial(scaled, k=3.0))
    np.testing.assert_allclose(f(jnp.ones(2)), [3.0, 3.0])
    np.testing.assert_allclose(f(-jnp.ones(2)), [-1.0, -1.0])
    assert count(f) == 1


def test_callable_object():
    class Step:
        def __init__(self):
            self.k = 5.0

        def __call__(self, x):
            while x.sum() < self.k:
                x = x + 1
            return x

    f = autograph.function(Step())
    np.testing.assert_allclose(f(jnp.zeros(2)), [3.0, 3.0])
    assert count(f) == 1


def test_bound_method_wrapped():
    class Net:
        def __init__(self, k):
            self.k = k

        def call(self, x):
            if x.sum() > 0:
                return x * self.k
            return x

    net = Net(4.0)
    net.call = autograph.function(net.call)  # as in the TensorFlow guide
    np.testing.assert_allclose(net.call(jnp.ones(2)), [4.0, 4.0])
    np.testing.assert_allclose(net.call(-jnp.ones(2)), [-1.0, -1.0])


class _Scaler:
    def __init__(self, s):
        self.s = s

    @autograph.function
    def f(self, x):
        if x.sum() > 0:
            return x * self.s
        return x


def test_method_decorated_bound_per_instance():
    m1, m2 = _Scaler(2.0), _Scaler(3.0)
    x = jnp.ones(2)
    np.testing.assert_allclose(m1.f(x), [2.0, 2.0])
    np.testing.assert_allclose(m2.f(x), [3.0, 3.0])
    np.testing.assert_allclose(m1.f(x), [2.0, 2.0])
    assert count(_Scaler.f) == 2  # one trace per instance, no more
    np.testing.assert_allclose(_Scaler.f(m1, -x), [-1.0, -1.0])
    assert m1.f.python_function(x) is not None


def test_method_lower_and_trace():
    m = _Scaler(2.0)
    x = jnp.ones(2)
    np.testing.assert_allclose(m.f.lower(x).compile()(x), [2.0, 2.0])
    # `f.trace(...)` mirrors jax.jit's AOT API; a bound method has it too.
    assert m.f.trace(x).jaxpr is not None


def test_method_get_concrete_function_is_bound():
    m = _Scaler(2.0)
    cf = m.f.get_concrete_function(TensorSpec([2], jnp.float32))
    # As in TF: the concrete function of a bound method takes the remaining arguments.
    np.testing.assert_allclose(cf(jnp.ones(2)), [2.0, 2.0])


def test_method_with_input_signature_excludes_self():
    class M:
        @autograph.function(input_signature=[TensorSpec([None], jnp.float32)])
        def f(self, x):
            return x * 2

    np.testing.assert_allclose(M().f(jnp.ones(3)), [2.0, 2.0, 2.0])


def test_jit_kwargs_pass_through():
    @autograph.function(static_argnames="n")
    def tile(x, n):
        return jnp.tile(x, n)

    assert tile(jnp.ones(2), n=3).shape == (6,)

    @autograph.function(donate_argnums=0)
    def inc(x):
        return x + 1

    assert "tf.aliasing_output" in inc.lower(jnp.zeros(2)).as_text()

    s = jax.sharding.SingleDeviceSharding(jax.devices()[0])

    @autograph.function(in_shardings=s, out_shardings=s)
    def dbl(x):
        return x * 2

    out = dbl(jnp.ones(2))
    assert out.sharding == s
    np.testing.assert_allclose(out, [2.0, 2.0])


def test_unknown_jit_kwarg_is_an_error():
    with pytest.raises(TypeError, match="bogus"):
        autograph.function(lambda x: x, bogus=1)(jnp.ones(1))


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


# -- TensorSpec and input_signature ----------------------------------------------------


def test_tensor_spec_is_shape_dtype_struct():
    spec = TensorSpec([None, 3], jnp.float32)
    assert isinstance(spec, jax.ShapeDtypeStruct)
    assert spec.dtype == np.float32
    assert spec.declared_shape == (None, 3)
    assert repr(spec) == "TensorSpec(shape=(None, 3), dtype=float32)"
    assert spec.matches(jnp.zeros((5, 3)))
    assert not spec.matches(jnp.zeros((5, 4)))
    assert not spec.matches(jnp.zeros((5, 3), jnp.int32))
    assert TensorSpec((2,), "float32") == TensorSpec([2], np.float32)
    assert "name='x'" in repr(TensorSpec([2], jnp.int32, name="x"))


def test_tensor_spec_where_shape_dtype_struct_is_accepted():
    out = jax.eval_shape(lambda a: a * 2, TensorSpec([4, 3], "float32"))
    assert out.shape == (4, 3) and out.dtype == np.float32
    out = jax.eval_shape(lambda a: a.sum(0), TensorSpec([None, 3], jnp.float32))
    assert out.shape == (3,)
    compiled = jax.jit(lambda a: a + 1).lower(TensorSpec([2], jnp.int32)).compile()
    np.testing.assert_array_equal(compiled(jnp.array([1, 2], jnp.int32)), [2, 3])
    exp = jax.export.export(jax.jit(lambda a: a * 2))(TensorSpec([None], jnp.float32))
    np.testing.assert_allclose(exp.call(jnp.ones(3)), [2.0, 2.0, 2.0])


def test_two_specs_with_none_in_one_trace():
    out = jax.eval_shape(lambda a, b: jnp.concatenate([a, b]),
                         TensorSpec([None], jnp.float32), TensorSpec([None], jnp.float32))
    assert out.ndim == 1


@pytest.fixture
def collatz():
    @autograph.function(input_signature=(TensorSpec(shape=[None], dtype=jnp.int32),))
    def next_collatz(x):
        return jnp.where(x % 2 == 0, x // 2, 3 * x + 1)

    return next_collatz


def test_input_signature_shape_mismatch(collatz):
    np.testing.assert_array_equal(collatz(jnp.array([1, 2])), [4, 1])
    with pytest.raises(ValueError) as info:
        collatz(jnp.array([[1, 2], [3, 4]]))
    msg = str(info.value)
    assert "x" in msg and "next_collatz" in msg
    assert "TensorSpec(shape=(None,), dtype=int32)" in msg
    assert "(2, 2)" in msg or "int32[2, 2]" in msg


def test_input_signature_dtype_mismatch(collatz):
    with pytest.raises(TypeError) as info:
        collatz(jnp.array([1.0, 2.0]))
    msg = str(info.value)
    assert "x" in msg and "TensorSpec(shape=(None,), dtype=int32)" in msg and "float32" in msg


def test_input_signature_wrong_kind_and_arity(collatz):
    with pytest.raises(TypeError, match="str"):
        collatz("a")
    with pytest.raises(TypeError):
        collatz(jnp.array([1]), jnp.array([2]))
    with pytest.raises(TypeError):
        collatz()
    np.testing.assert_array_equal(collatz(x=jnp.array([4])), [2])
    np.testing.assert_array_equal(collatz(np.array([4], np.int32)), [2])


def test_input_signature_shape_dtype_struct():
    @autograph.function(input_signature=[jax.ShapeDtypeStruct((2,), jnp.float32)])
    def f(x):
        return x * 2

    np.testing.assert_allclose(f(jnp.ones(2)), [2.0, 2.0])
    with pytest.raises(ValueError):
        f(jnp.ones(3))


def test_input_signature_several_arguments():
    @autograph.function(input_signature=[TensorSpec([None, 3], jnp.float32),
                                         TensorSpec([], jnp.float32)])
    def g(x, s):
        return x * s

    np.testing.assert_allclose(g(jnp.ones((2, 3)), jnp.float32(2.0)), np.full((2, 3), 2.0))
    with pytest.raises(ValueError, match="x"):
        g(jnp.ones((2, 4)), jnp.float32(2.0))
    with pytest.raises(ValueError, match="s"):
        g(jnp.ones((2, 3)), jnp.ones(2))


def test_input_signature_python_scalar_does_not_retrace():
    # input_signature: the scalar is a float32[] argument, not a static value per number.
    @autograph.function(input_signature=[TensorSpec([2], jnp.float32), TensorSpec([], jnp.float32)])
    def g(x, s):
        return x * s

    x = jnp.ones(2)
    for s in (2.0, 3.0, 4.0):
        np.testing.assert_allclose(g(x, s), [s, s])
    assert count(g) == 1


# -- concrete functions ------------------------------------------------------------------


@pytest.fixture
def double():
    @autograph.function
    def double(a):
        if a.sum() > 0:
            return a + a
        return a

    return double


def test_concrete_function_basics(double):
    cf = double.get_concrete_function(TensorSpec([3], jnp.float32))
    assert isinstance(cf, autograph.ConcreteFunction)
    assert count(double) == 1
    np.testing.assert_allclose(cf(jnp.ones(3)), [2.0, 2.0, 2.0])
    np.testing.assert_allclose(cf(-jnp.ones(3)), [-1.0, -1.0, -1.0])
    assert type(cf.jaxpr).__name__ == "ClosedJaxpr"
    assert "cond" in str(cf.jaxpr)
    text = cf.as_text()
    assert "stablehlo" in text and "tensor<3xf32>" in text
    assert cf.structured_input_signature == ((TensorSpec([3], jnp.float32),), {})
    double(jnp.ones(3))  # the call reuses the trace
    assert count(double) == 1


def test_concrete_function_from_value(double):
    cf = double.get_concrete_function(jnp.ones(2))
    assert cf.structured_input_signature[0][0] == TensorSpec([2], jnp.float32)
    np.testing.assert_allclose(cf(jnp.array([1.0, -5.0])), [1.0, -5.0])


def test_concrete_function_wrong_dtype_or_shape(double):
    cf = double.get_concrete_function(TensorSpec([3], jnp.float32))
    with pytest.raises(TypeError) as info:
        cf(jnp.ones(3, jnp.int32))
    assert "a" in str(info.value) and "float32" in str(info.value) and "int32" in str(info.value)
    with pytest.raises(ValueError, match=r"\(4,\)|float32\[4\]"):
        cf(jnp.ones(4))
    with pytest.raises(TypeError):
        cf("a")
    with pytest.raises(TypeError):
        cf(jnp.ones(3), jnp.ones(3))


def test_concrete_function_keyword_call(double):
    cf = double.get_concrete_function(TensorSpec([3], jnp.float32))
    # the guide: double_strings(a=tf.constant("b"))
    np.testing.assert_allclose(cf(a=jnp.ones(3)), [2.0, 2.0, 2.0])


def test_concrete_function_symbolic_none(double):
    cf = double.get_concrete_function(TensorSpec([None], jnp.float32))
    assert count(double) == 1  # one symbolic trace
    np.testing.assert_allclose(cf(jnp.ones(2)), [2.0, 2.0])
    np.testing.assert_allclose(cf(jnp.ones(5)), [2.0] * 5)
    np.testing.assert_allclose(cf(-jnp.ones(3)), [-1.0] * 3)
    assert count(double) == 1
    assert "tensor<?xf32>" in cf.as_text()
    with pytest.raises(ValueError):
        cf(jnp.ones((2, 2)))
    with pytest.raises(TypeError):
        cf(jnp.ones(2, jnp.int32))


def test_concrete_function_two_none_specs():
    @autograph.function
    def mm(a, b):
        return a @ b

    cf = mm.get_concrete_function(TensorSpec([None, 3], jnp.float32),
                                  TensorSpec([3, None], jnp.float32))
    assert cf(jnp.ones((2, 3)), jnp.ones((3, 5))).shape == (2, 5)


def test_concrete_function_from_input_signature():
    @autograph.function(input_signature=[TensorSpec([None], jnp.int32)])
    def inc(x):
        return x + 1

    cf = inc.get_concrete_function()
    np.testing.assert_array_equal(cf(jnp.array([1, 2, 3])), [2, 3, 4])
    assert cf.structured_input_signature == ((TensorSpec([None], jnp.int32),), {})


def test_concrete_function_needs_specs(double):
    with pytest.raises(TypeError, match="input_signature"):
        double.get_concrete_function()


def test_concrete_function_with_python_value():
    @autograph.function
    def pw(x, n):
        for _ in range(n):
            x = x * 2
        return x

    cf = pw.get_concrete_function(TensorSpec([2], jnp.float32), 3)
    np.testing.assert_allclose(cf(jnp.ones(2), 3), [8.0, 8.0])
    assert cf.structured_input_signature == ((TensorSpec([2], jnp.float32), 3), {})
    with pytest.raises(ValueError, match="3"):
        cf(jnp.ones(2), 4)
    cfk = pw.get_concrete_function(TensorSpec([2], jnp.float32), n=2)
    np.testing.assert_allclose(cfk(jnp.ones(2), n=2), [4.0, 4.0])


def test_concrete_function_pytree_argument():
    @autograph.function
    def add(t):
        a, b = t
        return a + b

    spec = TensorSpec([2], jnp.float32)
    cf = add.get_concrete_function((spec, spec))
    np.testing.assert_allclose(cf((jnp.ones(2), jnp.ones(2))), [2.0, 2.0])


# -- eager mode -----------------------------------------------------------------------------


def test_run_functions_eagerly(eager_off, capsys):
    log = []

    @autograph.function
    def f(x):
        log.append(1)
        print("x is", x)
        return x * 2

    x = jnp.ones(2)
    f(x)
    f(x)
    jax.effects_barrier()
    assert len(log) == 1  # traced once
    capsys.readouterr()
    assert autograph.functions_run_eagerly() is False
    autograph.run_functions_eagerly(True)
    assert autograph.functions_run_eagerly() is True
    np.testing.assert_allclose(f(x), [2.0, 2.0])
    f(jnp.array([3.0, 4.0]))
    assert len(log) == 3  # the side effect on every call
    assert capsys.readouterr().out == "x is [1. 1.]\nx is [3. 4.]\n"
    assert count(f) == 1
    autograph.run_functions_eagerly(False)
    assert autograph.functions_run_eagerly() is False
    f(x)
    assert len(log) == 3


def test_run_eagerly_context_manager(eager_off):
    log = []

    @autograph.function
    def f(x):
        log.append(type(x))
        return x + 1

    x = jnp.ones(2)
    for _ in range(15):  # past the retrace window: the fast call path
        f(x)
    assert len(log) == 1
    with autograph.run_eagerly():
        assert autograph.functions_run_eagerly()
        f(x)
        f(x)
        with autograph.run_eagerly(False):
            assert not autograph.functions_run_eagerly()
            f(x)
        assert autograph.functions_run_eagerly()
    assert not autograph.functions_run_eagerly()
    assert len(log) == 3
    assert all(t is type(x) for t in log[1:])  # concrete values, not tracers
    f(x)
    assert len(log) == 3


def test_run_eagerly_concrete_python_control_flow(eager_off):
    @autograph.function
    def f(x):
        return float(x.sum())  # needs a concrete value

    with autograph.run_eagerly():
        assert f(jnp.ones(3)) == 3.0


def test_run_eagerly_method_and_input_signature(eager_off):
    m = _Scaler(5.0)

    @autograph.function(input_signature=[TensorSpec([None], jnp.float32)])
    def g(x):
        return x.tolist()

    with autograph.run_eagerly():
        np.testing.assert_allclose(m.f(jnp.ones(2)), [5.0, 5.0])
        assert g(jnp.ones(2)) == [1.0, 1.0]


def test_run_functions_eagerly_applies_to_other_threads(eager_off):
    log = []

    @autograph.function
    def f(x):
        log.append(1)
        return x + 1

    x = jnp.ones(2)
    f(x)
    autograph.run_functions_eagerly(True)
    try:
        t = threading.Thread(target=lambda: (f(x), f(x)))
        t.start()
        t.join()
    finally:
        autograph.run_functions_eagerly(False)
    assert len(log) == 3  # process-wide, as tf.config.run_functions_eagerly


# -- call trees -------------------------------------------------------------------------------


def _inner(x):
    if x.sum() > 0:
        return x * 2
    return -x


class _Callee:
    def method(self, x):
        if x.sum() > 0:
            return x + 10
        return x - 10

    def __call__(self, x):
        while x.sum() < 5:
            x = x + 1
        return x


def _make_closure(k):
    def closure(x):
        if x.sum() > 0:
            return x * k
        return x
    return closure


def _two(x, s):
    if x.sum() > 0:
        return x * s
    return x


def test_call_tree_converted_recursively():
    obj = _Callee()
    clo = _make_closure(3.0)
    lam = lambda x: x * 2 if x.sum() > 0 else x * 0  # noqa: E731
    part = functools.partial(_two, s=4.0)

    @autograph.function
    def outer(x):
        return _inner(x), obj.method(x), obj(x), clo(x), lam(x), part(x)

    def plain(x):  # the same, on concrete values
        return _inner(x), obj.method(x), obj(x), clo(x), lam(x), part(x)

    for v in (jnp.array([1.0, 2.0]), jnp.array([-1.0, -2.0])):
        got, want = outer(v), plain(v)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w)
    assert count(outer) == 1


def test_call_tree_nested_functions():
    @autograph.function
    def add(a, b):
        return a + b

    @autograph.function
    def dense(x, w, b):
        y = add(x @ w, b)
        if y.sum() > 0:
            y = y * 2
        return y

    np.testing.assert_allclose(dense(jnp.ones((3, 2)), jnp.ones((2, 2)), jnp.ones(2)),
                               np.full((3, 2), 6.0))


def test_do_not_convert():
    @autograph.do_not_convert
    def raw(x):
        if x.sum() > 0:
            return x
        return -x

    @autograph.function
    def f(x):
        return raw(x)

    with pytest.raises(jax.errors.TracerBoolConversionError):
        f(jnp.ones(2))


def test_callee_without_source_runs_unconverted_with_warning():
    ns = {}
    exec("def gen_callee(x):\n    return x + 1\n", ns)
    gen = ns["gen_callee"]

    @autograph.function
    def f(x):
        return gen(x)

    with pytest.warns(UserWarning, match="gen_callee"):
        np.testing.assert_allclose(f(jnp.ones(2)), [2.0, 2.0])


def test_library_code_never_converted_and_conversion_cached(monkeypatch):
    import copy

    seen = []
    real = ag_calls._converter

    def spy(fn):
        seen.append(fn)
        return real(fn)

    monkeypatch.setattr(ag_calls, "_converter", spy)
    converted = []
    real_convert_tree = pipeline.convert_tree

    def counting(node, *args, **kwargs):
        converted.append(getattr(node, "name", None))
        return real_convert_tree(node, *args, **kwargs)

    monkeypatch.setattr(pipeline, "convert_tree", counting)

    def helper_cached(x):
        if x.sum() > 0:
            return x + 1
        return x

    def body(x):
        y = copy.copy(x)
        y = jax.tree_util.tree_map(lambda a: a * 1, y)
        return helper_cached(jnp.sum(y) * jnp.ones(2)) + np.float32(0)

    f1 = autograph.function(body)
    f2 = autograph.function(body)
    f1(jnp.ones(2))
    f2(jnp.ones(2))
    f1(jnp.ones(3))
    for fn in seen:
        module = (fn.__module__ or "").split(".")[0]
        assert module not in ("jax", "numpy", "copy", "autograph"), fn
    assert converted.count("helper_cached") == 1
    assert converted.count("body") <= 1


# -- composition and AOT ------------------------------------------------------------------------


@pytest.fixture
def branchy():
    @autograph.function
    def f(x):
        if x.sum() > 0:
            return (x ** 2).sum()
        return (-x).sum()

    return f


def test_grad(branchy):
    np.testing.assert_allclose(jax.grad(branchy)(jnp.array([1.0, 2.0])), [2.0, 4.0])
    np.testing.assert_allclose(jax.grad(branchy)(jnp.array([-1.0, -2.0])), [-1.0, -1.0])


def test_vmap(branchy):
    np.testing.assert_allclose(jax.vmap(branchy)(jnp.array([[1.0, 2.0], [-1.0, -2.0]])), [5.0, 3.0])


def test_jit_of_function(branchy):
    np.testing.assert_allclose(jax.jit(branchy)(jnp.array([1.0, 2.0])), 5.0)
    np.testing.assert_allclose(jax.jit(lambda x: branchy(x) * 2)(-jnp.ones(3)), 6.0)


def test_lower(branchy):
    lowered = branchy.lower(jnp.ones(2))
    assert isinstance(lowered, jax.stages.Lowered)
    assert "stablehlo" in lowered.as_text()
    np.testing.assert_allclose(lowered.compile()(jnp.array([1.0, 2.0])), 5.0)
    np.testing.assert_allclose(branchy.lower(TensorSpec([3], jnp.float32)).compile()(jnp.ones(3)), 3.0)
    np.testing.assert_allclose(
        branchy.lower(jax.ShapeDtypeStruct((3,), jnp.float32)).compile()(-jnp.ones(3)), 3.0)


def test_trace(branchy):
    traced = branchy.trace(jnp.ones(2))
    assert isinstance(traced, jax.stages.Traced)
    assert "cond" in str(traced.jaxpr)
    assert re.search(r"f32\[d\d+\]", str(branchy.trace(TensorSpec([None], jnp.float32)).jaxpr))


def test_lower_with_static_argument():
    @autograph.function
    def pw(x, n):
        for _ in range(n):
            x = x + 1
        return x

    np.testing.assert_allclose(pw.lower(jnp.zeros(2), 3).compile()(jnp.zeros(2)), [3.0, 3.0])


def test_not_picklable(branchy):
    import pickle

    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(branchy)


def test_concrete_function_takes_the_arrays_alone_or_the_whole_call():
    @autograph.function
    def scaled(x, n, scale=2.0):
        for _ in range(n):
            x = x * scale
        return x

    cf = scaled.get_concrete_function(jnp.ones(3), 2)
    want = np.full(3, 4.0)
    np.testing.assert_allclose(cf(jnp.ones(3)), want)          # Python values bound
    np.testing.assert_allclose(cf(jnp.ones(3), 2), want)       # the original call
    np.testing.assert_allclose(cf(jnp.ones(3), n=2), want)
    with pytest.raises(ValueError, match="traced with the Python value 2"):
        cf(jnp.ones(3), 3)
