"""The `raise` converter: golden output, and which errors wait for run time."""

import jax
import pytest

import autograph
from autograph.converters import raise_statements
from tests.helpers import assert_golden


@pytest.mark.parametrize("src, expected", [
    pytest.param("""
        def f(x):
            if x < 0:
                raise ValueError("x must be positive")
            return x
    """, """
        def f(x):
            if x < 0:
                raise ag__.raised(ValueError('x must be positive'))
            return x
    """, id="docstring example"),
    pytest.param("""
        def f(x):
            try:
                y = 1 / x
            except ZeroDivisionError as e:
                raise
            raise KeyError from None
    """, """
        def f(x):
            try:
                y = 1 / x
            except ZeroDivisionError as e:
                raise
            raise ag__.raised(KeyError) from None
    """, id="bare raise stays; from keeps its cause"),
    pytest.param("""
        def f(x):
            if x < 0:
                raise ValueError("bad {:.2f}".format(x), "%d" % x, str(x), f"{x}")
            return x
    """, """
        def f(x):
            if x < 0:
                raise ag__.raised(ValueError(ag__.str_format('bad {:.2f}', x), ag__.percent_format('%d', x), ag__.str_(x), ag__.fstring(lambda v0: f'{v0}', x)))
            return x
    """, id="the formatting in its arguments waits for run time"),
    pytest.param("""
        def f(x):
            if x < 0:
                raise
            return x
    """, """
        def f(x):
            if x < 0:
                raise ag__.reraised()
            return x
    """, id="a bare raise outside a handler: what is handled, or RuntimeError"),
])
def test_golden(src, expected):
    assert_golden(src, expected, passes=(raise_statements,))


class Negative(Exception):
    pass


def _checked(x):
    if x < 0:
        raise Negative(f"negative input {x}")
    return x * 2.0


def test_user_raise_in_a_staged_branch_waits_for_the_branch():
    f = jax.jit(autograph.convert(_checked))
    assert float(f(2.0)) == 4.0  # traced both branches, raised nothing
    with pytest.raises(Exception, match="negative input"):
        jax.block_until_ready(f(-1.0))


def _bare_raise(x):
    if x > 5:
        raise
    return x * -1.5


def _reraises(x):
    raise


def _handles(x):
    try:
        return 1 / 0
    except ZeroDivisionError:
        _reraises(x)


def test_a_bare_raise_outside_a_handler_keeps_pythons_meaning():
    f = jax.jit(autograph.convert(_bare_raise))
    assert float(f(-1.5)) == _bare_raise(-1.5)  # the untaken branch raises nothing
    with pytest.raises(Exception, match="No active exception to reraise"):
        jax.block_until_ready(f(9.0))
    with pytest.raises(ZeroDivisionError):  # a helper re-raises its caller's exception
        autograph.convert(_handles)(1.0)


def test_raise_of_a_class_instantiates_it_as_python_does():
    def f(x):
        if x < 0:
            raise Negative
        return x

    with pytest.raises(Negative):
        autograph.convert(f)(-1.0)


def _int_valued(x):
    return 1


def test_other_errors_while_tracing_a_branch_surface_at_once():
    # plain Python raises this only when x > 0; staged, the branch cannot be
    # compiled at all, so the error comes at trace time, naming the branch
    def f(x):
        if x > 0:
            y = jax.grad(_int_valued)(x)
        else:
            y = x
        return y

    with pytest.raises(TypeError, match="real-valued outputs") as info:
        jax.jit(autograph.convert(f))(-1.0)
    note = "\n".join(getattr(info.value, "__notes__", []))
    assert "test_raise_statements.py" in note and "if x > 0:" in note


def _too_big(x):
    if x > 1.0:
        raise ValueError(f"x too big: {x:.2f} ({x * 2:.1f})")
    return x


def test_fstring_message_of_a_staged_raise_is_formatted_at_run_time():
    f = jax.jit(autograph.convert(_too_big))
    assert float(f(0.5)) == 0.5
    with pytest.raises(Exception, match=r"x too big: 3\.25 \(6\.5\)"):
        jax.block_until_ready(f(3.25))
        jax.effects_barrier()
    with pytest.raises(ValueError, match=r"x too big: 3\.25 \(6\.5\)"):
        autograph.convert(_too_big)(3.25)


def _negative_with_the_value(x):
    if x < 0:
        raise ValueError("x is negative:", x)
    return x


def _negative_from_a_cause(x):
    if x < 0:
        raise ValueError("negative") from KeyError("b")
    return x


def test_an_array_given_to_a_staged_raise_is_its_value_as_the_program_ran():
    f = autograph.function(_negative_with_the_value)
    assert float(f(jax.numpy.float32(2.0))) == 2.0
    with pytest.raises(ValueError) as e:
        f(jax.numpy.float32(-1.5))
    assert e.value.args[0] == "x is negative:" and float(e.value.args[1]) == -1.5


def test_the_cause_of_a_staged_raise_is_kept():
    with pytest.raises(ValueError) as e:
        autograph.function(_negative_from_a_cause)(jax.numpy.float32(-1.5))
    assert isinstance(e.value.__cause__, KeyError)
