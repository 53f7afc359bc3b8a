"""Catalogue rows (docs/catalogue.md) for import, class, def, lambda, try and with statements."""

from __future__ import annotations

import contextlib

import jax
import numpy as np
import pytest

import autograph
from tests.helpers import (
    _both,
    _close,
    _identical,
    _jit,
    _py,
    _raises,
    _rejected,
)

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


def test_try_with_return_gives_pythons_int_where_no_handler_catches_jits_error():
    _py(try_around_return, 2.5)
    # `int(x)` of a traced value raises while tracing under plain `jax.jit`, which
    # `except ValueError` does not catch; converted, it is Python's `int`, as eagerly
    with pytest.raises(jax.errors.ConcretizationTypeError):
        jax.jit(try_around_return)(2.5)
    assert int(jax.jit(autograph.convert(try_around_return))(2.5)) == try_around_return(2.5)


def finally_returns(x):
    try:
        y = 1.0 / x
    finally:
        if x >= 0:
            return x * 2.0
    return y


def finally_continues(xs):
    total = 0.0
    for x in xs:
        try:
            if x < 0:
                break
            total = total + x
        finally:
            if x > 2.0:
                continue
    return total


def test_try_finally_jumps():
    # a jump in `finally:` replaces what was leaving: a return, a break, an exception
    _both(finally_returns, (2.0,), (-2.0,))
    _py(finally_returns, 0.0)  # the `ZeroDivisionError` is dropped by the `return`
    xs = np.array([1.0, 3.0, -1.0, 2.0], np.float32)
    _both(finally_continues, (xs,), (xs[:2],))


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
