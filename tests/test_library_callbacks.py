"""User functions handed to libraries are handed converted.

Converted code that passes a user function to a library (``functools.reduce``,
``jax.tree_util.tree_reduce``, ``optax.sgd(schedule)``, ``map``, ``sorted(...,
key=)``) passes its converted twin, so the library's calls of it on traced
values run its `if`s as converted code does (``calls.handing_converted``).
Each program is compared with its plain-Python run on inputs that take
different branches; under `jax.grad` and `jax.vmap` too.
"""

from __future__ import annotations

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import autograph
from autograph import errors
from autograph.runtime.functions import calls

INPUTS = (np.array([1.0, -3.0, 2.0], np.float32), np.array([-1.0, 0.5, -2.0], np.float32))


def pick(a, b):
    if a > b:
        return a
    return b


def magnitude(a):
    if a > 0:
        return a
    return -a


def positive(a):
    return a > 0


def reduce_items(xs):
    return functools.reduce(pick, [xs[0], xs[1], xs[2]])


def reduce_a_tree(xs):
    return jax.tree_util.tree_reduce(pick, {"a": xs[0], "b": xs[2], "c": [xs[1]]})


def sort_by_a_key(xs):
    ordered = sorted([xs[0], xs[1], xs[2]], key=magnitude)
    return ordered[0] - ordered[2]


def map_a_function(xs):
    return sum(map(magnitude, [xs[0], xs[1], xs[2]]))


def accumulate(xs):
    return list(itertools.accumulate([xs[0], xs[1], xs[2]], pick))[-1]


def reduce_a_partial(xs):
    return functools.reduce(functools.partial(_scaled_pick, 2.0), [xs[0], xs[1]])


def _scaled_pick(scale, a, b):
    if a > b:
        return scale * a
    return b


def reduce_with_a_local_function(xs):
    def smaller(a, b):
        if a < b:
            return a
        return b
    return functools.reduce(smaller, [xs[0], xs[1], xs[2]])


def min_with_a_key(xs):
    return min(xs[0], xs[1], xs[2], key=magnitude)


PROGRAMS = [reduce_items, reduce_a_tree, sort_by_a_key, map_a_function, accumulate,
            reduce_a_partial, reduce_with_a_local_function, min_with_a_key]


@pytest.mark.parametrize("fn", PROGRAMS, ids=lambda f: f.__name__)
def test_a_library_calls_the_converted_function(fn):
    converted = jax.jit(autograph.convert(fn))
    for xs in INPUTS:
        np.testing.assert_allclose(converted(xs), fn(xs), rtol=1e-6)
    batch = np.stack(INPUTS)
    np.testing.assert_allclose(jax.vmap(autograph.convert(fn))(batch),
                               [fn(xs) for xs in INPUTS], rtol=1e-6)


@pytest.mark.parametrize("fn", [reduce_items, sort_by_a_key, map_a_function],
                         ids=lambda f: f.__name__)
def test_gradients_through_the_library_call(fn):
    for xs in INPUTS:
        np.testing.assert_allclose(jax.grad(autograph.convert(fn))(xs), jax.grad(fn)(xs),
                                   rtol=1e-6)


def test_the_call_is_routed_and_to_code_shows_it():
    code = autograph.to_code(reduce_items)
    assert "ag__.converted_call(functools.reduce, pick," in code
    # a library call with no function argument stays as written
    assert "jnp.sin(x)" in autograph.to_code(lambda x: jnp.sin(x) if x > 0 else x)


def _schedule(count):
    if count < 3:
        return 0.1
    return 0.01


def train(w):
    tx = optax.sgd(_schedule)
    state = tx.init(w)
    for _ in range(5):
        updates, state = tx.update(2.0 * w, state, w)
        w = optax.apply_updates(w, updates)
    return w


def test_an_optax_schedule_with_a_branch_on_the_step_count():
    # the step count is traced inside `jax.jit`: the schedule's `if` needs converting
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(train)(jnp.float32(1.0))
    np.testing.assert_allclose(jax.jit(autograph.convert(train))(jnp.float32(1.0)),
                               train(jnp.float32(1.0)), rtol=1e-6)


def keep_positive(xs):
    return list(filter(positive, [xs[0], xs[1]]))


def test_filter_with_a_traced_test_says_why_it_cannot_be_staged():
    assert autograph.convert(keep_positive)(INPUTS[0]) == keep_positive(INPUTS[0])
    with pytest.raises(errors.BuiltinError, match="`filter` keeps the items") as info:
        jax.jit(autograph.convert(keep_positive))(INPUTS[0])
    assert "test_library_callbacks.py" in str(info.value)


