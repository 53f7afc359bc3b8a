"""``autograph.function``: ``TensorSpec``, ``input_signature`` and concrete functions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import TensorSpec
from tests.helpers import count

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


def test_a_function_of_a_function_wraps_the_same_python_function():
    @autograph.function(input_signature=[autograph.TensorSpec([], jnp.float32)])
    def h(x):
        if x > 0:
            return x
        return -x

    again = autograph.function(h, reduce_retracing=True)
    assert again.python_function is h.python_function
    assert again.input_signature == h.input_signature  # the inner options are kept
    assert float(again(jnp.float32(-2.0))) == 2.0 == float(h(jnp.float32(-2.0)))


@pytest.mark.parametrize("signature,error,words", [
    (3, TypeError, "a list of `autograph.TensorSpec`s"),
    (["float32"], TypeError, "input_signature[0] holds 'float32'"),
])
def test_a_malformed_input_signature_is_a_clear_error(signature, error, words):
    with pytest.raises(error) as e:
        autograph.function(lambda x: x + 1, input_signature=signature)
    assert words in str(e.value)


@pytest.mark.parametrize("shape,error,words", [
    ("abc", TypeError, "a sequence of sizes"),
    ([-2], ValueError, "has the size -2"),
    ([1.5], TypeError, "is 1.5"),
])
def test_a_malformed_tensor_spec_shape_is_a_clear_error(shape, error, words):
    with pytest.raises(error) as e:
        TensorSpec(shape, jnp.float32)
    assert words in str(e.value)


def test_an_input_signature_covers_star_args_one_spec_each():
    @autograph.function(input_signature=[autograph.TensorSpec([2], jnp.float32)] * 2)
    def total(*xs):
        return sum(xs)

    np.testing.assert_allclose(total(jnp.ones(2), jnp.ones(2)), [2.0, 2.0])
    np.testing.assert_allclose(total(np.ones(2, np.float32), 2 * jnp.ones(2)), [3.0, 3.0])
    with pytest.raises(ValueError, match=r"`xs\[1\]`"):
        total(jnp.ones(2), jnp.ones(3))
    with pytest.raises(TypeError, match="input_signature of 2 arguments but was called with 3"):
        total(jnp.ones(2), jnp.ones(2), jnp.ones(2))


def test_a_symbolic_concrete_function_with_a_python_value_or_a_method_is_callable():
    @autograph.function
    def stepped(x, n):
        for _ in range(n):
            x = x + 1
        return x

    concrete = stepped.get_concrete_function(TensorSpec([None], jnp.float32), 3)
    for size in (2, 5):
        np.testing.assert_allclose(concrete(jnp.ones(size)), 4 * np.ones(size))
        np.testing.assert_allclose(concrete(jnp.ones(size), 3), 4 * np.ones(size))

    class Summed:
        @autograph.function(input_signature=[TensorSpec([None], jnp.float32)])
        def f(self, x):
            if x.sum() > 2:
                return x.sum()
            return -x.sum()

    bound = Summed().f.get_concrete_function()
    assert float(bound(jnp.ones(4))) == 4.0 and float(bound(jnp.ones(1))) == -1.0
