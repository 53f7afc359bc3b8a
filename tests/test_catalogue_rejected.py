"""Catalogue rows (docs/catalogue.md) for async, del, global, nonlocal and yield."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

import autograph
from tests.helpers import (
    Box,
    _both,
    _py,
    _raises,
    _rejected,
    runs_as_python,
)

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
        with runs_as_python("global"):
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


@pytest.mark.parametrize("fn,snippet", [
    (generator, "yield y"), (generator_from, "yield from"),
], ids=["yield", "yield_from"])
def test_yield(fn, snippet):
    _rejected(fn, snippet, "`yield`")


def nested_generator(x):
    def steps(v):  # kept as written: a generator runs as its consumer asks
        for i in range(4):
            if i == 2:
                continue
            yield v * i

    def chained(v):
        yield from steps(v)
        yield -v

    total = 0.0
    for t in chained(x):
        total = total + t
    if x > 0:  # converted: a staged `if` on a traced `x`
        return total + sum(steps(x))
    return total - max(s for s in steps(-x))


def test_nested_generator_runs_as_written_in_a_converted_function():
    assert "yield (v * i)" in autograph.to_code(nested_generator)  # the user's body, kept
    f = jax.jit(autograph.convert(nested_generator))
    for x in (1.5, -2.0):  # both branches of the staged `if`
        assert float(f(jnp.float32(x))) == pytest.approx(nested_generator(x))
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(nested_generator)(1.5)  # what plain `jax.jit` does with the `if`


def _sum_over_range(x, n):
    s = 0.0
    for _ in range(n):
        s = s + x
    return s


def test_range_of_a_traced_float_is_refused_like_python():
    with pytest.raises(TypeError):  # Python: 'float' object cannot be interpreted as an integer
        _sum_over_range(1.0, 3.7)
    f = jax.jit(autograph.convert(_sum_over_range))
    with pytest.raises(autograph.ConditionError, match="bounds of a `range` must be integers"):
        f(jnp.float32(1.0), jnp.float32(3.7))
    assert float(f(jnp.float32(1.0), jnp.int32(3))) == 3.0
    assert float(f(jnp.float32(1.0), jnp.float32(3.0).astype(jnp.int32))) == 3.0
