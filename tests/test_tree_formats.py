"""The tree conversions and the unparser against the libraries they stand in for.

``tree_formats.to_gast`` must give what ``gast.ast_to_gast`` gives (``gast.dump``
with locations equal), and ``unparsing.unparse`` what the standard unparser
writes for ``gast.gast_to_ast`` of the same tree, with the three differences
the project keeps (bracketed tuple targets, no blank line before a nested
``def``, no type comments), and the same line map. The corpus is every
function of a few modules (the standard library's and JAX's NumPy, read from
disk) and a file of edge syntax.
"""

import ast
import importlib.util
import inspect
import os
import textwrap

import gast
import pytest

from autograph import tree_formats, unparsing

EDGE = '''
"""A module docstring."""
import os.path as osp, sys
from ..pkg import (a as b, c)
from . import d

@decorator
@other.decorator(1, key=2)
def defaults(a, b=1, /, c=2, *args: int, d, e=3, **kwargs: "str") -> None:
    """Docstring with 'quotes' and "quotes" and a \\\\ backslash."""
    global counter
    x: int
    (y): int = 1
    z: list[int] = []
    def nested(p, *, q):
        nonlocal x
        return p
    lambda: 0
    f = lambda a, *b, c=1, **d: (a, b, c, d)
    return lambda x, /, y: x + y

def empty_lambda_args():
    return lambda *, k: k

async def asynchronous(xs):
    async with ctx() as (a, b), other:
        pass
    async for x in xs:
        await x
    return [y async for y in xs if await y]

class Base(object, metaclass=Meta):
    """Class docstring."""
    attribute: int = 0

    def method(self):
        return super().method()

def flow(x, ys):
    if x:
        pass
    elif x > 1:
        pass
    elif x < 0:
        x = 1
    else:
        x = 2
    if x:
        pass
    else:
        if ys:
            pass
        x = 3
    while x:
        break
    else:
        x = 0
    for i, (j, k) in ys:
        continue
    else:
        pass
    try:
        pass
    except ValueError as error:
        raise RuntimeError("no") from error
    except (TypeError, KeyError):
        raise
    else:
        pass
    finally:
        del x, ys[0], ys.attr
    try:
        pass
    except* ValueError as group:
        pass
    with open(x) as f, open(ys) as (g, h):
        assert f, "message"
    match x:
        case 0 | 1 as small:
            pass
        case [1, 2, *rest]:
            pass
        case {"key": value, **others}:
            pass
        case Point(x=0, y=yy) | Point(1, 2):
            pass
        case -1 | 1.5 | 2j | -3 + 4j | "s" | b"b" | None | True:
            pass
        case _ if x:
            pass

def expressions(a, b, c):
    a = b = c
    (a,) = b
    a, b = b, a
    [a, *b] = c
    a.b[c] = a[1:2, ::3]
    a[b, c] += 1
    a[(b, c)] = a[()]
    a[1:2][...] = a[b:][:c]
    x = (a if b else c) if (a if b else c) else c
    x = lambda: (yield)
    x = (a := 10) + (b := 2)
    x = not a and (b or c) or not (a or b)
    x = a < b <= c != (a < b) is not None in [] not in ()
    x = -a ** -b, (-a) ** b, a ** b ** c, (a ** b) ** c, -(a ** b)
    x = a + b * c - (a - b) - (a - (b - c)) / a // b % c @ a
    x = a | b ^ c & (a | b) << 1 >> (2 << a)
    x = ~a + +b - -c, not not a
    x = 1 .real, 1.5.real, (1).imag, True.real, (-1).real, a.b.c
    x = 1e300 * 1e300, 1e999, -1e999j, 2j, -2j, 1 + 2j, 0x10, 1_000, 0.5
    x = "s" 'q' "d\\"q", b"bytes\\x00", r"raw\\d", u"unicode", """multi
line"""
    x = f"{a}{b!r:>{c}}{c:.2f}{'nested'}{a + b=}{ {a} }"
    x = f"{a!s}" f'{b!a}' "plain" f"{{braces}}"
    x = f"{'single'}" + f"{a['key']}" + f'{b["key"]}'
    x = f"{a:{b}{c}}" + f"tab\\there" + f"new\\nline"
    x = {}, {1}, {1: 2}, {**a, 1: 2}, {*a, *b}, [], [*a], (), (a,), (*a, b)
    x = [i for i in a if i if not i], {i for i in a}, {i: j for i, j in a}
    x = (i for i in a for j in i), list(i for i in a)
    x = a(*b, *c, d=1, **a, **b)
    x = a(b for b in c)
    x = await_ = yield_ = None
    yield a
    yield from b
    x = yield a, b
    return (a, b), ...

def generator():
    y = yield
    y = yield 1
    await_me = (yield)
    return y
'''


def _module_text(name: str) -> str:
    return inspect.getsource(importlib.import_module(name))


def _jax_text(relative: str) -> str:
    spec = importlib.util.find_spec("jax")
    assert spec is not None and spec.submodule_search_locations
    with open(os.path.join(spec.submodule_search_locations[0], relative)) as f:
        return f.read()


