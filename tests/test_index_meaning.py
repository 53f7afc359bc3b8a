"""A loop over a static range is staged only where its index means what Python says.

Each program is run three ways: plain Python with concrete values, plain
``jax.jit`` (which unrolls the Python loop), and ``jax.jit(autograph.convert)``.
The converted one must agree with both, or raise what they raise. The
programs that still stage are checked to stage (a ``scan`` in the jaxpr).
"""

import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph

P = {f"w{i}": float(i) for i in range(20)}
M = types.SimpleNamespace(**P)
W = jnp.arange(40.0)


def by_formatted_key(x):
    for i in range(20):
        x = x + P.get(f"w{i}", 0.0)
    return x


def by_key_in_try(x):
    for i in range(20):
        try:
            w = P[f"w{i}"]
        except KeyError:
            w = 0.0
        x = x + w
    return x


def by_membership(x):
    for i in range(20):
        if f"w{i}" in P:
            x = x + 1.0
    return x


def by_getattr(x):
    for i in range(20):
        x = x + getattr(M, f"w{i}", 0.0)
    return x


def by_isinstance(x):
    for i in range(20):
        if isinstance(i, int):
            x = x + 1.0
    return x


def by_str(x):
    for i in range(20):
        if str(i) == "3":
            x = x + 100.0
    return x


def by_str_format(x):
    for i in range(20):
        x = x + P.get("w{}".format(i), 0.0)
    return x


def by_percent(x):
    for i in range(20):
        x = x + P.get("w%d" % i, 0.0)
    return x


def by_derived_name(x):
    for i in range(20):
        j = 2 * i + 1
        x = x + P.get(f"w{j}", -1.0)
    return x


ZERO = 0


def by_aliases_of_the_index(x):
    for i in range(20):
        j = i
        k = j
        pair = (k, 0)
        box = {"k": pair[0]}
        x = x + P.get(f"w{box['k']}", 0.0)
    return x


def by_is(x):
    for i in range(20):
        if i is ZERO:
            x = x + 5.0
    return x


def by_int_method(x):
    for i in range(20):
        x = x + i.bit_length()
    return x


def by_item_formatted(x):
    for row in np.arange(20.0):
        x = x + P.get(f"w{int(row)}", 0.0)
    return x


def by_enumerate_counter(x):
    for k, row in enumerate(jnp.ones(20)):
        x = x + row * P.get(f"w{k}", 0.0)
    return x


def temporary_past_int32(x):
    for i in range(20):
        x = x + i ** 8 * 1.0
    return x


def index_past_int32(x):
    for i in range(2 ** 31 - 10, 2 ** 31 + 10):
        x = x + i * 1.0
    return x


def negative_power(x):
    for i in range(20):
        x = x + 2 ** -i
    return x


def shifted_past_int32(x):
    for i in range(40):
        x = x + (1 << i) * 1.0
    return x


def floor_divide_by_zero(x):
    for i in range(20):
        x = x + 10 // (i - 5)
    return x


def modulo_by_zero(x):
    for i in range(20):
        x = x + 10 % (i - 5)
    return x


def true_divide_by_zero(x):
    for i in range(20):
        x = x + 1 / (i - 5)
    return x


def zero_divisor_in_inner_branch(x):
    for i in range(20):
        if i != 5:
            x = x + 10 // (i - 5)
    return x


CHANGED_MEANING = [by_formatted_key, by_key_in_try, by_membership, by_getattr, by_isinstance,
                   by_str, by_str_format, by_percent, by_derived_name, by_aliases_of_the_index,
                   by_is, by_int_method,
                   by_item_formatted, by_enumerate_counter, temporary_past_int32,
                   index_past_int32, negative_power, shifted_past_int32,
                   floor_divide_by_zero, modulo_by_zero, true_divide_by_zero,
                   zero_divisor_in_inner_branch]


def _outcome(fn, x):
    try:
        return np.asarray(fn(x))
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return type(e)


