"""The staging proof and code Python runs without a call in the source.

A static loop of more than `loop_plan.PYTHON_TRIPS` iterations is staged only
when staging it is provably invisible (`tests/test_staging_proof.py`). These
programs hide their effects where no call is written: a truth test runs
`__bool__`, `in` runs `__contains__`, a dict lookup `__hash__` and `__eq__`, a
format `__format__` or a property, a module's attribute its `__getattr__`, a
class subscript its `__class_getitem__`, and a built-in handed to `map` or
`jax.tree.map` runs as a callback. Others hide a change of meaning: a float the
index makes compared in float64 (Python) or float32 (staged), items of a NumPy
float64 or int64 array, the global NumPy generator, three-argument `pow`.

Each runs eagerly, under plain `jax.jit` and under `jax.jit(autograph.convert(f))`;
the converted run must equal plain `jax.jit` in value and in what the trace
leaves behind. The last section checks that objects whose special methods are
Python's own still let a loop stage.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from tests.test_staging_proof import TRIPS, _assert_same_as_jit

CALLS: list = []


def _same(fn, *args):
    return _assert_same_as_jit(fn, *args, reset=CALLS.clear, observe=lambda: list(CALLS))


class Flag:
    def __bool__(self):
        CALLS.append("bool")
        return True

    def __contains__(self, k):
        CALLS.append("contains")
        return True


FLAG = Flag()


class Key:
    def __hash__(self):
        CALLS.append("hash")
        return 1

    def __eq__(self, other):
        CALLS.append("eq")
        return False


KEY = Key()
TABLE = {1: 2.0}
ITEMS = [1, 2, 3]


class Shown:
    def __format__(self, spec):
        CALLS.append("format")
        return "p"

    @property
    def v(self):
        CALLS.append("property")
        return 1.0


SHOWN = Shown()

LAZY = types.ModuleType("lazy_settings")
LAZY.__getattr__ = lambda name: (CALLS.append(name), 1.0)[1]


class Registry:
    def __class_getitem__(cls, key):
        CALLS.append(key)
        return cls


class Recorder:
    def __call__(self, *a):
        CALLS.append("called")
        return 0


RECORD = Recorder()


class Bag:
    def __len__(self):
        CALLS.append("len")
        return 2

    def __iter__(self):
        CALLS.append("iter")
        return iter([1.0, 2.0])


BAG, OTHER_BAG = Bag(), Bag()
CHOOSE = True


def if_object(x):
    for i in range(TRIPS):
        if FLAG:
            x = x + 1.0
    return x


def not_object(x):
    for i in range(TRIPS):
        x = x + 1.0
        h = not FLAG  # noqa: F841
    return x


def and_object(x):
    for i in range(TRIPS):
        if i > 5 and FLAG:
            x = x + 1.0
    return x


def in_object(x):
    for i in range(TRIPS):
        x = x + 1.0
        h = 3 in FLAG  # noqa: F841
    return x


def dict_get_of_object(x):
    for i in range(TRIPS):
        x = x + TABLE.get(KEY, 1.0)
    return x


def list_count_of_object(x):
    for i in range(TRIPS):
        x = x + ITEMS.count(KEY)
    return x


def dict_display_of_object(x):
    for i in range(TRIPS):
        d = {KEY: 1.0}  # noqa: F841
        x = x + 1.0
    return x


def format_of_object(x):
    for i in range(TRIPS):
        s = "{}".format(SHOWN)
        x = x + len(s)
    return x


def property_in_a_format(x):
    for i in range(TRIPS):
        s = "{0.v}".format(SHOWN)  # noqa: F841
        x = x + 1.0
    return x


def module_getattr(x):
    for i in range(TRIPS):
        x = x + LAZY.scale
    return x


def class_getitem(x):
    for i in range(TRIPS):
        t = Registry["k"]  # noqa: F841
        x = x + 1.0
    return x


def object_handed_to_map(x):
    for i in range(TRIPS):
        x = x + 1.0
        any(map(RECORD, [1]))
    return x


def object_handed_to_tree_map(x):
    for i in range(TRIPS):
        x = x + 1.0
        jax.tree.map(RECORD, (1.0,))
    return x


def builtin_method_handed_to_sorted(x):
    for i in range(TRIPS):
        x = x + 1.0
        sorted([1], key=CALLS.append)
    return x


def len_of_one_of_two_objects(x):
    for i in range(TRIPS):
        b = BAG if CHOOSE else OTHER_BAG
        x = x + len(b)
    return x


def unpacked_from_one_of_two_objects(x):
    for i in range(TRIPS):
        a, c = BAG if CHOOSE else OTHER_BAG
        x = x + a
    return x


class Noisy:
    def __radd__(self, other):
        CALLS.append("radd")
        return other + 0.5

    def __rmul__(self, other):
        CALLS.append("rmul")
        return other * 0.5


NOISY = Noisy()


def augmented_with_an_object(x):
    for i in range(TRIPS):
        x += NOISY
    return x


@dataclasses.dataclass
class Settings:
    v: float = 1.0

    def __bool__(self):
        CALLS.append("bool")
        return True

    @property
    def scaled(self):
        CALLS.append("property")
        return self.v * 2.0


SETTINGS = Settings()
BY_NAME = {"k": SETTINGS}


def dataclass_tested_for_truth(x):
    for i in range(TRIPS):
        if SETTINGS:
            x = x * 0.5 + 1.0
    return x


def property_of_a_dict_item(x):
    for i in range(TRIPS):
        x = x * 0.5 + BY_NAME.get("k").scaled
    return x


@dataclasses.dataclass
class Layer:
    w: float

    def apply(self, x):
        CALLS.append("apply")
        return x * self.w


LAYERS = [Layer(0.5), Layer(0.9)]


def method_of_a_list_item(x):
    for i in range(TRIPS):
        for layer in LAYERS:
            x = layer.apply(x)
        x = x + 1.0
    return x


def _recorded_step(x):
    CALLS.append("step")
    return x * 0.5


PARTIAL_STEP = jax.tree_util.Partial(_recorded_step)


def jax_partial_of_a_helper(x):
    for i in range(TRIPS):
        x = PARTIAL_STEP(x) + 1.0
    return x


class AsArray:
    def __jax_array__(self):
        CALLS.append("jax_array")
        return jnp.float32(1.0)


AS_ARRAY = AsArray()


def object_handed_to_jnp(x):
    for i in range(TRIPS):
        x = x * 0.5 + jnp.asarray(AS_ARRAY)
    return x


class Meta(type):
    def __instancecheck__(cls, obj):
        CALLS.append("instancecheck")
        return True


class Checked(metaclass=Meta):
    pass


def isinstance_with_a_metaclass(x):
    for i in range(TRIPS):
        if isinstance(x, Checked):
            x = x * 0.5
        x = x + 1.0
    return x


def _scaler(s):
    def g(x):
        return x * s
    return g


BY_HALF, BY_NOISY = _scaler(0.5), _scaler(NOISY)


def two_closures_of_one_function(x):
    for i in range(TRIPS):
        x = BY_HALF(x)
        x = BY_NOISY(x) + 1.0
    return x


class Key2(Key):
    def __index__(self):
        CALLS.append("index")
        return 0


KEY2 = Key2()
WEIGHTS = [0.5, 0.25]


def object_as_a_key_and_an_index(x):
    for i in range(TRIPS):
        x = x + TABLE.get(1, 0.0) * WEIGHTS[KEY2]
    return x


class Counted:
    def __index__(self):
        CALLS.append("index")
        return 3

    def __jax_array__(self):
        CALLS.append("jax_array")
        return jnp.float32(1.0)

    def __iter__(self):
        CALLS.append("iter")
        return iter([1.0, 2.0])


COUNTED = Counted()


class LazyMeta(type):
    def __getattr__(cls, name):
        CALLS.append(name)
        return 1.0


class Lazy(metaclass=LazyMeta):
    pass


def hex_of_an_object(x):
    for i in range(TRIPS):
        x = x + int(hex(COUNTED), 16)
    return x


def getattr_through_a_metaclass(x):
    for i in range(TRIPS):
        x = x + getattr(Lazy, "w")  # noqa: B009 - the built-in is what is checked
    return x


def object_added_at_an_index(x):
    y = jnp.stack([x, x])
    for i in range(TRIPS):
        y = y.at[0].add(COUNTED)
    return y[0]


def nested_loop_over_an_object(x):
    for i in range(TRIPS):
        for v in COUNTED:
            x = x + v
    return x


def default_argument_holding_an_object(x):
    for i in range(TRIPS):
        def first(o=COUNTED):
            return list(o)[0]
        x = x + first()
    return x


class _Recorded(collections.namedtuple("_Recorded", "a")):
    def __new__(cls, a):
        CALLS.append("new")
        return super().__new__(cls, a)


class RecordedChild(_Recorded):
    pass


@dataclasses.dataclass
class SetsLoudly:
    a: float

    def __setattr__(self, name, value):
        CALLS.append("setattr")
        object.__setattr__(self, name, value)


def constructs_a_namedtuple_with_an_inherited_new(x):
    for i in range(TRIPS):
        x = x + RecordedChild(1.0).a
    return x


def constructs_a_dataclass_with_its_own_setattr(x):
    for i in range(TRIPS):
        x = x + SetsLoudly(1.0).a
    return x


def lambda_with_an_object_default(x):
    for i in range(TRIPS):
        x = (lambda a, o=NOISY: a + o)(x)
    return x


@pytest.mark.parametrize("fn", [
    len_of_one_of_two_objects, unpacked_from_one_of_two_objects, augmented_with_an_object,
    dataclass_tested_for_truth, property_of_a_dict_item, method_of_a_list_item,
    jax_partial_of_a_helper, object_handed_to_jnp, isinstance_with_a_metaclass,
    two_closures_of_one_function, object_as_a_key_and_an_index, hex_of_an_object,
    getattr_through_a_metaclass, object_added_at_an_index, nested_loop_over_an_object,
    default_argument_holding_an_object, constructs_a_namedtuple_with_an_inherited_new,
    constructs_a_dataclass_with_its_own_setattr, lambda_with_an_object_default, if_object, not_object, and_object, in_object, dict_get_of_object, list_count_of_object,
    dict_display_of_object, format_of_object, property_in_a_format, module_getattr,
    class_getitem, object_handed_to_map, object_handed_to_tree_map,
    builtin_method_handed_to_sorted])
def test_code_python_runs_implicitly_runs_every_iteration(fn):
    _same(fn, jnp.zeros(()))
    CALLS.clear()
    jax.jit(autograph.convert(fn))(jnp.zeros(()))
    assert len(CALLS) >= TRIPS - 6, CALLS  # once an iteration (`and` skips six)


def prints_python_values_only(x):
    for i in range(TRIPS):
        x = x + 1.0
        print("step")
    return x


def test_a_print_of_python_values_only_prints_while_tracing(capsys):
    f = jax.jit(autograph.convert(prints_python_values_only))
    for _ in range(3):
        jax.block_until_ready(f(jnp.zeros(())))
    jax.effects_barrier()
    assert capsys.readouterr().out.count("step") == TRIPS  # as `jax.jit`: one trace


# ---------------------------------------------------------------------------
# numbers whose meaning staging would change

def float_of_index_compared(x):
    for i in range(TRIPS):
        if i * 0.1 > 0.3:  # 3 * 0.1 > 0.3 in float64, not in float32
            x = x + 1.0
    return x


def float_of_index_compared_in_a_helper(x):
    for i in range(TRIPS):
        x = x + _above(i * 0.1, 0.3)
    return x


def _above(a, b):
    return 1.0 if a > b else 0.0


def float_of_index_through_max(x):
    for i in range(TRIPS):
        x = x + (max(i * 0.1, 0.3) == 0.3)  # a comparison whose steps are not followed
    return x


def float64_items_compared(x):
    for v in np.arange(TRIPS) * 0.1:
        if v > 0.3:
            x = x + 1.0
    return x


def float64_items_in_arithmetic(x):
    for v in np.linspace(0.1, 3.0, TRIPS):
        x = x + v * v * v / (1.0 + v)
    return x


def int64_items_divided(x):
    for k in np.arange(TRIPS):
        if k / 3 * 3 != k:  # NumPy: float64 division
            x = x + 1.0
    return x


def modular_power_of_index(x):
    for i in range(TRIPS):
        x = x + pow(i, 2, 7)
    return x


class Offset:
    def __radd__(self, other):
        return other * 2 if isinstance(other, int) else other * 3


OFFSET = Offset()
FORMAT = "w%s"


def index_plus_an_object_that_tests_for_int(x):
    for i in range(TRIPS):
        k = i
        k += OFFSET
        x = x + k
    return x


def index_formatted_by_a_string_in_a_name(x):
    for i in range(TRIPS):
        x = x + len(FORMAT % i)
    return x


def _class_of(k):
    return 1.0 if k.__class__ is int else 2.0


def class_of_the_index(x):
    for i in range(TRIPS):
        x = x * 0.5 + _class_of(i)
    return x


PARAMS = {"w0": 1.0, "w1": 2.0, "w2": 3.0}


def _weight(k, default):
    v = PARAMS.get(f"w{k}")
    return v if v is not None else default


WEIGHT = functools.partial(_weight, default=0.0)


def partial_with_a_keyword_given_the_index(x):
    for i in range(TRIPS):
        x = x + WEIGHT(i % 3)
    return x


def _is_on(flag):
    return flag is True


def identity_of_a_bool_of_the_index(x):
    for i in range(TRIPS):
        if _is_on(i % 2 == 0):
            x = x + 1.0
    return x


def float16_of_a_float_of_the_index(x):
    for i in range(TRIPS):
        x = x + jnp.asarray(i * 0.1, dtype=jnp.float16)  # rounded to float16, then added
    return x


def builtin_power_of_the_index(x):
    for i in range(TRIPS):
        x = x * 0.5 + pow(x, i % 3) * 0.01
    return x


def power_of_a_counted_int(x):
    n = 0
    acc = x * 0.0
    for i in range(TRIPS):
        n += 1
        acc = acc + (x * 0.1) ** (n % 4)
    return acc


def _layer_id(i):
    return i * 10


def index_formatted_through_a_helper(x):
    for i in range(TRIPS):
        name = "layer_{}".format(_layer_id(i))
        x = x + len(name)
    return x


def break_on_a_float_of_the_index(x):
    for i in range(TRIPS):
        if i * 0.1 > 0.3:
            break
        x = x + 1.0
    return x


def divmod_of_a_float_of_the_index(x):
    for i in range(TRIPS):
        x = x + divmod(i * 0.7, 0.1)[0]
    return x


def local_function_whose_parameter_is_named_like_the_state(x):
    for i in range(TRIPS):
        def width(x):
            return len(str(x))
        x = x + width(i)
    return x


@pytest.mark.parametrize("fn", [float_of_index_compared, float_of_index_compared_in_a_helper,
                                float_of_index_through_max,
                                index_plus_an_object_that_tests_for_int,
                                index_formatted_by_a_string_in_a_name, class_of_the_index,
                                partial_with_a_keyword_given_the_index,
                                identity_of_a_bool_of_the_index,
                                float16_of_a_float_of_the_index, builtin_power_of_the_index,
                                power_of_a_counted_int, index_formatted_through_a_helper,
                                break_on_a_float_of_the_index, divmod_of_a_float_of_the_index,
                                local_function_whose_parameter_is_named_like_the_state,
                                float64_items_compared, float64_items_in_arithmetic,
                                int64_items_divided, modular_power_of_index])
def test_numbers_keep_their_python_meaning(fn):
    x = jnp.float32(1.3)
    got = jax.jit(autograph.convert(fn))(x)
    want = jax.jit(fn)(x)
    assert float(got) == float(want) == pytest.approx(float(fn(x)), rel=1e-6)


def draws_from_numpys_global_generator(x):
    for i in range(TRIPS):
        x = x + np.random.rand()
    return x


def test_numpys_global_generator_draws_every_iteration():
    def run(f):
        np.random.seed(0)
        value = float(f(jnp.zeros(())))
        return value, np.random.rand()
    assert run(jax.jit(autograph.convert(draws_from_numpys_global_generator))) == run(
        jax.jit(draws_from_numpys_global_generator))


# ---------------------------------------------------------------------------
# POSITIVE: objects with Python's own special methods still let the loop stage

class Plain:
    scale = 0.5


PLAIN = Plain()


def truth_of_a_plain_object(x):
    for i in range(1000):
        if PLAIN and not PLAIN.scale < 0:
            x = x * 0.99 + PLAIN.scale * 0.001
    return x


def float32_items(x):
    for v in np.linspace(0.0, 1.0, 1000, dtype=np.float32):
        x = x * 0.99 + v
    return x


@pytest.mark.parametrize("fn", [truth_of_a_plain_object, float32_items])
def test_plain_objects_and_float32_items_still_stage(fn):
    text = str(jax.make_jaxpr(autograph.convert(fn))(jnp.zeros(())))
    assert "scan" in text and len(text.splitlines()) < 200, "the loop was unrolled"
    np.testing.assert_allclose(jax.jit(autograph.convert(fn))(jnp.zeros(())),
                               jax.jit(fn)(jnp.zeros(())), rtol=1e-5)


# ---------------------------------------------------------------------------
# values the staged loop is given as Python computes them, where `jax.jit` does so

SCALE_16 = 1 + 2 ** -11 + 2 ** -40


def float16_set_from_a_float_of_the_index(y):
    for i in range(TRIPS):
        y = y.at[i].set(i * SCALE_16)  # rounded once, from float64 to float16
    return y


def sine_of_a_float_of_the_index(y):
    for i in range(TRIPS):
        y = y.at[i].set(jnp.sin(i * 0.37))  # float32 `sin` of the rounded float
    return y


def test_a_float_of_the_index_meets_a_float16_array_rounded_once():
    y = jnp.zeros(TRIPS, jnp.float16)
    got = jax.jit(autograph.convert(float16_set_from_a_float_of_the_index))(y)
    np.testing.assert_array_equal(got, jax.jit(float16_set_from_a_float_of_the_index)(y))


def test_a_jnp_function_of_a_float_of_the_index_is_float32_as_eagerly():
    y = jnp.zeros(TRIPS, jnp.float32)
    got = jax.jit(autograph.convert(sine_of_a_float_of_the_index))(y)
    np.testing.assert_array_equal(got, sine_of_a_float_of_the_index(y))  # eager JAX


def test_a_name_holding_a_numpy_array_rebound_in_the_body_is_proven():
    weights = np.array([1.0, 2.0, 3.0], np.float32)

    def scaled(x):
        for i in range(TRIPS):
            w = weights
            w = w * 0.5
            x = x * 0.9 + jnp.sum(w) * 0.01
        return x

    text = str(jax.make_jaxpr(autograph.convert(scaled))(jnp.float32(1.0)))
    assert "scan" in text  # the proof compared abstract values with `==` of the array


def first_past_a_float_of_the_index(x):
    for i in range(2000):
        if x > i * 0.1:
            continue
        return i
    return -1


def test_a_long_loop_with_a_traced_exit_says_it_computes_floats_of_the_index_in_float32():
    # too long to unroll, and its exit is traced: staged, with a warning naming the line
    with pytest.warns(UserWarning, match=r"test_staging_proof_implicit\.py:\d+: this `for` "
                                         r"loop, which may stop early, is staged though"):
        got = jax.jit(autograph.convert(first_past_a_float_of_the_index))(jnp.float32(5.05))
    assert int(got) == first_past_a_float_of_the_index(5.05)


# -- round 6: values the index chooses through control flow, Python errors, NumPy's `+=`

def count_of_an_inner_loop_formatted(x):
    for i in range(TRIPS):
        n = 0
        for j in range(i % 4):  # staged: a loop of traced length, `n` traced
            n += 1
        x = x + len(str(n))
    return x


def float_summed_by_an_inner_loop(x):
    for i in range(TRIPS):
        s = 0.0
        for j in range(i):  # Python sums in float64
            s = s + 0.1
        x = x + s
    return x


def power_counted_by_an_inner_while(x):
    for i in range(TRIPS + 20):
        p, j = 1, 0
        while j < i:  # past int32 for i > 19: exact in Python
            p = p * 3
            j += 1
        x = x + p % 1000
    return x


def _pick(k):
    if k > 5:
        return 1
    return 2


def _summed(k):
    s = 0.0
    for j in range(k):
        s = s + 0.1
    return s


def helper_returning_by_a_test_of_the_index(x):
    for i in range(TRIPS):
        x = x + len(str(_pick(i)))
    return x


def helper_summing_a_float_in_a_loop_of_the_index(x):
    for i in range(TRIPS):
        x = x + _summed(i)
    return x


def shift_by_a_count_that_turns_negative(x):
    try:
        for i in range(TRIPS + 10):
            x = x + (1024 >> (20 - i))  # i = 21: ValueError, negative shift count
    except ValueError:
        x = x - 1000
    return x


def divmod_by_a_value_that_reaches_zero(x):
    try:
        for i in range(TRIPS + 20):
            x = x + divmod(100, i - 30)[0]  # i = 30: ZeroDivisionError
    except ZeroDivisionError:
        x = x - 1000
    return x


@pytest.mark.parametrize("fn", [count_of_an_inner_loop_formatted, float_summed_by_an_inner_loop,
                                power_counted_by_an_inner_while,
                                helper_returning_by_a_test_of_the_index,
                                helper_summing_a_float_in_a_loop_of_the_index,
                                shift_by_a_count_that_turns_negative,
                                divmod_by_a_value_that_reaches_zero])
def test_values_the_index_chooses_through_control_flow_keep_their_python_meaning(fn):
    x = jnp.float32(1.3)
    want = jax.jit(fn)(x)
    assert float(jax.jit(autograph.convert(fn))(x)) == float(want)


NUMBERS = np.zeros(3)


def adds_the_index_into_a_numpy_array_in_place(x):
    for i in range(TRIPS):
        a = NUMBERS
        a += i  # NumPy adds a Python int in place; a traced one makes a new array
        x = x + 1.0
    return x


def test_an_in_place_add_of_the_index_into_a_numpy_array_runs_every_iteration():
    def run(f):
        NUMBERS[:] = 0
        return float(f(jnp.float32(0.0))), NUMBERS.tolist()
    assert run(jax.jit(autograph.convert(adds_the_index_into_a_numpy_array_in_place))) == run(
        jax.jit(adds_the_index_into_a_numpy_array_in_place))


def inner_loop_of_the_index_over_arrays(x, w):
    for i in range(TRIPS):
        for j in range(i % 3):
            x = x * w[j]  # what it carries is traced either way
    return x


def test_an_inner_loop_of_the_index_carrying_arrays_still_stages():
    args = (jnp.float32(1.0), jnp.array([1.0, 0.5, 2.0]))
    jaxpr = jax.make_jaxpr(autograph.convert(inner_loop_of_the_index_over_arrays))(*args)
    assert len(jaxpr.eqns) < 10  # one scan, not TRIPS unrolled steps
    np.testing.assert_allclose(jax.jit(autograph.convert(inner_loop_of_the_index_over_arrays))(
        *args), jax.jit(inner_loop_of_the_index_over_arrays)(*args), rtol=1e-6)
