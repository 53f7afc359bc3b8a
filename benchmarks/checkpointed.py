"""Reverse mode through `while` loops with no bound, which differentiate with checkpoints.

1. Gradients: four programs that loop until a condition holds (damped
   Newton's method, bisection, an adaptive-step ODE solver, a backtracking
   line search), run about 1, 10 and 1,000 times (Newton also about 100,000
   times): ``jax.grad(jax.jit(autograph.convert(f)))`` against eager
   ``jax.grad`` through the Python loop, in float64; the largest relative
   difference. At 100,000 trips the reference is the same number of Newton
   steps as a ``lax.scan`` (eager ``jax.grad`` through 100,000 Python steps
   takes hours).
2. Memory: ``jax.grad`` of 100,000 steps of a loop carrying a 1,000-element
   float32 state, from the compiled executables' memory analysis: the
   checkpointed form, the bounded form (``set_loop_options(
   maximum_iterations=100000)``) and a hand-written ``lax.scan``, which
   stores every step.
3. Time: ``jax.value_and_grad`` of that loop at 100, 1,000 and 100,000 steps
   against the hand-written ``lax.scan`` with the same trip count.

Run: ``python benchmarks/checkpointed.py`` (``--quick``: no 100,000-step
gradient).
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from loops import time_calls  # benchmarks/loops.py: per-call time of one round

import autograph
from autograph import jax_internals

STATE = 1000  # elements of the loop state in the memory and time measurements
MEMORY_STEPS = 100_000
TIME_STEPS = (100, 1000, 100_000)


def _example():
    """examples/until_converged.py, whose four programs are measured here."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples", "until_converged.py")
    spec = importlib.util.spec_from_file_location("autograph_example_until_converged", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_programs = _example()
newton, bisection, adaptive_ode, line_search = (
    _programs.newton, _programs.bisection, _programs.adaptive_ode, _programs.line_search)

_ODE = {"y": 1.0, "v": 0.0}
PROGRAMS = {  # name: (function, [arguments for about 1, 10, 1000 (, 100000) trips])
    "Newton": (newton, [(2.05, 1.0), (3.0, 0.5), (3.0, 0.0069), (3.0, 6.9e-5)]),
    "bisection": (bisection, [(1.2, 1.2019, 0.5), (0.5, 1.5, 0.5), (0.0, 2.0, 0.0012)]),
    "adaptive ODE": (adaptive_ode, [(_ODE, 2.0, 0.05, 1e-2), (_ODE, 2.0, 0.3, 1e-3),
                                    (_ODE, 2.0, 2.5, 1e-5)]),
    "line search": (line_search, [(np.full(8, 0.3), 0.5), (np.full(8, 2.0), 0.75),
                                  (np.full(8, 3.0), 0.99705)]),
}


def newton_steps(a, damping, n):
    """``newton``'s body exactly ``n`` times, as a ``lax.scan``: once the loop has run
    ``n`` steps, its gradient is this function's (the test decides only how many)."""
    def step(c, _):
        y, r = c
        y = y - damping * r / (3.0 * y * y + 1.0)
        return (y, y ** 3 + y - a), None

    y = jnp.ones_like(a)
    (y, _), _ = lax.scan(step, (y, y ** 3 + y - a), None, length=n)
    return y


def gradients(quick: bool = False) -> list[dict]:
    """Each program's gradient, converted and jitted against eager through Python (at
    100,000 trips, against the same number of steps as a ``lax.scan``: eager
    ``jax.grad`` through 100,000 Python steps takes hours)."""
    rows = []
    with jax_internals.enable_x64(True):
        for name, (fn, cases) in PROGRAMS.items():
            for args in cases[:3] if quick else cases:
                args = jax.tree.map(jnp.float64, args)
                got, staged_trips = jax.grad(jax.jit(autograph.convert(fn)), argnums=(0, 1),
                                             has_aux=True)(*args)
                start = time.perf_counter()
                if int(staged_trips) > 10_000:  # only Newton's last case
                    trips = int(staged_trips)
                    want = jax.jit(jax.grad(newton_steps, argnums=(0, 1)),
                                   static_argnums=2)(*args, trips)
                else:
                    grad = jax.grad(fn, argnums=(0, 1), has_aux=True)
                    want, trips = grad(*args)  # the Python loop
                eager_s = time.perf_counter() - start
                assert int(staged_trips) == trips, (name, trips, int(staged_trips))
                diff = max(float(np.max(np.abs(g - w) / np.maximum(np.abs(w), 1e-300)))
                           for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)))
                rows.append({"program": name, "trips": trips, "max_relative_difference": diff,
                             "eager_s": eager_s})
                print(f"{name}, {trips} trips: gradients differ by {diff:.2g} (relative; "
                      f"reference gradient {eager_s:.1f} s)", flush=True)
    return rows


