"""A seeded fuzzing campaign that records every outcome instead of stopping at a failure.

    python -m tests.fuzz.campaign --start 0 --count 5000 --out /tmp/fuzz0.jsonl

Program ``s`` is generated from ``RandomChooser(s)`` (inputs too), so any line
of the output can be reproduced with ``--start s --count 1``. Used to run long
budgets in shards and to collect distinct failures for shrinking
(``tests/fuzz/shrink.py``); ``tests/fuzz/test_fuzz.py`` is the pytest entry.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from tests.fuzz import grammar, harness  # noqa: E402


def random_inputs(rng: random.Random, count: int = 3):
    sets = []
    for _ in range(count):
        x = rng.choice([rng.uniform(-3, 3), rng.uniform(-3, 3), 0.0, 1.0, -0.5])
        v = [rng.choice([rng.uniform(-3, 3), rng.uniform(-1, 1), 0.0]) for _ in range(3)]
        n = rng.randint(0, 4)
        sets.append(harness.make_inputs(x, v, n))
    return sets


def program_and_inputs(seed: int, exclude=()):
    prog = grammar.generate(grammar.RandomChooser(seed), exclude=exclude)
    inputs = random_inputs(random.Random(f"inputs-{seed}"))
    return prog, inputs


class Timeout(BaseException):
    """A program ran too long (a BaseException: the harness catches Exception)."""


def _alarm(signum, frame):
    raise Timeout()


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--out", default="-")
    ap.add_argument("--clear-every", type=int, default=200)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--exclude", default="", help="comma-separated grammar features to leave out")
    args = ap.parse_args(argv)
    import jax
    signal.signal(signal.SIGALRM, _alarm)

    programs = harness.ProgramDir()
    counts = collections.Counter()
    sink = sys.stdout if args.out == "-" else open(args.out, "w")
    t0 = time.time()
    try:
        for seed in range(args.start, args.start + args.count):
            prog, inputs = program_and_inputs(seed, [e for e in args.exclude.split(",") if e])
            t = time.time()
            signal.alarm(args.timeout)
            try:
                outcome = harness.check_source(prog.source, inputs, programs)
            except Timeout:
                outcome = harness.Outcome("timeout", f"over {args.timeout}s", "timeout",
                                          prog.source)
            except Exception as e:  # noqa: BLE001 - a harness bug; record it
                outcome = harness.Outcome("harness-error", repr(e), "harness", prog.source)
            finally:
                signal.alarm(0)
            counts[outcome.kind] += 1
            rec = {"seed": seed, "kind": outcome.kind, "detail": outcome.detail,
                   "signature": outcome.signature, "secs": round(time.time() - t, 3),
                   "maybe_reads": prog.maybe_reads}
            if outcome.kind in ("failure", "refused", "harness-error", "both_raised", "timeout"):
                rec["source"] = prog.source
                rec["inputs"] = outcome.inputs
            sink.write(json.dumps(rec) + "\n")
            sink.flush()
            if args.clear_every and (seed - args.start + 1) % args.clear_every == 0:
                jax.clear_caches()
    finally:
        programs.cleanup()
    print(f"{sum(counts.values())} programs in {time.time() - t0:.0f}s: {dict(counts)}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
