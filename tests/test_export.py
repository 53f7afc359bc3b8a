"""Export, save and load: artifacts that run without the original source."""

import json
import os
import subprocess
import sys
import textwrap
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph


def clipped_running_sum(xs, limit):
    total = jnp.zeros((), xs.dtype)
    for x in xs:
        if total > limit:
            break
        total = total + x
    return total


def normalize(v):
    if jnp.linalg.norm(v) > 1.0:
        v = v / jnp.linalg.norm(v)
    return v


SPECS = (autograph.TensorSpec([None], jnp.float32), autograph.TensorSpec([], jnp.float32))


def test_export_has_a_symbolic_dimension_and_matches_python():
    exported = autograph.export(clipped_running_sum, *SPECS)
    assert "?" in exported.mlir_module() or "tensor<?x" in exported.mlir_module()
    for n in (3, 7):
        xs = np.arange(n, dtype=np.float32)
        for limit in (np.float32(2.0), np.float32(100.0)):
            want = clipped_running_sum(xs, limit)
            np.testing.assert_allclose(exported.call(xs, limit), want)


def weighted_then_counted(x):
    s = 0.0
    for i in range(x.shape[0]):  # a symbolic dimension: a loop counted when it runs
        s = s + x[i] * i
    for j in range(1, x.shape[0] - 1):
        if x[j] > 2:
            break
        s = s + 1
    return s


def test_a_range_over_a_symbolic_dimension_is_a_loop_counted_at_run_time():
    # plain `jax.export` raises TypeError at `range(x.shape[0])`
    exported = autograph.export(weighted_then_counted, SPECS[0])
    for n in (1, 2, 3, 6):  # trip counts 0 to 6 (symbolic dimensions are >= 1), one break
        xs = np.arange(n, dtype=np.float32)
        np.testing.assert_allclose(exported.call(xs), weighted_then_counted(xs))


