"""Attributes as state: `self.steps += 1`, `acc.total += x` in staged branches and loops.

An attribute a staged `if` or loop body assigns on an object the block reaches
(a local, an argument, `self`, `a.b`) is carried like a variable and set on
the object after the block: each program gives the plain-Python result, and
the plain-`jax.jit` one, under `jax.jit(autograph.convert(f))`, with the
object's attributes as Python leaves them; what cannot be carried is an error
naming `obj.attr` and the user's line.
"""

from __future__ import annotations

import dataclasses
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from tests.helpers import _file_line, check_equivalent, primitives


class Acc:
    def __init__(self, total=0.0):
        self.total = total
        self.steps = 0

    def bump(self, v):
        self.total = self.total + v
        self.steps += 1

    def run_to(self, x):
        while self.total < x:
            self.total += 1.5
            self.steps += 1
        return self.steps


class Box:
    pass


class Slotted:
    __slots__ = ("n", "total")

    def __init__(self):
        self.n = 0
        self.total = 0.0


@dataclasses.dataclass
class Record:
    total: float = 0.0
    steps: int = 0


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Params:
    w: jax.Array


def _jit(fn):
    return jax.jit(autograph.convert(fn))


# -- traced `if` --------------------------------------------------------------


def if_on_local(x):
    a = Acc()
    if x > 0:
        a.total = a.total + x
        a.steps += 1
    else:
        a.total = a.total - 2 * x
    return a.total, a.steps


def _if_on_argument(a, x):
    if x > 0:
        a.bump(x)
    elif x < -1:
        a.total = a.total * 3.0


def if_on_argument(x):
    a = Acc(1.0)
    _if_on_argument(a, x)
    return a.total, a.steps


def if_on_slots_and_dataclass(x):
    s, r = Slotted(), Record()
    if x > 0:
        s.total = x
        s.n += 1
    else:
        r.total = -x
        r.steps = 7
    return s.total, s.n, r.total, r.steps


def if_sets_attribute_on_both_branches(x):
    b = Box()
    if x > 0:
        b.v = x
    else:
        b.v = -x
    return b.v


@pytest.mark.parametrize("fn", [if_on_local, if_on_argument, if_on_slots_and_dataclass,
                                if_sets_attribute_on_both_branches])
def test_traced_if(fn):
    check_equivalent(fn, (2.0,), (-0.5,), (-3.0,))


def test_traced_if_under_vmap():
    xs = np.array([2.0, -0.5, -3.0], np.float32)
    got = jax.vmap(autograph.convert(if_on_local))(xs)
    want = [if_on_local(float(x)) for x in xs]
    np.testing.assert_allclose(got[0], [w[0] for w in want])
    np.testing.assert_array_equal(got[1], [w[1] for w in want])
    got = jax.vmap(autograph.convert(if_on_argument))(xs)
    np.testing.assert_allclose(got[0], [if_on_argument(float(x))[0] for x in xs])


def test_branch_not_taken_leaves_the_object_as_it_was():
    # both branches are traced; only the taken one's values reach the object
    def f(x):
        a = Acc(1.0)
        if x > 0:
            a.total = x
            a.steps = 5
        elif x > -1:
            a.total = x * 2
        return a.total, a.steps

    check_equivalent(f, (-2.0,), (-0.5,), (3.0,))


def test_refused_block_leaves_the_object_as_it_was():
    t = Celsius()
    t.other = 1.0

    def f(x):
        if x > 0:
            t.other = x
            t.c = x
        return x

    with pytest.raises(autograph.BranchError):
        _jit(f)(2.0)
    assert t.c == 0.0 and t.other == 1.0


def test_registered_dataclass_updated_in_a_branch_stays_the_callers_object():
    def bump(p, x):
        q = p
        if x > 0:
            p.w = p.w + x
        return q.w, p is q

    def run(x):
        p = Params(jnp.float32(1.0))
        w, same = bump(p, x)
        return w, p.w, same

    for x in (2.0, -2.0):
        got = _jit(run)(x)
        want = run(x)
        np.testing.assert_allclose(got[:2], want[:2])
        assert bool(got[2]) and want[2]


