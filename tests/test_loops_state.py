"""Loop-carried state: variables born in loops, dtypes, the target, appended lists, pytrees."""

from __future__ import annotations

import re
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import BranchError, ConditionError, LoopStateError, UndefinedVariableError
from autograph import convert as conv
from tests.helpers import _line, check_equivalent, primitives


def _where(fn, text: str) -> str:
    return rf"^\S*test_loops_state\.py:{_line(fn, text)}: "


# ---------------------------------------------------------------------------
# Variables first assigned in the loop


def last_double(xs):
    for x in xs:
        y = x * 2.0
    return y


def test_first_assigned_in_body_static_trip_count():
    check_equivalent(last_double, (np.array([1.0], np.float32),),
                     (np.arange(1.0, 5.0, dtype=np.float32),))


def last_in_range(x):
    for i in range(4):
        y = x * i
    return y


def test_first_assigned_in_body_static_range():
    check_equivalent(last_in_range, (np.float32(3.0),))


def first_assigned_then_read(xs):
    for x in xs:
        if x > 0:
            z = x
        else:
            z = -x
        w = z + 1.0
    return w, z


def first_assigned_with_break(xs):
    for x in xs:
        y = x * 2.0
        if y > 5.0:
            break
    return y


def test_first_assigned_in_body_masked_scan():
    xs = np.array([1.0, 3.0, 2.0, 9.0], np.float32)
    check_equivalent(first_assigned_with_break, (xs,), (xs * 0.1,), (xs[:1],))


def test_first_assigned_in_both_branches_in_body():
    check_equivalent(first_assigned_then_read, (np.array([1.0, -4.0], np.float32),))


def assigned_on_a_python_path(xs, flag):
    for x in xs:
        if flag:
            y = x
    return y


def test_staged_loop_that_leaves_a_variable_unassigned_fails_as_python_does(
        staged_small_loops):
    # the loop is staged (traced items), and no iteration assigns `y`: Python
    # raises UnboundLocalError at `return y`, and so does the converted code
    with pytest.raises(UnboundLocalError):
        assigned_on_a_python_path(np.ones(3, np.float32), False)
    f = jax.jit(conv(assigned_on_a_python_path), static_argnums=1)
    with pytest.raises(UndefinedVariableError,
                       match=_where(assigned_on_a_python_path, "for x in xs")
                       + "`y` is used before it is assigned"):
        f(np.ones(3, np.float32), False)
    assert float(f(np.arange(3.0, dtype=np.float32), True)) == 2.0


def zero_trip_unassigned():
    for i in range(0):
        y = i
    return y


def test_zero_static_trip_count_then_use_is_unbound():
    with pytest.raises(UnboundLocalError):
        zero_trip_unassigned()
    with pytest.raises(UndefinedVariableError, match="y"):
        conv(zero_trip_unassigned)()


def undefined_in_while(x, n):
    i = 0
    while i < n:
        y = x * i
        i = i + 1
    return y


def _run_time_undefined(call, fn, snippet):
    """``call()`` fails when the program runs, with Python's error for an unassigned read."""
    with pytest.raises(Exception) as e:
        jax.block_until_ready(call())
        jax.effects_barrier()
    msg = str(e.value)
    assert "UndefinedVariableError" in msg and "is used before it is assigned" in msg
    assert re.search(_where(fn, snippet).lstrip("^"), msg)


def test_variable_born_in_traced_trip_count_while():
    # carried with a placeholder and a "defined" flag; read after a loop that ran
    # zero times, it raises when the program runs, as Python raises
    f = jax.jit(conv(undefined_in_while))
    assert float(f(jnp.float32(2.0), jnp.int32(3))) == undefined_in_while(2.0, 3) == 4.0
    with pytest.raises(UnboundLocalError):
        undefined_in_while(2.0, 0)
    _run_time_undefined(lambda: f(jnp.float32(2.0), jnp.int32(0)), undefined_in_while,
                        "return y")


def undefined_in_traced_range(x, n):
    for i in range(n):
        y = x * i
    return y


def test_variable_born_in_traced_range():
    f = jax.jit(conv(undefined_in_traced_range))
    assert float(f(jnp.float32(2.0), jnp.int32(3))) == 4.0
    _run_time_undefined(lambda: f(jnp.float32(2.0), jnp.int32(0)), undefined_in_traced_range,
                        "return y")


