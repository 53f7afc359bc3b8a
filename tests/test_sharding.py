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


EFFECTS = textwrap.dedent("""
    import warnings
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
    import autograph

    mesh = jax.make_mesh((4,), ("data",), axis_types=(AxisType.Auto,))
    split, repl = NamedSharding(mesh, P("data")), NamedSharding(mesh, P())

    def step(x, lr):
        total = jnp.float32(0)
        for i in range(20):
            total = total + jnp.sum(x) * lr
        print("x =", x, "total =", total)
        assert total < 1000, f"total is {total}"
        if total > 500:
            raise ValueError(f"total over 500: {total}")
        return total

    x = jax.device_put(np.arange(8, dtype=np.float32), split)
    # shardings over 4 devices: unordered callbacks from the start; lr a Python float
    sharded = autograph.function(step, in_shardings=(split, repl), out_shardings=repl)
    print("out", sharded(x, 0.5))
    jax.effects_barrier()
    for scale, error in ((10.0, AssertionError), (2.0, ValueError)):
        try:
            sharded(x * scale, 0.5)
            raise SystemExit(f"no {error.__name__}")
        except error as e:
            print(type(e).__name__, e)
    jax.effects_barrier()  # the failed runs are not raised again
    assert sharded.experimental_get_tracing_count() == 1

    # no shardings given, arguments sharded: traced again with unordered callbacks
    plain = autograph.function(step)
    print("plain", plain(x, 0.25), plain.experimental_get_tracing_count())
    jax.effects_barrier()
    print("plain one device", plain(np.ones(8, np.float32), 0.25))
    jax.effects_barrier()

    # an Explicit mesh (jax.make_mesh's default): a program jax.jit rejects is the
    # same error here, with no word about unrolling the loop
    explicit = jax.make_mesh((4,), ("data",))
    batches = NamedSharding(explicit, P(None, "data"))
    def train(w, xs):
        for i in range(xs.shape[0]):
            w = w - 0.1 * jax.grad(lambda w: jnp.mean(jnp.tanh(xs[i] @ w) ** 2))(w)
        return w
    xs = jax.device_put(np.ones((20, 8, 3), np.float32), batches)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            autograph.function(train)(np.ones(3, np.float32), xs)
            raise SystemExit("no sharding error")
        except Exception as e:
            print("explicit", type(e).__name__)
    assert not caught, [str(w.message) for w in caught]
""")


def test_print_assert_raise_and_python_floats_over_devices(tmp_path):
    script = tmp_path / "effects.py"
    script.write_text(EFFECTS)
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4",
               JAX_PLATFORMS="cpu")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    lines = out.stdout.splitlines()
    # printed once per run (from the first device), with the whole sharded value
    assert lines[:2] == ["x = [0. 1. 2. 3. 4. 5. 6. 7.] total = 280.0", "out 280.0"], lines
    assert "AssertionError total is 2800.0" in lines
    assert "ValueError total over 500: 560.0" in lines
    assert "plain 140.0 2" in lines  # the ordered trace JAX refused, then the unordered one
    assert "x = [1. 1. 1. 1. 1. 1. 1. 1.] total = 40.0" in lines
    assert "plain one device 40.0" in lines
    assert "explicit ShardingTypeError" in lines
