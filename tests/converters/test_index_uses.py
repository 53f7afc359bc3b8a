"""The pass that marks `for` loops using their index as a Python value."""

import gast
import pytest

from autograph.converters import for_statements, index_uses
from tests.helpers import assert_golden


def _why(source: str):
    (fn,) = gast.parse(source).body
    loop = next(n for n in gast.walk(fn) if isinstance(n, gast.For))
    return index_uses.python_use(loop)


def test_golden_docstring_example():
    assert_golden("""
        def f(x):
            for i in range(20):
                x = x + P.get(f"w{i}", 0.0)
            return x
    """, """
        def f(x):
            def loop_body(i, x):
                x = x + P.get(f'w{i}', 0.0)
                return (x,)
            (x,) = ag__.for_stmt(ag__.range_(20), loop_body, (x,), names=('x',), python_index='`i` is formatted into a string (line 4)')
            return x
    """, passes=(index_uses, for_statements))


@pytest.mark.parametrize("body, why", [
    ("x = x + P[f'w{i}']", "formatted into a string"),
    ("x = x + P['w' + str(i)]", "converted to a string with `str`"),
    ("x = x + P.get('w%d' % i, 0.0)", "formatted into a string with `%`"),
    ("x = x + P.get('w{}'.format(i), 0.0)", "formatted with `str.format`"),
    ("x = x + P.get(i, 0.0)", "used as a dict key"),
    ("x = x + {i: 1.0}[0]", "used as a dict key"),
    ("x = x + (1.0 if isinstance(i, int) else 0.0)", "tested with `isinstance`"),
    ("x = x + (1.0 if i is K else 0.0)", "compared with `is`"),
    ("x = x + (1.0 if i in KEYS else 0.0)", "tested for membership with `in`"),
    ("x = x + getattr(M, NAMES[0], i)", "used as an attribute name"),
    ("x = x + i.bit_length()", "used as a Python int (`.bit_length`)"),
    ("x = x + 2 ** -i", "an exponent"),
    ("j = 2 * i + 1\n    x = x + P[f'{j}']", "`j` is formatted into a string"),
    ("for k in range(i):\n        x = x + P[str(k)]", "`k` is converted to a string"),
    ("try:\n        x = x + W[i]\n    except IndexError:\n        pass",
     "inside a `try` block"),
])
def test_python_uses_of_the_index(body, why):
    found = _why(f"def f(x):\n  for i in range(20):\n    {body}\n  return x")
    assert found is not None and why in found


@pytest.mark.parametrize("body", [
    "x = x + W[i] * i - i // 3 + (i % 7) * 0.5",
    "x = x + 2.0 ** -i + abs(i - 20)",
    "x = (x + i).sum()",
    "print(f'step {i}', 'n=%d' % i, str(i))",
    "assert x > i, f'bad {i}'",
    "x = x.at[i].set(i)",
    "x = x + jax.random.uniform(jax.random.fold_in(KEY, i))",
    "s = f'{n}'",  # another name formatted: not the index
    "x = x + i\n    x.block_until_ready()",  # `x` is an array: `x += i` keeps it one
    "if i == 10:\n        x = x * 2",
])
def test_uses_that_keep_the_meaning_of_a_traced_index(body):
    assert _why(f"def f(x):\n  for i in range(20):\n    {body}\n  return x") is None


def test_items_of_arrays_count_only_python_value_uses():
    ok = "def f(x, xs):\n  for row in xs:\n    x = x + row.sum() * row.shape[0]\n  return x"
    assert _why(ok) is None
    bad = "def f(x, xs):\n  for row in xs:\n    x = x + P[f'{row}']\n  return x"
    assert "`row` is formatted" in _why(bad)
    counter = ("def f(x, xs):\n  for k, row in enumerate(xs):\n"
               "    x = x + row.sum() + k.bit_length()\n  return x")
    assert "`k` is used as a Python int" in _why(counter)


def test_aliases_of_the_index_are_followed():
    src = ("def f(x):\n  for i in range(20):\n    j = i\n    pair = (j, 0)\n"
           "    box = {'k': pair[0]}\n    x = x + P.get(f\"w{box['k']}\", 0.0)\n  return x")
    assert "`box` is formatted" in _why(src)


def test_attributes_the_body_assigns_and_uses_as_python_values():
    def uses(src):
        (fn,) = gast.parse(src).body
        return index_uses.state_uses(next(n for n in gast.walk(fn) if isinstance(n, gast.For)))

    formatted = ("def f(self, x):\n  for i in range(20):\n    self.n += 1\n"
                 "    x = x + P[f'w{self.n}']\n  return x")
    assert uses(formatted) == (("self.n", "`self.n` is formatted into a string (line 4)"),)
    nested = ("def f(a, x):\n  for i in range(20):\n    a.b.k = a.b.k + 1\n"
              "    if isinstance(a.b.k, int):\n      x = x + 1\n  return x")
    assert uses(nested)[0][0] == "a.b.k"
    arithmetic = ("def f(self, x):\n  for i in range(20):\n    self.n += 1\n"
                  "    x = x * self.n\n  return x")
    assert uses(arithmetic) == ()


def test_golden_python_state_gives_positions_among_the_loop_variables():
    # `n` and `self.n` by the position of `n` and `self` in `names`; `k`, which each
    # iteration assigns before using it, is not carried and needs none
    assert_golden("""
        def f(self, x):
            n = 0
            for i in range(20):
                n += 1
                self.n += 1
                k = 2
                x = x + P[f"w{n}{self.n}{k}"]
            return x
    """, """
        def f(self, x):
            n = 0
            def loop_body(i, n, self, x):
                n += 1
                self.n += 1
                k = 2
                x = x + P[f'w{n}{self.n}{k}']
                return (n, self, x)
            (n, self, x) = ag__.for_stmt(ag__.range_(20), loop_body, (n, self, x), names=('n', 'self', 'x'), python_state=((0, (), '`n` is formatted into a string (line 8)'), (1, ('n',), '`self.n` is formatted into a string (line 8)')))
            return x
    """, passes=(index_uses, for_statements))


def test_golden_python_state_names_the_global_an_attribute_chain_starts_at():
    assert_golden("""
        def f(x):
            for _ in range(3):
                G.n += 1
                x = x + P[f"w{G.n}"]
            return x
    """, """
        def f(x):
            def loop_body(_, x):
                G.n += 1
                x = x + P[f'w{G.n}']
                return (x,)
            (x,) = ag__.for_stmt(ag__.range_(3), loop_body, (x,), names=('x',), python_state=(('G', ('n',), '`G.n` is formatted into a string (line 5)'),))
            return x
    """, passes=(index_uses, for_statements))