def born_and_guarded(x, n):
    for i in range(n):
        y = x * i
    if n > 0:
        return y + i
    return -1.0


@pytest.mark.parametrize("n", [0, 1, 4])
def test_variable_born_in_loop_read_only_where_defined(n):
    f = jax.jit(conv(born_and_guarded))
    assert float(f(jnp.float32(2.0), jnp.int32(n))) == born_and_guarded(2.0, n)


def test_variable_born_in_loop_under_grad_and_vmap():
    def f(x, n):
        i = 0
        while x * i < 100.0 and i < 3:   # bounded by its counter: reverse mode works
            y = x * x + i
            i += 1
        return y

    g = jax.jit(jax.grad(conv(f)))
    assert float(g(3.0, 2)) == 6.0
    xs = jnp.array([1.0, 2.0])
    np.testing.assert_allclose(jax.vmap(conv(f), in_axes=(0, None))(xs, 3), xs * xs + 2)


def initialized_then_traced_range(x, n):
    y = 0.0
    for i in range(n):
        y = x * i
    return y


def test_initialized_before_traced_range_works():
    check_equivalent(initialized_then_traced_range,
                     *[(np.float32(2.0), np.int32(n)) for n in (0, 1, 4)])


# ---------------------------------------------------------------------------
# dtypes: weak types adapt, strong changes are errors


def weak_sum_for(xs):
    s = 0
    for x in xs:
        s += x
    return s


def weak_sum_while(x, n):
    s = 0
    i = 0
    while i < n:
        s += x
        i += 1
    return s


def weak_sum_break(xs):
    s = 0
    for x in xs:
        if x < 0:
            break
        s = s + x
    return s


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.int32])
def test_weak_start_adapts_in_scan(dtype):
    xs = jnp.arange(1, 4, dtype=dtype)
    want = weak_sum_for(xs)  # eager plain Python on arrays
    got = jax.jit(conv(weak_sum_for))(xs)
    assert got.dtype == want.dtype == dtype
    assert got.weak_type == want.weak_type
    assert float(got) == float(want)


def test_weak_start_adapts_in_while_loop():
    x = jnp.float32(1.5)
    want = weak_sum_while(x, 3)
    got = jax.jit(conv(weak_sum_while))(x, jnp.int32(3))
    assert got.dtype == want.dtype == jnp.float32
    assert not got.weak_type
    assert float(got) == float(want)


def weak_sum_bounded(x, n):
    s = 0
    i = 0
    while i < n:
        autograph.set_loop_options(maximum_iterations=10)
        s = s + x
        i = i + 1
    return s


def test_weak_start_adapts_in_bounded_while():
    x = jnp.float32(1.5)
    want = weak_sum_bounded(x, 3)
    got = jax.jit(conv(weak_sum_bounded))(x, jnp.int32(3))
    assert got.dtype == want.dtype == jnp.float32
    assert not got.weak_type
    assert float(got) == float(want) == 4.5


def test_weak_start_adapts_in_masked_scan():
    xs = jnp.array([1.0, 2.0, -1.0, 5.0], jnp.float32)
    want = weak_sum_break(xs)
    got = jax.jit(conv(weak_sum_break))(xs)
    assert got.dtype == want.dtype == jnp.float32
    assert float(got) == float(want) == 3.0


def weak_float_with_ints(xs):
    s = 0.5
    for x in xs:
        s = s + x
    return s


def test_weak_float_start_with_int_items():
    xs = jnp.arange(4, dtype=jnp.int32)
    want = weak_float_with_ints(xs)
    got = jax.jit(conv(weak_float_with_ints))(xs)
    assert got.dtype == want.dtype
    assert got.weak_type == want.weak_type
    assert float(got) == float(want)


def weak_chain(x):
    a = b = c = 0
    for _ in range(5):
        c = b
        b = a
        a = x * 1.0
    return a, b, c


