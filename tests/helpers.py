"""Shared checks: golden source, equivalence with plain Python, the catalogue's checks."""

from __future__ import annotations

import contextlib
import inspect
import pathlib
import re
import textwrap
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import pipeline


def converted(src: str, passes=None) -> str:
    """The converted source of the function defined in ``src``."""
    src = textwrap.dedent(src)
    kwargs = {} if passes is None else {"passes": passes}
    return pipeline.convert_source(src, "model.py", **kwargs)


def assert_golden(src: str, expected: str, passes=None) -> None:
    """``src`` converts to exactly ``expected``, within the size budget."""
    got = converted(src, passes)
    expected = textwrap.dedent(expected).strip("\n") + "\n"
    assert got == expected, "\n--- got ---\n" + got + "--- expected ---\n" + expected
    n_src = len(textwrap.dedent(src).strip("\n").splitlines())
    n_out = len(got.strip("\n").splitlines())
    assert n_out <= 2 * n_src + 4, f"{n_out} generated lines for {n_src} source lines"


def _to_jax(x):
    return jax.tree_util.tree_map(
        lambda a: jnp.asarray(a) if isinstance(a, (np.ndarray, np.generic)) else a, x)


def _close(a, b, rtol=1e-5):
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb, f"structures differ: {ta} vs {tb}"
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=1e-6)


def check_equivalent(fn, *arg_sets, rtol=1e-5, static_argnums=()):
    """Each argument set gives the plain-Python result, converted and jitted.

    Arguments are NumPy values for the plain run and for ``convert(fn)``
    (which must give exactly the Python result), and JAX arrays for
    ``jax.jit(convert(fn))``.
    """
    cf = autograph.convert(fn)
    jf = jax.jit(cf, static_argnums=static_argnums)
    for args in arg_sets:
        want = fn(*args)
        _close(cf(*args), want, rtol)
        jargs = [a if i in static_argnums else _to_jax(a) for i, a in enumerate(args)]
        _close(jf(*jargs), want, rtol)


def with_globals(fn, **replacements):
    """``fn`` running with some of its module globals replaced (e.g. by converted callees):
    the meaning of a program that hands those callees to a JAX transformation."""
    g = {**fn.__globals__, **replacements}
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


def primitives(jaxpr) -> set:
    """Names of the primitives in ``jaxpr`` and in every jaxpr nested in it."""
    names = set()

    def walk(jx):
        for eqn in jx.eqns:
            names.add(eqn.primitive.name)
            for v in eqn.params.values():
                subs = v if isinstance(v, (tuple, list)) else [v]
                for s in subs:
                    if hasattr(s, "jaxpr"):
                        walk(s.jaxpr if hasattr(s.jaxpr, "eqns") else s.jaxpr.jaxpr)
                    elif hasattr(s, "eqns"):
                        walk(s)

    walk(jaxpr.jaxpr)
    return names


# ---------------------------------------------------------------------------
# The catalogue (tests/test_catalogue_*.py, docs/catalogue.md): every statement and expression
# kind, one test per row, named after its row (``test_<row>``). A test compares
# ``autograph.convert(f)`` with plain Python on Python/NumPy values (same value, same type) and
# ``jax.jit(autograph.convert(f))`` with the plain result where traced values are meaningful; or
# it asserts the exact error class and that the message (or the note autograph adds to a
# traceback) names the test file's ``LINE`` (e.g. ``test_catalogue_statements.py:LINE``).
# Where staging cannot give plain Python's behaviour, a row's test accepts a clear ``autograph``
# error naming the line instead.


class Box:
    """An empty object that catalogue programs set and delete attributes on."""


def _line(fn, snippet: str) -> int:
    """The line of ``fn``'s file where ``snippet`` first occurs in ``fn``'s source."""
    lines, start = inspect.getsourcelines(fn)
    for i, text in enumerate(lines):
        if snippet in text:
            return start + i
    raise AssertionError(f"{snippet!r} not in {fn.__name__}")


