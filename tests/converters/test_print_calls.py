"""The `print` converter: golden output for plain arguments and the formatting in them."""

import pytest

from autograph.converters import assert_statements, print_calls
from tests.helpers import assert_golden


@pytest.mark.parametrize("src, expected, passes", [
    pytest.param("""
        def f(i, loss):
            print("step", i, "loss", loss)
            return loss
    """, """
        def f(i, loss):
            ag__.print_('step', i, 'loss', loss)
            return loss
    """, (print_calls,), id="plain arguments"),
    pytest.param("""
        def f(i, loss):
            print(f"{i}: {loss:.4f}", f"{loss!r:>{i}}")
            return loss
    """, """
        def f(i, loss):
            ag__.print_(ag__.fstring(lambda v0, v1: f'{v0}: {v1:.4f}', i, loss), ag__.fstring(lambda v0, v1: f'{v0!r:>{v1}}', loss, i))
            return loss
    """, (print_calls,), id="f-strings, nested spec"),
    pytest.param("""
        def f(i, loss, x):
            print("step {}".format(i))
            print("%d: %.3f" % (i, loss))
            print("x=" + str(x), repr(x))
            return loss
    """, """
        def f(i, loss, x):
            ag__.print_(ag__.str_format('step {}', i))
            ag__.print_(ag__.percent_format('%d: %.3f', (i, loss)))
            ag__.print_('x=' + ag__.str_(x), ag__.repr_(x))
            return loss
    """, (print_calls,), id="format, percent, str and repr (the docstring's rows)"),
    pytest.param("""
        def f(x, fmt, name):
            print("{0} {name:>{w}}".format(x, name=name, w=8), format(x, ".2f"), fmt.format(*x))
            print([str(x)], {"x": "%s" % (x,)}, x % 2, fmt % x, str(), str(b"a", "ascii"))
            return x
    """, """
        def f(x, fmt, name):
            ag__.print_(ag__.str_format('{0} {name:>{w}}', x, name=name, w=8), ag__.format_(x, '.2f'), ag__.str_format(fmt, *x))
            ag__.print_([ag__.str_(x)], {'x': ag__.percent_format('%s', (x,))}, x % 2, fmt % x, str(), str(b'a', 'ascii'))
            return x
    """, (print_calls,), id="nested, keywords; % only on a string literal; other str calls"),
    pytest.param("""
        def f(x):
            str = repr
            print(str(x), format(x))
            return x
    """, """
        def f(x):
            str = repr
            ag__.print_(str(x), ag__.format_(x))
            return x
    """, (print_calls,), id="a rebound built-in is kept"),
    pytest.param("""
        def f(x):
            y = "step {}".format(x) + str(x)
            return y
    """, """
        def f(x):
            y = 'step {}'.format(x) + str(x)
            return y
    """, (print_calls,), id="outside print: untouched"),
    pytest.param("""
        def f(x):
            assert x > 0, f"bad {x:.1f}"
            return x
    """, """
        def f(x):
            ag__.assert_(x > 0, lambda: ag__.fstring(lambda v0: f'bad {v0:.1f}', x))
            return x
    """, (assert_statements,), id="assert message"),
    pytest.param("""
        def f(x):
            assert x > 0, "bad %s" % x
            assert x < 9, "bad {:.1f}".format(x) + str(x)
            return x
    """, """
        def f(x):
            ag__.assert_(x > 0, lambda: ag__.percent_format('bad %s', x))
            ag__.assert_(x < 9, lambda: ag__.str_format('bad {:.1f}', x) + ag__.str_(x))
            return x
    """, (assert_statements,), id="assert message: the docstring's example, .format and str"),
])
def test_golden(src, expected, passes):
    assert_golden(src, expected, passes=passes)
