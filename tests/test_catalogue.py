"""The catalogue of docs/catalogue.md: every statement and expression kind, one test per row.

Each test is named after its row (``test_<row>``). A test compares
``autograph.convert(f)`` with plain Python on Python/NumPy values (same value,
same type) and ``jax.jit(autograph.convert(f))`` with the plain result where
traced values are meaningful; or it asserts the exact error class and that the
message (or the note autograph adds to a traceback) names this file's
``test_catalogue.py:LINE``.

Where staging cannot give plain Python's behaviour, a row's test accepts a
clear ``autograph`` error naming the line instead.
"""

from __future__ import annotations

import contextlib
import inspect
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph

# ---------------------------------------------------------------------------
# helpers


def _line(fn, snippet: str) -> int:
    """The line of this file where ``snippet`` first occurs in ``fn``'s source."""
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if snippet in text:
            return start + i
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


def _names_line(exc: BaseException, fn, snippet: str) -> None:
    where = f"test_catalogue.py:{_line(fn, snippet)}"
    text = str(exc) + "\n" + "\n".join(getattr(exc, "__notes__", ()))
    assert where in text, f"{where} not named in:\n{text}"


def _raises(cls, call, fn, snippet: str) -> BaseException:
    """``call()`` raises exactly ``cls``, naming the line of ``snippet`` in ``fn``."""
    with pytest.raises(BaseException) as info:
        call()
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    _names_line(info.value, fn, snippet)
    return info.value


def _rejected(fn, snippet: str, construct: str) -> None:
    """Conversion of ``fn`` fails with a ConversionError at ``snippet``'s line."""
    e = _raises(autograph.ConversionError, lambda: autograph.convert(fn), fn, snippet)
    assert construct in str(e) and "not supported" in str(e) and "fix:" in str(e)


def _identical(got, want) -> None:
    lg, tg = jax.tree_util.tree_flatten(got)
    lw, tw = jax.tree_util.tree_flatten(want)
    assert tg == tw, f"structures differ: {tg} vs {tw}"
    for a, b in zip(lg, lw):
        assert type(a) is type(b), f"{type(a).__name__} vs {type(b).__name__}"
        if isinstance(b, (np.ndarray, np.generic, jax.Array)):
            assert np.asarray(a).dtype == np.asarray(b).dtype
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        else:
            assert a == b, f"{a!r} vs {b!r}"


def _close(got, want) -> None:
    lg, tg = jax.tree_util.tree_flatten(got)
    lw, tw = jax.tree_util.tree_flatten(want)
    assert tg == tw, f"structures differ: {tg} vs {tw}"
    for a, b in zip(lg, lw):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)


def _py(fn, *args, **kwargs):
    """``convert(fn)`` on Python/NumPy values gives exactly ``fn``'s result."""
    want = fn(*args, **kwargs)
    _identical(autograph.convert(fn)(*args, **kwargs), want)
    return want


def _to_jax(x):
    return jax.tree_util.tree_map(
        lambda a: jnp.asarray(a) if isinstance(a, (np.ndarray, np.generic)) else a, x)


def _jit(fn, *args, static_argnums=(), **kwargs):
    """``jax.jit(convert(fn))`` on traced values gives ``fn``'s Python result."""
    want = fn(*args, **kwargs)
    jf = jax.jit(autograph.convert(fn), static_argnums=static_argnums)
    got = jf(*[a if i in static_argnums else _to_jax(a) for i, a in enumerate(args)], **kwargs)
    _close(got, want)
    return got


def _both(fn, *arg_sets, static_argnums=()):
    for args in arg_sets:
        _py(fn, *args)
        _jit(fn, *args, static_argnums=static_argnums)


def _fixed_or_rejected(fn, snippets, run, want):
    """``run()`` gives ``want``, or an autograph error names one of
    the lines of ``snippets`` (a string or a tuple of strings)."""
    try:
        got = run()
    except autograph.AutographError as e:
        lines = [f"test_catalogue.py:{_line(fn, s)}"
                 for s in ((snippets,) if isinstance(snippets, str) else snippets)]
        assert any(line in str(e) for line in lines), f"none of {lines} in:\n{e}"
        return
    _close(got, want)


