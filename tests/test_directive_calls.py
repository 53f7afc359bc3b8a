"""Directives are found by what their names refer to, in every import spelling."""

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
import autograph as ag
from autograph import do_not_convert, errors, set_loop_options
from autograph import set_loop_options as slo
from autograph.directive_calls import Directive, Resolver, directive_of
from autograph.directives import set_loop_options as defined_loop_options
from tests.helpers import converted


def bare(x):
    while x < 100.0:
        set_loop_options(maximum_iterations=10)
        x = x * 1.5
    return x


def aliased_module(x):
    while x < 100.0:
        ag.set_loop_options(maximum_iterations=10)
        x = x * 1.5
    return x


def aliased_name(x):
    while x < 100.0:
        slo(maximum_iterations=10)
        x = x * 1.5
    return x


def defining_module(x):
    while x < 100.0:
        defined_loop_options(maximum_iterations=10)
        x = x * 1.5
    return x


def imported_inside(x):
    from autograph import set_loop_options as options
    while x < 100.0:
        options(maximum_iterations=10)
        x = x * 1.5
    return x


@pytest.mark.parametrize("fn", [bare, aliased_module, aliased_name, defining_module,
                                imported_inside])
def test_loop_options_in_every_spelling(fn):
    code = autograph.to_code(fn)
    assert "opts={'maximum_iterations': 10}" in code
    assert "converted_call" not in code


@pytest.mark.parametrize("fn", [bare, aliased_name])
def test_grad_of_jit_takes_the_bounded_form(fn):
    # without its bound, the loop would differentiate as the checkpointed form
    # (no `maximum_iterations`), a different program; with it the gradient is
    # that of the Python loop
    def python(x):
        while x < 100.0:
            x = x * 1.5
        return x

    got = jax.grad(jax.jit(autograph.convert(fn)))(jnp.float32(2.0))
    want = jax.grad(python)(2.0)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    jaxpr = str(jax.make_jaxpr(jax.grad(autograph.convert(fn)))(jnp.float32(2.0)))
    assert "length=10" in jaxpr  # the bounded form: a scan of at most 10 steps


def set_loop_options_of_mine(**kwargs):  # the user's own function of that name
    pass


def users_own(x):
    while x < 100.0:
        set_loop_options_of_mine(maximum_iterations=10)
        x = x * 1.5
    return x


def shadowed(x, set_loop_options):
    while x < 100.0:
        set_loop_options(maximum_iterations=10)
        x = x * 1.5
    return x


@pytest.mark.parametrize("fn", [users_own, shadowed])
def test_a_function_that_is_not_the_directive_is_called(fn):
    code = autograph.to_code(fn)
    assert "opts=" not in code
    assert "ag__.converted_call(set_loop_options" in code


def test_directive_of_is_identity():
    assert directive_of(autograph.set_loop_options) is Directive.LOOP_OPTIONS
    assert directive_of(autograph.do_not_convert) is Directive.DO_NOT_CONVERT
    assert directive_of(set_loop_options_of_mine) is None
    assert directive_of(None) is None


@pytest.mark.parametrize("imports, call", [
    ("from autograph import set_loop_options", "set_loop_options"),
    ("from autograph import set_loop_options as slo", "slo"),
    ("import autograph as ag", "ag.set_loop_options"),
    ("import autograph", "autograph.set_loop_options"),
    ("from autograph.directives import set_loop_options", "set_loop_options"),
    ("import autograph.directives", "autograph.directives.set_loop_options"),
])
def test_read_from_a_file_every_spelling(imports, call):
    # `autograph dump` and `explain` import nothing: the module's imports decide
    got = converted(f"""
        {imports}
        def f(x):
            while x < 10.0:
                {call}(maximum_iterations=5)
                x = x * 2.0
            return x
        """)
    assert "opts={'maximum_iterations': 5}" in got


def test_read_from_a_file_without_the_import():
    # a name the module never binds is not the directive
    got = converted("""
        def f(x):
            while x < 10.0:
                set_loop_options(maximum_iterations=5)
                x = x * 2.0
            return x
        """)
    assert "opts=" not in got


def test_misplaced_directive_does_nothing_and_warns_where_it_runs_in_every_spelling():
    # as the plain call does (under plain `jax.jit` too): adding the decorator
    # turns no working program into an error
    def late(x):
        while x < 100.0:
            x = x * 1.5
            slo(maximum_iterations=10)
        return x

    def in_a_for(x):
        for _ in range(3):
            ag.set_loop_options(maximum_iterations=2)
            x = x * 2.0
        return x

    assert "ag__.misplaced_loop_options(" in autograph.to_code(late)
    with pytest.warns(UserWarning, match="not the first statement") as info:
        got = jax.jit(autograph.convert(late))(1.0)
    assert float(got) == float(late(1.0))  # it limits nothing: the loop takes its 12 steps
    message = str(info[0].message)
    assert "test_directive_calls.py" in message and "configures no loop" in message
    with pytest.warns(UserWarning, match="a `for` loop"):
        assert float(jax.jit(autograph.convert(in_a_for))(1.0)) == float(
            jax.jit(in_a_for)(1.0)) == 8.0
    # its options are still checked, as the plain call checks them
    def misspelt(x):
        for _ in range(3):
            slo(max_iterations=2)
            x = x * 2.0
        return x

    with pytest.raises(errors.LoopOptionsError):
        jax.jit(misspelt)(1.0)
    with pytest.raises(errors.LoopOptionsError):
        jax.jit(autograph.convert(misspelt))(1.0)


def test_resolver_follows_modules_only():
    class Holder:
        set_loop_options = staticmethod(set_loop_options)

    import gast
    tree = gast.parse("h.set_loop_options()").body[0].value.func
    # an attribute of a user object is never looked up: its getattr could run code
    assert Resolver(namespace={"h": Holder()}).of(tree) is None
    assert Resolver(namespace={"h": ag}).of(tree) is Directive.LOOP_OPTIONS


def nested_do_not_convert(x):
    @do_not_convert
    def helper(v):
        if v > 0:
            return v
        return -v
    return helper(x)


def nested_do_not_convert_attribute(x):
    @ag.do_not_convert
    def helper(v):
        if v > 0:
            return v
        return -v
    return helper(x)


@pytest.mark.parametrize("fn", [nested_do_not_convert, nested_do_not_convert_attribute])
def test_nested_do_not_convert_runs_as_written(fn):
    code = autograph.to_code(fn)
    assert "if v > 0:" in textwrap.dedent(code)
    assert "if_stmt" not in code
    assert autograph.convert(fn)(2.0) == 2.0
    # as under plain `jax.jit`: a traced condition in Python's `if`
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(autograph.convert(fn))(jnp.float32(2.0))


def test_loop_options_are_checked_into_a_record():
    from autograph import directives
    options = directives.check_loop_options({"maximum_iterations": 3})
    assert options == directives.LoopOptions(maximum_iterations=3, checkpoints=None)
    assert directives.check_loop_options({"checkpoints": 8}).checkpoints == 8
    with pytest.raises(autograph.LoopOptionsError, match="did you mean `maximum_iterations=`"):
        directives.check_loop_options({"max_iterations": 3})
