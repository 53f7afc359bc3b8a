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
from autograph.runtime import calls


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
