"""What the command line converts: TARGET resolved to files, each file's functions.

TARGET is a ``.py`` file, a package directory or a dotted module name, maybe
with ``:Qual.Name``. Files are found and decoded without importing or running
the user's module; each ``def`` is parsed and converted as ``to_code`` would.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib.machinery
import importlib.util
import io
import os
import re
import tokenize

import gast

from autograph import directive_calls, errors, loader, parsing, pipeline, tree_formats
from autograph.cli.status import FileError, UsageError

_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_QUALNAME = re.compile(r"[A-Za-z_<>][\w.<>]*")
_SKIPPED_DIRS = ("__pycache__", "node_modules", "site-packages")


@dataclasses.dataclass(frozen=True)
class SourceFile:
    """A file to convert: where to read it, how to name it, where ``-o`` puts it."""

    path: str
    display: str
    mirror: str


@dataclasses.dataclass
class Target:
    """What TARGET names: files, and maybe one function (or class) in the one file."""

    files: list[SourceFile]
    qualname: str | None


def _display(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith(os.pardir) else rel


def _split(target: str) -> tuple[str, str | None]:
    if ":" in target and not os.path.exists(target):
        where, _, qual = target.rpartition(":")
        if not where or not qual:
            raise UsageError(f"`{target}`: expected TARGET or TARGET:Qual.Name")
        if not _QUALNAME.fullmatch(qual):
            raise UsageError(f"`{qual}` is not a qualified function name "
                             f"(like `f`, `Class.method` or `outer.<locals>.inner`)")
        return where, qual
    return target, None


def _walk_dir(root: str, mirror_root: str) -> list[SourceFile]:
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames
                             if not d.startswith(".") and d not in _SKIPPED_DIRS)
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                files.append(SourceFile(path, _display(path) if os.path.isabs(root) else path,
                                        os.path.join(mirror_root, rel)))
    return files


def _find_module(name: str):
    """The spec of module ``name``, located without running it.

    Packages are searched along their directories, the current one first, as
    ``python -m`` does. Only when that fails (a package that edits its
    ``__path__``, an editable install's finder) does ``importlib.util.find_spec``
    run, which imports the parent packages, never the module itself.
    """
    parts = name.split(".")
    try:
        spec = (importlib.machinery.PathFinder.find_spec(parts[0], [os.getcwd()])
                or importlib.util.find_spec(parts[0]))  # imports nothing: a top-level name
        for i in range(1, len(parts)):
            if spec is None or not spec.submodule_search_locations:
                spec = None
                break
            spec = _find_in(".".join(parts[:i + 1]), list(spec.submodule_search_locations))
    except (Exception, SystemExit):  # noqa: BLE001 - the search along directories failed
        spec = None
    if spec is None and len(parts) > 1:
        try:
            spec = importlib.util.find_spec(name)
        except (Exception, SystemExit):  # noqa: BLE001 - a parent package failed to import
            return None
    return spec


def _find_in(name: str, locations: list[str]):
    """The spec of ``name`` (a dotted name) in ``locations``. A folder without an
    ``__init__.py`` (a namespace package, such as ``optax/_src``) is found too:
    ``PathFinder`` makes its spec only once its parent is imported."""
    try:
        return importlib.machinery.PathFinder.find_spec(name, locations)
    except KeyError:  # the parent of a namespace package is not imported
        last = name.rpartition(".")[2]
        for where in locations:
            folder = os.path.join(where, last)
            if os.path.isfile(folder + ".py"):
                return importlib.util.spec_from_file_location(name, folder + ".py")
            if os.path.isdir(folder):
                spec = importlib.machinery.ModuleSpec(name, None, is_package=True)
                spec.submodule_search_locations = [folder]
                return spec
        return None


def _module_files(name: str) -> list[SourceFile]:
    spec = _find_module(name)
    if spec is None:
        raise UsageError(f"no file, directory or module named `{name}`")
    mirror = os.path.join(*name.split("."))
    if spec.submodule_search_locations:  # a package: all of it
        dirs = ([os.path.dirname(spec.origin)] if spec.origin and os.path.isfile(spec.origin)
                else list(spec.submodule_search_locations))
        files = []
        for d in dirs:
            files.extend(_walk_dir(os.path.abspath(d), mirror))
        if not files:
            raise UsageError(f"package `{name}` has no Python files")
        return files
    origin = spec.origin or ""
    if not origin.endswith(".py") or not os.path.isfile(origin):
        kind = origin if origin in ("built-in", "frozen") else os.path.basename(origin) or "no file"
        raise UsageError(f"module `{name}` has no Python source ({kind})")
    return [SourceFile(origin, _display(origin), mirror + ".py")]


def resolve(target: str) -> Target:
    """Turns TARGET (file, directory or module, maybe with ``:Qual.Name``) into files.

    Raises:
      UsageError: nothing of that name exists, or it holds no Python file.
    """
    where, qual = _split(target)
    if os.path.isdir(where):
        name = os.path.basename(os.path.abspath(where))
        files = _walk_dir(where, name)
        if not files:
            raise UsageError(f"no Python files in directory `{where}`")
    elif os.path.exists(where):
        files = [SourceFile(where, where, os.path.basename(where))]
    elif (not where.endswith(".py") and os.sep not in where and "/" not in where
          and _MODULE_NAME.fullmatch(where)):
        files = _module_files(where)
    else:
        raise UsageError(f"no such file or directory: `{where}`")
    if qual is not None and len(files) > 1:
        raise UsageError(f"`{where}` is a directory or package; name one file or module "
                         f"before `:{qual}`")
    return Target(files, qual)


def read_text(f: SourceFile) -> str:
    """The text of ``f``, decoded as Python source.

    Raises:
      FileError: it is binary, undecodable or unreadable.
    """
    try:
        with open(f.path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise FileError(f"{f.display}: cannot read: {e.strerror or e}") from None
    if b"\0" in data:
        raise FileError(f"{f.display}: not a Python source file (binary data)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as e:
        raise FileError(f"{f.display}: not a Python source file "
                         f"(cannot decode it as text: {e})") from None


@dataclasses.dataclass
class Function:
    """One ``def`` of a file, and what converting it gave."""

    qualname: str
    node: gast.FunctionDef
    file: SourceFile
    line: int
    end_line: int
    original: str = ""
    converted: str = ""
    original_map: dict = dataclasses.field(default_factory=dict)
    imports: dict = dataclasses.field(default_factory=dict)  # the module's (directive_calls)
    error: str | None = None
    error_line: str | None = None


def is_unit(qualname: str) -> bool:
    """Whether a def is converted on its own: at module level or a method, not
    nested in a function (whose converted code includes it)."""
    return "<locals>" not in qualname.split(".")


def functions(f: SourceFile, text: str) -> list[Function]:
    """Every ``def`` in ``text``, in source order.

    Raises:
      FileError: the file does not parse.
    """
    try:
        found = list(parsing.parse_source_functions(text, f.display))
    except SyntaxError as e:
        where = f"{f.display}:{e.lineno}" if e.lineno else f.display
        raise FileError(f"{where}: syntax error: {e.msg}") from None
    except (ValueError, RecursionError) as e:
        raise FileError(f"{f.display}: cannot parse: {e}") from None
    imports = directive_calls.module_imports(tree_formats.parse_gast(text))
    return [Function(q, n, f, n.lineno, n.end_lineno or n.lineno, imports=imports)
            for q, n in found]


def convert(fn: Function) -> Function:
    """Converts ``fn`` as ``to_code`` would; records the result or the error."""
    node = fn.node
    node.decorator_list = []
    try:
        fn.original, fn.original_map = loader.unparse(node)
        node = pipeline.convert_tree(node, fn.file.display,
                                     super_args=parsing.super_args(node, fn.qualname),
                                     class_name=parsing.enclosing_class(fn.qualname),
                                     imports=fn.imports)
        fn.converted = loader.unparse(node)[0]
    except errors.ConversionError as e:
        where = e.location.short if e.location is not None else f"{fn.file.display}:{fn.line}"
        fn.error = str(e)
        fn.error_line = f"{where}: {e.rule} (in `{fn.qualname}`)"
    except Exception as e:  # noqa: BLE001 - an internal error must not become a traceback
        fn.error_line = (f"{fn.file.display}:{fn.line}: internal error converting "
                         f"`{fn.qualname}`: {type(e).__name__}: {e} (please report this)")
        fn.error = fn.error_line
    return fn


def select(found: list[Function], qualname: str | None, display: str) -> list[Function]:
    """The functions TARGET names: all units, one function, or a class's methods.

    Raises:
      UsageError: ``qualname`` names nothing in the file.
    """
    if qualname is None:
        return [f for f in found if is_unit(f.qualname)]
    exact = [f for f in found if f.qualname == qualname]
    if exact:
        return exact[:1]
    members = [f for f in found if f.qualname.startswith(qualname + ".") and is_unit(f.qualname)]
    if members:
        return members
    names = [f.qualname for f in found]
    hint = [n for n in names if n.endswith("." + qualname)]
    hint += difflib.get_close_matches(qualname, names, n=3)
    message = f"no function or method `{qualname}` in {display}"
    if hint:
        message += f"; did you mean `{next(iter(dict.fromkeys(hint)))}`?"
    elif not names:
        message += " (it defines no functions)"
    raise UsageError(message)
