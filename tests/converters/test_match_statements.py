"""The `match` converter: golden output, behaviour against plain Python, errors."""

import collections
import dataclasses
import enum
import inspect
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import errors
from autograph.converters import match_statements
from tests.helpers import assert_golden, check_equivalent

F32, I32 = np.float32, np.int32


def _line(fn, snippet):
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if snippet in text:
            return start + i
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


def _where(fn, snippet):
    return f"test_match_statements.py:{_line(fn, snippet)}"


# ---------------------------------------------------------------------------
# Golden output: the pass alone


def _golden(src, expected):
    assert_golden(src, expected, passes=(match_statements,))


def test_golden_docstring_example():
    _golden("""
        def f(cmd, x):
            match cmd:
                case 0:
                    y = x
                case 1 | 2:
                    y = -x
                case ['scale', k]:
                    y = k * x
                case _:
                    y = 0.0
            return y
    """, """
        def f(cmd, x):
            if cmd == 0:
                y = x
            elif cmd == 1 or cmd == 2:
                y = -x
            elif ag__.is_sequence(cmd, length=2) and cmd[0] == 'scale':
                k = cmd[1]
                y = k * x
            else:
                y = 0.0
            return y
    """)


def test_golden_docstring_guard_example():
    _golden("""
        def f(cmd):
            match cmd:
                case [n] if n > 3:
                    y = n
                case _:
                    y = 0
            return y
    """, """
        def f(cmd):
            matched = ag__.is_sequence(cmd, length=1)
            if matched:
                n = cmd[0]
                matched = n > 3
            if matched:
                y = n
            else:
                y = 0
            return y
    """)