def test_save_then_load_in_a_fresh_process_elsewhere(tmp_path):
    path = tmp_path / "sum.agx"
    autograph.save(path, clipped_running_sum, *SPECS)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = textwrap.dedent(f"""
        import sys
        sys.modules.pop("tests", None)
        import numpy as np, autograph
        f = autograph.load({str(path)!r})
        for n in (4, 9):
            print(float(f(np.arange(n, dtype=np.float32), np.float32(5.0))))
        try:
            f(np.arange(3, dtype=np.int32), np.float32(1.0))
        except TypeError as e:
            print("TypeError", "int32" in str(e))
        try:
            f(np.ones((2, 2), np.float32), np.float32(1.0))
        except ValueError as e:
            print("ValueError", "(None,)" in str(e))
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", script], cwd=elsewhere, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split()
    want4 = float(clipped_running_sum(np.arange(4, dtype=np.float32), 5.0))
    want9 = float(clipped_running_sum(np.arange(9, dtype=np.float32), 5.0))
    assert [float(lines[0]), float(lines[1])] == [want4, want9]
    assert lines[2:] == ["TypeError", "True", "ValueError", "True"]


def test_manifest_records_signature_and_versions(tmp_path):
    path = tmp_path / "n.agx"
    autograph.save(path, normalize, autograph.TensorSpec([3], jnp.float32))
    with zipfile.ZipFile(path) as z:
        manifest = json.loads(z.read("manifest.json"))
    assert manifest["format_version"] == 1
    assert manifest["inputs"] == [{"shape": [3], "dtype": "float32"}]
    assert manifest["outputs"] == [{"shape": [3], "dtype": "float32"}]
    assert len(manifest["source_sha256"]) == 64
    loaded = autograph.load(path)
    for v in (np.array([3.0, 4.0, 0.0], np.float32), np.array([0.1, 0.2, 0.0], np.float32)):
        np.testing.assert_allclose(loaded(v), normalize(v), rtol=1e-6)


def test_an_autograph_function_exports_too(tmp_path):
    f = autograph.function(normalize)
    path = tmp_path / "f.agx"
    autograph.save(path, f, autograph.TensorSpec([None], jnp.float32))
    v = np.array([3.0, 4.0], np.float32)
    np.testing.assert_allclose(autograph.load(path)(v), normalize(v), rtol=1e-6)


def _artifact(tmp_path):
    path = tmp_path / "a.agx"
    autograph.save(path, normalize, autograph.TensorSpec([3], jnp.float32))
    return path


def test_truncated_artifact_is_a_clear_error(tmp_path):
    path = _artifact(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(autograph.ArtifactError, match="corrupt or truncated"):
        autograph.load(path)


def test_corrupt_module_is_a_clear_error(tmp_path):
    path = _artifact(tmp_path)
    with zipfile.ZipFile(path) as z:
        manifest = z.read("manifest.json")
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("manifest.json", manifest)
        z.writestr("module.bin", b"\x00garbage" * 10)
    with pytest.raises(autograph.ArtifactError, match="corrupt"):
        autograph.load(path)


def test_newer_format_version_is_a_clear_error(tmp_path):
    path = _artifact(tmp_path)
    with zipfile.ZipFile(path) as z:
        manifest, module = json.loads(z.read("manifest.json")), z.read("module.bin")
    manifest["format_version"] = 99
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest))
        z.writestr("module.bin", module)
    with pytest.raises(autograph.ArtifactError, match="version 99.*upgrade"):
        autograph.load(path)


def test_missing_and_foreign_files_are_clear_errors(tmp_path):
    with pytest.raises(autograph.ArtifactError, match="no such artifact"):
        autograph.load(tmp_path / "nope.agx")
    other = tmp_path / "other.agx"
    other.write_text("just text")
    with pytest.raises(autograph.ArtifactError, match="not a readable"):
        autograph.load(other)


def test_wrong_arguments_to_a_loaded_function(tmp_path):
    loaded = autograph.load(_artifact(tmp_path))
    with pytest.raises(TypeError, match="float32"):
        loaded(np.ones(3, np.int32))
    with pytest.raises(ValueError, match=r"\(3,\)"):
        loaded(np.ones(4, np.float32))
    with pytest.raises(TypeError, match="takes 1 arguments"):
        loaded(np.ones(3, np.float32), np.ones(3, np.float32))


def test_a_loaded_function_runs_under_jit_and_grad(tmp_path):
    path = str(tmp_path / "normalize.agx")
    autograph.save(path, normalize, SPECS[0])
    loaded = autograph.load(path)
    for v in (np.array([3.0, 4.0], np.float32), np.array([0.3, 0.4], np.float32)):
        np.testing.assert_allclose(jax.jit(lambda v: loaded(v) * 2.0)(v), normalize(v) * 2.0,
                                   rtol=1e-6)
        want = jax.grad(lambda v: jnp.sum(normalize(v) ** 2))(v)  # eager, the Python `if`
        np.testing.assert_allclose(jax.grad(lambda v: jnp.sum(loaded(v) ** 2))(v), want,
                                   rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="does not match the saved signature"):
        jax.jit(loaded)(np.ones(2, np.int32))  # still checked, traced


def test_save_of_a_function_with_an_input_signature_uses_it(tmp_path):
    f = autograph.function(normalize, input_signature=[SPECS[0]])
    path = str(tmp_path / "f.agx")
    autograph.save(path, f)
    loaded = autograph.load(path)
    assert loaded.input_signature == (SPECS[0],)
    np.testing.assert_allclose(loaded(np.array([3.0, 4.0], np.float32)), [0.6, 0.8], rtol=1e-6)


def centered_rows(x, y):
    d = x.sum(1) - y
    if d.sum() > 0:
        return d
    return -d


def test_a_named_size_is_one_symbolic_dimension_every_spec_naming_it_shares(tmp_path):
    specs = (autograph.TensorSpec(["batch", 4], jnp.float32),
             autograph.TensorSpec(["batch"], jnp.float32))
    # two `None`s are two sizes, which `x.sum(1) - y` cannot broadcast
    with pytest.raises(Exception, match="broadcast"):
        autograph.export(centered_rows, autograph.TensorSpec([None, 4], jnp.float32),
                         autograph.TensorSpec([None], jnp.float32))
    exported = autograph.export(centered_rows, *specs)
    for n, y in ((2, 1.0), (5, 100.0)):  # both branches
        x = np.arange(4 * n, dtype=np.float32).reshape(n, 4)
        ys = np.full(n, y, np.float32)
        np.testing.assert_allclose(exported.call(x, ys), centered_rows(x, ys))
    with pytest.raises(ValueError):  # sizes that differ where the name says they agree
        exported.call(np.ones((2, 4), np.float32), np.ones(3, np.float32))
    f = autograph.function(centered_rows, input_signature=list(specs))
    path = str(tmp_path / "rows.agx")
    autograph.save(path, f)
    loaded = autograph.load(path)
    assert loaded.input_signature == specs
    np.testing.assert_allclose(loaded(np.ones((3, 4), np.float32), np.zeros(3, np.float32)),
                               4 * np.ones(3))
    with pytest.raises(ValueError, match="names a size"):
        autograph.TensorSpec(["d0"], jnp.float32)
