"""The `try` handlers converter: golden output, and programs that run as under `jax.jit`.

An `if`, `while`, `assert` or `range` on a traced value inside a `try` whose
`except` catches what plain `jax.jit` raises there (``TracerBoolConversionError``,
a ``TypeError``) raises it, as under `jax.jit`; a handler that catches only what
autograph would raise while staging (a ``ValueError``) does not see that either.
Each program runs under plain `jax.jit` and converted, on inputs that take either
branch; where plain `jax.jit` fails, the converted function matches eager Python.
"""

import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph.converters import try_handlers
from tests.helpers import assert_golden


@pytest.mark.parametrize("src, expected", [
    pytest.param("""
        def f(x):
            try:
                if x > 0:
                    y = 1.0
                else:
                    y = 2.0
            except (TypeError, KeyError):
                y = 3.0
            return y
    """, """
        def f(x):
            try:
                with ag__.handled_by((lambda: (TypeError, KeyError),)):
                    if x > 0:
                        y = 1.0
                    else:
                        y = 2.0
            except (TypeError, KeyError):
                y = 3.0
            return y
    """, id="docstring example"),
    pytest.param("""
        def f(x):
            try:
                y = g(x)
            except ValueError as e:
                y = 0.0
            except:
                raise
            finally:
                x = 1
            return y
    """, """
        def f(x):
            try:
                with ag__.handled_by((lambda: ValueError, lambda: BaseException)):
                    y = g(x)
            except ValueError as e:
                y = 0.0
            except:
                raise
            finally:
                x = 1
            return y
    """, id="a bare except catches everything"),
    pytest.param("""
        def f(x):
            try:
                y = g(x)
            finally:
                x = 1
            return y
    """, """
        def f(x):
            try:
                y = g(x)
            finally:
                x = 1
            return y
    """, id="no handler: left as it is"),
])
def test_golden(src, expected):
    assert_golden(src, expected, passes=(try_handlers,))


def caught_if(x):
    try:
        if x > 0:
            y = 1.0
        else:
            y = 2.0
    except Exception:
        y = 3.0
    return y


def caught_while(x):
    try:
        while x < 10:
            x = x + 1
    except TypeError:
        x = -x
    return x


def caught_range(n):
    k = 0
    try:
        for _ in range(n):
            k += 1
    except Exception:
        k = -1
    return k


def caught_and(x):
    try:
        y = 1.0 if x > 0 and x < 5 else 2.0
    except Exception:
        y = 3.0
    return y


def caught_assert(x):
    try:
        assert x[0] >= 0, "negative"
    except Exception:
        x = x * 0
    return x


def helper(x):
    if x > 0:
        return x
    return -x


def caught_in_a_call(x):
    try:
        y = helper(x)
    except Exception:
        y = x * 0 - 1
    return y


@pytest.mark.parametrize("fn, args", [
    (caught_if, (jnp.float32(1.0),)), (caught_if, (jnp.float32(-1.0),)),
    (caught_while, (jnp.float32(1.0),)), (caught_range, (jnp.int32(3),)),
    (caught_and, (jnp.float32(1.0),)), (caught_assert, (jnp.array([-1.0, 2.0]),)),
    (caught_assert, (jnp.array([1.0, 2.0]),)), (caught_in_a_call, (jnp.float32(2.0),)),
])
def test_an_except_that_catches_jax_errors_sees_them_as_under_jit(fn, args):
    want = jax.jit(fn)(*args)
    with pytest.warns(UserWarning, match="an `except` around it catches"):
        got = jax.jit(autograph.convert(fn))(*args)
    np.testing.assert_array_equal(got, want)
    assert jnp.result_type(got) == jnp.result_type(want)


def raise_caught_as_value_error(x):
    try:
        if x < 0:
            raise ValueError("negative")
        y = x
    except ValueError:
        y = x * 0
    return y


def shapes_differ(x):
    try:
        if x > 0:
            y = jnp.zeros(3)
        else:
            y = jnp.zeros(4)
    except ValueError:
        y = jnp.ones(2)
    return y


def several_elements(x):
    try:
        if x > 0:
            y = x
        else:
            y = -x
    except ValueError:
        y = x * 0
    return y


@pytest.mark.parametrize("fn, args", [
    (raise_caught_as_value_error, (jnp.float32(1.0),)),
    (shapes_differ, (jnp.float32(1.0),)),
])
def test_what_autograph_raises_while_staging_is_not_caught_by_the_users_handler(fn, args):
    # each `except ValueError` would catch autograph's error (a `ValueError`), not the
    # `TypeError` plain `jax.jit` raises: both fail, JAX's error from autograph's
    with pytest.raises(TypeError):
        jax.jit(fn)(*args)
    with pytest.raises(TypeError) as caught:
        jax.jit(autograph.convert(fn))(*args)
    assert isinstance(caught.value.__cause__, autograph.errors.AutographError)


