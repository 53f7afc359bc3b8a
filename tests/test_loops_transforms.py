"""Staged loops under jax transformations: grad, jvp and vmap."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import convert as conv

# ---------------------------------------------------------------------------
# Transformations: grad, jvp, vmap


def poly_loop(x):
    y = x
    for i in range(5):
        y = y * x + jnp.sin(y) * i
    return y


def scan_break_continue(x, ws):
    s = x
    for w in ws:
        if w > 2.5:
            break
        if w < 0.5:
            continue
        s = s * w + jnp.sin(s)
    return s


def range_break(x):
    for i in range(6):
        x = x * 1.5 + i
        if x > 20.0:
            break
    return x


def bounded(x):
    while x < 10.0:
        autograph.set_loop_options(maximum_iterations=20)
        x = x * 1.5 + jnp.sin(x)
    return x


def test_grad_static_range():
    for x in (0.3, 1.2):
        want = jax.grad(poly_loop)(x)
        got = jax.grad(jax.jit(conv(poly_loop)))(x)
        np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.long
def test_grad_scan_with_break_and_continue():
    ws = jnp.array([1.0, 0.2, 2.0, 3.0, 1.5], jnp.float32)
    for x in (0.5, 2.0):
        want = jax.grad(scan_break_continue)(x, ws)
        got = jax.grad(jax.jit(conv(scan_break_continue)))(x, ws)
        np.testing.assert_allclose(got, want, rtol=1e-5)
        want_w = jax.grad(scan_break_continue, argnums=1)(x, ws)
        got_w = jax.grad(jax.jit(conv(scan_break_continue)), argnums=1)(x, ws)
        np.testing.assert_allclose(got_w, want_w, rtol=1e-5, atol=1e-6)
    for x in (0.5, 3.0):  # break taken at different iterations
        want = jax.grad(range_break)(x)
        got = jax.grad(jax.jit(conv(range_break)))(x)
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_grad_bounded_while():
    for x in (0.5, 2.0, 12.0):  # many, one, zero iterations
        want = jax.grad(bounded)(x)
        got = jax.grad(jax.jit(conv(bounded)))(x)
        np.testing.assert_allclose(got, want, rtol=1e-5)


def unbounded(x, n):
    i = 0
    while i < n:
        x = x * 1.5 + jnp.sin(x)
        i = i + 1
    return x


def traced_range_loop(x, n):
    for i in range(n):
        x = x * jnp.cos(x) + i
    return x


def test_jvp_through_while_and_traced_range():
    for fn in (unbounded, traced_range_loop, bounded):
        args = (0.7, 3) if fn is not bounded else (0.7,)
        want = jax.jvp(lambda x: fn(x, *args[1:]), (args[0],), (1.0,))
        cf = jax.jit(conv(fn))
        got = jax.jvp(lambda x: cf(x, *[jnp.int32(a) for a in args[1:]]), (args[0],), (1.0,))
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5)


def test_jvp_through_scan_with_break():
    ws = jnp.array([1.0, 0.2, 2.0, 3.0, 1.5], jnp.float32)
    want = jax.jvp(lambda x: scan_break_continue(x, ws), (1.0,), (1.0,))
    got = jax.jvp(lambda x: jax.jit(conv(scan_break_continue))(x, ws), (1.0,), (1.0,))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def collatz(n):
    steps = 0
    while n > 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps = steps + 1
    return steps


def test_vmap_while_with_per_example_trip_count():
    ns = [1, 2, 3, 6, 7, 27]
    want = [collatz(n) for n in ns]
    got = jax.vmap(conv(collatz))(jnp.array(ns, jnp.int32))
    assert got.tolist() == want
    got = jax.jit(jax.vmap(conv(collatz)))(jnp.array(ns, jnp.int32))
    assert got.tolist() == want


def test_vmap_traced_range_per_example_bound():
    ns = [0, 1, 3]
    want = [traced_range_loop(0.5, n) for n in ns]
    got = jax.vmap(conv(traced_range_loop))(jnp.full(3, 0.5), jnp.array(ns, jnp.int32))
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_vmap_for_with_break():
    xs = jnp.array([0.5, 3.0, 25.0], jnp.float32)
    want = [range_break(float(x)) for x in xs]
    got = jax.vmap(conv(range_break))(xs)
    np.testing.assert_allclose(got, want, rtol=1e-6)