@pytest.mark.parametrize("src, expected", [
    pytest.param("""
        def f(x):
            match x:
                case -1:
                    return 0
                case Color.RED | 1.5:
                    return 1
                case None:
                    return 2
                case True:
                    return 3
    """, """
        def f(x):
            if x == -1:
                return 0
            elif x == Color.RED or x == 1.5:
                return 1
            elif x is None:
                return 2
            elif x is True:
                return 3
    """, id="literal, value and singleton patterns"),
    pytest.param("""
        def f(x):
            match x:
                case 0:
                    y = 1.0
                case n if n > 3:
                    y = n * 2.0
                case n:
                    y = -n
            return y
    """, """
        def f(x):
            if x == 0:
                y = 1.0
            else:
                n = x
                if n > 3:
                    y = n * 2.0
                else:
                    n = x
                    y = -n
            return y
    """, id="capture patterns, one with a guard"),
    pytest.param("""
        def f(x, flag):
            match x:
                case 0 if flag:
                    y = 1.0
                case _ if x > 3:
                    y = 2.0
                case _:
                    y = 3.0
            return y
    """, """
        def f(x, flag):
            if x == 0 and flag:
                y = 1.0
            elif x > 3:
                y = 2.0
            else:
                y = 3.0
            return y
    """, id="guards that read no capture join the test"),
    pytest.param("""
        def f(x):
            match x:
                case 0 | 1 if (z := x * 2) > 1:
                    y = z
                case _:
                    y = 0
            return y
    """, """
        def f(x):
            matched = x == 0 or x == 1
            if matched:
                matched = (z := (x * 2)) > 1
            if matched:
                y = z
            else:
                y = 0
            return y
    """, id="a guard that binds a name is a statement of its own"),
    pytest.param("""
        def f(xs):
            match xs:
                case []:
                    return 0
                case [a, b, *rest]:
                    return a + b + len(rest)
                case [*_, last]:
                    return last
    """, """
        def f(xs):
            if ag__.is_sequence(xs, length=0):
                return 0
            elif ag__.is_sequence(xs, min_length=2):
                a = xs[0]
                b = xs[1]
                rest = ag__.sequence_rest(xs, 2, 0)
                return a + b + len(rest)
            elif ag__.is_sequence(xs, min_length=1):
                last = ag__.item_from_end(xs, 1)
                return last
    """, id="sequence patterns"),
    pytest.param("""
        def f(cfg):
            match cfg:
                case {'mode': 'add', 'k': k}:
                    return k
                case {'mode': _, **rest}:
                    return rest
                case {}:
                    return None
    """, """
        def f(cfg):
            if ag__.is_mapping(cfg, ('mode', 'k')) and cfg.get('mode') == 'add':
                k = cfg.get('k')
                return k
            elif ag__.is_mapping(cfg, ('mode',)):
                rest = ag__.mapping_rest(cfg, ('mode',))
                return rest
            elif ag__.is_mapping(cfg):
                return None
    """, id="mapping patterns"),
    pytest.param("""
        def f(p):
            match p:
                case Point(x=0, y=y):
                    return y
                case Point():
                    return 0
    """, """
        def f(p):
            if isinstance(p, Point) and hasattr(p, 'x') and hasattr(p, 'y') and (p.x == 0):
                y = p.y
                return y
            elif isinstance(p, Point):
                return 0
    """, id="class patterns with keywords"),
    pytest.param("""
        def f(p):
            match p:
                case Point(0, y, z=z):
                    return y + z
    """, """
        def f(p):
            if isinstance(p, Point) and ag__.has_match_attrs(p, Point, 2, ('z',)) and (ag__.match_attr(p, Point, 0) == 0):
                y = ag__.match_attr(p, Point, 1)
                z = p.z
                return y + z
    """, id="class patterns with positional sub-patterns"),
    pytest.param("""
        def f(p):
            match p:
                case [(0 | 1) as first, _] as pair:
                    return first, pair
    """, """
        def f(p):
            if ag__.is_sequence(p, length=2) and (p[0] == 0 or p[0] == 1):
                first = p[0]
                pair = p
                return (first, pair)
    """, id="as patterns"),
    pytest.param("""
        def f(cmd):
            match cmd:
                case ['go', d] | ['move', d]:
                    return d
                case [d, 'north'] | ['north', d]:
                    return d
    """, """
        def f(cmd):
            if ag__.is_sequence(cmd, length=2) and cmd[0] == 'go' or (ag__.is_sequence(cmd, length=2) and cmd[0] == 'move'):
                d = cmd[1]
                return d
            elif ag__.is_sequence(cmd, length=2) and cmd[1] == 'north' or (ag__.is_sequence(cmd, length=2) and cmd[0] == 'north'):
                if ag__.is_sequence(cmd, length=2) and cmd[1] == 'north':
                    d = cmd[0]
                elif ag__.is_sequence(cmd, length=2) and cmd[0] == 'north':
                    d = cmd[1]
                return d
    """, id="or patterns binding a name from the same or from different parts"),
    pytest.param("""
        def f(p, x):
            match p.mode:
                case 'a':
                    return x
                case _:
                    return -x
    """, """
        def f(p, x):
            subject = p.mode
            if subject == 'a':
                return x
            else:
                return -x
    """, id="a subject that is not a name is evaluated once"),
    pytest.param("""
        def f(x):
            match x:
                case [x, 0]:
                    return x
                case _:
                    return 0
    """, """
        def f(x):
            subject = x
            if ag__.is_sequence(subject, length=2) and subject[1] == 0:
                x = subject[0]
                return x
            else:
                return 0
    """, id="a subject name a capture rebinds is copied first"),
    pytest.param("""
        def f(p):
            match p.q:
                case [subject]:
                    return subject
    """, """
        def f(p):
            subject_1 = p.q
            if ag__.is_sequence(subject_1, length=1):
                subject = subject_1[0]
                return subject
    """, id="fresh names avoid the names patterns bind"),
    pytest.param("""
        def f(x):
            match x:
                case _:
                    return 1
    """, """
        def f(x):
            x
            return 1
    """, id="a subject no pattern reads is still evaluated"),
    pytest.param("""
        def f(xs):
            total = 0
            for x in xs:
                match x:
                    case 0:
                        continue
                    case -1:
                        break
                    case 99:
                        return total
                total += x
            return total
    """, """
        def f(xs):
            total = 0
            for x in xs:
                if x == 0:
                    continue
                elif x == -1:
                    break
                elif x == 99:
                    return total
                total += x
            return total
    """, id="jumps stay in the case bodies for the jump passes"),
    pytest.param("""
        def f(a, b):
            match a:
                case 0:
                    match b:
                        case 0:
                            return 0
                        case _:
                            return 1
                case _:
                    return 2
    """, """
        def f(a, b):
            if a == 0:
                if b == 0:
                    return 0
                else:
                    return 1
            else:
                return 2
    """, id="nested match"),
])
def test_golden(src, expected):
    _golden(src, expected)


