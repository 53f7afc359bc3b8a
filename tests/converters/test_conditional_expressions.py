"""`a if c else b`: golden output, Python semantics, staged semantics, errors."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import errors
from autograph.converters import conditional_expressions
from tests.helpers import assert_golden, check_equivalent

F32 = np.float32


def _where(fn, snippet):
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if snippet in text:
            return rf"test_conditional_expressions\.py:{start + i}:"
    raise AssertionError(snippet)


# ---------------------------------------------------------------------------
# Golden output


def test_golden_docstring_example():
    assert_golden("""
        def f(x, a, b):
            y = a if x > 0 else b
            return y
    """, """
        def f(x, a, b):
            y = ag__.if_exp(x > 0, lambda: a, lambda: b)
            return y
    """)


def test_golden_pass_alone():
    assert_golden("""
        def f(x):
            return x * 2 if x > 0 else -x
    """, """
        def f(x):
            return ag__.if_exp(x > 0, lambda: x * 2, lambda: -x)
    """, passes=(conditional_expressions,))


def test_golden_nested():
    assert_golden("""
        def f(x):
            return x if x > 1 else (0.0 if x > 0 else -x)
    """, """
        def f(x):
            return ag__.if_exp(x > 1, lambda: x, lambda: ag__.if_exp(x > 0, lambda: 0.0, lambda: -x))
    """)


def test_golden_inside_lambda_and_with_logic():
    assert_golden("""
        def f(x):
            g = lambda v: v if v > 0 and v < 2 else -v
            return g(x)
    """, """
        def f(x):
            g = lambda v: ag__.if_exp(ag__.and_(v > 0, lambda: v < 2, test=True), lambda: v, lambda: -v)
            return ag__.converted_call(g, x)
    """)


def test_golden_inside_if_branch():
    assert_golden("""
        def f(x):
            if x > 0:
                y = x
            else:
                y = 0.0 if x < -1 else x
            return y
    """, """
        def f(x):
            def if_true():
                y = x
                return (y,)
            def if_false():
                y = ag__.if_exp(x < -1, lambda: 0.0, lambda: x)
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, if_false, (), names=('y',))
            return y
    """)


# ---------------------------------------------------------------------------
# Python values


def pick(c, a, b):
    return a if c else b


CALLS = []


def record(v):
    CALLS.append(v)
    return v


def lazy(c):
    return record("yes") if c else record("no")


@pytest.mark.parametrize("args", [
    (True, 1, 2.5), (False, 1, 2.5), ([], "a", None), ([0], "a", None),
    ("", [1], (2,)), (F32(1.0), "x", "y"), (F32(0.0), "x", "y"),
])
def test_python_values_like_python(args):
    got = autograph.convert(pick)(*args)
    want = pick(*args)
    assert type(got) is type(want) and got == want


def test_returns_the_chosen_object_itself():
    a, b = [1], [2]
    assert autograph.convert(pick)(1, a, b) is a
    assert autograph.convert(pick)(0, a, b) is b


@pytest.mark.parametrize("c", [True, False, 0, "s"])
def test_only_the_chosen_branch_runs_on_python_values(c):
    CALLS.clear()
    want = lazy(c)
    want_calls = list(CALLS)
    CALLS.clear()
    assert autograph.convert(lazy)(c) == want
    assert CALLS == want_calls and len(CALLS) == 1


# ---------------------------------------------------------------------------
# Traced values


def simple(x):
    return x * 2.0 if x > 0 else -x


def nested(x):
    return x if x > 1 else (x * 10.0 if x > 0 else -x)


def pytree(x):
    return (x, {"k": x + 1.0}) if x > 0 else (x - 1.0, {"k": x * 3.0})


def int_or_float(x):
    return x if x > 0 else 0


def two_literals(x):
    return 1 if x > 0 else 2.5


def with_python_condition(x, flag):
    return x * 2.0 if flag else "unused"


def piecewise(x):
    return x * x if x > 0 else jnp.sin(x)


def test_simple():
    check_equivalent(simple, (F32(2.0),), (F32(-3.0),))


def test_nested():
    check_equivalent(nested, (F32(2.0),), (F32(0.5),), (F32(-3.0),))


def test_pytree_branches():
    check_equivalent(pytree, (F32(2.0),), (F32(-3.0),))


def test_dtype_promotion():
    check_equivalent(int_or_float, (F32(2.0),), (F32(-3.0),))
    out = jax.jit(autograph.convert(int_or_float))(jnp.float32(2.0))
    assert out.dtype == jnp.result_type(jnp.float32, 0)
    for v in (2.0, -3.0):
        out = jax.jit(autograph.convert(two_literals))(jnp.float32(v))
        assert out.dtype == jnp.result_type(1, 2.5)
        assert float(out) == two_literals(v)


def test_static_condition_under_jit_runs_one_branch():
    jf = jax.jit(autograph.convert(with_python_condition), static_argnums=1)
    np.testing.assert_allclose(jf(jnp.float32(3.0), True), with_python_condition(3.0, True))


def test_grad_and_vmap():
    g = jax.jit(jax.grad(autograph.convert(piecewise)))
    for v in (1.5, -0.5):
        np.testing.assert_allclose(g(jnp.float32(v)), jax.grad(piecewise)(v), rtol=1e-6)
    xs = np.array([1.5, -0.5, 2.0], F32)
    np.testing.assert_allclose(jax.vmap(autograph.convert(piecewise))(jnp.asarray(xs)),
                               np.array([piecewise(x) for x in xs]), rtol=1e-6)


# ---------------------------------------------------------------------------
# Errors


def shape_mismatch(x):
    return x if x.sum() > 0 else x[:1]


def string_mismatch(x):
    return "pos" if x > 0 else "neg"


def vector_condition(x):
    return x if x > 0 else -x


def test_shape_mismatch():
    with pytest.raises(errors.BranchError, match=_where(shape_mismatch, "return")) as e:
        jax.jit(autograph.convert(shape_mismatch))(jnp.ones(3))
    msg = str(e.value)
    assert "(3,)" in msg and "(1,)" in msg and "fix:" in msg


def test_python_values_differ_under_traced_condition():
    with pytest.raises(errors.BranchError, match=_where(string_mismatch, "return")) as e:
        jax.jit(autograph.convert(string_mismatch))(jnp.float32(1.0))
    msg = str(e.value)
    assert "'pos'" in msg and "'neg'" in msg


def test_vector_condition():
    with pytest.raises(errors.ConditionError, match=_where(vector_condition, "return")) as e:
        jax.jit(autograph.convert(vector_condition))(jnp.ones(3))
    assert ".any()" in str(e.value)
