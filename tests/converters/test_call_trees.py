"""User calls go through `ag__.converted_call`; library calls stay as they are."""

import functools
import inspect
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import errors
from autograph.converters import call_trees
from tests.helpers import assert_golden, check_equivalent

F32 = np.float32


def _where(fn, snippet):
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if snippet in text:
            return rf"test_call_trees\.py:{start + i}:"
    raise AssertionError(snippet)


# ---------------------------------------------------------------------------
# Golden output


def test_golden_docstring_example():
    assert_golden("""
        def f(x):
            y = helper(x, k=2)
            z = jnp.sin(x)
            m = min(y, z)
            return m
    """, """
        def f(x):
            y = ag__.converted_call(helper, x, k=2)
            z = jnp.sin(x)
            m = ag__.converted_call(min, y, z)
            return m
    """, passes=(call_trees,))


def test_golden_math_and_operator_calls_are_routed():
    # the runtime finds Python's meaning on traced values by the callee's identity
    assert_golden("""
        def f(x):
            y = math.sin(x) + math.floor(x)
            return operator.truth(y), math.pi
    """, """
        def f(x):
            y = ag__.converted_call(math.sin, x) + ag__.converted_call(math.floor, x)
            return (ag__.converted_call(operator.truth, y), math.pi)
    """, passes=(call_trees,))


def test_golden_loop_options_that_configure_no_loop_raise_where_they_run():
    assert_golden("""
        def f(x):
            for i in range(3):
                autograph.set_loop_options(maximum_iterations=2)
                x = x + i
            return x
    """, """
        def f(x):
            for i in range(3):
                ag__.misplaced_loop_options('it leads the body of a `for` loop, whose trip count is known before it starts; only a `while` loop takes options', maximum_iterations=2)
                x = x + i
            return x
    """, passes=(call_trees,))


def test_golden_builtins_library_and_array_methods_stay():
    assert_golden("""
        def f(x, obj):
            n = len(x)
            m = max(n, abs(x.sum()))
            w = obj.method(x)
            v = np.cos(lax.stop_gradient(x)).mean()
            return n + m + w + v
    """, """
        def f(x, obj):
            n = len(x)
            m = ag__.converted_call(max, n, abs(x.sum()))
            w = ag__.converted_call(obj.method, x)
            v = np.cos(lax.stop_gradient(x)).mean()
            return n + m + w + v
    """)


def test_golden_library_calls_handed_user_functions_are_routed():
    # a lambda, a function the tree defines, a partial, a module-level name: the
    # runtime hands the library their converted twins (by identity, as they run);
    # arrays, wrappers (`functools.partial` itself), method calls and the runtime's own
    # operators stay as written
    assert_golden("""
        def f(xs, tree, w):
            def smaller(a, b):
                return a if a < b else b
            m = functools.reduce(smaller, xs)
            t = jax.tree_util.tree_reduce(pick, tree)
            s = jax.tree_util.tree_reduce(lambda a, b: a + b, tree)
            p = functools.reduce(functools.partial(pick, 2), xs)
            q = functools.partial(pick, 2)
            v = jnp.dot(w, xs)
            t = ag__.fstring(lambda v0: f"{v0}", w)
            return list(map(pick, xs)), list(filter(None, xs))
    """, """
        def f(xs, tree, w):
            def smaller(a, b):
                return a if a < b else b
            m = ag__.converted_call(functools.reduce, smaller, xs)
            t = ag__.converted_call(jax.tree_util.tree_reduce, pick, tree)
            s = ag__.converted_call(jax.tree_util.tree_reduce, lambda a, b: a + b, tree)
            p = ag__.converted_call(functools.reduce, functools.partial(pick, 2), xs)
            q = functools.partial(pick, 2)
            v = jnp.dot(w, xs)
            t = ag__.fstring(lambda v0: f'{v0}', w)
            return (list(ag__.converted_call(map, pick, xs)), list(ag__.converted_call(filter, None, xs)))
    """, passes=(call_trees,))


def test_golden_rebound_builtin_is_a_user_call():
    assert_golden("""
        def f(x):
            len = lambda v: 3
            return len(x)
    """, """
        def f(x):
            len = lambda v: 3
            return ag__.converted_call(len, x)
    """)


def test_golden_builtins_with_a_traced_meaning_are_calls():
    assert_golden("""
        def f(a, d, n):
            m = min(d[0] + 1, d[1] + 1, d[2])
            k = max(range(n), key=lambda i: a[i])
            return float(n) + int(m), any(v > 0 for v in a), sorted(a), pow(n, -1)
    """, """
        def f(a, d, n):
            m = ag__.converted_call(min, d[0] + 1, d[1] + 1, d[2])
            k = ag__.converted_call(max, range(n), key=lambda i: a[i])
            return (ag__.converted_call(float, n) + ag__.converted_call(int, m), ag__.converted_call(any, (v > 0 for v in a)), ag__.converted_call(sorted, a), ag__.converted_call(pow, n, -1))
    """, passes=(call_trees,))


