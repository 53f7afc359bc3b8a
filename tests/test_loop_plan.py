"""The loop plan: how a loop runs, decided before tracing, and shared by the runtime and explain."""

import pytest

from autograph.runtime.loop_plan import (
    PYTHON_TRIPS,
    UNROLL_LIMIT,
    Form,
    Iterated,
    plan_for,
    plan_while,
)

STATIC = Iterated.STATIC
FORMATTED = "`i` is formatted into a string"  # what the converter says of `f"w{i}"`


@pytest.mark.parametrize("args, kwargs, form", [
    pytest.param((STATIC, PYTHON_TRIPS), {}, Form.UNROLLED, id="16 trips: unrolled"),
    pytest.param((STATIC, PYTHON_TRIPS + 1), {}, Form.SCAN, id="17 trips: scan"),
    pytest.param((STATIC, 0), {}, Form.UNROLLED, id="no trips"),
    pytest.param((STATIC, PYTHON_TRIPS), {"exits": True}, Form.UNROLLED,
                 id="break in 16 trips: unrolled"),
    pytest.param((STATIC, PYTHON_TRIPS + 1), {"exits": True}, Form.EXITING_SCAN,
                 id="break in a static range: stops at its exit, not Python"),
    pytest.param((STATIC, 10_000), {"python_index": FORMATTED}, Form.UNROLLED,
                 id="index used as a string: unrolled however long"),
    pytest.param((STATIC, 10_000), {"python_index": FORMATTED, "exits": True}, Form.UNROLLED,
                 id="index used as a string, with a break"),
    pytest.param((STATIC, None), {"python_index": FORMATTED}, Form.SCAN,
                 id="symbolic length: staged, the index cannot be unrolled"),
    pytest.param((STATIC, None), {"exits": True}, Form.EXITING_SCAN, id="symbolic length, break"),
    pytest.param((STATIC, PYTHON_TRIPS + 1), {"rewindable": False}, Form.UNROLLED,
                 id="an iterator it cannot rewind: unrolled"),
    pytest.param((STATIC, UNROLL_LIMIT + 1), {"rewindable": False}, Form.SCAN,
                 id="an iterator it cannot rewind, too long to unroll"),
    pytest.param((Iterated.TRACED_RANGE,), {}, Form.CHECKPOINTED, id="traced range"),
    pytest.param((Iterated.TRACED_RANGE,), {"exits": True, "python_index": FORMATTED},
                 Form.CHECKPOINTED, id="traced range: the index is traced anyway"),
    pytest.param((Iterated.OTHER,), {}, Form.PYTHON, id="a list"),
    pytest.param((Iterated.OTHER,), {"exits": True}, Form.PYTHON, id="a list, with a break"),
])
def test_plan_for(args, kwargs, form):
    plan = plan_for(*args, **kwargs)
    assert plan.form is form
    assert plan.reason
    if args[0] is STATIC:
        assert plan.trips == args[1]
    if "python_index" in kwargs and form is Form.UNROLLED:
        assert FORMATTED in plan.reason


@pytest.mark.parametrize("kwargs, form, maximum, test_bounds, checkpoints", [
    pytest.param({}, Form.CHECKPOINTED, None, False, None, id="no bound"),
    pytest.param({"maximum_iterations": 8}, Form.BOUNDED, 8, False, None,
                 id="maximum_iterations"),
    pytest.param({"counter_trips": 5}, Form.BOUNDED, 5, True, None, id="a counter bound"),
    pytest.param({"counter_trips": 0}, Form.BOUNDED, 0, True, None, id="a counter at its limit"),
    pytest.param({"maximum_iterations": 8, "counter_trips": 5}, Form.BOUNDED, 8, False, None,
                 id="maximum_iterations wins over a counter"),
    pytest.param({"checkpoints": 16}, Form.CHECKPOINTED, None, False, 16, id="checkpoints"),
    pytest.param({"maximum_iterations": 8, "checkpoints": 16}, Form.CHECKPOINTED, 8, False, 16,
                 id="checkpoints and maximum_iterations"),
    pytest.param({"counter_trips": 5, "checkpoints": 16}, Form.BOUNDED, 5, True, None,
                 id="a counter wins over checkpoints"),
])
def test_plan_while(kwargs, form, maximum, test_bounds, checkpoints):
    plan = plan_while(**kwargs)
    assert (plan.form, plan.maximum, plan.test_bounds, plan.checkpoints) == (
        form, maximum, test_bounds, checkpoints)
    assert plan.reason


def test_plans_are_values():
    assert plan_for(STATIC, 20) == plan_for(STATIC, 20)
    assert hash(plan_while(maximum_iterations=3)) == hash(plan_while(maximum_iterations=3))
