"""Loops that run until a condition holds, differentiated with ``jax.grad``.

Newton's method until the residual is small, bisection until the interval
is, an adaptive-step ODE solver until ``t >= t1`` and a backtracking line
search until Armijo's condition holds: none has a bound on its trip count.
Converted, each ``while`` is a ``lax.while_loop``, and reverse-mode
``jax.grad`` goes through it with checkpoints: the backward pass keeps a
fixed number of copies of the loop state (128 by default;
``autograph.set_loop_options(checkpoints=S)`` sets it) and recomputes the
steps between them, so its memory does not grow with the trip count.

Run: ``python examples/until_converged.py``. Prints, for each program, the
gradient of ``autograph.function(f)`` next to eager ``jax.grad`` through
the Python loop, and the number of steps each took.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np

import autograph


def newton(a, damping):
    """y with y**3 + y = a, by damped Newton steps until the residual is small."""
    y = jnp.ones_like(a)
    r = y ** 3 + y - a
    n = 0
    while jnp.abs(r) > 1e-3:
        y = y - damping * r / (3.0 * y * y + 1.0)
        r = y ** 3 + y - a
        n += 1
    return y, n


def bisection(lo, hi, w):
    """The cube root of 2 in [lo, hi], cutting the interval at lo + w * (hi - lo)."""
    n = 0
    while hi - lo > 1e-3:
        mid = lo + w * (hi - lo)
        if mid ** 3 > 2.0:
            hi = mid
        else:
            lo = mid
        n += 1
    return 0.5 * (lo + hi) + 0.1 * lo * hi, n


def adaptive_ode(state, k, t1, tol):
    """A damped oscillator from t = 0 to t1 by Heun steps whose size adapts to the error."""
    t = jnp.zeros_like(k)
    h = 0.1 * jnp.ones_like(k)
    n = 0
    while t < t1:
        h = jnp.minimum(h, t1 - t)
        f0 = {"y": state["v"], "v": -k * state["y"] - 0.1 * state["v"]}
        euler = {key: state[key] + h * f0[key] for key in state}
        f1 = {"y": euler["v"], "v": -k * euler["y"] - 0.1 * euler["v"]}
        heun = {key: state[key] + 0.5 * h * (f0[key] + f1[key]) for key in state}
        err = jnp.abs(heun["y"] - euler["y"]) + jnp.abs(heun["v"] - euler["v"]) + 1e-9
        if err < tol:
            t = t + h
            state = heun
        h = h * jnp.clip(0.9 * jnp.sqrt(tol / err), 0.2, 5.0)
        n += 1
    return state["y"] + 0.5 * state["v"], n


def _objective(x):
    return jnp.sum(x ** 4) + jnp.sum(x ** 2)


def line_search(x, beta):
    """A backtracking line search along the steepest descent until Armijo's condition holds."""
    d = -jax.grad(_objective)(x)
    f0 = _objective(x)
    slope = -jnp.sum(d * d)
    t = 1.0
    xt = x + d
    ft = _objective(xt)
    n = 0
    while ft > f0 + 1e-4 * t * slope:
        t = t * beta
        xt = x + t * d
        ft = _objective(xt)
        n += 1
    return ft + jnp.sum(xt), n


ODE_STATE = {"y": 1.0, "v": 0.0}
CASES = {  # name: (function, arguments), differentiated in the first two
    "newton": (newton, (3.0, 0.5)),
    "bisection": (bisection, (0.5, 1.5, 0.5)),
    "adaptive_ode": (adaptive_ode, (ODE_STATE, 2.0, 2.5, 1e-4)),
    "line_search": (line_search, (np.full(8, 2.0), 0.75)),
}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    parser.add_argument("--ode-tolerance", type=float, default=1e-4,
                        help="error per step of the adaptive ODE solver (smaller: more steps)")
    tolerance = parser.parse_args(argv).ode_tolerance
    results = {}
    for name, (fn, args) in CASES.items():
        if name == "adaptive_ode":
            args = args[:-1] + (tolerance,)
        grad = jax.grad(fn, argnums=(0, 1), has_aux=True)
        want, steps = grad(*args)  # eager: the Python loop
        got, staged = jax.grad(autograph.function(fn), argnums=(0, 1), has_aux=True)(*args)
        diff = max(float(np.max(np.abs(np.asarray(g) - np.asarray(w))))
                   for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)))
        results[name] = {"steps": int(staged), "max_abs_difference": diff}
        shown = jax.tree.map(lambda v: np.round(np.asarray(v, np.float64), 4).tolist(), got)
        print(f"{name:13s} {int(staged):4d} steps (eager {steps:4d}); gradient {shown}; "
              f"differs from eager jax.grad by {diff:.1g}")
    return results


if __name__ == "__main__":
    main()
