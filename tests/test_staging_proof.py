"""A long static `for` loop is staged only when staging it is provably invisible.

A `for` loop over a static `range` of more than `loop_plan.PYTHON_TRIPS`
iterations may run as one `lax.scan` only when its body is free of effects and
never uses the index as a Python value; otherwise it runs as the Python loop
plain `jax.jit` unrolls. Each program below runs three ways: in plain Python
(eager), under plain `jax.jit(f)`, and under `jax.jit(autograph.convert(f))`;
the converted run must equal plain `jax.jit` in every observable: the value it
returns and the effects its trace leaves (text written, records logged,
counters, list and dict contents).

The last section holds the positive tests: loops whose staging nothing can see
still become one `scan`.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph

TRIPS = 20
X0 = np.array([0.5, -1.25, 3.0], np.float32)


def _runs(fn, *args, reset, observe):
    """{way: (value, observed effects)} for eager, plain jit and jit of convert."""
    ways = {"eager": fn, "jit": jax.jit(fn), "autograph": jax.jit(autograph.convert(fn))}
    out = {}
    for name, run in ways.items():
        jax.clear_caches()   # every run traces afresh, so every run leaves its effects
        reset()
        value = jax.block_until_ready(run(*args))
        out[name] = (value, observe())
    return out


def _assert_same_as_jit(fn, *args, reset, observe, want=None):
    runs = _runs(fn, *args, reset=reset, observe=observe)
    (eager_value, eager_seen), (jit_value, jit_seen), (ag_value, ag_seen) = (
        runs["eager"], runs["jit"], runs["autograph"])
    # the program itself: plain jit leaves the effects Python leaves
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5),
        jit_value, eager_value)
    assert jit_seen == eager_seen
    if want is not None:
        assert jit_seen == want
    # the converted program: the same as plain jit
    jax.tree_util.tree_map(
        lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5),
        ag_value, jit_value)
    assert ag_seen == jit_seen
    return jit_value


# ---------------------------------------------------------------------------
# 1. A helper that writes text each step.

BUF = io.StringIO()


def _write_step(x):
    BUF.write("s")
    return x * 0.9 + 1.0


def _reset_buf():
    BUF.seek(0)
    BUF.truncate()


@pytest.mark.parametrize("trips", [20, 33])
def test_helper_writing_to_stringio(trips):
    def f(x):
        for i in range(trips):
            x = _write_step(x)
        return x

    _assert_same_as_jit(f, jnp.asarray(X0), reset=_reset_buf,
                        observe=lambda: len(BUF.getvalue()), want=trips)


# ---------------------------------------------------------------------------
# 2. logging.

class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record.getMessage())


LOGGER = logging.getLogger("tests.test_staging_proof.loop")
LOGGER.setLevel(logging.INFO)
LOGGER.propagate = False
HANDLER = _Collect()
LOGGER.addHandler(HANDLER)


def _log_step(x):
    LOGGER.info("step")
    return x * 0.9 + 1.0


def _logged_in_body(x):
    for i in range(TRIPS):
        LOGGER.info("step")
        x = x * 0.9 + 1.0
    return x


def _logged_in_helper(x):
    for i in range(TRIPS):
        x = _log_step(x)
    return x


@pytest.mark.parametrize("fn", [_logged_in_body, _logged_in_helper],
                         ids=["in the body", "in a helper"])
def test_logging_records_every_step(fn):
    _assert_same_as_jit(fn, jnp.asarray(X0), reset=HANDLER.records.clear,
                        observe=lambda: list(HANDLER.records), want=["step"] * TRIPS)


# ---------------------------------------------------------------------------
# 3. A counter reached through globals().

COUNT = [0]


def _count_step():
    globals()["COUNT"][0] += 1


def _globals_in_body(x):
    for i in range(TRIPS):
        globals()["COUNT"][0] += 1
        x = x * 0.9 + 1.0
    return x


def _globals_in_helper(x):
    for i in range(TRIPS):
        _count_step()
        x = x * 0.9 + 1.0
    return x


def _reset_count():
    COUNT[0] = 0


@pytest.mark.parametrize("fn", [_globals_in_body, _globals_in_helper],
                         ids=["in the body", "in a helper"])
def test_globals_counter(fn):
    _assert_same_as_jit(fn, jnp.asarray(X0), reset=_reset_count,
                        observe=lambda: COUNT[0], want=TRIPS)


# ---------------------------------------------------------------------------
# 4. A functools.singledispatch helper with an effect.

DISPATCHED = []


@functools.singledispatch
def _dispatched_step(x):
    DISPATCHED.append("step")
    return x * 0.9 + 1.0


@_dispatched_step.register
def _(x: float):
    DISPATCHED.append("float")
    return x * 0.9 + 1.0


def _singledispatch_loop(x):
    for i in range(TRIPS):
        x = _dispatched_step(x)
    return x


def test_singledispatch_helper_appends():
    _assert_same_as_jit(_singledispatch_loop, jnp.asarray(X0), reset=DISPATCHED.clear,
                        observe=lambda: len(DISPATCHED), want=TRIPS)


# ---------------------------------------------------------------------------
# 5. A user module named like a standard-library module.

_USER_MODULE = """
LOG = []