# -- staged loops --------------------------------------------------------------


def while_in_method(x):
    a = Acc()
    steps = a.run_to(x)
    return a.total, a.steps, steps


def while_calls_method(x):
    a = Acc()
    while a.total < x:
        a.bump(1.5)
    return a.total, a.steps


def while_through_alias_and_nesting(x):
    o = Box()
    o.inner = Box()
    o.inner.count = 0
    o.n = 0.0
    o2 = o
    while o.n < x:
        o2.n += 1.0
        o2.inner.count += 1
    return o.n, o.inner.count


@pytest.mark.parametrize("fn", [while_in_method, while_calls_method,
                                while_through_alias_and_nesting])
def test_traced_while(fn):
    # 0, 1 and 4 trips
    check_equivalent(fn, (-1.0,), (1.0,), (5.0,))
    jaxpr = jax.make_jaxpr(autograph.convert(fn))(1.0)
    assert "while" in primitives(jaxpr)


def static_for(x):
    a = Acc()
    s = Slotted()
    for i in range(20):
        a.total = a.total * 0.5 + x * i
        a.steps += 1
        s.total = s.total + a.total
    return a.total, a.steps, s.total


def static_for_on_self(x):
    r = Record()

    def step(v):
        r.total = r.total + v
        r.steps += 2

    for i in range(30):
        step(x + i)
    return r.total, r.steps


def static_for_keeps_registered_dataclass(x):
    p = Params(jnp.float32(0.0))
    q = p
    for i in range(20):
        p.w = p.w + x
    return q.w, p is q


@pytest.mark.parametrize("fn", [static_for, static_for_on_self,
                                static_for_keeps_registered_dataclass])
def test_static_for_is_one_scan(fn):
    check_equivalent(fn, (1.5,), (-2.0,))
    assert "scan" in primitives(jax.make_jaxpr(autograph.convert(fn))(1.0))


def test_counter_attribute_of_a_scan_stays_a_python_int():
    def f(x):
        a = Acc()
        for i in range(20):
            a.bump(x)
        return jnp.zeros(a.steps) + a.total

    assert _jit(f)(1.0).shape == (20,)


def for_with_traced_break(x):
    a = Acc()
    for i in range(20):
        if a.total > x:
            break
        a.bump(i)
    return a.total, a.steps


def test_for_with_traced_break():
    # leaves at once, in the middle, never
    check_equivalent(for_with_traced_break, (-1.0,), (10.0,), (1000.0,))


def test_method_updating_self_in_a_traced_while_called_from_converted_code():
    def f(x):
        a = Acc()
        a.run_to(x)
        a.run_to(x + 3.0)
        return a.total, a.steps

    check_equivalent(f, (1.0,), (4.0,))


class Namer:
    def __init__(self):
        self.n = 0

    def names(self, x):
        for i in range(20):
            self.n += 1
            x = x + len(f"w{self.n}")
        return x

    def names_while(self, x):
        while x < 100.0:
            self.n += 1
            x = x + len(f"w{self.n}")
        return x


def test_attribute_used_as_a_python_value_keeps_its_meaning():
    # staged, `self.n` would be a traced array and format as the tracer's text
    def f(x):
        c = Namer()
        return c.names(x), c.n

    check_equivalent(f, (1.0,))
    assert "scan" not in primitives(jax.make_jaxpr(autograph.convert(f))(1.0))

    def g(x):
        return Namer().names_while(x)

    _refused(autograph.LoopStateError, lambda: _jit(g)(1.0), Namer.names_while,
             "while x < 100.0:", "self.n")


# -- refused, naming `obj.attr` and the line --------------------------------------


def _refused(cls, call, fn, snippet, variable):
    with pytest.raises(cls) as e:
        call()
    assert _file_line(fn, snippet) in str(e.value), str(e.value)
    assert f"variable: {variable}" in str(e.value), str(e.value)
    return e.value


