"""Unsupported syntax is rejected at conversion time with a ConversionError."""

import inspect

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


def uses_match(x):
    match x:
        case 1:
            return 2
    return 3


CASES = [
    (gen, "`yield`", "yield y"),
    (gen_from, "`yield`", "yield from"),
    (uses_match, "`match`", "match x"),
]


@pytest.mark.parametrize("fn,construct,snippet", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("api", [autograph.to_code, autograph.convert],
                         ids=["to_code", "convert"])
def test_rejected_at_conversion(fn, construct, snippet, api):
    where = rf"test_unsupported\.py:{_line(fn, snippet)}:"
    with pytest.raises(errors.ConversionError, match=where) as e:
        api(fn)
    msg = str(e.value)
    assert construct in msg and "not supported" in msg
    assert "fix:" in msg
    assert isinstance(e.value, ValueError)


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