# ===========================================================================
# Statements: assignment


def assign_plain(x):
    y = x * 2.0
    z = y
    return z + 1.0


def test_assign_plain():
    _both(assign_plain, (1.5,), (np.float32(-3.0),))


def assign_tuple_unpacking(x, y):
    if x > y:
        x, y = y, x
    (a, b), c = (x, y), x + y
    return a, b, c


def test_assign_tuple_unpacking():
    _both(assign_tuple_unpacking, (3.0, 1.0), (1.0, 3.0))


def assign_starred_unpacking(x):
    xs = [x, x + 1.0, x + 2.0]
    if x > 0:
        a, *rest = xs
    else:
        *rest, a = xs
    return a + rest[0], len(rest)


def test_assign_starred_unpacking():
    _both(assign_starred_unpacking, (2.0,), (-2.0,))


def assign_augmented(xs):
    total = 0.0
    count = 0
    for v in xs:
        total += v
        count += 1
    total *= 2
    return total, count


def test_assign_augmented():
    _both(assign_augmented, (np.arange(4.0, dtype=np.float32),))


def assign_annotated(x):
    n: int
    if x > 0:
        y: float = x
    else:
        y: float = -x
    return y


def test_assign_annotated():
    _both(assign_annotated, (2.0,), (-3.0,))


def assign_subscript_store(x):
    ys = [0.0, 0.0]
    d = {"k": 1.0}
    if x > 0:
        ys[0] = x
        d["k"] += x
    else:
        ys[1] = x
    return ys, d


def test_assign_subscript_store():
    _both(assign_subscript_store, (2.0,), (-2.0,))


def assign_subscript_store_array(x):
    x[0] = 5.0
    return x


def assign_subscript_at_set(x):
    return x.at[0].set(5.0)


def test_assign_subscript_store_array():
    # NumPy arrays are mutable: plain Python semantics (updated in place)
    a = np.zeros(3, np.float32)
    _py(assign_subscript_store_array, a.copy())
    b = a.copy()
    autograph.convert(assign_subscript_store_array)(b)
    assert b[0] == 5.0
    # JAX arrays, traced or not: `x` is rebound to `x.at[0].set(5.0)`
    for run in (autograph.convert(assign_subscript_store_array),
                jax.jit(autograph.convert(assign_subscript_store_array))):
        np.testing.assert_array_equal(run(jnp.zeros(3)), [5.0, 0.0, 0.0])
    got = jax.jit(autograph.convert(assign_subscript_at_set))(jnp.zeros(3))
    np.testing.assert_array_equal(got, [5.0, 0.0, 0.0])


class Box:
    pass


def assign_attribute_store(x):
    b = Box()
    if x > 0:
        v = x
    else:
        v = -x
    b.v = v
    b.w = x
    return b.v + b.w


def test_assign_attribute_store():
    _both(assign_attribute_store, (2.0,), (-2.0,))


def assign_attribute_in_traced_if(x):
    b = Box()
    b.v = 0.0
    if x > 0:
        b.v = x
    return b.v


def test_assign_attribute_in_traced_if():
    _py(assign_attribute_in_traced_if, 2.0)
    _raises(autograph.BranchError,
            lambda: jax.jit(autograph.convert(assign_attribute_in_traced_if))(2.0),
            assign_attribute_in_traced_if, "if x > 0:")


# ===========================================================================
# Statements: if, while, for, jumps


def if_elif_else(x):
    if x < 0:
        y = 0.0
    elif x < 1:
        y = x ** 2
    else:
        y = 2 * x - 1
    return y


def test_if_elif_else():
    _both(if_elif_else, (-1.0,), (0.5,), (3.0,))


def if_assigned_on_one_branch(x):
    if x > 0:
        y = x
    return y


