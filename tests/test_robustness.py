"""Threads, cache hygiene, and functions without source."""

import gc
import linecache
import threading
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import api, errors, pipeline
from autograph.runtime.functions import calls


def shared(x, n):
    total = 0.0
    for i in range(n):
        if x > i:
            total = total + x
        else:
            total = total - 1.0
    return total


def other_a(x):
    while x < 50.0:
        x = x * 2.0
    return x


def other_b(x):
    return x if x > 0 else -x


def test_threads_convert_and_call_concurrently(monkeypatch):
    conversions = []
    real = pipeline.convert_tree

    def counting(node, *args, **kwargs):
        conversions.append(node.name)
        return real(node, *args, **kwargs)

    monkeypatch.setattr(pipeline, "convert_tree", counting)
    for f in (shared, other_a, other_b):  # start from an empty cache for these
        api._CODE_CACHE.pop(f.__code__, None)
    results, failures = [], []
    barrier = threading.Barrier(8)

    def work(k):
        try:
            barrier.wait()
            for j in range(3):
                x = np.float32(k - 3.5 + j)
                got = (float(jax.jit(autograph.convert(shared), static_argnums=1)(x, 4)),
                       float(autograph.convert(other_a)(np.float32(k + 1))),
                       float(jax.jit(autograph.convert(other_b))(x)))
                want = (shared(x, 4), other_a(np.float32(k + 1)), other_b(x))
                results.append(np.allclose(got, want))
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(repr(e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert len(results) == 24 and all(results)
    assert sorted(conversions) == ["other_a", "other_b", "shared"]  # each converted once


def _many_functions(n: int) -> str:
    """Source of ``n`` functions of a few kinds (loops, branches, breaks), each its own."""
    kinds = (
        "def f{i}(x):\n"
        "    total = x * 0.0\n"
        "    for j in range({m}):\n"
        "        if x > j:\n"
        "            total = total + x * {i}\n"
        "        else:\n"
        "            total = total - {i}\n"
        "    return total\n",
        "def f{i}(x):\n"
        "    while x < {i} + 10.0:\n"
        "        x = x * x + 1.0\n"
        "        if x > {i} * 3.0:\n"
        "            break\n"
        "    return x\n",
        "def f{i}(x):\n"
        "    if x > {i}:\n"
        "        y = x - {i}\n"
        "    elif x > 0:\n"
        "        y = x + {m}\n"
        "    else:\n"
        "        return -x\n"
        "    return y * 2.0\n",
    )
    return "\n\n".join(kinds[i % 3].format(i=i, m=i % 4 + 1) for i in range(n))


def _load(path, text) -> dict:
    namespace: dict = {}
    exec(compile(text, str(path), "exec"), namespace)
    return namespace


def test_many_functions_convert_in_many_threads_at_once(tmp_path):
    path = tmp_path / "many.py"
    text = _many_functions(24)
    path.write_text(text)
    names = [f"f{i}" for i in range(24)]
    alone = _load(path, text)
    want_code = {name: autograph.to_code(alone[name]) for name in names}  # one thread
    together = _load(path, text)  # the same source, new code objects: converted again
    xs = np.array([-1.5, 0.5, 7.0, 30.0], np.float32)
    failures, barrier = [], threading.Barrier(6)

    def work(k):
        try:
            barrier.wait()
            for i in list(range(4 * k, 24)) + list(range(4 * k)):  # all race for each
                fn = together[names[i]]
                assert autograph.to_code(fn) == want_code[names[i]], names[i]
                converted = autograph.convert(fn)
                want = [float(fn(x)) for x in xs]
                assert [float(converted(x)) for x in xs] == pytest.approx(want, rel=1e-6)
                if i % 6 == k:  # staged too, by one thread per function
                    got = jax.jit(jax.vmap(converted))(xs)
                    assert got.tolist() == pytest.approx(want, rel=1e-6), names[i]
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures


def test_conversions_in_two_threads_overlap(monkeypatch):
    real = pipeline.convert_tree
    both_inside = threading.Barrier(2, timeout=30)

    def meeting(node, *args, **kwargs):
        both_inside.wait()  # returns only once the other thread is converting too
        return real(node, *args, **kwargs)

    monkeypatch.setattr(pipeline, "convert_tree", meeting)

    def first(x):
        return x + 1 if x > 0 else x

    def second(x):
        return x - 1 if x > 0 else x

    out, failures = {}, []

    def work(fn):
        try:
            out[fn.__name__] = autograph.to_code(fn)
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(repr(e))

    threads = [threading.Thread(target=work, args=(fn,)) for fn in (first, second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert "ag__.if_exp" in out["first"] and "ag__.if_exp" in out["second"]


SOURCE = '''
def fresh(x):
    if x > 0:
        y = x * 2
    else:
        y = -x
    return y
'''


def test_caches_release_dropped_functions(tmp_path):
    path = tmp_path / "fresh_module.py"
    path.write_text(SOURCE)
    text = path.read_text()
    gc.collect()
    maps_before = len(errors._SOURCE_MAPS)
    cache_before = len(api._CODE_CACHE)
    lines_before = sum(1 for k in linecache.cache if k.startswith("<autograph"))
    for i in range(300):  # distinct code objects, each with source on disk
        namespace = {}
        exec(compile(text, str(path), "exec"), namespace)
        converted = autograph.convert(namespace["fresh"])
        assert converted(np.float32(i - 150)) == namespace["fresh"](np.float32(i - 150))
        del namespace, converted
    gc.collect()
    assert len(api._CODE_CACHE) <= cache_before + 1
    assert len(errors._SOURCE_MAPS) <= maps_before + 1
    assert sum(1 for k in linecache.cache if k.startswith("<autograph")) <= lines_before + 1


def test_live_functions_with_the_same_name_and_line_keep_their_own_source(tmp_path):
    path = tmp_path / "twins.py"
    path.write_text(SOURCE)
    text = path.read_text()
    fns = []
    for _ in range(2):
        namespace = {}
        exec(compile(text, str(path), "exec"), namespace)
        fns.append(autograph.convert(namespace["fresh"]))
    names = {calls.converted_of(f).__code__.co_filename for f in fns}
    assert len(names) == 2
    for name in names:
        assert linecache.getline(name, 1).startswith("def fresh")


def test_builtins_have_nothing_to_convert_and_stay_as_they_are():
    assert autograph.convert(len) is len


def test_exec_created_function_runs_unconverted_with_a_warning():
    # as under `jax.jit`, which needs no source; `to_code` has nothing to show
    namespace = {}
    exec("def made(x):\n    return x + 1\n", namespace)
    made = namespace["made"]
    with pytest.warns(UserWarning, match="`made` runs unconverted: the source of `made`"):
        converted = autograph.convert(made)
    assert converted is made and float(jax.jit(converted)(1.0)) == 2.0
    with pytest.warns(UserWarning, match="unconverted"):
        assert float(autograph.function(made)(jnp.float32(2.0))) == 3.0
    with pytest.raises(autograph.SourceUnavailableError, match="source of `made` is not available"):
        autograph.to_code(made)


def calls_made(f, x):
    return f(x) * 2


def test_callee_without_source_runs_unconverted_with_a_warning():
    namespace = {}
    exec("def made_callee(x):\n    return x + 1\n", namespace)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = jax.jit(autograph.convert(calls_made), static_argnums=0)(namespace["made_callee"],
                                                                      jnp.float32(2.0))
    assert float(out) == 6.0
    messages = [str(w.message) for w in caught]
    assert any("made_callee" in m and "unconverted" in m for m in messages), messages
