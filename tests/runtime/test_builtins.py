"""`runtime.builtins` called directly: `float_`, `int_`, `min_`, `max_`, `sorted_`,
`map_` and `filter_`, on Python values (where each is the built-in itself, with
its results and its exceptions) and on traced values under ``jax.jit`` (where
each gives Python's answer as an array, compared with the built-in run on the
same numbers).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph.runtime.core import run_time_errors
from autograph.runtime.python.builtins import filter_, float_, int_, map_, max_, min_, sorted_

NAN = float("nan")

# ---------------------------------------------------------------------------
# Python values: the built-ins themselves


@pytest.mark.parametrize("op, args, kwargs", [
    (float_, ("1.5",), {}), (float_, (3,), {}), (float_, (), {}), (float_, (" -2e3 ",), {}),
    (int_, ("12",), {}), (int_, ("ff", 16), {}), (int_, (2.9,), {}), (int_, (-2.9,), {}),
    (int_, (True,), {}), (int_, (), {}), (int_, ("0b101",), {"base": 0}),
    (min_, (3, 1, 2), {}), (min_, ([3, 1, 2],), {}), (min_, ([],), {"default": "d"}),
    (min_, (["bb", "a", "ccc"],), {"key": len}), (min_, ((1, 1.0),), {}),
    (max_, (3, 1, 2), {}), (max_, ("hello",), {}), (max_, ([], ), {"default": None}),
    (max_, ([1.0, NAN, 0.5],), {}), (min_, ([NAN, 1.0],), {}),
    (sorted_, ([3, 1, 2],), {}), (sorted_, ("cab",), {"reverse": True}),
    (sorted_, ([(1, "b"), (0, "z"), (1, "a")],), {"key": lambda t: t[0]}),
])
def test_python_values_give_the_builtins_result(op, args, kwargs):
    builtin = {float_: float, int_: int, min_: min, max_: max, sorted_: sorted}[op]
    got, want = op(*args, **kwargs), builtin(*args, **kwargs)
    assert type(got) is type(want)
    assert got == want or (isinstance(want, float) and math.isnan(want) and math.isnan(got))


@pytest.mark.parametrize("op, args, kwargs, error", [
    (float_, ("x",), {}, ValueError), (float_, ([1.0],), {}, TypeError),
    (int_, ("1.5",), {}, ValueError), (int_, (float("inf"),), {}, OverflowError),
    (int_, (NAN,), {}, ValueError), (min_, ([],), {}, ValueError), (max_, (), {}, TypeError),
    (min_, ([1, "a"],), {}, TypeError), (sorted_, ([1, None],), {}, TypeError),
])
def test_python_values_raise_the_builtins_errors(op, args, kwargs, error):
    builtin = {float_: float, int_: int, min_: min, max_: max, sorted_: sorted}[op]
    with pytest.raises(error) as want:
        builtin(*args, **kwargs)
    with pytest.raises(error) as got:
        op(*args, **kwargs)
    assert str(got.value) == str(want.value)


def test_min_and_max_pick_the_first_of_equal_items():
    a, b = [1], [1]
    assert min_(a, b) is a and max_(a, b) is a
    assert min_([b, a]) is b


def test_min_with_a_key_calls_it_once_per_item():
    calls = []

    def key(v):
        calls.append(v)
        return -v

    assert min_([1, 3, 2], key=key) == 3
    assert calls == [1, 3, 2]


def test_map_and_filter_of_python_values_are_lazy():
    seen = []

    def double(v):
        seen.append(v)
        return 2 * v

    it = map_(double, [1, 2, 3])
    assert seen == []  # lazy, as Python's map
    assert list(it) == [2, 4, 6] and seen == [1, 2, 3]
    assert list(map_(lambda a, b: a - b, [5, 6, 7], [1, 2])) == [4, 4]
    assert list(filter_(lambda v: v % 2, range(7))) == [1, 3, 5]
    assert list(filter_(None, [0, 1, "", "a", None, [0]])) == [1, "a", [0]]


# ---------------------------------------------------------------------------
# float_ and int_ on traced values


def test_float_of_a_traced_int():
    f = jax.jit(float_)
    for n in (0, 3, -7):
        got = f(jnp.int32(n))
        assert float(got) == float(n)
        assert jnp.issubdtype(got.dtype, jnp.floating) and got.weak_type  # like a Python float


def test_float_of_a_traced_value_promotes_like_a_python_float():
    # `float(n) * h` with h bfloat16 stays bfloat16, as `2.0 * h` does
    out = jax.jit(lambda n, h: float_(n) * h)(jnp.int32(2), jnp.bfloat16(1.5))
    assert out.dtype == jnp.bfloat16 and float(out) == 3.0


@pytest.mark.parametrize("x", [2.7, -2.7, 0.5, -0.5, 3.0, 1e6 + 0.5, -2147483648.0])
def test_int_of_a_traced_float_truncates_like_python(x):
    got = jax.jit(int_)(jnp.float32(x))
    assert int(got) == int(np.float32(x))
    assert got.dtype == jnp.int32 and got.weak_type


@pytest.mark.parametrize("op", [float_, int_])
def test_casts_of_traced_arrays_with_dimensions_are_refused(op):
    with pytest.raises(autograph.BuiltinError):
        jax.jit(op)(jnp.ones(2))


@pytest.mark.parametrize("op", [float_, int_])
def test_casts_of_traced_complex_values_are_refused(op):
    with pytest.raises(autograph.BuiltinError):
        jax.jit(op)(jnp.complex64(1 + 2j))


def test_int_of_a_traced_float_past_int32_fails_as_the_program_runs():
    f = jax.jit(int_)
    assert int(f(jnp.float32(2.0 ** 30))) == 2 ** 30
    with pytest.raises(jax.errors.JaxRuntimeError, match="does not fit int32") as info:
        f(jnp.float32(3e10)).block_until_ready()
    assert isinstance(run_time_errors.original(info.value), OverflowError)


# ---------------------------------------------------------------------------
# min_ and max_ on traced values


TRIPLES = [(3.0, 1.0, 2.0), (1.0, 2.0, 3.0), (2.0, 2.0, 1.0), (5.0, 5.0, 5.0), (-1.0, 4.0, -1.0)]


@pytest.mark.parametrize("a, b, c", TRIPLES)
def test_min_and_max_of_traced_scalars(a, b, c):
    f = jax.jit(lambda a, b, c: (min_(a, b, c), max_(a, b, c), min_([a, b, c], key=lambda v: -v),
                                 max_(jnp.stack([a, b, c]))))
    lo, hi, by_key, of_array = f(a, b, c)
    assert float(lo) == min(a, b, c) and float(hi) == max(a, b, c)
    assert float(by_key) == min([a, b, c], key=lambda v: -v)
    assert float(of_array) == max(a, b, c)


@pytest.mark.parametrize("a, b, c", TRIPLES)
def test_min_gradient_reaches_the_item_python_picks(a, b, c):
    grads = jax.jit(jax.grad(lambda a, b, c: min_(a, b, c), argnums=(0, 1, 2)))(a, b, c)
    items = [a, b, c]
    first = items.index(min(items))  # ties: the first one
    assert [float(g) for g in grads] == [1.0 if k == first else 0.0 for k in range(3)]


@pytest.mark.parametrize("xs", [[1.0, NAN, 0.5], [NAN, 1.0, 0.5], [2.0, 0.5, NAN], [3.0]])
def test_min_and_max_of_a_traced_array_with_nans_follow_python(xs):
    lo, hi = jax.jit(lambda a: (min_(a), max_(a)))(jnp.asarray(xs, jnp.float32))
    for got, want in ((lo, min(xs)), (hi, max(xs))):
        if math.isnan(want):
            assert math.isnan(float(got))
        else:
            assert float(got) == want


def test_min_of_traced_arrays_of_several_elements_is_refused():
    with pytest.raises(autograph.ConditionError):
        jax.jit(lambda a: min_(a))(jnp.ones((3, 2)))


def test_min_of_traced_items_of_different_shapes_is_refused():
    with pytest.raises(autograph.BuiltinError):
        jax.jit(lambda a, v: min_([a, v], key=lambda t: jnp.sum(t)))(1.0, jnp.ones(2))


# ---------------------------------------------------------------------------
# sorted_ on traced values


@pytest.mark.parametrize("xs", [[3.0, 1.0, 2.0], [1.0, 1.0, 0.0], [5.0], [2.0, -1.0, 2.0, 0.0]])
@pytest.mark.parametrize("reverse", [False, True])
def test_sorted_of_a_traced_array(xs, reverse):
    got = jax.jit(lambda a: sorted_(a, reverse=reverse))(jnp.asarray(xs))
    assert isinstance(got, list) and all(jnp.shape(v) == () for v in got)
    assert [float(v) for v in got] == sorted(xs, reverse=reverse)


def test_sorted_with_a_traced_key_is_stable():
    pairs = [(1.0, 10.0), (0.0, 20.0), (1.0, 30.0), (0.0, 40.0)]

    def f(keys, values):
        items = [(keys[k], values[k]) for k in range(4)]
        out = sorted_(items, key=lambda t: t[0])
        return jnp.stack([v for _, v in out])

    got = jax.jit(f)(jnp.array([p[0] for p in pairs]), jnp.array([p[1] for p in pairs]))
    want = [v for _, v in sorted(pairs, key=lambda t: t[0])]
    assert got.tolist() == want


def test_sorted_of_traced_keys_of_several_elements_is_refused():
    with pytest.raises(autograph.ConditionError):
        jax.jit(lambda a, b: sorted_([a, b]))(jnp.ones(2), jnp.zeros(2))


# ---------------------------------------------------------------------------
# map_ and filter_ on traced values


def _magnitude(v):
    if v > 0:  # a Python `if` on a traced value: map_ calls the converted function
        return v
    return -v


def test_map_converts_a_user_function():
    xs = [-1.5, 2.0, 0.0, -3.0]
    got = jax.jit(lambda a: jnp.stack(list(map_(_magnitude, list(a)))))(jnp.asarray(xs))
    assert got.tolist() == [_magnitude(x) for x in xs]


def test_map_of_two_traced_iterables():
    got = jax.jit(lambda a, b: jnp.stack(list(map_(jnp.maximum, a, b))))(
        jnp.array([1.0, 5.0, -2.0]), jnp.array([3.0, 4.0, -1.0]))
    assert got.tolist() == [3.0, 5.0, -1.0]


def test_filter_with_python_verdicts_on_traced_items():
    def f(a, b):
        kept = list(filter_(lambda v: v is not None, [a, None, b]))
        return len(kept), jnp.stack(kept)

    out = {}

    def run(a, b):
        n, stacked = f(a, b)
        out["n"] = n
        return stacked

    assert jax.jit(run)(1.0, 2.0).tolist() == [1.0, 2.0]
    assert out["n"] == 2


def test_filter_with_a_traced_verdict_is_refused():
    with pytest.raises(autograph.BuiltinError):
        jax.jit(lambda a: list(filter_(lambda v: v > 0, [a, a + 1])))(1.0)
    with pytest.raises(autograph.BuiltinError):
        jax.jit(lambda a: list(filter_(None, [a])))(1.0)
