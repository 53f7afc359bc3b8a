"""A whole training loop inside one compiled function.

The JAX version of the in-graph training example of TensorFlow's
``tf.function`` guide: ``train_epoch`` iterates a dataset of batches, computes
the loss and its gradients with ``jax.grad``, updates the parameters with an
Optax optimizer and, every 10 steps, ``print``s the loss and the running
accuracy from inside the compiled loop. The ``for`` over the batches becomes
one ``lax.scan``; the ``print`` under ``if step % 10 == 0`` becomes an ordered
``jax.debug.print`` under a ``lax.cond``. Only the progress bar over epochs
(tqdm) runs in Python.

Data: scikit-learn's bundled 8x8 handwritten digits (1,797 images, no
download), split 80/20 into train and test. The full run (15 epochs of 22
batches, about a second on 2 CPU cores) reaches about 97% test
accuracy.

Run: ``python examples/training_loop.py [--epochs 15] [--plot loss.png]``.
"""

from __future__ import annotations

import argparse
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import optax

import autograph


def load_digits(test_fraction: float = 0.2, seed: int = 0):
    """The digits as float32 [N, 64] in [0, 1] and int32 labels, split in two."""
    from sklearn.datasets import load_digits as sk_load_digits
    from sklearn.model_selection import train_test_split

    images, labels = sk_load_digits(return_X_y=True)
    images = (images / 16.0).astype(np.float32)
    labels = labels.astype(np.int32)
    return train_test_split(images, labels, test_size=test_fraction, random_state=seed,
                            stratify=labels)


def batches(x, y, batch_size: int, rng: np.random.Generator):
    """One epoch: shuffled, stacked into [num_batches, batch_size, ...] (the rest dropped)."""
    order = rng.permutation(len(x))
    n = len(x) // batch_size * batch_size
    order = order[:n]
    return (x[order].reshape(-1, batch_size, x.shape[1]),
            y[order].reshape(-1, batch_size))


def init_mlp(key, sizes=(64, 128, 128, 10)):
    """Parameters of a ReLU MLP: ``{"dense0": {"w": ..., "b": ...}, ...}``."""
    params = {}
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        key, sub = jax.random.split(key)
        w = jax.random.normal(sub, (n_in, n_out), jnp.float32) * jnp.sqrt(2.0 / n_in)
        params[f"dense{i}"] = {"w": w, "b": jnp.zeros(n_out, jnp.float32)}
    return params


def mlp(params, x):
    layers = [params[f"dense{i}"] for i in range(len(params))]
    for layer in layers[:-1]:
        x = jax.nn.relu(x @ layer["w"] + layer["b"])
    return x @ layers[-1]["w"] + layers[-1]["b"]


def compute_loss(params, x, y):
    logits = mlp(params, x)
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
    return loss, logits


def make_train_epoch(optimizer: optax.GradientTransformation):
    """The compiled loop over one epoch of batches."""

    @autograph.function
    def train_epoch(params, opt_state, xs, ys, step):
        correct = 0
        seen = 0
        losses = []
        for x, y in zip(xs, ys):
            (loss, logits), grads = jax.value_and_grad(compute_loss, has_aux=True)(params, x, y)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
            step += 1
            correct += jnp.sum(jnp.argmax(logits, axis=-1) == y)
            seen += y.shape[0]
            losses.append(loss)
            if step % 10 == 0:
                print("Step", step, ": loss", loss, "; accuracy", correct / seen)
        return params, opt_state, step, jnp.stack(losses), correct / seen

    return train_epoch


@autograph.function
def evaluate(params, x, y):
    return jnp.mean(jnp.argmax(mlp(params, x), axis=-1) == y)


def train(epochs: int = 15, batch_size: int = 64, learning_rate: float = 3e-3,
          seed: int = 0, progress: bool = True):
    """Trains the MLP; returns a dict of results (losses per step, accuracies)."""
    from tqdm import tqdm

    x_train, x_test, y_train, y_test = load_digits(seed=seed)
    optimizer = optax.adam(learning_rate)
    params = init_mlp(jax.random.PRNGKey(seed))
    opt_state = optimizer.init(params)
    train_epoch = make_train_epoch(optimizer)
    rng = np.random.default_rng(seed)
    step = jnp.int32(0)
    losses = []
    start = time.perf_counter()
    bar = tqdm(total=epochs, desc="epochs", unit="epoch", disable=not progress)
    for _ in range(epochs):
        xs, ys = batches(x_train, y_train, batch_size, rng)
        bar.clear()  # the compiled loop prints on stdout; keep the bar off those lines
        params, opt_state, step, epoch_losses, train_acc = train_epoch(
            params, opt_state, xs, ys, step)
        jax.effects_barrier()  # wait for this epoch's prints before redrawing the bar
        sys.stdout.flush()
        losses.append(np.asarray(epoch_losses))
        bar.set_postfix(loss=f"{float(epoch_losses[-1]):.4f}", train_acc=f"{float(train_acc):.3f}",
                        refresh=False)
        bar.update(1)
    bar.close()
    test_acc = float(evaluate(params, x_test, y_test))
    return {"losses": np.concatenate(losses), "steps": int(step),
            "train_accuracy": float(train_acc),
            "test_accuracy": test_acc, "seconds": time.perf_counter() - start,
            "traces": train_epoch.experimental_get_tracing_count(),
            "train_size": len(x_train), "test_size": len(x_test)}


def plot_losses(losses, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(np.arange(1, len(losses) + 1), losses, lw=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (cross-entropy)")
    ax.set_yscale("log")
    ax.set_title("MLP on the 8x8 digits, trained inside one compiled loop")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0].replace("``", "`"))
    parser.add_argument("--epochs", type=int, default=15, help="passes over the training set")
    parser.add_argument("--batch-size", type=int, default=64, help="examples per batch")
    parser.add_argument("--learning-rate", type=float, default=3e-3, help="Adam's step size")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the data split and the initial weights")
    parser.add_argument("--plot", nargs="?", const="training_loss.png", default=None,
                        metavar="PNG", help="save the loss curve (default training_loss.png)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--show-code", action="store_true",
                        help="print the converted source of the training loop first")
    args = parser.parse_args(argv)

    if args.show_code:
        print(autograph.to_code(make_train_epoch(optax.adam(1e-3)).python_function))
    result = train(args.epochs, args.batch_size, args.learning_rate, args.seed,
                   progress=not args.no_progress)
    sys.stdout.flush()
    print(f"Final step {result['steps']}: loss {result['losses'][-1]:.4f}; "
          f"train accuracy {result['train_accuracy']:.4f}; "
          f"test accuracy {result['test_accuracy']:.4f} "
          f"({result['train_size']} train / {result['test_size']} test images, "
          f"{result['seconds']:.1f} s, traced {result['traces']}x)")
    if args.plot:
        plot_losses(result["losses"], args.plot)
        print(f"wrote {args.plot}")
    return result


if __name__ == "__main__":
    main()
