"""What the staging proof costs: first calls of 1,000-step static loops that it clears.

A `for` over a static range stages as one `lax.scan` only once
``autograph.analysis.invisible`` has proven its body (and the helpers it calls)
free of effects. The proof runs when the loop is traced, so it adds to the
first call. Each row times a first call (convert + trace + compile + run) of a
fresh function, converted, against the same loop written as `lax.fori_loop`,
alternately, median of the rounds; the last column is the proof alone.
"""

from __future__ import annotations

import gc
import linecache
import statistics
import sys
import time

import jax
import jax.numpy as jnp
from jax import lax

import autograph
from autograph.analysis import invisible

PRELUDE = """\
import jax
import jax.numpy as jnp
from jax import lax

def _shift(x, i):
    return x * 0.99 + jnp.sin(x) * 0.01 + i * 1e-4

def _step(x, i):
    y = _shift(x, i)
    return jnp.where(y > 0, y, 0.5 * y)
"""

CASES = {
    "arithmetic and jnp": ("""
def f(x):
    for i in range(1000):
        x = x * 0.99 + jnp.sin(x) * 0.01 + i * 1e-4
    return x
""", lambda i, x: x * 0.99 + jnp.sin(x) * 0.01 + i * 1e-4),
    "a helper": ("""
def f(x):
    for i in range(1000):
        x = _shift(x, i)
    return x
""", lambda i, x: x * 0.99 + jnp.sin(x) * 0.01 + i * 1e-4),
    "a helper calling a helper, an `if`": ("""
def f(x):
    for i in range(1000):
        if x.sum() > 0:
            x = _step(x, i)
        else:
            x = -x
    return x
""", lambda i, x: lax.cond(x.sum() > 0, lambda x: jnp.where(
        (y := x * 0.99 + jnp.sin(x) * 0.01 + i * 1e-4) > 0, y, 0.5 * y), lambda x: -x, x)),
}


def _define(source: str, serial: int):
    filename = f"<staging_proof {serial}>"
    text = PRELUDE + source
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(text, filename, "exec"), namespace)
    return namespace["f"]


def _timed(make, x) -> float:
    gc.collect()
    start = time.perf_counter()
    jax.block_until_ready(make()(x))
    return time.perf_counter() - start


def _proof_time(source: str, x) -> float:
    """The proof alone, on the loop body the converted function passes it."""
    seen = []
    prove = invisible.prove_loop

    def timed(*args, **kwargs):
        start = time.perf_counter()
        verdict = prove(*args, **kwargs)
        seen.append((time.perf_counter() - start, verdict))
        return verdict

    invisible.prove_loop = timed
    try:
        jax.make_jaxpr(autograph.convert(_define(source, 10_000 + len(seen))))(x)
    finally:
        invisible.prove_loop = prove
    assert seen and all(v.proven for _, v in seen), seen
    return sum(t for t, _ in seen)


def main(rounds: int = 5) -> list:
    x = jnp.linspace(-1.0, 1.0, 256, dtype=jnp.float32)
    serial = iter(range(1_000_000))
    jax.jit(autograph.convert(_define(CASES["a helper"][0], next(serial))))(x)  # warm up
    rows = []
    for name, (source, body) in CASES.items():
        conv, fori = [], []
        for _ in range(rounds):
            conv.append(_timed(lambda: jax.jit(autograph.convert(_define(source, next(serial)))),
                               x))
            fori.append(_timed(lambda: jax.jit(lambda x: lax.fori_loop(0, 1000, body, x)), x))
        c, h = statistics.median(conv), statistics.median(fori)
        rows.append({"program": name, "converted_s": c, "fori_s": h, "ratio": c / h,
                     "proof_ms": 1000 * _proof_time(source, x)})
    return rows


if __name__ == "__main__":
    rows = main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
    print(f"{'first call of a 1,000-step loop':<40} {'converted':>10} {'fori_loop':>10} "
          f"{'ratio':>6} {'proof':>9}")
    for r in rows:
        print(f"{r['program']:<40} {r['converted_s']:>9.3f}s {r['fori_s']:>9.3f}s "
              f"{r['ratio']:>5.2f}x {r['proof_ms']:>7.2f}ms")
