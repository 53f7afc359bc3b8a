"""Many threads at once, and what `autograph.function`'s cache keys on.

Every caller gets its own value or its own exception, naming its own line;
process-wide state (the garbage collector) stays what the user left; a trace
is reused only where the function would compute the same; functions dropped
by the user are freed. The thread tests run more threads than any buffer the
runtime keeps (32), several rounds each.
"""

import array
import collections
import gc
import sys
import threading
import types
import warnings
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph

THREADS = 32


def _in_threads(work, n=THREADS, rounds=1):
    """Runs ``work(k, r)`` in ``n`` threads released at once, ``rounds`` times each;
    the exceptions the threads did not catch, by thread."""
    barrier = threading.Barrier(n, timeout=120)
    failures: dict = {}

    def run(k):
        try:
            for r in range(rounds):
                barrier.wait()
                work(k, r)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            failures[k] = e
            barrier.abort()

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return failures


def _raises_its_own(k):
    def check(x):
        if x > 0:
            raise ValueError(f"f{k}: x is {x}")
        return x - 1.0
    return check


# -- run-time errors ------------------------------------------------------------------


def test_run_time_errors_reach_their_own_callers_from_many_threads(capfd):
    fns = [autograph.function(_raises_its_own(k)) for k in range(THREADS)]
    for f in fns:  # traced and compiled first, so the rounds below run at once
        assert float(f(jnp.float32(-1.0))) == -2.0

    def work(k, r):
        x = float(k * 10 + r + 1)
        with pytest.raises(ValueError) as info:
            fns[k](jnp.float32(x))
        assert str(info.value) == f"f{k}: x is {x}"
        assert float(fns[k](jnp.float32(-x))) == -x - 1.0  # and the next call works

    failures = _in_threads(work, rounds=3)
    assert not failures, failures
    assert "CpuCallback" not in capfd.readouterr().err


def test_an_error_message_is_rendered_for_each_failing_run():
    f = autograph.function(_raises_its_own("s"))
    raised = []
    for x in (1.0, 2.0, 3.0):
        with pytest.raises(ValueError) as info:
            f(jnp.float32(x))
        raised.append(info.value)
    assert [str(e) for e in raised] == [f"fs: x is {x}" for x in (1.0, 2.0, 3.0)]
    assert len({id(e) for e in raised}) == 3  # three exceptions, not one object

    # the same function in many threads, each with its own x
    def work(k, r):
        x = float(100 + k)
        with pytest.raises(ValueError) as info:
            f(jnp.float32(x))
        assert str(info.value) == f"fs: x is {x}"  # its own text (a note names the line)
        assert "test_concurrency.py" in info.value.__notes__[-1]

    assert not _in_threads(work, rounds=2)


def test_an_error_of_the_users_own_type_and_attributes_is_new_each_run():
    class Rejected(ValueError):
        def __init__(self, value, *, why):  # other parameters than its args
            super().__init__(f"rejected ({why})")
            self.why = why

    def check(x):
        if x > 0:
            raise Rejected(x, why="positive")
        return x

    f = autograph.function(check)
    errors_seen = []
    for x in (1.0, 2.0):
        with pytest.raises(Rejected) as info:
            f(jnp.float32(x))
        errors_seen.append(info.value)
    assert errors_seen[0] is not errors_seen[1]
    assert [e.why for e in errors_seen] == ["positive", "positive"]
    assert str(errors_seen[1]) == "rejected (positive)"


# -- per-trace state of reverse mode ----------------------------------------------------


def _shout(x):
    jax.debug.print("{}", x)
    return x * 2.0


def _loop_a(x):
    while x < 10.0:
        x = jax.lax.cond(x > 5.0, _shout, lambda x: x * 1.5, x)  # loop A
    return x


def _loop_b(x):
    y = x + 0.0
    while y < 20.0:
        y = jax.lax.cond(y > 5.0, _shout, lambda y: y * 1.25, y)  # loop B
    return y


@pytest.mark.filterwarnings("ignore:.*was traced")
def test_a_derivative_refused_in_one_thread_names_that_threads_loop():
    fns = {"loop A": autograph.function(lambda x: jax.grad(_loop_a)(x)),
           "loop B": autograph.function(lambda x: jax.grad(_loop_b)(x))}

    def work(k, r):
        name = ("loop A", "loop B")[k % 2]
        with pytest.raises(autograph.LoopStateError) as info:
            fns[name](1.0)
        msg = str(info.value)
        other = "while y < 20.0" if name == "loop A" else "while x < 10.0"
        assert other not in msg, msg
        assert ("while x < 10.0" if name == "loop A" else "while y < 20.0") in msg, msg

    failures = _in_threads(work, n=16, rounds=2)
    assert not failures, failures


# -- conversion refusals --------------------------------------------------------------