def _file_line(fn, snippet: str) -> str:
    """``FILE.py:LINE`` of ``snippet`` in ``fn``, as error messages name it."""
    return f"{pathlib.Path(inspect.getsourcefile(inspect.unwrap(fn))).name}:{_line(fn, snippet)}"


def _names_line(exc: BaseException, fn, snippet: str) -> None:
    where = _file_line(fn, snippet)
    text = str(exc) + "\n" + "\n".join(getattr(exc, "__notes__", ()))
    assert where in text, f"{where} not named in:\n{text}"


def _raises(cls, call, fn, snippet: str) -> BaseException:
    """``call()`` raises exactly ``cls``, naming the line of ``snippet`` in ``fn``."""
    with pytest.raises(BaseException) as info:
        call()
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    _names_line(info.value, fn, snippet)
    return info.value


def _rejected(fn, snippet: str, construct: str) -> None:
    """``fn`` cannot be converted: ``convert`` returns it as it is, with one warning
    naming ``construct`` at ``snippet``'s line, and ``strict=True`` makes that a
    ConversionError."""
    e = _raises(autograph.ConversionError, lambda: autograph.convert(fn, strict=True), fn,
                snippet)
    assert construct in str(e) and "not supported" in str(e) and "fix:" in str(e)
    with pytest.warns(UserWarning) as record:
        assert autograph.convert(fn) is fn
    messages = [str(w.message) for w in record]
    assert len(messages) == 1, messages
    assert "runs unconverted" in messages[0] and construct in messages[0], messages[0]
    assert _file_line(fn, snippet) in messages[0], messages[0]


def _identical(got, want) -> None:
    lg, tg = jax.tree_util.tree_flatten(got)
    lw, tw = jax.tree_util.tree_flatten(want)
    assert tg == tw, f"structures differ: {tg} vs {tw}"
    for a, b in zip(lg, lw):
        assert type(a) is type(b), f"{type(a).__name__} vs {type(b).__name__}"
        if isinstance(b, (np.ndarray, np.generic, jax.Array)):
            assert np.asarray(a).dtype == np.asarray(b).dtype
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        else:
            assert a == b, f"{a!r} vs {b!r}"


def _py(fn, *args, **kwargs):
    """``convert(fn)`` on Python/NumPy values gives exactly ``fn``'s result."""
    want = fn(*args, **kwargs)
    _identical(autograph.convert(fn)(*args, **kwargs), want)
    return want


def _jit(fn, *args, static_argnums=(), **kwargs):
    """``jax.jit(convert(fn))`` on traced values gives ``fn``'s Python result."""
    want = fn(*args, **kwargs)
    jf = jax.jit(autograph.convert(fn), static_argnums=static_argnums)
    got = jf(*[a if i in static_argnums else _to_jax(a) for i, a in enumerate(args)], **kwargs)
    _close(got, want)
    return got


def _both(fn, *arg_sets, static_argnums=()):
    for args in arg_sets:
        _py(fn, *args)
        _jit(fn, *args, static_argnums=static_argnums)


def _fixed_or_rejected(fn, snippets, run, want):
    """``run()`` gives ``want``, or an autograph error names one of
    the lines of ``snippets`` (a string or a tuple of strings)."""
    try:
        got = run()
    except autograph.AutographError as e:
        lines = [_file_line(fn, s)
                 for s in ((snippets,) if isinstance(snippets, str) else snippets)]
        assert any(line in str(e) for line in lines), f"none of {lines} in:\n{e}"
        return
    _close(got, want)


def count(f) -> int:
    """How many times the ``autograph.function`` ``f`` has traced."""
    return f.experimental_get_tracing_count()


@contextlib.contextmanager
def runs_as_python(match: str = ""):
    """Asserts that a static `for` loop the block runs is run as the Python loop
    `jax.jit` unrolls (noted by the runtime, with why), the reason matching ``match``."""
    from autograph.runtime.loop_forms import python_loops
    notes = python_loops.python_loops
    before = list(notes)
    notes.clear()
    try:
        yield
        reasons = [why for _, why, _ in notes]
        assert any(re.search(match, why) for why in reasons), (
            f"no static loop ran as Python for a reason matching {match!r}: {reasons}")
    finally:
        notes[:] = before
