"""Short static-trip `for` loops run as the Python loop `jax.jit` unrolls.

Their index and the Python numbers they carry keep Python's meaning, so every
program here gives what plain `jax.jit` gives; longer loops are staged as one
`lax.scan` (see test_loops_staging.py).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph.runtime.loop_forms import loops
from tests.helpers import primitives, runs_as_python


def weights_by_key(xs):
    params = {"w0": 1.0, "w1": 10.0, "w2": 100.0}
    s = 0.0
    for i in range(3):
        s = s + xs[i] * params.get(f"w{i}", 0.0)
    return s


def formatted_index(x):
    for i in range(3):
        if f"{i}" == "1":
            x = x * 10
    return x


def index_is_an_int(x):
    for i in range(2):
        if isinstance(i, int):
            x = x + 1.0
    return x


def taylor_exp(x):
    fact = 1
    acc = 1.0
    for i in range(1, 15):
        fact = fact * i  # 13! and 14! do not fit an int32
        acc = acc + x ** i * (1.0 / fact)
    return acc


def python_hash(xs):
    h = 1
    acc = 0.0
    for x in xs:
        h = h * 1000003 + 7
        acc = acc + x
    return acc * (h % 1000)


def count_then_shape(xs):
    n = 0
    for x in xs:
        n += 1
    return jnp.zeros(n) + xs.sum()


def index_after_loop(xs):
    for i in range(3):
        xs = xs * 2.0
    return xs[i:i + 2]


class Tick:
    def __init__(self):
        self.n = 0

    def tick(self):
        self.n += 1
        return self.n


def method_side_effect(x):
    t = Tick()
    for i in range(3):
        x = x + t.tick()
    return x


def early_exit(xs):
    s = 0.0
    for x in xs:
        if x < 0:
            break
        s += x
    return s


PROGRAMS = [
    (weights_by_key, (jnp.array([1.0, 2.0, 3.0]),)),
    (formatted_index, (1.0,)),
    (index_is_an_int, (1.0,)),
    (taylor_exp, (5.0,)),
    (python_hash, (jnp.arange(1.0, 9.0),)),
    (count_then_shape, (jnp.ones(3),)),
    (index_after_loop, (jnp.arange(6.0),)),
    (method_side_effect, (1.0,)),
]


@pytest.mark.parametrize("fn, args", PROGRAMS, ids=[f.__name__ for f, _ in PROGRAMS])
def test_same_as_plain_jit(fn, args):
    want = jax.jit(fn)(*args)
    got = jax.jit(autograph.convert(fn))(*args)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_allclose(autograph.convert(fn)(*args), fn(*args), rtol=1e-6)


@pytest.mark.parametrize("xs, want", [([1.0, 2.0, 3.0, 4.0], 10.0), ([-1.0, 2.0, 3.0, 4.0], 0.0),
                                      ([1.0, 2.0, -3.0, 4.0], 3.0)])
def test_traced_break_in_a_short_loop_exits_where_python_does(xs, want):
    xs = jnp.array(xs)
    f = jax.jit(autograph.convert(early_exit))
    assert float(f(xs)) == want == early_exit(np.array(xs))
    g = jax.grad(lambda v: autograph.convert(early_exit)(v))(xs)
    np.testing.assert_allclose(g, np.cumprod(np.asarray(xs) >= 0).astype(np.float32))


def test_short_loops_are_unrolled_long_ones_scanned():
    def f(x, n):
        for i in range(n):
            x = x * 0.5 + i
        return x

    short = jax.make_jaxpr(lambda x: autograph.convert(f)(x, loops.PYTHON_TRIPS))(1.0)
    long = jax.make_jaxpr(lambda x: autograph.convert(f)(x, loops.PYTHON_TRIPS + 1))(1.0)
    assert "scan" not in primitives(short)
    assert "scan" in primitives(long)
    for n in (loops.PYTHON_TRIPS, loops.PYTHON_TRIPS + 1):
        np.testing.assert_allclose(jax.jit(autograph.convert(f), static_argnums=1)(1.0, n),
                                   f(1.0, n), rtol=1e-6)


class Calls:
    def __init__(self):
        self.n = 0

    def step(self, x):
        self.n += 1
        return x * 0.5 + 1.0


MODEL = Calls()
LOG = []


def counts_through_a_helper(x):
    calls = 0

    def bump():
        nonlocal calls
        calls += 1

    for i in range(40):
        bump()
        x = x + 1.0
    return x, calls


def counts_in_a_carried_object(x):
    acc = Calls()
    for i in range(40):
        x = acc.step(x)
    return x, acc.n


def counts_in_a_global_object(x):
    for i in range(40):
        x = MODEL.step(x)
    return x


def logs_to_a_global_list(x):
    for i in range(40):
        x = x * 0.9
        LOG.append(1)
    return x


def test_side_effects_of_a_long_loop_happen_once_per_iteration():
    want = jax.jit(counts_through_a_helper)(1.0)
    with runs_as_python("not proven"):
        got = jax.jit(autograph.convert(counts_through_a_helper))(1.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert int(got[1]) == 40


def test_attribute_a_long_loop_counts_in_is_carried_through_one_scan():
    # `self.n += 1` in a method the body calls: the attribute is loop state
    want = jax.jit(counts_in_a_carried_object)(1.0)
    got = jax.jit(autograph.convert(counts_in_a_carried_object))(1.0)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
    assert got[1] == 40
    assert "scan" in str(jax.make_jaxpr(autograph.convert(counts_in_a_carried_object))(1.0))


def test_side_effects_on_globals_of_a_long_loop_happen_once_per_iteration():
    MODEL.n = 0
    with runs_as_python("not proven"):
        got = jax.jit(autograph.convert(counts_in_a_global_object))(0.0)
    assert MODEL.n == 40
    np.testing.assert_allclose(got, jax.jit(counts_in_a_global_object)(0.0), rtol=1e-6)
    LOG.clear()
    with runs_as_python("LOG.append"):
        jax.jit(autograph.convert(logs_to_a_global_list))(1.0)
    assert len(LOG) == 40


def closure_over_a_carried_variable(x):
    def shifted():
        return x + 1.0

    for i in range(40):
        x = x * 1.01 + 0.001 * shifted()
    return shifted()


def test_a_closure_over_a_carried_variable_is_no_side_effect():
    # the body updates `x`'s cell itself (the closure must see the new value):
    # the loop stays one scan
    import warnings
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*unrolled")
        jaxpr = jax.make_jaxpr(autograph.convert(closure_over_a_carried_variable))(1.0)
    assert "scan" in primitives(jaxpr)
    np.testing.assert_allclose(jax.jit(autograph.convert(closure_over_a_carried_variable))(1.0),
                               jax.jit(closure_over_a_carried_variable)(1.0), rtol=1e-6)


def counts_in_a_traced_while(x, n):
    calls = 0

    def bump():
        nonlocal calls
        calls += 1

    i = 0
    while i < n:
        bump()
        x = x * 2.0
        i += 1
    return x, calls


def test_a_traced_while_that_changes_a_counter_outside_is_refused():
    assert autograph.convert(counts_in_a_traced_while)(1.0, 3) == (8.0, 3)
    with pytest.raises(autograph.LoopStateError, match="cannot change what lies outside"):
        jax.jit(autograph.convert(counts_in_a_traced_while))(1.0, jnp.int32(3))


def _schedule(x):
    mode = "warmup"
    for i in range(20):  # staged (more than 16 steps) until the string needs Python
        if i == 10:
            mode = "decay"
        if mode == "warmup":
            x = x + 1.0
        else:
            x = x * 0.5
    return x


def test_branch_rule_broken_by_the_traced_index_unrolls_like_jit():
    with runs_as_python("`mode`"):
        got = jax.jit(autograph.convert(_schedule))(jnp.float32(0.0))
    np.testing.assert_allclose(got, jax.jit(_schedule)(jnp.float32(0.0)))


def _train_from_iterator(w, batches):
    it = iter(batches)
    for _ in range(20):  # long enough to be staged, were it not for `next(it)`
        x, y = next(it)
        w = w - 0.01 * 2 * (w * x - y) * x
    return w


def _noisy(x, rng):
    for _ in range(20):
        x = x + rng.random()
    return x


def _from_generator(x, n):
    gen = (float(i) for i in range(n))
    for _ in range(20):
        x = x + next(gen)
    return x


def test_iterators_and_random_generators_advance_once_per_iteration():
    import random

    data = [(np.float32(i % 5), np.float32(2 * (i % 5))) for i in range(20)]
    want = jax.jit(lambda w: _train_from_iterator(w, data))(jnp.float32(0.0))
    got = jax.jit(lambda w: autograph.convert(_train_from_iterator)(w, data))(jnp.float32(0.0))
    np.testing.assert_allclose(got, want, rtol=1e-6)
    for make in (lambda: random.Random(0), lambda: np.random.RandomState(0)):
        want = jax.jit(lambda x: _noisy(x, make()))(jnp.float32(0.0))
        got = jax.jit(lambda x: autograph.convert(_noisy)(x, make()))(jnp.float32(0.0))
        np.testing.assert_allclose(got, want, rtol=1e-6)
    with runs_as_python("next"):
        got = jax.jit(lambda x: autograph.convert(_from_generator)(x, 20))(jnp.float32(0.0))
    assert float(got) == sum(range(20))


def _accumulate(d, xs):
    for x in xs:  # 20 items: staged
        d["s"] = d["s"] + x


def _sum_through_helper(xs):
    d = {"s": 0.0}
    _accumulate(d, xs)
    return d["s"]


def _collect(out, xs):
    for x in xs:
        out.append(x * 2.0)


def _collected(xs):
    out = []
    _collect(out, xs)
    return jnp.stack(out).sum(), len(out)


def _through_alias(xs):
    state = {"k": 0.0}
    s = state
    for x in xs:
        s["k"] = s["k"] + x
    return state["k"]


def _both_branches_update(d, x):
    if x > 0:
        d["k"] = x
    else:
        d["k"] = -x
    return d


def _abs_through_dict(x):
    d = {"k": 0.0}
    _both_branches_update(d, x)
    return d["k"]


@pytest.mark.parametrize("fn", [_sum_through_helper, _collected, _through_alias])
def test_lists_and_dicts_updated_in_a_staged_loop_are_updated_in_place(fn):
    xs = jnp.arange(20.0)
    want = jax.jit(fn)(xs)
    got = jax.jit(autograph.convert(fn))(xs)
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(a, b)


@pytest.mark.parametrize("x", [3.0, -2.0])
def test_dict_both_branches_update_in_place_is_seen_by_the_caller(x):
    assert float(jax.jit(autograph.convert(_abs_through_dict))(jnp.float32(x))) == abs(x)


def _returns_at_once(x):
    for _ in range(20):
        x = x + 1.0
        return x * 2.0
    if x > 0:  # never reached: the loop returns in its first iteration
        a = 1.0
    return a


def _continues_or_returns(x):
    for _ in range(20):
        if x > 3.0:
            continue
        x = x + 1.0
        return x
    return x


def test_a_loop_whose_body_always_exits_at_once_runs_as_python():
    # plain jax.jit runs the first iteration and returns; staged, the exit would be a
    # traced flag, and the code after the loop a branch that cannot be traced
    converted = jax.jit(autograph.convert(_returns_at_once))
    assert float(converted(1.0)) == float(jax.jit(_returns_at_once)(1.0)) == 4.0
    assert "python_index='the body always leaves the loop in its first iteration" in (
        autograph.to_code(_returns_at_once))
    # a `continue` before the exit may run the loop again: it stays staged
    staged = jax.jit(autograph.convert(_continues_or_returns))
    for x in (1.0, 5.0):
        assert float(staged(x)) == _continues_or_returns(x)
    assert "python_index" not in autograph.to_code(_continues_or_returns)


def takes_until(x, items, stop):
    for v in items:
        if v >= stop:
            break
        x = x + v
    return x


def returns_first_above(items, bound):
    for v in items:
        if v > bound:
            return v
    return -1


@pytest.mark.parametrize("stop", [0, 3, 100])
def test_a_break_leaves_an_iterator_where_python_leaves_it(stop):
    g, want = iter(range(10)), iter(range(10))
    autograph.convert(takes_until)(jnp.float32(0.0), g, stop)
    takes_until(0.0, want, stop)
    assert next(g, "end") == next(want, "end")
    for bound in (-1, 4, 100):
        g, want = iter(range(10)), iter(range(10))
        assert autograph.convert(returns_first_above)(g, bound) == returns_first_above(
            want, bound)
        assert next(g, "end") == next(want, "end")
    # under `jax.jit` too: the generator is drawn while tracing, as Python draws it
    g, want = (i for i in range(10)), (i for i in range(10))
    jax.jit(lambda x: autograph.convert(takes_until)(x, g, stop))(jnp.float32(0.0))
    takes_until(0.0, want, stop)
    assert next(g, "end") == next(want, "end")


def counts_until_it_raises(x, fail_at):
    try:
        for i in range(3):
            x = x + 1.0
            if i == fail_at:
                raise ValueError(i)
    except ValueError:
        x = x * 10.0
    return x


def halves_in_a_while_then_finally(x, n):
    y = x
    try:
        i = 0
        while i < n:
            x = x * 0.5
            if i == 2:
                raise KeyError(i)
            i += 1
    except KeyError:
        pass
    finally:
        y = x + 1.0
    return x, y


@pytest.mark.parametrize("fail_at", [0, 1, 5])
def test_a_handler_sees_what_the_iterations_before_the_exception_assigned(fail_at):
    want = counts_until_it_raises(0.0, fail_at)  # 10.0, 20.0 or 3.0
    assert float(autograph.convert(counts_until_it_raises)(jnp.float32(0.0), fail_at)) == want
    assert float(jax.jit(autograph.convert(counts_until_it_raises), static_argnums=1)(
        jnp.float32(0.0), fail_at)) == want
    for n in (2, 5):
        want = halves_in_a_while_then_finally(8.0, n)
        got = jax.jit(autograph.convert(halves_in_a_while_then_finally), static_argnums=1)(
            jnp.float32(8.0), n)
        assert [float(v) for v in got] == list(want)


def returns_from_a_staged_if_in_try_finally(x):
    try:
        if x > 0:
            return x
        return -x
    finally:
        pass


def staged_blocks_in_a_try_with_a_handler(x):
    y = x
    try:
        if x > 0:
            y = x * 2
        else:
            y = -x
        i = 0
        while i < 3:
            y = y + 1
            i += 1
    except ValueError:
        y = y * 0
    finally:
        z = y + 1
    return y, z


@pytest.mark.parametrize("x", [2.0, -2.0])
def test_staged_blocks_inside_a_try_return_and_assign_as_python(x):
    f = jax.jit(autograph.convert(returns_from_a_staged_if_in_try_finally))
    assert float(f(jnp.float32(x))) == 2.0
    g = jax.jit(autograph.convert(staged_blocks_in_a_try_with_a_handler))
    assert [float(v) for v in g(jnp.float32(x))] == [
        float(v) for v in staged_blocks_in_a_try_with_a_handler(jnp.float32(x))]
