"""Never worse than ``jax.jit``: programs as users write them, three ways.

Each program runs in plain Python, under plain ``jax.jit`` and under
``jax.jit(autograph.convert(f))``, on inputs that take different branches and
trip counts. Wherever plain ``jax.jit`` runs, the converted result is the
same; wherever Python runs, the converted result equals Python's or is a
clear ``AutographError`` from a documented rule. The eager converted run
(``autograph.convert(f)`` on Python values) always equals Python.
"""

from __future__ import annotations

import functools
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from tests.helpers import runs_as_python, with_globals

F32 = np.float32


class _Run:
    def __init__(self, fn, args):
        self.value, self.error = None, None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                self.value = jax.block_until_ready(fn(*args))
            except Exception as e:  # noqa: BLE001 - compared below
                self.error = e


def _close(a, b):
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb, f"{ta} vs {tb}"
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64),
                                   rtol=1e-5, atol=1e-6)


def _jax(args):
    return tuple(jnp.asarray(a) if isinstance(a, (float, np.ndarray, np.generic)) else a
                 for a in args)


_TRACER_ERRORS = (jax.errors.ConcretizationTypeError, jax.errors.TracerBoolConversionError,
                  jax.errors.TracerIntegerConversionError)


def check(fn, *arg_sets, static_argnums=(), reference=None):
    """``reference``: the program's meaning where plain Python cannot run it (a JAX
    transformation traces a callee with an ``if``); by default, plain Python."""
    converted = autograph.convert(fn)
    plain_jit = jax.jit(fn, static_argnums=static_argnums)
    conv_jit = jax.jit(converted, static_argnums=static_argnums)
    for args in arg_sets:
        py = _Run(reference or fn, args)
        eager = _Run(converted, args)
        if py.error is None:
            assert eager.error is None, eager.error
            _close(eager.value, py.value)
        elif not isinstance(py.error, _TRACER_ERRORS):
            assert eager.error is not None and isinstance(
                eager.error, (type(py.error), autograph.AutographError)), eager.error
        jargs = tuple(a if i in static_argnums else j
                      for i, (a, j) in enumerate(zip(args, _jax(args))))
        pj = _Run(plain_jit, jargs)
        cj = _Run(conv_jit, jargs)
        if pj.error is None:  # never worse than plain jit: the same result
            assert cj.error is None, f"plain jit ran, converted raised {cj.error!r}"
            _close(cj.value, pj.value)
        elif py.error is None:  # beyond plain jit: Python's result, or a clear refusal
            if cj.error is None:
                _close(cj.value, py.value)
            else:
                assert isinstance(cj.error, autograph.AutographError), repr(cj.error)


# -- try / except / else / finally ---------------------------------------------------

def try_if_return_finally(x):
    log = []
    try:
        if x > 0:
            return x * 2.0, len(log)
        y = -x
    finally:
        log.append(1)
    return y, len(log)


def try_except_branch(x, d):
    try:
        v = d["k"] * x
    except KeyError:
        if x > 0:
            return x
        v = -x
    else:
        v = v + 1.0
    return v


def try_in_loop_break(xs):
    total = 0.0
    for x in xs:
        try:
            if x > 2.0:
                break
            total = total + x
        finally:
            total = total * 1.0
    return total


def try_in_loop_continue(xs):
    total = 0.0
    for x in xs:
        try:
            if x < 0:
                continue
            total = total + x
        except ValueError:
            total = -1.0
    return total


def try_while_inside(x):
    try:
        while x < 10.0:
            x = x * 2.0
    except ZeroDivisionError:
        x = 0.0
    return x


def try_catches_trace_time_error(x):
    # under jit `int(x)` raises while tracing and the handler runs, for plain
    # jit and converted code alike
    try:
        n = int(x)
    except (TypeError, jax.errors.ConcretizationTypeError):
        n = 1
    for _ in range(2):
        x = x * 1.5
    return x * n


def handler_reads_its_exception_in_loop(xs):
    # `e` is bound by the `except` itself: not a variable the loop carries
    total = 0.0
    for x in xs:
        try:
            total = total + 1.0 / x
        except ZeroDivisionError as e:
            total = total + len(str(e))
    return total


def try_else_with_loop(x):
    try:
        y = x + 1.0
    except ValueError:
        y = 0.0
    else:
        for i in range(3):
            y = y + i
    return y