def test_a_condition_of_several_elements_raises_what_jit_raises_for_the_handler():
    # JAX's truth of an array of two elements is a `ValueError`, which the handler
    # catches under plain `jax.jit`; autograph's would be a `ConditionError`
    x = jnp.array([1.0, -2.0])
    want = jax.jit(several_elements)(x)
    np.testing.assert_array_equal(jax.jit(autograph.convert(several_elements))(x), want)


def narrow_handler(x, d):
    try:
        v = d["scale"]
    except KeyError:
        v = 1.0
    try:
        if x > 0:
            y = x * v
        else:
            y = -x
        n = 0
        while y < 100.0:
            y = y * 2.0
            n += 1
    except KeyError:
        y, n = 0.0, -1
    return y, n


@pytest.mark.parametrize("x", [3.0, -0.5])
def test_a_handler_that_catches_neither_leaves_the_constructs_staged(x):
    conv = jax.jit(autograph.convert(narrow_handler))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for d in ({}, {"scale": 2.0}):
            y, n = conv(jnp.float32(x), d)
            want_y, want_n = narrow_handler(x, d)
            np.testing.assert_allclose(y, want_y, rtol=1e-6)
            assert int(n) == want_n


try:
    import autograph_no_such_optional_library as _optional  # type: ignore[import-not-found]
except ImportError:
    _optional = None


def a_later_handler_that_cannot_be_evaluated(x):
    try:
        if x > 0:
            y = 1.0
        else:
            y = 2.0
    except TypeError:
        y = 3.0
    except _optional.Error:  # never evaluated: the first handler matches
        y = 4.0
    return y


def a_missing_key_on_the_branch_not_taken(x):
    d = {"a": 1.0}
    try:
        if x > 0:
            y = d["a"] * x
        else:
            y = d["b"] * x
    except KeyError:
        y = -1.0 * x
    return y


def _as_float(x):
    return float(x)


def float_in_a_helper(x):
    try:
        return _as_float(x)
    except TypeError:
        return x + 100.0


def sqrt_written_in_the_body(x):
    try:
        return math.sqrt(x)
    except TypeError:
        return x + 100.0


def float_under_a_narrow_handler(x):
    try:
        a = float(x) * 2
    except KeyError:
        a = 0.0
    return a


def an_assert_under_its_own_handler(x):
    try:
        assert x > 0, "negative"
        y = x + 5
    except AssertionError:
        y = x * 0 + 7
    return y


_EVALUATED = []


def _handler_class():
    _EVALUATED.append(1)
    return TypeError


def a_handler_made_by_a_call(x):
    try:
        if x > 0:
            y = x
        else:
            y = -x
    except _handler_class():
        y = x * 0
    return y


@pytest.mark.parametrize("fn", [a_later_handler_that_cannot_be_evaluated, float_in_a_helper,
                                sqrt_written_in_the_body, a_handler_made_by_a_call])
def test_handlers_python_evaluates_in_order_see_what_jit_raises(fn):
    # the first handler that matches decides, as Python tries them; a built-in in a
    # helper raises as under jax.jit; a handler's own call runs once, as under jax.jit
    _EVALUATED.clear()
    want = jax.jit(fn)(jnp.float32(4.0))
    assert len(_EVALUATED) in (0, 1)
    _EVALUATED.clear()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = jax.jit(autograph.convert(fn))(jnp.float32(4.0))
    assert len(_EVALUATED) in (0, 1)
    np.testing.assert_array_equal(got, want)
    assert jnp.result_type(got) == jnp.result_type(want)


@pytest.mark.parametrize("fn", [a_missing_key_on_the_branch_not_taken,
                                an_assert_under_its_own_handler])
def test_an_error_met_only_while_staging_is_not_caught_by_a_narrow_handler(fn):
    # plain jax.jit fails at the `if` (or `assert`); staged, the branch not taken was
    # traced too and raised what the handler catches (-2.0 where Python gives 2.0)
    with pytest.raises(TypeError):
        jax.jit(fn)(jnp.float32(2.0))
    with pytest.raises(TypeError):
        jax.jit(autograph.convert(fn))(jnp.float32(2.0))


def test_a_narrow_handler_leaves_builtins_their_meaning_on_arrays():
    # `float` of a traced value under `except KeyError:` gives Python's answer
    got = jax.jit(autograph.convert(float_under_a_narrow_handler))(jnp.float32(1.5))
    assert float(got) == float_under_a_narrow_handler(1.5) == 3.0
