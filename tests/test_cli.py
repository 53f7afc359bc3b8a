"""The command line: `autograph dump` and `autograph explain`, via main() and a subprocess."""

import importlib.util
import os
import re
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import cli

MODEL = '''\
"""A model used by the command-line tests."""
import jax.numpy as jnp


def collatz(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def clipped_sum(xs, limit):
    total = 0.0
    for x in xs:
        if x < 0:
            continue
        total += x
        if total > limit:
            break
    return total


def sign(x):
    if x > 0:
        return 1.0
    t = -x
    return t * 0.0 - 1.0


def straight(x):
    return jnp.sin(x) * 2


class Base:
    def scale(self, x):
        return x * 2


class Net(Base):
    def forward(self, x):
        y = super().scale(x)
        if y > 1:
            y = y - 1
        return y

    @staticmethod
    def relu(x):
        return x if x > 0 else 0.0


def outer(a):
    def inner(b):
        while b > 1:
            b = b / 2
        return b
    return inner
'''

# A module that must never run: importing it fails, writes a file and exits.
HOSTILE = '''\
import this_module_does_not_exist
open({marker!r}, "w").write("executed")
raise SystemExit("the module was executed")


def f(x):
    if x > 0:
        x = x * 2
    return x
'''


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text) if not text.startswith('"""') else text)
    return path


@pytest.fixture
def model(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "model.py", MODEL)
    return tmp_path / "model.py"


