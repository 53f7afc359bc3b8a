"""Python's `math` module on traced values computes what it computes on floats.

Each program is run as plain Python (floats) and converted under `jax.jit`,
`jax.grad` and `jax.vmap`, on inputs that take different branches and trip
counts.
"""

import math
from math import cos, sin, sqrt

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph


def kepler(mean_anomaly, e):
    """Kepler's equation by Newton's method, with `from math import ...` names."""
    E = mean_anomaly
    delta = 1.0
    steps = 0
    while abs(delta) > 1e-6 and steps < 50:
        delta = (E - e * sin(E) - mean_anomaly) / (1 - e * cos(E))
        E = E - delta
        steps += 1
    return E, steps


def step(position, velocity):
    """A gym-style step with `math.` calls and a branch on their result."""
    force = math.cos(3 * position) * 0.0025
    velocity = velocity + force
    if math.fabs(velocity) > 0.07:
        velocity = math.copysign(0.07, velocity)
    position = position + velocity
    done = math.isclose(position, 0.5, abs_tol=0.05) or position > 0.5
    return position, velocity, done


def rounded(x):
    n = math.floor(x)
    m = math.ceil(x)
    t = math.trunc(x)
    return n + m + t, math.isfinite(x), math.hypot(x, 2.0), math.atan2(x, 2.0)


def logs(x):
    return math.log(x), math.log(x, 2.0), math.log10(x), math.sqrt(x), math.exp(-x)


@pytest.mark.parametrize("m, e", [(0.3, 0.1), (2.5, 0.9), (1.0, 0.5)])
def test_a_solver_with_math_names_matches_python(m, e):
    want_e, want_steps = kepler(m, e)
    got_e, got_steps = jax.jit(autograph.convert(kepler))(jnp.float32(m), e)
    assert int(got_steps) == want_steps
    np.testing.assert_allclose(float(got_e), want_e, rtol=1e-5)


@pytest.mark.parametrize("p, v", [(-0.5, 0.0), (0.45, 0.069), (0.2, -0.08)])
def test_a_step_with_math_calls_and_a_branch_matches_python(p, v):
    want = step(p, v)
    got = jax.jit(autograph.convert(step))(jnp.float32(p), jnp.float32(v))
    np.testing.assert_allclose([float(g) for g in got[:2]], want[:2], rtol=1e-5, atol=1e-7)
    assert bool(got[2]) == want[2]


@pytest.mark.parametrize("x", [2.5, -2.5, 3.0, 0.0])
def test_floor_ceil_trunc_give_integers_as_python_does(x):
    got = jax.jit(autograph.convert(rounded))(jnp.float32(x))
    want = rounded(x)
    assert int(got[0]) == want[0] and jnp.issubdtype(got[0].dtype, jnp.integer)
    assert bool(got[1]) == want[1]
    np.testing.assert_allclose([float(got[2]), float(got[3])], want[2:], rtol=1e-6)


def test_gradients_and_vmap_through_math_calls():
    f = autograph.convert(lambda x: math.sin(x) * math.exp(x) + math.log1p(x * x))
    x = 0.7
    want = math.cos(x) * math.exp(x) + math.sin(x) * math.exp(x) + 2 * x / (1 + x * x)
    np.testing.assert_allclose(float(jax.grad(f)(x)), want, rtol=1e-5)
    xs = jnp.linspace(0.1, 2.0, 5)
    np.testing.assert_allclose(jax.vmap(f)(xs), [f(float(v)) for v in xs], rtol=1e-5)
    m, e = jnp.array([0.3, 2.5, 1.0]), jnp.array([0.1, 0.9, 0.5])  # different trip counts
    got_e, got_steps = jax.vmap(autograph.convert(kepler))(m, e)
    for i in range(3):
        want_e, want_steps = kepler(float(m[i]), float(e[i]))
        assert int(got_steps[i]) == want_steps
        np.testing.assert_allclose(float(got_e[i]), want_e, rtol=1e-5)


@pytest.mark.parametrize("x", [4.0, 0.5])
def test_logs_match_python(x):
    got = autograph.function(logs)(jnp.float32(x))
    np.testing.assert_allclose([float(g) for g in got], logs(x), rtol=1e-5)


@pytest.mark.parametrize("fn, x", [(logs, -1.0), (lambda x: sqrt(x) + 1, -4.0),
                                   (lambda x: math.acos(x), 2.0)])
def test_a_domain_error_is_pythons_value_error_as_the_program_runs(fn, x):
    with pytest.raises(ValueError, match="math domain error"):
        fn(x)  # Python
    with pytest.raises(ValueError, match="math domain error"):
        autograph.function(fn)(jnp.float32(x))


def test_nan_goes_through_as_in_python():
    f = autograph.function(lambda x: math.sqrt(x))
    assert math.isnan(math.sqrt(float("nan")))
    assert bool(jnp.isnan(f(jnp.float32(float("nan")))))


def test_a_rebound_name_keeps_its_meaning():
    def f(x, sqrt=lambda v: v * 10.0):
        return sqrt(x)

    assert float(jax.jit(autograph.convert(f))(4.0)) == 40.0


def test_python_values_get_python_math():
    f = autograph.convert(rounded)
    assert f(2.5) == rounded(2.5) and isinstance(f(2.5)[0], int)
    with pytest.raises(ValueError, match="cannot convert float NaN"):
        f(float("nan"))


def picks_positive(x):
    total = 0.0
    while total < 10.0:
        idx = jnp.where(x > 0)
        total = total + x[idx].sum() + 1.0
    return total


def test_where_with_one_argument_in_a_staged_loop_names_the_call_and_the_fix():
    with pytest.raises(jax.errors.ConcretizationTypeError) as info:
        jax.jit(autograph.convert(picks_positive))(jnp.array([1.0, -1.0, 2.0]))
    notes = "\n".join(info.value.__notes__)
    assert "size=N" in notes and "idx = jnp.where(x > 0)" in notes
    assert "test_math_module.py" in notes


def truths(x):
    import operator
    from operator import not_, truth
    a = operator.truth(x > 1.0)
    b = not_(x)
    if truth(x - 2.0):
        x = x * 3.0
    return a, b, x


@pytest.mark.parametrize("x", [0.0, 2.0, 5.0])
def test_operator_truth_and_not_on_traced_values(x):
    want = truths(x)
    got = jax.jit(autograph.convert(truths))(jnp.float32(x))
    assert bool(got[0]) == want[0] and bool(got[1]) == want[1]
    assert float(got[2]) == want[2]


def test_floor_past_int32_raises_as_int_does_rather_than_wrapping():
    # Python's math.floor(3e9) is the int 3000000000; int32 cannot hold it
    f = autograph.function(lambda x: math.floor(x))
    assert int(f(jnp.float32(2.5e9 / 2))) == math.floor(2.5e9 / 2)
    with pytest.raises(OverflowError, match="does not fit int32"):
        f(jnp.float32(3e9))