def test_attribute_set_on_one_branch_only_is_refused():
    def f(x):
        b = Box()
        if x > 0:
            b.v = x
        return x

    _refused(autograph.BranchError, lambda: _jit(f)(1.0), f, "if x > 0:", "b.v")


def test_attribute_first_assigned_in_a_staged_loop_is_carried():
    # assigned before it is read, `b.last` is carried with the body's type (see
    # tests/test_attributes_first_assigned.py); one that the body reads first is refused
    def f(x):
        b = Box()
        b.n = 0.0
        while b.n < x:
            b.n += 1.0
            b.last = b.n
        return b.n, b.last

    def reads_first(x):
        b = Box()
        b.n = 0.0
        while b.n < x:
            b.n += 1.0
            b.last = getattr(b, "last", 0.0) + b.n
        return b.n

    assert tuple(map(float, _jit(f)(3.0))) == f(3.0) == (3.0, 3.0)
    e = _refused(autograph.LoopStateError, lambda: _jit(reads_first)(3.0), reads_first,
                 "while b.n < x:", "b.last")
    assert "before the loop" in str(e)


def test_attribute_first_assigned_by_an_iteration_run_as_python_is_carried():
    # a static loop runs as Python until an iteration assigns a traced value; the
    # rest, staged, finds the attribute set
    def f(x):
        b = Box()
        for i in range(40):
            if i > 4:
                b.last = x * i
        return b.last

    check_equivalent(f, (2.0,))
    assert "scan" in primitives(jax.make_jaxpr(autograph.convert(f))(1.0))


def test_shape_and_dtype_changes_name_the_attribute():
    def grows(x):
        a = Acc(jnp.zeros(2))
        while x > 0:
            a.total = jnp.zeros(3) + a.total.sum()  # read: carried with its type
            x = x - 1
        return x

    def two_shapes(x):
        a = Acc()
        if x > 0:
            a.total = jnp.zeros(2)
        else:
            a.total = jnp.zeros(3)
        return x

    e = _refused(autograph.LoopStateError, lambda: _jit(grows)(2.0), grows, "while x > 0:",
                 "a.total")
    assert "shape (2,) before the loop" in str(e)
    _refused(autograph.BranchError, lambda: _jit(two_shapes)(2.0), two_shapes, "if x > 0:",
             "a.total")


class Celsius:
    def __init__(self):
        self._c = 0.0

    @property
    def c(self):
        return self._c

    @c.setter
    def c(self, value):
        self._c = value


def test_property_with_a_setter_is_refused():
    def f(x):
        t = Celsius()
        if x > 0:
            t.c = x
        return t.c

    e = _refused(autograph.BranchError, lambda: _jit(f)(2.0), f, "if x > 0:", "t.c")
    assert "setter" in str(e)
    assert f(2.0) == autograph.convert(f)(2.0) == 2.0  # a Python `if`: as Python


def test_deleting_an_attribute_is_refused():
    def f(x):
        b = Box()
        b.v = 1.0
        if x > 0:
            del b.v
            b.w = x
        else:
            b.w = x
        return b.w

    _refused(autograph.BranchError, lambda: _jit(f)(2.0), f, "if x > 0:", "b.v")


def test_assignment_in_a_loop_test_is_refused():
    def tick(b):
        b.n += 1.0
        return b.n

    def f(x):
        b = Box()
        b.n = 0.0
        while tick(b) < x:
            pass
        return b.n

    _refused(autograph.LoopStateError, lambda: _jit(f)(3.0), f, "while tick(b) < x:", "b.n")


GLOBAL = Acc()


def global_while(x):
    while GLOBAL.total < x:
        GLOBAL.total += 1.0
    return x


def global_static_for(x):
    for i in range(20):
        GLOBAL.total = GLOBAL.total + x
    return x


