"""Catalogue rows (docs/catalogue.md) for expressions: operators, calls, displays, subscripts."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from tests.helpers import (
    _both,
    _close,
    _fixed_or_rejected,
    _jit,
    _py,
    _raises,
    _rejected,
)

# ===========================================================================
# Expressions: boolean operators, comparisons, conditional expressions


def and_or_values(x, y):
    return x or y, x and y


def test_and_or():
    _py(and_or_values, 0.0, 3.0)
    _py(and_or_values, 2.0, 3.0)
    # traced: both sides evaluated, and the operand Python would return is
    # chosen at run time (0.0 or 3.0 is 3.0; 2.0 and 3.0 is 3.0)
    for x, y in ((0.0, 3.0), (2.0, 3.0)):
        got = jax.jit(autograph.convert(and_or_values))(x, y)
        assert [float(a) for a in got] == [float(v) for v in and_or_values(x, y)]
        assert [a.dtype for a in got] == [jnp.float32, jnp.float32]


def short_circuit(x, ys):
    return len(ys) > 0 and ys[0] > x


def test_and_or_short_circuit():
    _py(short_circuit, 1.0, [])
    _both(short_circuit, (1.0, [2.0]), (1.0, [0.0]))


def not_operator(x):
    return not x, not (x > 1)


def not_array(x):
    return not x


def test_not():
    _both(not_operator, (0.0,), (2.0,))
    _raises(autograph.ConditionError, lambda: jax.jit(autograph.convert(not_array))(jnp.ones(2)),
            not_array, "return not x")


def compare_single(x, y):
    return x < y, x == y, x != y, x >= y


def test_compare():
    _both(compare_single, (1.0, 2.0), (2.0, 2.0))


def chained_comparison(x):
    return 0 < x < 1, 0 < (x * 2) <= 1 != x


def test_chained_comparison():
    _both(chained_comparison, (0.25,), (0.75,), (2.0,))


def chained_comparison_walrus(x):
    ok = 0 < x < (y := 5)
    return ok, y


def test_chained_comparison_walrus():
    # the last operand would move into a lambda (`ag__.and_(0 < x, lambda: x < (y := 5))`),
    # where the walrus would bind a lambda local: not converted, the function runs as it is
    fn = chained_comparison_walrus
    with pytest.warns(UserWarning, match="runs unconverted"):
        _fixed_or_rejected(fn, "y := 5", lambda: autograph.convert(fn)(1.0), fn(1.0))


def is_operator(x, y=None):
    if y is None:
        y = x
    same = x is y
    return x if y is not None else 0.0, same


def test_is():
    _py(is_operator, 2.0)
    _py(is_operator, 2.0, 3.0)
    # traced: identity of Python objects (tracers), decided while tracing
    _jit(is_operator, 2.0)


def in_python_container(x, d):
    return ("a" in d) and ("z" not in d), x + d["a"]


def in_traced(x, xs):
    return x in [1.0, 2.0], x in xs, x not in xs


def in_set_traced(x):
    return x in {1.0, 2.0}


def test_in():
    _both(in_python_container, (1.0, {"a": 2.0}))
    # traced: a traced bool (`==` with each list item; a 1-D array's own `in`)
    _both(in_traced, (2.0, np.array([2.0, 5.0], np.float32)),
          (3.0, np.array([2.0, 5.0], np.float32)))
    # a set hashes its items: a tracer is unhashable
    _raises(TypeError, lambda: jax.jit(autograph.convert(in_set_traced))(2.0), in_set_traced,
            "return x in {1.0, 2.0}")


def and_python_operand(x, y):
    if x > 1 and y:
        return x
    return -x


def and_python_operand_value(x, y):
    return x > 1 and y


def test_and_or_python_operand():
    for y in (None, "a", 0, [1]):
        _py(and_python_operand, 2.0, y)
        for x in (2.0, 0.5):
            want = and_python_operand(x, y)
            got = jax.jit(autograph.convert(lambda v, y=y: and_python_operand(v, y)))(x)
            assert float(got) == want
    # as a value, `False` (an array) or `None` cannot be one array
    _raises(autograph.BranchError,
            lambda: jax.jit(autograph.convert(lambda v: and_python_operand_value(v, None)))(2.0),
            and_python_operand_value, "return x > 1 and y")


def conditional_expression(x):
    y = x * 2 if x > 0 else -x
    z = 1 if x > 5 else 2.5
    return y, z


def test_conditional_expression():
    _both(conditional_expression, (2.0,), (-2.0,), (7.0,))


# ===========================================================================
# Expressions: walrus


def walrus_allowed(xs):
    if (n := len(xs)) > 2:
        total = 0.0
    else:
        total = 1.0
    ys = [(last := v) * 2 for v in xs]
    big = (m := xs[0] + 1) > 0 and xs[1] > 0
    w = 1.0 if (t := xs[0]) > 0 else 2.0
    return n, total, ys, last, big, m, w, t


def test_walrus():
    _both(walrus_allowed, (np.array([1.0, 2.0, 3.0], np.float32),),
          (np.array([-1.0, 2.0], np.float32),))


def walrus_in_while_test(x):
    n = 0
    while (y := x * 2.0) < 10.0:
        x = y
        n += 1
    return x, n, y


def walrus_in_while_else(x):
    while (y := x) > 0:
        x -= 1
    else:
        x = x + 1
    return x


def walrus_in_right_operand(x):
    y = -1.0
    if x > 0 and (y := x * 2.0) > 3.0:
        return y
    return x + y


def walrus_in_right_operand_value(x, d):
    w = 0.0
    v = d.get("k") or (w := x * 3.0)
    return v, w


def test_walrus_in_right_operand():
    # bound where the operand runs: an `if` statement, staged when the left one is traced
    _both(walrus_in_right_operand, (2.0,), (1.0,), (-1.0,))
    _both(walrus_in_right_operand_value, (2.0, {}), (2.0, {"k": 5.0}))


def walrus_in_right_operand_of_a_call(x):
    return abs(x > 0 and (y := x))


def walrus_in_conditional_branch(x):
    z = (y := x + 1.0) if x > 0 else (y := x - 1.0)
    return z + y


def walrus_in_a_nested_conditional_branch(x):
    return abs((y := 1) if x > 0 else 0)


def test_walrus_in_while_test_and_conditional_branch():
    # the `while` test binds `y` before each iteration (also the one that ends the
    # loop); the conditional expression binds it on the branch that runs
    _both(walrus_in_while_test, (1.0,), (3.0,), (20.0,))
    _both(walrus_in_conditional_branch, (1.0,), (-1.0,))


@pytest.mark.parametrize("fn,snippet,construct", [
    (walrus_in_while_else, "while (y := x)", "`while` loop with an `else:` clause"),
    (walrus_in_right_operand_of_a_call, "(y := x)", "right operand of `and`/`or`"),
    (walrus_in_a_nested_conditional_branch, "(y := 1)", "branch of a conditional expression"),
], ids=["while_else_test", "and_or_right_elsewhere", "ifexp_branch_elsewhere"])
def test_walrus_rejected(fn, snippet, construct):
    _rejected(fn, snippet, construct)


# ===========================================================================
# Expressions: arithmetic, calls


def arithmetic(a, b):
    return (a @ b).sum() ** 2 // 3 % 5, -a, +b, abs(a - b), a / 2, jnp.int32(3) << 1, ~jnp.int32(3)


def test_binary_and_unary_operators():
    a = np.ones((2, 2), np.float32)
    _both(arithmetic, (a, 2 * a))


def helper_abs(v):
    if v > 0:
        return v
    return -v


def calls_user_function(x):
    return helper_abs(x) + helper_abs(-2.0 * x)


def test_call_user_function():
    _both(calls_user_function, (2.0,), (-3.0,))
    # recursive=False: callees run unconverted, so a traced `if` fails in them
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(autograph.convert(calls_user_function, recursive=False))(2.0)


@autograph.do_not_convert
def helper_not_converted(v):
    if v > 0:
        return v
    return -v


def calls_do_not_convert(x):
    return helper_not_converted(x)


def test_call_do_not_convert():
    _py(calls_do_not_convert, 2.0)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(autograph.convert(calls_do_not_convert))(2.0)


def recursive(n, x):
    if n <= 0:
        return x
    return recursive(n - 1, x * 2)


def test_call_recursive():
    _py(recursive, 3, 1.0)
    _jit(recursive, 3, 1.0, static_argnums=(0,))


def calls_builtins(x, xs):
    return abs(x), len(xs), min(len(xs), 2), float(round(2.6)), sum(xs)


def calls_builtins_traced(x, n):
    return abs(x), round(x), round(x, 1), divmod(x, 0.75), sum([x, n], 0.5)


def test_call_builtin():
    _py(calls_builtins, -2.0, [1, 2, 3])
    _jit(calls_builtins, -2.0, [1, 2, 3])
    _both(calls_builtins_traced, (2.5, 7), (-3.5, -8))


def casts(x, n):
    return float(n), int(x), int(-x), bool(x), complex(x, 1.0)


def cast_of_array(xs):
    return float(xs)


def test_call_builtin_cast():
    _both(casts, (2.7, 3), (-0.5, 0))
    _raises(autograph.BuiltinError, lambda: jax.jit(autograph.convert(cast_of_array))(
        jnp.ones(3)), cast_of_array, "return float(xs)")


def min_max(x, xs):
    return max(x, 0.0), min(x, 1.0, -x), max(xs), min([x, 2.0]), min(range(3), key=lambda i: xs[i])


def min_of_rows(xs):
    return min(xs)


def test_call_builtin_min_max():
    _both(min_max, (2.0, np.array([3.0, -1.0, 2.0], np.float32)),
          (-2.0, np.array([0.0, 5.0, 5.0], np.float32)))
    _raises(autograph.ConditionError, lambda: jax.jit(autograph.convert(min_of_rows))(
        jnp.ones((2, 2))), min_of_rows, "return min(xs)")


def any_all_sorted(x, xs):
    return any([x > 1, x < -1]), all(v > 0 for v in xs), sorted(xs), sorted(xs, reverse=True)


def test_call_builtin_any_all_sorted():
    _both(any_all_sorted, (2.0, np.array([3.0, -1.0, 2.0], np.float32)),
          (0.0, np.array([1.0, 5.0], np.float32)))


def pow_negative(n):
    return pow(n, -1), pow(n, 2)


def pow_modular(n):
    return pow(n, 2, 5)


def test_call_builtin_pow():
    _both(pow_negative, (4,), (-2,))
    _py(pow_modular, 4)
    _raises(autograph.BuiltinError, lambda: jax.jit(autograph.convert(pow_modular))(4),
            pow_modular, "return pow(n, 2, 5)")


def calls_jnp(x):
    y = jnp.where(x > 0, x, 0.0)
    return jnp.sin(y) + jax.nn.relu(x) + np.float32(1.0)


def test_call_jnp():
    _both(calls_jnp, (np.float32(2.0),), (np.float32(-1.0),))


# ===========================================================================
# Expressions: displays, comprehensions, generators, strings


def displays(x):
    lst = [x, 2.0]
    tup = (x, [x])
    dct = {"a": x, "b": (x, 1)}
    st = {1, 2, 2}
    return lst, tup, dct, len(st)


def set_display_traced(x):
    return len({x, 1.0})


def test_displays():
    _both(displays, (2.0,))
    _py(set_display_traced, 2.0)
    # traced values are unhashable
    _raises(TypeError, lambda: jax.jit(autograph.convert(set_display_traced))(2.0),
            set_display_traced, "return len({x, 1.0})")


def starred_in_displays(xs, x):
    ys = [*xs, x]
    d = {**{"a": x}, "b": 1.0}
    return ys, (*ys, x), d, max(*[1, 3, 2])


def test_starred_in_displays():
    _both(starred_in_displays, ([1.0, 2.0], 3.0))


def comprehensions(xs):
    lst = [v if v > 0 else 0.0 for v in xs]
    dct = {i: v * 2 for i, v in enumerate(xs)}
    st = {k for k in (1, 2, 2)}
    nested = [[a * b for a in xs] for b in xs]
    return lst, dct, len(st), nested


def comprehension_traced_filter(xs):
    return [v for v in xs if v > 0]


def test_comprehensions():
    _both(comprehensions, (np.array([-1.0, 2.0], np.float32),))
    _py(comprehension_traced_filter, np.array([-1.0, 2.0]))
    # a traced `if` clause would need a data-dependent length
    _raises(jax.errors.TracerBoolConversionError,
            lambda: jax.jit(autograph.convert(comprehension_traced_filter))(jnp.ones(2)),
            comprehension_traced_filter, "return [v for v in xs if v > 0]")


def generator_expression(xs):
    return sum(v * v for v in xs), tuple(v + 1 for v in xs)


def generator_traced_any(xs):
    return any(v > 0 for v in xs)


def test_generator_expression():
    _both(generator_expression, (np.arange(3.0, dtype=np.float32),))
    _both(generator_traced_any, (np.arange(3.0, dtype=np.float32),),
          (-np.arange(3.0, dtype=np.float32),))


SEEN = []


def f_strings(x):
    SEEN.append(f"v={x}|{'a':>3}|{len([x])}")
    return x


def f_string_format_spec(x):
    SEEN.append(f"{x:.2f}")
    return x


def test_f_string():
    SEEN.clear()
    _py(f_strings, 2.0)
    _py(f_string_format_spec, 2.0)
    assert SEEN == ["v=2.0|  a|1"] * 2 + ["2.00"] * 2
    # traced: formatted while tracing, from the tracer, as under plain jax.jit
    SEEN.clear()
    jax.jit(autograph.convert(f_strings))(2.0)
    assert SEEN[0].startswith("v=") and "Tracer" in SEEN[0] and SEEN[0].endswith("|  a|1")
    _raises(TypeError, lambda: jax.jit(autograph.convert(f_string_format_spec))(2.0),
            f_string_format_spec, 'SEEN.append(f"{x:.2f}")')


def f_string_in_print(x):
    print(f"x={x:.2f}|{'a':>3}")
    return x


def test_f_string_in_print(capsys):
    f_string_in_print(jnp.float32(2.0))
    want = capsys.readouterr().out
    jax.jit(autograph.convert(f_string_in_print))(2.0)
    jax.effects_barrier()
    assert capsys.readouterr().out == want == "x=2.00|  a\n"


def formatting_in_print(x, n):
    print("x={:.2f}|{!r:>4}".format(x, "a"), "%d: %.3f" % (n, x), "<" + str(x) + ">", repr(n))
    return x


def test_formatting_in_print(capsys):
    formatting_in_print(jnp.float32(2.0), jnp.int32(3))
    want = capsys.readouterr().out
    jax.jit(autograph.convert(formatting_in_print))(2.0, 3)
    jax.effects_barrier()
    assert capsys.readouterr().out == want == "x=2.00| 'a' 3: 2.000 <2.0> Array(3, dtype=int32)\n"


# ===========================================================================
# Expressions: subscripts and attributes


def subscript_static(x):
    return x[1], x[1:3].sum(), x[::-1][0], x[None, -1]


def subscript_traced_index(x, i):
    return x[i], x[i + 1]


def list_index_traced(x, i):
    ys = [1.0, 2.0, 3.0]
    return ys[i] * x


def test_subscript():
    x = np.arange(5.0, dtype=np.float32)
    _both(subscript_static, (x,))
    _both(subscript_traced_index, (x, 2))
    _py(list_index_traced, 1.0, 2)
    _raises(jax.errors.TracerIntegerConversionError,
            lambda: jax.jit(autograph.convert(list_index_traced))(1.0, 2),
            list_index_traced, "return ys[i] * x")


def slice_traced_bounds(x, i):
    return x[i:i + 2].sum()


def test_slice_traced_bounds():
    x = np.arange(5.0, dtype=np.float32)
    _py(slice_traced_bounds, x, 1)
    _jit(slice_traced_bounds, x, 1, static_argnums=(1,))
    # traced bounds: JAX needs static slice sizes (use lax.dynamic_slice)
    _raises(IndexError, lambda: jax.jit(autograph.convert(slice_traced_bounds))(x, 1),
            slice_traced_bounds, "return x[i:i + 2]")


def slice_with_loop_index(x):
    s = 0.0
    for i in range(3):
        s += x[i:i + 2].sum()
    return s


def test_slice_with_loop_index():
    # staged, `i` is traced and `x[i:i + 2]` raises IndexError, which the
    # unroll fallback for loops that need a Python index (loops.py,
    # _NEEDS_PYTHON_INDEX) does not catch; plain `jax.jit` runs this loop
    x = np.arange(5.0, dtype=np.float32)
    _close(jax.jit(slice_with_loop_index)(x), slice_with_loop_index(x))
    _py(slice_with_loop_index, x)
    _jit(slice_with_loop_index, x)  # unrolled (with a warning) would do


def attribute_load(x):
    t = 0.0
    for i in range(x.shape[0]):
        t = t + x[i]
    return t, x.ndim, x.T.shape


def test_attribute_load():
    _both(attribute_load, (np.arange(3.0, dtype=np.float32),))


def calls_math(x):
    import math
    y = math.sqrt(math.fabs(x)) + math.floor(x)
    if math.isclose(y, 2.0, abs_tol=0.5):
        y = y * math.pi
    return y


def test_call_math():
    _both(calls_math, (np.float32(2.0),), (np.float32(-1.5),))


def _larger(a, b):
    if a > b:
        return a
    return b


def reduces_with_a_user_function(xs):
    import functools
    return functools.reduce(_larger, [xs[0], xs[1], xs[2]]) + sum(map(abs, [xs[0], xs[1]]))


def test_call_library_with_user_function():
    _both(reduces_with_a_user_function, (np.array([1.0, -3.0, 2.0], np.float32),),
          (np.array([-1.0, 0.5, -2.0], np.float32),))


def _is_positive(v):
    return v > 0


def filters(xs):
    return [v * 2.0 for v in filter(_is_positive, [1.0, -2.0, 3.0])] + [xs]


def filters_traced(xs):
    return list(filter(_is_positive, [xs[0], xs[1]]))


def test_call_builtin_filter():
    _both(filters, (np.float32(1.5),))
    with pytest.raises(autograph.BuiltinError, match="`filter` keeps the items"):
        jax.jit(autograph.convert(filters_traced))(np.array([1.0, -2.0], np.float32))
