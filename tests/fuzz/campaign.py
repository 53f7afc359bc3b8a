"""A seeded fuzzing campaign that records every outcome instead of stopping at a failure.

    python -m tests.fuzz.campaign --start 0 --count 5000 --out /tmp/fuzz0.jsonl
    python -m tests.fuzz.campaign --proof --start 0 --count 500 --out /tmp/proof0.jsonl

Program ``s`` is generated from ``RandomChooser(s)`` (inputs too), so any line
of the output can be reproduced with ``--start s --count 1``. Used to run long
budgets in shards and to collect distinct failures for shrinking
(``tests/fuzz/shrink.py``); ``tests/fuzz/test_fuzz.py`` is the pytest entry.

``--proof`` draws instead the programs a static-loop staging proof must refuse
or clear (``Generator(proof=True)``, ``tests/fuzz/staging_proof.py``), whose
effects the harness compares with plain ``jax.jit``'s (reproduce a line with
``--proof --start s --count 1``). Each line then also records the long loops
drawn (``loops``), those whose body only computes on arrays (``clean_loops``)
and, for a program that passed, the loops staged as one ``lax.scan``
(``scans``): more scans than clean loops means a loop with an effect or a
Python use of its index was staged and happened to agree; fewer, a clean loop
run as Python (which may be right: a body that keeps a Python value).
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


def program_and_inputs(seed: int, exclude=(), proof: bool = False):
    prog = grammar.generate(grammar.RandomChooser(seed), exclude=exclude, proof=proof)
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
    ap.add_argument("--proof", action="store_true",
                    help="draw the loops a staging proof must refuse or clear (staging_proof.py)")
    args = ap.parse_args(argv)
    import jax
    signal.signal(signal.SIGALRM, _alarm)

    programs = harness.ProgramDir()
    counts = collections.Counter()
    loops = collections.Counter()
    sink = sys.stdout if args.out == "-" else open(args.out, "w")
    t0 = time.time()
    try:
        for seed in range(args.start, args.start + args.count):
            prog, inputs = program_and_inputs(seed, [e for e in args.exclude.split(",") if e],
                                              proof=args.proof)
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
            loops["all"] += prog.loops
            loops["clean"] += prog.clean_loops
            rec = {"seed": seed, "kind": outcome.kind, "detail": outcome.detail,
                   "signature": outcome.signature, "secs": round(time.time() - t, 3),
                   "maybe_reads": prog.maybe_reads}
            if args.proof:
                # the loops drawn, those that only compute on arrays, and those staged
                rec.update(loops=prog.loops, clean_loops=prog.clean_loops)
                if outcome.kind == "ok":
                    signal.alarm(args.timeout)
                    try:
                        rec["scans"] = harness.staged_scans(prog.source, inputs[0], programs)
                    except Timeout:
                        rec["scans"] = None
                    finally:
                        signal.alarm(0)
            if outcome.kind in ("failure", "refused", "harness-error", "both_raised", "timeout"):
                rec["source"] = prog.source
                rec["inputs"] = outcome.inputs
            if rec.get("scans") is not None:
                loops["scans"] += rec["scans"]
                loops["clean_ok"] += prog.clean_loops
            sink.write(json.dumps(rec) + "\n")
            sink.flush()
            if args.clear_every and (seed - args.start + 1) % args.clear_every == 0:
                jax.clear_caches()
    finally:
        programs.cleanup()
    print(f"{sum(counts.values())} programs in {time.time() - t0:.0f}s: {dict(counts)}",
          file=sys.stderr)
    if args.proof:
        print(f"loops: {loops['all']}, of which only computing on arrays {loops['clean']}; "
              f"staged as a scan in the programs that passed: {loops['scans']} (of "
              f"{loops['clean_ok']} such loops there)", file=sys.stderr)


if __name__ == "__main__":
    main()
