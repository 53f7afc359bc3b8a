"""NumPy habits against hand-written JAX: item assignment, and `jax.grad` through `while`.

* An item-assignment loop (``out[i] = ...``, ``out[i] += ...``) converted,
  against the same loop written with ``.at[i].set``/``.add`` by hand.
* ``jax.grad`` through a ``while`` bounded by its counter (the bound found by
  the converter), against the same loop with
  ``autograph.set_loop_options(maximum_iterations=N)`` written by hand.

Run time of cached calls, best of rounds, measured alternately.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from loops import steady_pair

import autograph


def scatter(x):
    out = jnp.zeros(64)
    for i in range(64):
        out[i] = x[i] * 2.0
        out[i] += jnp.sin(x[i])
    return out


def scatter_by_hand(x):
    def body(i, out):
        out = out.at[i].set(x[i] * 2.0)
        return out.at[i].add(jnp.sin(x[i]))
    return jax.lax.fori_loop(0, 64, body, jnp.zeros(64))


def bounded(x):
    i = 0
    while x.sum() < 1e6 and i < 40:
        x = x * 1.1 + 0.01
        i += 1
    return x.sum()


def bounded_hinted(x):
    i = 0
    while x.sum() < 1e6 and i < 40:
        autograph.set_loop_options(maximum_iterations=40)
        x = x * 1.1 + 0.01
        i += 1
    return x.sum()


def main() -> list[dict]:
    x = jnp.linspace(0.0, 1.0, 64, dtype=jnp.float32)
    rows = []
    t_c, t_h = steady_pair(jax.jit(autograph.convert(scatter)), jax.jit(scatter_by_hand), (x,))
    rows.append({"program": "item assignment loop (64)", "converted_us": 1e6 * t_c,
                 "baseline": "hand-written .at[]", "baseline_us": 1e6 * t_h, "ratio": t_c / t_h})
    t_c, t_h = steady_pair(jax.jit(jax.grad(autograph.convert(bounded))),
                            jax.jit(jax.grad(autograph.convert(bounded_hinted))), (x,))
    rows.append({"program": "jax.grad through a counter-bounded while (40)",
                 "converted_us": 1e6 * t_c, "baseline": "set_loop_options by hand",
                 "baseline_us": 1e6 * t_h, "ratio": t_c / t_h})
    for r in rows:
        print(f"{r['program']}: {r['converted_us']:.1f} us vs {r['baseline']} "
              f"{r['baseline_us']:.1f} us ({r['ratio']:.2f}x)")
    return rows


if __name__ == "__main__":
    main()
