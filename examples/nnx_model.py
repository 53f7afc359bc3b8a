"""A Flax NNX model with a data-dependent loop, trained with ``nnx.Optimizer``.

``Refiner.__call__`` encodes its input, then applies a residual block (a
``Linear`` and a ``BatchNorm``) *while* the activation's mean magnitude is
below a target, at most ``max_steps`` times, counting the steps it takes in
an ``nnx.Variable``; ``Dropout`` follows. The code is plain Python: the
``while`` on a traced condition becomes a ``lax`` loop, the ``BatchNorm``
statistics, the dropout random state and the step counter updated inside it
are carried and written back into the module, and the loop's counter
(``i < self.max_steps`` with ``i += 1``) bounds it, so ``nnx.value_and_grad``
differentiates through it in reverse mode with no hint.

The training step is spelled the natural way, ``nnx.jit(autograph.convert(
train_step))``; ``autograph.function(train_step)`` does the same. The script
checks the compiled step against the eager run of the same code (losses,
counter and BatchNorm statistics), then trains for a few steps.

Run: ``python examples/nnx_model.py [--steps 40]``.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import autograph


class Refiner(nnx.Module):
    def __init__(self, in_size: int, width: int, *, rngs: nnx.Rngs, target: float = 2.0,
                 max_steps: int = 4):
        self.encoder = nnx.Linear(in_size, width, rngs=rngs)
        self.block = nnx.Linear(width, width, rngs=rngs)
        self.norm = nnx.BatchNorm(width, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)
        self.head = nnx.Linear(width, 1, rngs=rngs)
        self.steps = nnx.Variable(jnp.array(0))
        self.target, self.max_steps = target, max_steps

    def __call__(self, x):
        h = jnp.tanh(self.encoder(x))
        i = 0
        while jnp.abs(h).mean() < self.target and i < self.max_steps:
            h = h + jax.nn.relu(self.norm(self.block(h)))
            self.steps[...] += 1
            i += 1
        return self.head(self.drop(h))


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


def make_data(key, n: int, in_size: int):
    kx, kw = jax.random.split(key)
    x = jax.random.normal(kx, (n, in_size))
    y = jnp.sin(x @ jax.random.normal(kw, (in_size, 1)))
    return x, y


def fresh(in_size: int, width: int, lr: float):
    model = Refiner(in_size, width, rngs=nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.sgd(lr, momentum=0.9), wrt=nnx.Param)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    ap.add_argument("--steps", type=int, default=40, help="training steps")
    ap.add_argument("--examples", type=int, default=64, help="training examples")
    ap.add_argument("--width", type=int, default=16, help="hidden width of the model")
    ap.add_argument("--lr", type=float, default=0.01, help="Adam's step size")
    args = ap.parse_args(argv)
    x, y = make_data(jax.random.key(1), args.examples, 4)

    print(autograph.to_code(Refiner.__call__))
    step = nnx.jit(autograph.convert(train_step))

    # the compiled step against the eager run of the same code, three steps each
    eager_model, eager_opt = fresh(4, args.width, args.lr)
    model, opt = fresh(4, args.width, args.lr)
    for _ in range(3):
        want = float(train_step(eager_model, eager_opt, x, y))
        got = float(step(model, opt, x, y))
        np.testing.assert_allclose(got, want, rtol=1e-4)
    assert int(model.steps[...]) == int(eager_model.steps[...])
    np.testing.assert_allclose(model.norm.mean[...], eager_model.norm.mean[...], rtol=1e-3,
                               atol=1e-5)
    print(f"compiled == eager: losses, {int(model.steps[...])} loop steps, BatchNorm statistics")

    losses = []
    for _ in range(args.steps):
        losses.append(float(step(model, opt, x, y)))
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f} in {args.steps} steps; "
          f"{int(model.steps[...])} loop steps in all")
    return {"losses": losses, "steps": int(model.steps[...])}


if __name__ == "__main__":
    main()
