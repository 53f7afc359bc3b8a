"""First-call time of an ``if``/``elif`` chain: Python constants against arrays.

Each branch of a staged ``if`` is traced once, so the first call (trace +
compile) of a chain of N branches grows linearly with N, whether the
branches return Python constants (which the branches' outputs must promote
to one dtype) or arrays. The chain is written to a real file, as user code
is, and converted fresh for each N.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
import time

import jax

import autograph

SIZES = (4, 8, 16, 32)


def _chain(n: int, kind: str, where: str):
    lines = ["import jax.numpy as jnp", "", "", "def chain(x):"]
    for i in range(n):
        lines.append(f"    {'if' if i == 0 else 'elif'} x < {i}.0:")
        lines.append(f"        return {float(i)}" if kind == "python" else
                     f"        return jnp.float32({i}) * x")
    lines.append("    return -1.0" if kind == "python" else "    return -x")
    path = os.path.join(where, f"chain_{n}_{kind}.py")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location(f"chain_{n}_{kind}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.chain


def main(sizes=SIZES) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as where:
        for n in sizes:
            row = {"n": n}
            for kind in ("python", "array"):
                f = jax.jit(autograph.convert(_chain(n, kind, where)))
                start = time.perf_counter()
                jax.block_until_ready(f(2.5))
                row[f"{kind}_s"] = time.perf_counter() - start
            rows.append(row)
            print(f"elif chain of {n}: Python constants {row['python_s']:.3f} s, "
                  f"arrays {row['array_s']:.3f} s")
    return rows


if __name__ == "__main__":
    main()