def test_weak_start_promoted_by_another_after_one_step(staged_small_loops, recwarn):
    # promoting `a` (int to float) makes `b` change dtype on the next step, which
    # `lax.scan`'s own promotion of weak inputs misses: the carry is promoted to
    # what one step makes and the loop stays one scan
    x = jnp.float32(2.0)
    want = weak_chain(x)
    jaxpr = jax.make_jaxpr(conv(weak_chain))(x)
    assert "scan" in primitives(jaxpr)
    got = jax.jit(conv(weak_chain))(x)
    assert [(g.dtype, g.weak_type, float(g)) for g in got] == [
        (w.dtype, w.weak_type, float(w)) for w in want]
    assert not recwarn.list


def reset_to_python_zero(x, n):
    acc = x
    i = 0
    while i < n:
        acc = 0
        i = i + 1
    return acc


def test_python_scalar_assigned_to_strong_carry_keeps_dtype():
    got = jax.jit(conv(reset_to_python_zero))(jnp.float32(3.0), jnp.int32(2))
    assert got.dtype == jnp.float32 and float(got) == 0.0


def halve_while(n):
    while n > 1:
        n = n / 2
    return n


def test_error_dtype_change_while():
    with pytest.raises(LoopStateError) as e:
        jax.jit(conv(halve_while))(jnp.int32(8))
    msg = str(e.value)
    assert re.search(_where(halve_while, "while n > 1"), msg)
    assert "variable: n" in msg
    assert "int32" in msg and "float32" in msg
    assert "fix:" in msg and "cast `n` before the loop" in msg


def halve_for(n):
    for i in range(3):
        n = n / 2
    return n


def test_dtype_change_in_static_for_runs_unrolled_as_plain_jit_does(staged_small_loops):
    # a static trip count: what `lax.scan` cannot carry (int32 -> float32),
    # Python can still run, as plain `jax.jit` does, with one warning
    with pytest.warns(UserWarning, match="runs unrolled in Python") as w:
        got = jax.jit(conv(halve_for))(jnp.int32(8))
    assert float(got) == float(jax.jit(halve_for)(jnp.int32(8))) == 1.0
    msg = str(w[0].message)
    assert re.search(_where(halve_for, "for i in range(3)"), msg)
    assert "int32" in msg and "float32" in msg


def test_dtype_change_fixed_by_cast():
    def f(n):
        n = jnp.asarray(n, jnp.float32)
        while n > 1:
            n = n / 2
        return n
    assert float(jax.jit(conv(f))(jnp.int32(8))) == 1.0


def doubling(x, n):
    i = 0
    while i < n:
        x = jnp.concatenate([x, x])
        i = i + 1
    return x


def test_error_shape_change():
    with pytest.raises(LoopStateError) as e:
        jax.jit(conv(doubling))(jnp.ones(1), jnp.int32(2))
    msg = str(e.value)
    assert re.search(_where(doubling, "while i < n"), msg)
    assert "`x` has shape (1,) before the loop, but shape (2,) after one iteration" in msg
    assert "variable: x" in msg and "fix:" in msg and "before the loop" in msg


def made_with_traced_size(x, n):
    i = 0
    while i < n:
        v = jnp.zeros((1, n, 2))
        x = x + v.sum()
        i += 1
    return x


def born_with_traced_size(n):
    i = 0
    while i < n:
        v = jnp.ones((1, n, 2))
        i += 1
    return v


def summed_with_traced_size(x, n):
    for _ in range(n):
        x = x + jnp.zeros((n,)).sum()
    return x


@pytest.mark.parametrize("fn,args,variable", [
    (made_with_traced_size, (jnp.float32(1.0), jnp.int32(3)), "v"),
    (born_with_traced_size, (jnp.int32(3),), "v"),
    (summed_with_traced_size, (jnp.float32(1.0), jnp.int32(3)), None),
], ids=["temporary", "used_after_the_loop", "not_assigned"])
def test_error_shape_from_a_traced_value(fn, args, variable):
    # plain `jax.jit` runs none of these; converted, staging the loop meets JAX's "Shapes
    # must be 1D sequences of concrete values", reported with the line and the variable
    with pytest.raises(TypeError):
        jax.jit(fn)(*args)
    with pytest.raises(LoopStateError) as e:
        jax.jit(conv(fn))(*args)
    msg = str(e.value)
    assert re.search(_where(fn, "jnp.zeros((" if fn is not born_with_traced_size
                            else "jnp.ones(("), msg), msg
    assert "must have a shape known before the loop runs" in msg
    assert "(1, int32[], 2)" in msg or "(int32[],)" in msg
    if variable:
        assert f"variable: {variable}" in msg and f"the body makes `{variable}`" in msg
    else:
        assert "variable:" not in msg
    assert "fix:" in msg and "static_argnums" in msg


