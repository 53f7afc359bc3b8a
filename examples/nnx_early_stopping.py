"""A Flax NNX training epoch that stops early, compiled as one function.

``train_epoch`` runs a training step per batch (``nnx.value_and_grad`` and
``nnx.Optimizer.update`` on a model with ``BatchNorm`` and ``Dropout``) and
``break``s out of the loop as soon as a batch's loss is below a target. The
code is plain Python; ``autograph.function`` compiles the whole epoch: the
loop over the batches is staged, and so is the ``break`` on the traced loss,
so the epoch costs one call, with no trip to the host per batch. Everything
the steps update (parameters, Adam's state, the ``BatchNorm`` statistics,
the ``Dropout`` random stream) is written back into the same ``model`` and
``optimizer`` objects, for exactly the steps that ran.

The script first checks one compiled epoch against the eager run of the same
code (``autograph.run_eagerly``): the loss, the number of steps, the
parameters, the statistics and the random stream's count. Then it trains
epoch after epoch, each one stopping at the first batch under the target,
which comes sooner as the model learns.

Run: ``python examples/nnx_early_stopping.py [--epochs 8] [--target 0.05]``.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx

import autograph


class Regressor(nnx.Module):
    def __init__(self, in_size: int, width: int, *, rngs: nnx.Rngs):
        # no bias before BatchNorm, which takes the mean out: its gradient would be
        # rounding noise, which Adam scales up to full-size steps
        self.hidden = nnx.Linear(in_size, width, use_bias=False, rngs=rngs)
        self.norm = nnx.BatchNorm(width, rngs=rngs)
        self.drop = nnx.Dropout(0.1, rngs=rngs)
        self.out = nnx.Linear(width, 1, rngs=rngs)

    def __call__(self, x):
        h = jax.nn.relu(self.norm(self.hidden(x)))
        return self.out(self.drop(h))


def loss_fn(model, x, y):
    return jnp.mean((model(x) - y) ** 2)


def train_step(model, optimizer, x, y):
    loss, grads = nnx.value_and_grad(loss_fn)(model, x, y)
    optimizer.update(model, grads)
    return loss


def train_epoch(model, optimizer, xs, ys, target):
    """One pass over the batches, stopping after the first whose loss is below ``target``."""
    steps = 0
    loss = jnp.float32(jnp.inf)
    for x, y in zip(xs, ys):
        loss = train_step(model, optimizer, x, y)
        steps += 1
        if loss < target:
            break
    return loss, steps


def make_batches(key, n_batches: int, batch: int, in_size: int):
    kx, kw = jax.random.split(key)
    x = jax.random.normal(kx, (n_batches, batch, in_size))
    y = jnp.sin(x @ jax.random.normal(kw, (in_size, 1)))
    return x, y


def fresh(in_size: int, width: int, lr: float):
    model = Regressor(in_size, width, rngs=nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.adam(lr), wrt=nnx.Param)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    ap.add_argument("--epochs", type=int, default=8, help="passes over the batches")
    ap.add_argument("--batches", type=int, default=32, help="batches per epoch")
    ap.add_argument("--batch-size", type=int, default=16, help="examples per batch")
    ap.add_argument("--width", type=int, default=32, help="hidden width of the model")
    ap.add_argument("--lr", type=float, default=0.01, help="Adam's step size")
    ap.add_argument("--target", type=float, default=0.05,
                    help="stop an epoch at the first batch whose loss is under this")
    args = ap.parse_args(argv)
    in_size = 4
    xs, ys = make_batches(jax.random.key(1), args.batches, args.batch_size, in_size)
    target = jnp.float32(args.target)
    epoch = autograph.function(train_epoch)

    # one compiled epoch against the eager run of the same code; a target the first
    # epoch reaches part way through, so both stop at the same batch
    check_target = jnp.float32(0.5)
    eager_model, eager_opt = fresh(in_size, args.width, args.lr)
    with autograph.run_eagerly():
        want_loss, want_steps = epoch(eager_model, eager_opt, xs, ys, check_target)
    model, optimizer = fresh(in_size, args.width, args.lr)
    start = jax.tree.map(jnp.copy, nnx.state((model, optimizer)))  # to start again from
    traced_before = epoch.experimental_get_tracing_count()
    loss, steps = epoch(model, optimizer, xs, ys, check_target)
    np.testing.assert_allclose(float(loss), float(want_loss), rtol=1e-4)
    assert int(steps) == int(want_steps)
    np.testing.assert_allclose(model.hidden.kernel[...], eager_model.hidden.kernel[...],
                               rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(model.norm.mean[...], eager_model.norm.mean[...], rtol=1e-3,
                               atol=1e-5)
    assert int(model.drop.rngs.count[...]) == int(eager_model.drop.rngs.count[...])
    print(f"compiled == eager: loss {float(loss):.4f} after {int(steps)} of {args.batches} "
          f"steps, parameters, BatchNorm statistics, dropout stream")

    # the same objects, their state set back (nnx.jit traces new objects again)
    nnx.update((model, optimizer), start)
    losses, step_counts = [], []
    for e in range(args.epochs):
        loss, steps = epoch(model, optimizer, xs, ys, target)
        losses.append(float(loss))
        step_counts.append(int(steps))
        stopped = " (stopped early)" if int(steps) < args.batches else ""
        print(f"epoch {e + 1}: loss {float(loss):.4f} after {int(steps)} of {args.batches} "
              f"steps{stopped}")
    traces = epoch.experimental_get_tracing_count() - traced_before
    print(f"{int(optimizer.step[...])} optimizer steps in {args.epochs} epochs; "
          f"the epoch traced {traces}x")
    return {"losses": losses, "steps": step_counts, "optimizer_steps": int(optimizer.step[...]),
            "traces": traces}


if __name__ == "__main__":
    main()