def nested_try(x):
    try:
        try:
            if x > 0:
                raise KeyError("inner")
            y = x
        except KeyError:
            y = x * 10.0
    finally:
        y = y + 1.0
    return y


def nested_try_caught_outside_branch(x):
    try:
        try:
            y = {"a": x}["b"]
        except KeyError:
            if x > 0:
                y = x * 10.0
            else:
                y = x
    finally:
        y = y + 1.0
    return y


# -- del, global, nonlocal -------------------------------------------------------------

def del_temporary(x):
    t = x * 2.0
    y = t + 1.0
    del t
    if y > 2.0:
        y = y * 3.0
    return y


def del_in_loop(x):
    acc = 0.0
    for i in range(3):
        tmp = x * i
        acc = acc + tmp
        del tmp
    return acc


COUNTER = 0


def global_counter(x):
    global COUNTER
    COUNTER = COUNTER + 1
    for _ in range(2):
        COUNTER += 1
    if x > 0:
        return x
    return -x


def nonlocal_helper(x):
    calls = 0

    def bump(v):
        nonlocal calls
        calls += 1
        if v > 0:
            return v
        return -v

    y = bump(x) + bump(x - 5.0)
    return y, calls


# -- builtins as values, jit functions, transformations ------------------------------

def builtins_as_values(x, n):
    rng, enum, z = range, enumerate, zip
    s = 0.0
    for i in rng(n):
        s = s + x * i
    for i, v in enum(jnp.arange(3.0)):
        s = s + v * i
    for a, b in z(jnp.arange(3.0), reversed(range(3))):
        s = s + a * b
    return s + len(list(enum(range(3))))


@functools.partial(jax.jit, static_argnums=1)
def _jit_power(x, k):
    if x > 0:
        return x ** k
    return -x


def calls_jit_function(x):
    return _jit_power(x, 3) + 1.0


def _branchy(x):
    if x > 0:
        return x * x
    return jnp.sin(x)


def vmap_of_branchy(xs):
    return jax.vmap(_branchy)(xs)


def grad_of_branchy(x):
    return jax.grad(_branchy)(x)


def scan_with_branchy_body(xs):
    def body(c, x):
        if x > c:
            c = x
        return c, c * 2.0
    return jax.lax.scan(body, -1.0, xs)


def cond_with_branchy(x):
    return jax.lax.cond(x > 1.0, _branchy, lambda v: v * 0.5, x)


def fori_with_branchy(x):
    def body(i, v):
        if i % 2 == 0:
            return v + _branchy(v)
        return v * 0.5
    return jax.lax.fori_loop(0, 4, body, x)


def checkpointed(x):
    return jax.checkpoint(_branchy)(x) + jax.jit(_branchy)(x)


def value_and_grad_tuple(x):
    v, g = jax.value_and_grad(_branchy)(x)
    return v + g


# -- static loops that lax.scan cannot stage: unrolled, as plain jit does --------------

def grows_vector(x):
    v = jnp.zeros(0)
    for i in range(4):
        v = jnp.concatenate([v, (x * i)[None]])
    return v


def params_by_key(x):
    params = {"w0": 2.0, "w1": 3.0, "w2": 0.5}
    for i in range(3):
        x = x * params[f"w{i}"]
    return x


def int_becomes_float(x):
    n = jnp.int32(8)
    for _ in range(3):
        n = n / 2
    return n * x


def dict_grows(x):
    out = {}
    for i in range(3):
        out[str(i)] = x * i
    return out


def list_of_layers(x):
    layers = [1.0, 2.0, 3.0]
    for i in range(len(layers)):
        x = x * layers[i] + i
    return x


def slice_by_index(xs):
    total = 0.0
    for i in range(2):
        total = total + xs[i:i + 2].sum()
    return total


def string_accumulates(x):
    name = ""
    for i in range(3):
        name = name + str(i)
        x = x + 1.0
    return x, len(name)


# -- branch chains, recursion --------------------------------------------------------

def elif_constants(x):
    if x < -2.0:
        return 0.0
    elif x < -1.0:
        return 1.0
    elif x < 0.0:
        return 2
    elif x < 1.0:
        return 3.0
    elif x < 2.0:
        return 4.0
    elif x < 3.0:
        return 5.0
    elif x < 4.0:
        return 6.0
    return 7.0


