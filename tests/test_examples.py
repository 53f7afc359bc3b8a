"""Smoke tests: every script in examples/ runs, small and fast, and says what it should."""

from __future__ import annotations

import importlib.util
import math
import os
import re
import sys

import jax
import numpy as np
import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def load(name):
    """The module examples/NAME.py, imported under a name of its own."""
    spec = importlib.util.spec_from_file_location(f"autograph_example_{name}",
                                                  os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses (Equinox modules) look their module up
    spec.loader.exec_module(module)
    return module


def run_main(capsys, name, argv):
    result = load(name).main(argv)
    jax.effects_barrier()
    return result, capsys.readouterr().out


@pytest.mark.parametrize("name", ["collatz", "training_loop", "data_parallel", "model_call",
                                  "dense_stack", "newton", "greedy_decode", "fizzbuzz",
                                  "nnx_model", "linen_model", "nnx_early_stopping",
                                  "until_converged"])
def test_example_layout(name):
    with open(os.path.join(EXAMPLES, name + ".py")) as f:
        text = f.read()
    module = load(name)
    assert module.__doc__ and len(module.__doc__.strip()) > 40
    assert callable(module.main)
    assert 'if __name__ == "__main__":\n    main()' in text


def test_collatz(capsys):
    load("collatz").main()
    out = capsys.readouterr().out
    assert "ag__.while_stmt" in out
    assert "jax.jit:      [0, 8, 16, 111, 118]" in out


@pytest.mark.long
def test_training_loop(capsys, tmp_path):
    plot = tmp_path / "loss.png"
    result, out = run_main(capsys, "training_loop",
                           ["--epochs", "1", "--no-progress", "--plot", str(plot), "--show-code"])
    assert "ag__.for_stmt(ag__.zip_(xs, ys)" in out  # the loop over batches is converted
    # printed from inside the compiled loop, every 10 steps, in order
    steps = [int(s) for s in re.findall(r"^Step (\d+) : loss [0-9.e-]+ ; accuracy [0-9.]+$",
                                        out, re.M)]
    assert steps == [10, 20]
    assert result["steps"] == 22 and len(result["losses"]) == 22
    assert np.isfinite(result["losses"]).all() and result["losses"][-1] < result["losses"][0]
    assert result["traces"] == 1
    assert 0.5 < result["test_accuracy"] <= 1.0
    assert plot.stat().st_size > 1000 and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {plot}" in out


@pytest.mark.long
def test_training_loop_compiled_once_per_shape(capsys):
    module = load("training_loop")
    result = module.train(epochs=2, batch_size=128, progress=False)
    jax.effects_barrier()
    assert result["traces"] == 1 and result["steps"] == 22
    assert "Step 20 : loss" in capsys.readouterr().out


@pytest.mark.long
def test_model_call(capsys):
    result, out = run_main(capsys, "model_call",
                           ["--steps", "3", "--examples", "32", "--width", "8"])
    assert "ag__.while_stmt" in out and "'maximum_iterations': self.max_steps" in out
    assert "compiled == eager" in out
    assert len(result["losses"]) == 3 and all(math.isfinite(v) for v in result["losses"])
    assert result["losses"][-1] < result["losses"][0]


def test_model_call_gradient_through_the_loop():
    eqx = pytest.importorskip("equinox")
    module = load("model_call")
    model = module.Refiner(3, 6, 2, key=jax.random.PRNGKey(1), threshold=0.5, max_steps=4)
    x, y = module.make_data(jax.random.PRNGKey(2), 8, 3)
    grads = jax.grad(module.batch_loss)(model, x, y)
    leaves = jax.tree_util.tree_leaves(eqx.filter(grads, eqx.is_array))
    assert leaves and all(np.isfinite(np.asarray(g)).all() for g in leaves)
    assert any(np.abs(np.asarray(g)).sum() > 0 for g in jax.tree_util.tree_leaves(grads.block_in))


def test_dense_stack(capsys):
    result, out = run_main(capsys, "dense_stack",
                           ["--layers", "4", "--calls", "3", "--rounds", "1"])
    for key in ("eager_us", "autograph_function_us", "jax_jit_us"):
        assert result[key] > 0
    assert "autograph.function / jax.jit" in out


def test_newton(capsys):
    result, out = run_main(capsys, "newton", ["--points", "16"])
    assert "ag__.while_stmt" in out
    assert abs(result["root"] - 2 ** (1 / 3)) < 1e-6 and result["steps"] == 5
    assert result["kepler_residual"] < 1e-5


def test_greedy_decode(capsys):
    result, out = run_main(capsys, "greedy_decode", ["--max-len", "6", "the", "my", "time"])
    assert "ag__.while_stmt" in out
    assert result == ["the cat .", "my dog ate my dog ate my", "time flies like an arrow ."]
    assert "stopped at end token" in out and "stopped at max_len" in out


FIZZBUZZ_5 = ["1", "2", "Fizz", "4", "Buzz"]


def _sections(out):
    """Lines printed after each ``-- ...`` header."""
    sections, current = {}, None
    for line in out.splitlines():
        if line.startswith("-- "):
            current = sections.setdefault(line, [])
        elif current is not None and not line.startswith("   count") and \
                not line.startswith("traced"):
            current.append(line)
    return sections


def test_fizzbuzz(capsys):
    _, out = run_main(capsys, "fizzbuzz", ["5"])
    assert "ag__.for_stmt(ag__.range_(1, n + 1)" in out
    sections = _sections(out)
    assert sections["-- plain Python, n = 5"] == FIZZBUZZ_5
    assert "   count = 5" in out and "   count = 6" in out and "traced 1x" in out


def test_fizzbuzz_compiled_prints_like_python(capsys):
    _, out = run_main(capsys, "fizzbuzz", ["5"])
    sections = _sections(out)
    assert sections["-- autograph.function, n = jnp.int32(5)"] == FIZZBUZZ_5
    assert sections["-- autograph.function, n = jnp.int32(6)"] == FIZZBUZZ_5 + ["Fizz"]


@pytest.mark.long
def test_nnx_model(capsys):
    result, out = run_main(capsys, "nnx_model", ["--steps", "8", "--examples", "32"])
    assert "ag__.while_stmt" in out and "ag__.operator.lt, lambda: self.max_steps, 1)" in out
    assert "compiled == eager" in out
    assert result["steps"] > 0
    assert all(math.isfinite(v) for v in result["losses"])
    assert result["losses"][-1] < result["losses"][0]


def test_linen_model(capsys):
    result, out = run_main(capsys, "linen_model", ["--steps", "10"])
    assert "compiled == eager on both branches" in out
    assert result["losses"][-1] < result["losses"][0]


@pytest.mark.long
def test_nnx_early_stopping(capsys):
    result, out = run_main(capsys, "nnx_early_stopping",
                           ["--epochs", "2", "--batches", "20", "--target", "0.25"])
    assert "compiled == eager" in out
    assert result["traces"] == 1
    assert len(result["steps"]) == 2 and all(0 < s <= 20 for s in result["steps"])
    assert result["optimizer_steps"] == sum(result["steps"])
    assert "(stopped early)" in out and min(result["steps"]) < 20  # the target is reached
    assert all(math.isfinite(v) for v in result["losses"])


def _losses(out):
    """The losses printed from inside the compiled loop, and the per-epoch lines."""
    steps = [float(v) for v in re.findall(r"^Step \d+ : loss ([0-9.e-]+) ;", out, re.M)]
    epochs = re.findall(r"^epoch \d+: loss .*$", out, re.M)
    return steps, epochs


@pytest.mark.long
def test_data_parallel_as_two_processes_prints_the_losses_of_one(capsys):
    from tests.processes import missing_gloo
    reason = missing_gloo()
    if reason is not None:
        print(f"skipped: {reason}")
        pytest.skip(reason)
    result, one = run_main(capsys, "data_parallel", ["--epochs", "1"])
    assert result["processes"] == 1 and result["traces"] == 1
    assert result["steps"] == 22 and result["losses"][-1] < result["losses"][0]
    _, two = run_main(capsys, "data_parallel", ["--epochs", "1", "--processes", "2",
                                                "--timeout", "120"])
    assert "devices: 4, processes: 2" in two and "traced 1x" in two, two
    steps_one, epochs_one = _losses(one)
    steps_two, epochs_two = _losses(two)
    assert len(steps_one) == 2 and epochs_one  # steps 10 and 20, printed once
    np.testing.assert_allclose(steps_two, steps_one, rtol=1e-4)
    assert epochs_two == epochs_one


@pytest.mark.long
def test_until_converged(capsys):
    results, out = run_main(capsys, "until_converged", ["--ode-tolerance", "3e-3"])
    assert set(results) == {"newton", "bisection", "adaptive_ode", "line_search"}
    for name, row in results.items():
        assert row["steps"] >= 8 and row["max_abs_difference"] < 1e-4, name
        assert re.search(rf"^{name} +{row['steps']} steps \(eager +{row['steps']}\)", out, re.M)
