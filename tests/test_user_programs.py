"""Realistic user programs: converted code must behave like plain Python.

Each test runs a program the way users write it, in plain Python, through
``autograph.convert`` on the same (NumPy/Python) values, and under
``jax.jit(autograph.convert(...))``, and compares. Dtype checks compare with
eager JAX (the plain program) or with hand-written ``jnp.where``/``lax``.
Error tests check that bad code gets an ``AutographError`` that names the
user's line and says what is wrong.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from tests.helpers import check_equivalent, runs_as_python

F32 = np.float32
THIS_FILE = __file__


def jitc(fn, **kw):
    return jax.jit(autograph.convert(fn), **kw)


def assert_names_line(err: Exception, fn, snippet: str):
    """The message names this file and the line of ``fn`` holding ``snippet``."""
    import inspect
    lines, start = inspect.getsourcelines(fn)
    lineno = next(start + i for i, line in enumerate(lines) if snippet in line)
    assert f"{THIS_FILE}:{lineno}" in str(err), str(err)


def observed_sides(err: Exception) -> tuple[str, str]:
    """The two descriptions in an 'observed: A before/on ... but B ...' line."""
    line = next(l for l in str(err).splitlines() if l.strip().startswith("observed:"))
    import re
    m = re.search(r"`\w+` is (.*?) (?:before the loop|on the true branch) but (.*?) "
                  r"(?:after one iteration|on the false branch)", line)
    assert m, line
    return m.group(1), m.group(2)


# ---------------------------------------------------------------------------
# 1. pytrees through branches and loops


class Particle(NamedTuple):
    pos: float
    vel: float


def bounce(x):
    p = Particle(x, 1.0)
    for _ in range(4):
        if p.pos > 2:
            p = Particle(p.pos - p.vel, -p.vel)
        else:
            p = p._replace(pos=p.pos + p.vel)
    return p


def test_namedtuple_state_through_if_in_loop():
    check_equivalent(bounce, (F32(1.0),), (F32(5.0),))


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Halving:
    x: jax.Array
    n: jax.Array


def halve_until_small(x):
    s = Halving(x, 0)
    while s.x > 1:
        s = Halving(s.x / 2, s.n + 1)
    return s


def test_registered_dataclass_while_state():
    out = jitc(halve_until_small)(jnp.float32(100.0))
    want = halve_until_small(100.0)
    assert isinstance(out, Halving)
    np.testing.assert_allclose(out.x, want.x)
    assert int(out.n) == want.n == 7
    assert autograph.convert(halve_until_small)(100.0) == want


@jax.tree_util.register_pytree_node_class
class Box:
    def __init__(self, v):
        self.v = v

    def tree_flatten(self):
        return (self.v,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)


def triple_if_positive(x):
    b = Box(x)
    if x > 0:
        b = Box(b.v * 3)
    return b


def test_pytree_node_class_through_if():
    assert float(jitc(triple_if_positive)(jnp.float32(2.0)).v) == 6.0
    assert float(jitc(triple_if_positive)(jnp.float32(-2.0)).v) == -2.0


def nested_state(x):
    s = {"a": (x, [x, x]), "b": {"c": x}, "none": None}
    for i in range(3):
        if x > i:
            s = {"a": (s["a"][0] + 1, [s["a"][1][0], s["a"][1][1] * 2]),
                 "b": {"c": s["b"]["c"] - 1}, "none": None}
    return s


def test_nested_dict_tuple_list_state():
    check_equivalent(nested_state, (F32(1.0),), (F32(5.0),))


def sgd_tree(params, grads, lr):
    new = {}
    for k in params:
        g = grads[k]
        if jnp.linalg.norm(g) > 1.0:
            g = g / jnp.linalg.norm(g)
        new[k] = params[k] - lr * g
    return new


def test_dict_of_params_clipped_per_leaf():
    p = {"w": np.ones((2, 2), F32), "b": np.zeros(2, F32)}
    g = {"w": np.full((2, 2), 3.0, F32), "b": np.full(2, 0.1, F32)}
    check_equivalent(sgd_tree, (p, g, 0.1))


def trajectory(xs):
    traj = [jnp.zeros(2)]
    for x in xs:
        traj.append(traj[-1] + x)
    return jnp.stack(traj)


def test_list_appended_in_loop_reads_its_last_item(staged_small_loops):
    # `traj[-1]` inside a staged loop that appends to `traj` cannot see the
    # items appended by earlier iterations; the trip count is static, so the
    # loop runs unrolled in Python (as under plain `jax.jit`), with a warning
    xs = np.arange(8, dtype=F32).reshape(4, 2)
    with pytest.warns(UserWarning, match=r"test_user_programs.py:\d+: this `for` loop runs "
                                         r"unrolled.*reads `traj` and appends to it"):
        got = jitc(trajectory)(xs)
    np.testing.assert_allclose(got, trajectory(xs))


def history(xs):
    hist = {"x": [], "norm": []}
    for x in xs:
        hist["x"].append(x)
        hist["norm"].append(jnp.linalg.norm(x))
    return hist


def test_dict_of_lists_appended_in_loop(staged_small_loops):
    # only a list that is itself a loop variable can grow in a staged scan;
    # lists inside a dict make the (static) loop run unrolled, with a warning
    # that names the list that grew
    xs = np.arange(6, dtype=F32).reshape(3, 2)
    with runs_as_python("hist"):
        got = jitc(history)(xs)
    want = history(xs)
    assert len(got["x"]) == 3
    jax.tree_util.tree_map(np.testing.assert_allclose, got, want)


def rnn(h, xs, w):
    outs = []
    for x in xs:
        h = jnp.tanh(w @ h + x)
        if h.sum() > 0:
            h = h * 0.5
        outs.append(h)
    return jnp.stack(outs), h


def test_rnn_unroll_collects_outputs():
    rng = np.random.default_rng(0)
    check_equivalent(rnn, (rng.normal(size=2).astype(F32), rng.normal(size=(4, 2)).astype(F32),
                           rng.normal(size=(2, 2)).astype(F32)))


# ---------------------------------------------------------------------------
# 2. dtypes


def relu_py_zero(x):
    if x > 0:
        y = x
    else:
        y = 0.0
    return y


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_half_precision_relu_with_python_zero_keeps_dtype(dtype):
    # JAX: a Python float is weakly typed, so jnp.where(x > 0, x, 0.0) stays
    # float16/bfloat16; the converted `if` upcasts to float32.
    x = jnp.asarray(-1.0, dtype)
    want = jnp.where(x > 0, x, 0.0).dtype
    assert want == dtype
    assert jitc(relu_py_zero)(x).dtype == want


def clamp_to_100(x):
    if x > 100:
        x = 100
    return x


def test_int8_clamp_with_python_int_keeps_int8():
    x = jnp.int8(120)
    assert jnp.where(x > 100, 100, x).dtype == jnp.int8
    out = jitc(clamp_to_100)(x)
    assert out.dtype == jnp.int8 and int(out) == 100


def sum_until_big(x):
    s = 0.0
    for v in x:
        if s > 10:
            break
        s = s + v
    return s


@pytest.mark.parametrize("dtype", [jnp.float16, jnp.bfloat16])
def test_half_precision_sum_with_break_keeps_dtype(dtype):
    x = jnp.ones(3, dtype)
    assert sum_until_big(x).dtype == dtype
    out = jitc(sum_until_big)(x)
    assert out.dtype == dtype and float(out) == 3.0


def geometric(x):
    s = jnp.int32(1)
    for _ in range(3):
        s = s * 1.5
    return s


def test_int_carry_multiplied_by_python_float_is_not_truncated(staged_small_loops):
    # eager: int32 * 1.5 is float32 (3.375 after three steps). A static loop
    # whose carry changes from int32 to float32 runs unrolled (a warning naming
    # both dtypes), never with a silent cast back to int32.
    assert float(geometric(1.0)) == 3.375
    with pytest.warns(UserWarning, match=r"int32 before the loop but float32"):
        assert float(jitc(geometric)(1.0)) == 3.375


def count_with_bool_start(x):
    n = jnp.bool_(False)
    for v in x:
        n = n + 1
    return n


def test_bool_carry_incremented_by_python_int_is_not_truncated(staged_small_loops):
    assert int(count_with_bool_start(jnp.ones(3))) == 3
    with pytest.warns(UserWarning, match=r"bool before the loop but int32"):
        assert int(jitc(count_with_bool_start)(jnp.ones(3))) == 3


def best_then_scale(x, y):
    best = 0.0
    for v in x:
        if v > best:
            best = v
    return best * y


def test_loop_result_is_not_left_weakly_typed():
    # `best` ends as a float32 array element eagerly (strongly typed), so
    # best * bfloat16 is float32; staged it stays weakly typed and the product
    # silently becomes bfloat16.
    x = jnp.array([1.0, 3.0, 2.0], jnp.float32)
    y = jnp.ones(2, jnp.bfloat16)
    assert best_then_scale(x, y).dtype == jnp.float32
    assert jitc(best_then_scale)(x, y).dtype == jnp.float32


def int8_wrapping_sum(x):
    acc = jnp.zeros((), jnp.int8)
    for v in x:
        acc = acc + v
    return acc


def test_int8_accumulation_wraps_like_eager():
    x = jnp.array([100, 100], jnp.int8)
    assert jitc(int8_wrapping_sum)(x).dtype == jnp.int8
    assert int(jitc(int8_wrapping_sum)(x)) == int(int8_wrapping_sum(x))


def count_positive(xs):
    n = 0
    for x in xs:
        if x > 0:
            n += 1
    return n


def test_python_int_counter_stays_python_int():
    out = autograph.convert(count_positive)([1, -1, 2])
    assert out == 2 and type(out) is int
    assert int(jitc(count_positive)(jnp.array([1, -1, 2]))) == 2


# ---------------------------------------------------------------------------
# 3. functions, closures, methods inside converted programs


class SGD:
    def __init__(self, lr, max_norm):
        self.lr, self.max_norm = lr, max_norm

    def update(self, w, g):
        n = jnp.linalg.norm(g)
        if n > self.max_norm:
            g = g * (self.max_norm / n)
        return w - self.lr * g


OPT = SGD(0.1, 1.0)


def train_with_optimizer(w, g):
    return OPT.update(w, g)


def test_user_method_named_like_a_list_or_array_method_is_converted():
    # `update` (also `add`, `get`, `set`, `clip`, `sum`, ...) is treated as a
    # library method and never converted: TracerBoolConversionError under jit.
    w, g = np.ones(3, F32), np.full(3, 5.0, F32)
    check_equivalent(train_with_optimizer, (w, g))


class Counter:
    def __init__(self):
        self.n = 0.0


def halvings_counted_on_object(x):
    c = Counter()
    while x > 1:
        x = x / 2
        c.n = c.n + 1
    return c.n


def test_attribute_updated_in_staged_while():
    # the attribute is carried like a loop variable and set on the object after it
    check_equivalent(halvings_counted_on_object, (10.0,), (0.5,))


def add_if_positive_on_object(x):
    c = Counter()
    if x > 0:
        c.n = c.n + x
    return c.n


def test_attribute_updated_in_staged_if():
    # on a Python value the branch runs as plain Python...
    for v in (-1.0, 2.0):
        assert autograph.convert(add_if_positive_on_object)(v) == add_if_positive_on_object(v)
    # ...on a traced one the attribute is a branch output, set after the `if`
    check_equivalent(add_if_positive_on_object, (-1.0,), (2.0,))


def depth(n):
    if n <= 1:
        return 1
    return 1 + depth(n - 1)


def test_recursive_function():
    # KeyError: 'depth' from autograph/loader.py when converting.
    assert autograph.convert(depth)(5) == 5


def scaled_by_late_binding(x):
    def scale(v):
        return v * k
    k = 2.0
    if x > 0:
        k = 3.0
    return scale(x)


def test_closure_sees_variable_assigned_in_branch():
    # the branch's assignment to `k` is dropped: 2.0 instead of 3.0.
    check_equivalent(scaled_by_late_binding, (F32(1.0),), (F32(-1.0),))


def picked_by_closure(x):
    def get():
        return y
    if x > 0:
        y = 1.0
    else:
        y = 2.0
    return get()


def test_closure_reads_variable_set_on_both_branches():
    # NameError: name 'y' is not defined
    check_equivalent(picked_by_closure, (F32(1.0),), (F32(-1.0),))


def inner_helper(z):
    if z > 0:
        return z * 2
    return z


def calls_nested_and_module_helpers(x):
    def inner(z):
        if z > 1:
            return z - 1
        return z
    acc = 0.0
    for i in range(3):
        acc = acc + inner(x - i) + inner_helper(x - i)
    return acc


def test_nested_and_module_helpers_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_equivalent(calls_nested_and_module_helpers, (F32(1.0),), (F32(5.0),))


# ---------------------------------------------------------------------------
# 5. realistic small programs


def train_step(w, x, y, lr):
    pred = x @ w
    loss = jnp.mean((pred - y) ** 2)
    grad = 2 * x.T @ (pred - y) / x.shape[0]
    if loss > 1.0:
        grad = grad / jnp.linalg.norm(grad)
        lr = lr * 0.5
    w = w - lr * grad
    return w, loss


def test_training_step_with_if_on_loss():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(8, 3)).astype(F32)
    y = rng.normal(size=8).astype(F32)
    check_equivalent(train_step, (np.zeros(3, F32), x, y, 0.1),
                     (np.full(3, 0.01, F32), x * 0.01, y * 0.01, 0.1))


def piecewise(x):
    if x < -1:
        return -1.0
    elif x < 0:
        return x ** 3
    elif x < 1:
        return x
    return 1.0 + jnp.log(x)


def test_piecewise_function_and_its_gradient():
    check_equivalent(piecewise, *[(F32(v),) for v in (-2, -0.5, 0.5, 3)])
    g = jax.jit(jax.grad(autograph.convert(piecewise)))
    np.testing.assert_allclose([g(v) for v in (-2.0, -0.5, 0.5, 3.0)],
                               [0.0, 0.75, 1.0, 1 / 3], rtol=1e-6)


def clip_rows(g, max_norm):
    for i in range(g.shape[0]):
        n = jnp.sqrt(jnp.sum(g[i] ** 2))
        if n > max_norm:
            g = jnp.asarray(g).at[i].set(g[i] * (max_norm / n))
    return g


def test_clip_gradient_rows_loop():
    g = np.random.default_rng(1).normal(size=(4, 3)).astype(F32) * 2
    check_equivalent(clip_rows, (g, 1.0))


def bisect_cube_root(lo, hi, tol):
    mid = (lo + hi) / 2
    for _ in range(100):
        mid = (lo + hi) / 2
        f = mid ** 3 - 2.0
        if abs(f) < tol:
            break
        if f > 0:
            hi = mid
        else:
            lo = mid
    return mid


def test_bisection_with_break_on_tolerance():
    check_equivalent(bisect_cube_root, (F32(0.0), F32(2.0), 1e-4))


def newton_sqrt(x0, a):
    x = x0
    for i in range(50):
        fx = x * x - a
        if jnp.abs(fx) < 1e-6:
            return x, i
        x = x - fx / (2 * x)
    return x, -1


def test_newton_with_return_in_loop():
    check_equivalent(newton_sqrt, (F32(1.0), F32(2.0)), (F32(1.0), F32(1.0)))


def iterate_until_converged(x):
    while True:
        x = x * 2
        if x > 100:
            return x


def test_while_true_with_return_as_only_exit():
    # every path returns, but the staged loop reports "one path returns ...
    # while the path through the false branch returns None".
    check_equivalent(iterate_until_converged, (F32(3.0),))


def greedy_decode(table, start, end_token, max_len):
    tokens = jnp.zeros(max_len, jnp.int32)
    tok = start
    n = 0
    for i in range(max_len):
        tok = jnp.argmax(table[tok])
        tokens = tokens.at[i].set(tok)
        n = n + 1
        if tok == end_token:
            break
    return tokens, n


def test_greedy_decoding_stops_at_end_token():
    t = np.random.default_rng(2).normal(size=(5, 5)).astype(F32)
    t[0, 3] = t[3, 2] = t[2, 4] = t[4, 4] = 10
    check_equivalent(greedy_decode, (t, 0, 4, 6), (t, 0, 1, 6), static_argnums=(3,))


def running_argmax(x):
    best = -jnp.inf
    idx = -1
    for i, v in enumerate(x):
        if v > best:
            best, idx = v, i
    return best, idx


def test_running_max_argmax():
    check_equivalent(running_argmax, (np.array([1.0, 5.0, 3.0, 7.0, 2.0], F32),))


def fizz_count(n):
    count = 0
    for i in range(1, n + 1):
        if i % 15 == 0:
            continue
        if i % 3 == 0 or i % 5 == 0:
            count += 1
    return count


def test_fizzbuzz_counting_with_continue():
    check_equivalent(fizz_count, (30,), (0,))


def lower_triangle_until_negative(a):
    total = 0.0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if j > i:
                continue
            if a[i, j] < 0:
                break
            total = total + a[i, j]
    return total


def test_nested_loops_over_2d_array():
    a = np.array([[1.0, 2, 3], [4, -5, 6], [7, 8, 9]], F32)
    check_equivalent(lower_triangle_until_negative, (a,), (np.abs(a),))


def first_negative(a):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            if a[i, j] < 0:
                return i, j
    return -1, -1


def test_return_from_nested_loops():
    a = np.array([[1.0, 2], [3, -4], [-5, 6]], F32)
    check_equivalent(first_negative, (a,), (np.abs(a),))


def has_negative(x):
    for v in x:
        if v < 0:
            found = True
            break
    else:
        found = False
    return found


def test_for_else_search():
    # `found` is unassigned on the iterations that do not break: it is carried
    # with a flag, which the `else:` (or the break) sets on every path Python takes
    for n in (2, 20):  # a Python loop, a staged one
        for x in (np.linspace(1.0, -2.0, n).astype(F32), np.linspace(1.0, 2.0, n).astype(F32)):
            assert autograph.convert(has_negative)(x) == has_negative(x)
            assert bool(jitc(has_negative)(jnp.asarray(x))) == has_negative(x)


def first_row_with_small_item(a, t):
    r = -1
    for i in range(a.shape[0]):
        for v in a[i]:
            if v < t:
                break
        else:
            continue
        r = i
        break
    return r


def test_break_out_of_nested_loops_with_for_else_continue():
    # the idiom `for ...: for ...: break / else: continue / break` fails to
    # convert with SyntaxError: 'continue' not properly in loop.
    a = np.array([[5.0, 6], [1, 7], [0, 8]], F32)
    check_equivalent(first_row_with_small_item, (a, F32(2.0)), (a, F32(-1.0)))


def halvings_walrus(x):
    n = 0
    while (x := x / 2) > 1:
        n += 1
    return n, x


def test_walrus_in_while_condition():
    # the test leads the body as `if not (x := x / 2) > 1: break`, binding `x`
    # before every iteration, the one that ends the loop too
    converted = jax.jit(autograph.convert(halvings_walrus, strict=True))
    for x in (1.5, 3.0, 20.0):  # 0, 1 and 4 trips
        n, last = converted(F32(x))
        assert (int(n), float(last)) == halvings_walrus(x)


def tree_search_depth(x, thresholds):
    idx = -1
    for i, t in enumerate(thresholds):
        if x > t:
            idx = i
            break
    return idx


def test_break_in_loop_over_python_list():
    check_equivalent(tree_search_depth, (F32(2.5), [3.0, 2.0, 1.0]), (F32(0.0), [3.0, 2.0, 1.0]))


def newton_bounded(a):
    x = a
    while jnp.abs(x * x - a) > 1e-5:
        autograph.set_loop_options(maximum_iterations=30)
        x = 0.5 * (x + a / x)
    return x


def test_grad_and_vmap_through_bounded_while():
    f = autograph.convert(newton_bounded)
    np.testing.assert_allclose(jax.jit(jax.grad(f))(4.0), 0.25, rtol=1e-4)
    np.testing.assert_allclose(jax.vmap(f)(jnp.array([4.0, 9.0])), [2.0, 3.0], rtol=1e-5)


# ---------------------------------------------------------------------------
# 6. bad code gets clear errors


def set_on_one_branch(x):
    if x > 0:
        y = x
    return y


def test_one_branch_assignment_error_names_line():
    with pytest.raises(autograph.BranchError) as e:
        jitc(set_on_one_branch)(1.0)
    assert_names_line(e.value, set_on_one_branch, "if x > 0")
    with pytest.raises(autograph.UndefinedVariableError) as e:
        autograph.convert(set_on_one_branch)(-1.0)
    assert_names_line(e.value, set_on_one_branch, "if x > 0")


def grows_while(x):
    while x.sum() < 10:
        x = jnp.concatenate([x, x])
    return x


def test_shape_change_in_while_error():
    with pytest.raises(autograph.LoopStateError) as e:
        jitc(grows_while)(jnp.ones(2))
    assert_names_line(e.value, grows_while, "while x.sum()")
    assert "(2,)" in str(e.value) and "(4,)" in str(e.value)


def vector_condition(x):
    if x > 0:
        x = x + 1
    return x


def test_vector_condition_error():
    with pytest.raises(autograph.ConditionError) as e:
        jitc(vector_condition)(jnp.ones(2))
    assert_names_line(e.value, vector_condition, "if x > 0")


def label_by_sign(x):
    while x > 0:
        if x > 5:
            return "big"
        x = x - 1
    return x


def test_string_returned_from_staged_while_is_an_autograph_error():
    # TypeError: function probe at runtime/loop_forms/loops.py traced for jit returned a
    # value of type <class 'str'> ... (internal, no user line).
    with pytest.raises(autograph.AutographError) as e:
        jitc(label_by_sign)(10.0)
    assert_names_line(e.value, label_by_sign, "while x > 0")


def pair_or_scalar(x):
    if x > 0:
        return x, x
    return x


def test_return_structure_error_does_not_name_internal_variable():
    with pytest.raises(autograph.BranchError) as e:
        jitc(pair_or_scalar)(1.0)
    assert "retval" not in str(e.value), str(e.value)


def rekeyed(x):
    d = {"a": x}
    while x > 1:
        d = {"b": x}
        x = x / 2
    return d


class LSTMState(NamedTuple):
    h: jax.Array
    c: Optional[jax.Array]


def cell_filled_in_loop(x):
    st = LSTMState(x, None)
    while st.h.sum() > 0:
        st = LSTMState(st.h - 1, st.h)
    return st


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class OptState:
    step: jax.Array
    name: str = dataclasses.field(default="adam", metadata=dict(static=True))


def renamed_state(s, g):
    if g.sum() > 0:
        s = OptState(s.step + 1, "sgd")
    return s


def test_structure_errors_say_what_differs():
    # each message names what differs (keys, a field, the static fields)
    cases = [(rekeyed, (10.0,), "keys ['a'] vs ['b']"),
             (cell_filled_in_loop, (jnp.ones(2),), "`st.c` is None on one side and float32[2]"),
             (renamed_state, (OptState(jnp.int32(0)), jnp.ones(2)), "static")]
    for fn, args, words in cases:
        with pytest.raises(autograph.AutographError) as e:
            jitc(fn)(*args)
        assert words in str(e.value), f"{fn.__name__}: {e.value}"


def float_of_item(x):
    total = 0.0
    for v in x:
        if v > 0:
            total += float(v)
    return total


def list_item_of_traced_index(x):
    total = 0.0
    for v in x:
        total += [1.0, 2.0][int(v)]
    return total


def test_python_conversion_of_traced_item():
    # `float(v)` of a traced item is a cast, as the Python run's float
    check_equivalent(float_of_item, (np.array([1.0, -2.0, 3.0], np.float32),))
    # where Python needs an int (a list index), the traced one fails naming the user's line
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as e:
            jitc(list_item_of_traced_index)(jnp.ones(3))
    notes = "\n".join(getattr(e.value, "__notes__", []))
    assert "total += [1.0, 2.0][int(v)]" in str(e.value) + notes
