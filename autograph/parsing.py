"""Finds a live function's source and parses it into a gast tree.

The whole file is parsed (once per file and content) with the standard
library's parser and the function's node is located by its code object, so
every node keeps the user's real line and column: no dedenting, no offsets,
and functions nested in classes or other functions, decorated functions and
lambdas all parse the same way. The chosen subtree is then turned into gast.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import linecache
import types

import gast

from autograph import errors, tree_formats


@dataclasses.dataclass
class ParsedFunction:
    """A function's tree (a ``gast.FunctionDef``) and where it came from."""

    node: gast.FunctionDef
    filename: str
    is_lambda: bool = False


@functools.lru_cache(maxsize=64)
def _parse_file(filename: str, text: str) -> ast.Module:
    with tree_formats.CPYTHON_TREES:
        return ast.parse(text, filename=filename)


def _source_text(code: types.CodeType, module_globals: dict | None) -> str:
    lines = linecache.getlines(code.co_filename, module_globals)
    return "".join(lines)


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    lines = [node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]
    return min(lines)


def _inside(pos, node: ast.expr) -> bool:
    line, _, col, _ = pos
    if line is None or col is None:
        return False
    start = (node.lineno, node.col_offset)
    end = (node.end_lineno, node.end_col_offset)
    return start <= (line, col) < end


def _find(tree: ast.Module, code: types.CodeType) -> ast.AST | None:
    if code.co_name == "<lambda>":
        found = [n for n in ast.walk(tree)
                 if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno]
        if len(found) > 1:
            argnames = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
            found = [n for n in found
                     if tuple(a.arg for a in n.args.posonlyargs + n.args.args
                              + n.args.kwonlyargs) == argnames] or found
        if len(found) > 1:  # several lambdas on one line: match instruction positions
            positions = list(code.co_positions())
            found.sort(key=lambda n: -sum(_inside(p, n.body) for p in positions))
        return found[0] if found else None
    for node in ast.walk(tree):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name == code.co_name
                and _first_line(node) == code.co_firstlineno):
            return node
    return None


def parse_function(fn: types.FunctionType) -> ParsedFunction:
    """Parses the source of ``fn``.

    Raises:
      ConversionError: the source is not available (built-ins, code made by
        ``exec`` or typed at a plain REPL) or cannot be located.
    """
    code = fn.__code__
    filename = code.co_filename
    text = _source_text(code, getattr(fn, "__globals__", None))
    where = errors.Location(filename, code.co_firstlineno)
    if not text:
        raise errors.SourceUnavailableError(
            f"the source of `{fn.__qualname__}` is not available",
            observed=f"no source text for {filename!r}",
            location=where,
            fix="define the function in a file (or a notebook cell), or call it "
                "unconverted with `autograph.do_not_convert`")
    try:
        tree = _parse_file(filename, text)
    except SyntaxError as e:
        raise errors.SourceUnavailableError(
            f"the file defining `{fn.__qualname__}` does not parse",
            observed=str(e), location=where,
            fix="the file may have changed since it was imported; re-import it") from None
    node = _find(tree, code)
    if node is None:
        raise errors.SourceUnavailableError(
            f"cannot locate the source of `{fn.__qualname__}`",
            observed=f"no definition of `{code.co_name}` starts at line {code.co_firstlineno}",
            location=where,
            fix="the file may have changed since it was imported; re-import it")
    if isinstance(node, ast.Lambda):
        fdef = ast.FunctionDef(
            name="lambda_fn", args=node.args,
            body=[ast.copy_location(ast.Return(value=node.body), node.body)],
            decorator_list=[], returns=None, type_comment=None)
        ast.copy_location(fdef, node)
        return ParsedFunction(tree_formats.to_gast(fdef), filename, is_lambda=True)
    return ParsedFunction(tree_formats.to_gast(node), filename)


def enclosing_class(qualname: str) -> str | None:
    """The innermost class whose body a function of this ``__qualname__`` is written in.

    A name followed by ``<locals>`` is a function's; any other before the
    function's own name is a class's.

    Examples:
      >>> enclosing_class("Layer.__call__"), enclosing_class("f.<locals>.Layer.m")
      ('Layer', 'Layer')
      >>> enclosing_class("Layer.m.<locals>.helper"), enclosing_class("f.<locals>.g")
      ('Layer', None)
    """
    parts = qualname.split(".")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] != "<locals>" and parts[i + 1] != "<locals>":
            return parts[i]
    return None


def super_args(node: gast.FunctionDef, qualname: str,
               freevars: tuple[str, ...] | None = None) -> tuple[str, str] | None:
    """What the converted function is given for zero-argument ``super()``.

    That is ``("__class__", first positional parameter)`` when the function has
    the ``__class__`` cell, else None. The compiler gives a function that cell
    when it sits in a class and it (or a function nested in it) names ``super``
    or ``__class__``.

    Args:
      node: the function's tree.
      qualname: its ``__qualname__``.
      freevars: a live function's ``co_freevars``, which hold the cell when it
        has one. Without them (the command line, which never runs the user's
        module) the cell is decided from the syntax, as the compiler does.
    """
    positional = node.args.posonlyargs + node.args.args
    if not positional:
        return None
    if freevars is not None:
        has_cell = "__class__" in freevars
    else:
        has_cell = _in_class(qualname) and _names_class(node)
    return ("__class__", positional[0].id) if has_cell else None


def _in_class(qualname: str) -> bool:
    parts = qualname.split(".")
    return any(p != "<locals>" and nxt != "<locals>" for p, nxt in zip(parts, parts[1:]))


def _names_class(node: gast.AST) -> bool:
    """Whether ``node`` names ``super`` or ``__class__`` outside any nested class."""
    for child in gast.iter_child_nodes(node):
        if isinstance(child, gast.ClassDef):
            continue
        if isinstance(child, gast.Name) and child.id in ("super", "__class__"):
            return True
        if _names_class(child):
            return True
    return False


def parse_source_functions(text: str, filename: str):
    """Parses a module's text; yields ``(qualified name, gast.FunctionDef)``.

    Used by the command line, which converts syntactically without importing.
    """
    with tree_formats.CPYTHON_TREES:
        tree = ast.parse(text, filename=filename)

    def walk(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = f"{prefix}{node.name}"
                yield qual, node
                yield from walk(node.body, f"{qual}.<locals>.")
            elif isinstance(node, ast.ClassDef):
                yield from walk(node.body, f"{prefix}{node.name}.")

    for qual, node in walk(tree.body, ""):
        yield qual, tree_formats.to_gast(node)
