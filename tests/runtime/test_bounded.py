"""`runtime.bounded` alone: loops with a most-iterations count that may stop early.

``counted_loop(test, body, arrays, n)`` runs ``body`` while ``k < n and
test(arrays)``. Its value must equal ``lax.while_loop``'s with the same test
and body, and its gradient (through the bounded form of nested scans) the
gradient of the plain Python loop, for loops that stop at their test, at
``n``, or before the first step. ``level_sizes`` is checked on its own.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from autograph.runtime.loop_forms import bounded
from autograph.runtime.loop_forms.bounded import BASE, counted_loop, level_sizes

# ---------------------------------------------------------------------------
# level_sizes


@pytest.mark.parametrize("n, want", [
    (0, [1]), (1, [1]), (5, [5]), (BASE, [BASE]),
    (BASE + 1, [4, 5]), (100, [10, 10]), (256, [16, 16]), (257, [6, 7, 7]),
    (1000, [10, 10, 10]), (4096, [16, 16, 16]),
])
def test_level_sizes(n, want):
    assert level_sizes(n) == want


@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 99, 255, 256, 257, 1000, 4097, 10 ** 6])
@pytest.mark.parametrize("base", [4, BASE])
def test_level_sizes_cover_n_with_few_steps(n, base):
    sizes = level_sizes(n, base)
    assert math.prod(sizes) >= n
    assert all(1 <= s for s in sizes)
    # no more levels than the base needs, and no level past it (the first may be smaller)
    assert len(sizes) == max(1, math.ceil(math.log(n) / math.log(base) - 1e-9))
    assert all(s <= base for s in sizes) or len(sizes) == 1


# ---------------------------------------------------------------------------
# counted_loop: value


def _test(a):
    return a[0] < 10.0


def _body(a, k):
    x, total = a
    return [x * 1.5 + 0.25, total + x * k.astype(jnp.float32)]


def _counted(x, n):
    return counted_loop(_test, _body, [x, jnp.float32(0.0)], n)


def _while(x, n):
    def cond(s):
        k, a = s
        return jnp.logical_and(k < n, _test(a))

    def step(s):
        k, a = s
        return k + 1, _body(a, k)

    return list(lax.while_loop(cond, step, (jnp.int32(0), [x, jnp.float32(0.0)]))[1])


def _python(x, n):
    total, k = 0.0, 0
    while k < n and x < 10.0:
        x, total = x * 1.5 + 0.25, total + x * k
        k += 1
    return [x, total]


# x = 20 stops before the first step, x = 9 after one, x = 0.5 after eight (0.5 -> 10.6)
CASES = [(20.0, 5), (9.0, 5), (0.5, 3), (0.5, 8), (0.5, 40), (0.5, 1000)]


@pytest.mark.parametrize("x, n", CASES)
def test_value_equals_lax_while_loop(x, n):
    got = jax.jit(lambda x: _counted(x, n))(jnp.float32(x))
    want = jax.jit(lambda x: _while(x, n))(jnp.float32(x))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got), _python(x, n), rtol=1e-5)


def test_no_steps_returns_the_arrays():
    def body(a, k):
        raise AssertionError("traced a loop of no steps")

    arrays = [jnp.float32(3.0)]
    assert counted_loop(_test, body, arrays, 0) == arrays
    assert counted_loop(_test, body, arrays, -2) == arrays


def test_eagerly():
    got = _counted(jnp.float32(0.5), 3)  # outside jit: runs at once
    np.testing.assert_allclose(np.asarray(got), _python(0.5, 3), rtol=1e-6)


def test_the_step_index_counts_from_zero():
    got = jax.jit(lambda: counted_loop(lambda a: True, lambda a, k: [a[0] * 10 + k],
                                       [jnp.int32(0)], 5))()
    assert int(got[0]) == 1234  # digits 0, 1, 2, 3, 4


def test_a_test_that_bounds_the_loop():
    # `while i < 7`: the test alone stops the loop, so the count is left out
    got = jax.jit(lambda i: counted_loop(lambda a: a[0] < 7, lambda a, k: [a[0] + 1, a[1] * 2],
                                         [i, jnp.int32(1)], 7, test_bounds=True))
    for start in (0, 3, 7, 9):
        i, p = got(jnp.int32(start))
        assert int(i) == max(start, 7) and int(p) == 2 ** max(0, 7 - start)


def test_under_vmap_lanes_stop_at_different_steps():
    xs = np.array([20.0, 9.0, 0.5, 2.0], np.float32)
    got = jax.jit(jax.vmap(lambda x: _counted(x, 6)))(jnp.asarray(xs))
    for j, x in enumerate(xs):
        np.testing.assert_allclose([float(got[0][j]), float(got[1][j])], _python(float(x), 6),
                                   rtol=1e-5)


# ---------------------------------------------------------------------------
# counted_loop: derivatives


def _loss(out):
    return out[0] + 0.5 * out[1]


@pytest.mark.parametrize("x, n", CASES[:5])
def test_gradient_equals_the_python_loops(x, n):
    got = jax.jit(jax.grad(lambda x: _loss(_counted(x, n))))(jnp.float32(x))
    want = jax.grad(lambda x: _loss(_python(x, n)))(x)  # eager: Python runs the loop
    np.testing.assert_allclose(float(got), float(want), rtol=1e-5)


def test_gradient_through_a_closed_over_value():
    def loop(x, c, n):
        out = counted_loop(lambda a: a[0] < 50.0, lambda a, k: [a[0] * c + 1.0], [x], n)
        return out[0]

    def python(x, c, n):
        for _ in range(n):
            if not x < 50.0:
                break
            x = x * c + 1.0
        return x

    for n in (0, 1, 4):
        got = jax.jit(jax.grad(lambda x, c: loop(x, c, n), argnums=(0, 1)))(1.0, 2.0)
        want = jax.grad(python, argnums=(0, 1))(1.0, 2.0, n) if n else (1.0, 0.0)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5)


def test_forward_derivative_equals_the_python_loops():
    n = 8
    _, got = jax.jit(lambda x: jax.jvp(lambda x: _loss(_counted(x, n)), (x,), (1.0,)))(0.5)
    _, want = jax.jvp(lambda x: _loss(_python(x, n)), (0.5,), (1.0,))
    np.testing.assert_allclose(float(got), float(want), rtol=1e-5)


def test_module_exports():
    assert set(bounded.__all__) == {"counted_loop", "level_sizes"}


def test_the_gradient_of_a_vmapped_loop_ignores_steps_an_element_never_takes():
    # an element that has left the loop takes the batch's further steps under `vmap`,
    # here `jnp.sqrt` of a negative number: none of that may reach its gradient
    def sqrt_sum(x):
        def test(a):
            return a[0] >= 0.0

        def body(a, k):
            x, y = a
            return [x - 1.0, y + jnp.sqrt(x)]

        return counted_loop(test, body, [x, jnp.float32(0.0)], 20)[1]

    def eager(x):
        y = 0.0
        while x >= 0.0:
            y, x = y + jnp.sqrt(x), x - 1.0
        return y

    xs = jnp.array([2.5, 0.5])
    grads = jax.grad(lambda v: jnp.sum(jax.vmap(sqrt_sum)(v)))(xs)
    np.testing.assert_allclose(grads, [jax.grad(eager)(x) for x in (2.5, 0.5)], rtol=1e-6)
