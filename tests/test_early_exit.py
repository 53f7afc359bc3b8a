"""Loops that may stop early: `for` + `break`/`return` over static trip counts,
and `while` with a most-iterations bound.

Evaluated, such a loop is a `lax.while_loop` that stops when it exits;
differentiated, it is the bounded scan form. These tests pin the semantics:
the same values as the Python run on inputs that exit at the first, a middle
and no iteration, and the same gradients as the masked scan written by hand.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import autograph
from autograph.runtime.loop_forms.bounded import level_sizes
from tests.helpers import primitives


def escape(c):
    z = jnp.zeros_like(c)
    for i in range(100):
        z = z * z + c
        if jnp.abs(z) > 2.0:
            return i
    return 100


# c = 3 escapes at once, c = 0.26 after about 29 steps, c = 0 never
ESCAPES = [3.0, 0.26, 0.0]


@pytest.mark.parametrize("c", ESCAPES)
def test_escape_values(c):
    expected = escape(jnp.float32(c))
    assert int(jax.jit(autograph.convert(escape))(jnp.float32(c))) == int(expected)


def test_escape_vmapped_matches_python():
    cs = jnp.asarray(ESCAPES + [0.25, 0.3, -2.1], jnp.float32)
    got = jax.jit(jax.vmap(autograph.convert(escape)))(cs)
    assert [int(v) for v in got] == [int(escape(c)) for c in cs]


def test_evaluated_as_while_loop_differentiated_as_scan():
    def f(x):
        for i in range(50):
            if x.sum() > 10.0:
                break
            x = x * 1.5
        return x.sum()

    p = primitives(jax.make_jaxpr(autograph.convert(f))(jnp.ones(3)))
    assert "while" in p and "scan" not in p
    p = primitives(jax.make_jaxpr(jax.grad(autograph.convert(f)))(jnp.ones(3)))
    assert "scan" in p and "while" not in p


def grow(x, w, limit):
    for i in range(12):
        if jnp.sum(x * x) > limit:
            break
        x = jnp.tanh(x * w) + 0.5 * x + 0.1
    return jnp.sum(x ** 2)


def grow_masked_by_hand(x, w, limit):
    def step(carry, _):
        done, x = carry
        done = done | (jnp.sum(x * x) > limit)
        return (done, jnp.where(done, x, jnp.tanh(x * w) + 0.5 * x + 0.1)), None
    (_, x), _ = lax.scan(step, (jnp.bool_(False), x), None, length=12)
    return jnp.sum(x ** 2)


# exits before the first step, after a few steps, never
LIMITS = [0.0, 3.0, 1e9]


@pytest.mark.parametrize("limit", LIMITS)
def test_gradients_equal_the_masked_scan(limit):
    x, w = jnp.linspace(0.1, 0.5, 4), jnp.float32(0.8)
    conv = autograph.convert(grow)
    assert np.allclose(conv(x, w, limit), grow(x, w, limit), rtol=1e-6)
    for argnums in (0, 1):
        want = jax.grad(grow_masked_by_hand, argnums)(x, w, limit)
        assert np.allclose(jax.grad(conv, argnums)(x, w, limit), want, rtol=1e-5, atol=1e-6)
        # traced first, differentiated after: the loop cannot know, and still works
        got = jax.grad(jax.jit(conv), argnums)(x, w, limit)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-6)
    tangent = jax.jvp(lambda w: conv(x, w, limit), (w,), (jnp.float32(1.0),))[1]
    assert np.allclose(tangent, jax.grad(grow_masked_by_hand, 1)(x, w, limit), rtol=1e-5,
                       atol=1e-6)


def test_gradient_of_vmapped_loop_with_a_batched_branch():
    conv = autograph.convert(grow)
    xs = jnp.stack([jnp.full(4, 0.1), jnp.full(4, 2.0), jnp.full(4, -0.3)])

    def total(f, w):
        return jax.vmap(lambda x: f(x, w, 3.0))(xs).sum()

    want = jax.grad(lambda w: total(grow_masked_by_hand, w))(jnp.float32(0.8))
    assert np.allclose(jax.grad(lambda w: total(conv, w))(jnp.float32(0.8)), want, rtol=1e-5)
    assert np.allclose(jax.grad(jax.jit(lambda w: total(conv, w)))(jnp.float32(0.8)), want,
                       rtol=1e-5)


def capped(x, w):
    steps = 0
    while jnp.sum(x * x) < 50.0:
        autograph.set_loop_options(maximum_iterations=10)
        x = x * w + 0.1
        steps += 1
    return jnp.sum(x), steps


def capped_by_hand(x, w):
    def step(carry, _):
        x, steps = carry
        go = jnp.sum(x * x) < 50.0
        return lax.cond(go, lambda c: (c[0] * w + 0.1, c[1] + 1), lambda c: c, carry), None
    (x, steps), _ = lax.scan(step, (x, 0), None, length=10)
    return jnp.sum(x), steps


@pytest.mark.parametrize("scale", [100.0, 1.0, 0.01])  # exits at once, midway, never
def test_while_with_maximum_iterations(scale):
    x, w = jnp.linspace(0.5, 1.0, 3) * scale, jnp.float32(1.3)
    conv = jax.jit(autograph.convert(capped))
    s, n = conv(x, w)
    s_ref, n_ref = capped_by_hand(x, w)
    assert int(n) == int(n_ref) and np.allclose(s, s_ref)
    g = jax.grad(lambda w: conv(x, w)[0])(w)
    assert np.allclose(g, jax.grad(lambda w: capped_by_hand(x, w)[0])(w), rtol=1e-5)


def test_counter_bounded_while_differentiates_under_jit():
    # `i < 8` bounds the loop: evaluated it is a `while_loop`, and jax.grad of the
    # jitted function (which traces the loop before the gradient sees it) works
    def f(x):
        i = 0
        while i < 8 and x < 100.0:
            x = x * 1.7
            i += 1
        return x

    conv = autograph.convert(f)
    for x0 in (200.0, 3.0, 0.01):
        want = 1.7 ** sum(1 for _ in _trips(x0))
        assert np.isclose(jax.grad(jax.jit(conv))(jnp.float32(x0)), want, rtol=1e-5)


def _trips(x):
    i = 0
    while i < 8 and x < 100.0:
        x *= 1.7
        i += 1
        yield i


def test_print_runs_once_per_iteration_that_ran(capfd):
    def f(x):
        for i in range(10):
            if x > 5.0:
                break
            print("step", i)
            x = x + 2.0
        return x

    jax.block_until_ready(jax.jit(autograph.convert(f))(jnp.float32(0.0)))
    jax.effects_barrier()
    out = capfd.readouterr().out
    assert out.count("step") == 3


@pytest.mark.parametrize("n", [1, 5, 16, 17, 100, 997, 1000, 10000, 123457])
def test_level_sizes_cover_the_trip_count(n):
    sizes = level_sizes(n)
    assert int(np.prod(sizes)) >= n and all(s <= 16 or len(sizes) == 1 for s in sizes[1:])
    assert int(np.prod(sizes[1:] or [1])) < n or n == 1  # the outer level is not empty



def sum_until_negative(x):
    acc = 0  # a Python int, which the first element makes float32
    for i in range(x.shape[0]):
        if x[i] < 0:
            return acc
        acc = acc + x[i]
    return acc * 2


def test_a_return_value_that_starts_as_a_python_number_takes_the_loops_dtype():
    staged = jax.jit(autograph.convert(sum_until_negative))
    for x in (jnp.arange(20.0) % 7, jnp.arange(20.0), jnp.arange(20.0) - 3.0):
        want = sum_until_negative(x)
        got = staged(x)
        assert got.dtype == jnp.float32
        np.testing.assert_allclose(got, want)


def found_or_minus_one(x):
    for i in range(3):
        if x > i:
            return "found"
    return -1


def test_python_values_returned_on_paths_the_data_chooses_are_named_as_paths():
    with pytest.raises(autograph.errors.BranchError) as e:
        jax.jit(autograph.convert(found_or_minus_one))(jnp.float32(2.0))
    msg = str(e.value)
    assert "the Python int -1 on one path and the Python str 'found' on another" in msg
    assert "true branch" not in msg


def sqrt_until_negative(x):
    y = 0.0
    for _ in range(20):
        if x < 0:
            break
        y += jnp.sqrt(x)
        x = x - 0.3
    return y


def test_gradient_of_a_vmapped_for_with_break_ignores_the_steps_after_the_exit():
    # an element that has broken out takes the batch's further steps, where its
    # branch not taken is `jnp.sqrt` of a negative number: none of it reaches its
    # gradient (NaN before)
    conv = autograph.convert(sqrt_until_negative)
    xs = jnp.array([1.0, 2.5, 0.7, 7.0])  # 4, 9, 3 and all 20 steps
    want = [float(jax.grad(sqrt_until_negative)(x)) for x in xs]
    got = jax.grad(lambda v: jnp.sum(jax.vmap(conv)(v)))(xs)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(jax.vmap(jax.grad(conv))(xs), want, rtol=1e-5)
