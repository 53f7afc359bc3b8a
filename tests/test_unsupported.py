"""Unsupported syntax: the function runs unconverted, with one warning naming the
construct and its line; ``strict=True`` (or ``AUTOGRAPH_STRICT=1``) and ``to_code``
raise the ConversionError instead."""

import contextlib
import functools
import inspect
import warnings

import jax
import jax.numpy as jnp
import pytest

import autograph
from autograph import errors


def _line(fn, snippet):
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if snippet in text:
            return start + i
    raise AssertionError(snippet)


def gen(x):
    y = x + 1
    yield y


def gen_from(x):
    yield from range(x)


def walrus_in_while_test(x):
    while (y := x) > 0:
        x -= 1
    else:
        x += 0.5
    return x


def named_like_the_runtime(ag__):
    if ag__ > 0:
        return ag__
    return -ag__


def reads_its_locals(x):
    if x > 0:
        y = x
    else:
        y = -x
    return locals()["y"]


def evaluates_a_string(x):
    return eval("x + 1")


CASES = [
    (named_like_the_runtime, "`ag__`", "def named_like_the_runtime"),
    (reads_its_locals, "`locals()`", 'return locals()["y"]'),
    (evaluates_a_string, "`eval()`", 'return eval("x + 1")'),
    (gen, "`yield`", "yield y"),
    (gen_from, "`yield`", "yield from"),
    (walrus_in_while_test, "`:=` in the condition of a `while` loop with an `else:`",
     "while (y"),
]