def test_if_assigned_on_one_branch():
    _py(if_assigned_on_one_branch, 2.0)
    with pytest.raises(UnboundLocalError):
        if_assigned_on_one_branch(-2.0)
    _raises(autograph.UndefinedVariableError,
            lambda: autograph.convert(if_assigned_on_one_branch)(-2.0),
            if_assigned_on_one_branch, "if x > 0:")
    _raises(autograph.BranchError,
            lambda: jax.jit(autograph.convert(if_assigned_on_one_branch))(2.0),
            if_assigned_on_one_branch, "if x > 0:")


def while_loop(x):
    steps = 0
    while x > 1:
        x = x / 2
        steps += 1
    return x, steps


def test_while_loop():
    _both(while_loop, (10.0,), (0.5,))


def while_uninitialized(n):
    i = 0
    while i < n:
        last = i * 2
        i += 1
    return last


def test_while_uninitialized():
    # a traced trip count: carried with a "defined" flag, checked where it is read
    _py(while_uninitialized, 3)
    assert int(jax.jit(autograph.convert(while_uninitialized))(3)) == 4
    with pytest.raises(Exception, match="UndefinedVariableError"):
        jax.block_until_ready(jax.jit(autograph.convert(while_uninitialized))(0))
        jax.effects_barrier()


def while_else(x):
    i = 0
    while i < 3:
        if x > 100:
            break
        i += 1
        x = x * 2
    else:
        x = x - 1
    return x


def test_while_else():
    _both(while_else, (1.0,), (60.0,))


def for_range_and_array(xs):
    total = 0.0
    for i in range(3):
        total = total + i
    for x in xs:
        total = total * 0.5 + x
    for i, x in enumerate(reversed(xs)):
        total = total + i * x
    return total


def test_for_range_and_array():
    _both(for_range_and_array, (np.arange(4.0, dtype=np.float32),))


def for_else(xs):
    t = 0.0
    for v in xs:
        if v > 2:
            break
        t += v
    else:
        t = -t
    return t


def test_for_else():
    _both(for_else, (np.array([1.0, 2.0], np.float32),), (np.array([1.0, 3.0], np.float32),))


def for_python_iterables(x):
    d = {"a": 1.0, "b": 2.0}
    t = x
    for k in d:
        t = t * d[k]
    for k, v in d.items():
        t = t + v
    for y in [x, 2 * x]:
        t = t + y
    return t


def test_for_python_iterables():
    _both(for_python_iterables, (1.5,))


def for_traced_range(n, x):
    for i in range(n):
        x = x + i
    return x


def test_for_traced_range():
    _py(for_traced_range, 4, 1.0)
    _jit(for_traced_range, 4, 1.0)
    _jit(for_traced_range, 0, 1.0)


def for_target_unpacking(xs, ys):
    t = 0.0
    for i, (a, b) in enumerate(zip(xs, ys)):
        t = t + i * a * b
    for a, *rest in [(1.0, 2.0, 3.0), (2.0, 5.0, 3.0)]:
        t = t + a * len(rest)
    return t


def test_for_target_unpacking():
    xs = np.arange(3.0, dtype=np.float32)
    _both(for_target_unpacking, (xs, xs + 1))


def break_in_loops(xs, x):
    t = 0.0
    for v in xs:
        if v > 2:
            break
        t = t + v
    while True:
        x = x * 2
        if x > 10:
            break
    return t, x


def test_break():
    _both(break_in_loops, (np.arange(5.0, dtype=np.float32), 1.0))


def continue_in_loops(xs):
    t = 0.0
    for v in xs:
        if v < 0:
            continue
        t += v
    i = 0
    while i < 4:
        i += 1
        if i % 2 == 0:
            continue
        t = t * 2
    return t


def test_continue():
    _both(continue_in_loops, (np.array([1.0, -1.0, 2.0], np.float32),))


def return_early(x):
    if x > 0:
        return x * 2
    return -x


def return_in_loop(xs):
    for v in xs:
        if v > 1:
            return v
    return -1.0


def return_bare(x):
    if x > 0:
        return
    return


def test_return():
    _both(return_early, (2.0,), (-2.0,))
    _both(return_in_loop, (np.arange(3.0, dtype=np.float32),), (np.zeros(3, np.float32),))
    _both(return_bare, (2.0,), (-2.0,))


def return_on_some_paths(x):
    if x > 0:
        return x


