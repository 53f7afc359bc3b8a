"""The `and`/`or` read only for their truth: golden output and semantics."""

import jax
import numpy as np
import pytest

import autograph
from autograph.converters import logical_expressions, truth_tests
from tests.helpers import assert_golden

F32 = np.float32


def test_golden_docstring_example():
    assert_golden("""
        def f(x, y):
            if x > 0 and y:
                x = x - 1
            return x
    """, """
        def f(x, y):
            def if_true(x):
                x = x - 1
                return (x,)
            (x,) = ag__.if_stmt(ag__.and_(x > 0, lambda: y, test=True), if_true, None, (x,), names=('x',))
            return x
    """)


@pytest.mark.parametrize("src, expected", [
    pytest.param("return a and b or c\n",
                 "return ag__.or_(ag__.and_(a, lambda: b), lambda: c)\n", id="a value"),
    pytest.param("y = (a or b) if c else d\n",
                 "y = ag__.or_(a, lambda: b) if c else d\n", id="a branch of an if_exp"),
    pytest.param("if (y := a and b):\n    pass\n",
                 "if (y := ag__.and_(a, lambda: b)):\n    pass\n", id="a walrus in a test"),
])
def test_golden_values_stay(src, expected):
    src = "def f(a, b, c, d):\n" + "".join("    " + ln + "\n" for ln in src.splitlines())
    want = "def f(a, b, c, d):\n" + "".join("    " + ln + "\n" for ln in expected.splitlines())
    assert_golden(src, want, passes=(truth_tests, logical_expressions))


@pytest.mark.parametrize("src, expected", [
    pytest.param("if a and (b or not c):\n    pass\n",
                 "if ag__.and_(a, lambda: ag__.or_(b, lambda: ag__.not_(c), test=True), "
                 "test=True):\n    pass\n", id="nested operands"),
    pytest.param("return not (a or b)\n",
                 "return ag__.not_(ag__.or_(a, lambda: b, test=True))\n", id="under not"),
    pytest.param("assert a and b, 'msg'\n",
                 "assert ag__.and_(a, lambda: b, test=True), 'msg'\n", id="an assert"),
])
def test_golden_truth_positions(src, expected):
    src = "def f(a, b, c):\n" + "".join("    " + ln + "\n" for ln in src.splitlines())
    want = "def f(a, b, c):\n" + "".join("    " + ln + "\n" for ln in expected.splitlines())
    assert_golden(src, want, passes=(truth_tests, logical_expressions))


def gate(x, flag, name):
    if x > 0 and flag and name:
        return x
    return -x


@pytest.mark.parametrize("flag, name", [(None, "a"), (True, ""), (1, "a"), ((), "a")])
def test_python_operands_decide_by_their_truth(flag, name):
    jf = jax.jit(autograph.convert(gate), static_argnums=(1, 2))
    for x in (F32(2.0), F32(-2.0)):
        assert float(jf(x, flag, name)) == gate(x, flag, name)
