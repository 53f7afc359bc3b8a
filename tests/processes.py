"""Several JAX processes on this machine, for the multi-process tests.

Each process runs a script with ``RANK``, ``PROCESSES`` and ``COORDINATOR`` in its
environment (``localhost`` and a free port), on CPU devices whose collectives go
through gloo. Every process runs in a process group of its own; all of them are
killed when one fails or the time runs out, so that no test waits on a process
blocked in a collective.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def missing_gloo() -> str | None:
    """Why CPU processes cannot share collectives in this JAX build, or None if they can."""
    from autograph import jax_internals
    if not jax_internals.has_gloo_collectives():
        return "this jaxlib is built without gloo CPU collectives"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@dataclasses.dataclass
class Run:
    """What the processes printed, and how they ended."""

    stdout: list[str]
    stderr: list[str]
    returncodes: list[int | None]
    seconds: float
    failure: str | None

    def report(self) -> str:
        return f"{self.failure}\n" + "\n".join(
            f"--- process {rank} (status {code}) ---\n{out[-2000:]}\n{err[-4000:]}"
            for rank, (out, err, code) in enumerate(zip(self.stdout, self.stderr,
                                                         self.returncodes)))


def run_processes(argv: list[str], processes: int, devices: int, timeout: float,
                  env: dict[str, str] | None = None) -> Run:
    """Runs ``argv`` (a script and its arguments) as ``processes`` ranks of
    ``devices`` CPU devices each, all stopped after ``timeout`` seconds."""
    environ = dict(os.environ, **(env or {}), JAX_PLATFORMS="cpu", PROCESSES=str(processes),
                   COORDINATOR=f"localhost:{free_port()}",
                   XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}")
    outs = [tempfile.TemporaryFile("w+") for _ in range(processes)]
    errs = [tempfile.TemporaryFile("w+") for _ in range(processes)]
    start = time.monotonic()
    ranks = [subprocess.Popen([sys.executable, *argv], env=dict(environ, RANK=str(rank)),
                              stdout=outs[rank], stderr=errs[rank], text=True,
                              start_new_session=True)
             for rank in range(processes)]
    failure = None
    try:
        while any(r.poll() is None for r in ranks):
            failure = next((f"process {rank} exited with status {r.returncode}"
                            for rank, r in enumerate(ranks) if r.poll()), None)
            if failure is None and time.monotonic() - start > timeout:
                failure = f"timed out after {timeout:.0f} s"
            if failure is not None:
                break
            time.sleep(0.05)
    finally:
        for r in ranks:
            if r.poll() is None:
                os.killpg(r.pid, signal.SIGKILL)
            r.wait()
    seconds = time.monotonic() - start
    failure = failure or next((f"process {rank} exited with status {r.returncode}"
                               for rank, r in enumerate(ranks) if r.returncode), None)
    for f in outs + errs:
        f.seek(0)
    return Run([f.read() for f in outs], [f.read() for f in errs],
               [r.returncode for r in ranks], seconds, failure)
