"""What a new user meets first: mistakes get a clear answer at their own line,
the package behaves as Python packages do, and the command line finds what it
is pointed at."""

import functools
import io
import itertools
import logging
import os
import subprocess
import sys
import traceback
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import errors

HERE = os.path.basename(__file__)


# -- loop options -----------------------------------------------------------------------


def typo(x):
    while x < 100.0:
        autograph.set_loop_options(max_iterations=5)
        x = x * 1.5
    return x


def negative(x):
    while x < 100.0:
        autograph.set_loop_options(maximum_iterations=-1)
        x = x * 1.5
    return x


def in_a_for_loop(x):
    for _ in range(3):
        autograph.set_loop_options(maximum_iterations=5)
        x = x * 1.5
    return x


def after_other_statements(x):
    while x < 100.0:
        x = x * 1.5
        autograph.set_loop_options(maximum_iterations=5)
    return x


def in_an_if(x):
    while x < 100.0:
        if x > 10.0:
            autograph.set_loop_options(maximum_iterations=5)
        x = x * 1.5
    return x


def bounded(x):
    while x < 100.0:
        autograph.set_loop_options(maximum_iterations=5)
        x = x * 1.5
    return x


@pytest.mark.parametrize("fn, says", [
    (in_a_for_loop, "a `for` loop"),
    (after_other_statements, "not the first statement"),
    (in_an_if, "not the first statement"),
])
def test_a_misplaced_loop_option_does_nothing_and_says_so_at_the_users_line(fn, says):
    # as the plain call does (under plain `jax.jit` too): no working program fails
    for run in (jax.jit(autograph.convert(fn)), autograph.function(fn)):
        with pytest.warns(UserWarning, match=says) as info:
            got = run(jnp.float32(1.0))
        assert float(got) == pytest.approx(fn(1.0))
        message = str(info[0].message)
        assert f"{HERE}:" in message and "configures no loop" in message


@pytest.mark.parametrize("fn, says", [
    (typo, "has no option `max_iterations`"),
    (negative, "takes an integer of at least 0"),
])
def test_a_wrong_loop_option_is_a_clear_error_at_the_users_line(fn, says):
    for run in (jax.jit(autograph.convert(fn)), autograph.function(fn)):
        with pytest.raises(errors.LoopOptionsError, match=says) as info:
            run(jnp.float32(1.0))
        message = str(info.value)
        assert f"{HERE}:" in message and "fix:" in message
        assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    if fn is typo:
        assert "did you mean `maximum_iterations=`" in message


def test_a_loop_option_where_it_belongs_still_bounds_the_loop():
    assert float(jax.jit(autograph.convert(bounded))(1.0)) == pytest.approx(1.5 ** 5)
    assert bounded(1.0) == pytest.approx(1.5 ** 12)  # plain Python: the call does nothing


def test_set_loop_options_outside_converted_code_checks_its_options():
    with pytest.raises(errors.LoopOptionsError, match="did you mean `checkpoints=`"):
        autograph.set_loop_options(checkpoint=4)
    with pytest.raises(TypeError):
        autograph.set_loop_options(checkpoints=1)
    autograph.set_loop_options(maximum_iterations=np.int64(3), checkpoints=4)  # fine


# -- methods, warnings and tracebacks ------------------------------------------------------


class Scaler:
    @functools.partial(jax.jit, static_argnums=0)
    def apply(self, x):
        if x > 0:
            return x * 2.0
        return -x


def test_convert_of_a_method_decorated_with_jit():
    f = autograph.convert(Scaler().apply)
    assert float(f(jnp.float32(3.0))) == 6.0
    assert float(f(jnp.float32(-3.0))) == 3.0


class JittedCall:
    @functools.partial(jax.jit, static_argnums=0)
    def __call__(self, x):
        if x.sum() > 0:
            return x * 3.0
        return x


def calls_a_jitted_call(x):
    return JittedCall()(x) + 1.0