def test_object_reached_through_a_global_stays_outside_state():
    GLOBAL.total = 0.0
    with pytest.raises(autograph.LoopStateError, match="cannot change what lies outside"):
        _jit(global_while)(3.0)
    assert GLOBAL.total == 0.0  # put back
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "scan" not in primitives(jax.make_jaxpr(autograph.convert(global_static_for))(
            1.0))  # as Python, as under plain `jax.jit`
    GLOBAL.total = 0.0


def test_python_values_run_as_python():
    for fn in (if_on_local, while_in_method, static_for, for_with_traced_break):
        for x in (2.0, -1.0):
            assert autograph.convert(fn)(x) == fn(x)
    ns = types.SimpleNamespace(total=0.0)

    def f(x):
        for i in range(20):
            ns.total = ns.total + x
        return ns.total

    assert autograph.convert(f)(1.0) == 20.0 and ns.total == 20.0


class _Plain:
    pass


def attribute_beside_an_output_no_branch_reads(x):
    o = _Plain()
    o.a = 0.0
    if x > 0:
        y = 1.0
        o.a = x
    else:
        y = 2.0
        o.a = -x
    return y + o.a


def test_an_if_with_an_output_no_branch_reads_carries_the_attribute():
    for x in (1.5, -2.0):
        got = jax.jit(autograph.convert(attribute_beside_an_output_no_branch_reads))(x)
        np.testing.assert_allclose(got, attribute_beside_an_output_no_branch_reads(x))


# -- a pytree-node object held in a list or dict -----------------------------------


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class _Weights:
    w: jax.Array


def doubles_an_object_in_a_list(x):
    params = [_Weights(x)]
    if x > 0:
        params[0].w = params[0].w * 2
    return params[0].w


def replaces_an_object_in_a_list(x):
    params = [_Weights(x)]
    if x > 0:
        params[0] = dataclasses.replace(params[0], w=params[0].w * 2)
    return params[0].w


def test_an_attribute_of_a_node_in_a_list_assigned_in_a_staged_if_is_refused():
    # staged, the list would come out holding a copy rebuilt from its leaves (the
    # update lost), where Python's list holds the very object updated
    assert doubles_an_object_in_a_list(3.0) == 6.0
    with pytest.raises(autograph.BranchError, match="object held in a list") as e:
        jax.jit(autograph.convert(doubles_an_object_in_a_list))(jnp.float32(3.0))
    assert "variable: params[0].w" in str(e.value)
    assert "dataclasses.replace" in str(e.value)
    jf = jax.jit(autograph.convert(replaces_an_object_in_a_list))  # the fix it gives
    for x in (3.0, -3.0):
        assert float(jf(jnp.float32(x))) == replaces_an_object_in_a_list(x)


def doubles_a_namespace(x):
    ns = types.SimpleNamespace(v=x)
    if x > 0:
        ns.v = ns.v * 2
    return ns.v


def halves_a_namespace_until(x, n):
    ns = types.SimpleNamespace(v=x, k=0)
    while ns.k < n:
        ns.v = ns.v * 0.5
        ns.k = ns.k + 1
    return ns.v


def test_a_simple_namespace_carries_its_attributes():
    # its `__setattr__` (in C) only stores the value: nothing runs on assignment
    check_equivalent(doubles_a_namespace, (np.float32(3.0),), (np.float32(-3.0),))
    check_equivalent(halves_a_namespace_until, (np.float32(3.0), 0), (np.float32(3.0), 4))


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class _Scaled:
    a: jax.Array


def returns_early_then_updates(x):
    s = _Scaled(x)
    if x > 1:
        if x > 3:
            return s
    s.a = s.a * 10
    return s


def test_a_refused_return_of_an_object_updated_in_place_names_its_class():
    with pytest.raises(autograph.BranchError) as e:
        jax.jit(autograph.convert(returns_early_then_updates))(jnp.float32(5.0))
    assert "_Same" not in str(e.value)
    assert "the `_Scaled` object itself" in str(e.value)