def test_a_cached_refusal_is_a_new_exception_for_each_caller():
    def gen(x):
        yield x

    raised = []
    for _ in range(3):
        try:
            autograph.convert(gen, strict=True)
        except autograph.ConversionError as e:
            raised.append(e)
    assert len(raised) == 3 and len({id(e) for e in raised}) == 3
    for e in raised:  # no exception chained to it that anyone sees, or another caller's
        assert e.__context__ is None or (e.__suppress_context__ and all(
            e.__context__ is not other for other in raised))
        assert "`yield`" in str(e) and "test_concurrency.py" in str(e)
    tracebacks = [e.__traceback__ for e in raised]
    assert len({id(tb) for tb in tracebacks}) == 3

    def work(k, r):
        with pytest.raises(autograph.ConversionError) as info:
            autograph.convert(gen, strict=True)
        assert info.value.__context__ is None or info.value.__suppress_context__

    assert not _in_threads(work)


# -- the garbage collector --------------------------------------------------------------


def _doubled_above(x):
    if x > 1:
        x = x * 2
    return x


def _fresh_function(k):
    """``_doubled_above`` with a code object of its own: converted anew."""
    code = _doubled_above.__code__.replace(co_name="_doubled_above")  # a new object
    assert code is not _doubled_above.__code__
    return types.FunctionType(code, globals(), "_doubled_above")


def test_a_users_gc_disable_during_conversions_holds():
    was = gc.isenabled()
    try:
        stop = threading.Event()

        def convert_many():
            k = 0
            while not stop.is_set():
                autograph.to_code(_fresh_function(1000 + k))
                k += 1

        thread = threading.Thread(target=convert_many)
        thread.start()
        try:
            for _ in range(50):
                gc.disable()
                autograph.to_code(_fresh_function(5000))  # conversions overlap ours too
                assert not gc.isenabled()
                gc.enable()
                assert gc.isenabled()
            gc.disable()
        finally:
            stop.set()
            thread.join()
        assert not gc.isenabled()  # the last word was the user's
        threshold = gc.get_threshold()
        assert threshold[0] > 0  # and automatic collection is back
    finally:
        (gc.enable if was else gc.disable)()


def test_conversion_leaves_the_collector_as_it_was():
    before = gc.get_threshold(), gc.isenabled()
    autograph.to_code(_fresh_function(7))
    assert (gc.get_threshold(), gc.isenabled()) == before
    gc.disable()
    try:
        autograph.to_code(_fresh_function(8))
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- what the cache keys on -------------------------------------------------------------


def test_a_mutable_default_passed_explicitly_is_read_on_every_call():
    def scaled(x, opts={"scale": 2.0}):  # noqa: B006 - the case under test
        return x * opts["scale"]

    f = autograph.function(scaled)
    opts = scaled.__defaults__[0]
    x = jnp.float32(1.0)
    assert float(f(x, opts)) == 2.0
    opts["scale"] = 3.0
    assert float(f(x, opts)) == 3.0 == float(jax.jit(scaled)(x, opts))
    opts["scale"] = 2.0


def test_an_immutable_default_passed_explicitly_shares_the_trace():
    def scaled(x, scale=2.0):
        return x * scale

    f = autograph.function(scaled)
    x = jnp.float32(1.0)
    assert float(f(x)) == float(f(x, 2.0)) == float(f(x, scale=2.0)) == 2.0
    assert f.experimental_get_tracing_count() == 1


class Settings:
    scale = 2.0


class Derived(Settings):
    pass


def test_a_class_attribute_read_through_an_instance_is_keyed():
    def scaled(x, settings):
        return x * settings.scale

    f = autograph.function(scaled)
    x = jnp.float32(1.0)
    for settings in (Settings(), Derived()):
        try:
            assert float(f(x, settings)) == 2.0
            Settings.scale = 3.0
            assert float(f(x, settings)) == 3.0
            assert float(f(x, settings)) == 3.0
        finally:
            Settings.scale = 2.0
    count = f.experimental_get_tracing_count()
    assert float(f(x, Settings())) == 2.0  # unchanged: the first trace again
    assert f.experimental_get_tracing_count() == count


class Holder:
    def __init__(self, items):
        self.items = items


@pytest.mark.parametrize("make, change", [
    (lambda: collections.deque([1, 2]), lambda d: d.append(3)),
    (lambda: bytearray(b"ab"), lambda b: b.append(ord("c"))),
    (lambda: array.array("i", [1, 2]), lambda a: a.append(3)),
], ids=["deque", "bytearray", "array"])
def test_containers_mutated_in_place_trace_again(make, change):
    def total(x, holder):
        return x + sum(holder.items)

    f = autograph.function(total)
    holder = Holder(make())
    x = jnp.float32(0.0)
    want = float(sum(holder.items))
    assert float(f(x, holder)) == want
    change(holder.items)
    assert float(f(x, holder)) == float(sum(holder.items)) != want


def test_true_and_one_inside_a_container_are_told_apart():
    def kind(x, flags):
        return x + (10.0 if flags[0] is True else 20.0)

    f = autograph.function(kind)
    x = jnp.float32(0.0)
    assert float(f(x, (True,))) == 10.0
    assert float(f(x, (1,))) == 20.0
    assert float(f(x, (True,))) == 10.0


