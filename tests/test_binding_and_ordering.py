"""`:=` in `while` tests and conditional branches, `sorted` by tuples of traced
keys, and `match` guards reading a capture under a traced case test.

Each converted function is compared with its plain-Python run on inputs that
take different branches and trip counts (0, 1 and several), also under
`jax.vmap` and `jax.grad` where they apply.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph


def doubling(x):
    n = 0
    while (y := x * 2.0) < 10.0:
        x = y
        n += 1
    return x, n, y


def doubling_with_continue(x):
    n = 0
    while (y := x + 1.0) < 6.0:
        x = y
        n += 1
        if n % 2 == 0:
            continue
        x = x + 0.5
    return x, n


def bounded_doubling(x):
    while (y := x * 2.0) < 10.0:
        autograph.set_loop_options(maximum_iterations=3)
        x = y
    return x


@pytest.mark.parametrize("fn", [doubling, doubling_with_continue], ids=lambda f: f.__name__)
def test_walrus_in_a_while_test_binds_before_every_iteration(fn):
    converted = jax.jit(autograph.convert(fn))
    for x in (20.0, 6.0, 0.3):  # 0, 1 and several trips
        for got, want in zip(converted(jnp.float32(x)), fn(x)):
            np.testing.assert_allclose(got, want, rtol=1e-6)
    lanes = jnp.array([20.0, 6.0, 0.3], jnp.float32)
    batched = jax.vmap(autograph.convert(fn))(lanes)
    for k, x in enumerate((20.0, 6.0, 0.3)):
        for got, want in zip(batched, fn(x)):
            np.testing.assert_allclose(got[k], want, rtol=1e-6)


def test_walrus_in_a_while_test_keeps_the_loop_options():
    code = autograph.to_code(bounded_doubling)
    assert "opts={'maximum_iterations': 3}" in code
    # three doublings at most, where Python would do more
    assert float(jax.jit(autograph.convert(bounded_doubling))(jnp.float32(0.1))) == \
        pytest.approx(0.8)


def test_walrus_in_a_while_test_differentiates():
    def f(x):
        while (y := x * 1.5) < 10.0:
            x = y
        return x * y

    for x in (0.5, 4.0, 20.0):
        np.testing.assert_allclose(jax.grad(autograph.convert(f))(x), jax.grad(f)(x),
                                   rtol=1e-6)


def choose(x):
    z = (y := x + 1.0) if x > 0 else (y := x - 1.0)
    if (w := z * 2.0) if z > 1.5 else (w := -z):
        return z + y + w
    return (v := z - y - w) if w < 1.0 else (v := z * w)


def test_walrus_in_conditional_branches():
    converted = jax.jit(autograph.convert(choose))
    for x in (2.0, 0.25, -1.0):
        np.testing.assert_allclose(converted(jnp.float32(x)), choose(x), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(autograph.convert(choose))(2.0), jax.grad(choose)(2.0))


# -- sorted by tuples of traced keys

def rank(a, b, c, d):
    items = [(a, 1), (b, 2), (c, 3), (d, 4)]
    up = sorted(items, key=lambda t: (t[0] > 0, t[1] % 2))
    down = sorted(items, key=lambda t: (t[0] > 0, t[1] % 2), reverse=True)
    pairs = sorted([(a, b), (c, d), (a, d)])
    return [t[1] for t in up], [t[1] for t in down], pairs[0][1]


def test_sorted_by_tuples_of_traced_keys_is_pythons_stable_order():
    converted = jax.jit(autograph.convert(rank))
    rng = np.random.default_rng(0)
    for _ in range(12):  # ties in either element, in both directions
        args = [float(v) for v in rng.choice([-1.0, 0.0, 0.5, 2.0], 4)]
        got = converted(*[np.float32(v) for v in args])
        want = rank(*args)
        assert [int(k) for k in got[0]] == want[0], args
        assert [int(k) for k in got[1]] == want[1], args
        assert float(got[2]) == want[2], args


def test_sorted_by_tuple_keys_differentiates():
    def f(a, b):
        pair = sorted([(a, a * 2.0), (b, b * 3.0)], key=lambda t: (t[0] > 1.0, t[1]))
        return pair[0][1] - pair[1][1]

    for a, b in ((0.5, 2.0), (2.0, 0.5), (1.5, 3.0)):
        np.testing.assert_allclose(jax.grad(autograph.convert(f), argnums=(0, 1))(a, b),
                                   jax.grad(f, argnums=(0, 1))(a, b))


# -- match guards that read a capture

def classify(x, n):
    match n:
        case 0:
            r = x
        case k if x * k > 2.0:
            r = x * k
        case _:
            r = -x
    return r


def compare_pair(x, y):
    match (x, y):
        case (a, b) if a > b:
            return a - b
        case (a, b):
            return b - a


def test_match_guards_read_their_capture_under_traced_case_tests():
    converted = jax.jit(autograph.convert(classify))
    for x, n in ((1.0, 0), (1.0, 3), (0.5, 2)):  # the value case, the guard, the rest
        np.testing.assert_allclose(converted(jnp.float32(x), jnp.int32(n)), classify(x, n))
    pair = jax.jit(autograph.convert(compare_pair))
    for x, y in ((1.0, 2.0), (3.0, 1.0)):
        np.testing.assert_allclose(pair(x, y), compare_pair(x, y))