def test_golden_leaves_code_without_match_alone():
    src = """
        def f(x):
            if x == 0:
                y = 1
            else:
                y = 2
            return y
    """
    _golden(src, src)


# ---------------------------------------------------------------------------
# Behaviour: literal and value patterns on traced scalars stage as `lax.cond`


class Mode(enum.IntEnum):
    OFF = 0
    SLOW = 3


def int_cases(cmd, x):
    match cmd:
        case 0:
            y = x
        case 1 | 2:
            y = -x
        case -1:
            y = x * 10.0
        case Mode.SLOW:
            y = x / 2
        case _:
            y = x * 0.0
    return y


def float_cases(t, x):
    match t:
        case 0.5:
            return x + 1.0
        case 2.0 if x > 1:
            return x * 2.0
        case -1.0 | 1.0:
            return -x
    return x - 100.0


def capture_and_guard(n, x):
    match n:
        case 0:
            return x
        case k if k > 3:
            return x * k
        case k:
            return x - k


@pytest.mark.parametrize("cmd", [0, 1, 2, -1, 3, 7])
def test_int_subject(cmd):
    check_equivalent(int_cases, (I32(cmd), F32(1.5)))


@pytest.mark.parametrize("t, x", [(0.5, 3.0), (2.0, 3.0), (2.0, 0.5), (-1.0, 2.0),
                                  (1.0, 2.0), (7.0, 2.0)])
def test_float_subject(t, x):
    check_equivalent(float_cases, (F32(t), F32(x)))


@pytest.mark.parametrize("n", [0, 2, 4, 9])
def test_capture_with_guard_on_a_traced_subject(n):
    check_equivalent(capture_and_guard, (I32(n), F32(2.0)))


def test_traced_subject_stages_as_cond():
    jaxpr = jax.make_jaxpr(autograph.convert(int_cases))(jnp.int32(1), jnp.float32(1.0))
    assert "cond" in str(jaxpr)


@pytest.mark.parametrize("fn, subjects", [
    (int_cases, np.array([0, 1, 2, -1, 3, 7], dtype=I32)),
    (float_cases, np.array([0.5, 2.0, -1.0, 1.0, 7.0, 2.0], dtype=F32)),
    (capture_and_guard, np.array([0, 2, 4, 9, 0, 5], dtype=I32)),
])
def test_under_vmap(fn, subjects):
    xs = np.array([1.5, 3.0, 0.5, 2.0, 4.0, -1.0], dtype=F32)
    want = np.array([fn(s, x) for s, x in zip(subjects, xs)], dtype=F32)
    got = jax.vmap(autograph.convert(fn))(jnp.asarray(subjects), jnp.asarray(xs))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
    got = jax.jit(jax.vmap(autograph.convert(fn)))(jnp.asarray(subjects), jnp.asarray(xs))
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)


# ---------------------------------------------------------------------------
# Behaviour: jumps inside cases, matches inside loops


def jumps_in_for(xs, x):
    total = x
    for i in range(6):
        match xs[i]:
            case 0:
                continue
            case 9:
                break
            case 7:
                return total * 100.0
        total = total + xs[i]
    return total


def match_in_while(x):
    steps = 0
    while x > 0:
        match steps % 3:
            case 0:
                x = x - 1.0
            case 1:
                x = x - 2.0
            case _:
                if x < 2:
                    break
                x = x / 2
        steps += 1
    return x, steps


