"""The benchmark model of TensorFlow's graph guides: many small layers.

``SequentialModel`` is Flatten, 100 x Dense(64, relu), Dropout(0.2) (only
when ``training=True``), Dense(10), called on a [20, 28, 28] input, written
as plain Python classes holding ``jax.numpy`` arrays, Keras style. Its
``call`` loops over a Python list of layers and branches on Python values
(``training``, a layer's activation), so conversion keeps those as Python and
the compiled program is the unrolled stack.

As in the guide, ``model.call`` is timed eagerly (op by op) and wrapped in
``autograph.function`` (converted + ``jax.jit``), and, for reference, in plain
``jax.jit``. Graphs win for many small ops: the script prints the per-call
times and the ratios.

Run: ``python examples/dense_stack.py [--calls 100]``.
"""

from __future__ import annotations

import argparse
import time

import jax
import jax.numpy as jnp
import numpy as np

import autograph


class Flatten:
    def __call__(self, x):
        return x.reshape(x.shape[0], -1)


class Dense:
    def __init__(self, key, n_in: int, n_out: int, activation=None):
        limit = np.sqrt(6.0 / (n_in + n_out))  # Glorot uniform, as Keras
        self.kernel = jax.random.uniform(key, (n_in, n_out), jnp.float32, -limit, limit)
        self.bias = jnp.zeros(n_out, jnp.float32)
        self.activation = activation

    def __call__(self, x):
        y = x @ self.kernel + self.bias
        if self.activation is not None:
            y = self.activation(y)
        return y


class Dropout:
    def __init__(self, rate: float):
        self.rate = rate

    def __call__(self, x, training: bool = False, key=None):
        if not training or self.rate == 0.0:
            return x
        keep = jax.random.bernoulli(key, 1.0 - self.rate, x.shape)
        return jnp.where(keep, x / (1.0 - self.rate), 0.0)


class SequentialModel:
    def __init__(self, key, num_layers: int = 100, width: int = 64, in_size: int = 28 * 28,
                 classes: int = 10):
        keys = jax.random.split(key, num_layers + 1)
        self.flatten = Flatten()
        sizes = [in_size] + [width] * num_layers
        self.my_layers = [Dense(keys[i], sizes[i], sizes[i + 1], activation=jax.nn.relu)
                          for i in range(num_layers)]
        self.dropout = Dropout(0.2)
        self.dense_2 = Dense(keys[-1], width, classes)

    def call(self, x, training=False, key=None):
        x = self.flatten(x)
        for layer in self.my_layers:
            x = layer(x)
        x = self.dropout(x, training, key)
        x = self.dense_2(x)
        return x

    __call__ = call


def per_call_seconds(fn, x, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        out = fn(x)
    jax.block_until_ready(out)
    return (time.perf_counter() - start) / calls


def compare(num_layers: int = 100, batch: int = 20, calls: int = 100, rounds: int = 5,
            eager_calls: int | None = None, seed: int = 0) -> dict:
    """Per-call seconds (best round) of eager, ``autograph.function`` and ``jax.jit``.

    The three run in turn within each round, so machine noise hits them alike.
    """
    key_model, key_data = jax.random.split(jax.random.PRNGKey(seed))
    model = SequentialModel(key_model, num_layers)
    x = jax.random.uniform(key_data, (batch, 28, 28), jnp.float32)
    variants = {
        "eager": model.call,
        "autograph.function": autograph.function(model.call),
        "jax.jit": jax.jit(model.call),
    }
    reference = np.asarray(variants["eager"](x))
    for name, fn in variants.items():  # don't count the first call (build, trace, compile)
        np.testing.assert_allclose(np.asarray(fn(x)), reference, rtol=1e-4, atol=1e-5)
    eager_calls = eager_calls or max(1, calls // 10)
    best = {name: float("inf") for name in variants}
    for _ in range(rounds):
        for name, fn in variants.items():
            n = eager_calls if name == "eager" else calls
            best[name] = min(best[name], per_call_seconds(fn, x, n))
    return {"layers": num_layers, "batch": batch,
            "eager_us": 1e6 * best["eager"],
            "autograph_function_us": 1e6 * best["autograph.function"],
            "jax_jit_us": 1e6 * best["jax.jit"],
            "eager_over_function": best["eager"] / best["autograph.function"],
            "function_over_jit": best["autograph.function"] / best["jax.jit"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    parser.add_argument("--layers", type=int, default=100,
                        help="Dense(64, relu) layers in the stack")
    parser.add_argument("--batch", type=int, default=20, help="examples per call")
    parser.add_argument("--calls", type=int, default=100, help="compiled calls per round")
    parser.add_argument("--rounds", type=int, default=5,
                        help="timing rounds (the median is reported)")
    args = parser.parse_args(argv)

    r = compare(args.layers, args.batch, args.calls, args.rounds)
    print(f"SequentialModel: Flatten, {r['layers']} x Dense(64, relu), Dropout(0.2), Dense(10) "
          f"on [{r['batch']}, 28, 28]; per call (best of {args.rounds} rounds):")
    print(f"  eager               {r['eager_us']:10.1f} us")
    print(f"  autograph.function  {r['autograph_function_us']:10.1f} us")
    print(f"  jax.jit             {r['jax_jit_us']:10.1f} us")
    print(f"eager / autograph.function = {r['eager_over_function']:.1f}x faster compiled; "
          f"autograph.function / jax.jit = {r['function_over_jit']:.3f}")
    return r


if __name__ == "__main__":
    main()
