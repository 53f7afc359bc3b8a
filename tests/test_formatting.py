"""Formatting in ``print``, ``assert`` messages and ``raise`` messages: when the program runs.

``"...".format(...)``, ``%`` on a string literal, ``str``/``repr``/``format`` and ``+`` of
their results format traced values with Python's own formatting of the concrete values, so
the text is what the plain-Python run of the same function prints; on Python values each is
the Python operation, done at once.
"""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import pytest

import autograph
from autograph.runtime.python import strings


def _printed(capsys, run) -> str:
    capsys.readouterr()
    run()
    jax.effects_barrier()
    return capsys.readouterr().out


def _same_text(capsys, fn, *calls, static=()):
    """Each call prints, converted and jitted (twice: every run, not only the trace),
    what the plain-Python run prints on the same values."""
    want = _printed(capsys, lambda: [fn(*args) for args in calls])
    f = jax.jit(autograph.convert(fn), static_argnums=static)
    for _ in range(2):
        assert _printed(capsys, lambda: [f(*args) for args in calls]) == want
    return want


def _while_formats(x, a, name):
    i = 0
    er = x * 0.5
    while x < 10:
        x = x + 3
        print("step {}".format(i), "step " + str(i), "Er = {}".format(er))
        print("%d" % i, "%.3f" % (x,), "x=%s, y=%s" % (x, i), "{:.2f}".format(x),
              "{0} {name}".format(a, name=name))
        print(repr(x), [str(x), 1], {"b": "%5.1f|" % x, "a": 1}, format(x, ">8.1f"),
              "v: " + str(x) + "!", "{!r:>30}".format(x), "%(v).2e" % {"v": x})
        i += 1
    return x


@pytest.mark.parametrize("x", [1.0, 6.5, 12.0])
def test_formatting_in_a_staged_while_prints_the_python_text(x, capsys):
    out = _same_text(capsys, _while_formats, (jnp.float32(x), jnp.int32(7), "bee"), static=(2,))
    assert "Tracer" not in out


def _staged_for_formats(x, n):
    for i in range(20):  # more than PYTHON_TRIPS: one `lax.scan`, its index traced
        x = x * 0.5 + i
        if i % 7 == n:
            print("i={:>3} x={:.4f}".format(i, x), "[%s]" % str(i % 3))
    return x


def test_formatting_in_a_staged_for_prints_the_python_text(capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the index formatted in `print` keeps it staged
        out = _same_text(capsys, _staged_for_formats, (jnp.float32(3.0), jnp.int32(2)))
    assert out.splitlines()[0].startswith("i=  2 x=")


def _branch_formats(x, tag):
    if x > 0:
        print("pos {:+.1f} %s".format(x) % tag, "<%s>" % ("x" + str(x)))
    else:
        print("neg " + repr(x * 2), "%s|%r" % (tag, tag))
    return x


def test_formatting_in_a_staged_branch_prints_the_python_text(capsys):
    out = _same_text(capsys, _branch_formats, (jnp.float32(2.5), "t"), (jnp.float32(-1.0), "u"),
                     static=(1,))
    assert out == "pos +2.5 t <x2.5>\nneg Array(-2., dtype=float32) u|'u'\n"


def _python_formats(n, label):
    print("{}:{:03d}".format(label, n), "%s=%x" % (label, n), str(n) + repr(label))
    return n


def test_python_values_format_at_once_as_python_does(capsys):
    f = autograph.convert(_python_formats)
    assert _printed(capsys, lambda: f(42, "n")) == "n:042 n=2a 42'n'\n"
    # under `jax.jit` a static Python value formats while tracing: once, as plain jit prints
    g = jax.jit(f, static_argnums=(0, 1))
    assert _printed(capsys, lambda: [g(7, "k"), g(7, "k")]) == "k:007 k=7 7'k'\n"


def _checked(x):
    assert x < 10, "x=%.2f is too big (%s)" % (x, "limit 10")
    assert x > -10, "x={:.1f} is too small".format(x) + " " + str(x)
    return x


@pytest.mark.parametrize("x, message", [
    (12.5, "x=12.50 is too big (limit 10)"), (-11.0, "x=-11.0 is too small -11.0")])
def test_assert_message_is_formatted_at_run_time(x, message):
    with pytest.raises(AssertionError) as python:
        _checked(x)
    assert str(python.value).splitlines()[0] == message  # (pytest adds the test below it)
    with pytest.raises(AssertionError) as staged:
        autograph.function(_checked)(jnp.float32(x))
    assert str(staged.value) == message
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)")):
        jax.block_until_ready(jax.jit(autograph.convert(_checked))(jnp.float32(x)))
        jax.effects_barrier()
    assert float(autograph.function(_checked)(jnp.float32(1.0))) == 1.0