def _import(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _line(path, text):
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if text in line:
            return i
    raise AssertionError(text)


def _run(*args, cwd):
    return subprocess.run([sys.executable, "-m", "autograph", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


# ---------------------------------------------------------------------------
# dump


@pytest.mark.parametrize("qualname, get", [
    ("collatz", lambda m: m.collatz),
    ("clipped_sum", lambda m: m.clipped_sum),
    ("sign", lambda m: m.sign),
    ("straight", lambda m: m.straight),
    ("Net.forward", lambda m: m.Net.forward),
    ("Net.relu", lambda m: m.Net.relu),
    ("outer.<locals>.inner", lambda m: m.outer(1.0)),
])
def test_dump_prints_what_to_code_gives_once_imported(model, capsys, qualname, get):
    assert cli.main(["dump", f"model.py:{qualname}"]) == 0
    out = capsys.readouterr().out
    fn = get(_import(model, "cli_model_" + qualname.replace(".", "_").strip("<>")))
    line = fn.__code__.co_firstlineno
    if qualname == "Net.relu":
        line += 1  # the header names the `def` line, below the decorator
    assert out == f"# {qualname} (model.py:{line})\n" + autograph.to_code(fn)


def test_dump_file_prints_every_function_and_method_once(model, capsys):
    assert cli.main(["dump", "model.py"]) == 0
    out = capsys.readouterr().out
    headers = re.findall(r"^# (\S+) \(model\.py:(\d+)\)$", out, re.M)
    assert [h[0] for h in headers] == [
        "collatz", "clipped_sum", "sign", "straight", "Base.scale", "Net.forward",
        "Net.relu", "outer"]  # `inner` is part of `outer`'s converted code
    assert headers[0][1] == str(_line(model, "def collatz"))
    assert "ag__.while_stmt(loop_test, loop_body, (n, steps)" in out
    assert "def inner(b):" in out
    assert "\x1b[" not in out  # not a terminal: no colors


def test_dump_a_class_prints_its_methods(model, capsys):
    assert cli.main(["dump", "model.py:Net"]) == 0
    out = capsys.readouterr().out
    assert re.findall(r"^# (\S+)", out, re.M) == ["Net.forward", "Net.relu"]


def test_dump_never_runs_the_module(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "executed.txt"
    _write(tmp_path / "hostile.py", HOSTILE.format(marker=str(marker)))
    assert cli.main(["dump", "hostile.py"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# f (hostile.py:6)\ndef f(x):\n")
    assert "ag__.if_stmt(x > 0" in out
    assert not marker.exists()
    result = _run("dump", "hostile.py:f", "--check", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "1 function in 1 file: all convert" in result.stdout
    assert not marker.exists()


def test_dump_a_dotted_module_without_running_it_or_its_package(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "executed.txt"
    _write(tmp_path / "hostpkg" / "__init__.py", HOSTILE.format(marker=str(marker)))
    _write(tmp_path / "hostpkg" / "layers.py", HOSTILE.format(marker=str(marker)))
    assert cli.main(["dump", "hostpkg.layers:f"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# f ({os.path.join('hostpkg', 'layers.py')}:6)\n")
    assert cli.main(["dump", "hostpkg", "--check"]) == 0
    assert "2 functions in 2 files: all convert" in capsys.readouterr().out
    assert not marker.exists()
    assert "hostpkg" not in sys.modules


def test_dump_diff(model, capsys):
    assert cli.main(["dump", "model.py:collatz", "--diff"]) == 0
    out = capsys.readouterr().out
    line = _line(model, "def collatz")
    assert out.startswith(f"--- model.py:{line} collatz (original)\n"
                          f"+++ model.py:{line} collatz (converted)\n@@ ")
    assert "\n-    while n != 1:\n" in out
    assert "\n+    (n, steps) = ag__.while_stmt(loop_test, loop_body, (n, steps)" in out
    assert re.search(r"^@@ .* @@ model\.py:\d+$", out, re.M)


def test_dump_check_lists_failures_with_file_and_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "gen.py", """\
        def ok(x):
            return x

        def gen(x):
            for i in range(x):
                yield i
    """)
    assert cli.main(["dump", "gen.py", "--check"]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "gen.py:6: `yield` is not supported in converted functions (in `gen`)",
        "2 functions in 1 file: 1 failed"]
    # without --check: the code that converts, the error on stderr, still exit 1
    assert cli.main(["dump", "gen.py"]) == 1
    captured = capsys.readouterr()
    assert "# ok (gen.py:1)\ndef ok(x):" in captured.out
    assert "# not converted: gen.py:6:" in captured.out
    assert captured.err.startswith("gen.py:6: `yield` is not supported")
    assert "fix:" in captured.err and "Traceback" not in captured.err


def test_dump_output_dir_writes_a_converted_mirror_that_runs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "src" / "mypkg" / "__init__.py", "")
    _write(tmp_path / "src" / "mypkg" / "sub" / "model.py", MODEL)
    assert cli.main(["dump", "src/mypkg", "-o", "out"]) == 0
    out = capsys.readouterr().out
    mirror = tmp_path / "out" / "mypkg" / "sub" / "model.py"
    assert f"wrote {os.path.join('out', 'mypkg', 'sub', 'model.py')}" in out
    assert (tmp_path / "out" / "mypkg" / "__init__.py").exists()
    text = mirror.read_text()
    assert text.startswith('"""A model used by the command-line tests."""\n'
                           "import autograph.runtime as ag__")
    assert "    @staticmethod\n    def relu(x):\n        return ag__.if_exp(" in text
    converted = _import(mirror, "cli_mirror_model")
    original = _import(tmp_path / "src" / "mypkg" / "sub" / "model.py", "cli_mirror_original")
    assert converted.collatz(27) == original.collatz(27) == 111
    assert int(jax.jit(converted.collatz)(jnp.int32(27))) == 111
    xs = np.array([1.0, -2.0, 3.0, 4.0], np.float32)
    assert float(jax.jit(converted.clipped_sum)(jnp.asarray(xs), 3.5)) == 4.0
    assert float(jax.jit(converted.Net().forward)(3.0)) == 5.0


def test_dump_output_dir_refuses_to_overwrite_sources(model, capsys):
    assert cli.main(["dump", "model.py", "-o", "."]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert model.read_text() == MODEL


@pytest.mark.parametrize("color, escapes", [("always", True), ("never", False), ("auto", False)])
def test_dump_color(model, capsys, color, escapes):
    assert cli.main(["dump", "model.py:collatz", "--diff", "--color", color]) == 0
    out = capsys.readouterr().out
    assert ("\x1b[32m+" in out) is escapes
    assert ("\x1b[" in out) is escapes


# ---------------------------------------------------------------------------
# bad input: one line, the right exit status, never a traceback


def _bad_inputs(tmp_path):
    _write(tmp_path / "model.py", MODEL)
    _write(tmp_path / "broken.py", "def f(x):\n    if x >\n        return 1\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "blob.py").write_bytes(b"\x7fELF\x02\x01\x01\x00\x00\x00binary")
    return [
        (["dump", "missing.py"], 2, "no such file or directory: `missing.py`"),
        (["dump", "broken.py"], 1, "broken.py:2: syntax error: invalid syntax"),
        (["dump", "model.py:Net.forwrd"], 2,
         "no function or method `Net.forwrd` in model.py; did you mean `Net.forward`?"),
        (["dump", "empty"], 2, "no Python files in directory `empty`"),
        (["dump", "blob.py"], 2, "blob.py: not a Python source file (binary data)"),
        (["dump", "no_such_module_xyz.sub"], 2,
         "no file, directory or module named `no_such_module_xyz.sub`"),
        (["explain", "model.py:Net"], 2,
         "`Net` is a class; explain one of its methods: Net.forward, Net.relu"),
        (["explain", "broken.py:f"], 1, "broken.py:2: syntax error: invalid syntax"),
    ]


def test_bad_input_gives_one_clear_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for argv, status, message in _bad_inputs(tmp_path):
        assert cli.main(argv) == status, argv
        captured = capsys.readouterr()
        assert captured.err == f"autograph: error: {message}\n", argv
        assert captured.out == ""


def test_bad_input_through_a_subprocess(tmp_path):
    _bad_inputs(tmp_path)
    result = _run("dump", "broken.py", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "autograph: error: broken.py:2: syntax error: invalid syntax\n"
    result = _run("dump", "model.py", "--diff", "--check", cwd=tmp_path)
    assert result.returncode == 2 and "not allowed with argument" in result.stderr
    assert "Traceback" not in result.stderr


def test_help_has_examples_and_exit_statuses(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "autograph dump model.py:Net.forward" in out
    assert "exit status: 0 all converted; 1" in out
    assert cli.main(["dump", "--help"]) == 0
    assert "--check" in capsys.readouterr().out
    assert cli.main([]) == 2


def test_console_script_and_python_dash_m(model):
    script = os.path.join(os.path.dirname(sys.executable), "autograph")
    if not os.path.exists(script):
        pytest.skip("the console script is not installed in this environment")
    by_script = subprocess.run([script, "dump", "model.py:sign"], cwd=model.parent,
                               capture_output=True, text=True, timeout=120)
    by_module = _run("dump", "model.py:sign", cwd=model.parent)
    assert by_script.returncode == by_module.returncode == 0, by_script.stderr
    assert by_script.stdout == by_module.stdout
    assert "ag__.if_stmt(x > 0" in by_script.stdout


# ---------------------------------------------------------------------------
# explain


def _names_in_code(source, call):
    """`names=` of every `ag__.<call>(...)` in converted source, in order."""
    return [tuple(re.findall(r"'(\w+)'", m)) for m in
            re.findall(rf"ag__\.{call}\(.*names=\(([^)]*)\)", source)]


def test_explain_collatz(model, capsys):
    assert cli.main(["explain", "model.py:collatz"]) == 0
    out = capsys.readouterr().out
    while_line, if_line = _line(model, "while n != 1"), _line(model, "if n % 2 == 0")
    assert out.startswith(f"collatz (model.py:{while_line - 2})\nparameters: n\n")
    block = out.split(f"model.py:{while_line}  while n != 1:\n")[1].split("\n\n")[0]
    assert "carried in:  n, steps (the loop state" in block
    assert "carried out: steps (read after the loop)" in block
    assert "`lax.while_loop`" in block
    assert "`n != 1` depends on the argument `n`" in block
    block = out.split(f"model.py:{if_line}  if n % 2 == 0:\n")[1].split("\n\n")[0]
    assert "carried in:  n (parameters of the branch functions)" in block
    assert "carried out: n (returned by the branches" in block
    assert "`lax.cond`" in block


def test_explain_returns_locals_and_generated_flags(model, capsys):
    assert cli.main(["explain", "model.py:sign"]) == 0
    out = capsys.readouterr().out
    assert "carried out: retval" in out
    assert "returns:     yes" in out
    assert "local:       t (assigned inside" in out
    assert "`retval`: the function's return value" in out
    assert cli.main(["explain", "model.py:clipped_sum"]) == 0
    out = capsys.readouterr().out
    assert "loop target: x" in out
    assert "carried in:  did_break, total (the loop state" in out
    assert "`xs` is an argument" in out
    assert "`did_break`: flag: a `break` has run" in out


@pytest.mark.parametrize("name", ["collatz", "clipped_sum", "sign", "Net.forward"])
def test_explain_agrees_with_the_converted_code(model, capsys, name):
    """What explain says each block carries is what the converters emit."""
    module = _import(model, "cli_explain_" + name.replace(".", "_"))
    source = autograph.to_code(eval(name, vars(module)))
    assert cli.main(["explain", f"model.py:{name}"]) == 0
    out = capsys.readouterr().out
    said = (re.findall(r"carried out: ([\w, ]+) \(returned", out)
            + re.findall(r"carried in:  ([\w, ]+) \(the loop state", out))
    emitted = [m for call in ("if_stmt", "while_stmt", "for_stmt")
               for m in _names_in_code(source, call)]
    assert sorted(tuple(s.split(", ")) for s in said) == sorted(emitted)
    assert emitted


def test_explain_nested_function_and_python_only_function(model, capsys):
    assert cli.main(["explain", "model.py:outer"]) == 0
    out = capsys.readouterr().out
    assert "in nested function outer.<locals>.inner" in out
    assert "carried in:  b (the loop state" in out
    assert cli.main(["explain", "model.py:straight"]) == 0
    assert "no `if`, `while` or `for`" in capsys.readouterr().out


def test_explain_reports_unconvertible_code(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "gen.py", "def gen(x):\n    yield x\n")
    assert cli.main(["explain", "gen.py:gen"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gen.py:2: `yield` is not supported in converted functions\n")


def test_explain_says_how_grad_differentiates_each_while(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "loops.py", """\
        import autograph

        def loops(x, n):
            while x < 10.0:
                x = x * 2.0
            i = 0
            while x < 20.0 and i < 5:
                x = x * 2.0
                i += 1
            while x < 40.0:
                autograph.set_loop_options(maximum_iterations=8)
                x = x * 2.0
            while x < 80.0:
                autograph.set_loop_options(checkpoints=16)
                x = x * 2.0
            return x
        """)
    assert cli.main(["explain", "loops.py:loops"]) == 0
    out = capsys.readouterr().out
    grads = [" ".join(g.split()) for g in re.findall(
        r"under grad:\s+(.*?)(?=\n\S|\n\n|\Z)", out, re.S)]
    assert len(grads) == 4
    assert grads[0].startswith("with checkpoints: the backward pass keeps 128 copies")
    assert grads[1].startswith("as a masked `lax.scan` of as many steps as the counter `i`")
    assert grads[2].startswith("as a masked `lax.scan` of 8 steps (`maximum_iterations`)")
    assert grads[3].startswith("with checkpoints: the backward pass keeps 16 copies")