def traced_match_in_while(x, k):
    while x < 100.0:
        match k:
            case 0:
                x = x + 1.0
            case 1:
                x = x * 2.0
            case _:
                break
        k = (k + 1) % 3
    return x


@pytest.mark.parametrize("xs", [[1, 0, 2, 3, 4, 5], [1, 2, 9, 3, 4, 5], [0, 7, 0, 0, 0, 0],
                                [1, 1, 1, 1, 1, 1]])
def test_jumps_in_cases(xs):
    check_equivalent(jumps_in_for, (np.array(xs, dtype=F32), F32(0.5)))


@pytest.mark.parametrize("x", [0.5, 7.0, 30.0])
def test_match_in_while_loop(x):
    check_equivalent(match_in_while, (F32(x),))


@pytest.mark.parametrize("x, k", [(1.0, 0), (1.0, 1), (5.0, 2), (50.0, 0)])
def test_traced_match_in_while_loop(x, k):
    check_equivalent(traced_match_in_while, (F32(x), I32(k)))


def return_from_nested_match(a, b, x):
    match a:
        case 0:
            match b:
                case 0:
                    return x
                case _:
                    return -x
        case 1 if b > 0:
            return x * 2.0
    return x * 0.0


@pytest.mark.parametrize("a, b", [(0, 0), (0, 1), (1, 1), (1, 0), (2, 0)])
def test_nested_match(a, b):
    check_equivalent(return_from_nested_match, (I32(a), I32(b), F32(3.0)))


# ---------------------------------------------------------------------------
# Behaviour: structural patterns (types, lengths, keys, attributes) stay Python


@dataclasses.dataclass
class Point:
    x: object
    y: object


class Pair(NamedTuple):
    left: object
    right: object


class Polar:
    __match_args__ = ("r", "theta")

    def __init__(self, r, theta):
        self.r, self.theta = r, theta


def describe(p, v):
    match p:
        case Point(x=0, y=y):
            return y + v
        case Point(1, y):
            return y * v
        case Point(x, y=y):
            return x - y
        case Polar(r, theta=0.0):
            return r * v
        case Pair(a, Pair(b, c)):
            return a + b + c
        case [0, *rest]:
            return v + len(rest)
        case [a, b, *_, z]:
            return a + b + z
        case {"scale": s, **others}:
            return v * s + len(others)
        case int(n) | float(n) if n > 2:
            return n * v
        case str() | bytes():
            return -1.0
    return v


POINTS = [Point(0, 5.0), Point(1, 3.0), Point(4, 1.0)]
OTHERS = [Polar(2.0, 0.0), Polar(2.0, 1.0), Pair(1.0, Pair(2.0, 3.0)), [0, 1, 2], (4.0, 5.0, 6.0),
          [1.0, 2.0], {"scale": 2.0, "a": 1}, {"other": 1}, 3, 2.5, 1, "str", b"b", None]


@pytest.mark.parametrize("subject", POINTS + OTHERS)
def test_structure_on_python_values(subject):
    assert autograph.convert(describe)(subject, 2.0) == describe(subject, 2.0)


@pytest.mark.parametrize("p", POINTS)
def test_class_pattern_with_traced_fields(p):
    def run(x, y, v):
        return autograph.convert(describe)(Point(x, y), v)
    got = jax.jit(run)(jnp.int32(p.x), jnp.float32(p.y), jnp.float32(2.0))
    np.testing.assert_allclose(got, describe(p, 2.0))


def sequence_of_traced(xs):
    match xs:
        case [0.0, b]:
            return b
        case [a, 0.0] | (a, 1.0):
            return a * 10.0
        case [a, b]:
            return a - b


@pytest.mark.parametrize("pair", [(0.0, 5.0), (3.0, 0.0), (3.0, 1.0), (3.0, 4.0)])
def test_sequence_of_traced_items(pair):
    want = sequence_of_traced(list(pair))
    got = jax.jit(lambda a, b: autograph.convert(sequence_of_traced)([a, b]))(*pair)
    np.testing.assert_allclose(got, want)
    got = jax.jit(lambda a, b: autograph.convert(sequence_of_traced)((a, b)))(*pair)
    np.testing.assert_allclose(got, sequence_of_traced(pair))


