"""Data parallelism: an autograph.function with shardings over 8 CPU devices.

Run in a subprocess, since the device count is fixed when JAX starts
(``XLA_FLAGS=--xla_force_host_platform_device_count=8``).
"""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P
    import autograph

    assert jax.device_count() == 8, jax.devices()

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
        return w, jnp.stack(losses)

    rng = np.random.default_rng(0)
    xs = rng.normal(size=(40, 64, 5)).astype(np.float32)  # more steps than run as Python
    ys = np.tanh(xs @ np.arange(1, 6, dtype=np.float32) / 5)
    w0, lr = np.zeros(5, np.float32), np.float32(0.5)

    single = autograph.function(train)
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))  # automatic sharding
    repl, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P(None, "data"))
    parallel = autograph.function(train, in_shardings=(repl, batch, batch, repl),
                                  out_shardings=(repl, repl))

    w1, l1 = single(w0, xs, ys, lr)
    w8, l8 = parallel(w0, jax.device_put(xs, batch), jax.device_put(ys, batch), lr)
    lowered = parallel.lower(w0, xs, ys, lr).as_text()
    assert "scan" in str(parallel.trace(w0, xs, ys, lr).jaxpr) or "while" in lowered
    np.testing.assert_allclose(l8, l1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w8, w1, rtol=1e-5, atol=1e-6)
    assert float(l1[-1]) < float(l1[0])
    print("ok", float(l1[0]), float(l1[-1]))
""")


def test_data_parallel_training_matches_single_device(tmp_path):
    script = tmp_path / "data_parallel.py"  # a real file: converted code needs source
    script.write_text(SCRIPT)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8",
               JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("ok")
