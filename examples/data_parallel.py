"""The training loop of ``training_loop.py``, data-parallel over every device of every process.

The same ``train_epoch`` (a ``for`` over the epoch's batches, one ``lax.scan``,
with a ``print`` every 10 steps) is compiled once with shardings: the parameters
and the optimizer state are replicated, each batch is split over a one-axis
``"data"`` mesh of all devices (``jax.devices()``, the devices of all processes).
Each process puts its own share of each batch on its devices with
``jax.make_array_from_process_local_data``, and reads the replicated results
back with ``multihost_utils.process_allgather``. The losses it prints are those
of the one-process run.

Run it as one process, on the devices JAX finds::

    python examples/data_parallel.py
    XLA_FLAGS=--xla_force_host_platform_device_count=4 python examples/data_parallel.py

or as several processes on this machine (CPU, two devices each, collectives
through gloo), which this script starts itself, on a free port::

    python examples/data_parallel.py --processes 2

On a cluster, start one process per host with ``--coordinator HOST:PORT
--processes N --rank R`` (see docs/distributed.md).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

import jax
import numpy as np
import optax
from jax.experimental import multihost_utils
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

import autograph

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:  # run as a script it is there already
    sys.path.append(HERE)
import training_loop  # noqa: E402 - the example next to this one


def gather(tree):
    """The whole value of each array in ``tree``, in every process, as NumPy arrays."""
    return multihost_utils.process_allgather(tree, tiled=True)


def start_process(coordinator: str, processes: int, rank: int) -> None:
    """Joins this process to the others; before anything else uses JAX."""
    # CPU devices of different processes reach each other through gloo
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=processes,
                               process_id=rank)


def local_rows(sharding: NamedSharding, shape: tuple[int, ...], axis: int) -> np.ndarray:
    """The indices along ``axis`` of the global array that this process's devices hold."""
    slices = {index[axis].indices(shape[axis])
              for index in sharding.addressable_devices_indices_map(shape).values()}
    return np.concatenate([np.arange(*s) for s in sorted(slices)])


