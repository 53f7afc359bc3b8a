"""`runtime.logical` called directly: `and_`, `or_` and `not_`.

With a Python left operand each is Python's own operator: the right operand
is evaluated only where Python evaluates it (a side effect proves it), and the
value is the operand Python returns. With a traced left operand under
``jax.jit`` the result must match Python's for every combination of inputs.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph.runtime.branches.logical import and_, not_, or_

VALUES = [True, False, 0, 1, 2, "", "s", [], [0], None, 0.0, 3.5]

# ---------------------------------------------------------------------------
# Python operands


@pytest.mark.parametrize("left, right", list(itertools.product(VALUES, [0, "r", [1]])))
def test_and_with_python_values_is_pythons(left, right):
    evaluated = []

    def right_thunk():
        evaluated.append(True)
        return right

    got = and_(left, right_thunk)
    want = left and right
    assert got is want  # the very operand Python returns
    assert evaluated == ([True] if left else [])  # short-circuit


@pytest.mark.parametrize("left, right", list(itertools.product(VALUES, [0, "r", [1]])))
def test_or_with_python_values_is_pythons(left, right):
    evaluated = []

    def right_thunk():
        evaluated.append(True)
        return right

    got = or_(left, right_thunk)
    want = left or right
    assert got is want  # the very operand Python returns
    assert evaluated == ([] if left else [True])


@pytest.mark.parametrize("value", VALUES)
def test_not_with_python_values(value):
    assert not_(value) is (not value)


def test_short_circuit_protects_the_right_operand():
    # `xs and xs[0] > 0` with an empty list: Python never indexes it
    xs = []
    assert and_(xs, lambda: xs[0] > 0) == []
    assert or_(True, lambda: 1 / 0) is True


def test_concrete_arrays_take_the_python_path():
    evaluated = []
    left = jnp.asarray(0.0)  # concrete outside `jit`: Python decides
    got = and_(left, lambda: evaluated.append(1) or 5)
    assert got is left and evaluated == []
    assert int(or_(jnp.asarray(2), lambda: 1 / 0)) == 2  # the right one is never run


# ---------------------------------------------------------------------------
# Traced operands


_jit_and = jax.jit(lambda a, b: and_(a > 0, lambda: b > 0))
_jit_or = jax.jit(lambda a, b: or_(a > 0, lambda: b > 0))
_jit_not = jax.jit(lambda a: not_(a > 0))


@pytest.mark.parametrize("a, b", list(itertools.product([-1.0, 0.0, 2.0], [-3.0, 0.0, 1.0])))
def test_traced_booleans(a, b):
    assert bool(_jit_and(a, b)) is ((a > 0) and (b > 0))
    assert bool(_jit_or(a, b)) is ((a > 0) or (b > 0))
    assert bool(_jit_not(a)) is (not (a > 0))
    assert _jit_and(a, b).dtype == jnp.bool_


@pytest.mark.parametrize("a, b", list(itertools.product([0.0, 2.5], [0.0, -4.0])))
def test_traced_numbers_keep_the_operand_python_returns(a, b):
    # `a and b` is b where a is true, else a; `a or b` the other way round
    f_and = jax.jit(lambda a, b: and_(a, lambda: b))
    f_or = jax.jit(lambda a, b: or_(a, lambda: b))
    assert float(f_and(a, b)) == (a and b)
    assert float(f_or(a, b)) == (a or b)


def test_traced_not_of_a_number():
    f = jax.jit(not_)
    assert bool(f(0.0)) is True and bool(f(3.0)) is False
    assert bool(f(jnp.int32(0))) is True
    assert f(1.0).dtype == jnp.bool_


def test_traced_left_with_a_python_right_operand():
    f = jax.jit(lambda a: and_(a > 0, lambda: True))
    assert bool(f(1.0)) is True and bool(f(-1.0)) is False
    g = jax.jit(lambda a: or_(a > 0, lambda: False))
    assert bool(g(1.0)) is True and bool(g(-1.0)) is False


def test_as_a_test_a_false_python_right_operand_decides():
    # only the truth counts in a test: `x > 0 and None` is false whatever x is
    out = {}

    def f(a):
        out["and"] = and_(a > 0, lambda: None, test=True)
        out["or"] = or_(a > 0, lambda: "yes", test=True)
        return a

    jax.jit(f)(1.0)
    assert out["and"] is False and out["or"] is True


def test_as_a_test_a_traced_right_operand():
    f = jax.jit(lambda a, b: and_(a > 0, lambda: b, test=True))
    for a, b in itertools.product([-1.0, 1.0], [0.0, 2.0]):
        assert bool(f(a, b)) is bool(a > 0 and b)


def test_traced_operands_under_vmap():
    a = jnp.array([-1.0, 1.0, 1.0, -1.0])
    b = jnp.array([1.0, 1.0, -1.0, -1.0])
    got = jax.vmap(lambda a, b: or_(a > 0, lambda: b > 0))(a, b)
    assert got.tolist() == [True, True, True, False]
    got = jax.vmap(lambda a, b: and_(a > 0, lambda: b > 0))(a, b)
    assert got.tolist() == [False, True, False, False]


def test_traced_left_operand_of_several_elements():
    with pytest.raises(autograph.ConditionError):
        jax.jit(lambda a: and_(a > 0, lambda: True))(jnp.ones(3))


def test_traced_operands_of_different_shapes():
    with pytest.raises(autograph.BranchError):
        jax.jit(lambda a: and_(a, lambda: jnp.ones(3)))(1.0)


def test_gradient_through_the_operand_python_returns():
    # `a or b` is a where a is nonzero: the gradient goes to a there, to b elsewhere
    g = jax.jit(jax.grad(lambda a, b: or_(a, lambda: b * b), argnums=(0, 1)))
    np.testing.assert_allclose(np.asarray(g(2.0, 3.0)), [1.0, 0.0])
    np.testing.assert_allclose(np.asarray(g(0.0, 3.0)), [0.0, 6.0])
