"""Python's built-ins on traced values (runtime/builtins): Python's answer, or a clear error."""

from __future__ import annotations

import builtins
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import BranchError, BuiltinError, ConditionError
from autograph.converters import call_trees
from autograph.runtime.functions import calls
from autograph.runtime.python import builtins as traced_builtins
from tests.helpers import _file_line, _raises, check_equivalent, primitives, runs_as_python

F32 = np.float32


def _jitted(fn, *args, static_argnums=()):
    jf = jax.jit(autograph.convert(fn), static_argnums=static_argnums)
    return jf(*[a if i in static_argnums else jnp.asarray(a) for i, a in enumerate(args)])


def _same_as_python(fn, *arg_sets, static_argnums=()):
    """``jax.jit(convert(fn))`` gives the plain-Python result of ``fn`` on each set."""
    for args in arg_sets:
        want = fn(*args)
        got = _jitted(fn, *args, static_argnums=static_argnums)
        assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want), (
            got, want)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


def test_the_converter_routes_exactly_the_runtimes_builtins():
    replaced = {name for name, op in vars(builtins).items()
                if callable(op) and calls.resolve(op) is not op and name not in (
                    "range", "enumerate", "zip", "reversed", "print")}
    assert replaced == call_trees.TRACED_BUILTINS
    assert {n[:-1] for n in traced_builtins.__all__ if n != "in_"} == replaced


# ---------------------------------------------------------------------------
# Casts: float, int, bool, complex


def float_of_count(x):
    n = x > 0
    return float(n) + float(x.astype(jnp.int32))


def int_truncates(x):
    return int(x), int(-x), int(x > 1.0)


def bool_of_number(x):
    return bool(x), bool(x - x)


def complex_of(x, y):
    return complex(x), complex(x, y), complex(x, -0.0)


def test_casts_give_pythons_value():
    check_equivalent(float_of_count, (F32(2.5),), (F32(-3.0),))
    check_equivalent(int_truncates, (F32(2.7),), (F32(-0.5),), (F32(3.0),))
    check_equivalent(bool_of_number, (F32(0.0),), (F32(-2.0),), (F32(np.nan),))
    check_equivalent(complex_of, (F32(1.5), F32(-2.0)), (F32(0.0), F32(3.0)))


@pytest.mark.parametrize("cast, value, dtype", [
    pytest.param(float, 3, jnp.float32, id="float"),
    pytest.param(int, 2.7, jnp.int32, id="int"),
    pytest.param(complex, 2.0, jnp.complex64, id="complex"),
])
def test_casts_are_weakly_typed_like_python_numbers(cast, value, dtype):
    def f(x):
        return cast(x)

    out = jax.jit(autograph.convert(f))(jnp.asarray(value))
    assert out.dtype == dtype and out.weak_type


def test_float_promotes_as_a_python_float():
    def scaled(n, h):
        return float(n) * h

    h = jnp.ones(2, jnp.bfloat16)
    assert _jitted(scaled, np.int32(3), h).dtype == jnp.bfloat16 == scaled(3, h).dtype


def test_bool_is_a_traced_condition():
    def f(x):
        flag = bool(x)
        if flag:
            return x + 1.0
        return x - 1.0

    check_equivalent(f, (F32(0.0),), (F32(2.0),))


def float_of_array(xs):
    return float(xs)


def int_of_complex(z):
    return int(z)


def bool_of_array(xs):
    return bool(xs)


def test_casts_refuse_what_python_refuses():
    _raises(BuiltinError, lambda: _jitted(float_of_array, np.ones(3, F32)), float_of_array,
            "return float(xs)")
    _raises(BuiltinError, lambda: _jitted(float_of_array, np.ones(1, F32)), float_of_array,
            "return float(xs)")
    _raises(BuiltinError, lambda: _jitted(int_of_complex, np.complex64(1j)), int_of_complex,
            "return int(z)")
    _raises(ConditionError, lambda: _jitted(bool_of_array, np.ones(2, F32)), bool_of_array,
            "return bool(xs)")


def int_of(x):
    return int(x) + 1


@pytest.mark.parametrize("value, error, text", [
    pytest.param(np.nan, ValueError, "cannot convert float NaN to integer", id="nan"),
    pytest.param(-np.inf, OverflowError, "cannot convert float infinity", id="infinity"),
    pytest.param(3e10, OverflowError, "does not fit int32", id="past int32"),
])
def test_int_raises_as_the_program_runs(value, error, text):
    f = autograph.function(int_of)
    assert int(f(F32(2.5))) == 3
    with pytest.raises(error, match=text):
        f(F32(value))