def test_return_on_some_paths():
    _py(return_on_some_paths, 2.0)
    _py(return_on_some_paths, -2.0)
    _raises(autograph.BranchError,
            lambda: jax.jit(autograph.convert(return_on_some_paths))(2.0),
            return_on_some_paths, "if x > 0:")


# ===========================================================================
# Statements: assert, print, raise, pass, expression statements


def assert_with_message(x):
    assert x > 0, "x must be positive"
    return x


def assert_without_message(x):
    assert x > 0
    return x


def test_assert():
    _both(assert_with_message, (2.0,))
    with pytest.raises(AssertionError, match="x must be positive"):
        assert_with_message(-1.0)
    with pytest.raises(AssertionError, match="x must be positive"):
        autograph.convert(assert_with_message)(-1.0)
    # traced: a check made when the program runs
    with pytest.raises(jax.errors.JaxRuntimeError, match="x must be positive") as e:
        jax.jit(autograph.convert(assert_with_message))(-1.0).block_until_ready()
    assert "AssertionError" in str(e.value)
    with pytest.raises(jax.errors.JaxRuntimeError) as e:
        jax.jit(autograph.convert(assert_without_message))(-1.0).block_until_ready()
    _names_line(e.value, assert_without_message, "assert x > 0")


def print_values(x):
    print("x is", x, "twice", x * 2)
    return x


def print_sep_end(x):
    print("a", x, sep="-", end="!\n")
    return x


def print_to_stderr(x):
    print("v", x, file=sys.stderr)
    return x


def _printed(fn, x, capsys):
    fn(x)
    plain = capsys.readouterr()
    jax.jit(autograph.convert(fn))(x)
    jax.effects_barrier()
    traced = capsys.readouterr()
    return (plain.out, plain.err), (traced.out, traced.err)


@pytest.mark.parametrize("fn", [print_values, print_sep_end, print_to_stderr],
                         ids=["values", "sep_end", "file"])
def test_print(fn, capsys):
    _py(fn, 2.0)
    capsys.readouterr()
    plain, traced = _printed(fn, 2.0, capsys)
    assert traced == plain  # the same text, on the same stream


class Negative(Exception):
    pass


def raise_statement(x):
    if x < 0:
        raise Negative("negative input")
    return x


def test_raise():
    _py(raise_statement, 2.0)
    with pytest.raises(Negative, match="negative input"):
        autograph.convert(raise_statement)(-2.0)


def test_raise_in_traced_branch():
    # both branches are traced; the `raise` must still happen only when taken
    fn = raise_statement
    _fixed_or_rejected(fn, ("if x < 0:", "raise Negative"),
                       lambda: jax.jit(autograph.convert(fn))(2.0),
                       fn(2.0))


def pass_statement(x):
    if x > 0:
        pass
    else:
        x = -x
    for _ in range(2):
        pass
    return x


def test_pass():
    _both(pass_statement, (2.0,), (-2.0,))


def expression_statement(xs):
    ys = []
    for x in xs:
        ys.append(x * 2)
    ys.extend([1.0])
    len(ys)
    return ys


def test_expression_statement():
    _both(expression_statement, (np.arange(3.0, dtype=np.float32),))


# ===========================================================================
# Statements: import, class, def, lambda


def import_in_function(x):
    import math

    from numpy import float32 as f32
    if x > 0:
        y = math.sqrt(4.0) * x
    else:
        y = f32(1.0) * x
    return y


def test_import_in_function():
    _both(import_in_function, (2.0,), (-2.0,))


def class_in_function(x):
    class Scaled:
        def __init__(self, v):
            self.v = v

        def get(self):
            return self.v * 2

    return Scaled(x).get()


def test_class_in_function():
    _both(class_in_function, (2.0,))


def class_method_control_flow(x):
    class Abs:
        def of(self, v):
            if v > 0:
                return v
            return -v

    return Abs().of(x)


def test_class_method_control_flow():
    # the methods of a local class are converted with the enclosing function
    _py(class_method_control_flow, -2.0)
    _jit(class_method_control_flow, -2.0)


