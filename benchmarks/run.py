"""Runs every benchmark (``make bench``): a table, ``results.json`` and ``compile_time.png``.

Each row of the table gives autograph's number, the baseline it is compared
with (measured in the same process, or in the same fresh process for the
first conversion), their ratio, and the goal.

``--quick`` runs fewer trip counts and rounds (a smoke run, not for numbers).
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))

import checkpointed  # noqa: E402
import conversion  # noqa: E402
import dense_stack  # noqa: E402
import early_exit  # noqa: E402
import elif_chain  # noqa: E402
import first_call  # noqa: E402
import function_call  # noqa: E402
import loops  # noqa: E402
import numpy_habits  # noqa: E402
import readme  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = (10, 30, 100, 300, 1000, 3000, 10000)


def _row(name, value, unit, baseline_name, baseline, goal=None, limit=None, ratio=None):
    ratio = value / baseline if ratio is None and baseline else ratio
    if limit is None:
        ok = None
    elif unit == "ratio" or goal and goal.startswith("ratio"):
        ok = ratio <= limit
    else:
        ok = value <= limit
    return {"benchmark": name, "value": value, "unit": unit, "baseline": baseline_name,
            "baseline_value": baseline, "ratio": ratio, "goal": goal, "ok": ok}


def table(results) -> list:
    rows = []
    ds = results["dense_stack"]
    for style, what in (("captured", "weights captured"), ("params", "params argument")):
        s = ds[style]
        rows.append(_row(f"dense_stack, {what}: autograph.function", s["autograph_function_us"],
                         "us", "jax.jit", s["jax_jit_us"], "ratio <= 1.05", 1.05))
        rows.append(_row(f"dense_stack, {what}: eager", s["eager_us"], "us",
                         "autograph.function", s["autograph_function_us"], "(speed-up)"))
    fc = results["function_call"]
    rows.append(_row("per call, x + 1: autograph.function", fc["autograph_function_us"], "us",
                     "jax.jit", fc["jax_jit_us"], "ratio <= 1.05", 1.05))
    rows.append(_row("per call, x + 1: autograph.function after eager on/off",
                     fc["after_toggle_us"], "us", "jax.jit", fc["jax_jit_us"], "ratio <= 1.05",
                     1.05))
    conv = results["conversion"]
    for name, label in (("loops", "if + while/break + for"), ("nested_ifs", "nested ifs")):
        r = conv[name]
        rows.append(_row(f"to_code, median of 50, {label}", r["median_ms"], "ms",
                         "CPython compile()", r["python_compile_median_ms"], "<= 5 ms", 5.0))
    tf = conv.get("tensorflow")
    if tf is not None:
        rows.append(_row(f"to_code, if + while/break + for, against TensorFlow "
                         f"{tf['tensorflow']}", tf["autograph_ms"], "ms", "TensorFlow AutoGraph",
                         tf["tensorflow_ms"], "ratio <= 0.05", 0.05))
    first = conv["first_conversion"]
    rows.append(_row("first to_code in a fresh process", first["first_ms"], "ms",
                     "2nd to_code there", first["second_ms"], "<= 50 ms", 50.0))
    for r in results["loops"]["first_call"]:
        unrolled = "" if r["unrolled_s"] is None else f" (unrolled: {r['unrolled_s']:.3f} s)"
        rows.append(_row(f"first call, range({r['n']}){unrolled}", r["converted_s"], "s",
                         "lax.fori_loop", r["fori_s"], None))
    for r in results["elif_chain"]:
        rows.append(_row(f"first call, if/elif chain of {r['n']} returning Python constants",
                         r["python_s"], "s", "the chain returning arrays", r["array_s"],
                         "ratio <= 1.5", 1.5))
    for r in results["numpy_habits"]:
        rows.append(_row(f"run time, {r['program']}", r["converted_us"], "us", r["baseline"],
                         r["baseline_us"], "ratio <= 1.05", 1.05))
    ee = results["early_exit"]
    k, n, v, g = ee["kernel"], ee["never_exits"], ee["vmapped"], ee["grad"]
    rows.append(_row(f"run time, escape kernel exiting at {k['exits_at']} of 1000",
                     k["converted_us"], "us", "hand while_loop", k["while_us"], "ratio <= 1.1",
                     1.1))
    rows.append(_row("run time, escape kernel exiting early", k["converted_us"], "us",
                     "hand masked scan", k["masked_us"], None))
    rows.append(_row("run time, escape kernel never exiting", n["converted_us"], "us",
                     "hand masked scan", n["masked_us"], "ratio <= 1.05", 1.05))
    rows.append(_row(f"run time, escape kernel vmapped over {v['points']} points",
                     v["converted_us"], "us", "hand while_loop", v["while_us"], None))
    rows.append(_row(f"jax.grad through an early exit (gradients differ by "
                     f"{g['max_abs_difference']:.1g})", g["converted_us"], "us",
                     "hand masked scan", g["masked_us"], "ratio <= 1.0", 1.0))
    ck = results["checkpointed"]
    worst = max(ck["gradients"], key=lambda r: r["max_relative_difference"])
    trips = sorted({r["trips"] for r in ck["gradients"]})
    rows.append(_row(f"jax.grad through a while with no bound: 4 programs, {trips[0]} to "
                     f"{trips[-1]} trips, largest relative difference ({worst['program']})",
                     worst["max_relative_difference"], "", "rtol", 1e-5, "ratio <= 1", 1.0))
    m = ck["memory"]
    for what, key in (("bounded form", "bounded_bytes"), ("scan storing every step",
                                                           "every_step_bytes")):
        if m["checkpointed_bytes"] is not None and m[key] is not None:
            rows.append(_row(f"backward pass of {m['steps']} steps of a {m['state_bytes']} B "
                             f"state, checkpointed: bytes", m["checkpointed_bytes"] / 2**20,
                             "MiB", what, m[key] / 2**20, None))
    for r in ck["time"]:
        goal = ("ratio <= 3", 3.0) if r["steps"] == 1000 else (None, None)
        rows.append(_row(f"value_and_grad, {r['steps']} steps of a while with no bound, "
                         f"checkpointed", r["checkpointed_us"], "us", "hand-written scan",
                         r["scan_us"], *goal))
    if ck.get("first_call"):
        r = ck["first_call"]
        rows.append(_row(f"first call, value_and_grad through a while with no bound, "
                         f"{r['steps']:,} steps", r["checkpointed_ms"], "ms",
                         "hand-written scan", r["scan_ms"], "ratio <= 1.5", 1.5))
    for r in ck.get("second_order", []):
        rows.append(_row(f"Hessian-vector product, {r['form']}, {r['steps']} steps of a "
                         f"while with no bound", r["checkpointed_us"], "us",
                         "hand-written scan", r["scan_us"], None))
    for r in results["first_call"]:
        rows.append(_row(f"first call, {r['program']}", r["converted_ms"], "ms",
                         "hand-written lax", r["lax_ms"], "ratio <= 1.1", 1.1))
    for r in results["loops"]["steady_state"]:
        rows.append(_row(f"run time, {r['program']}", r["converted_us"], "us",
                         "hand-written lax", r["lax_us"], "ratio <= 1.05", 1.05))
    return rows


def print_table(rows) -> None:
    w = max(len(r["benchmark"]) for r in rows)
    header = (f"{'benchmark':<{w}}  {'autograph':>11}  {'baseline':>11}  {'':<20} {'ratio':>9}  "
              f"{'goal':<14} ok")
    print(header)
    print("-" * len(header))
    for r in rows:
        ok = {None: "", True: "yes", False: "NO"}[r["ok"]]
        value = f"{r['value']:.3g} {r['unit']}" if r["value"] < 100 else \
            f"{r['value']:.0f} {r['unit']}"
        base = r["baseline_value"]
        base = f"{base:.3g} {r['unit']}" if base < 100 else f"{base:.0f} {r['unit']}"
        print(f"{r['benchmark']:<{w}}  {value:>11}  {base:>11}  {r['baseline']:<20} "
              f"{r['ratio']:>8.3f}x  {r['goal'] or '':<14} {ok}")


def plot(first_call_rows, path) -> bool:
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[examples]'): no plot")
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [r["n"] for r in first_call_rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.plot(n, [r["converted_s"] for r in first_call_rows], "o-",
            label="autograph.convert + jax.jit")
    ax.plot(n, [r["fori_s"] for r in first_call_rows], "s--", label="hand-written lax.fori_loop")
    unrolled = [(r["n"], r["unrolled_s"]) for r in first_call_rows if r["unrolled_s"] is not None]
    if unrolled:
        ax.plot(*zip(*unrolled), "^:", label="jax.jit of the unrolled Python loop")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("trip count N of  for i in range(N): x = x * 0.99 + sin(x)")
    ax.set_ylabel("first call: trace + compile + run (s)")
    ax.set_title("Compile time against trip count (f32[1000], CPU)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv=None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    quick = "--quick" in argv
    import jax
    start = time.perf_counter()
    results = {"python": platform.python_version(), "jax": jax.__version__,
               "device": str(jax.devices()[0]), "cpu_count": os.cpu_count()}
    print("== dense_stack ==")
    results["dense_stack"] = (dense_stack.measure(rounds=3, calls=5, eager_rounds=1, eager_calls=1)
                              if quick else dense_stack.main())
    print("== function_call ==")
    results["function_call"] = function_call.main(rounds=3, calls=200) if quick else \
        function_call.main()
    print("== conversion ==")
    results["conversion"] = conversion.main()
    print("== elif chain ==")
    results["elif_chain"] = elif_chain.main(sizes=(4, 8) if quick else elif_chain.SIZES)
    print("== numpy habits ==")
    results["numpy_habits"] = numpy_habits.main()
    print("== early exit ==")
    results["early_exit"] = early_exit.main(rounds=3 if quick else 15)
    print("== jax.grad through loops with no bound ==")
    results["checkpointed"] = checkpointed.main(quick=quick, rounds=3 if quick else 5)
    print("== first call ==")
    results["first_call"] = first_call.main(rounds=2 if quick else 7)
    print("== loops ==")
    results["loops"] = loops.main(sizes=(10, 100) if quick else SIZES, unroll_limit=1000)
    rows = table(results)
    results["table"] = rows
    results["seconds"] = time.perf_counter() - start
    print()
    print_table(rows)
    path = os.path.join(HERE, "results.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
    if not quick:  # README's speed section is written from these numbers
        readme.update(os.path.join(os.path.dirname(HERE), "README.md"), results)
    png = os.path.join(HERE, "compile_time.png")
    wrote_png = plot(results["loops"]["first_call"], png)
    print(f"wrote {path}" + (f" and {png}" if wrote_png else "")
          + f" ({results['seconds']:.0f} s)")
    return results


if __name__ == "__main__":
    main()
