"""Lists a function only appends to are not carried by staged blocks.

A solver that appends every iterate to a history list it never reads cannot
carry that list through a `lax.while_loop` (it grows); since nothing reads
it, the loop need not carry it (``analysis.dead_lists``). Each converted
program is compared with its eager Python run on inputs that take different
trip counts and branches; the programs written to fool the analysis (the list
returned, aliased, read, handed to a helper, reached through ``locals()``)
keep the list an ordinary variable, so their staged loop is refused with the
error it always had, never run with a list left silently short.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap

import gast
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import errors
from autograph.analysis import dead_lists

XS = (0.5, 10.0, 1000.0)  # 0, 4 and 10 halvings


def _halve_keeping_history(x):
    hist = []
    while x > 1.0:
        x = x / 2
        hist.append(x)
    return x


def _halve_with_branches(x):
    hist = [x]
    steps = []
    while x > 1.0:
        if x > 20.0:
            x = x / 4
            hist.extend([x, x])
        else:
            x = x - 1.0
            hist.append(x)
        steps.append(1)
    return x


def _first_over(xs, t):
    seen = []
    found = jnp.float32(-1.0)
    for i in range(xs.shape[0]):
        seen.append(xs[i])
        if xs[i] > t:
            found = xs[i]
            break
    return found


@pytest.mark.parametrize("fn", [_halve_keeping_history, _halve_with_branches])
def test_a_history_list_does_not_stop_a_staged_while(fn):
    converted = jax.jit(autograph.convert(fn))
    for x in XS:
        np.testing.assert_allclose(converted(jnp.float32(x)), fn(x), rtol=1e-6)
    lanes = jnp.array(XS, jnp.float32)
    np.testing.assert_allclose(jax.vmap(autograph.convert(fn))(lanes),
                               [fn(x) for x in XS], rtol=1e-6)


def test_gradient_through_a_loop_with_a_dead_history():
    def f(x):
        hist = []
        while x > 1.0:
            x = x * 0.5 + 0.1
            hist.append(x * x)
        return x * x

    for x in (0.5, 3.0, 40.0):
        np.testing.assert_allclose(jax.grad(autograph.convert(f))(x), jax.grad(f)(x), rtol=1e-6)


def test_a_dead_list_in_a_for_loop_with_a_traced_break():
    xs = jnp.array([0.1, 0.7, 0.3, 0.9], jnp.float32)
    converted = jax.jit(autograph.convert(_first_over))
    for t in (0.5, 0.8, 2.0):  # stops at 1, at 3, never
        np.testing.assert_allclose(converted(xs, t), _first_over(np.asarray(xs), t))


def test_to_code_and_explain_say_what_is_not_carried():
    code = autograph.to_code(_halve_keeping_history)
    assert "names=('x',), dead=('hist',)" in code
    assert "(hist, x)" not in code
    explained = subprocess.run(
        [sys.executable, "-m", "autograph", "explain", f"{__file__}:_halve_keeping_history"],
        capture_output=True, text=True, check=True).stdout
    assert "not carried: hist (lists the function only appends to" in explained


# -- the programs written to fool it: the list stays carried, and a staged loop
# that grows it is refused as before

def _returned(x):
    hist = []
    while x > 1.0:
        x = x / 2
        hist.append(x)
    return hist


def _aliased(x):
    hist = []
    alias = hist
    while x > 1.0:
        x = x / 2
        hist.append(x)
    return x, alias


def _read_in_the_body(x):
    hist = [x]
    while x > 1.0:
        x = hist[-1] / 2
        hist.append(x)
    return x


def _length_after(x):
    hist = []
    while x > 1.0:
        x = x / 2
        hist.append(x)
    return x, len(hist)


_STORE: list = []


def _keep(a):
    _STORE.append(a)


def _handed_to_a_helper(x):
    hist = []
    _keep(hist)
    while x > 1.0:
        x = x / 2
        hist.append(x)
    return x


def _read_by_a_closure(x):
    hist = []

    def count():
        return len(hist)

    while x > 1.0:
        x = x / 2
        hist.append(x)
    return x, count()


def _through_locals(x):
    hist = []
    while x > 1.0:
        x = x / 2
        hist.append(x)
    return x, locals()["hist"]


def _grown_in_place(x):
    hist = []
    while x > 1.0:
        x = x / 2
        hist += [x]
    return x


def _bound_in_a_branch(x, fresh):
    hist = []
    if fresh:
        hist = []
    while x > 1.0:
        x = x / 2
        hist.append(x)
    return x


FOOLING = [_returned, _aliased, _read_in_the_body, _length_after, _handed_to_a_helper,
           _read_by_a_closure, _grown_in_place]


@pytest.mark.parametrize("fn", FOOLING, ids=lambda f: f.__name__)
def test_a_list_read_anywhere_stays_carried(fn):
    tree = gast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    assert dead_lists.write_only_lists(tree) == frozenset()
    assert "dead=" not in autograph.to_code(fn)
    with pytest.raises(errors.LoopStateError):
        jax.jit(autograph.convert(fn))(jnp.float32(10.0))
    _STORE.clear()


def test_a_list_reached_through_locals_is_read():
    # (a function reading its own frame is not converted at all: see test_unsupported)
    tree = gast.parse(textwrap.dedent(inspect.getsource(_through_locals))).body[0]
    assert dead_lists.write_only_lists(tree) == frozenset()
    with pytest.raises(errors.ConversionError, match="`locals\\(\\)`"):
        autograph.to_code(_through_locals)


def test_a_list_the_python_loop_fills_is_whole():
    # the same programs, when the loop runs as Python, give Python's lists
    for x in XS:
        assert autograph.convert(_returned)(x) == _returned(x)
        assert autograph.convert(_aliased)(x) == _aliased(x)
        assert autograph.convert(_length_after)(x) == _length_after(x)


def test_bindings_outside_the_top_level_keep_a_list_carried():
    tree = gast.parse(textwrap.dedent(inspect.getsource(_bound_in_a_branch)))
    assert dead_lists.write_only_lists(tree.body[0]) == frozenset()


@pytest.mark.parametrize("source", [
    "def f(x):\n    hist = []\n    g = lambda: hist\n    hist.append(x)\n",
    "def f(x):\n    hist = []\n    hist.append(hist)\n",
    "def f(x):\n    hist = []\n    y = hist.append(x)\n",
    "def f(x):\n    hist = []\n    hist.pop()\n",
    "def f(x):\n    hist = []\n    global hist\n",
    "def f(hist):\n    hist = []\n    hist.append(1)\n",
    "def f(x):\n    hist = [*x]\n    hist.append(1)\n",
    "def f(x):\n    hist = list()\n    hist.append(1)\n",
    "def f(x):\n    hist = []\n    hist.append(1)\n    return [v for v in hist]\n",
    "def f(x):\n    hist = []\n    hist.append(1)\n    import sys\n    sys._getframe()\n",
    "def f(x):\n    hist = []\n    hist.append(1)\n    del hist\n",
    "def f(x):\n    hist = []\n    import numpy as hist\n    hist.append(1)\n",
    "def f(x):\n    hist = []\n    hist.append(1)\n    try:\n        raise KeyError\n"
    "    except KeyError as e:\n        e.__traceback__.tb_frame\n",
    "def f(x):\n    hist = []\n    hist.append(1)\n    import gc\n    gc.get_referrers(x)\n",
    "def f(x):\n    hist = []\n    def hist():\n        pass\n    hist.append(1)\n",
    "def f(x):\n    hist = []\n    match x:\n        case [*hist]:\n            pass\n"
    "    hist.append(1)\n",
])
def test_what_the_analysis_refuses(source):
    assert dead_lists.write_only_lists(gast.parse(source).body[0]) == frozenset()


def test_what_the_analysis_accepts():
    source = ("def f(x):\n    a = []\n    b: list = [x]\n    c = [v for v in x]\n"
              "    for v in x:\n        a.append(v)\n        b.extend([v])\n        c.append(v)\n"
              "    return x\n")
    assert dead_lists.write_only_lists(gast.parse(source).body[0]) == {"a", "b", "c"}


def long_history(x):
    hist = []
    for i in range(300):
        x = x * 0.5 + i
        hist.append(x)
    return x


def test_a_long_static_loop_with_a_dead_list_still_stages(recwarn):
    # the proof counts the list as the loop's own: one scan, no warning
    jaxpr = str(jax.make_jaxpr(autograph.convert(long_history))(jnp.float32(1.0)))
    assert "scan" in jaxpr
    np.testing.assert_allclose(jax.jit(autograph.convert(long_history))(jnp.float32(1.0)),
                               long_history(np.float32(1.0)), rtol=1e-5)
    assert not [w for w in recwarn if "unrolled" in str(w.message)]