def test_int_of_an_unsigned_past_int32_raises():
    f = autograph.function(int_of)
    assert int(f(np.uint32(7))) == 8
    with pytest.raises(OverflowError, match="does not fit int32"):
        f(np.uint32(2 ** 31))


def test_int_checks_only_where_a_branch_runs():
    def f(x):
        if x < 1e6:
            return int(x)
        return -1

    g = autograph.function(f)
    assert int(g(F32(5.5))) == 5 and int(g(F32(1e12))) == -1
    assert [int(v) for v in jax.vmap(autograph.convert(f))(jnp.array([2.5, 1e12]))] == [2, -1]


def test_traced_int_still_fails_where_python_needs_an_int():
    def shape(n):
        return jnp.zeros(int(n))

    def list_index(x):
        xs = [1.0, 2.0]
        return xs[int(x)]

    for fn, snippet in ((shape, "jnp.zeros(int(n))"), (list_index, "xs[int(x)]")):
        with pytest.raises(TypeError) as info:
            _jitted(fn, 1)
        assert _file_line(fn, snippet) in "\n".join(getattr(info.value, "__notes__", ()))


def test_cast_of_a_staged_loop_index():
    def f(x):
        for i in range(20):
            x = x + float(i) * 0.5 + int(i) % 3
        return x

    check_equivalent(f, (F32(1.0),))
    jaxpr = jax.make_jaxpr(autograph.convert(f))(1.0)
    assert "scan" in primitives(jaxpr)  # staged: the index is a traced int32


def test_a_list_indexed_by_int_of_the_index_still_runs():
    def f(x):
        ws = [1.0 + k / 100 for k in range(20)]
        for i in range(20):
            x = x * ws[int(i)]
        return x

    with runs_as_python("loop index"):
        check_equivalent(f, (F32(1.5),))


def test_float_grad_and_vmap():
    def f(x):
        return float(x) ** 2

    assert jax.grad(autograph.convert(f))(3.0) == 6.0
    np.testing.assert_allclose(jax.vmap(autograph.convert(int_of))(jnp.array([1.5, -1.5])),
                               [2, 0])


# ---------------------------------------------------------------------------
# Programs: edit distance, steps after a traced break, a perceptron


def edit_distance(a, b):
    n, m = a.shape[0], b.shape[0]
    d = jnp.zeros((n + 1, m + 1), jnp.int32)
    for i in range(n + 1):
        d = d.at[i, 0].set(i)
    for j in range(m + 1):
        d = d.at[0, j].set(j)
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d = d.at[i, j].set(min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + cost))
    return d[n, m]


def edit_distance_within(a, b, limit):
    """The distance, or -1 as soon as a whole row exceeds ``limit`` (a traced break)."""
    n, m = a.shape[0], b.shape[0]
    d = jnp.zeros((n + 1, m + 1), jnp.int32)
    for j in range(m + 1):
        d = d.at[0, j].set(j)
    result = -1
    for i in range(1, n + 1):
        d = d.at[i, 0].set(i)
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d = d.at[i, j].set(min(d[i - 1, j] + 1, d[i, j - 1] + 1, d[i - 1, j - 1] + cost))
        if min(d[i]) > limit:
            break
    else:
        result = d[n, m]
    return result


def _words():
    return [(np.array([1, 2, 3, 4, 5]), np.array([1, 3, 4, 6])),
            (np.array([7, 7, 7]), np.array([7, 7, 7])),
            (np.array([1, 2, 3]), np.array([4, 5, 6, 7, 8]))]


def test_edit_distance():
    jf = jax.jit(autograph.convert(edit_distance))
    for a, b in _words():
        assert int(jf(a, b)) == edit_distance(a, b)


def test_edit_distance_with_a_traced_break():
    jf = jax.jit(autograph.convert(edit_distance_within))
    for a, b in _words()[:2]:
        for limit in (0, 1, 10):
            want = edit_distance_within(a, b, limit)
            assert int(jf(a, b, limit)) == int(want), (a, b, limit)


def steps_until(x, limit):
    steps = 0
    for _ in range(10):
        if x > limit:
            break
        x = x * 2.0
        steps += 1
    return float(steps)


def test_float_of_a_count_after_a_traced_break():
    check_equivalent(steps_until, (F32(0.5), F32(10.0)), (F32(3.0), F32(10.0)),
                     (F32(100.0), F32(10.0)))