def step(x):
    LOG.append(1)
    return x * 0.9 + 1.0
"""


@pytest.mark.parametrize("name", ["code", "types", "functools"])
def test_helper_in_user_module_named_like_stdlib(tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(_USER_MODULE)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.step.__module__ == name
    step = mod.step

    def f(x):
        for i in range(TRIPS):
            x = step(x)
        return x

    _assert_same_as_jit(f, jnp.asarray(X0), reset=mod.LOG.clear,
                        observe=lambda: len(mod.LOG), want=TRIPS)


# ---------------------------------------------------------------------------
# 6. State past a big walk: the effect lands in the last of 6000 small lists.

@pytest.mark.parametrize("how", ["append", "augassign"])
def test_mutation_deep_in_big_closure_state(how):
    big = [[0] for _ in range(6000)]

    if how == "append":
        def bump():
            big[-1].append(1)
    else:
        def bump():
            big[-1][0] += 1

    def f(x):
        for i in range(TRIPS):
            bump()
            x = x * 0.9 + 1.0
        return x

    def reset():
        big[-1][:] = [0]

    def observe():
        return (sum(len(b) for b in big), sum(b[0] for b in big), list(big[-1]))

    _assert_same_as_jit(f, jnp.asarray(X0), reset=reset, observe=observe)
    observed = observe()
    assert observed[0] + observed[1] > 6000   # the converted run (last) bumped too


# ---------------------------------------------------------------------------
# 7. The index used as a Python value.

P = {f"w{k}": 0.1 * k + 0.05 * (k % 3) for k in range(40)}


@pytest.mark.parametrize("start", [0, 3, 17])
def test_index_in_fstring_dict_key(start):
    def f(x):
        for i in range(TRIPS):
            k = start + i
            x = x * 0.9 + P.get(f"w{k}", 0.0)
        return x

    value = _assert_same_as_jit(f, jnp.asarray(X0), reset=lambda: None, observe=lambda: None)
    assert np.all(np.abs(np.asarray(value)) > 1.0)


SEEN = {}
D = {str(k): 0.25 * ((k * 7) % 5) for k in range(40)}


def _keyed_and_seen(t):
    key = str(t[0])
    SEEN[key] = True
    return t[1] * 0.9 + D.get(key, -5.0)


def _keyed(t):
    return t[1] * 0.9 + D.get(str(t[0]), -5.0)


def _index_in_tuple_seen(x):
    for i in range(TRIPS):
        x = _keyed_and_seen((i, x))
    return x


def _index_in_tuple(x):
    for i in range(TRIPS):
        x = _keyed((i, x))
    return x


@pytest.mark.parametrize("fn", [_index_in_tuple_seen, _index_in_tuple],
                         ids=["stored in a dict", "read from a dict"])
def test_index_in_tuple_formatted_into_dict_key(fn):
    _assert_same_as_jit(fn, jnp.asarray(X0), reset=SEEN.clear, observe=lambda: sorted(SEEN))
    if fn is _index_in_tuple_seen:
        assert sorted(SEEN) == sorted(str(i) for i in range(TRIPS))


INDICES = []


@autograph.do_not_convert
def _every_third(i):
    return float(i % 3 == 0)


@autograph.do_not_convert
def _one_if_int(i):
    return 1.0 if isinstance(i, int) else -3.0


@autograph.do_not_convert
def _remember(i):
    INDICES.append(i)


def _do_not_convert_weight(x):
    for i in range(TRIPS):
        x = x * 0.9 + _every_third(i)
    return x


def _do_not_convert_isinstance(x):
    for i in range(TRIPS):
        x = x * 0.9 + _one_if_int(i)
    return x


def _do_not_convert_append(x):
    for i in range(TRIPS):
        _remember(i)
        x = x * 0.9 + 1.0
    return x


@pytest.mark.parametrize("fn", [_do_not_convert_weight, _do_not_convert_isinstance,
                                _do_not_convert_append],
                         ids=["float(i % 3 == 0)", "isinstance(i, int)", "appends i"])
def test_index_to_do_not_convert_function(fn):
    def observe():
        return [(type(i).__name__, i) for i in INDICES]

    _assert_same_as_jit(fn, jnp.asarray(X0), reset=INDICES.clear, observe=observe)


def _scale_for(i):
    if isinstance(i, int):
        return 1.0
    return -3.0


def _scale_for_first(t):
    if isinstance(t[0], int):
        return 1.0
    return -3.0


def _isinstance_direct(x):
    for i in range(TRIPS):
        x = x * 0.9 + _scale_for(i)
    return x


def _isinstance_in_tuple(x):
    for i in range(TRIPS):
        x = x * 0.9 + _scale_for_first((i,))
    return x


@pytest.mark.parametrize("fn", [_isinstance_direct, _isinstance_in_tuple],
                         ids=["the index", "the index in a tuple"])
def test_index_isinstance_int_in_helper(fn):
    _assert_same_as_jit(fn, jnp.asarray(X0), reset=lambda: None, observe=lambda: None)


def _as_int(i):
    try:
        return int(i)
    except Exception:  # noqa: BLE001 - a traced index lands here
        return -100


def _first_as_int(t):
    try:
        return int(t[0])
    except Exception:  # noqa: BLE001 - a traced index lands here
        return -100


def _try_int_direct(x):
    for i in range(TRIPS):
        x = x * 0.9 + _as_int(i) * 0.01
    return x


def _try_int_in_list(x):
    for i in range(TRIPS):
        x = x * 0.9 + _first_as_int([i]) * 0.01
    return x


@pytest.mark.parametrize("fn", [_try_int_direct, _try_int_in_list],
                         ids=["the index", "the index in a list"])
def test_index_int_inside_try_in_helper(fn):
    _assert_same_as_jit(fn, jnp.asarray(X0), reset=lambda: None, observe=lambda: None)


# ---------------------------------------------------------------------------
# 8. A carried Python int counter used after the loop.

NOTES = []


def _counter_as_shape(x):
    n = 0
    for i in range(TRIPS + 5):
        x = x * 0.9 + 1.0
        n += 1
    return x, jnp.zeros(n)


def _counter_in_fstring(x):
    n = 0
    for i in range(TRIPS + 5):
        x = x * 0.9 + 1.0
        n += 1
    NOTES.append(f"{n} steps")
    return x


@pytest.mark.parametrize("fn", [_counter_as_shape, _counter_in_fstring],
                         ids=["jnp.zeros(n)", "f-string"])
def test_carried_python_int_counter(fn):
    value = _assert_same_as_jit(fn, jnp.asarray(X0), reset=NOTES.clear,
                                observe=lambda: list(NOTES))
    if fn is _counter_as_shape:
        assert value[1].shape == (TRIPS + 5,)
    else:
        assert NOTES == [f"{TRIPS + 5} steps"]


# ---------------------------------------------------------------------------
# POSITIVE TESTS: staging nothing can see still stages, as one `scan`.

def _assert_one_scan(fn, x):
    text = str(jax.make_jaxpr(autograph.convert(fn))(x))
    assert "scan" in text
    assert len(text.splitlines()) < 200, "the loop was unrolled"


def _pure_arithmetic(x):
    for i in range(1000):
        x = x * 0.99 + jnp.sin(x) + i * 0.001
    return x


def step(x, i):
    return x + jnp.cos(x) * 0.01 + i


def _pure_helper(x):
    for i in range(1000):
        x = step(x, i)
    return x


@pytest.mark.parametrize("fn", [_pure_arithmetic, _pure_helper],
                         ids=["arithmetic with the index", "pure module-level helper"])
def test_positive_pure_loop_still_staged(fn):
    x = jnp.asarray(X0)
    _assert_one_scan(fn, x)
    want = jax.jit(fn)(x)
    got = jax.jit(autograph.convert(fn))(x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
