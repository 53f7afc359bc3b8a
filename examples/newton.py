"""Newton's method: a loop that stops with ``break`` once the step is small.

``newton(f, x)`` iterates ``x -= f(x) / f'(x)``, with ``f'`` from
``jax.grad``, until the step falls below ``tol`` (``break``) or ``max_iter``
steps are done. Converted, the ``while`` becomes a ``lax.while_loop`` that
stops at run time, so each input takes only the steps it needs; under
``jax.vmap`` the batch runs until its slowest element has converged.

Run: ``python examples/newton.py``. Prints the converted code, then solves
``x**3 = 2`` in plain Python and under ``jax.jit``, and Kepler's equation
``E - e sin E = M`` for many mean anomalies at once with ``jax.vmap``.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import autograph


def newton(f, x, tol=1e-6, max_iter=50):
    """A root of ``f`` near ``x``, and the number of steps taken."""
    df = jax.grad(f)
    steps = 0
    while steps < max_iter:
        step = f(x) / df(x)
        x = x - step
        steps += 1
        if jnp.abs(step) < tol:
            break
    return x, steps


def cube_minus_two(x):
    return x ** 3 - 2.0


def kepler(mean_anomaly, eccentricity):
    """The function whose root is the eccentric anomaly E."""
    return lambda e_anomaly: e_anomaly - eccentricity * jnp.sin(e_anomaly) - mean_anomaly


def solve_kepler(mean_anomaly, eccentricity):
    return newton(kepler(mean_anomaly, eccentricity), mean_anomaly, tol=1e-5)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    parser.add_argument("--points", type=int, default=1000, help="mean anomalies for vmap")
    parser.add_argument("--eccentricity", type=float, default=0.9,
                        help="orbital eccentricity in Kepler's equation (0 to 1)")
    args = parser.parse_args(argv)

    print(autograph.to_code(newton))

    root, steps = newton(cube_minus_two, 1.0)
    print(f"plain Python:  2 ** (1/3) = {float(root):.7f} after {steps} steps")
    compiled = jax.jit(autograph.convert(newton), static_argnums=0)
    root_c, steps_c = compiled(cube_minus_two, jnp.float32(1.0))
    print(f"jax.jit:       2 ** (1/3) = {float(root_c):.7f} after {int(steps_c)} steps")
    assert int(steps_c) == steps and abs(float(root_c) - float(root)) < 1e-6

    m = jnp.linspace(0.0, 2 * np.pi, args.points, dtype=jnp.float32)
    solve = jax.jit(jax.vmap(autograph.convert(solve_kepler), in_axes=(0, None)))
    e_anomaly, steps = solve(m, args.eccentricity)
    residual = jnp.max(jnp.abs(e_anomaly - args.eccentricity * jnp.sin(e_anomaly) - m))
    print(f"jax.vmap:      Kepler's equation for {args.points} mean anomalies, e = "
          f"{args.eccentricity}: max residual {float(residual):.2e}, steps per element "
          f"{int(steps.min())}..{int(steps.max())}")
    return {"root": float(root_c), "steps": int(steps_c), "kepler_residual": float(residual)}


if __name__ == "__main__":
    main()