def perceptron(X, y, epochs):
    w = jnp.zeros(X.shape[1])
    b = 0.0
    mistakes = 0
    for _ in range(epochs):
        for i in range(X.shape[0]):
            predicted = 1.0 if X[i] @ w + b >= 0.0 else -1.0
            update = 0.5 * (y[i] - predicted)
            w = w + update * X[i]
            b = b + update
            mistakes += int(update != 0.0)
    return w, b, mistakes


def test_perceptron():
    rng = np.random.RandomState(0)
    X = rng.randn(20, 2).astype(F32)  # 20 rows: the inner loop is one `lax.scan`
    y = np.where(X[:, 0] - 0.5 * X[:, 1] > 0.2, 1.0, -1.0).astype(F32)
    want = perceptron(jnp.asarray(X), jnp.asarray(y), 3)
    assert want[2] > 0
    got = jax.jit(autograph.convert(perceptron), static_argnums=2)(X, y, 3)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    assert int(got[2]) == want[2]


# ---------------------------------------------------------------------------
# min and max


def relu_and_clip(x):
    return max(x, 0.0), min(x, 1), max(x, -x, 0.5), min([x, 2.0 * x, 3.0])


def min_max_of_an_array(a):
    return min(a), max(a)


def min_max_of_a_generator(a):
    return min(v * v for v in a), max((a[0], a[1]))


def test_min_max_of_values():
    check_equivalent(relu_and_clip, (F32(-2.0),), (F32(0.3),), (F32(4.0),))
    check_equivalent(min_max_of_a_generator, (np.array([3.0, -1.0, 2.0], F32),))


@pytest.mark.parametrize("a", [
    pytest.param([3.0, -1.0, 2.0, -1.0], id="ties"),
    pytest.param([np.nan, 1.0, -2.0], id="NaN first"),
    pytest.param([1.0, np.nan, -2.0], id="NaN inside"),
    pytest.param([0.0, -0.0], id="signed zeros"),
    pytest.param([5.0], id="one"),
])
def test_min_max_of_an_array_is_pythons_pick(a):
    a = np.array(a, F32)
    want = min_max_of_an_array(list(a))
    got = _jitted(min_max_of_an_array, a)
    for g, w in zip(got, want):
        assert g.shape == () and g.dtype == jnp.float32
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
        assert np.signbit(g) == np.signbit(w)


def test_min_max_of_int_and_bool_arrays():
    for a in (np.array([3, -1, 7], np.int32), np.array([False, True, False])):
        got = _jitted(min_max_of_an_array, a)
        assert [g.dtype for g in got] == [a.dtype, a.dtype]
        assert [g.item() for g in got] == [v.item() for v in min_max_of_an_array(a)]


def test_min_max_dtype_promotes_as_a_traced_if():
    def f(n, x):
        return min(n, x), max(n, 2)

    got = jax.jit(autograph.convert(f))(jnp.int32(3), jnp.float32(2.5))
    assert got[0].dtype == jnp.float32 and float(got[0]) == 2.5
    assert got[1].dtype == jnp.int32 and int(got[1]) == 3


def test_min_max_with_key_and_default():
    def argmin_by_key(d):
        return min(range(d.shape[0]), key=lambda i: d[i])

    def best_pair(d):
        return max([(d[0], 0), (d[1], 1), (d[2], 2)], key=lambda p: p[0])

    def with_default(a):
        return min(a[:0], default=-1.0), max([], default=0), min(a, default=7.0)

    d = np.array([3.0, -1.0, -1.0], F32)
    assert int(_jitted(argmin_by_key, d)) == argmin_by_key(d) == 1
    check_equivalent(best_pair, (d,), (np.array([0.0, 5.0, 5.0], F32),))
    check_equivalent(with_default, (d,))


def test_min_of_rows_is_ambiguous():
    def rows(a):
        return min(a)

    _raises(ConditionError, lambda: _jitted(rows, np.ones((3, 2), F32)), rows, "return min(a)")
    # a column (one element per row) compares as Python does; one row is returned as it is
    check_equivalent(rows, (np.array([[2.0], [-1.0]], F32),), (np.ones((1, 3), F32),))


def test_min_max_grad_reaches_the_item_python_picks():
    def three(x, y):
        return min(x, y, 2.0 * x)

    gx, gy = jax.grad(autograph.convert(three), argnums=(0, 1))(1.0, 1.0)
    assert (float(gx), float(gy)) == (1.0, 0.0)  # a tie goes to the first
    grads = jax.grad(lambda a: autograph.convert(min_max_of_an_array)(a)[1])(
        jnp.array([1.0, 3.0, 3.0]))
    np.testing.assert_array_equal(grads, [0.0, 1.0, 0.0])


