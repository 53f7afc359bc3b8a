"""Which calls of a function are autograph's directives, found by what they refer to.

    from autograph import set_loop_options as slo
    import autograph as ag

    while x < n:
        slo(maximum_iterations=8)   # `autograph.set_loop_options` itself: a directive
    ...
    @ag.do_not_convert              # `autograph.do_not_convert` itself: a directive
    def helper(v): ...

A call's function is a name or an attribute chain; its root name is resolved
as Python resolves it when the function runs: by an import in the function
itself, else (for a live function) by its closure and globals, else (for a
file converted without importing it, as ``autograph dump`` and ``explain``
do) by the imports of its module. Attributes are followed through modules
only, and the object found is compared by identity with the directives, so
any spelling (``set_loop_options``, ``ag.set_loop_options``, an alias, the
defining module ``autograph.directives``) is one, and a function of the user
that happens to share a directive's name is not.
"""

from __future__ import annotations

import builtins
import collections
import enum
import functools
import sys
import types
from collections.abc import Mapping
from typing import Any

import gast

from autograph.analysis.activity import walk


class Directive(enum.Enum):
    """A directive, by the public name of its object."""

    LOOP_OPTIONS = "autograph.set_loop_options"
    DO_NOT_CONVERT = "autograph.do_not_convert"


# where each directive's object is defined (looked up when asked: no import cycle)
_DEFINED = ((Directive.LOOP_OPTIONS, "autograph.directives", "set_loop_options"),
            (Directive.DO_NOT_CONVERT, "autograph.api", "do_not_convert"))
_NAMES = frozenset(attr for _, _, attr in _DEFINED)
_MISSING = object()


def directive_of(obj: Any) -> Directive | None:
    """The directive ``obj`` is, or None."""
    for directive, module, attr in _DEFINED:
        defining = sys.modules.get(module)
        if defining is not None and getattr(defining, attr, _MISSING) is obj:
            return directive
    return None


def _follow(obj: Any, attrs: tuple[str, ...]) -> Any:
    """``obj.a.b...``, through modules only (a user object's attributes are never run)."""
    for attr in attrs:
        if not isinstance(obj, types.ModuleType):
            return _MISSING
        obj = getattr(obj, attr, _MISSING)
    return obj


def _imported(path: str) -> Any:
    """The object the dotted ``path`` of an import names, if its module is loaded."""
    parts = path.split(".")
    for k in range(len(parts), 0, -1):
        module = sys.modules.get(".".join(parts[:k]))
        if module is not None:
            return _follow(module, tuple(parts[k:]))
    return _MISSING


def _bindings(stmt: gast.stmt) -> dict[str, str]:
    """Name -> dotted path for what an ``import`` statement binds."""
    out = {}
    if isinstance(stmt, gast.Import):
        for alias in stmt.names:
            if alias.asname:
                out[alias.asname] = alias.name
            else:  # `import a.b` binds `a`
                root = alias.name.split(".")[0]
                out[root] = root
    elif isinstance(stmt, gast.ImportFrom) and not stmt.level and stmt.module:
        for alias in stmt.names:
            if alias.name != "*":
                out[alias.asname or alias.name] = f"{stmt.module}.{alias.name}"
    return out


def module_imports(tree: gast.AST) -> dict[str, str]:
    """Name -> dotted path for the imports of a module's own body (not of its functions)."""
    out: dict[str, str] = {}
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda,
                             gast.ClassDef)):
            continue
        out.update(_bindings(node) if isinstance(node, gast.stmt) else {})
        stack.extend(gast.iter_child_nodes(node))
    return out


def dotted(node: gast.expr) -> tuple[str, ...] | None:
    """``("a", "b", "c")`` for ``a.b.c``; None for anything but a name and attributes."""
    parts = []
    while isinstance(node, gast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, gast.Name):
        return None
    return (node.id, *reversed(parts))


class Resolver:
    """Tells which expressions of one function's tree name a directive.

    Args:
      tree: the function's tree, or None.
      namespace: the live function's closure and globals, by name; None when
        the function is converted from its file without being imported.
      imports: for such a function, ``module_imports`` of its module.
    """

    def __init__(self, tree: gast.AST | None = None, *,
                 namespace: Mapping[str, Any] | None = None,
                 imports: Mapping[str, str] | None = None):
        self._namespace = namespace
        self._imports = dict(imports or {})
        self._local_imports: dict[str, str] = {}
        self._locals: set[str] = set()
        for node in walk(tree) if tree is not None else ():
            if isinstance(node, (gast.Import, gast.ImportFrom)):
                self._local_imports.update(_bindings(node))
            elif isinstance(node, gast.Name) and not isinstance(node.ctx, gast.Load):
                self._locals.add(node.id)
            elif isinstance(node, (gast.FunctionDef, gast.ClassDef)) and node is not tree:
                self._locals.add(node.name)

    def of(self, func: gast.expr) -> Directive | None:
        """The directive ``func`` (a call's function, a decorator) names, or None."""
        chain = dotted(func)
        if chain is None:
            return None
        root, attrs = chain[0], chain[1:]
        if attrs and attrs[-1] not in _NAMES:
            return None  # `jnp.sin`: no module is asked for its attributes
        if root in self._local_imports:
            return directive_of(_imported(".".join((self._local_imports[root],) + attrs)))
        if root in self._locals:
            return None  # a variable of the function: not known before it runs
        if self._namespace is not None:
            return directive_of(_follow(self._namespace.get(root, _MISSING), attrs))
        if root in self._imports:
            return directive_of(_imported(".".join((self._imports[root],) + attrs)))
        if root == "autograph" and attrs:  # a snippet that uses the package unimported
            return directive_of(_imported(".".join((root,) + attrs)))
        return None


    def may_be_user_function(self, name: str) -> bool:
        """Whether ``name``, read from outside the function, may hold a user function
        (one a library call would get converted: see ``call_trees``).

        In the live namespace: a function (a method, a ``functools.partial``) of no
        library's. Converted from its file: a name no import binds.
        """
        if name in self._local_imports or name in self._locals:
            return False
        if self._namespace is not None:
            from autograph.runtime.functions.calls import library_module
            value = self._namespace.get(name, _MISSING)
            if isinstance(value, functools.partial):
                value = value.func
            if isinstance(value, types.MethodType):
                value = value.__func__
            return isinstance(value, types.FunctionType) and library_module(value) is None
        return name not in self._imports and not hasattr(builtins, name)


def live_namespace(fn: types.FunctionType) -> Mapping[str, Any]:
    """The names ``fn`` reads from outside itself: its closure's cells, then its globals."""
    cells = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            cells[name] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            continue
    return collections.ChainMap(cells, fn.__globals__) if cells else fn.__globals__
