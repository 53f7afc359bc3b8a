"""Runs every benchmark and writes ``benchmarks/results.json`` (``make bench``)."""

from __future__ import annotations

import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(__file__))

import conversion  # noqa: E402
import loops  # noqa: E402


def main() -> None:
    import jax
    results = {"python": platform.python_version(), "jax": jax.__version__,
               "device": str(jax.devices()[0])}
    print("== conversion ==")
    results["conversion"] = conversion.main()
    print("== loops ==")
    results["loops"] = loops.main()
    path = os.path.join(os.path.dirname(__file__), "results.json")
    with open(path, "w") as f:
        json.dump(results, f, indent=2)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