def _raises_formatted(x):
    if x > 1.0:
        raise ValueError("x too big: {:.2f}".format(x), "%d%%" % (x * 10), str(x * 2))
    return x


def test_raise_message_is_formatted_at_run_time():
    with pytest.raises(ValueError) as python:
        _raises_formatted(jnp.float32(3.25))
    with pytest.raises(ValueError) as staged:
        autograph.function(_raises_formatted)(jnp.float32(3.25))
    assert staged.value.args == python.value.args == ("x too big: 3.25", "32%", "6.5")
    assert float(autograph.function(_raises_formatted)(jnp.float32(0.5))) == 0.5


# -- the operators on Python values: Python's own result, at once ------------------


class _Template:
    def format(self, *args, **kwargs):
        return ("formatted", args, kwargs)


@pytest.mark.parametrize("got, want", [
    pytest.param(lambda: strings.str_format("{0!r:>5}|{k}", "a", k=[1]), "  'a'|[1]", id="format"),
    pytest.param(lambda: strings.str_format("{template}", template=1), "1", id="format keyword"),
    pytest.param(lambda: strings.str_format(_Template(), 1, k=2), ("formatted", (1,), {"k": 2}),
                 id="format method of another object"),
    pytest.param(lambda: strings.percent_format("%s|%5.2f", (1, 3.14159)), "1| 3.14", id="%"),
    pytest.param(lambda: strings.percent_format("%(a)s %(b)r", {"b": "x", "a": 1}), "1 'x'",
                 id="% with a dict"),
    pytest.param(lambda: strings.percent_format("%s", (1,)), "1", id="% with a 1-tuple"),
    pytest.param(lambda: strings.percent_format(7, 3), 1, id="% of numbers"),
    pytest.param(lambda: strings.str_({"b": 1, "a": (2,)}), "{'b': 1, 'a': (2,)}", id="str"),
    pytest.param(lambda: strings.repr_("it's"), '"it\'s"', id="repr"),
    pytest.param(lambda: strings.format_(3.14159, ".3f"), "3.142", id="format builtin"),
    pytest.param(lambda: strings.fstring(lambda v: f"{v:>4}", 7), "   7", id="f-string"),
])
def test_python_values_get_python_results(got, want):
    value = got()
    assert value == want and type(value) is type(want)


def test_a_traced_string_is_made_again_at_run_time_and_reads_as_text_while_tracing():
    seen = []

    def f(x):
        s = strings.str_format("x={:.1f}", x)  # a spec a tracer refuses
        t = "<" + strings.str_(x) + ">"
        seen.append((type(s), str(s), type(t), str(t), "-".join([t, "a"]).endswith(">-a")))
        u = t + s
        jax.debug.callback(lambda *a: seen.append(u.render(a)), *u.fields)
        return x

    jax.jit(f)(jnp.float32(1.25))
    jax.effects_barrier()
    assert seen[0][:2] == (strings.FString, "<formatted when the program runs>")
    assert seen[0][2] is strings.FString and "Tracer" in seen[0][3] and seen[0][4]
    assert seen[1] == "<1.25>x=1.2"
