"""Per-call overhead of a cached ``autograph.function`` against ``jax.jit``.

Both wrap ``x + 1`` on a small array; calls alternate in rounds and the best
round of each counts, so machine noise affects both alike.
"""

from __future__ import annotations

import time

import jax
import jax.numpy as jnp

import autograph


def add_one(x):
    return x + 1


def _per_call(fn, x, calls):
    start = time.perf_counter()
    for _ in range(calls):
        out = fn(x)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / calls


def main(rounds: int = 20, calls: int = 2000) -> dict:
    x = jnp.ones(8, jnp.float32)
    jitted = jax.jit(add_one)
    function = autograph.function(add_one)
    jitted(x), function(x)
    t_jit, t_fn = [], []
    for _ in range(rounds):
        t_jit.append(_per_call(jitted, x, calls))
        t_fn.append(_per_call(function, x, calls))
    result = {"jax_jit_us": 1e6 * min(t_jit), "autograph_function_us": 1e6 * min(t_fn)}
    result["ratio"] = result["autograph_function_us"] / result["jax_jit_us"]
    print(f"per call: jax.jit {result['jax_jit_us']:.2f} us, autograph.function "
          f"{result['autograph_function_us']:.2f} us, ratio {result['ratio']:.3f}")
    return result


if __name__ == "__main__":
    main()