def python_depth_recursion(x, depth):
    if depth == 0:
        return x
    if x > 0:
        return python_depth_recursion(x - 1.0, depth - 1)
    return python_depth_recursion(x + 2.0, depth - 1)


def traced_recursion(n):
    if n <= 1:
        return 1
    return n * traced_recursion(n - 1)


# -- everyday forms ------------------------------------------------------------------

def while_counter(x):
    i = 0
    while x < 50.0 and i < 10:
        x = x * 1.5 + 1.0
        i += 1
    return x, i


def for_break_else(xs):
    for x in xs:
        if x > 5.0:
            found = x
            break
    else:
        found = -1.0
    return found


def nested_loops(x, n):
    acc = 0.0
    for i in range(n):
        j = 0
        while j < i:
            acc = acc + x * j
            j += 1
    return acc


def pytree_branch(x):
    state = {"a": x, "b": (x * 2.0, x * 3.0)}
    if x > 0:
        state = {"a": -x, "b": (x, x)}
    return state


def mixed_dtypes(x, k):
    if k > 2:
        y = x * k
    else:
        y = k
    return y


def early_return_in_loop(xs):
    for i, x in enumerate(xs):
        if x < 0:
            return i
    return -1


def conditional_expression(x):
    y = x * 2.0 if x > 0 else -x
    z = (y > 1.0) and (x < 5.0)
    return y, z


def assert_in_branch(x):
    if x > 0:
        assert x < 100.0, "too large"
        y = x
    else:
        y = -x
    return y


def print_in_loop(x):
    for i in range(2):
        print("step", i)
        x = x + i
    return x


# -- more everyday programs ----------------------------------------------------------

def relu_sum(xs):
    total = 0.0
    for x in xs:
        if x > 0:
            total += x
    return total


def clip_norm(v, limit):
    n = jnp.linalg.norm(v)
    if n > limit:
        v = v * (limit / n)
    return v


def newton_sqrt(a):
    x = a
    for _ in range(20):
        nxt = 0.5 * (x + a / x)
        if jnp.abs(nxt - x) < 1e-6:
            break
        x = nxt
    return x


def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def piecewise(x):
    if x < -1.0:
        y = -1.0
    elif x > 1.0:
        y = 1.0
    else:
        y = x
    return y * 2.0


def argmax_loop(xs):
    best, best_i = xs[0], 0
    for i in range(1, 4):
        if xs[i] > best:
            best, best_i = xs[i], i
    return best, best_i


def running_mean(xs):
    mean = 0.0
    count = 0
    for x in xs:
        count += 1
        mean = mean + (x - mean) / count
    return mean


def early_stop_training(w, lr):
    loss = w * w
    for step in range(50):
        grad = 2.0 * w
        w = w - lr * grad
        loss = w * w
        if loss < 1e-3:
            return w, step
    return w, 50


def count_positive_pairs(xs):
    count = 0
    for i in range(3):
        for j in range(3):
            if xs[i] + xs[j] > 0:
                count += 1
    return count


def while_with_two_exits(x):
    i = 0
    while True:
        if x > 100.0:
            return x, i
        if i >= 10:
            return -x, i
        x = x * 2.0
        i += 1


def continue_skips(xs):
    total = 0.0
    for x in xs:
        if x < 0:
            continue
        if x > 10:
            continue
        total += x * x
    return total


def dict_state(x):
    s = {"sum": 0.0, "max": -1e9}
    for i in range(3):
        v = x * i
        s["sum"] = s["sum"] + v
        if v > s["max"]:
            s["max"] = v
    return s


def tuple_state(x):
    a, b = x, 0.0
    for _ in range(4):
        a, b = b + 1.0, a * 0.5
    return a, b


def nested_function_call(x):
    def inner(v):
        if v > 1.0:
            return v - 1.0
        return v + 1.0
    return inner(x) + inner(-x)


def lambda_in_branch(x):
    f = (lambda v: v * 2.0) if x > 0 else (lambda v: v * 3.0)
    return f(1.0)


def integer_division_loop(n):
    digits = 0
    while n > 0:
        n = n // 10
        digits += 1
    return digits


def sign_by_and_or(x):
    return (x > 0) and 1.0 or -1.0