def test_an_object_whose_call_is_decorated_with_jit_is_converted_when_called():
    f = jax.jit(autograph.convert(calls_a_jitted_call))
    for x in ([1.0, 2.0], [-1.0, -2.0]):
        x = jnp.asarray(x)
        np.testing.assert_allclose(f(x), np.where(np.sum(x) > 0, x * 3.0, x) + 1.0)


_LOG = logging.getLogger("tests.newcomer")


def logs_every_step(x):
    for i in range(150):
        _LOG.info("step", i)
        x = x + 1.0
    return x


def test_warnings_point_at_the_users_line():
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        jax.jit(autograph.convert(logs_every_step))(1.0)
    unrolled = [w for w in record if "runs unrolled" in str(w.message)]
    assert unrolled, [str(w.message) for w in record]
    assert all(os.path.basename(w.filename) == HERE for w in unrolled), \
        [(w.filename, w.lineno) for w in unrolled]
    assert unrolled[0].lineno == logs_every_step.__code__.co_firstlineno + 1


def test_a_function_without_source_warns_once_at_the_users_line():
    namespace: dict = {}
    exec("def no_source(x):\n    return x + 1\n", namespace)
    no_source = namespace["no_source"]

    def caller(x):
        return no_source(x) * 2

    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        f = jax.jit(autograph.convert(caller))
        assert float(f(1.0)) == 4.0
        assert float(f(2.0)) == 6.0
    said = [w for w in record if "no_source" in str(w.message)]
    assert len(said) == 1, [str(w.message) for w in said]
    assert os.path.basename(said[0].filename) == HERE


def fact(n):
    if n <= 1:
        return 1.0
    return n * fact(n - 1)


def test_a_runaway_recursion_shows_a_short_traceback():
    with pytest.raises(errors.ConversionError, match="recursive call") as info:
        jax.jit(autograph.convert(fact))(jnp.float32(5.0))
    frames = traceback.extract_tb(info.value.__traceback__)
    generated = [f for f in frames if f.filename.startswith("<autograph")]
    assert len(generated) <= 8, len(generated)
    assert any("left out of the traceback" in n for n in info.value.__notes__)


def test_jax_errors_under_function_name_the_users_file():
    @autograph.function
    def needs_python(x):
        return np.asarray(x) + 1

    with pytest.raises(jax.errors.TracerArrayConversionError) as info:
        needs_python(jnp.float32(1.0))
    assert "autograph/function.py" not in str(info.value)
    assert HERE in str(info.value)


def schedule(step):
    if step < 10:
        return 0.1
    return 0.01


def test_user_code_a_library_calls_unconverted_gets_a_hint():
    def total(x):
        return functools.reduce(lambda a, b: a + b, [x, x]) * schedule(x)

    def through_the_library(x):
        return functools.reduce(lambda a, s: a + schedule(s), [x, x], 0.0)

    assert float(jax.jit(autograph.convert(total))(3.0)) == pytest.approx(0.6)
    # handed directly (`map(schedule, ...)`), a user function goes converted; reached
    # through an object's attribute, the library gets it as it is
    assert float(jax.jit(autograph.convert(lambda x: functools.reduce(
        lambda a, b: a + b, map(schedule, [x, x]))))(3.0)) == pytest.approx(0.2)
    holder = types.SimpleNamespace(schedule=schedule)
    with pytest.raises(jax.errors.ConcretizationTypeError) as info:
        jax.jit(autograph.convert(lambda x: functools.reduce(
            lambda a, b: a + b, itertools.starmap(holder.schedule, [(x,), (x,)]))))(3.0)
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "schedule" in notes and "ran unconverted" in notes
    assert "autograph.convert(schedule)" in notes
    del through_the_library


# -- export, retracing ------------------------------------------------------------------


def grows(x):
    while jnp.sum(x) < 100.0:
        x = x * 1.5 + 0.1
    return x


def test_export_with_a_none_dimension_through_an_unbounded_while():
    exported = autograph.export(grows, autograph.TensorSpec([None], jnp.float32))
    for n in (2, 5):
        x = np.ones(n, np.float32)
        np.testing.assert_allclose(exported.call(x), np.asarray(grows(jnp.asarray(x))),
                                   rtol=1e-5)


