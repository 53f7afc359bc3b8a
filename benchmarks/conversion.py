"""Conversion speed: `to_code` on fresh functions (new code objects, new files).

Each function is about 20 lines of nested `if`s (and, for the loop variant,
`while` + `break` + `for`), written to its own file so the measurement includes
finding and parsing the source. Prints the median and the ratio of generated
to source lines.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import tempfile
import time

IFS = '''
import jax.numpy as jnp

def f{i}(x, y):
    if x > 0:
        if y > 0:
            z = x * y + {i}
        elif y < -1:
            z = x - y
        else:
            z = x
        w = z * 2
    else:
        if y > x:
            z = -x
            w = y
        else:
            z = x + y
            w = z * z
    if z > w:
        out = z - w
    else:
        out = w - z
    return out + w
'''

LOOPS = '''
import jax.numpy as jnp

def f{i}(x, n):
    i = 0
    total = 0.0
    while i < n:
        if total > 100.0:
            break
        total = total + x * i
        i += 1
    for j in range({i} + 3):
        if j % 2 == 0:
            continue
        total = total * 0.5
    if total > 10.0:
        return total
    return -total
'''


def _load(directory, name, text):
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as f:
        f.write(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def measure(template: str, count: int = 50) -> dict:
    import autograph
    times, ratios, compile_times = [], [], []
    with tempfile.TemporaryDirectory() as d:
        for i in range(count):
            text = template.format(i=i)
            name = f"fresh_{abs(hash(template)) % 1000}_{i}"
            module = _load(d, name, text)
            fn = getattr(module, f"f{i}")
            start = time.perf_counter()
            code = autograph.to_code(fn)
            times.append(time.perf_counter() - start)
            # Baseline: CPython compiling the same file (parse + bytecode), in this process.
            start = time.perf_counter()
            compile(text, os.path.join(d, name + ".py"), "exec")
            compile_times.append(time.perf_counter() - start)
            src_lines = len(text.strip().split("\ndef ", 1)[1].splitlines()) + 1
            ratios.append(len(code.strip().splitlines()) / src_lines)
    return {"median_ms": 1e3 * statistics.median(times), "max_ms": 1e3 * max(times),
            "lines_ratio": statistics.median(ratios),
            "python_compile_median_ms": 1e3 * statistics.median(compile_times)}


def first_conversion() -> dict:
    """Import autograph and convert one function in a fresh process.

    The baseline, measured in that process right after: a second, different
    function (of the same shape) converted there, and CPython compiling the file.
    """
    import subprocess
    code = (
        "import time, tempfile, os, importlib.util\n"
        "d = tempfile.mkdtemp(); p = os.path.join(d, 'm.py')\n"
        f"text = {IFS.format(i=0) + IFS.format(i=1)!r}\n"
        "open(p, 'w').write(text)\n"
        "spec = importlib.util.spec_from_file_location('m', p)\n"
        "m = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(m)\n"
        "import autograph\n"
        "t = time.perf_counter(); autograph.to_code(m.f0); first = time.perf_counter() - t\n"
        "t = time.perf_counter(); autograph.to_code(m.f1); second = time.perf_counter() - t\n"
        "t = time.perf_counter(); compile(text, p, 'exec'); comp = time.perf_counter() - t\n"
        "print(1e3 * first, 1e3 * second, 1e3 * comp)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, second, comp = map(float, out.stdout.strip().splitlines()[-1].split())
    return {"first_ms": first, "second_ms": second, "python_compile_ms": comp}


def first_conversion_ms() -> float:
    """Import autograph and convert one function in a fresh process."""
    return first_conversion()["first_ms"]


def against_tensorflow(count: int = 40) -> dict | None:
    """``to_code`` of the same fresh functions by autograph and by TensorFlow AutoGraph.

    Both run in one process: this one when ``tensorflow`` imports here, else
    the Python named by ``AUTOGRAPH_BENCH_TF_PYTHON`` (one with TensorFlow and
    this package installed). None when neither is available.
    """
    try:
        import tensorflow  # noqa: F401
    except ImportError:
        python = os.environ.get("AUTOGRAPH_BENCH_TF_PYTHON")
        if not python:
            return None
        import json
        import subprocess
        here = os.path.dirname(os.path.abspath(__file__))
        out = subprocess.run(
            [python, "-c", f"import sys, json; sys.path.insert(0, {here!r}); import conversion; "
                           f"print(json.dumps(conversion.against_tensorflow({count})))"],
            capture_output=True, text=True, check=True,
            env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
        return json.loads(out.stdout.strip().splitlines()[-1])
    import tensorflow as tf

    import autograph
    ours, theirs = [], []
    with tempfile.TemporaryDirectory() as d:
        for i in range(2 * count + 2):
            module = _load(d, f"versus_tf_{i}", LOOPS.format(i=i))
            fn = getattr(module, f"f{i}")
            convert = autograph.to_code if i % 2 == 0 else tf.autograph.to_code
            start = time.perf_counter()
            convert(fn)
            (ours if i % 2 == 0 else theirs).append(time.perf_counter() - start)
    # the first of each is the first conversion in this process
    return {"autograph_ms": 1e3 * statistics.median(ours[1:]),
            "tensorflow_ms": 1e3 * statistics.median(theirs[1:]),
            "autograph_first_ms": 1e3 * ours[0], "tensorflow_first_ms": 1e3 * theirs[0],
            "tensorflow": tf.__version__}


def main() -> dict:
    first = first_conversion()
    results = {"nested_ifs": measure(IFS), "loops": measure(LOOPS),
               "first_conversion_ms": first["first_ms"], "first_conversion": first,
               "tensorflow": against_tensorflow()}
    for name in ("nested_ifs", "loops"):
        r = results[name]
        print(f"to_code {name:11s} median {r['median_ms']:.2f} ms  max {r['max_ms']:.2f} ms  "
              f"generated/source lines {r['lines_ratio']:.2f}  "
              f"(CPython compile() of the file: {r['python_compile_median_ms']:.2f} ms)")
    print(f"first conversion in a fresh process: {first['first_ms']:.1f} ms "
          f"(a second function there: {first['second_ms']:.1f} ms)")
    tf = results["tensorflow"]
    if tf is None:
        print("TensorFlow is not importable (set AUTOGRAPH_BENCH_TF_PYTHON): no comparison")
    else:
        print(f"to_code against TensorFlow AutoGraph {tf['tensorflow']}: autograph "
              f"{tf['autograph_ms']:.2f} ms, TensorFlow {tf['tensorflow_ms']:.1f} ms "
              f"({tf['tensorflow_ms'] / tf['autograph_ms']:.1f}x faster)")
    return results


if __name__ == "__main__":
    main()
