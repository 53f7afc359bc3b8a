"""Attributes a staged loop's body assigns before it reads them.

``foo.b = 0`` before the loop and ``foo.b = jnp.zeros(3) + x`` in its body:
the body never sees the old value, so the loop carries ``foo.b`` with the type
the body gives it, as it carries a variable first assigned in the loop. Only a
run that assigns it in no iteration (zero trips, or a ``break`` before the
assignment) would hand back the old value, and that is an error when the
program runs, naming ``foo.b``.

Whether the body reads the attribute is proven by tracing it twice, with the
old value and with an input of the body's type, and asking for one program
that does not read that input. Each rule below comes with programs written to
fool it; they must stay refused.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph.runtime.core import jaxprs
from tests.helpers import _file_line


class Foo:
    pass


def _jit(f):
    return jax.jit(autograph.convert(f))


def _same(got, want):
    for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
        assert np.shape(a) == np.shape(b)


def _fails_when_run(call, fn, snippet, label, *words):
    """``call()`` traces, and fails when the program runs, naming ``label`` and the line."""
    with pytest.raises(Exception) as e:
        jax.block_until_ready(call())
        jax.effects_barrier()
    msg = str(e.value)
    assert "LoopStateError" in msg and f"`{label}`" in msg, msg
    assert re.search(re.escape(_file_line(fn, snippet)), msg), msg
    for w in words:
        assert w in msg, msg


# ----------------------------------------------------------------------------
# carried with the body's type


def other_type_before(x, n):
    foo = Foo()
    foo.b = 0
    i = 0
    while i < n:
        foo.b = jnp.zeros([3]) + x * i
        i += 1
    return foo.b


def absent_before(x, n):
    foo = Foo()
    i = 0
    while i < n:
        foo.b = jnp.stack([x, x * i])
        foo.c = foo.b * 2  # read after this iteration assigned it
        i += 1
    return foo.b, foo.c


def traced_range(x, n):
    foo = Foo()
    foo.b = None
    for i in range(n):
        foo.b = {"v": x * i, "w": jnp.ones(2) * i}
    return foo.b


def static_range(x):
    foo = Foo()
    foo.b = 0
    for i in range(40):
        foo.b = jnp.zeros([2]) + x * i
    return foo.b


def static_range_with_break(x):
    foo = Foo()
    foo.b = "unset"
    for i in range(40):
        foo.b = jnp.zeros([2]) + x * i
        if x * i > 5:
            break
    return foo.b


class Tracker:
    def __init__(self):
        self.count = 0

    def step(self, v):
        self.last = jnp.stack([v, -v])  # first set here
        self.count = self.count + 1


def method_on_self(x, n):
    t = Tracker()
    i = 0
    while i < n:
        t.step(x * i)
        i += 1
    return t.last, t.count


@pytest.mark.parametrize("n", [1, 2, 7])
def test_a_while_carries_the_type_its_body_gives(n):
    for f in (other_type_before, absent_before, method_on_self):
        _same(_jit(f)(jnp.float32(1.5), jnp.int32(n)), f(1.5, n))


def test_a_for_over_a_traced_range_carries_the_type_its_body_gives():
    for n in (1, 4):
        _same(_jit(traced_range)(jnp.float32(2.0), jnp.int32(n)), traced_range(2.0, n))


def test_static_loops_stage_with_the_body_type():
    for f in (static_range, static_range_with_break):
        for x in (0.1, 1.0):
            _same(_jit(f)(jnp.float32(x)), f(x))
    jaxpr = jax.make_jaxpr(autograph.convert(static_range))(1.0)
    assert "scan" in str(jaxpr)


def test_vmap_over_lanes_with_different_trip_counts():
    f = jax.vmap(autograph.convert(other_type_before))
    xs, ns = jnp.array([1.0, 2.0, 3.0]), jnp.array([1, 4, 2])
    want = np.stack([other_type_before(float(x), int(n)) for x, n in zip(xs, ns)])
    _same(jax.jit(f)(xs, ns), want)


def test_grad_through_an_attribute_first_assigned_in_the_loop():
    def loss(x, n):
        foo = Foo()
        foo.b = 0
        i = 0
        while i < n:
            foo.b = jnp.sin(x * jnp.arange(3.0)) + i
            i += 1
        return jnp.sum(foo.b ** 2)

    for n in (1, 3):
        got = jax.grad(autograph.convert(loss))(jnp.float32(0.7), jnp.int32(n))
        want = jax.grad(lambda x: loss(x, n))(0.7)
        np.testing.assert_allclose(got, want, rtol=1e-5)


# ----------------------------------------------------------------------------
# a run that assigns it in no iteration


def test_zero_trips_fail_when_the_program_runs():
    # Python keeps `0`; the staged loop cannot hand back an int beside float32[3]
    assert other_type_before(1.0, 0) == 0
    _fails_when_run(lambda: _jit(other_type_before)(jnp.float32(1.0), jnp.int32(0)),
                    other_type_before, "while i < n:", "foo.b", "the Python int 0",
                    "ran zero times")
    with pytest.raises(AttributeError):
        absent_before(1.0, 0)
    _fails_when_run(lambda: _jit(absent_before)(jnp.float32(1.0), jnp.int32(0)),
                    absent_before, "while i < n:", "foo.b", "did not exist before the loop")


def leaves_before_assigning(x, n):
    foo = Foo()
    foo.b = 0
    i = 0
    while i < n:
        if x * (i + 1) > 2:
            break
        foo.b = jnp.zeros([2]) + x * i
        i += 1
    return foo.b


def test_a_break_before_the_first_assignment_fails_when_the_program_runs():
    _same(_jit(leaves_before_assigning)(jnp.float32(1.0), jnp.int32(5)),
          leaves_before_assigning(1.0, 5))  # two iterations assign it, the third leaves
    assert leaves_before_assigning(3.0, 5) == 0  # the first iteration leaves
    for x, n in ((3.0, 5), (1.0, 0)):
        _fails_when_run(lambda: _jit(leaves_before_assigning)(jnp.float32(x), jnp.int32(n)),
                        leaves_before_assigning, "while i < n:", "foo.b")


# ----------------------------------------------------------------------------
# programs written to fool the proof: each reads the old value


def reads_it_first(x, n):
    foo = Foo()
    foo.b = 0
    i = 0
    while i < n:
        foo.b = foo.b * 0 + jnp.zeros([3]) + x
        i += 1
    return foo.b


def reads_through_an_alias(x, n):
    foo = Foo()
    foo.b = 0
    g = foo
    i = 0
    while i < n:
        foo.b = g.b + jnp.zeros([3]) + x
        i += 1
    return foo.b


def reads_with_a_default(x, n):
    foo = Foo()
    i = 0
    while i < n:
        foo.b = getattr(foo, "b", 10.0) + jnp.zeros([3]) + x
        i += 1
    return foo.b


def asks_whether_it_exists(x, n):
    foo = Foo()
    i = 0
    while i < n:
        if not hasattr(foo, "b"):
            foo.b = jnp.zeros([3]) + x
        else:
            foo.b = foo.b + x
        i += 1
    return foo.b


def reads_its_shape_into_a_constant(x, n):
    # both traces print alike; only the constant's value tells them apart
    foo = Foo()
    foo.b = jnp.zeros(2)
    i = 0
    while i < n:
        seen = getattr(foo, "b", jnp.zeros(2)).shape
        foo.b = jnp.asarray(np.full(3, 7.0 if seen == (3,) else 1.0, np.float32)) + x
        i += 1
    return foo.b


def picks_by_its_shape(x, n):
    foo = Foo()
    foo.b = jnp.zeros(2)
    i = 0
    while i < n:
        foo.b = (jnp.ones(3) if foo.b.shape[0] == 2 else jnp.zeros(3)) + x
        i += 1
    return foo.b


def assigns_on_one_branch(x, n):
    foo = Foo()
    foo.b = 0
    i = 0
    while i < n:
        if x > i:
            foo.b = jnp.zeros([3]) + x
        i += 1
    return foo.b


def reads_it_in_the_test(x, n):
    # the body never reads it, the test does: before the first iteration, the old value
    foo = Foo()
    foo.b = -100
    while x < 10.0 + jnp.sum(foo.b) * 0.1:
        foo.b = jnp.ones(2)
        x = x + 1.0
    return foo.b


FOOLING = [reads_it_in_the_test, reads_it_first, reads_through_an_alias, reads_with_a_default, asks_whether_it_exists,
           reads_its_shape_into_a_constant, picks_by_its_shape, assigns_on_one_branch]


@pytest.mark.parametrize("f", FOOLING, ids=lambda f: f.__name__)
def test_a_body_that_reads_the_old_value_is_refused(f):
    with pytest.raises((autograph.LoopStateError, autograph.BranchError)) as e:
        _jit(f)(jnp.float32(1.0), jnp.int32(2))
    assert "foo.b" in str(e.value)


def test_the_constants_of_the_two_traces_are_compared():
    # printed alike, the two traces differ only in a constant's value: compared by
    # print alone, the first iteration would compute 8 where Python computes 2
    saved = jaxprs.same_program
    try:
        jaxprs.same_program = lambda a, b: str(a.jaxpr) == str(b.jaxpr)
        wrong = _jit(reads_its_shape_into_a_constant)(jnp.float32(1.0), jnp.int32(1))
    finally:
        jaxprs.same_program = saved
    assert float(wrong[0]) == 8.0 and reads_its_shape_into_a_constant(1.0, 1)[0] == 2.0


def test_an_attribute_created_on_one_branch_of_an_if_is_still_refused():
    def f(x):
        foo = Foo()
        if x > 0:
            foo.b = x
        return x

    with pytest.raises(autograph.BranchError, match="foo.b"):
        _jit(f)(jnp.float32(1.0))


def prints_its_shape(x, n):
    # the print reads the old value's shape into text the printed jaxpr does not show
    foo = Foo()
    foo.b = jnp.zeros(3)
    i = 0
    while i < n:
        print("b has shape", foo.b.shape)
        foo.b = jnp.zeros([2]) + x * i
        i += 1
    return foo.b


def test_a_print_in_the_body_keeps_the_refusal():
    # each trace prints through a function of its own: the two traces cannot be told
    # to be one program, so the attribute keeps its refusal (no raw AttributeError)
    with pytest.raises(autograph.LoopStateError, match="foo.b"):
        _jit(prints_its_shape)(jnp.float32(1.0), jnp.int32(2))


def test_a_variable_first_assigned_prints_once_per_iteration(capsys):
    def f(x, n):
        i = 0
        while i < n:
            print("step")
            b = jnp.zeros([2]) + x * i
            i += 1
        return b

    jax.block_until_ready(_jit(f)(jnp.float32(1.0), jnp.int32(3)))
    jax.effects_barrier()
    assert capsys.readouterr().out.count("step") == 3
