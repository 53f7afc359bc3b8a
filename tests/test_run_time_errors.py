"""Errors raised as the compiled program runs reach the caller as the user's own.

Through `autograph.function` (and a converted function run outside `jax.jit`)
the caller catches the exception the Python program raises; under the user's
own `jax.jit` it is JAX's `JaxRuntimeError`, whose message carries the text.
Either way JAX's log of the callback's failure is not printed.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph


class NegativeInput(ValueError):
    pass


def checked_sqrt(x):
    if x < 0:
        raise NegativeInput(f"x must be >= 0, got {x}")
    return jnp.sqrt(x)


def checked_by_assert(x):
    assert x > 0, "x must be positive"
    return x * 2.0


def defined_in_loop(x):
    while x > 0:
        y = x + 2
        x -= 1
    return y


def test_raise_in_a_taken_branch_is_the_users_exception(capfd):
    f = autograph.function(checked_sqrt)
    assert float(f(jnp.float32(4.0))) == 2.0
    with pytest.raises(NegativeInput, match=r"x must be >= 0, got -1\.0"):
        f(jnp.float32(-1.0))
    assert "callback failed" not in capfd.readouterr().err
    assert float(f(jnp.float32(9.0))) == 3.0  # the function still works afterwards


def test_failed_assert_is_an_assertion_error(capfd):
    f = autograph.function(checked_by_assert)
    assert float(f(jnp.float32(1.0))) == 2.0
    with pytest.raises(AssertionError, match="x must be positive"):
        f(jnp.float32(-1.0))
    assert "callback failed" not in capfd.readouterr().err


def test_read_after_a_zero_trip_loop_is_unbound_local_error():
    f = autograph.function(defined_in_loop)
    assert int(f(jnp.int32(3))) == 3
    with pytest.raises(UnboundLocalError, match="`y` is used before it is assigned"):
        f(jnp.int32(0))
    with pytest.raises(autograph.UndefinedVariableError):
        f(jnp.int32(-2))


def test_under_vmap_without_jit():
    f = jax.vmap(autograph.convert(checked_sqrt))
    assert f(jnp.array([1.0, 4.0])).tolist() == [1.0, 2.0]


def test_under_the_users_jit_the_message_names_the_error(capfd):
    with pytest.raises(jax.errors.JaxRuntimeError, match="NegativeInput: x must be >= 0"):
        jax.jit(autograph.convert(checked_sqrt))(-1.0).block_until_ready()
    assert "callback failed" not in capfd.readouterr().err


def clipped_or_checked(x):
    if x > 10:
        assert x > 20, "between 10 and 20"
        x = x - 10
    return x


@pytest.mark.parametrize("jit", [False, True])
def test_checks_in_a_branch_fail_only_where_it_is_taken_under_vmap(jit):
    f = jax.vmap(autograph.convert(checked_sqrt))
    g = jax.vmap(autograph.convert(clipped_or_checked))
    if jit:
        f, g = jax.jit(f), jax.jit(g)
    assert f(jnp.array([1.0, 4.0])).tolist() == [1.0, 2.0]
    # `x > 20` is false for 5, whose branch is not taken: no failure
    assert g(jnp.array([5.0, 50.0])).tolist() == [5.0, 40.0]
    if not jit:  # through autograph's own entry: the user's exception
        with pytest.raises(NegativeInput):
            f(jnp.array([1.0, -4.0]))
        with pytest.raises(AssertionError, match="between 10 and 20"):
            g(jnp.array([5.0, 15.0]))
    else:
        with pytest.raises(jax.errors.JaxRuntimeError, match="NegativeInput"):
            f(jnp.array([1.0, -4.0])).block_until_ready()


def reshapes_on_one_branch(x):
    if x.sum() > 0:
        y = x.reshape(7)
    else:
        y = x
    return y


def _frames(exc):
    tb, files = exc.__traceback__, []
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    return files


@pytest.mark.parametrize("filtering", ["on", "off"])
def test_tracebacks_show_the_users_frames(monkeypatch, filtering):
    import os
    monkeypatch.setenv("AUTOGRAPH_TRACEBACK_FILTERING", filtering)
    with pytest.raises(TypeError, match="cannot reshape") as info:
        autograph.convert(reshapes_on_one_branch)(jnp.ones(3))
    files = _frames(info.value)
    root = os.path.dirname(os.path.dirname(os.path.abspath(autograph.runtime.__file__)))
    own = [f for f in files if any(f.startswith(os.path.join(root, d) + os.sep)
                                   for d in ("autograph", "runtime", "converters"))]
    assert any(f.startswith("<autograph reshapes_on_one_branch@") for f in files)
    assert any(f.endswith("test_run_time_errors.py") for f in files)
    assert (own == []) == (filtering == "on"), own
    assert "test_run_time_errors.py:" in "".join(getattr(info.value, "__notes__", []))


def _positive_sum_refused(x):
    if x.sum() > 0:
        raise ValueError("positive sum")
    return x


def _negative_sum_asserted(x):
    assert x.sum() < 0, "sum must be negative"
    return x


@pytest.mark.parametrize("fn, kind, line", [
    (_positive_sum_refused, ValueError, 'raise ValueError("positive sum")'),
    (_negative_sum_asserted, AssertionError, 'assert x.sum() < 0, "sum must be negative"'),
], ids=["raise", "assert"])
def test_a_staged_raise_names_the_users_line(fn, kind, line):
    where = f"test_run_time_errors.py:{_line_of(fn, line)}"
    with pytest.raises(jax.errors.JaxRuntimeError) as e:  # under the user's own jit
        jax.block_until_ready(jax.jit(autograph.convert(fn))(jnp.ones(3)))
    assert where in str(e.value) and kind.__name__ in str(e.value)
    with pytest.raises(kind) as caught:  # the user's own exception, its text as written
        autograph.function(fn)(jnp.ones(3))
    assert str(caught.value) in ("positive sum", "sum must be negative")
    assert any(where in note for note in caught.value.__notes__)
    assert np.array_equal(jax.jit(autograph.convert(fn))(-jnp.ones(3)), -jnp.ones(3))


def _line_of(fn, text):
    import inspect
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


def test_an_error_through_autograph_function_leaves_autograph_out_of_its_traceback():
    import traceback

    @autograph.function
    def checked(x):
        if x.sum() > 0:
            raise ValueError("positive")  # raised as the program runs
        return x

    @autograph.function
    def reshaped(x):
        return x.reshape(7)  # JAX's error while tracing

    checked(-jnp.ones(2))
    for f, error in ((checked, ValueError), (reshaped, TypeError)):
        with pytest.raises(error) as info:
            f(jnp.ones(2))
        files = [fr.filename for fr in traceback.extract_tb(info.value.__traceback__)]
        assert not any(os.sep + "autograph" + os.sep in p for p in files), files
        assert __file__ in files  # the user's frames stay