def nested_def(x):
    def absolute(v):
        if v > 0:
            return v
        return -v

    def make(k):
        def scale(v):
            return v * k if v > 0 else v
        return scale

    return absolute(x) + make(3.0)(x)


def def_in_traced_branch(x):
    if x > 0:
        def g(v):
            return v * 2
    else:
        def g(v):
            return v * 3
    return g(x)


def test_nested_def():
    _both(nested_def, (2.0,), (-2.0,))
    # functions are Python objects: a traced `if` cannot choose between two
    _py(def_in_traced_branch, 2.0)
    _raises(autograph.BranchError, lambda: jax.jit(autograph.convert(def_in_traced_branch))(2.0),
            def_in_traced_branch, "if x > 0:")


def closure_sees_later_assignment(x):
    k = 1.0

    def g(v):
        return v * k

    if x > 0:
        k = 2.0
    return g(x)


def closure_rebound_in_branch(x):
    k = 1.0

    def g(v):
        return v * k

    if x > 0:
        k = 2.0
        y = g(x)
    else:
        y = g(x)
    return y


def closure_rebound_in_loop(x):
    k = 0.0

    def g():
        return k

    t = x
    for i in range(3):
        k = k + 1.0
        t = t + g()
    return t


def lambda_rebound_in_loop(x):
    k = 0.0
    g = lambda: k  # noqa: E731
    t = x
    for i in range(3):
        k = k + 1.0
        t = t + g()
    return t


def test_nested_def_closure():
    _both(closure_sees_later_assignment, (2.0,), (-2.0,))


@pytest.mark.parametrize("fn", [closure_rebound_in_branch, closure_rebound_in_loop,
                                lambda_rebound_in_loop], ids=["if", "for", "lambda_for"])
def test_nested_def_closure_rebound_in_block(fn):
    # a closure called inside a converted block must see the value just assigned
    _py(fn, 1.0)
    _jit(fn, 1.0)


ABS = lambda x: x if x > 0 else -x  # noqa: E731


def lambdas(xs):
    sq = lambda v: v * v  # noqa: E731
    pick = lambda v: v if v > 0 else 0.0  # noqa: E731
    scaled = [lambda v, i=i: v * i for i in range(3)]
    return sq(xs[0]) + pick(xs[1]) + sum(f(xs[2]) for f in scaled)


def test_lambda():
    _both(ABS, (2.0,), (-2.0,))
    _both(lambdas, (np.array([2.0, -1.0, 3.0], np.float32),))


def star_args_callee(a, c, b=0.0):
    if a > 0:
        return a + b + c
    return a - b - c


def star_args(*args, scale=1.0, **kwargs):
    pair = (args[0], 2.0)
    extra = {"b": kwargs["b"]}
    return star_args_callee(*pair, **extra) * scale + len(args)


def test_star_args():
    for x in (2.0, -2.0):
        want = star_args(x, 5.0, scale=3.0, b=1.0)
        _identical(autograph.convert(star_args)(x, 5.0, scale=3.0, b=1.0), want)
        _close(jax.jit(autograph.convert(star_args))(x, 5.0, scale=3.0, b=1.0), want)


# ===========================================================================
# Statements: try, with


def try_except_else_finally(x):
    log = []
    try:
        y = x * 2
    except ZeroDivisionError:
        y = 0.0
    else:
        log.append("else")
    finally:
        log.append("finally")
    if y > 1:
        y = y - 1
    return y, len(log)


def try_raise_and_catch(x):
    try:
        raise KeyError("k")
    except KeyError:
        y = x
    return y


def try_in_loop_body(xs):
    t = 0.0
    for v in xs:
        try:
            t = t + v
        except ValueError:
            t = 0.0
    return t


def test_try_except_finally():
    _both(try_except_else_finally, (2.0,), (0.25,))
    _both(try_raise_and_catch, (2.0,))
    _both(try_in_loop_body, (np.arange(3.0, dtype=np.float32),))


def try_catches_trace_time_errors(x):
    try:
        y = int(x)
    except TypeError:
        y = -1
    return y


