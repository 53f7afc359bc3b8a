"""The `finally_jumps` converter: golden output, and Python's meaning of a jump in `finally:`."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph.converters import finally_jumps
from tests.helpers import assert_golden, check_equivalent

F32 = np.float32


@pytest.mark.parametrize("src, expected", [
    pytest.param("""
        def f(x):
            try:
                if x > 0:
                    return x
                y = g(x)
            finally:
                if y > 5:
                    return y
    """, """
        def f(x):
            try_return = False
            try_value = ag__.UndefinedReturn()
            try_error = None
            try:
                if x > 0:
                    try_value = x
                    try_return = True
                else:
                    y = g(x)
            except BaseException as caught:
                try_error = ag__.in_flight(caught)
            if y > 5:
                return y
            if try_error is not None:
                raise try_error
            if try_return:
                return try_value
    """, id="docstring example"),
    pytest.param("""
        def f(x):
            try:
                y = g(x)
            finally:
                return x
    """, """
        def f(x):
            try:
                y = g(x)
            except BaseException as caught:
                ag__.in_flight(caught)
            return x
    """, id="finally always returns: what was leaving is dropped"),
    pytest.param("""
        def f(xs):
            for x in xs:
                try:
                    if x < 0:
                        break
                    g(x)
                finally:
                    if x > 5:
                        continue
                    h(x)
    """, """
        def f(xs):
            for x in xs:
                try_break = False
                try_error = None
                try:
                    if x < 0:
                        try_break = True
                    else:
                        g(x)
                except BaseException as caught:
                    try_error = ag__.in_flight(caught)
                if x > 5:
                    continue
                h(x)
                if try_error is not None:
                    raise try_error
                if try_break:
                    break
    """, id="continue in finally, break in the body"),
    # the `for` loop stops once `try_return` is set: a test it holds as an annotation
    pytest.param("""
        def f(xs):
            try:
                for x in xs:
                    if x > 0:
                        return x
                    if x < -9:
                        break
            finally:
                return None
    """, """
        def f(xs):
            try_return = False
            try:
                for x in xs:
                    if x > 0:
                        try_value = x
                        try_return = True
                    elif x < -9:
                        break
            except BaseException as caught:
                ag__.in_flight(caught)
            return None
    """, id="a return in a loop of the body; the loop's own break stays"),
])
def test_golden(src, expected):
    assert_golden(src, expected, passes=(finally_jumps,))


@pytest.mark.parametrize("src", [
    pytest.param("""
        def f(x):
            try:
                return g(x)
            finally:
                h(x)
    """, id="no jump in finally"),
    pytest.param("""
        def f(xs):
            try:
                y = 1
            finally:
                for x in xs:
                    if x:
                        break
            return y
    """, id="a break of a loop inside finally"),
    pytest.param("""
        def f(x):
            try:
                y = 1
            finally:
                def inner():
                    return 2
            return y
    """, id="a return of a function defined in finally"),
])
def test_golden_noop(src):
    assert_golden(src, src, passes=(finally_jumps,))


# ---------------------------------------------------------------------------
# Behaviour: as Python, and as plain `jax.jit` where it runs


def return_overrides_return(x):
    try:
        return x * 2.0
    finally:
        return x + 1.0


def return_drops_the_exception(x):
    try:
        raise ValueError("dropped")
    finally:
        return x + 1.0


def return_on_one_path(x, fail):
    try:
        if fail:
            raise ValueError("kept")
        y = x * 3.0
    finally:
        if not fail:
            return y
    return -1.0


def traced_return_in_finally(x):
    try:
        y = x * 2.0
    finally:
        if x > 0:
            return y
    return -y


def traced_return_in_body(x):
    try:
        if x > 0:
            return x * 2.0
        y = -x
    finally:
        if x < -5.0:
            return 0.0
    return y


def break_in_finally(xs):
    total = 0.0
    for x in xs:
        try:
            total = total + x
        finally:
            if x > 2.0:
                break
    return total


def continue_drops_the_return(xs):
    total = 0.0
    for x in xs:
        try:
            total = total + x
            if x > 1.0:
                return total
        finally:
            continue
    return -total


def break_drops_the_continue(xs):
    n = 0.0
    for x in xs:
        try:
            n = n + x
            continue
        finally:
            if n >= 3.0:
                break
    return n


def nested_finally(x):
    for i in range(3):
        try:
            try:
                x = x + 1.0
                if i == 1:
                    continue
            finally:
                if i == 2:
                    return x
            x = x * 2.0
        finally:
            x = x - 0.5
    return x


def while_finally(x, n):
    i = 0
    while i < n:
        try:
            x = x * 2.0
            i += 1
        finally:
            if x > 50.0:
                break
    return x


def test_plain_jit_programs_give_the_same_result():
    for fn, args in [(return_overrides_return, (F32(2.0),)),
                     (return_drops_the_exception, (F32(2.0),)),
                     (nested_finally, (F32(1.0),))]:
        want = float(jax.jit(fn)(*args))
        assert float(jax.jit(autograph.convert(fn))(*args)) == want == fn(*args)
    jf = jax.jit(autograph.convert(return_on_one_path), static_argnums=1)
    assert float(jf(F32(2.0), False)) == return_on_one_path(2.0, False) == 6.0
    with pytest.raises(ValueError, match="kept"):
        jf(F32(2.0), True)
    with pytest.raises(ValueError, match="kept"):
        autograph.convert(return_on_one_path)(2.0, True)


def test_traced_conditions_around_the_jumps():
    check_equivalent(traced_return_in_finally, (F32(2.0),), (F32(-2.0),))
    check_equivalent(traced_return_in_body, (F32(2.0),), (F32(-2.0),), (F32(-7.0),))
    xs = np.array([1.0, 0.5, 3.0, 4.0], F32)
    check_equivalent(break_in_finally, (xs,), (xs[:2],))
    check_equivalent(continue_drops_the_return, (xs,))
    check_equivalent(break_drops_the_continue, (xs,), (xs[:2],))
    check_equivalent(while_finally, (F32(1.0), 10), (F32(1.0), 3))
    f = jax.jit(autograph.convert(while_finally))
    assert float(f(jnp.float32(1.0), jnp.int32(10))) == while_finally(1.0, 10) == 64.0


def test_continue_in_finally_drops_the_exception():
    def skip_failures(xs):
        total = 0.0
        for x in xs:
            try:
                total = total + 1.0 / x
            finally:
                continue
        return total

    assert autograph.convert(skip_failures)([1.0, 0.0, 2.0]) == skip_failures([1.0, 0.0, 2.0])


def test_an_error_of_staging_is_not_dropped_by_the_jump():
    # Python would not raise it: the `if` could not be staged faithfully, so no
    # `return` in `finally:` may hide it
    def f(x):
        try:
            if x > 0:
                y = x
            z = y * 2.0
        finally:
            return 1.0

    assert autograph.convert(f)(2.0) == f(2.0) == 1.0
    with pytest.raises(autograph.BranchError, match="`y`"):
        jax.jit(autograph.convert(f))(2.0)