def mapping_of_traced(cfg, x):
    match cfg:
        case {"mode": 0, "k": k}:
            return x + k
        case {"mode": 1, **rest}:
            return x * rest["k"]
    return x


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_mapping_of_traced_values(mode):
    want = mapping_of_traced({"mode": mode, "k": 3.0}, 2.0)
    run = jax.jit(lambda m, k, x: autograph.convert(mapping_of_traced)({"mode": m, "k": k}, x))
    np.testing.assert_allclose(run(jnp.int32(mode), jnp.float32(3.0), jnp.float32(2.0)), want)


def kinds(s):
    match s:
        case []:
            return "empty"
        case [x]:
            return ("one", x)
        case [first, *middle, last]:
            return ("many", first, middle, last)
        case {"k": v}:
            return ("mapping", v)
        case {}:
            return "mapping without k"
        case _:
            return "other"


@pytest.mark.parametrize("subject", [
    [], (), [1], range(1, 5), collections.deque([1, 2, 3]), "ab", b"ab", bytearray(b"ab"),
    memoryview(b"abc"), np.arange(3), jnp.arange(3), {"k": 1}, collections.OrderedDict(k=2),
    {"j": 1}, collections.defaultdict(int), 5,
], ids=lambda s: type(s).__name__)
def test_sequence_and_mapping_checks_are_pythons(subject):
    got = autograph.convert(kinds)(subject)
    want = kinds(subject)
    assert repr(got) == repr(want)


def test_mapping_pattern_adds_no_key_to_a_defaultdict():
    d = collections.defaultdict(int)
    assert autograph.convert(kinds)(d) == "mapping without k"
    assert dict(d) == {}


def self_matching(v):
    match v:
        case bool(b):
            return ("bool", b)
        case int(n) if n > 10:
            return ("big", n)
        case int(n):
            return ("int", n)
        case float(f) | str(f):
            return ("float or str", f)
        case Polar(r):
            return ("polar", r)


@pytest.mark.parametrize("v", [True, 3, 30, 2.5, "s", Polar(1.0, 2.0), None])
def test_builtin_types_match_themselves(v):
    assert autograph.convert(self_matching)(v) == self_matching(v)


class TooFew:
    __match_args__ = ("a",)
    a = 1


class NotATuple:
    __match_args__ = ["a"]
    a = 1


def too_many_positional(v):
    match v:
        case TooFew(1, 2):
            return 1


def match_args_not_a_tuple(v):
    match v:
        case NotATuple(1):
            return 1


def attribute_twice(v):
    match v:
        case TooFew(1, a=1):
            return 1


@pytest.mark.parametrize("fn, subject", [(too_many_positional, TooFew()),
                                         (match_args_not_a_tuple, NotATuple()),
                                         (attribute_twice, TooFew())])
def test_class_pattern_errors_are_pythons(fn, subject):
    with pytest.raises(TypeError) as want:
        fn(subject)
    with pytest.raises(TypeError) as got:
        autograph.convert(fn)(subject)
    assert str(got.value) == str(want.value)


# ---------------------------------------------------------------------------
# Behaviour: evaluation order and bindings, as Python's


def test_subject_evaluated_once_and_guards_only_where_python_evaluates_them():
    def run(f):
        log = []

        def subject():
            log.append("subject")
            return [2, 0]

        def guard(tag, value):
            log.append(tag)
            return value

        def fn():
            match subject():
                case [0, _] if guard("first", True):
                    r = 0
                case [a, 0] if guard("second", a > 5):
                    r = 1
                case [_, 0] if guard("third", True):
                    r = 2
                case _:
                    r = 3
            return r

        return f(fn)(), log

    assert run(autograph.convert) == run(lambda fn: fn)


def names_after_a_failed_guard(xs):
    n = -1
    match xs:
        case [n] if n > 3:
            return ("matched", n)
        case [n, 0]:
            return ("second", n)
        case _:
            return ("none", n)