@pytest.mark.parametrize("fn,construct,snippet", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("api", [autograph.to_code,
                                 functools.partial(autograph.convert, strict=True),
                                 functools.partial(autograph.function, strict=True)],
                         ids=["to_code", "convert_strict", "function_strict"])
def test_rejected_at_conversion(fn, construct, snippet, api):
    where = rf"test_unsupported\.py:{_line(fn, snippet)}:"
    with pytest.raises(errors.ConversionError, match=where) as e:
        api(fn)
    msg = str(e.value)
    assert construct in msg and "not supported" in msg
    assert "fix:" in msg
    assert isinstance(e.value, ValueError)


@pytest.mark.parametrize("fn,construct,snippet", CASES, ids=[c[0].__name__ for c in CASES])
def test_runs_unconverted_with_one_warning(fn, construct, snippet):
    where = f"test_unsupported.py:{_line(fn, snippet)}"
    with pytest.warns(UserWarning) as record:
        assert autograph.convert(fn) is fn
    (message,) = [str(w.message) for w in record]
    assert f"`{fn.__name__}` runs unconverted" in message
    assert construct in message and where in message and "strict=True" in message


def test_strict_from_the_environment(monkeypatch):
    monkeypatch.setenv("AUTOGRAPH_STRICT", "1")
    with pytest.raises(errors.ConversionError, match="`yield`"):
        autograph.convert(gen)
    with pytest.warns(UserWarning, match="runs unconverted"):
        assert autograph.convert(gen, strict=False) is gen  # the argument decides
    monkeypatch.setenv("AUTOGRAPH_STRICT", "0")
    with pytest.warns(UserWarning, match="runs unconverted"):
        autograph.convert(gen)


def doubles_per_halving(x):
    n = 16
    while (n := n // 2) > 1:
        x = x * 2.0
    else:
        x = x + 0.0
    return x


def test_a_plain_jit_program_gives_its_result_unconverted():
    # as under plain `jax.jit`, which runs the function as it is
    with pytest.warns(UserWarning, match="`:=` in the condition of a `while` loop"):
        f = jax.jit(autograph.convert(doubles_per_halving))
    assert float(f(1.0)) == float(jax.jit(doubles_per_halving)(1.0)) == 8.0
    with pytest.warns(UserWarning, match="`:=` in the condition of a `while` loop"):
        g = autograph.function(doubles_per_halving)
    assert float(g(jnp.float32(2.0))) == 16.0


def test_a_callee_runs_unconverted_with_one_warning_for_all_its_calls():
    def helper(x):  # a fresh code object: nothing refused it yet
        n = 4
        while (n := n - 1) > 0:
            x = x * 2.0
        else:
            x = x + 0.0
        return x

    def caller(x):
        return helper(x) + helper(x + 1.0)

    where = f"test_unsupported.py:{_line(helper, 'while (n')}"
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        f = autograph.convert(caller)
        assert [f(v) for v in (1.0, 2.0, 3.0)] == [caller(v) for v in (1.0, 2.0, 3.0)]
        assert float(jax.jit(f)(1.0)) == 24.0
    messages = [str(w.message) for w in record]
    assert len(messages) == 1, messages
    assert "<locals>.helper` runs unconverted" in messages[0] and where in messages[0]
    # a strict caller makes the same refusal its error
    with pytest.raises(errors.ConversionError, match=where):
        autograph.convert(caller, strict=True)(1.0)
    with pytest.raises(errors.ConversionError, match=where):
        autograph.function(caller, strict=True)(jnp.float32(1.0))


def test_a_callee_refused_in_a_strict_caller_only_warns_elsewhere():
    def helper(ag__):
        return [ag__]

    def caller(x):
        return helper(x)

    with pytest.raises(errors.ConversionError, match="`ag__`"):
        autograph.convert(caller, strict=True)(1.0)
    with pytest.warns(UserWarning, match="`ag__`"):
        assert autograph.convert(caller)(1.0) == [1.0]


def test_a_generator_converted_code_calls_runs_as_written_without_a_warning():
    # as under plain `jax.jit`: a context manager made by `contextlib`, a helper that
    # yields; strict, it is still refused
    @contextlib.contextmanager
    def tagged(log):
        log.append("enter")
        yield
        log.append("exit")

    def items(x):
        yield x
        yield x * 2

    def caller(x):
        log = []
        with tagged(log):
            total = sum(items(x))
        if total > 3:  # converted
            total = total - 3
        return total, len(log)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x in (2.0, 0.5):
            total, n = jax.jit(autograph.convert(caller))(x)
            assert float(total) == caller(x)[0] and int(n) == 2
    with pytest.raises(errors.ConversionError, match="`yield`"):
        autograph.convert(caller, strict=True)(1.0)


def one_branch_only(x):
    if x > 0:
        y = x
    return y


def calls_one_branch_only(x):
    return one_branch_only(x) * 2.0


def test_errors_of_the_program_itself_are_not_swallowed():
    # a rule broken while the converted function runs is the program's error,
    # not a refusal to convert: it is raised, never answered by running unconverted
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(errors.BranchError, match="test_unsupported.py"):
            jax.jit(autograph.convert(one_branch_only))(1.0)
        with pytest.raises(errors.BranchError, match="test_unsupported.py"):
            jax.jit(autograph.convert(calls_one_branch_only))(1.0)


# Neighbours of the rejected constructs that are fine


def try_without_control_flow(x):
    try:
        y = x + 1
    except TypeError:
        y = 0
    if y > 0:
        y = y * 2
    return y


def deletes_item(x):
    d = {"a": 1, "b": x}
    del d["a"]
    return d


def nested_def_with_if_in_try(x):
    try:
        def helper(v):
            if v > 0:
                return v
            return -v
    except ValueError:
        pass
    return helper(x)


@pytest.mark.parametrize("fn,args", [
    (try_without_control_flow, (3,)), (try_without_control_flow, ("s",)),
    (deletes_item, (2,)), (nested_def_with_if_in_try, (-2,)),
])
def test_accepted_neighbours(fn, args):
    autograph.to_code(fn)
    assert autograph.convert(fn)(*args) == fn(*args)


def test_a_function_reading_its_own_variables_runs_as_jax_jit_runs_it():
    # `locals()` of converted code would see the generated functions' variables
    seen = []

    def counts(x):
        a = 1
        for i in range(3):
            a += i
        seen.append(sorted(locals()))
        return x * eval("a * 2")

    with pytest.warns(UserWarning, match="`locals\\(\\)`"):
        got = jax.jit(autograph.convert(counts))(1.0)
    want = jax.jit(counts)(1.0)
    # (one trace: the function runs as written, and `jax.jit` keeps its trace)
    assert seen == [["a", "i", "seen", "x"]] and float(got) == float(want) == 8.0

    def given_its_variables(x):
        return eval("x + 1", {"x": x}), vars(jnp)["sin"](x)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(jax.jit(autograph.convert(given_its_variables))(1.0)[0]) == 2.0
