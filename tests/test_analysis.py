"""The analyses on their own: what a statement reads and modifies, what is live
after it, what may be bound when it starts.

Each case is a function; the statement asked about is the first one of the
kind named, found in source order.
"""

import textwrap

import gast
import pytest

from autograph import anno
from autograph.analysis import Analysis, activity, run
from autograph.anno import Anno

ALL = (Analysis.SCOPES, Analysis.LIVENESS, Analysis.DEFINITIONS)


def analysed(src: str) -> gast.FunctionDef:
    fn = gast.parse(textwrap.dedent(src)).body[0]
    run(fn, ALL)
    return fn


def first(fn, kind):
    return next(n for n in gast.walk(fn) if isinstance(n, kind))


@pytest.mark.parametrize("src, kind, modified", [
    pytest.param("""
        def f(x):
            if x > 0:
                y = 1
            else:
                z = 2
        """, gast.If, {"y", "z"}, id="both branches"),
    pytest.param("""
        def f(xs):
            for x in xs:
                acc.append(x)
                d[x] = 1
                o.attr = x
        """, gast.For, {"acc", "d", "o"}, id="mutation counts as modification"),
    pytest.param("""
        def f(x):
            while x > 0:
                g = lambda v: v + x
                ys = [t for t in range(3)]
                x = x - 1
        """, gast.While, {"g", "ys", "x"}, id="lambda and comprehension names stay inside"),
])
def test_body_modifies(src, kind, modified):
    node = first(analysed(src), kind)
    scope = anno.get(node, Anno.BODY_SCOPE)
    if kind is gast.If:
        scope = scope | anno.get(node, Anno.ORELSE_SCOPE)
    assert set(scope.modified) == modified


@pytest.mark.parametrize("src, kind, live_out", [
    pytest.param("""
        def f(x):
            y = 0
            if x > 0:
                y = 1
                t = 2
            return y
        """, gast.If, {"y"}, id="a temporary is not live after the if"),
    pytest.param("""
        def f(x):
            i = 0
            while i < 3:
                i = i + 1
            return x
        """, gast.While, {"x"}, id="the counter dies with the loop"),
    pytest.param("""
        def f(x):
            for i in range(3):
                x = x + i
            return x, i
        """, gast.For, {"x", "i"}, id="the target after the loop"),
    pytest.param("""
        def f(x):
            y = 1
            if x > 0:
                x = 2
            def g():
                return y
            return g
        """, gast.If, {"y"}, id="a closure's reads stay live"),
])
def test_live_out(src, kind, live_out):
    node = first(analysed(src), kind)
    assert set(anno.get(node, Anno.LIVE_OUT)) == live_out


def test_loop_head_is_live_across_iterations():
    fn = analysed("""
        def f(x, n):
            acc = 0
            while n > 0:
                acc = acc + x
                n = n - 1
            return acc
        """)
    loop = first(fn, gast.While)
    assert {"acc", "n", "x"} <= set(anno.get(loop, Anno.BODY_LIVE_IN))
    assert set(anno.get(loop, Anno.LIVE_IN)) == {"acc", "n", "x"}


@pytest.mark.parametrize("src, kind, defined", [
    pytest.param("""
        def f(x):
            if x > 0:
                y = 1
            while x > 0:
                x = x - 1
        """, gast.While, {"x", "y"}, id="bound on one branch: maybe bound"),
    pytest.param("""
        def f(x):
            for i in range(3):
                if i > 0:
                    z = w
                w = i
        """, gast.If, {"x", "i", "w", "z"}, id="an earlier iteration's bindings"),
    pytest.param("""
        def f(x):
            if x > 0:
                y = 1
        """, gast.If, {"x"}, id="only parameters at the first statement"),
])
def test_defined_in(src, kind, defined):
    node = first(analysed(src), kind)
    assert set(anno.get(node, Anno.DEFINED_IN)) == defined


def test_function_locals_exclude_declared_names():
    fn = gast.parse(textwrap.dedent("""
        def f(x):
            global g
            g = x
            y = g
        """)).body[0]
    assert activity.function_locals(fn) == {"x", "y"}
    assert activity.declared_outer(fn) == {"g": gast.Global}


def test_annotation_keys_are_checked():
    node = gast.parse("x = 1").body[0]
    with pytest.raises(TypeError, match="Anno"):
        anno.set(node, "LIVE_OUT", frozenset())