def test_shape_from_a_python_value_in_a_staged_loop_works():
    def fn(x, n, m):
        i = 0
        while i < n:
            x = x + jnp.zeros((1, m, 2)).sum() + 1.0
            i += 1
        return x
    f = jax.jit(conv(fn), static_argnums=2)
    assert float(f(jnp.float32(1.0), jnp.int32(3), 4)) == 4.0


def vector_condition(x):
    while x > 0:
        x = x - 1.0
    return x


def test_error_condition_not_scalar():
    with pytest.raises(ConditionError) as e:
        jax.jit(conv(vector_condition))(jnp.ones(3))
    msg = str(e.value)
    assert re.search(_where(vector_condition, "while x > 0"), msg)
    assert "(3,)" in msg and ".any()" in msg


def branch_in_loop(xs):
    total = 0.0
    for x in xs:
        if x > 0:
            y = x
        total = total + y
    return total


def test_error_branch_in_loop_body():
    with pytest.raises(BranchError) as e:
        jax.jit(conv(branch_in_loop))(jnp.ones(3))
    msg = str(e.value)
    assert re.search(_where(branch_in_loop, "if x > 0"), msg)
    assert "variable: y" in msg and "initialize `y` before the `if`" in msg


# ---------------------------------------------------------------------------
# The loop target after the loop


def target_range(x):
    for i in range(4):
        x = x + i
    return x, i


def target_array(xs):
    s = 0.0
    for x in xs:
        s = s + x
    return s, x


def target_after_break(xs):
    for x in xs:
        if x > 2.0:
            break
    return x


def target_traced_range(x, n):
    i = -1
    for i in range(n):
        x = x + i
    return x, i


def target_enumerate(xs):
    for i, x in enumerate(xs):
        pass
    return i, x


def test_target_keeps_last_value():
    check_equivalent(target_range, (np.float32(1.0),))
    xs = np.array([1.0, 3.0, 2.0, 5.0], np.float32)
    check_equivalent(target_array, (xs,))
    check_equivalent(target_after_break, (xs,), (xs * 0.1,))
    check_equivalent(target_traced_range, *[(np.float32(1.0), np.int32(n)) for n in (0, 1, 4)])
    check_equivalent(target_enumerate, (xs,))


# ---------------------------------------------------------------------------
# Lists grown by append


def append_items(xs):
    ys = []
    for x in xs:
        ys.append(x * 2.0)
    return ys


def append_two_per_step(x):
    ys = []
    for i in range(3):
        ys.append(x * i)
        ys.append(-x * i)
    return ys


def append_pytrees(xs):
    ys = [(xs[0], xs[0])]
    for i in range(1, xs.shape[0]):
        ys.append((xs[i], xs[i] * i))
    return ys


def test_append_stacks_into_python_list():
    xs = np.arange(1.0, 5.0, dtype=np.float32)
    check_equivalent(append_items, (xs,))
    check_equivalent(append_two_per_step, (np.float32(1.5),))
    check_equivalent(append_pytrees, (xs,))
    out = jax.jit(conv(append_items))(jnp.asarray(xs))
    assert isinstance(out, list) and len(out) == 4


def append_python_then_traced(x):
    ys = [x * 0.0]
    for i in range(4):
        if i == 0:
            ys.append(1.0)  # a Python iteration: the state is not traced yet
        else:
            ys.append(x * i)
    return ys


def test_append_after_python_iterations():
    check_equivalent(append_python_then_traced, (np.float32(2.0),))


def test_append_in_staged_loop_is_a_scan_not_unrolled():
    def f(xs):
        ys = []
        for x in xs:
            ys.append(jnp.sin(x))
        return jnp.stack(ys)
    jaxpr = jax.make_jaxpr(conv(f))(jnp.ones(50))
    assert "scan" in primitives(jaxpr)
    assert sum(e.primitive.name == "sin" for e in jaxpr.jaxpr.eqns) == 0


