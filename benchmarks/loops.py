"""Loop speed: first-call time against trip count, and steady-state run time.

First call = convert + trace + compile + run, in this process, for
``for i in range(N): x = x * 0.99 + jnp.sin(x)`` on f32[1000]: converted,
against hand-written ``lax.fori_loop`` and ``jax.jit`` of the Python-unrolled
loop (skipped above 1000 iterations, where it takes minutes). Steady state:
cached calls of converted while/for/cond programs against the same programs
written with ``lax`` by hand.
"""

from __future__ import annotations

import gc
import statistics
import time

import jax
import jax.numpy as jnp
from jax import lax

import autograph


def _source_loop(n):
    # A fresh function per measurement, so nothing is cached between rows.
    namespace = {"jnp": jnp}
    exec(compile(f"def f(x):\n    for i in range({n}):\n        x = x * 0.99 + jnp.sin(x)\n"
                 f"    return x\n", f"<loop{n}>", "exec"), namespace)
    return namespace["f"]


def _first_call(make_fn, x, rounds: int = 3):
    """Median over ``rounds`` of a first call; each starts from a collected heap and
    leaves the function's teardown (freeing its executable) untimed."""
    times = []
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        fn = make_fn()
        jax.block_until_ready(fn(x))
        times.append(time.perf_counter() - start)
        del fn
    return statistics.median(times)


def first_call_rows(sizes=(10, 100, 1000, 10000), unroll_limit=1000):
    import linecache
    rows = []
    x = jnp.linspace(0.0, 1.0, 1000, dtype=jnp.float32)
    jax.jit(autograph.convert(c_cond))(x)  # warm up imports and JAX's own caches
    for n in sizes:
        def converted():
            fn = _source_loop(n)
            src = (f"def f(x):\n    for i in range({n}):\n        x = x * 0.99 + jnp.sin(x)\n"
                   f"    return x\n")
            linecache.cache[f"<loop{n}>"] = (len(src), None, src.splitlines(True), f"<loop{n}>")
            return jax.jit(autograph.convert(fn))

        def fori():
            return jax.jit(lambda x: lax.fori_loop(0, n, lambda i, x: x * 0.99 + jnp.sin(x), x))

        def unrolled():
            return jax.jit(_source_loop(n))

        t_conv = _first_call(converted, x)
        t_fori = _first_call(fori, x)
        t_unroll = _first_call(unrolled, x, rounds=1) if n <= unroll_limit else None
        rows.append({"n": n, "converted_s": t_conv, "fori_s": t_fori, "unrolled_s": t_unroll,
                     "ratio_vs_fori": t_conv / t_fori})
    return rows


# Steady state: the same program, converted and by hand.

def c_while(x, n):
    i = 0
    while i < n:
        x = x * 0.999 + 0.001
        i += 1
    return x


def h_while(x, n):
    return lax.while_loop(lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * 0.999 + 0.001), (0, x))[1]


def c_for(x):
    for i in range(200):
        if x.sum() > 1e6:
            break
        x = x * 0.99 + jnp.sin(x)
    return x


def h_for(x):
    def step(carry, _):
        done, x = carry
        done = jnp.logical_or(done, x.sum() > 1e6)
        new = jnp.where(done, x, x * 0.99 + jnp.sin(x))
        return (done, new), None
    return lax.scan(step, (jnp.bool_(False), x), None, length=200)[0][1]


def c_cond(x):
    if x.sum() > 0:
        y = jnp.tanh(x) * 2
    else:
        y = x * x
    return y


def h_cond(x):
    return lax.cond(x.sum() > 0, lambda: jnp.tanh(x) * 2, lambda: x * x)


def time_calls(fn, args, calls):
    """Mean per-call time of ``calls`` calls of ``fn(*args)``, waiting for the last result."""
    start = time.perf_counter()
    for _ in range(calls):
        out = fn(*args)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / calls


def steady_pair(a, b, args, rounds=15, calls=60):
    """Best per-call time of two compiled functions, measured alternately."""
    jax.block_until_ready(a(*args))
    jax.block_until_ready(b(*args))
    ta, tb = [], []
    for _ in range(rounds):
        ta.append(time_calls(a, args, calls))
        tb.append(time_calls(b, args, calls))
    return min(ta), min(tb)


def steady_rows():
    x = jnp.linspace(-1.0, 1.0, 1000, dtype=jnp.float32)
    cases = [("while (traced n=500)", c_while, h_while, (x, jnp.int32(500))),
             ("for range(200) + break", c_for, h_for, (x,)),
             ("if/else (cond)", c_cond, h_cond, (x,))]
    rows = []
    for name, conv, hand, args in cases:
        t_c, t_h = steady_pair(jax.jit(autograph.convert(conv)), jax.jit(hand), args)
        rows.append({"program": name, "converted_us": 1e6 * t_c, "lax_us": 1e6 * t_h,
                     "ratio": t_c / t_h})
    return rows


def code_size():
    def f(x, n):
        i = 0
        while i < n:
            if x > 100.0:
                break
            x = x * 2.0
            i += 1
        for j in range(3):
            x = x - j
        return x
    code = autograph.to_code(f)
    return {"source_lines": 9, "generated_lines": len(code.strip().splitlines())}


def main(sizes=(10, 100, 1000, 10000), unroll_limit=1000) -> dict:
    results = {"first_call": first_call_rows(sizes, unroll_limit), "steady_state": steady_rows(),
               "code_size": code_size()}
    print(f"{'N':>6} {'converted':>10} {'fori_loop':>10} {'unrolled':>10} {'conv/fori':>9}")
    for r in results["first_call"]:
        unrolled = f"{r['unrolled_s']:.3f}s" if r["unrolled_s"] is not None else "skipped"
        print(f"{r['n']:>6} {r['converted_s']:>9.3f}s {r['fori_s']:>9.3f}s {unrolled:>10} "
              f"{r['ratio_vs_fori']:>8.2f}x")
    for r in results["steady_state"]:
        print(f"steady {r['program']:<24} converted {r['converted_us']:8.1f} us  "
              f"lax {r['lax_us']:8.1f} us  ratio {r['ratio']:.3f}")
    cs = results["code_size"]
    print(f"generated code: {cs['generated_lines']} lines for a {cs['source_lines']}-line function "
          f"({cs['generated_lines'] / cs['source_lines']:.2f}x)")
    return results


if __name__ == "__main__":
    main()
