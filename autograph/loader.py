"""Turns a converted tree into source text and a live function.

The source is registered in ``linecache`` under a stable name,
``<autograph f@model.py:12>``, so tracebacks and pdb show real lines, and its
source map (generated line -> user line) goes to ``autograph.errors``; both
last as long as the ``Compiled`` code and the functions made from it.

The converted function is created with the original's globals dict (later
rebinding of a global is seen) and with the original's closure cells (later
rebinding of a closed-over variable is seen too). ``ag__``, the runtime, is
one more closure cell, so nothing is added to the user's module.
"""

from __future__ import annotations

import ast
import itertools
import linecache
import os
import types
import weakref

import gast

from autograph import errors, tree_formats, unparsing

# attribute that marks a function this module made: its `Compiled`
_GENERATED = "__autograph_generated__"


def unparse(node: gast.AST) -> tuple[str, dict[int, int]]:
    """Source text of a gast tree, and a map from its lines to user lines."""
    return unparsing.unparse(node)


class Compiled:
    """The code of one converted function, reusable for any closure.

    The source is registered (``linecache``, source map) at once; the bytecode is
    compiled on first use, so ``to_code`` never pays for it.
    """

    def __init__(self, source: str, source_map: errors.SourceMap, freevars: tuple[str, ...],
                 qualname: str):
        self.source = source
        self.source_map = source_map  # registered while this (or a function made of it) lives
        self.filename = source_map.filename
        self._freevars = freevars
        self._qualname = qualname
        # parameters the function uses as Python values (see runtime/index_meaning)
        self.python_params: dict[str, str] = {}
        self._code: types.CodeType | None = None

    @property
    def code(self) -> types.CodeType:
        if self._code is None:
            self._code = _compile(self.source, self.filename, self._freevars, self._qualname)
        return self._code


def _compile(source: str, filename: str, freevars: tuple[str, ...],
             qualname: str) -> types.CodeType:
    with tree_formats.CPYTHON_TREES:
        tree = ast.parse(source, filename=filename)
    # Inside the factory a `def f` would bind `f` locally, and a recursive call
    # would find that instead of the global or closure `f`; so compile under
    # another name and restore the real one on the code object.
    fn_def = tree.body[0]
    assert isinstance(fn_def, ast.FunctionDef)  # the converted source is one `def`
    real_name = fn_def.name
    fn_def.name = "__autograph_converted"
    converted = ast.Name(id=fn_def.name, ctx=ast.Load())
    last = ast.Return(value=converted)
    factory = ast.FunctionDef(
        name="__autograph_factory",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=a) for a in ("ag__",) + freevars],
                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=tree.body + [last],
        decorator_list=[], returns=None, type_comment=None)
    module = ast.Module(body=[factory], type_ignores=[])
    for node in [factory, factory.args, last, converted] + factory.args.args:
        ast.copy_location(node, fn_def)
    with tree_formats.CPYTHON_TREES:
        module_code = compile(module, filename, "exec")
    factory_code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
    code = next(c for c in factory_code.co_consts
                if isinstance(c, types.CodeType) and c.co_name == "__autograph_converted")
    return code.replace(co_name=real_name, co_qualname=qualname)


def compile_function(source: str, line_map: dict[int, int], *, name: str,
                     user_file: str, user_line: int, freevars: tuple[str, ...]) -> Compiled:
    """Registers ``source`` under a stable filename; its bytecode is compiled on first use.

    The filename and the source map last as long as the returned ``Compiled``
    or a function made from it.
    """
    base = f"<autograph {name}@{os.path.basename(user_file)}:{user_line}>"
    # another live function of the same name and line takes `#2`, `#3`, ...
    names = (base if n == 1 else f"{base[:-1]}#{n}>" for n in itertools.count(1))
    default = errors.Location(user_file, user_line)
    source_map = errors.register_source_map(
        names, {g: errors.Location(user_file, u) for g, u in line_map.items()}, default)
    filename = source_map.filename
    lines = (len(source), None, source.splitlines(True), filename)
    linecache.cache[filename] = lines
    weakref.finalize(source_map, _forget_lines, filename, lines)
    return Compiled(source, source_map, freevars, name)


def _forget_lines(filename: str, lines: tuple) -> None:
    """Drops the generated ``lines`` from ``linecache``, unless a newer file took the name."""
    if linecache.cache.get(filename) is lines:
        del linecache.cache[filename]


def _cell(value):
    return types.CellType(value)


def instantiate(compiled: Compiled, fn: types.FunctionType, runtime) -> types.FunctionType:
    """A function running ``compiled`` with ``fn``'s globals, defaults and closure."""
    original = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
    cells = []
    for name in compiled.code.co_freevars:
        cells.append(_cell(runtime) if name == "ag__" else original[name])
    new = types.FunctionType(compiled.code, fn.__globals__, fn.__name__,
                             fn.__defaults__, tuple(cells))
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__annotations__ = dict(getattr(fn, "__annotations__", {}) or {})
    setattr(new, _GENERATED, compiled)  # which keeps its source map
    return new