def insert_at_front(xs):
    ys = []
    for x in xs:
        ys.insert(0, x * 2.0)
    return ys


def prepend_new_list(xs):
    ys = []
    for x in xs:
        ys = [x] + ys
    return ys


def replace_by_new_list(xs):
    ys = []
    for x in xs:
        ys = [x, -x]
    return ys


def concat_then_append(xs):
    ys = [xs[0]]
    for x in xs:
        ys = ys + [x]
        ys += [-x]
    return ys


@pytest.mark.parametrize("fn", [insert_at_front, prepend_new_list, replace_by_new_list])
def test_list_grown_other_than_by_append_runs_unrolled(fn, staged_small_loops):
    # With an empty list no old item can move, yet the order (or the items kept)
    # differs from appending: the loop falls back to Python, with a warning.
    xs = np.arange(1.0, 5.0, dtype=np.float32)
    with pytest.warns(UserWarning, match="other than by appending at its end") as w:
        check_equivalent(fn, (xs,))
    assert re.search(_where(fn, "for x in xs"), str(w[0].message))


def test_list_concatenated_at_its_end_stays_staged(staged_small_loops):
    xs = np.arange(1.0, 5.0, dtype=np.float32)
    check_equivalent(concat_then_append, (xs,))
    assert "scan" in primitives(jax.make_jaxpr(conv(concat_then_append))(xs))


def append_traced_trip(x, n):
    ys = []
    i = 0
    while i < n:
        ys.append(x * i)
        i = i + 1
    return ys


def test_error_append_with_traced_trip_count():
    with pytest.raises(LoopStateError) as e:
        jax.jit(conv(append_traced_trip))(jnp.float32(1.0), jnp.int32(3))
    msg = str(e.value)
    assert re.search(_where(append_traced_trip, "while i < n"), msg)
    assert "variable: ys" in msg and "preallocate" in msg


# ---------------------------------------------------------------------------
# Pytrees carried


class Pair(NamedTuple):
    a: jnp.ndarray
    b: jnp.ndarray


def tuple_state(x, n):
    t = (x, 0.0)
    i = 0
    while i < n:
        t = (t[0] * 2.0, t[1] + t[0])
        i = i + 1
    return t


def dict_state(xs):
    d = {"s": 0.0, "p": 1.0}
    for x in xs:
        d = {"s": d["s"] + x, "p": d["p"] * x}
    return d


def namedtuple_state(x, n):
    p = Pair(x, x + 1.0)
    for i in range(n):
        p = Pair(p.b, p.a + p.b)
    return p


def nested_state(xs):
    st = {"acc": (0.0, [1.0, 2.0]), "tag": "fixed"}
    for x in xs:
        acc, pair = st["acc"]
        st = {"acc": (acc + x, [pair[1], pair[0] + x]), "tag": st["tag"]}
    return st["acc"] if st["tag"] == "fixed" else None  # the string stays static


def test_pytree_state():
    check_equivalent(tuple_state, *[(np.float32(1.5), np.int32(n)) for n in (0, 1, 4)])
    xs = np.arange(1.0, 5.0, dtype=np.float32)
    check_equivalent(dict_state, (xs,), (xs[:1],))
    check_equivalent(namedtuple_state, *[(np.float32(1.0), np.int32(n)) for n in (0, 1, 6)])
    out = jax.jit(conv(namedtuple_state))(jnp.float32(1.0), jnp.int32(6))
    assert isinstance(out, Pair)
    check_equivalent(nested_state, (xs,))


def flag_and_count(xs):
    found = False
    count = 0
    for x in xs:
        if x > 2:
            found = True
        count += 1
    return found, count


def test_bool_and_int_python_state():
    check_equivalent(flag_and_count, (np.arange(4.0, dtype=np.float32),),
                     (np.arange(2.0, dtype=np.float32),))


def structure_change(x, n):
    s = (x,)
    i = 0
    while i < n:
        s = (x, x)
        i = i + 1
    return s


def test_error_structure_change():
    with pytest.raises(LoopStateError) as e:
        jax.jit(conv(structure_change))(jnp.float32(1.0), jnp.int32(2))
    msg = str(e.value)
    assert re.search(_where(structure_change, "while i < n"), msg)
    assert "variable: s" in msg