def test_try_catches_trace_time_errors():
    _py(try_catches_trace_time_errors, 2.0)
    # traced: `int(x)` fails while tracing (ConcretizationTypeError is a TypeError)
    assert int(jax.jit(autograph.convert(try_catches_trace_time_errors))(2.0)) == -1
    assert int(jax.jit(try_catches_trace_time_errors)(2.0)) == -1  # as without autograph


def try_around_if(x):
    try:
        if x > 0:
            x = -x
    except ValueError:
        pass
    return x


def try_around_for(x):
    try:
        pass
    finally:
        for i in range(3):
            x = x + i
    return x


def try_around_while(x):
    try:
        x = x + 1
    except ValueError:
        while x > 0:
            x = x - 1
    return x


def try_around_return(x):
    try:
        return int(x)
    except ValueError:
        return 0


def try_around_break(xs):
    for x in xs:
        try:
            break
        except ValueError:
            pass
    return xs


def try_around_continue(xs):
    for x in xs:
        try:
            continue
        finally:
            pass
    return xs


@pytest.mark.parametrize("fn,args", [
    (try_around_if, [(2.0,), (-2.0,)]),
    (try_around_for, [(2.0,)]),
    (try_around_while, [(2.5,), (-2.0,)]),
    (try_around_break, [(np.arange(3.0, dtype=np.float32),)]),
    (try_around_continue, [(np.arange(3.0, dtype=np.float32),)]),
], ids=["if", "for", "while", "break", "continue"])
def test_try_with_control_flow(fn, args):
    # `try`/`except`/`else`/`finally` around control flow: jumps lower to flags,
    # `finally` still runs, traced conditions stage as usual
    _both(fn, *args)


def test_try_with_return_catches_what_plain_jit_raises():
    _py(try_around_return, 2.5)
    # `int(x)` of a traced value raises while tracing; `except ValueError` does
    # not catch it, under plain `jax.jit` or converted
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(try_around_return)(2.5)
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(autograph.convert(try_around_return))(2.5)


def try_star_plain(x):
    try:
        y = x + 1
    except* ValueError:
        y = 0.0
    return y


def test_try_star():
    _both(try_star_plain, (2.0,))


def try_star_around_for(x):
    try:
        for i in range(3):
            x = x + i
    except* ValueError:
        pass
    return x


def try_star_around_if(x):
    try:
        y = x + 1
    except* ValueError:
        if x > 0:
            y = 0.0
    return y


@pytest.mark.parametrize("fn,snippet,construct", [
    (try_star_around_for, "for i in", "`for` inside `try`"),
    (try_star_around_if, "if x > 0:", "`if` inside `try`"),
], ids=["for", "if"])
def test_try_star_with_control_flow(fn, snippet, construct):
    # `except*` handlers run per exception group, which the analyses do not model
    _rejected(fn, snippet, construct)


class Recorder:
    def __init__(self):
        self.events = []

    def __enter__(self):
        self.events.append("enter")
        return self

    def __exit__(self, *exc):
        self.events.append("exit")
        return False


def with_statement(x):
    rec = Recorder()
    with rec as r, contextlib.nullcontext():
        if x > 0:
            y = x
        else:
            y = -x
    return y, len(r.events)


def with_return(x):
    with contextlib.nullcontext():
        if x > 0:
            return x
    return -x


def test_with():
    _both(with_statement, (2.0,), (-2.0,))
    _both(with_return, (2.0,), (-2.0,))


# ===========================================================================
# Statements: rejected at conversion time


async def async_def(x):
    return x


async def async_await(x):
    await async_def(x)
    return x


async def async_for(xs):
    async for v in xs:
        pass


async def async_with(cm):
    async with cm:
        pass


def nested_async_def(x):
    async def inner():
        await async_def(x)
    return x


@pytest.mark.parametrize("fn,snippet", [
    (async_def, "async def async_def"),
    (async_await, "async def async_await"),
    (async_for, "async def async_for"),
    (async_with, "async def async_with"),
    (nested_async_def, "async def inner"),
], ids=["async_def", "await", "async_for", "async_with", "nested_async_def"])
def test_async(fn, snippet):
    # `await`, `async for` and `async with` only occur in an `async def`,
    # which is rejected first, at its own line
    _rejected(fn, snippet, "`async def`")


