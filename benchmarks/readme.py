"""Writes README's speed section from ``results.json`` (``make bench`` calls it).

The section lies between two markers in README.md; everything in it comes
from the numbers of the last full run, so the README never states a speed
that was not measured.
"""

from __future__ import annotations

import json
import os
import sys

START, END = "<!-- speed:start (written by benchmarks/readme.py) -->", "<!-- speed:end -->"


def _x(a, b) -> str:
    return f"{a / b:.2f}x"


def render(r: dict) -> str:
    ds, fc, conv = r["dense_stack"], r["function_call"], r["conversion"]
    ee, loops = r["early_exit"], r["loops"]
    k, n, v, g = ee["kernel"], ee["never_exits"], ee["vmapped"], ee["grad"]
    first = loops["first_call"]
    fc_ratios = [row["converted_s"] / row["fori_s"] for row in first]
    steady = loops["steady_state"]
    lines = [
        f"Measured by `make bench` on {r['cpu_count']} CPU cores ({r['device']}, JAX "
        f"{r['jax']}); every ratio is against a baseline run in the same process. "
        f"Full table: `benchmarks/results.json`.",
        "",
        f"- **Early exit.** The escape-time kernel (`for i in range(1000): ... if "
        f"abs(z) > 2: return i`, exiting at step {k['exits_at']}): "
        f"{k['converted_us']:.1f} us, {_x(k['converted_us'], k['while_us'])} a hand-written "
        f"early-exit `lax.while_loop` and {_x(k['converted_us'], k['masked_us'])} a "
        f"hand-written masked loop; never exiting, {_x(n['converted_us'], n['masked_us'])} the "
        f"masked loop. Vmapped over {v['points']} points: "
        f"{_x(v['converted_us'], v['while_us'])} the hand-written `while_loop` (the converted "
        f"loop carries its exit flag and return value).",
        f"- **`jax.grad` through an early exit** (exit after ~30 of 1000 steps): "
        f"{g['converted_us']:.0f} us, {_x(g['converted_us'], g['masked_us'])} the masked "
        f"scan written by hand; gradients equal within {g['max_abs_difference']:.1g}.",
    ]
    if r.get("checkpointed") is not None:
        lines.append(_checkpointed(r["checkpointed"]))
    lines += [
        "- **First call** (convert + trace + compile + run) against the same function "
        "written with `lax`: " + "; ".join(
            f"{row['program']} {row['ratio']:.2f}x" for row in r["first_call"]) + ".",
        f"- A `for` loop from 10 to 10,000 steps: first call "
        f"{min(fc_ratios):.2f}–{max(fc_ratios):.2f}x `lax.fori_loop`.",
        f"- **`to_code`** of a fresh 14-line `if` + `while`/`break` + `for` function: "
        f"{conv['loops']['median_ms']:.1f} ms (nested `if`s: "
        f"{conv['nested_ifs']['median_ms']:.1f} ms; first conversion in a fresh process: "
        f"{conv['first_conversion']['first_ms']:.1f} ms).",
    ]
    tf = conv.get("tensorflow")
    if tf is not None:
        lines[-1] = lines[-1][:-1] + (
            f"; TensorFlow {tf['tensorflow']} AutoGraph on the same functions: "
            f"{tf['tensorflow_ms']:.0f} ms ({tf['tensorflow_ms'] / tf['autograph_ms']:.1f}x "
            f"slower).")
    lines += [
        f"- **Per call** on `x + 1`: `autograph.function` {fc['autograph_function_us']:.2f} us, "
        f"{_x(fc['autograph_function_us'], fc['jax_jit_us'])} `jax.jit`. The guides' "
        f"100-layer model: "
        f"{_x(ds['captured']['autograph_function_us'], ds['captured']['jax_jit_us'])} "
        f"`jax.jit` with captured weights, "
        f"{_x(ds['params']['autograph_function_us'], ds['params']['jax_jit_us'])} with the "
        f"weights passed as an argument, and "
        f"{ds['captured']['eager_over_function']:.0f}x faster than eager.",
        "- **Steady state** of converted programs against the same programs in `lax`: " + "; ".join(
            f"{row['program']} {row['ratio']:.2f}x" for row in steady) + ".",
    ]
    return "\n".join(lines)


def _checkpointed(ck: dict) -> str:
    worst = max(row["max_relative_difference"] for row in ck["gradients"])
    trips = [row["trips"] for row in ck["gradients"]]
    m = ck["memory"]
    text = (f"- **`jax.grad` through a `while` with no bound** (checkpointed): the gradients "
            f"of Newton's method, bisection, an adaptive ODE solver and a line search "
            f"({min(trips)} to {max(trips):,} trips) equal eager `jax.grad` through the Python "
            f"loop within {worst:.1g} (relative, float64).")
    if None not in (m["checkpointed_bytes"], m["bounded_bytes"], m["every_step_bytes"]):
        text += (f" The backward pass of {m['steps']:,} steps of a {m['state_bytes']:,}-byte "
                 f"state holds {m['checkpointed_bytes'] / 2**20:.2f} MiB, against "
                 f"{m['bounded_bytes'] / 2**20:.0f} MiB for the bounded form and "
                 f"{m['every_step_bytes'] / 2**20:.0f} MiB for a scan that stores every step.")
    text += (" `value_and_grad` against the hand-written scan: " + ", ".join(
        f"{_x(row['checkpointed_us'], row['scan_us'])} at {row['steps']:,} steps"
        for row in ck["time"]) + ".")
    first = ck.get("first_call")
    if first:
        text += (f" First call (convert, trace, compile, run) of `value_and_grad` over "
                 f"{first['steps']:,} steps: {_x(first['checkpointed_ms'], first['scan_ms'])} "
                 f"the scan's.")
    second = ck.get("second_order") or []
    if second:
        text += (" Hessian-vector products over " + f"{second[0]['steps']:,} steps, against "
                 "the hand-written scan differentiated the same way: " + ", ".join(
                     f"{row['form']} {_x(row['checkpointed_us'], row['scan_us'])}"
                     for row in second) + ".")
    return text


def update(path: str, results: dict) -> None:
    with open(path) as f:
        text = f.read()
    if START not in text or END not in text:
        raise ValueError(f"{path} has no speed markers")
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as f:
        f.write(head + START + "\n" + render(results) + "\n" + END + tail)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "results.json")) as f:
        results = json.load(f)
    update(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(here), "README.md"),
           results)
