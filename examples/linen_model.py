"""A Flax linen model with Python control flow in ``@nn.compact __call__``.

``Gated.__call__`` is decorated with ``@nn.compact`` and ``@autograph.convert``
(in that order: linen wraps the converted method). Its ``if`` on the
activations becomes a ``lax.cond`` and its ``for`` over layers a Python loop
(the layers are Python objects); ``model.init``, ``model.apply`` and
``jax.grad`` of the loss all run under ``jax.jit``. The script checks the
compiled forward pass against the eager one on inputs that take each branch,
then trains with Optax.

Run: ``python examples/linen_model.py [--steps 60]``.
"""

from __future__ import annotations

import argparse

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

import autograph


class Gated(nn.Module):
    width: int = 16
    depth: int = 2

    @nn.compact
    @autograph.convert
    def __call__(self, x):
        h = nn.Dense(self.width)(x)
        for _ in range(self.depth):
            h = nn.tanh(nn.Dense(self.width)(h))
        if h.mean() > 0:
            h = h * 2.0
        else:
            h = h - 1.0
        return nn.Dense(1)(h)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    ap.add_argument("--steps", type=int, default=60, help="training steps")
    args = ap.parse_args(argv)
    model = Gated()
    x = jax.random.normal(jax.random.key(0), (32, 3))
    y = jnp.cos(x.sum(axis=1, keepdims=True))
    params = jax.jit(model.init)(jax.random.key(1), x)

    for sign in (1.0, -1.0):  # inputs that take both branches
        got = jax.jit(model.apply)(params, sign * x)
        want = model.apply(params, sign * x)  # eager: Python `if` on concrete values
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    print("compiled == eager on both branches")

    opt = optax.adam(1e-2)
    state = opt.init(params)

    @jax.jit
    def step(params, state):
        loss, grads = jax.value_and_grad(
            lambda p: jnp.mean((model.apply(p, x) - y) ** 2))(params)
        updates, state = opt.update(grads, state)
        return optax.apply_updates(params, updates), state, loss

    losses = []
    for _ in range(args.steps):
        params, state, loss = step(params, state)
        losses.append(float(loss))
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} in {args.steps} steps")
    return {"losses": losses}


if __name__ == "__main__":
    main()