def filter_python_values(xs, limits):
    return [v * xs[0] for v in filter(positive, limits)]


def test_filter_and_map_on_python_values_stay_python():
    got = jax.jit(autograph.convert(filter_python_values), static_argnums=1)(INPUTS[0],
                                                                            (1.0, -2.0, 3.0))
    np.testing.assert_allclose(got, filter_python_values(INPUTS[0], (1.0, -2.0, 3.0)))


# -- what keeps its functions as they are

def test_host_callbacks_and_registrations_keep_the_users_function():
    for keeper in (jax.pure_callback, jax.debug.callback, jax.tree_util.register_pytree_node):
        assert calls.resolve(keeper) is keeper


def test_a_function_that_cannot_be_converted_is_handed_as_it_is():
    namespace: dict = {}
    exec("def made(a, b):\n    return a + b\n", namespace)  # no source file
    made = namespace["made"]
    with pytest.warns(UserWarning):
        assert calls.handed(made) is made


def test_do_not_convert_and_library_functions_pass_unchanged():
    kept = autograph.do_not_convert(lambda a, b: a + b)
    assert calls.handed(kept) is kept
    assert calls.handed(jnp.maximum) is jnp.maximum
    assert calls.handed(3.0) == 3.0
    assert calls.handed(pick) is calls.resolve(pick) is not pick
    listed = [pick, 1.0]  # inside a list, data: as it is
    assert calls.handed(listed) is listed


# -- what the library must get or give back as it is

def relu(v):
    return max(v, 0.0)


def negate(v):
    return -v


ACTIVATIONS = {relu: 1.0, negate: 2.0}


def functions_as_data(x):
    best = functools.reduce(lambda a, b: a if a(3.0) > b(3.0) else b, [relu, negate])
    leaves = jax.tree_util.tree_leaves((relu, negate))
    table = np.array([relu, negate], dtype=object)
    return x * ACTIVATIONS.get(best, 0.0) + ACTIVATIONS.get(leaves[0], 0.0) + 10 * (
        table[0] is relu)


def test_functions_inside_arguments_come_back_as_themselves():
    # in a list or a tuple, functions are the library's data: handed as they are
    assert float(jax.jit(autograph.convert(functions_as_data))(1.0)) == \
        functions_as_data(1.0) == 12.0


def _falling(t, y):
    return [y[1], -9.81]


def _hits_the_ground(t, y):
    return y[0]


_hits_the_ground.terminal = True  # read by SciPy off the function itself
_hits_the_ground.direction = -1


def time_of_impact(x):
    import scipy.integrate
    solution = scipy.integrate.solve_ivp(_falling, (0.0, 10.0), [10.0, 0.0],
                                         events=_hits_the_ground)
    return x * solution.t[-1]


def test_a_function_with_attributes_of_its_own_is_handed_as_it_is():
    np.testing.assert_allclose(jax.jit(autograph.convert(time_of_impact))(1.0),
                               time_of_impact(1.0), rtol=1e-6)
    assert calls.handed(_hits_the_ground) is _hits_the_ground


def filter_that_stops(xs):
    keep = iter([True, False, True])  # shorter than xs: StopIteration ends the filter
    return list(filter(lambda v: next(keep), xs))


def test_filter_is_pythons_own_filter():
    assert autograph.convert(filter_that_stops)([1, 2, 3, 4]) == [1, 3]
    assert type(calls.resolve(filter)(None, [1])) is filter


class _Task:
    def __init__(self, name, priority):
        self.name, self.priority = name, priority


def first_by_priority(x):
    tasks = [_Task("a", 2), _Task("b", 1)]
    return x * sorted(tasks, key=lambda t: (t.priority, x))[0].priority


def order_as_shape(x):
    order = sorted([2, 0, 1], key=lambda i: (i, x))
    return jnp.zeros(order[-1] + 1).sum() + x


def test_sorted_lets_python_decide_where_the_python_parts_of_tuples_differ():
    assert float(jax.jit(autograph.convert(first_by_priority))(1.0)) == first_by_priority(1.0)
    assert float(jax.jit(autograph.convert(order_as_shape))(1.0)) == order_as_shape(1.0)


def smallest_magnitudes(xs):
    import heapq
    return heapq.nsmallest(2, xs, key=magnitude)


def test_heapq_gets_converted_keys():
    import heapq
    assert calls.resolve(heapq.nsmallest) is not heapq.nsmallest
    for xs in ([3.0, -1.0, 2.0], [-5.0, 0.5, 1.0]):
        assert autograph.convert(smallest_magnitudes)(xs) == smallest_magnitudes(xs)
