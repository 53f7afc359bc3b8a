"""Many processes: ``import autograph`` starts no backend, and an ``autograph.function``
trains over a mesh of two processes of two CPU devices each as it does in one.

The processes run as subprocesses (``tests/processes.py``): a free port, gloo
collectives, a hard timeout that kills every process group.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from tests.processes import missing_gloo, run_processes

IMPORT_STARTS_NOTHING = textwrap.dedent("""
    import importlib, pkgutil, os
    import autograph
    import autograph.converters, autograph.runtime
    for package in (autograph, autograph.converters, autograph.runtime):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(module.name)
    import jax
    from autograph import jax_internals
    assert not jax_internals.backends_started(), "a backend started on import"
    jax.distributed.initialize(coordinator_address=os.environ["COORDINATOR"],
                               num_processes=1, process_id=0)
    assert jax.process_count() == 1 and jax.device_count() >= 1
    print("ok")
""")


def test_import_starts_no_backend_and_distributed_initialize_still_works():
    # jax.distributed.initialize must come before the backend starts; importing
    # autograph (and every module under it) must not start it
    from tests.processes import free_port
    env = dict(os.environ, JAX_PLATFORMS="cpu", COORDINATOR=f"localhost:{free_port()}")
    out = subprocess.run([sys.executable, "-c", IMPORT_STARTS_NOTHING], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "ok"


TRAIN = textwrap.dedent("""
    import os
    import numpy as np
    import autograph  # before jax.distributed.initialize: it starts nothing
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P

    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=os.environ["COORDINATOR"],
                               num_processes=int(os.environ["PROCESSES"]),
                               process_id=int(os.environ["RANK"]))

    def loss_fn(w, x, y):
        return jnp.mean((jnp.tanh(x @ w) - y) ** 2)

    def train(w, xs, ys, lr):
        losses = []
        for i in range(xs.shape[0]):
            loss, g = jax.value_and_grad(loss_fn)(w, xs[i], ys[i])
            if jnp.linalg.norm(g) > 1.0:
                g = g / jnp.linalg.norm(g)
            w = w - lr * g
            losses.append(loss)
            if i % 10 == 9:
                print("step", i + 1, "loss", loss)
        assert jnp.all(jnp.isfinite(w)), "w is not finite"
        return w, jnp.stack(losses)

    rng = np.random.default_rng(0)
    xs = rng.normal(size=(20, 16, 5)).astype(np.float32)  # more steps than run as Python
    ys = np.tanh(xs @ np.arange(1, 6, dtype=np.float32) / 5)
    w0 = np.zeros(5, np.float32)

    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(AxisType.Auto,))
    repl, split = NamedSharding(mesh, P()), NamedSharding(mesh, P(None, "data"))
    def share(a):  # this process's rows of each batch, as a global array
        rows = sorted({index[1].indices(a.shape[1])
                       for index in split.addressable_devices_indices_map(a.shape).values()})
        mine = np.concatenate([np.arange(*r) for r in rows])
        return jax.make_array_from_process_local_data(split, a[:, mine], a.shape)

    parallel = autograph.function(train, in_shardings=(repl, split, split, repl),
                                  out_shardings=(repl, repl))
    # 0.5: a Python float, with its entry in in_shardings as under jax.jit
    w, losses = parallel(w0, share(xs), share(ys), 0.5)
    w, losses = (multihost_utils.process_allgather(a, tiled=True) for a in (w, losses))
    jax.effects_barrier()

    @autograph.function(in_shardings=split)
    def check_positive(xs):
        assert jnp.min(xs) > 0, f"a batch holds {jnp.min(xs)}"
        return xs
    try:
        check_positive(share(xs))
        raise SystemExit("a failed assert did not fail the call")
    except AssertionError as e:
        failed = str(e)

    one = jax.local_devices()[0]  # the same function on one device: the one-process run
    w1, losses1 = autograph.function(train)(*jax.device_put((w0, xs, ys), one), 0.5)
    np.testing.assert_allclose(losses, losses1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w, w1, rtol=1e-5, atol=1e-6)
    assert float(losses[-1]) < float(losses[0])
    jax.effects_barrier()
    print("rank", jax.process_index(), "of", jax.process_count(), "devices",
          jax.device_count(), "traces", parallel.experimental_get_tracing_count(),
          "failed:", failed, flush=True)
""")


def test_two_processes_train_like_one(tmp_path):
    reason = missing_gloo()
    if reason is not None:
        print(f"skipped: {reason}")
        pytest.skip(reason)
    script = tmp_path / "train.py"  # a real file: converted code needs source
    script.write_text(TRAIN)
    run = run_processes([str(script)], processes=2, devices=2, timeout=90)
    assert run.failure is None, run.report()
    for rank, out in enumerate(run.stdout):
        assert f"rank {rank} of 2 devices 4 traces 1 failed: a batch holds -" in out, run.report()
    # the print in the sharded loop: once per run, by process 0, each value whole; the
    # one-device runs print in each process
    printed = [[line.split() for line in out.splitlines() if line.startswith("step ")]
               for out in run.stdout]
    assert [p[1] for p in printed[0]] == ["10", "20", "10", "20"], run.report()
    assert [p[1] for p in printed[1]] == ["10", "20"], run.report()
    np.testing.assert_allclose([float(p[-1]) for p in printed[0][:2]],
                               [float(p[-1]) for p in printed[0][2:]], rtol=1e-5)
    print(f"2 processes x 2 devices: {run.seconds:.1f} s")