def test_the_retrace_warning_for_changing_dict_keys_names_the_keys():
    f = autograph.function(lambda d: sum(d.values()))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for i in range(8):
            f({f"k{i}": jnp.float32(1.0), "b": jnp.float32(2.0)})
    said = [str(w.message) for w in record if "traced" in str(w.message)]
    assert len(said) == 1
    assert "the keys of `d`" in said[0] and "added 'k" in said[0]
    assert "Tracer" not in said[0] and "keep the keys the same" in said[0]


# -- the package ------------------------------------------------------------------------


def test_dir_shows_the_public_api_only():
    names = dir(autograph)
    assert "convert" in names and "function" in names and "__version__" in names
    assert "PackageNotFoundError" not in names
    assert not {"api", "runtime", "loader", "parsing"} & set(names)
    assert set(autograph.__all__) <= set(names)


def test_the_package_says_it_is_typed():
    root = os.path.dirname(autograph.__file__)
    assert os.path.isfile(os.path.join(root, "py.typed"))


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "autograph", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_version_on_the_command_line():
    done = _cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"autograph {autograph.__version__}"


def test_dump_finds_a_module_in_a_folder_without_init(tmp_path):
    folder = tmp_path / "pkg" / "sub"
    folder.mkdir(parents=True)
    (folder / "mod.py").write_text("def f(x):\n    if x > 0:\n        x = -x\n    return x\n")
    done = _cli("dump", "pkg.sub.mod", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ag__.if_stmt" in done.stdout


def test_diff_hunk_headers_name_the_hunks_line(tmp_path):
    lines = ["def f(x):", '    """Doc', "    string", '    here."""',
             *[f"    a{i} = {i}" for i in range(8)], "    if x > 0:", "        x = x + 1",
             "    return x"]
    (tmp_path / "m.py").write_text("\n".join(lines) + "\n")
    done = _cli("dump", "m.py", "--diff", "--color", "never", cwd=tmp_path)
    out = done.stdout.splitlines()
    at = next(i for i, ln in enumerate(out) if ln.startswith("@@"))
    user_line = int(out[at].rsplit(":", 1)[1])
    first_shown = out[at + 1].strip()  # the hunk's first line, as the user wrote it
    assert lines[user_line - 1].strip() == first_shown, (out[at], first_shown)


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_dump_shows_progress_on_a_terminal_only(tmp_path):
    from autograph.cli.dump import Progress
    tty, pipe = _Terminal(), io.StringIO()
    for stream in (tty, pipe):
        p = Progress(stream, 10)
        for i in range(10):
            p.show(f"f{i}.py")
        p.done()
    assert "[10/10] f9.py" in tty.getvalue() and pipe.getvalue() == ""


EXAMPLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")
_EXAMPLES = sorted(f[:-3] for f in os.listdir(EXAMPLES_DIR) if f.endswith(".py"))


@pytest.mark.parametrize("name", [n for n in _EXAMPLES if n != "collatz"])
def test_every_example_option_has_help(name, capsys):
    import runpy
    module = runpy.run_path(os.path.join(EXAMPLES_DIR, f"{name}.py"), run_name="example")
    with pytest.raises(SystemExit):
        module["main"](["--help"])
    lines = capsys.readouterr().out.splitlines()
    assert not any("``" in ln for ln in lines)
    for i, line in enumerate(lines):  # an option: its help on its line or the next
        if line.startswith("  ") and not line.startswith("   ") and "-h, --help" not in line:
            helped = "  " in line.strip() or (i + 1 < len(lines)
                                              and lines[i + 1].startswith("      "))
            assert helped, (name, line)


def converts_in_a_loop(x):
    while x < 10.0:
        x = x + 1
        np.float32(x)  # NumPy of a traced value: JAX's error
    return x


def test_jax_errors_in_converted_code_name_the_users_line_not_generated_code():
    with pytest.raises(jax.errors.TracerArrayConversionError) as info:
        jax.jit(autograph.convert(converts_in_a_loop))(1.0)
    message = str(info.value)
    line = converts_in_a_loop.__code__.co_firstlineno + 3
    assert f"{HERE}:{line}" in message, message
    for generated in ("<autograph", "__autograph_", "loop_body", "ag__", "flat_fn",
                      "jaxprs.py", "flat["):
        assert generated not in message, (generated, message)


_EXPLAINED = '''def f(xs):
    total = 0.0
    for x in xs:
        if x < 0:
            break
        total += x
    else:
        total = -1.0
    return total


def m(x, k):
    match k:
        case 0:
            y = x
        case _:
            y = -x
    return y
'''


def test_explain_names_guards_and_match_cases_and_keeps_lines_short(tmp_path):
    (tmp_path / "g.py").write_text(_EXPLAINED)
    guard = _cli("explain", "g.py:f", cwd=tmp_path).stdout
    assert "`total = -1.0` is a Python value" not in guard
    assert "when `not did_break` is a Python value" in guard
    cases = _cli("explain", "g.py:m", cwd=tmp_path).stdout
    assert "match k: case 0:" in cases and "no `if`, `while` or `for`" not in cases
    runs_as = [ln for ln in guard.splitlines() if ln.startswith("               - ")]
    assert len(runs_as) >= 3  # clauses on lines of their own
    assert max(map(len, guard.splitlines())) <= 100


def test_every_warning_autograph_raises_says_where():
    """Each `warnings.warn` of the library names a stack level (the user's call), or is
    `errors.warn`, which finds the user's line."""
    import ast as python_ast
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    missing = []
    for folder in ("autograph", "runtime", "converters"):
        for dirpath, _, files in os.walk(os.path.join(root, folder)):
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(dirpath, name)
                tree = python_ast.parse(open(path, encoding="utf-8").read())
                for node in python_ast.walk(tree):
                    if (isinstance(node, python_ast.Call)
                            and python_ast.unparse(node.func) == "warnings.warn"
                            and not any(k.arg == "stacklevel" for k in node.keywords)
                            and not name == "errors.py"):
                        missing.append(f"{os.path.relpath(path, root)}:{node.lineno}")
    assert not missing, missing


def test_the_traceback_filter_decides_by_package_not_by_folder(tmp_path):
    """Installed, `runtime/` lies inside the package: a folder beside it is another
    project's top-level package, whose frames must stay in tracebacks."""
    from autograph import errors as errors_module
    own = errors_module._OWN_DIRS
    here = os.path.dirname(os.path.abspath(errors_module.__file__))
    if os.path.isdir(os.path.join(here, "runtime")):  # installed layout
        assert own == (here + os.sep,)
    namespace = {"__name__": "runtime.helpers"}  # someone else's `runtime` package
    exec("import sys\ndef frame():\n    return sys._getframe()\n", namespace)
    assert not errors_module._own_module(namespace["frame"]())
    assert errors_module._own_module(sys._getframe().f_back) is False


def test_progress_clears_its_line_before_a_message():
    from autograph.cli.dump import Progress
    tty = _Terminal()
    p = Progress(tty, 10)
    p.show("a.py")
    p.done()  # what `dump` does before it prints an error
    assert tty.getvalue().endswith("\r") and tty.getvalue().count("a.py") == 1
    p.show("b.py")  # the count goes on, on a fresh line
    assert tty.getvalue().endswith("[2/10] b.py")


def list_indexed_by_a_staged_counter(x, n):
    a = [x, x, x]
    i = 0
    while i < n:  # a traced `n` stages the loop: `i` is traced in its body
        a[i] = x * 2
        i += 1
    return a[0]


def test_a_python_list_indexed_by_a_traced_value_says_what_to_use_instead():
    with pytest.raises(jax.errors.TracerIntegerConversionError) as info:
        jax.jit(autograph.convert(list_indexed_by_a_staged_counter))(jnp.ones(2), jnp.int32(2))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "a Python list takes a Python int as its index" in notes
    assert "a = a.at[i].set(v)" in notes
    assert "test_newcomer.py" in str(info.value) + notes  # the user's line
    # a Python index keeps Python's list: nothing to say
    assert float(jax.jit(autograph.convert(list_indexed_by_a_staged_counter), static_argnums=1)(
        jnp.ones(2), 2)[0]) == 2.0