# -- memory -----------------------------------------------------------------------------


def _recursive_closure(size):
    data = np.ones(size // 8)  # `size` bytes

    def rec(x, n):
        if n <= 0:
            return x + data[0]
        return rec(x, n - 1)

    return rec


def test_recursive_closures_called_through_converted_code_are_freed():
    refs = []
    for _ in range(5):
        rec = _recursive_closure(1 << 20)
        caller = autograph.convert(lambda x, rec=rec: rec(x, 3))
        assert float(caller(1.0)) == 2.0
        refs.append(weakref.ref(rec))
        del rec, caller
    gc.collect()
    assert [r() for r in refs] == [None] * 5


def test_a_decorated_recursive_closure_is_freed():
    def make():
        @autograph.convert
        def rec(x, n):
            if n <= 0:
                return x
            return rec(x + 1.0, n - 1)
        return rec

    refs = []
    for _ in range(3):
        rec = make()
        assert float(rec(0.0, 3)) == 3.0
        refs.append(weakref.ref(rec))
        del rec
    gc.collect()
    assert [r() for r in refs] == [None] * 3


# -- the retrace warning ----------------------------------------------------------------


def test_the_retrace_warning_for_none_dimensions_gives_advice_that_fits():
    f = autograph.function(lambda x: x * 2.0,
                           input_signature=[autograph.TensorSpec([None], jnp.float32)])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for n in range(1, 12):
            f(jnp.ones(n))
    messages = [str(w.message) for w in record if "traced" in str(w.message)]
    assert len(messages) == 1, messages
    assert "give `input_signature=`" not in messages[0]
    assert "get_concrete_function" in messages[0]
    concrete = f.get_concrete_function()
    before = f.experimental_get_tracing_count()
    for n in (3, 5, 40):  # one symbolic trace serves every size
        np.testing.assert_allclose(concrete(jnp.ones(n)), 2.0 * np.ones(n))
    assert f.experimental_get_tracing_count() == before


# -- everything at once -------------------------------------------------------------------


def _stress_function(k):
    def run(x):
        total = x
        i = 0
        while total < 50.0 + k and i < 30:  # a counter bounds it: a small program to compile
            total = total * 1.5 + 1.0
            i += 1
        if total > 1000.0 + k:
            raise ValueError(f"s{k}: total {total} from {x}")
        return total, i
    return run


@pytest.mark.long
def test_stress_threads_convert_call_fail_and_differentiate_at_once():
    gc_state = gc.isenabled()
    fns = [_stress_function(k) for k in range(THREADS)]
    converted = [autograph.function(f) for f in fns]
    gradients = [jax.jit(jax.grad(lambda x, f=f: autograph.convert(f)(x)[0])) for f in fns]
    refs = [weakref.ref(f) for f in converted]

    def work(k, r):
        x = float(k % 5 + 1 + r)
        total, i = converted[k](jnp.float32(x))
        want_total, want_i = fns[k](np.float32(x))  # the Python program, eagerly
        np.testing.assert_allclose(float(total), float(want_total), rtol=1e-6)
        assert int(i) == want_i
        big = 2000.0 + k
        with pytest.raises(ValueError, match=f"^s{k}: total "):
            converted[k](jnp.float32(big))
        g = float(gradients[k](jnp.float32(x)))
        eager = float(jax.grad(lambda v: fns[k](v)[0])(jnp.float32(x)))
        np.testing.assert_allclose(g, eager, rtol=1e-5)

    failures = _in_threads(work)
    assert not failures, failures
    assert gc.isenabled() == gc_state
    del converted, gradients, work
    gc.collect()
    assert all(r() is None for r in refs)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_memory_returns_after_converted_closures_are_dropped():
    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    def round_of(n):
        keep = []
        for _ in range(n):
            rec = _recursive_closure(8 << 20)  # 8 MB each
            caller = autograph.convert(lambda x, rec=rec: rec(x, 2))
            caller(1.0)
            keep.append(weakref.ref(rec))
            del rec, caller
        gc.collect()
        return keep

    round_of(2)  # warm-up: the converter's own first allocations
    before = rss()
    refs = round_of(20)  # 160 MB if they stayed
    assert all(r() is None for r in refs)
    assert rss() - before < 64 << 20


def test_the_tracing_count_under_threads_counts_the_traces_that_stay():
    sizes = []

    @autograph.function
    def filled(cfg, x):
        sizes.append(cfg["n"])  # an int in a dict, used as a shape: keyed by value
        return jnp.zeros(cfg["n"]) + x

    def worker(i):
        for k in range(3):
            filled({"n": 2 + (i + k) % 3}, jnp.array(1.0))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the retrace warning)
        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    kept = {n for n in sizes if isinstance(n, int)}
    assert filled.experimental_get_tracing_count() == len(kept) == 3