def settle(x, w, n):
    i = 0
    while i < n:
        x = jnp.tanh(w * x) * 0.5 + 0.5 * x
        i = i + 1
    return jnp.sum(x * x)


def settle_bounded(x, w, n):
    i = 0
    while i < n:
        autograph.set_loop_options(maximum_iterations=MEMORY_STEPS)
        x = jnp.tanh(w * x) * 0.5 + 0.5 * x
        i = i + 1
    return jnp.sum(x * x)


def settle_scan(x, w, n):
    def step(x, _):
        return jnp.tanh(w * x) * 0.5 + 0.5 * x, None
    return jnp.sum(lax.scan(step, x, None, length=n)[0] ** 2)


def _peak_bytes(compiled) -> int | None:
    """Arguments, outputs and temporaries of a compiled executable (what it holds at once)."""
    m = compiled.memory_analysis()
    if m is None:
        return None
    return (m.temp_size_in_bytes + m.argument_size_in_bytes + m.output_size_in_bytes
            - m.alias_size_in_bytes)


def _inputs():
    return jnp.linspace(-1.0, 1.0, STATE, dtype=jnp.float32), jnp.float32(0.9)


def memory() -> dict:
    """Bytes the backward pass of ``MEMORY_STEPS`` steps holds, per form."""
    x, w = _inputs()
    n = jnp.int32(MEMORY_STEPS)
    checkpointed = jax.jit(jax.grad(autograph.convert(settle)))
    bounded = jax.jit(jax.grad(autograph.convert(settle_bounded)))
    every_step = jax.jit(jax.grad(settle_scan), static_argnums=2)
    g_c, g_b, g_s = checkpointed(x, w, n), bounded(x, w, n), every_step(x, w, MEMORY_STEPS)
    diff = max(float(jnp.max(jnp.abs(g_c - g))) for g in (g_b, g_s))
    row = {"steps": MEMORY_STEPS, "state_bytes": x.nbytes,
           "checkpointed_bytes": _peak_bytes(checkpointed.lower(x, w, n).compile()),
           "bounded_bytes": _peak_bytes(bounded.lower(x, w, n).compile()),
           "every_step_bytes": _peak_bytes(every_step.lower(x, w, MEMORY_STEPS).compile()),
           "max_abs_difference": diff}
    print(f"backward pass of {MEMORY_STEPS} steps of f32[{STATE}]: checkpointed "
          f"{row['checkpointed_bytes']} B, bounded form {row['bounded_bytes']} B, scan storing "
          f"every step {row['every_step_bytes']} B (gradients differ by {diff:.2g})", flush=True)
    return row


