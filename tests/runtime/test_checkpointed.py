"""`runtime.checkpointed` alone: the while loop that differentiates in reverse mode.

``checkpointed_loop`` must give ``lax.while_loop``'s value, and its gradient
(``jax.grad``) and forward derivative (``jax.jvp``) must equal those of the
same steps run a known number of times by ``lax.scan`` (or a plain Python
loop), for trip counts 0, 1, S, S + 1 and about 3 S with a small number of
checkpoints S passed explicitly, so the backward pass has to recompute states.
The schedule's helpers are checked on their own: how many slots the sweep
uses, how many checkpoints a state's size gets, where binomial checkpointing
keeps the next state, and which steps the sweep keeps.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from autograph.runtime.loop_forms import checkpointed
from autograph.runtime.loop_forms.checkpointed import (
    CHECKPOINTS,
    checkpointed_loop,
    default_checkpoints,
)
from tests.helpers import primitives

S = 4  # checkpoints: the sweep keeps S // 2 = 2 states, so a few steps already recompute
W = np.array([0.5, -1.0, 2.0], np.float32)


def _step(x, a):
    """One step of the loop: a contraction with a mixing nonlinearity."""
    return a * x + 0.1 * jnp.sin(x[::-1]) + 0.05


def _counted(x, a, n, checkpoints=S):
    """``n`` steps, with the count in the state: only the test knows ``n``."""
    out = checkpointed_loop(lambda s: s[1] < n, lambda s: [_step(s[0], a), s[1] + 1],
                            [x, jnp.int32(0)], checkpoints=checkpoints)
    return jnp.dot(out[0], W)


def _scanned(x, a, n):
    """The same ``n`` steps, with ``n`` known: ``lax.scan``."""
    out, _ = lax.scan(lambda x, _: (_step(x, a), None), x, None, length=n)
    return jnp.dot(out, W)


X0 = np.array([0.3, -0.2, 1.1], np.float32)
A = np.float32(0.9)
TRIPS = [0, 1, S, S + 1, 3 * S + 1]

_grad = jax.jit(jax.grad(_counted, argnums=(0, 1)), static_argnames="checkpoints")
_value = jax.jit(_counted, static_argnames="checkpoints")


def _while_loop(x, a, n):
    out = lax.while_loop(lambda s: s[1] < n, lambda s: (_step(s[0], a), s[1] + 1),
                         (x, jnp.int32(0)))
    return jnp.dot(out[0], W)


@pytest.mark.parametrize("n", TRIPS)
def test_value_equals_lax_while_loop(n):
    got = _value(X0, A, n)
    want = jax.jit(_while_loop)(X0, A, n)
    np.testing.assert_allclose(float(got), float(want), rtol=1e-6)
    np.testing.assert_allclose(float(got), float(_scanned(X0, A, n)), rtol=1e-5)


@pytest.mark.parametrize("n", TRIPS)
def test_gradient_equals_the_scans(n):
    got_x, got_a = _grad(X0, A, n)
    want_x, want_a = jax.grad(_scanned, argnums=(0, 1))(X0, A, n)
    np.testing.assert_allclose(np.asarray(got_x), np.asarray(want_x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(got_a), float(want_a), rtol=1e-5, atol=1e-6)
    if n == 0:  # no step: the identity, and nothing reaches `a`
        np.testing.assert_array_equal(np.asarray(got_x), W)
        assert float(got_a) == 0.0


@pytest.mark.parametrize("checkpoints", [2])  # the least: the kept states fill every slot
def test_gradient_with_other_checkpoint_counts(checkpoints):
    n = 9
    got_x, got_a = _grad(X0, A, n, checkpoints=checkpoints)
    want_x, want_a = jax.grad(_scanned, argnums=(0, 1))(X0, A, n)
    np.testing.assert_allclose(np.asarray(got_x), np.asarray(want_x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(got_a), float(want_a), rtol=1e-5, atol=1e-6)


def test_forward_derivative_equals_the_scans():
    n = 3 * S + 1
    tx, ta = np.array([1.0, 0.5, -2.0], np.float32), np.float32(0.3)
    _, got = jax.jit(lambda x, a: jax.jvp(lambda x, a: _counted(x, a, n), (x, a), (tx, ta)))(
        X0, A)
    _, want = jax.jvp(lambda x, a: _scanned(x, a, n), (X0, A), (tx, ta))
    np.testing.assert_allclose(float(got), float(want), rtol=1e-5)


def _until(x, a):
    """A trip count the float state decides: steps until the first element passes 2."""
    out = checkpointed_loop(lambda s: s[0][0] < 2.0, lambda s: [s[0] * a + 0.1],
                            [x], checkpoints=S)
    return jnp.dot(out[0], W)


def _until_python(x, a):
    while x[0] < 2.0:
        x = x * a + 0.1
    return jnp.dot(x, W)


_until_grad = jax.jit(jax.grad(_until, argnums=(0, 1)))


@pytest.mark.parametrize("x0", [3.0, 1.5, 0.7, 0.0])  # 0, 1, 3 and 8 trips
def test_gradient_of_a_data_dependent_trip_count(x0):
    x = np.array([x0, 0.5, -0.5], np.float32)
    a = np.float32(1.3)
    got = _until_grad(x, a)
    want = jax.grad(_until_python, argnums=(0, 1))(x, a)  # eager: Python runs the loop
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-5)
    np.testing.assert_allclose(float(got[1]), float(want[1]), rtol=1e-5)


def test_gradient_under_vmap_where_lanes_stop_at_different_counts():
    ns = np.array([0, 1, S + 1, 3 * S + 1], np.int32)
    got = jax.jit(jax.vmap(jax.grad(_counted), in_axes=(None, None, 0)))(X0, A, ns)
    for row, n in zip(np.asarray(got), ns):
        want = jax.grad(_scanned)(X0, A, int(n))
        np.testing.assert_allclose(row, np.asarray(want), rtol=1e-5, atol=1e-6)


def test_maximum_stops_the_loop():
    def loop(x, maximum):
        return checkpointed_loop(lambda s: s[0] < 100.0, lambda s: [s[0] + 1.0], [x],
                                 checkpoints=S, maximum=maximum)[0]

    assert float(jax.jit(lambda x: loop(x, 5))(0.0)) == 5.0
    assert float(jax.jit(lambda x: loop(x, 5))(98.0)) == 100.0  # the test stops it first
    assert float(jax.jit(lambda x: loop(x, 0))(0.0)) == 0.0
    g = jax.jit(jax.grad(lambda x: loop(x * x, 3)))(3.0)
    assert float(g) == 6.0


def test_fewer_than_two_checkpoints_is_refused():
    with pytest.raises(ValueError, match="checkpoints"):
        checkpointed_loop(lambda s: s[0] < 1, lambda s: [s[0] + 1], [jnp.int32(0)],
                          checkpoints=1)


# ---------------------------------------------------------------------------
# The schedule


@pytest.mark.parametrize("checkpoints, slots", [(2, 2), (3, 2), (4, 2), (7, 2), (8, 4),
                                                (9, 4), (128, 64), (130, 64)])
def test_slots_the_sweep_uses(checkpoints, slots):
    # even (thinning frees every other slot), about half, never more than there are
    assert checkpointed._slots(checkpoints) == slots


@pytest.mark.parametrize("state_bytes, want", [
    (0, CHECKPOINTS), (4, CHECKPOINTS), (2 * 2**20, CHECKPOINTS),
    (4 * 2**20, 64), (32 * 2**20, 8), (2**30, 8),
])
def test_default_checkpoints(state_bytes, want):
    # 128 states, fewer where 128 would pass 256 MiB, never fewer than 8
    assert CHECKPOINTS == 128
    assert default_checkpoints(state_bytes) == want


_jit_plan = jax.jit(checkpointed._plan, static_argnums=3)


def _plan(at, end, free) -> int:
    return int(_jit_plan(jnp.int32(at), jnp.int32(end), jnp.int32(free), 64))


@pytest.mark.parametrize("at, end, free, want", [
    (0, 10, 1, 6),    # r = 3 (C(5, 3) = 10 >= 10); keeps C(4, 3) = 4 steps after it
    (0, 3, 5, 1),     # r = 1: every state can be kept, the next one first
    (5, 15, 1, 11),   # the same as the first, shifted
    (0, 1, 3, -1),    # one step: nothing to keep
    (0, 10, 0, -1),   # no free slot
])
def test_plan_hand_computed(at, end, free, want):
    assert _plan(at, end, free) == want


@pytest.mark.parametrize("free", [1, 2, 3, 5])
@pytest.mark.parametrize("length", [2, 3, 7, 20, 57])
def test_plan_is_binomial_checkpointing(free, length):
    # the least r with C(free + 1 + r, r) >= length; the state kept next leaves at most
    # C(free + r, r) steps after it, and lies strictly inside the span
    r = next(r for r in range(1, 64) if math.comb(free + 1 + r, r) >= length)
    got = _plan(0, length, free)
    assert 0 < got < length
    assert length - got <= math.comb(free + r, r)


def _spec():
    """A loop as the primitive holds it: ``x -> 2 x + 1`` while a count is below the const."""
    n = jax.ShapeDtypeStruct((), jnp.int32)
    avals = [jax.ShapeDtypeStruct((), jnp.float32), jax.ShapeDtypeStruct((), jnp.int32)]
    test = jax.make_jaxpr(lambda c, a: [a[1] < c[0]])([n], avals)
    body = jax.make_jaxpr(lambda c, a: [a[0] * 2.0 + 1.0, a[1] + 1])([n], avals)
    return checkpointed._Spec(test=test, body=body, n_consts=1, checkpoints=S)


@jax.jit
def _sweep(n):
    steps = checkpointed._Steps(_spec(), [n], lanes=0, tbatch=(), diff=())
    return checkpointed._sweep(steps, [jnp.float32(0.5), jnp.int32(0)], S)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 8, 9, 13])
def test_sweep_keeps_every_stride_th_state(n):
    # the stride doubles while the sweep's slots are full: it ends as the least power
    # of two s with n <= s * slots, and the states at 0, s, 2 s, ... below n are kept
    slots = checkpointed._slots(S)
    out = _sweep(jnp.int32(n))
    final, buf, pos, count = out[:2], out[2:4], out[4], out[5]
    assert int(count) == n
    x = 0.5
    states = [x]
    for _ in range(n):
        x = x * 2.0 + 1.0
        states.append(x)
    assert float(final[0]) == states[-1] and int(final[1]) == n
    stride = next(s for s in (2 ** k for k in range(10)) if n <= s * slots)
    pos = np.asarray(pos)
    kept = sorted(int(p) for p in pos if p >= 0)
    assert kept == list(range(0, n, stride))
    for slot, p in enumerate(pos):
        if p >= 0:  # the slot holds the state after p steps
            assert float(buf[0][slot]) == states[p]
            assert int(buf[1][slot]) == p


def test_the_loop_is_one_primitive_under_grad():
    assert "checkpointed_while" in primitives(jax.make_jaxpr(jax.grad(_counted))(X0, A, 3))
    assert "checkpointed_while" not in primitives(jax.make_jaxpr(_counted)(X0, A, 3))


# -- second derivatives: the bilinear forms and their transposes ---------------------


def _hessians(f):
    """The Hessian of ``f`` in its first two arguments, by the spellings that transpose
    a second form (forward over reverse is checked with the converter's tests)."""
    args = (0, 1)
    return {"jacrev(jacrev)": jax.jacrev(jax.jacrev(f, args), args),
            "jacrev(jacfwd)": jax.jacrev(jax.jacfwd(f, args), args)}


def test_hessians_equal_the_scans():
    # in the state (x) and in a value the body reads from outside (a): the forms'
    # derivatives in the consts; the int count in the state has none. Each spelling
    # compiled once: the count is traced.
    compiled = {name: jax.jit(h) for name, h in _hessians(_counted).items()}
    for n in TRIPS:
        want = jax.hessian(_scanned, (0, 1))(X0, A, n)
        for name, hessian in compiled.items():
            got = hessian(X0, A, jnp.int32(n))
            for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
                np.testing.assert_allclose(g, w, rtol=2e-4, atol=1e-5, err_msg=f"{name} {n}")


def test_second_forms_are_each_others_transposes():
    # <u, H v> == <H u, v> through the forms, where one product is reverse over
    # reverse and the other forward over reverse
    n = 3 * S + 1
    f = lambda x: _counted(x, A, n)  # noqa: E731
    u, v = np.array([1.0, 0.5, -2.0], np.float32), np.array([-0.3, 2.0, 0.7], np.float32)
    reverse = jax.grad(lambda x: jnp.vdot(jax.grad(f)(x), u))
    forward_hv = jax.jit(lambda x: jax.jvp(jax.grad(f), (x,), (v,))[1])(X0)
    reverse_hu = jax.jit(reverse)(X0)
    np.testing.assert_allclose(jnp.vdot(u, forward_hv), jnp.vdot(reverse_hu, v), rtol=1e-4)
    jaxpr = str(jax.make_jaxpr(reverse)(X0))
    assert "form=Form.SECOND" in jaxpr  # the transposed second form, not a while_loop's