def test_golden_builtins_in_a_try_body_are_routed_too():
    # the runtime decides: where a handler would catch the error `int(x)` raises
    # while tracing, the built-in itself runs, as under jax.jit (`core.handlers`)
    assert_golden("""
        def f(x):
            try:
                y = int(x)
            except TypeError:
                y = int(-x)
            return y
    """, """
        def f(x):
            try:
                y = ag__.converted_call(int, x)
            except TypeError:
                y = ag__.converted_call(int, -x)
            return y
    """, passes=(call_trees,))


def test_golden_star_args_and_nested_calls():
    assert_golden("""
        def f(x, args, kw):
            return g(h(x), *args, **kw)
    """, """
        def f(x, args, kw):
            return ag__.converted_call(g, ag__.converted_call(h, x), *args, **kw)
    """)


def test_golden_call_in_if_branch():
    assert_golden("""
        def f(x):
            if x > 0:
                y = helper(x)
            else:
                y = jnp.cos(x)
            return y
    """, """
        def f(x):
            def if_true():
                y = ag__.converted_call(helper, x)
                return (y,)
            def if_false():
                y = jnp.cos(x)
                return (y,)
            (y,) = ag__.if_stmt(x > 0, if_true, if_false, (), names=('y',))
            return y
    """)


def test_golden_not_recursive_leaves_calls():
    got = autograph.to_code(uses_helper, recursive=False)
    assert "converted_call" not in got
    assert "helper(x, k=3.0)" in got


# ---------------------------------------------------------------------------
# Behaviour under jit


def helper(x, k=1.0):
    if x > 0:
        y = x * k
    else:
        y = -x
    return y


def uses_helper(x):
    return helper(x, k=3.0) + jnp.sin(x)


def uses_lambda(x):
    g = lambda v: v * 2.0 if v > 0 else v - 1.0
    return g(x)


def uses_nested_def(x):
    def inner(v):
        if v > 1:
            return v
        return -v
    return inner(x) + 1.0


class Model:
    def __init__(self, scale):
        self.scale = scale

    def apply(self, x):
        if x > 0:
            return x * self.scale
        return x

    def __call__(self, x):
        if x > 1:
            x = x - 1.0
        return x


MODEL = Model(2.0)


def uses_method(x):
    return MODEL.apply(x)


def uses_callable_object(x):
    return MODEL(x)


PARTIAL = functools.partial(helper, k=5.0)


def uses_partial(x):
    return PARTIAL(x)


def uses_builtins(x):
    return abs(x) + max(x, 0.5) + float(len([x, x]))


ARGS = [(F32(2.0),), (F32(-2.0),), (F32(0.5),)]


@pytest.mark.parametrize("fn", [uses_helper, uses_lambda, uses_nested_def, uses_method,
                                uses_callable_object, uses_partial])
def test_user_calls_with_traced_if(fn):
    check_equivalent(fn, *ARGS)


def test_builtins_on_python_values():
    for (v,) in ARGS:
        assert autograph.convert(uses_builtins)(float(v)) == uses_builtins(float(v))


def test_converted_method_and_partial_directly():
    for v in (2.0, -2.0):
        np.testing.assert_allclose(jax.jit(autograph.convert(MODEL.apply))(jnp.float32(v)),
                                   MODEL.apply(v))
        np.testing.assert_allclose(jax.jit(autograph.convert(PARTIAL))(jnp.float32(v)), PARTIAL(v))


def test_nested_def_and_lambda_do_not_warn():
    # They are converted with the enclosing function; calling them is not
    # "calling unconverted".
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        autograph.convert(uses_nested_def)(2.0)
        autograph.convert(uses_lambda)(2.0)


@autograph.do_not_convert
def not_converted(x):
    if x > 0:
        return x
    return -x


def uses_not_converted(x):
    return not_converted(x)


def test_do_not_convert_is_called_as_is():
    assert autograph.convert(uses_not_converted)(2.0) == 2.0
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(autograph.convert(uses_not_converted))(jnp.float32(2.0))


def helper_with_error(x):
    if x > 0:
        y = x
    return y


def calls_helper_with_error(x):
    return helper_with_error(x) + 1.0


def test_error_in_helper_names_helper_line():
    with pytest.raises(errors.BranchError, match=_where(helper_with_error, "if x > 0")) as e:
        jax.jit(autograph.convert(calls_helper_with_error))(jnp.float32(1.0))
    assert "`y`" in str(e.value)