def item_assignment_loop(x):
    out = jnp.zeros(3)
    for i in range(3):
        out[i] = x * i
        if out[i] > 2.0:
            out[i] = 2.0
    return out


def print_fstring_loop(x, n):
    for i in range(n):
        x = x * 0.5
        print(f"iter {i}: {x:.3f}")
    return x


def assert_in_loop(x):
    for i in range(3):
        assert x > -100.0, "diverged"
        x = x - 1.0
    return x


def bool_flag_loop(xs):
    seen = False
    for x in xs:
        if x > 2.0:
            seen = True
    return seen


def min_with_python_start(xs):
    lo = 1e9
    for x in xs:
        lo = jnp.minimum(lo, x)
    return lo


def shape_dependent_branch(x):
    if x.shape[0] > 2:
        return x[:2].sum()
    return x.sum()


def string_static_branch(x, mode):
    if mode == "double":
        return x * 2.0
    return x


PROGRAMS = [
    (try_if_return_finally, [(2.0,), (-2.0,)], ()),
    (nested_try_caught_outside_branch, [(2.0,), (-2.0,)], ()),
    (try_in_loop_break, [(np.array([1.0, 3.0, 0.5], F32),), (np.array([0.1, 0.2, 0.3], F32),)],
     ()),
    (try_in_loop_continue, [(np.array([1.0, -3.0, 0.5], F32),)], ()),
    (try_while_inside, [(1.0,), (20.0,)], ()),
    (try_catches_trace_time_error, [(2.5,), (0.5,)], ()),
    (try_else_with_loop, [(1.0,)], ()),
    (handler_reads_its_exception_in_loop, [([1.0, 0.0, 2.0],), (np.array([1.0, 2.0], F32),)],
     ()),
    (nested_try, [(2.0,), (-2.0,)], ()),
    (del_temporary, [(2.0,), (0.1,)], ()),
    (del_in_loop, [(2.0,)], ()),
    (nonlocal_helper, [(2.0,), (7.0,)], ()),
    (builtins_as_values, [(2.0, 3), (1.0, 0)], ()),
    (calls_jit_function, [(2.0,), (-2.0,)], ()),
    (vmap_of_branchy, [(np.array([1.0, -2.0, 3.0], F32),)], ()),
    (grad_of_branchy, [(2.0,), (-2.0,)], ()),
    (scan_with_branchy_body, [(np.array([1.0, -2.0, 3.0], F32),)], ()),
    (cond_with_branchy, [(2.0,), (0.5,)], ()),
    (fori_with_branchy, [(0.5,), (-0.5,)], ()),
    (checkpointed, [(2.0,), (-2.0,)], ()),
    (value_and_grad_tuple, [(2.0,), (-2.0,)], ()),
    (grows_vector, [(2.0,)], ()),
    (params_by_key, [(2.0,)], ()),
    (int_becomes_float, [(2.0,)], ()),
    (dict_grows, [(2.0,)], ()),
    (list_of_layers, [(2.0,)], ()),
    (slice_by_index, [(np.arange(4.0, dtype=F32),)], ()),
    (string_accumulates, [(2.0,)], ()),
    (elif_constants, [(-3.0,), (-0.5,), (1.5,), (5.0,)], ()),
    (python_depth_recursion, [(3.0, 6), (-1.0, 4)], (1,)),
    (while_counter, [(1.0,), (60.0,)], ()),
    (for_break_else, [(np.array([1.0, 7.0, 3.0], F32),), (np.array([1.0, 2.0, 3.0], F32),)], ()),
    (nested_loops, [(2.0, 3), (1.0, 0)], ()),
    (pytree_branch, [(2.0,), (-2.0,)], ()),
    (mixed_dtypes, [(2.0, 3), (2.0, 1)], ()),
    (early_return_in_loop, [(np.array([1.0, -2.0, 3.0], F32),), (np.array([1.0, 2.0], F32),)],
     ()),
    (conditional_expression, [(2.0,), (-2.0,), (0.2,)], ()),
    (assert_in_branch, [(2.0,), (-2.0,)], ()),
    (print_in_loop, [(2.0,)], ()),
    (relu_sum, [(np.array([1.0, -2.0, 3.0], F32),)], ()),
    (clip_norm, [(np.array([3.0, 4.0], F32), 1.0), (np.array([0.3, 0.4], F32), 1.0)], ()),
    (newton_sqrt, [(2.0,), (9.0,)], ()),
    (collatz_steps, [(6,), (7,), (1,)], ()),
    (piecewise, [(-2.0,), (0.5,), (3.0,)], ()),
    (argmax_loop, [(np.array([1.0, 5.0, 2.0, 7.0], F32),), (np.array([9.0, 1.0, 2.0, 3.0], F32),)],
     ()),
    (running_mean, [(np.array([1.0, 2.0, 6.0], F32),)], ()),
    (early_stop_training, [(1.0, 0.1), (1.0, 0.001)], ()),
    (count_positive_pairs, [(np.array([1.0, -2.0, 0.5], F32),)], ()),
    (while_with_two_exits, [(1.0,), (200.0,), (1e-3,)], ()),
    (continue_skips, [(np.array([1.0, -2.0, 30.0, 3.0], F32),)], ()),
    (dict_state, [(2.0,), (-1.0,)], ()),
    (tuple_state, [(2.0,)], ()),
    (nested_function_call, [(2.0,), (0.5,)], ()),
    (lambda_in_branch, [(2.0,)], ()),
    (integer_division_loop, [(1234,), (0,), (7,)], ()),
    (sign_by_and_or, [(2.0,), (-2.0,)], ()),
    (item_assignment_loop, [(0.5,), (3.0,)], ()),
    (print_fstring_loop, [(2.0, 3), (2.0, 0)], ()),
    (assert_in_loop, [(2.0,)], ()),
    (bool_flag_loop, [(np.array([1.0, 3.0], F32),), (np.array([1.0, 2.0], F32),)], ()),
    (min_with_python_start, [(np.array([3.0, -1.0, 2.0], F32),)], ()),
    (shape_dependent_branch, [(np.arange(4.0, dtype=F32),), (np.arange(2.0, dtype=F32),)], ()),
    (string_static_branch, [(2.0, "double"), (2.0, "same")], (1,)),
]