def train(epochs: int = 2, batch_size: int = 64, learning_rate: float = 3e-3,
          seed: int = 0) -> dict:
    """Trains the MLP of ``training_loop`` over all devices; every process returns the
    same results."""
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(AxisType.Auto,))
    replicated = NamedSharding(mesh, P())
    split = NamedSharding(mesh, P(None, "data"))  # [steps, batch, ...]: the batch is split
    if batch_size % jax.device_count():
        raise SystemExit(f"--batch-size {batch_size} does not split over "
                         f"{jax.device_count()} devices")

    x_train, x_test, y_train, y_test = training_loop.load_digits(seed=seed)
    optimizer = optax.adam(learning_rate)
    params = training_loop.init_mlp(jax.random.PRNGKey(seed))
    train_epoch = autograph.function(
        training_loop.make_train_epoch(optimizer).python_function,
        in_shardings=(replicated, replicated, split, split, replicated),
        out_shardings=replicated)
    # the same values in every process: each puts them on its own devices
    params, opt_state, step = jax.device_put(
        (params, optimizer.init(params), np.int32(0)), replicated)

    rng = np.random.default_rng(seed)  # the same shuffles in every process
    losses, seconds = [], []
    for epoch in range(epochs):
        xs, ys = training_loop.batches(x_train, y_train, batch_size, rng)
        mine = local_rows(split, xs.shape, axis=1)  # this process's share of each batch
        xs = jax.make_array_from_process_local_data(split, xs[:, mine], xs.shape)
        ys = jax.make_array_from_process_local_data(split, ys[:, mine], ys.shape)
        start = time.perf_counter()
        params, opt_state, step, epoch_losses, train_acc = train_epoch(
            params, opt_state, xs, ys, step)
        epoch_losses, train_acc = gather((epoch_losses, train_acc))  # in every process
        seconds.append(time.perf_counter() - start)
        jax.effects_barrier()  # this epoch's prints first
        losses.append(epoch_losses)
        if jax.process_index() == 0:
            print(f"epoch {epoch + 1}: loss {epoch_losses[0]:.4f} -> {epoch_losses[-1]:.4f}; "
                  f"train accuracy {float(train_acc):.4f}", flush=True)
    # every process has the whole (replicated) parameters: each evaluates them itself
    params = gather(params)
    test_acc = float(training_loop.evaluate(params, x_test, y_test))
    steps_per_epoch = len(losses[0])
    return {"losses": np.concatenate(losses),
            "steps": int(gather(step)),
            "test_accuracy": test_acc,
            # the last epoch's time per step: the first epoch also compiles
            "step_ms": 1e3 * seconds[-1] / steps_per_epoch,
            "traces": train_epoch.experimental_get_tracing_count(),
            "devices": jax.device_count(), "processes": jax.process_count()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def launch(argv: list[str], processes: int, devices_per_process: int,
           timeout: float) -> str:
    """Runs this script as ``processes`` processes on this machine, each in a process
    group of its own, all stopped if one fails or ``timeout`` passes. Prints and
    returns what process 0 prints; exits with the others' errors if one fails."""
    coordinator = f"localhost:{free_port()}"
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_force_host_platform_device_count={devices_per_process}")
    outs = [tempfile.TemporaryFile("w+") for _ in range(processes)]
    errs = [tempfile.TemporaryFile("w+") for _ in range(processes)]
    ranks = [subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), *argv, "--coordinator", coordinator,
         "--processes", str(processes), "--rank", str(rank)],
        env=env, stdout=outs[rank], stderr=errs[rank], text=True, start_new_session=True)
        for rank in range(processes)]
    deadline = time.monotonic() + timeout
    failed = None
    while failed is None and any(r.poll() is None for r in ranks):
        failed = next((f"process {rank} exited with status {r.returncode}"
                       for rank, r in enumerate(ranks) if r.poll()), None)
        if failed is None and time.monotonic() > deadline:
            failed = f"timed out after {timeout:.0f} s"
        time.sleep(0.05)
    failed = failed or next((f"process {rank} exited with status {r.returncode}"
                             for rank, r in enumerate(ranks) if r.returncode), None)
    for r in ranks:  # the others would wait for the one that stopped, in a collective
        if r.poll() is None:
            os.killpg(r.pid, signal.SIGKILL)
        r.wait()
    for f in outs + errs:
        f.seek(0)
    # process 0's output, less gloo's word on each connection it makes
    output = "".join(line for line in outs[0].read().splitlines(keepends=True)
                     if not line.startswith("[Gloo]"))
    print(output, end="", flush=True)
    if failed is not None:
        for rank in range(processes):
            print(f"--- process {rank} ---\n{errs[rank].read()[-3000:]}", file=sys.stderr)
        raise SystemExit(f"error: {failed}")
    return output


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    parser.add_argument("--epochs", type=int, default=2, help="passes over the training set")
    parser.add_argument("--batch-size", type=int, default=64,
                        help="examples per batch, split over the devices")
    parser.add_argument("--learning-rate", type=float, default=3e-3, help="Adam's step size")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the data shuffle and the initial weights")
    parser.add_argument("--processes", type=int, default=1,
                        help="how many processes (started here, unless --rank is given)")
    parser.add_argument("--devices-per-process", type=int, default=2,
                        help="CPU devices of each process this script starts")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds before the processes started here are stopped")
    parser.add_argument("--coordinator", help="HOST:PORT of process 0, for --rank")
    parser.add_argument("--rank", type=int, help="this process's index (with --coordinator)")
    args = parser.parse_args(argv)

    if args.processes > 1 and args.rank is None:
        forwarded = ["--epochs", str(args.epochs), "--batch-size", str(args.batch_size),
                     "--learning-rate", str(args.learning_rate), "--seed", str(args.seed)]
        return {"output": launch(forwarded, args.processes, args.devices_per_process,
                                 args.timeout)}
    if args.rank is not None:
        start_process(args.coordinator, args.processes, args.rank)
    result = train(args.epochs, args.batch_size, args.learning_rate, args.seed)
    if jax.process_index() == 0:
        print(f"Final step {result['steps']}: loss {result['losses'][-1]:.4f}; "
              f"test accuracy {result['test_accuracy']:.4f} (devices: {result['devices']}, "
              f"processes: {result['processes']}, {result['step_ms']:.2f} ms per step, "
              f"traced {result['traces']}x)", flush=True)
    return result


if __name__ == "__main__":
    main()
