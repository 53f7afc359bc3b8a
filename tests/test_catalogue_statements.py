"""Catalogue rows (docs/catalogue.md): assignment, control flow, assert, print, raise, mutation."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from tests.helpers import (
    Box,
    _both,
    _fixed_or_rejected,
    _jit,
    _names_line,
    _py,
    _raises,
)

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
    _both(assign_attribute_in_traced_if, (2.0,), (-2.0,))


def assign_attribute_in_staged_loop(x):
    b = Box()
    b.v, b.n = 0.0, 0
    while b.v < x:
        b.v = b.v + 1.5
        b.n += 1
    for i in range(20):
        b.v = b.v * 0.5 + i
    return b.v, b.n


def test_assign_attribute_in_staged_loop():
    _both(assign_attribute_in_staged_loop, (4.0,), (-1.0,))


def assign_attribute_created_in_traced_if(x):
    b = Box()
    if x > 0:
        b.v = x
    return x


def test_assign_attribute_created_in_traced_if():
    _py(assign_attribute_created_in_traced_if, 2.0)
    e = _raises(autograph.BranchError,
                lambda: jax.jit(autograph.convert(assign_attribute_created_in_traced_if))(2.0),
                assign_attribute_created_in_traced_if, "if x > 0:")
    assert "variable: b.v" in str(e)


def assign_attribute_first_in_staged_loop(x):
    b = Box()
    b.v = 0
    while x < 4.0:
        b.v = jnp.zeros(3) + x
        x = x + 1.5
    return b.v


def test_assign_attribute_first_in_staged_loop():
    _both(assign_attribute_first_in_staged_loop, (0.0,), (2.0,))
    assert assign_attribute_first_in_staged_loop(5.0) == 0  # zero trips: fails when run
    with pytest.raises(Exception, match="b.v"):
        jax.block_until_ready(jax.jit(autograph.convert(assign_attribute_first_in_staged_loop))(
            jnp.float32(5.0)))


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


def match_values(x, k):
    match k:
        case 0:
            y = x
        case 1 | 2:
            y = -x
        case n if n > 5:
            y = x * n
        case _:
            y = 0.0
    for i in range(3):
        match i:
            case 1:
                continue
            case 2:
                break
        y = y + 1.0
    match x:
        case 0.5:
            return y * 10.0
    return y


def test_match():
    _both(match_values, (2.0, 0), (2.0, 2), (0.5, 7), (2.0, 4))


class MatchPoint:
    __match_args__ = ("x", "y")

    def __init__(self, x, y):
        self.x, self.y = x, y


def match_structure(x, kind):
    message = [("scale", 2.0), {"shift": 1.0, "extra": 0}, MatchPoint(x, 0.0), [x, x, x], 7][kind]
    match message:
        case ("scale", s):
            return x * s
        case {"shift": d, **rest}:
            return x + d + len(rest)
        case MatchPoint(px, y=0.0):
            return px * 3.0
        case [first, *rest] if len(rest) > 1:
            return first + len(rest)
        case int(n):
            return x + n


def match_traced_capture(x):
    match [x, x + 1.0]:
        case [0.0, y] if y > 0:
            return y
    return x


def test_match_structure():
    _both(match_structure, *[(2.0, kind) for kind in range(5)], static_argnums=(1,))
    _py(match_traced_capture, 0.0)
    _py(match_traced_capture, 2.0)
    _raises(autograph.BranchError, lambda: jax.jit(autograph.convert(match_traced_capture))(0.0),
            match_traced_capture, "case [0.0, y]")


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


def return_in_loop_then_raise(xs, t):
    for v in xs:
        if v > t:
            return v
    raise ValueError("no item above t")


def return_in_while_then_raise(x, n):
    i = 0
    while i < n:
        x = x * 2.0
        if x > 100.0:
            return x
        i += 1
    raise ValueError("never above 100")


def test_return_in_loop_then_raise():
    xs = np.arange(4.0, dtype=np.float32)
    _both(return_in_loop_then_raise, (xs, 1.5))
    _both(return_in_while_then_raise, (1.0, 10))
    with pytest.raises(ValueError, match="no item above t"):
        autograph.convert(return_in_loop_then_raise)(xs, 5.0)
    # traced: the `raise` happens when the program runs, where the loop ended
    with pytest.raises(jax.errors.JaxRuntimeError, match="no item above t"):
        jax.jit(autograph.convert(return_in_loop_then_raise))(xs, 5.0).block_until_ready()
    with pytest.raises(jax.errors.JaxRuntimeError, match="never above 100"):
        jax.jit(autograph.convert(return_in_while_then_raise))(
            jnp.float32(1.0), jnp.int32(3)).block_until_ready()


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


def history_never_read(x):
    hist = []
    while x > 1.0:
        x = x / 2
        hist.append(x)
        if x > 3.0:
            hist.extend([x, x])
    return x


def test_mutating_method_dead_list():
    # 0, 2 and 7 halvings: staged, the loop does not carry `hist`
    _both(history_never_read, (0.5,), (4.0,), (100.0,))


@pytest.mark.parametrize("fn,x", [(update_in_traced_if, -1.0), (update_in_staged_while, 3)],
                         ids=["update_if", "update_while"])
def test_mutating_method(fn, x):
    # `d.update(...)` (also pop, insert, remove, clear, add, discard, sort,
    # reverse) becomes `ag__.converted_call(d.update, ...)` before the analysis
    # looks for mutating methods, so `d` is not handed between branches or
    # iterations: staged, the mutation is applied unconditionally / once
    _py(fn, x)
    _jit(fn, x)