def _with_converted_callees(fn):
    """``fn`` whose module-level callees are converted by hand: the meaning of a program
    that hands them to a JAX transformation."""
    return with_globals(fn, _branchy=autograph.convert(_branchy),
                        _jit_power=jax.jit(autograph.convert(_jit_power.__wrapped__),
                                           static_argnums=1))


def _scan_reference(xs):
    c, ys = -1.0, []
    for x in np.asarray(xs):
        c = max(c, float(x))
        ys.append(c * 2.0)
    return jnp.float32(c), jnp.asarray(ys, jnp.float32)


def _fori_reference(x):
    v = float(x)
    for i in range(4):
        v = v + (v * v if v > 0 else float(np.sin(v))) if i % 2 == 0 else v * 0.5
    return jnp.float32(v)


def _item_assignment_reference(x):
    out = np.zeros(3, np.float32)  # the NumPy habit the program is written in
    for i in range(3):
        out[i] = x * i
        if out[i] > 2.0:
            out[i] = 2.0
    return out


REFERENCES = {
    item_assignment_loop: _item_assignment_reference,
    calls_jit_function: _with_converted_callees(calls_jit_function),
    vmap_of_branchy: _with_converted_callees(vmap_of_branchy),
    grad_of_branchy: _with_converted_callees(grad_of_branchy),
    cond_with_branchy: _with_converted_callees(cond_with_branchy),
    checkpointed: _with_converted_callees(checkpointed),
    value_and_grad_tuple: _with_converted_callees(value_and_grad_tuple),
    scan_with_branchy_body: _scan_reference,
    fori_with_branchy: _fori_reference,
}


@pytest.mark.parametrize("fn,arg_sets,static", PROGRAMS, ids=[p[0].__name__ for p in PROGRAMS])
def test_program(fn, arg_sets, static, capsys):
    check(fn, *arg_sets, static_argnums=static, reference=REFERENCES.get(fn))


