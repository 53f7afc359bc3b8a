"""Per-call overhead of a cached ``autograph.function`` against ``jax.jit``.

Both wrap ``x + 1`` on a small array; calls alternate in rounds and the best
round of each counts, so machine noise affects both alike. A second
``autograph.function``, made after eager mode was switched on and off again
(``run_functions_eagerly(True)`` then ``(False)``), must be as fast as the first.
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
    autograph.run_functions_eagerly(True)
    autograph.run_functions_eagerly(False)
    after_toggle = autograph.function(add_one)
    jitted(x), function(x), after_toggle(x)
    t_jit, t_fn, t_toggle = [], [], []
    for _ in range(rounds):
        t_jit.append(_per_call(jitted, x, calls))
        t_fn.append(_per_call(function, x, calls))
        t_toggle.append(_per_call(after_toggle, x, calls))
    result = {"jax_jit_us": 1e6 * min(t_jit), "autograph_function_us": 1e6 * min(t_fn),
              "after_toggle_us": 1e6 * min(t_toggle)}
    result["ratio"] = result["autograph_function_us"] / result["jax_jit_us"]
    result["after_toggle_ratio"] = result["after_toggle_us"] / result["jax_jit_us"]
    print(f"per call: jax.jit {result['jax_jit_us']:.2f} us, autograph.function "
          f"{result['autograph_function_us']:.2f} us, ratio {result['ratio']:.3f}; made after "
          f"eager mode was on and off: {result['after_toggle_us']:.2f} us, ratio "
          f"{result['after_toggle_ratio']:.3f}")
    return result


if __name__ == "__main__":
    main()
