"""A model whose ``__call__`` has data-dependent Python control flow.

``Refiner`` is an Equinox module: encode, then apply a residual block *while*
the activation's norm is above a threshold, at most ``max_steps`` times, then
read out. Each input takes its own number of steps. ``__call__`` is decorated
with ``@autograph.function``: the ``while`` becomes a ``lax`` loop, and
``autograph.set_loop_options(maximum_iterations=...)`` makes it a masked
``lax.scan`` of ``max_steps`` steps, so reverse-mode ``jax.grad`` goes
through it. Equinox modules are pytrees, so the module itself is a traced
argument of the compiled call (its weights are not baked in as constants).

The script prints the converted ``__call__``, checks the compiled model
against its plain-Python (eager) run, and trains it for a few steps with
``jax.grad`` through the loop.

Run: ``python examples/model_call.py [--steps 60]``.
"""

from __future__ import annotations

import argparse

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax

import autograph


class Refiner(eqx.Module):
    encoder: eqx.nn.Linear
    block_in: eqx.nn.Linear
    block_out: eqx.nn.Linear
    head: eqx.nn.Linear
    threshold: float = eqx.field(static=True)
    max_steps: int = eqx.field(static=True)

    def __init__(self, in_size: int, width: int, out_size: int, *, key,
                 threshold: float = 1.0, max_steps: int = 8):
        k1, k2, k3, k4 = jax.random.split(key, 4)
        self.encoder = eqx.nn.Linear(in_size, width, key=k1)
        self.block_in = eqx.nn.Linear(width, width, key=k2)
        self.block_out = eqx.nn.Linear(width, width, key=k3)
        self.head = eqx.nn.Linear(width, out_size, key=k4)
        self.threshold = threshold
        self.max_steps = max_steps

    @autograph.function
    def __call__(self, x):
        """One example ``x`` of shape [in_size] -> (output [out_size], steps taken)."""
        h = self.encoder(x)
        steps = 0
        while jnp.linalg.norm(h) > self.threshold and steps < self.max_steps:
            autograph.set_loop_options(maximum_iterations=self.max_steps)
            h = 0.5 * h + self.block_out(jnp.tanh(self.block_in(h)))
            steps += 1
        return self.head(h), steps


def make_data(key, n: int, in_size: int):
    """Inputs of very different scales (so the loop runs 0..max_steps times), and targets."""
    kx, ks = jax.random.split(key)
    scale = jnp.exp(jax.random.uniform(ks, (n, 1), minval=-3.0, maxval=2.0))
    x = jax.random.normal(kx, (n, in_size)) * scale
    y = jnp.stack([jnp.sin(x.sum(-1)), jnp.tanh(x[:, 0] - x[:, 1])], axis=-1)
    return x, y


def batch_loss(model, x, y):
    pred, _ = jax.vmap(model)(x)
    return jnp.mean((pred - y) ** 2)


def check_against_eager(model, x):
    """The compiled call gives what the plain-Python call gives, example by example."""
    compiled = [model(xi) for xi in x]
    with autograph.run_eagerly():
        eager = [model(xi) for xi in x]
    for (out_c, steps_c), (out_e, steps_e) in zip(compiled, eager):
        np.testing.assert_allclose(np.asarray(out_c), np.asarray(out_e), rtol=1e-5, atol=1e-5)
        assert int(steps_c) == int(steps_e), (steps_c, steps_e)
    return [int(s) for _, s in compiled]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    parser.add_argument("--steps", type=int, default=60, help="training steps")
    parser.add_argument("--examples", type=int, default=256, help="training examples")
    parser.add_argument("--width", type=int, default=32, help="hidden width of the module")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the data and the initial weights")
    args = parser.parse_args(argv)

    print(autograph.to_code(Refiner.__call__.python_function))
    key_model, key_data = jax.random.split(jax.random.PRNGKey(args.seed))
    model = Refiner(4, args.width, 2, key=key_model, threshold=2.0, max_steps=8)
    x, y = make_data(key_data, args.examples, 4)

    steps = check_against_eager(model, x[:8])
    print("compiled == eager on 8 inputs; residual steps taken:", steps)
    batched_steps = np.asarray(jax.vmap(model)(x)[1])
    print("inputs taking 0, 1, ..., 8 residual steps (jax.vmap over the data set):",
          np.bincount(batched_steps, minlength=model.max_steps + 1).tolist())

    optimizer = optax.adam(3e-3)
    opt_state = optimizer.init(model)

    @jax.jit
    def train_step(model, opt_state, x, y):
        loss, grads = jax.value_and_grad(batch_loss)(model, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, model)
        return eqx.apply_updates(model, updates), opt_state, loss

    losses = []
    for step in range(args.steps):
        model, opt_state, loss = train_step(model, opt_state, x, y)
        losses.append(float(loss))
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step:3d}  loss {losses[-1]:.4f}")
    check_against_eager(model, x[:8])
    print(f"loss {losses[0]:.4f} -> {losses[-1]:.4f}; the trained model still matches its "
          f"eager run")
    return {"losses": losses, "steps": steps}


if __name__ == "__main__":
    main()