@pytest.mark.parametrize("fn", CHANGED_MEANING, ids=lambda f: f.__name__)
@pytest.mark.parametrize("start", [0.0, -3.5])
def test_converted_loop_keeps_python_meaning_of_its_index(fn, start):
    x = jnp.float32(start)
    expected = _outcome(jax.jit(fn), x)
    assert _outcome(fn, jnp.float32(start)) is expected or np.allclose(
        _outcome(fn, jnp.float32(start)), expected, rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _outcome(jax.jit(autograph.convert(fn)), x)
        eager = _outcome(autograph.convert(fn), x)
    for out in (got, eager):
        if isinstance(expected, type):
            assert out is expected
        else:
            np.testing.assert_allclose(out, expected, rtol=1e-6)


def _stages(fn, *args) -> bool:
    return "scan" in str(jax.make_jaxpr(autograph.convert(fn))(*args))


def numeric_index(x):
    for i in range(40):
        x = x + W[i] * i - (i // 3) + (i % 7) * 0.5 + 2.0 ** -i + abs(i - 20)
    return x


def index_in_array_methods(x):
    for i in range(40):
        x = (x + i).sum() + jnp.float32(i) ** 2
    return x


def index_in_printed_message(x):
    for i in range(40):
        x = x + i
        print(f"step {i}")
    return x


def index_through_a_random_key(x):
    key = jax.random.PRNGKey(0)
    for i in range(40):
        x = x + jax.random.uniform(jax.random.fold_in(key, i))
    return x


def index_in_a_bounded_division(x):
    for i in range(40):
        x = x + 100 // (i + 1) + 7 % (i + 3)
    return x


STILL_STAGED = [numeric_index, index_in_array_methods, index_through_a_random_key,
                index_in_a_bounded_division]


@pytest.mark.parametrize("fn", STILL_STAGED, ids=lambda f: f.__name__)
def test_loops_whose_index_keeps_its_meaning_still_stage(fn):
    x = jnp.float32(1.5)
    assert _stages(fn, x)
    np.testing.assert_allclose(jax.jit(autograph.convert(fn))(x), jax.jit(fn)(x), rtol=2e-6)


def test_a_printed_index_stages_and_prints_each_step(capfd):
    x = jnp.float32(0.0)
    assert _stages(index_in_printed_message, x)
    out = jax.jit(autograph.convert(index_in_printed_message))(x)
    jax.effects_barrier()
    assert float(out) == sum(range(40))
    printed = capfd.readouterr().out.splitlines()
    assert printed[-40:] == [f"step {i}" for i in range(40)]


@pytest.mark.parametrize("fn", [by_formatted_key, negative_power, floor_divide_by_zero],
                         ids=lambda f: f.__name__)
def test_such_loops_do_not_stage(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            jaxpr = str(jax.make_jaxpr(autograph.convert(fn))(jnp.float32(0.0)))
        except ZeroDivisionError:
            return  # run as Python, which raises as Python does
    assert "scan" not in jaxpr and "while" not in jaxpr


def test_a_long_loop_run_for_its_index_warns_once_with_the_reason():
    def long_formatted(x):
        for i in range(300):
            x = x + P.get(f"w{i}", 0.0)
        return x

    with pytest.warns(UserWarning, match=r"300 iterations runs unrolled.*`i` is formatted"):
        out = jax.jit(autograph.convert(long_formatted))(jnp.float32(0.0))
    assert float(out) == sum(range(20))


def test_explain_says_why_a_loop_runs_as_python():
    import inspect

    from autograph import explain, parsing

    parsed = parsing.parse_function(by_formatted_key)
    source = "".join(inspect.findsource(by_formatted_key)[0])
    text = explain.render(explain.explain_function(parsed.node, "by_formatted_key",
                                                   parsed.filename, source))
    assert "`i` is formatted into a string" in " ".join(text.split())


def weight_of(i):
    return P.get(f"w{i}", 0.0)


def scaled(x, k):
    return x * 2.0 + k


def by_a_helper_formatting_its_parameter(x):
    for i in range(20):
        x = x + weight_of(i)
    return x


def by_a_numeric_helper(x):
    for i in range(40):
        x = scaled(x, i) * 0.5
    return x


def test_a_helper_that_formats_the_index_makes_the_loop_run_as_python():
    x = jnp.float32(1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = jax.jit(autograph.convert(by_a_helper_formatting_its_parameter))(x)
    assert float(got) == float(jax.jit(by_a_helper_formatting_its_parameter)(x)) == 191.0
    assert not _stages(by_a_helper_formatting_its_parameter, x)


def test_a_numeric_helper_given_the_index_still_stages():
    x = jnp.float32(1.0)
    assert _stages(by_a_numeric_helper, x)
    np.testing.assert_allclose(jax.jit(autograph.convert(by_a_numeric_helper))(x),
                               jax.jit(by_a_numeric_helper)(x), rtol=1e-6)


def counter_as_a_shape(x):
    n = 0
    for i in range(20):
        n += 1
        x = x + 1.0
    return jnp.zeros(n) + x


def counters_after_the_loop(x):
    n, m, fact = 0, 5, 1
    for i in range(30):
        n += 2
        m = m * 3 % 7 + i
        if i < 10:
            fact *= 2
        x = x + 1.0
    return jnp.zeros(n) + jnp.ones(m).sum() + fact + x


def counter_formatted_in_the_body(x):
    n = 0
    for i in range(20):
        n += 1
        x = x + P.get(f"w{n}", 0.0)
    return x


def concrete_array_counter_formatted(x):
    n = jnp.int32(0)
    for i in range(20):
        n = n + 1
        x = x + P.get(f"w{n}", 0.0)
    return x


def counter_that_meets_an_array(x):
    n = 0
    for i in range(30):
        n = n + (x > 0).astype(jnp.int32)
        x = x - 1.0
    return x + n


@pytest.mark.parametrize("fn", [counter_as_a_shape, counters_after_the_loop,
                                counter_formatted_in_the_body,
                                concrete_array_counter_formatted, counter_that_meets_an_array],
                         ids=lambda f: f.__name__)
@pytest.mark.parametrize("start", [2.0, -4.0])
def test_python_numbers_a_staged_loop_carries_keep_their_meaning(fn, start):
    x = jnp.float32(start)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = jax.jit(autograph.convert(fn))(x)
    np.testing.assert_allclose(got, jax.jit(fn)(x), rtol=1e-6)


def test_an_exact_counter_does_not_stop_the_loop_staging():
    assert _stages(counter_as_a_shape, jnp.float32(1.0))
    assert not _stages(counter_formatted_in_the_body, jnp.float32(1.0))


def while_formatting_its_counter(x):
    n = 0
    while x < 10.0:
        n += 1
        x = x + P.get(f"w{n}", 0.0)
    return x


def while_printing_its_counter(x):
    n = 0
    while x < 10.0:
        n += 1
        x = x + 1.0
        print(f"step {n}")
    return x


def test_a_staged_while_refuses_to_format_a_python_number_it_carries():
    assert float(autograph.convert(while_formatting_its_counter)(1.0)) == 11.0  # Python
    with pytest.raises(autograph.LoopStateError, match=r"`n` is formatted into a string") as e:
        jax.jit(autograph.convert(while_formatting_its_counter))(1.0)
    assert "test_index_meaning.py" in str(e.value)


class _Steps:
    def __init__(self):
        self.n = 0


def attribute_counter_formatted(x):
    steps = _Steps()
    for _ in range(3):
        steps.n += 1
        x = x + P[f"w{steps.n}"]
    return x


def while_formatting_an_attribute(x):
    steps = _Steps()
    while x < 10.0:
        steps.n += 1
        x = x + P.get(f"w{steps.n}", 0.0)
    return x


STEPS = _Steps()


def while_formatting_a_global_attribute(x):
    while x < 10.0:
        STEPS.n += 1
        x = x + P.get(f"w{STEPS.n}", 0.0)
    return x


def test_an_attribute_a_loop_formats_keeps_its_meaning():
    # `steps` is a free variable of the loop's body; `steps.n` starts as a Python int
    x = jnp.float32(1.0)
    assert not _stages(attribute_counter_formatted, x)
    assert float(jax.jit(autograph.convert(attribute_counter_formatted))(x)) == 7.0


def test_a_staged_while_refuses_to_format_an_attribute_it_carries():
    assert float(autograph.convert(while_formatting_an_attribute)(1.0)) == 11.0  # Python
    with pytest.raises(autograph.LoopStateError, match=r"`steps\.n` is formatted") as e:
        jax.jit(autograph.convert(while_formatting_an_attribute))(1.0)
    assert "variable: steps.n" in str(e.value)
    STEPS.n = 0  # an object the function reaches as a global: its chain is checked too
    with pytest.raises(autograph.LoopStateError, match=r"`STEPS\.n` is formatted"):
        jax.jit(autograph.convert(while_formatting_a_global_attribute))(1.0)


def test_a_staged_while_may_print_the_number(capfd):
    out = jax.jit(autograph.convert(while_printing_its_counter))(7.5)
    jax.effects_barrier()
    assert float(out) == 10.5
    assert capfd.readouterr().out.split() == ["step", "1", "step", "2", "step", "3"]


LOG = []


def _note(value):
    LOG.append(value)
    return value


def helper_effect_in_traced_range(x, n):
    LOG.clear()
    for i in range(n):
        _note(x)
    return x, len(LOG)


def test_a_traced_range_whose_body_changes_outside_state_is_refused():
    with pytest.raises(autograph.LoopStateError, match=r"`LOG`"):
        jax.jit(autograph.convert(helper_effect_in_traced_range))(1.5, jnp.int32(3))
    assert autograph.convert(helper_effect_in_traced_range)(1.5, 3) == (1.5, 3)