CORPUS = {
    "edge syntax": lambda: textwrap.dedent(EDGE),
    "inspect": lambda: _module_text("inspect"),
    "ast": lambda: _module_text("ast"),
    "json.decoder": lambda: _module_text("json.decoder"),
    "jax numpy ufuncs": lambda: _jax_text("_src/numpy/ufuncs.py"),
    "jax numpy reductions": lambda: _jax_text("_src/numpy/reductions.py"),
    "jax numpy indexing": lambda: _jax_text("_src/numpy/indexing.py"),
}


def _functions(text: str):
    """The module, then each function in it, as ``parsing`` hands them over."""
    tree = ast.parse(text)
    yield tree
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield node


class _Reference(ast._Unparser):  # type: ignore[name-defined]
    """The standard unparser with the project's three differences and the line map."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.line_map = {}
        self._line = 1
        self._origin = None

    def write(self, *text):
        for t in text:
            self._line += t.count("\n")
        super().write(*text)

    def get_type_comment(self, node):
        return None

    def visit_Assign(self, node):
        for target in node.targets:
            if isinstance(target, ast.Tuple):
                target.bracketed = True
        super().visit_Assign(node)

    def visit_Tuple(self, node):
        if getattr(node, "bracketed", False):
            with self.delimit("(", ")"):
                self.items_view(self.traverse, node.elts)
        else:
            super().visit_Tuple(node)

    def maybe_newline(self):
        pass

    def fill(self, text=""):
        if self._source:
            self.write("\n")
        self.write("    " * self._indent + text)
        if self._origin is not None:
            self.line_map.setdefault(self._line, self._origin)

    def traverse(self, node):
        if isinstance(node, ast.stmt):
            previous = self._origin
            self._origin = getattr(node, "lineno", None) or previous
            super().traverse(node)
            self._origin = previous
        else:
            super().traverse(node)


def _reference_unparse(node):
    unparser = _Reference()
    return unparser.visit(gast.gast_to_ast(node)) + "\n", unparser.line_map


@pytest.mark.parametrize("name", CORPUS)
def test_to_gast_matches_gast(name):
    count = 0
    for node in _functions(CORPUS[name]()):
        expected = gast.dump(gast.ast_to_gast(node), include_attributes=True)
        assert gast.dump(tree_formats.to_gast(node), include_attributes=True) == expected
        count += 1
    assert count > 1


@pytest.mark.parametrize("name", CORPUS)
def test_to_ast_matches_gast(name):
    for node in _functions(CORPUS[name]()):
        tree = gast.ast_to_gast(node)
        expected = ast.dump(gast.gast_to_ast(tree), include_attributes=True)
        assert ast.dump(tree_formats.to_ast(tree), include_attributes=True) == expected


@pytest.mark.parametrize("name", CORPUS)
def test_unparse_matches_the_standard_unparser(name):
    for node in _functions(CORPUS[name]()):
        if isinstance(node, ast.Lambda):
            continue  # an expression: the unparser writes statements
        tree = tree_formats.to_gast(node)
        before = gast.dump(tree, include_attributes=True)
        source, line_map = unparsing.unparse(tree)
        assert (source, line_map) == _reference_unparse(tree)
        assert gast.dump(tree, include_attributes=True) == before  # the tree is left as it was
        assert ast.dump(ast.parse(source)) == ast.dump(ast.parse(ast.unparse(node)))


def test_edge_syntax_output():
    tree = tree_formats.to_gast(ast.parse(textwrap.dedent('''
        def f(a, /, b: int = 1, *c, d, **e):
            (x,) = a, = b
            if a:
                pass
            elif b:
                def g():
                    """Doc."""
                    return 1 .real, -a ** -b, a[1:2, b]
            else:
                return g(a)(b).c
        ''')))
    source, line_map = unparsing.unparse(tree)
    assert source == textwrap.dedent('''\
        def f(a, /, b: int=1, *c, d, **e):
            (x,) = (a,) = b
            if a:
                pass
            elif b:
                def g():
                    """Doc."""
                    return (1 .real, -a ** (-b), a[1:2, b])
            else:
                return g(a)(b).c
        ''')
    # `elif` and `else` belong to the `if`, and a docstring to its `def`
    assert line_map == {1: 2, 2: 3, 3: 4, 4: 5, 5: 4, 6: 7, 7: 7, 8: 9, 9: 4, 10: 11}


def test_a_node_written_twice_is_written_as_two_copies():
    # converters may put one node object in two places; each is bracketed for its own place
    tree = tree_formats.to_gast(ast.parse("def f(a, b):\n    (a, b) = g(a + b, (a, b))\n"))
    assign = tree.body[0].body[0]
    target, call = assign.targets[0], assign.value
    call.args = [call.args[0], target, call.args[0]]  # the target tuple and the sum, twice
    call.keywords = [gast.keyword(arg="k", value=gast.BinOp(
        left=call.args[0], op=gast.Mult(), right=call.args[0]))]
    shared = unparsing.unparse(tree)
    assert shared == _reference_unparse(tree)  # which writes from a copy of each occurrence
    assert shared == unparsing.unparse(tree_formats.to_gast(tree_formats.to_ast(tree)))
    assert shared[0].splitlines()[1] == "    (a, b) = g(a + b, (a, b), a + b, k=(a + b) * (a + b))"


def test_a_made_node_without_some_field():
    tree = tree_formats.to_gast(ast.parse("def f():\n    return 1\n"))
    del tree.body[0].body[0].value.kind  # a converter built it without `kind`
    assert unparsing.unparse(tree)[0] == "def f():\n    return 1\n"
