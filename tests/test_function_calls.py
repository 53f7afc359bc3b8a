"""``autograph.function``: the call forms (functions, methods, jit options) and eager mode."""

from __future__ import annotations

import asyncio
import functools
import threading

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import TensorSpec
from autograph.function import RETRACE_WINDOW
from tests.helpers import count


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


class _Gain:
    def __init__(self, k):
        self.k = k

    def call(self, x):
        if x.sum() > 0:
            return x * self.k
        return x

    def __call__(self, x):
        return self.call(x) + 1.0


def test_bound_method_wrapped():
    net = _Gain(4.0)
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


def _settled(f, x):
    """``f`` called past the retrace window: plain calls then take its fastest path."""
    for _ in range(RETRACE_WINDOW + 2):
        f(x)
    return f


def _in_cpp_dispatch(f) -> bool:
    return type(f.func).__name__ == "PjitFunction"  # jax.jit's C++ dispatcher


def test_eager_mode_switched_off_leaves_calls_in_the_cpp_dispatch(eager_off):
    x = jnp.ones(3)
    if not _in_cpp_dispatch(_settled(autograph.function(lambda v: v - 1), x)):
        pytest.skip("this JAX has no C++ dispatcher to build")
    log = []

    def add_one(v):
        log.append(type(v))
        return v + 1

    before = _settled(autograph.function(add_one), x)
    autograph.run_functions_eagerly(True)
    assert not _in_cpp_dispatch(before)  # every call checks eager mode now
    before(x)
    assert log[-1] is type(x)  # ran eagerly, on the concrete array
    autograph.run_functions_eagerly(False)
    with autograph.run_eagerly():
        pass
    after = _settled(autograph.function(lambda v: v * 2), x)
    assert _in_cpp_dispatch(after)
    assert _in_cpp_dispatch(_settled(before, x))
    np.testing.assert_allclose(before(x), [2.0] * 3)
    np.testing.assert_allclose(after(x), [2.0] * 3)


def test_a_task_started_in_an_eager_block_runs_eagerly_after_it(eager_off):
    log = []

    @autograph.function
    def f(x):
        log.append(type(x))
        return x + 1

    x = jnp.ones(2)

    async def call():
        return f(x)

    async def main():
        with autograph.run_eagerly():
            task = asyncio.ensure_future(call())  # with a copy of the block's context
        assert not autograph.functions_run_eagerly()
        return await task

    np.testing.assert_allclose(asyncio.run(main()), [2.0, 2.0])
    assert log == [type(x)]  # not traced: eager, as in the block
    f(x)
    assert len(log) == 2 and log[-1] is not type(x)  # outside it: traced


def test_eager_mode_still_traces_a_call_on_tracers():
    # as `tf.function` inside a graph: eager mode is for calls with concrete values
    @autograph.function
    def sign_flip(x):
        if x.sum() > 0:
            return x
        return -x

    with autograph.run_eagerly():
        assert jax.jit(lambda v: sign_flip(v) + 1)(jnp.ones(2)).tolist() == [2.0, 2.0]
        assert jax.vmap(sign_flip)(-jnp.ones((3, 2))).tolist() == [[1.0, 1.0]] * 3
        assert sign_flip(jnp.ones(2)).tolist() == [1.0, 1.0]


def test_a_bound_method_or_callable_object_traces_again_when_an_attribute_changes():
    # `m.call = autograph.function(m.call)` (the TensorFlow guide's form) and
    # `autograph.function(obj)` key their traces by the object's attributes, as a
    # method decorated in its class does: Python sees the change, and so do they
    m = _Gain(2.0)
    m.call = autograph.function(m.call)
    c = _Gain(2.0)
    fc = autograph.function(c)
    x = jnp.ones(2)
    np.testing.assert_allclose(m.call(x), [2.0, 2.0])
    np.testing.assert_allclose(fc(x), [3.0, 3.0])
    m.k = c.k = 5.0
    np.testing.assert_allclose(m.call(x), [5.0, 5.0])
    np.testing.assert_allclose(fc(x), [6.0, 6.0])
    np.testing.assert_allclose(m.call(-x), -x)
    assert m.call.experimental_get_tracing_count() == 2  # k = 2, k = 5 (the `if` is staged)
    np.testing.assert_allclose(m.call(x), [5.0, 5.0])
    assert m.call.experimental_get_tracing_count() == 2  # unchanged: no new trace


class _Ops:
    @autograph.function
    @staticmethod
    def clipped(x):
        if x.sum() > 1:
            return x / x.sum()
        return x

    @autograph.function
    @classmethod
    def scaled(cls, x):
        if x.sum() > 0:
            return x * cls.FACTOR
        return x

    FACTOR = 3.0


def test_function_above_staticmethod_and_classmethod_binds_as_they_do():
    x = jnp.array([1.0, 3.0])
    for call in (_Ops.clipped, _Ops().clipped):
        np.testing.assert_allclose(call(x), [0.25, 0.75])
        np.testing.assert_allclose(call(x / 10), [0.1, 0.3])
    for call in (_Ops.scaled, _Ops().scaled):
        np.testing.assert_allclose(call(x), [3.0, 9.0])
        np.testing.assert_allclose(call(-x), -x)


@autograph.function
def _factorial(n):
    if n <= 1:
        return 1
    return n * _factorial(n - 1)


def test_a_function_calling_itself_with_a_traced_stopping_condition_says_so():
    assert _factorial(5) == 120  # Python values: Python's recursion, in one trace
    assert _factorial.experimental_get_tracing_count() == 1
    with pytest.raises(autograph.ConversionError, match="if its stopping condition depends "
                                                        "on arrays, it never stops"):
        _factorial(jnp.array(5))  # was JAX's "RecursionError: Recursively calling <weakref"


def _doubling(x, n):
    if n == 0:
        return x
    if x > 1000:
        return x
    return _doubling(x * 2, n - 1)


def test_a_recursion_python_stops_first_is_said_once_where_it_started():
    # a traced `n`: Python's recursion limit comes before autograph's count of levels
    with pytest.raises(autograph.ConversionError, match="Python's recursion limit") as info:
        jax.jit(autograph.convert(_doubling))(jnp.float32(1.0), 30)
    assert "_doubling" in str(info.value) and len(str(info.value)) < 2000
    # a Python `n`: followed as deep as it goes within the limit of levels
    assert float(jax.jit(autograph.convert(_doubling), static_argnums=1)(1.0, 20)) == 1024.0
