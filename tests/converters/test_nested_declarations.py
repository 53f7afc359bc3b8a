"""`global`/`nonlocal` inside a block: golden output and behaviour against plain Python."""

import jax
import numpy as np
import pytest

import autograph
from autograph.converters import nested_declarations
from tests.helpers import assert_golden, check_equivalent

# ---------------------------------------------------------------------------
# Golden output


def test_golden_docstring_example():
    assert_golden("""
        def f(x):
            if x > 0:
                global calls
                calls = calls + 1
            return x
    """, """
        def f(x):
            global calls
            if x > 0:
                calls = calls + 1
            return x
    """, passes=(nested_declarations,))


def test_golden_full_pipeline_declares_in_the_generated_function():
    assert_golden("""
        def f(x):
            if x > 0:
                global calls
                if x > 1:
                    calls = 5
            return x
    """, """
        def f(x):
            global calls
            def if_true():
                def if_true_1():
                    global calls
                    ag__.outer_assigned('calls', ag__.Construct.IF)
                    calls = 5
                    return ()
                ag__.if_stmt(x > 1, if_true_1, None, (), names=())
                return ()
            ag__.if_stmt(x > 0, if_true, None, (), names=())
            return x
    """)


def test_golden_merged_after_docstring_and_top_declarations():
    assert_golden('''
        def f(x):
            """Doc."""
            global a
            for i in x:
                nonlocal n
                global b, a
            while x:
                try:
                    global c
                except E:
                    nonlocal m
            return n
    ''', '''
        def f(x):
            """Doc."""
            global a
            global b, a, c
            nonlocal n, m
            for i in x:
                pass
            while x:
                try:
                    pass
                except E:
                    pass
            return n
    ''', passes=(nested_declarations,))


@pytest.mark.parametrize("src", [
    pytest.param("def f(x):\n    global g\n    if x:\n        g = 1\n    return x\n",
                 id="declared at the top"),
    pytest.param("def f(x):\n    if x:\n        def h():\n            global g\n"
                 "            g = 1\n        h()\n    return x\n",
                 id="in a nested function"),
])
def test_golden_noop(src):
    assert_golden(src, src, passes=(nested_declarations,))


# ---------------------------------------------------------------------------
# Behaviour: the declared names are the global or enclosing variables, as in Python

COUNT = 0


def global_in_nested_if(x, flag):
    if flag:
        global COUNT
        if x is not None:
            COUNT = COUNT + 1
    return x * 2.0


def global_in_loop_body(x, n):
    for _ in range(n):
        global COUNT
        COUNT += 1
        x = x + 1.0
    return x


def declared_in_block_assigned_after(x):
    if x > 0:
        global COUNT
    COUNT = 7
    return x


def nonlocal_in_nested_if(x, flag):
    count = 0

    def inc(v):
        if flag:
            nonlocal count
            if flag > 1:
                count = 10
        return v

    inc(x)
    return x * count


def nonlocal_in_loop_body(x, n):
    total = 0

    def add(v):
        for i in range(n):
            nonlocal total
            total = total + i
        return v

    add(x)
    return x + total


def _count_after(fn, *args):
    global COUNT
    COUNT = 0
    out = fn(*args)
    return out, COUNT


@pytest.mark.parametrize("fn, arg_sets", [
    pytest.param(global_in_nested_if, [(np.float32(1.5), 1), (np.float32(1.5), 0)],
                 id="global in a nested if"),
    pytest.param(global_in_loop_body, [(np.float32(1.5), 3), (np.float32(1.5), 0)],
                 id="global in a loop body"),
])
def test_global_in_a_block_reaches_the_module(fn, arg_sets):
    cf = autograph.convert(fn)
    jf = jax.jit(cf, static_argnums=1)
    for args in arg_sets:
        want, want_count = _count_after(fn, *args)
        for run in (cf, jf):
            got, got_count = _count_after(run, *args)
            np.testing.assert_allclose(got, want)
            assert got_count == want_count


def test_global_declared_in_a_block_applies_to_the_whole_function():
    for x in (np.float32(2.0), np.float32(-2.0)):  # the block runs, or not: same meaning
        want = _count_after(declared_in_block_assigned_after, x)
        assert _count_after(autograph.convert(declared_in_block_assigned_after), x) == want
        got, count = _count_after(jax.jit(autograph.convert(declared_in_block_assigned_after)),
                                  x)
        assert float(got) == float(want[0]) and count == want[1] == 7


def test_nonlocal_in_a_block_reaches_the_enclosing_function():
    check_equivalent(nonlocal_in_nested_if, *[(np.float32(1.5), k) for k in (0, 1, 2)],
                     static_argnums=(1,))
    check_equivalent(nonlocal_in_loop_body, *[(np.float32(1.5), n) for n in (0, 1, 4)],
                     static_argnums=(1,))