def test_min_max_under_vmap():
    f = autograph.convert(relu_and_clip)
    out = jax.vmap(f)(jnp.array([-2.0, 0.3, 4.0]))
    for k, x in enumerate([-2.0, 0.3, 4.0]):
        want = relu_and_clip(F32(x))
        np.testing.assert_allclose([o[k] for o in out], want, rtol=1e-6)


def test_rebound_min_keeps_its_meaning():
    def f(a):
        return max(a)

    rebound = dict(f.__globals__, max=jnp.max)
    g = types.FunctionType(f.__code__, rebound, "g")
    a = np.ones((2, 3), F32)
    np.testing.assert_array_equal(jax.jit(autograph.convert(g))(a), 1.0)


# ---------------------------------------------------------------------------
# abs, round, divmod, pow, sum: the array's own operators, plus pow's negative exponent


def numbers(x, n):
    return abs(x), round(x), round(x, 1), divmod(x, 0.75), divmod(n, -3), sum([x, n], 0.5)


def test_number_builtins():
    check_equivalent(numbers, (F32(2.5), np.int32(7)), (F32(-3.5), np.int32(-8)))
    got = jax.jit(autograph.convert(numbers))(2.5, 7)
    assert got[1].dtype == jnp.int32 and int(got[1]) == 2  # half to even, an int


def test_abs_grad():
    assert jax.grad(autograph.convert(lambda x: abs(x) * 2.0))(-3.0) == -2.0


def pow_negative(n):
    return pow(n, -2), pow(n, 2)


def pow_mod(n):
    return pow(n, 3, 5)


def test_pow():
    want = pow_negative(4)
    got = _jitted(pow_negative, np.int32(4))
    assert got[0].dtype == jnp.float32 and float(got[0]) == want[0]
    assert got[1].dtype == jnp.int32 and int(got[1]) == want[1]
    _raises(BuiltinError, lambda: _jitted(pow_mod, np.int32(4)), pow_mod, "pow(n, 3, 5)")


# ---------------------------------------------------------------------------
# any, all


def any_all(x, a):
    return (any([x > 1, x < -1]), all((x > 0, x < 10)), any(v > 2.0 for v in a), all(a),
            any(a > 5.0), all([]))


def test_any_all():
    a = np.array([1.0, 3.0, 0.5], F32)
    check_equivalent(any_all, (F32(2.0), a), (F32(-0.5), a), (F32(20.0), a * 0))


def test_any_all_stop_at_a_python_value():
    seen = []

    def check(v):
        seen.append(v)
        return v

    def f(x):
        return any(check(v) for v in (x > 0, True, x < 0)), all([x > 0, 0, x])

    got = _jitted(f, F32(1.0))
    assert bool(got[0]) is True and bool(got[1]) is False
    assert len(seen) == 2  # the Python True stops the generator


def test_any_all_under_vmap_and_in_a_condition():
    def f(x):
        if any([x > 2.0, x < -2.0]):
            return x * 0.0
        return x

    check_equivalent(f, (F32(3.0),), (F32(0.5),))
    np.testing.assert_allclose(jax.vmap(autograph.convert(f))(jnp.array([3.0, 0.5])),
                               [0.0, 0.5])


def test_any_of_rows_is_ambiguous():
    def f(a):
        return any(a)

    _raises(ConditionError, lambda: _jitted(f, np.ones((2, 2), F32)), f, "return any(a)")


# ---------------------------------------------------------------------------
# sorted


def sorted_values(a, x):
    return sorted(a), sorted(a, reverse=True), sorted([x, 1.0, -x]), sorted(
        range(a.shape[0]), key=lambda i: a[i])


def test_sorted():
    a = np.array([2.0, -1.0, 2.0, 0.5], F32)
    want = sorted_values(a, F32(3.0))
    got = _jitted(sorted_values, a, F32(3.0))
    assert all(isinstance(part, list) for part in got)
    for g, w in zip(got, want):
        assert len(g) == len(w)
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert all(v.shape == () for v in got[0])


def test_sorted_grad_follows_the_items():
    def top(a):
        return sorted(a, reverse=True)[0] * 2.0

    np.testing.assert_array_equal(jax.grad(autograph.convert(top))(jnp.array([1.0, 3.0, 2.0])),
                                  [0.0, 2.0, 0.0])