def timing(rounds: int = 5) -> list[dict]:
    """``value_and_grad`` of the loop, checkpointed against the hand-written scan."""
    x, w = _inputs()
    ours = jax.jit(jax.value_and_grad(autograph.convert(settle), argnums=(0, 1)))
    hand = jax.jit(jax.value_and_grad(settle_scan, argnums=(0, 1)), static_argnums=2)
    rows = []
    for steps in TIME_STEPS:
        a, b = (x, w, jnp.int32(steps)), (x, w, steps)
        jax.block_until_ready(ours(*a))
        jax.block_until_ready(hand(*b))
        calls = max(1, 3000 // steps)
        t_ours, t_hand = float("inf"), float("inf")
        for _ in range(rounds):  # alternately, the best of each
            t_ours = min(t_ours, time_calls(ours, a, calls))
            t_hand = min(t_hand, time_calls(hand, b, calls))
        rows.append({"steps": steps, "checkpointed_us": 1e6 * t_ours, "scan_us": 1e6 * t_hand})
        print(f"value_and_grad, {steps} steps of f32[{STATE}]: checkpointed "
              f"{1e6 * t_ours:.0f} us, hand-written scan {1e6 * t_hand:.0f} us "
              f"({t_ours / t_hand:.2f}x)", flush=True)
    return rows


SECOND_STEPS = 100


def _hvp_forms(f):
    """Hessian-vector products of ``f(x, w, n)`` in x: forward over reverse, and
    reverse over reverse (the gradient of <grad f, v>)."""
    def forward(x, w, n, v):
        return jax.jvp(lambda x: jax.grad(f)(x, w, n), (x,), (v,))[1]

    def reverse(x, w, n, v):
        return jax.grad(lambda x: jnp.vdot(jax.grad(f)(x, w, n), v))(x)
    return {"forward over reverse": forward, "reverse over reverse": reverse}


def second_order(rounds: int = 5) -> list[dict]:
    """Hessian-vector products through the loop, checkpointed against the hand-written
    scan differentiated the same way."""
    x, w = _inputs()
    v = jnp.cos(3.0 * x)
    ours = _hvp_forms(autograph.convert(settle))
    hand = _hvp_forms(settle_scan)
    a, b = (x, w, jnp.int32(SECOND_STEPS), v), (x, w, SECOND_STEPS, v)
    rows = []
    for form in ours:
        mine = jax.jit(ours[form])
        theirs = jax.jit(hand[form], static_argnums=2)
        got, want = mine(*a), theirs(*b)
        assert float(jnp.max(jnp.abs(want))) > 0  # a product that is not 0
        diff = float(jnp.max(jnp.abs(got - want)) / jnp.max(jnp.abs(want)))
        calls = 10
        t_ours, t_hand = float("inf"), float("inf")
        for _ in range(rounds):
            t_ours = min(t_ours, time_calls(mine, a, calls))
            t_hand = min(t_hand, time_calls(theirs, b, calls))
        rows.append({"form": form, "steps": SECOND_STEPS, "checkpointed_us": 1e6 * t_ours,
                     "scan_us": 1e6 * t_hand, "max_relative_difference": diff})
        print(f"Hessian-vector product, {form}, {SECOND_STEPS} steps of f32[{STATE}]: "
              f"checkpointed {1e6 * t_ours:.0f} us, hand-written scan {1e6 * t_hand:.0f} us "
              f"({t_ours / t_hand:.2f}x; results differ by {diff:.2g}, relative)", flush=True)
    return rows


FIRST_STEPS = 1000


def _source_as_f(fn) -> str:
    """``fn``'s source, renamed ``f``: defined anew for each first call."""
    return inspect.getsource(fn).replace(f"def {fn.__name__}(", "def f(", 1)


def _with_steps(fn):
    return lambda x, w: fn(x, w, FIRST_STEPS)


def first_call(rounds: int = 3) -> dict:
    """Convert + trace + compile + first run of ``value_and_grad`` through the loop
    (a fresh function each time), against the hand-written scan's."""
    from first_call import _define, _first_call  # benchmarks/first_call.py
    x, w = _inputs()
    ours, hand = [], []
    for _ in range(rounds):
        ours.append(_first_call(lambda: jax.jit(jax.value_and_grad(
            autograph.convert(_define(_source_as_f(settle))), argnums=(0, 1))),
            (x, w, jnp.int32(FIRST_STEPS))))
        hand.append(_first_call(lambda: _with_steps(jax.jit(jax.value_and_grad(
            _define(_source_as_f(settle_scan)), argnums=(0, 1)), static_argnums=2)), (x, w)))
    row = {"steps": FIRST_STEPS, "checkpointed_ms": 1e3 * statistics.median(ours),
           "scan_ms": 1e3 * statistics.median(hand)}
    print(f"first call of value_and_grad, {FIRST_STEPS} steps of f32[{STATE}]: checkpointed "
          f"{row['checkpointed_ms']:.0f} ms, hand-written scan {row['scan_ms']:.0f} ms "
          f"({row['checkpointed_ms'] / row['scan_ms']:.2f}x)", flush=True)
    return row


def main(quick: bool = False, rounds: int = 5) -> dict:
    return {"gradients": gradients(quick), "memory": memory(), "time": timing(rounds),
            "second_order": second_order(rounds), "first_call": first_call()}


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