def del_name(x):
    y = x
    del y
    return x


def del_then_read(x):
    y = x
    if x > 0:
        del y
        y = x * 2
    del x
    return y


def read_after_del(x):
    y = x
    del y
    return y


def test_del_name():
    # `del y` is an assignment of "unassigned": later reads raise as in Python
    _both(del_name, (2.0,))
    _both(del_then_read, (2.0,), (-3.0,))
    with pytest.raises(UnboundLocalError):
        read_after_del(2.0)
    e = _raises(autograph.UndefinedVariableError,
                lambda: jax.jit(autograph.convert(read_after_del))(2.0), read_after_del,
                "return y")
    assert "deleted" in str(e)


def del_item_and_attribute(x):
    d = {"a": 1.0, "b": x}
    del d["a"]
    b = Box()
    b.v = x
    del b.v
    ys = [x, x, x]
    del ys[1:]
    return d, hasattr(b, "v"), ys


def del_item_in_traced_if(x):
    d = {"a": 1.0, "b": x}
    if x > 0:
        del d["a"]
    return len(d)


def test_del_item_and_attribute():
    _both(del_item_and_attribute, (2.0,))
    _py(del_item_in_traced_if, 2.0)
    _raises(autograph.BranchError, lambda: jax.jit(autograph.convert(del_item_in_traced_if))(2.0),
            del_item_in_traced_if, "if x > 0:")


G = 1.0


def uses_global(x):
    global G
    G = x
    return x


def uses_nonlocal(x):
    y = 1

    def inner():
        nonlocal y
        y = 2
    inner()
    return y


def nested_global(x):
    def inner():
        global G
        G = x
    inner()
    return x


def counts_global(x):
    global G
    for _ in range(3):
        G = G + 1.0
    if x > 0:
        y = x * G
    else:
        y = -x
    return y


def assigns_traced_global(x):
    global G
    if x > 0:
        G = x
    return x


def counts_global_in_traced_branch(x):
    global G
    if x > 0:
        G = G + 1  # a Python value: Python adds 1 only when the branch runs
    return x


def counts_nonlocal_in_traced_loop(n):
    count = 0

    def body(n):
        nonlocal count
        i = 0
        while i < n:
            count += 1
            i += 1
        return i
    body(n)
    return count


def counts_global_in_long_static_loop(x):
    global G
    for _ in range(40):
        x = x * 0.5
        G = G + 1
    return x


def test_python_value_assigned_to_global_in_staged_block_is_refused():
    global G
    old = G
    try:
        G = 0
        _raises(autograph.BranchError, lambda: jax.jit(autograph.convert(
            counts_global_in_traced_branch))(-1.0), counts_global_in_traced_branch, "if x > 0:")
        with pytest.raises(autograph.LoopStateError, match="`count`"):
            jax.jit(autograph.convert(counts_nonlocal_in_traced_loop))(jnp.int32(3))
        assert autograph.convert(counts_nonlocal_in_traced_loop)(3) == 3  # Python values: fine
        # a static trip count: the loop runs unrolled, as plain `jax.jit` runs it
        G = 0
        with pytest.warns(UserWarning, match="runs unrolled"):
            got = jax.jit(autograph.convert(counts_global_in_long_static_loop))(1.0)
        assert G == 40 and float(got) == 0.5 ** 40
    finally:
        G = old


def test_global_nonlocal():
    # declared names are never branch or loop state; assignments reach them
    global G
    old = G
    try:
        G = 0.0
        assert autograph.convert(uses_global)(2.0) == 2.0 and G == 2.0
        G = 0.0
        assert autograph.convert(nested_global)(5.0) == 5.0 and G == 5.0
        _both(uses_nonlocal, (2.0,))
        G = 1.0
        want = counts_global(2.0)
        G = 1.0
        assert float(jax.jit(autograph.convert(counts_global))(2.0)) == want and G == 4.0
        # a traced value assigned to a global inside a staged branch: a clear error
        _raises(autograph.BranchError, lambda: jax.jit(autograph.convert(assigns_traced_global))(
            1.0), assigns_traced_global, "if x > 0:")
    finally:
        G = old


