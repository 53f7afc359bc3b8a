"""The `print` converter: golden output for plain and f-string arguments."""

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
        def f(x):
            assert x > 0, f"bad {x:.1f}"
            return x
    """, """
        def f(x):
            ag__.assert_(x > 0, lambda: ag__.fstring(lambda v0: f'bad {v0:.1f}', x))
            return x
    """, (assert_statements,), id="assert message"),
])
def test_golden(src, expected, passes):
    assert_golden(src, expected, passes=passes)