# ---------------------------------------------------------------------------
# in


def membership(x, a):
    return x in a, x not in a, x in (1.0, 2.0), x in [x, 5.0], 3 in range(0, 10, 3)


def test_in():
    a = np.array([1.0, 2.0, 4.0], F32)
    check_equivalent(membership, (F32(2.0), a), (F32(3.0), a))


@pytest.mark.parametrize("x", [2.0, 3.0])
def test_in_a_traced_array_on_every_supported_jax(x):
    # JAX before 0.8 gives its tracers no `__contains__` (`make test-oldest` runs this)
    def f(x, a):
        return x in a, x not in a

    a = jnp.array([1.0, 2.0, 4.0])
    got = jax.jit(autograph.convert(f))(jnp.float32(x), a)
    assert tuple(bool(g) for g in got) == f(np.float32(x), np.asarray(a))


def test_in_as_a_condition():
    def f(c, a):
        if c in a:
            return 1
        while c not in a and c < 10:
            c = c + 1
        return c

    a = np.array([3, 7], np.int32)
    check_equivalent(f, (np.int32(3), a), (np.int32(4), a), (np.int32(8), a))


def test_in_range_of_a_traced_value():
    def f(n):
        return n in range(-5, 5, 2), n in range(10, 0, -3)

    for n in (-5, -4, 3, 4, 7, 10, 11):
        got = _jitted(f, np.int32(n))
        assert tuple(bool(g) for g in got) == f(n), n


# ---------------------------------------------------------------------------
# `and`/`or` tests with Python operands


def gated(x, mean, y):
    if mean > 0 and (x > 1) and y:
        return x + 1.0
    return x - 1.0


def gated_while(x, y):
    while x < 10.0 and y:
        x = x + 3.0
    return x


def gated_not(x, y):
    return 1.0 if not (x > 1 or y) else 2.0


@pytest.mark.parametrize("y", [None, 0, 1, "s", (), (0,)])
def test_python_operand_decides_by_its_truth(y):
    for x, mean in ((2.0, 1.0), (0.5, 1.0), (2.0, -1.0)):
        assert float(_jitted(gated, F32(x), F32(mean), y, static_argnums=(2,))) == gated(
            x, mean, y)
    for x in (0.0, 20.0):
        assert float(_jitted(gated_while, F32(x), y, static_argnums=(1,))) == gated_while(x, y)
        assert float(_jitted(gated_not, F32(x), y, static_argnums=(1,))) == gated_not(x, y)


def and_value(x, y):
    z = x > 1 and y
    return z


def test_python_operand_as_a_value_is_refused_clearly():
    e = _raises(BranchError, lambda: _jitted(and_value, F32(2.0), None, static_argnums=(1,)),
                and_value, "z = x > 1 and y")
    assert "`and`" in str(e) and "None" in str(e)


def _grown_if_positive(x, y):
    if x > 0:
        y = y + 1
    if isinstance(y, int):
        return x * 100
    return x


def _halvings(x):
    n = 0
    while x > 1:
        x = x / 2
        n += 1
    return x, isinstance(n, int), type(n) is int


def _scale_kind(x):
    s = 1.0
    if x > 0:
        s = 2.0
    if type(s) is float and not isinstance(s, jax.Array):
        return x * s
    return x


@pytest.mark.parametrize("x", [1.0, -1.0, 8.0])
def test_isinstance_and_type_of_a_python_number_a_staged_block_carried(x):
    # eagerly `y`, `n`, `s` are Python numbers; staged they are arrays, whose type a
    # check would see (a branch taken on that, silently, before)
    conv = jax.jit(autograph.convert(_grown_if_positive), static_argnums=1)
    assert float(conv(jnp.float32(x), 3)) == _grown_if_positive(x, 3)
    _, is_int, type_is_int = jax.jit(autograph.convert(_halvings))(jnp.float32(x))
    assert bool(is_int) and bool(type_is_int)
    assert float(jax.jit(autograph.convert(_scale_kind))(jnp.float32(x))) == _scale_kind(x)


def test_isinstance_and_type_keep_their_meaning_on_arrays_and_classes():
    def checks(x):
        made = type("Made", (), {"k": 1})
        return isinstance(x, jax.Array), type(x) is float, made.k, isinstance(3, (str, int))

    got = jax.jit(lambda x: jnp.stack([jnp.asarray(v) for v in autograph.convert(checks)(x)]))(
        jnp.float32(1.0))
    assert [bool(v) for v in got] == [True, False, True, True]