def test_raise_in_a_staged_branch_inside_try_is_a_clear_error():
    # Python catches the `raise`; a staged branch raises only at run time, where
    # no `except` can catch it: refused while tracing, naming the branch
    assert nested_try(2.0) == 21.0
    with pytest.raises(autograph.AutographError) as info:
        jax.jit(autograph.convert(nested_try))(2.0)
    # the `finally:` runs while the refusal propagates, as Python runs it; the
    # refusal stays in the chain
    chain = [info.value, info.value.__context__, info.value.__cause__]
    refusal = next(e for e in chain if isinstance(e, autograph.BranchError))
    assert "cannot be caught by `except`" in str(refusal)
    assert "test_never_worse.py" in str(refusal)


def test_try_except_branch_with_a_dict_argument():
    for d in ({}, {"k": 5.0}):
        for x in (1.0, -1.0):
            want = try_except_branch(x, d)
            got = jax.jit(lambda v, d=d: autograph.convert(try_except_branch)(v, d))(x)
            np.testing.assert_allclose(got, want)


def test_global_counter_counts_each_python_step():
    global COUNTER
    COUNTER = 0
    assert float(jax.jit(autograph.convert(global_counter))(2.0)) == 2.0
    assert COUNTER == 3  # once per trace: as under plain jit
    assert float(autograph.convert(global_counter)(-2.0)) == 2.0
    assert COUNTER == 6


def test_traced_recursion_ends_with_a_clear_error():
    assert autograph.convert(traced_recursion)(5) == 120
    with pytest.raises(autograph.ConversionError, match="recursive call") as info:
        jax.jit(autograph.convert(traced_recursion))(5)
    assert "traced_recursion" in str(info.value) and "while" in str(info.value)
    assert "test_never_worse.py" in str(info.value)


def params_by_position(x):
    ws = [2.0, 3.0, 0.5]
    for i in range(3):
        x = x * ws[i]
    return x


def test_static_loop_fallback_notes_the_reason(staged_small_loops):
    with runs_as_python(r"loop index in `ws`.*test_never_worse.py:\d+"):
        out = jax.jit(autograph.convert(params_by_position))(2.0)
    assert float(out) == 6.0


def test_a_loop_formatting_its_index_runs_as_python_without_a_staging_attempt(
        staged_small_loops):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # decided when converted: nothing fails, nothing warns
        assert float(jax.jit(autograph.convert(params_by_key))(2.0)) == 6.0


def test_elif_chain_of_python_constants_traces_each_branch_once():
    import sys

    def branch(v):
        return v

    def chain(x):
        if x < 0.0:
            y = branch(0.0)
        elif x < 1.0:
            y = branch(1.0)
        elif x < 2.0:
            y = branch(2)
        elif x < 3.0:
            y = branch(3.0)
        else:
            y = branch(4.0)
        return y

    calls = []  # counted from outside: a counter the branches reach would be refused

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "branch":
            calls.append(frame.f_code)

    sys.setprofile(profile)
    try:
        assert float(jax.jit(autograph.convert(chain))(2.5)) == 3.0
    finally:
        sys.setprofile(None)
    assert len(calls) == 5


def test_jump_inside_finally_converts():
    def f(x):
        try:
            x = x + 1.0
        finally:
            return x

    check(f, (F32(1.0),))


_K = jnp.asarray(2.7, jnp.float32)


def sum_of_truncations(x):
    p = 0
    for i in range(20):
        p = p + int(_K * i)
        x = x + 1.0
    return p, x


def test_a_python_int_summed_from_truncated_floats_is_pythons():
    # the loop is staged as one scan, and the int it carries is worked out from
    # intervals: a float cast to an integer is truncated, item by item
    want = sum_of_truncations(1.0)
    got = jax.jit(autograph.convert(sum_of_truncations))(1.0)
    assert int(got[0]) == want[0] == sum(int(np.float32(2.7) * np.float32(i)) for i in range(20))
    assert float(got[1]) == want[1]


def _factorial(n):
    return 1 if n <= 1 else n * _factorial(n - 1)


def python_recursion_in_a_staged_branch(x):
    if x > 0:
        y = x * (_factorial(30) / _factorial(29))
    else:
        y = x
    return y


def test_a_recursion_on_python_values_in_a_staged_branch_runs_as_python():
    # 30 levels deep, past the limit for recursions on traced values: its stopping
    # condition reads Python ints, and it stops as in Python
    for x in (1.0, -1.0):
        assert float(jax.jit(autograph.convert(python_recursion_in_a_staged_branch))(x)) == \
            python_recursion_in_a_staged_branch(x)