@pytest.mark.parametrize("xs", [[9], [1], [5, 0], [5, 1], []])
def test_names_bound_as_python_binds_them(xs):
    # a pattern that matched keeps its names when its guard fails; one that did not
    # match leaves them as they were
    assert autograph.convert(names_after_a_failed_guard)(xs) == names_after_a_failed_guard(xs)


def index_type(x):
    for i in range(3):
        match i:
            case int():
                x = x + 1.0
            case _:
                x = x - 100.0
    return x


def test_class_pattern_on_a_loop_index_keeps_the_loop_in_python():
    check_equivalent(index_type, (F32(1.0),))


class Scaler:
    def __init__(self):
        self.__k = 2.0

    def apply(self, xs):
        match xs:
            case [__v, *__rest]:
                return __v * self.__k + len(__rest)
        return 0.0


def test_private_names_in_patterns():
    assert autograph.convert(Scaler().apply)([1.0, 2.0]) == Scaler().apply([1.0, 2.0])


# ---------------------------------------------------------------------------
# Errors


def traced_vector_subject(x):
    match x:
        case 0:
            return 1.0
    return 0.0


def test_traced_array_subject_is_a_condition_error():
    with pytest.raises(errors.AutographError) as e:
        jax.jit(autograph.convert(traced_vector_subject))(jnp.zeros(3))
    assert _where(traced_vector_subject, "case 0:") in str(e.value)


def traced_capture_read_by_guard(p, v):
    match p:
        case Point(x=0, y=y) if y > 2:
            return y * v
    return v


def traced_capture_initialized(p, v):
    y = 0.0
    match p:
        case Point(x=0, y=y) if y > 2:
            return y * v
    return v


def test_traced_capture_read_by_its_guard_names_the_case():
    run = jax.jit(lambda x, y: autograph.convert(traced_capture_read_by_guard)(Point(x, y), 2.0))
    with pytest.raises(errors.BranchError) as e:
        run(jnp.int32(0), jnp.float32(3.0))
    assert _where(traced_capture_read_by_guard, "case Point") in str(e.value)
    assert "`y`" in str(e.value)


@pytest.mark.parametrize("x, y", [(0, 3.0), (0, 1.0), (1, 3.0)])
def test_traced_capture_initialized_before_the_match(x, y):
    run = jax.jit(lambda x, y: autograph.convert(traced_capture_initialized)(Point(x, y), 2.0))
    want = traced_capture_initialized(Point(x, y), 2.0)
    np.testing.assert_allclose(run(jnp.int32(x), jnp.float32(y)), want)


def capture_rebinds_a_name_the_pattern_reads(p):
    match p:
        case Point(Point, y):  # noqa: F823 (the program under test)
            return y


def match_in_try_star(x):
    try:
        match x:
            case 0:
                x = 1
    except* ValueError:
        pass
    return x


@pytest.mark.parametrize("fn, snippet, construct", [
    (capture_rebinds_a_name_the_pattern_reads, "case Point(Point", "binds `Point`"),
    (match_in_try_star, "match x:", "`match` inside `try`/`except*`"),
])
def test_rejected(fn, snippet, construct):
    with pytest.raises(errors.ConversionError) as e:
        autograph.convert(fn, strict=True)
    assert _where(fn, snippet) in str(e.value)
    assert construct in str(e.value) and "not supported" in str(e.value)


def cases_without_a_wildcard(n, x):
    match n:
        case 0:
            y = x
        case 1:
            y = x * 2
    return y


def test_a_variable_no_wildcard_assigns_names_the_match_and_the_missing_case():
    run = jax.jit(autograph.convert(cases_without_a_wildcard))
    with pytest.raises(errors.BranchError, match="set by every case") as e:
        run(jnp.int32(1), jnp.float32(1.0))
    message = str(e.value)
    assert _where(cases_without_a_wildcard, "case 1") in message
    assert "`case _:`" in message and "before the `match`" in message and "`if`" not in message
