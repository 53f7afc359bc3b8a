"""The loop plan: how a loop runs, decided before tracing, and shared by the runtime and explain."""

import inspect

import jax
import jax.extend.core as jax_core
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import errors, explain, parsing
from autograph.runtime.loop_forms.loop_plan import (
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


# ---------------------------------------------------------------------------
# explain says what the runtime does


def for_16(x):
    for i in range(16):
        x = x * 1.5
    return x


def for_17(x):
    for i in range(17):
        x = x * 1.5
    return x


def for_17_break(x):
    for i in range(17):
        if x > 100.0:
            break
        x = x * 1.5
    return x


def for_17_formatted(x):
    total = x
    for i in range(17):
        total = total + len(f"w{i}")
    return total


def for_traced_range(x, n):
    for i in range(n):
        x = x * 1.5
    return x


def for_list(x):
    for w in [1.0, 2.0, 3.0]:
        x = x * w
    return x


def while_unbounded(x):
    while x < 10.0:
        x = x * 2.0
    return x


def while_maximum(x):
    while x < 10.0:
        autograph.set_loop_options(maximum_iterations=8)
        x = x * 2.0
    return x


def while_counter(x):
    i = 0
    while x < 10.0 and i < 5:
        x = x * 2.0
        i += 1
    return x


def while_checkpoints(x):
    while x < 10.0:
        autograph.set_loop_options(checkpoints=16)
        x = x * 2.0
    return x


def _primitives(jaxpr, out=None) -> set[str]:
    out = set() if out is None else out
    for eqn in jaxpr.eqns:
        out.add(eqn.primitive.name)
        for param in eqn.params.values():
            for sub in param if isinstance(param, (list, tuple)) else (param,):
                if isinstance(sub, jax_core.ClosedJaxpr):
                    _primitives(sub.jaxpr, out)
                elif isinstance(sub, jax_core.Jaxpr):
                    _primitives(sub, out)
    return out


def _explained_plan(fn, when):
    """The plan explain gives the one loop of ``fn`` in the case ``when`` names (or
    its first), for a traced loop state."""
    parsed = parsing.parse_function(fn)
    source = "".join(inspect.findsource(fn)[0])
    exp = explain.explain_function(parsed.node, fn.__name__, parsed.filename, source)
    (block,) = [b for b in exp.blocks if b.kind in ("for", "while")]
    return next(plan for said, plan in block.plans if when in said)


@pytest.mark.parametrize("fn, args, when, form", [
    (for_16, (1.0,), "", Form.UNROLLED),
    (for_17, (1.0,), "", Form.SCAN),
    (for_17_break, (1.0,), "", Form.EXITING_SCAN),
    (for_17_formatted, (1.0,), "", Form.UNROLLED),
    (for_traced_range, (1.0, 3), "traced bound", Form.CHECKPOINTED),
    (for_list, (1.0,), "", Form.PYTHON),
    (while_unbounded, (1.0,), "", Form.CHECKPOINTED),
    (while_maximum, (1.0,), "", Form.BOUNDED),
    (while_counter, (1.0,), "Python int", Form.BOUNDED),
    (while_checkpoints, (1.0,), "", Form.CHECKPOINTED),
], ids=lambda v: getattr(v, "__name__", None))
def test_explain_states_the_form_the_runtime_runs(fn, args, when, form):
    assert _explained_plan(fn, when).form is form
    converted = autograph.convert(fn)
    ran = _primitives(jax.make_jaxpr(converted)(*args).jaxpr)
    grad = _primitives(jax.make_jaxpr(jax.grad(converted))(*args).jaxpr)
    if form in (Form.PYTHON, Form.UNROLLED):
        assert "scan" not in ran and "while" not in ran
    elif form is Form.SCAN:
        assert "scan" in ran and "while" not in ran
    else:  # a `lax.while_loop`, which reverse mode differentiates as the form says
        assert "while" in ran and "scan" not in ran
        assert ("checkpointed_while" in grad) == (form is Form.CHECKPOINTED)


# -- checkpoints from a memory budget ---------------------------------------------


def settle_in_budget(x, w, n):
    i = 0
    while i < n:
        autograph.set_loop_options(checkpoint_memory=64 * 1000)
        x = jnp.tanh(w * x) * 0.5 + 0.5 * x
        i = i + 1
    return jnp.sum(x * x)


def settle_python(x, w, n):
    for _ in range(n):
        x = jnp.tanh(w * x) * 0.5 + 0.5 * x
    return jnp.sum(x * x)


def test_checkpoint_memory_sets_how_many_states_are_kept():
    # a state of 4,000 + 12 bytes: 64,000 bytes hold 15 slots, one of them scratch
    x, w = jnp.linspace(-1.0, 1.0, 1000, dtype=jnp.float32), jnp.float32(0.9)
    grad = jax.jit(jax.grad(autograph.convert(settle_in_budget), argnums=(0, 1)))
    printed = str(jax.make_jaxpr(jax.grad(autograph.convert(settle_in_budget)))(
        x, w, jnp.int32(3)))
    assert "checkpoints=14" in printed
    for n in (0, 1, 6, 7, 8, 50):  # 14 copies: 7 serve the sweep
        got = grad(x, w, jnp.int32(n))
        want = jax.grad(settle_python, argnums=(0, 1))(x, w, n)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
    plan = _explained_plan(settle_in_budget, "")
    assert plan.form is Form.CHECKPOINTED and plan.checkpoint_memory == "64 * 1000"


def test_checkpoint_memory_is_checked():
    with pytest.raises(errors.LoopOptionsError, match="not both"):
        autograph.set_loop_options(checkpoints=8, checkpoint_memory=2**20)
    with pytest.raises(errors.LoopOptionsError, match="checkpoint_memory"):
        autograph.set_loop_options(checkpoint_memory=0)
    autograph.set_loop_options(checkpoint_memory=2**20)  # fine
