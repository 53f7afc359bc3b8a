"""The guides' many-small-layers model: eager vs ``autograph.function`` vs ``jax.jit``.

The model is ``examples/dense_stack.py``'s ``SequentialModel`` (Flatten,
100 x Dense(64, relu), Dropout(0.2) off at inference, Dense(10)) on a
[20, 28, 28] input, in two styles:

* ``captured``: ``model.call`` wrapped as in the guide, the weights captured
  (constants of the compiled program), one array argument per call;
* ``params``: a pure function of ``(params, x)``, the 202 weight arrays passed
  as a pytree argument on every call (the usual JAX style).

Per call, best round; the variants run in turn within each round, so machine
noise hits them alike.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import jax
import jax.numpy as jnp

import autograph


def _example():
    name = "autograph_example_dense_stack"
    if name not in sys.modules:
        path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                            "examples", "dense_stack.py")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def apply(params, x, training=False, key=None):
    """The same model as a pure function of its parameters."""
    x = x.reshape(x.shape[0], -1)
    for w, b in params["hidden"]:
        x = jax.nn.relu(x @ w + b)
    if training:
        keep = jax.random.bernoulli(key, 0.8, x.shape)
        x = jnp.where(keep, x / 0.8, 0.0)
    w, b = params["out"]
    return x @ w + b


def _best(variants, args, rounds, calls):
    ex = _example()
    best = {name: float("inf") for name in variants}
    for i in range(rounds):
        order = list(variants.items())
        for name, fn in order if i % 2 == 0 else order[::-1]:  # each goes first half the time
            n = max(1, calls[name])
            best[name] = min(best[name], ex.per_call_seconds(lambda x: fn(*args[:-1], x),
                                                             args[-1], n))
    return best


def measure(layers=100, batch=20, rounds=100, calls=10, eager_rounds=3, eager_calls=5) -> dict:
    ex = _example()
    key_model, key_data = jax.random.split(jax.random.PRNGKey(0))
    model = ex.SequentialModel(key_model, layers)
    x = jax.random.uniform(key_data, (batch, 28, 28), jnp.float32)
    params = {"hidden": [(d.kernel, d.bias) for d in model.my_layers],
              "out": (model.dense_2.kernel, model.dense_2.bias)}

    rows = {}
    for style, fn, args in [("captured", model.call, (x,)), ("params", apply, (params, x))]:
        function, jitted = autograph.function(fn), jax.jit(fn)
        want = fn(*args)
        for f in (function, jitted):  # first calls (trace + compile) are not timed
            assert jnp.allclose(f(*args), want, rtol=1e-4, atol=1e-5)
        eager = _best({"eager": fn}, args, eager_rounds, {"eager": eager_calls})["eager"]
        best = _best({"autograph.function": function, "jax.jit": jitted}, args, rounds,
                     {"autograph.function": calls, "jax.jit": calls})
        rows[style] = {"eager_us": 1e6 * eager,
                       "autograph_function_us": 1e6 * best["autograph.function"],
                       "jax_jit_us": 1e6 * best["jax.jit"],
                       "function_over_jit": best["autograph.function"] / best["jax.jit"],
                       "eager_over_function": eager / best["autograph.function"]}
    return {"layers": layers, "batch": batch, **rows}


def main() -> dict:
    r = measure()
    print(f"{r['layers']} x Dense(64) on [{r['batch']}, 28, 28], per call:")
    for style in ("captured", "params"):
        s = r[style]
        print(f"  weights {style:8s}  eager {s['eager_us']:9.1f} us  autograph.function "
              f"{s['autograph_function_us']:7.1f} us  jax.jit {s['jax_jit_us']:7.1f} us  "
              f"function/jit {s['function_over_jit']:.3f}  eager/function "
              f"{s['eager_over_function']:.1f}x")
    return r


if __name__ == "__main__":
    main()