def reads_global(x):
    return x * G


def test_global_read():
    global G
    _both(reads_global, (2.0,))
    cf = autograph.convert(reads_global)
    old, G = G, 3.0
    try:
        assert cf(2.0) == 6.0  # module globals are read when the code runs
    finally:
        G = old


def generator(x):
    y = x + 1
    yield y


def generator_from(x):
    yield from range(x)


def nested_generator(x):
    def gen():
        yield x
    return list(gen())


@pytest.mark.parametrize("fn,snippet", [
    (generator, "yield y"), (generator_from, "yield from"), (nested_generator, "yield x"),
], ids=["yield", "yield_from", "yield_in_nested_def"])
def test_yield(fn, snippet):
    _rejected(fn, snippet, "`yield`")


def uses_match(x):
    match x:
        case 1:
            return 2
    return 3


def test_match():
    _rejected(uses_match, "match x", "`match`")


# ===========================================================================
# Mutation through methods


def update_in_traced_if(x):
    d = {"a": 0.0}
    if x > 0:
        d.update(a=x)
    return d["a"]


def update_in_staged_while(n):
    d = {"s": 0.0}
    i = 0
    while i < n:
        d.update(s=d["s"] + 1.0)
        i += 1
    return d["s"]


def append_in_traced_if(x):
    ys = [0.0]
    if x > 0:
        ys.append(x)
    else:
        ys.append(-x)
    return ys


def test_mutating_method_append():
    _both(append_in_traced_if, (2.0,), (-2.0,))


@pytest.mark.parametrize("fn,x", [(update_in_traced_if, -1.0), (update_in_staged_while, 3)],
                         ids=["update_if", "update_while"])
def test_mutating_method(fn, x):
    # `d.update(...)` (also pop, insert, remove, clear, add, discard, sort,
    # reverse) becomes `ag__.converted_call(d.update, ...)` before the analysis
    # looks for mutating methods, so `d` is not handed between branches or
    # iterations: staged, the mutation is applied unconditionally / once
    _py(fn, x)
    _jit(fn, x)


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
    # where the walrus would bind a lambda local: rejected at conversion time
    fn = chained_comparison_walrus
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


def in_traced(x):
    return x in [1.0, 2.0]


def test_in():
    _both(in_python_container, (1.0, {"a": 2.0}))
    _py(in_traced, 2.0)
    # traced element: Python's `in` calls bool() on a traced comparison
    _raises(jax.errors.TracerBoolConversionError,
            lambda: jax.jit(autograph.convert(in_traced))(2.0), in_traced, "return x in")


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
    while (y := x) > 0:
        x -= 1
    return x


def walrus_in_right_operand(x):
    return x > 0 and (y := x)


def walrus_in_conditional_branch(x):
    return (y := 1) if x > 0 else 0


@pytest.mark.parametrize("fn,snippet,construct", [
    (walrus_in_while_test, "while (y := x)", "`while` condition"),
    (walrus_in_right_operand, "(y := x)", "right operand of `and`/`or`"),
    (walrus_in_conditional_branch, "(y := 1)", "branch of a conditional expression"),
], ids=["while_test", "and_or_right", "ifexp_branch"])
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


def builtin_max_traced(x):
    return max(x, 0.0)


def test_call_builtin():
    _py(calls_builtins, -2.0, [1, 2, 3])
    _jit(calls_builtins, -2.0, [1, 2, 3])
    _py(builtin_max_traced, 2.0)
    _raises(jax.errors.TracerBoolConversionError,
            lambda: jax.jit(autograph.convert(builtin_max_traced))(2.0),
            builtin_max_traced, "return max(x, 0.0)")


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
    _py(generator_traced_any, np.arange(3.0))
    _raises(jax.errors.TracerBoolConversionError,
            lambda: jax.jit(autograph.convert(generator_traced_any))(jnp.ones(2)),
            generator_traced_any, "return any(v > 0 for v in xs)")


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
