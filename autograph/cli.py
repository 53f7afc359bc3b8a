"""The ``autograph`` command line: ``dump`` and ``explain``.

Both commands are syntactic: they read and parse the file, and convert each
``def`` the way :func:`autograph.to_code` would, without importing or running
the user's module (the runtime operators decide between Python and ``lax``
only when the converted code runs).

Exit status: 0 when everything converted, 1 when a function did not convert
or a file does not parse, 2 for a usage error (a missing file or module, an
unknown function name, an empty directory, a file that is not Python source).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import difflib
import importlib.machinery
import importlib.util
import io
import linecache
import os
import re
import sys
import tokenize
from typing import Sequence

import gast

from autograph import errors, loader, parsing, pipeline

EXIT_OK, EXIT_CONVERSION, EXIT_USAGE = 0, 1, 2

_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_QUALNAME = re.compile(r"[A-Za-z_<>][\w.<>]*")
_SKIPPED_DIRS = ("__pycache__", "node_modules", "site-packages")

_EPILOG = """\
examples:
  autograph dump model.py                 every function and method, converted
  autograph dump model.py:Net.forward     one method
  autograph dump mypkg --check            exit 1 if any function fails to convert
  autograph dump mypkg.layers --diff      what conversion changes, as a unified diff
  autograph dump src/mypkg -o converted   a converted copy of the package tree
  autograph explain model.py:train_step   what each if/loop carries, and how it runs

TARGET is a .py file, a package directory or a dotted module name, optionally
followed by :Qual.Name (Class.method, outer.<locals>.inner). The user's module
is never imported or run.

exit status: 0 all converted; 1 a function did not convert or a file does not
parse; 2 usage error (missing file or module, unknown name, empty directory,
not a Python source file).
"""


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


class _FileError(Exception):
    """A file that cannot be converted at all (it does not parse): exit status 1."""


# -- targets -------------------------------------------------------------


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
            spec = importlib.machinery.PathFinder.find_spec(
                ".".join(parts[:i + 1]), list(spec.submodule_search_locations))
        if spec is None and len(parts) > 1:
            spec = importlib.util.find_spec(name)
    except (Exception, SystemExit):  # noqa: BLE001 - a parent package failed to import
        return None
    return spec


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
      _FileError: it is binary, undecodable or unreadable.
    """
    try:
        with open(f.path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise _FileError(f"{f.display}: cannot read: {e.strerror or e}") from None
    if b"\0" in data:
        raise _FileError(f"{f.display}: not a Python source file (binary data)")
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError) as e:
        raise _FileError(f"{f.display}: not a Python source file "
                         f"(cannot decode it as text: {e})") from None


# -- conversion ----------------------------------------------------------


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
    error: str | None = None
    error_line: str | None = None


def is_unit(qualname: str) -> bool:
    """Whether a def is converted on its own: at module level or a method, not
    nested in a function (whose converted code includes it)."""
    return "<locals>" not in qualname.split(".")


def functions(f: SourceFile, text: str) -> list[Function]:
    """Every ``def`` in ``text``, in source order.

    Raises:
      _FileError: the file does not parse.
    """
    try:
        found = list(parsing.parse_source_functions(text, f.display))
    except SyntaxError as e:
        where = f"{f.display}:{e.lineno}" if e.lineno else f.display
        raise _FileError(f"{where}: syntax error: {e.msg}") from None
    except (ValueError, RecursionError) as e:
        raise _FileError(f"{f.display}: cannot parse: {e}") from None
    return [Function(q, n, f, n.lineno, n.end_lineno or n.lineno) for q, n in found]


def convert(fn: Function) -> Function:
    """Converts ``fn`` as ``to_code`` would; records the result or the error."""
    node = fn.node
    node.decorator_list = []
    try:
        fn.original, fn.original_map = loader.unparse(node)
        node = pipeline.convert_tree(node, fn.file.display,
                                     super_args=parsing.super_args(node, fn.qualname),
                                     class_name=parsing.enclosing_class(fn.qualname))
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


# -- output --------------------------------------------------------------


class Style:
    """ANSI styling, or none."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\033[{code}m{text}\033[0m" if self.enabled else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def red(self, text: str) -> str:
        return self._wrap("31", text)

    def green(self, text: str) -> str:
        return self._wrap("32", text)

    def cyan(self, text: str) -> str:
        return self._wrap("36", text)


def _style(choice: str, stream) -> Style:
    if choice == "always":
        return Style(True)
    if choice == "never":
        return Style(False)
    isatty = getattr(stream, "isatty", None)
    return Style(bool(isatty and isatty()) and not os.environ.get("NO_COLOR"))


def _header(fn: Function) -> str:
    return f"# {fn.qualname} ({fn.file.display}:{fn.line})"


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def diff(fn: Function, style: Style) -> str:
    """A unified diff from the original to the converted source of ``fn``.

    Both sides come from the same unparser, so comments and formatting are not
    part of it; each hunk header ends with the user's ``file:line``.
    """
    lines = difflib.unified_diff(
        fn.original.splitlines(True), fn.converted.splitlines(True),
        fromfile=f"{fn.file.display}:{fn.line} {fn.qualname} (original)",
        tofile=f"{fn.file.display}:{fn.line} {fn.qualname} (converted)")
    out = []
    for line in lines:
        m = _HUNK.match(line)
        if m:
            start = max(int(m.group(1)), 1)
            user = fn.original_map.get(start, fn.line)
            out.append(style.cyan(f"{line.rstrip()} {fn.file.display}:{user}") + "\n")
        elif line.startswith(("---", "+++")):
            out.append(style.bold(line))
        elif line.startswith("-"):
            out.append(style.red(line.rstrip("\n")) + "\n")
        elif line.startswith("+"):
            out.append(style.green(line.rstrip("\n")) + "\n")
        else:
            out.append(line)
    return "".join(out)


def mirror_text(text: str, converted: list[Function]) -> str:
    """``text`` with each converted function in place of its ``def``.

    Decorators and everything outside the converted functions stay as they are;
    ``ag__`` is imported after the docstring and ``__future__`` imports.
    """
    lines = text.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    for fn in sorted(converted, key=lambda f: f.line, reverse=True):
        first = lines[fn.line - 1]
        indent = first[:len(first) - len(first.lstrip())]
        body = "".join(indent + line if line.strip() else line
                       for line in fn.converted.splitlines(True))
        lines[fn.line - 1:fn.end_line] = [body]
    tree = ast.parse(text)
    at = len(text.splitlines(True))
    for i, stmt in enumerate(tree.body):
        docstring = (i == 0 and isinstance(stmt, ast.Expr)
                     and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str))
        future = isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"
        if not (docstring or future):
            at = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])]) - 1
            break
    # `at` indexes the original lines; every replacement lies at or after it
    lines.insert(at, "import autograph.runtime as ag__  # the runtime of converted code\n")
    return "".join(lines)


# -- commands ------------------------------------------------------------


def _dump(args, out, err) -> int:
    target = resolve(args.target)
    style = _style(args.color, out)
    failed = checked = 0
    blocks: list[str] = []    # what stdout shows, in order
    mirrors: list[tuple[str, str]] = []

    def report(message: str, detail: str | None = None) -> None:
        nonlocal failed
        failed += 1
        if args.check:
            print(message, file=out)
        else:
            print(detail or f"autograph: error: {message}", file=err)

    for f in target.files:
        try:
            text = read_text(f)
        except _FileError as e:
            if len(target.files) == 1:
                raise UsageError(str(e)) from None
            report(str(e))
            continue
        linecache.checkcache(f.path)  # error messages quote the file as it is now
        try:
            chosen = select(functions(f, text), target.qualname, f.display)
        except _FileError as e:
            report(str(e))
            continue
        for fn in chosen:
            convert(fn)
            checked += 1
            if fn.error is not None:
                report(fn.error_line, fn.error)
                if not (args.diff or args.check or args.outdir):
                    blocks.append(style.bold(_header(fn)) + "\n"
                                  + f"# not converted: {fn.error_line}\n")
            elif args.diff:
                blocks.append(diff(fn, style))
            elif not (args.check or args.outdir):
                blocks.append(style.bold(_header(fn)) + "\n" + fn.converted)
        if args.outdir is not None:
            mirrors.append((f.mirror, mirror_text(text, [fn for fn in chosen if fn.error is None])))
    out.write("\n".join(b for b in blocks if b))
    if not checked and not failed and not args.check:
        print(f"autograph: {args.target} defines no functions", file=err)
    if args.outdir is not None:
        _write_mirror(args.outdir, mirrors, {os.path.realpath(f.path) for f in target.files}, out)
    if args.check:
        files = len(target.files)
        print(f"{checked} function{'s' * (checked != 1)} in {files} file{'s' * (files != 1)}: "
              + (f"{failed} failed" if failed else "all convert"), file=out)
    return EXIT_CONVERSION if failed else EXIT_OK


def _write_mirror(outdir: str, mirrors, sources: set, out) -> None:
    for rel, _ in mirrors:
        dest = os.path.join(outdir, rel)
        if os.path.realpath(dest) in sources:
            raise UsageError(f"refusing to overwrite the source file `{dest}`; "
                             f"choose another -o directory")
    for rel, content in mirrors:
        dest = os.path.join(outdir, rel)
        try:
            os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
            with open(dest, "w", encoding="utf-8") as fh:
                fh.write(content)
        except OSError as e:
            raise UsageError(f"cannot write `{dest}`: {e.strerror or e}") from None
        print(f"wrote {dest}", file=out)


def _explain(args, out, err) -> int:
    from autograph import explain

    target = resolve(args.target)
    if len(target.files) != 1:
        raise UsageError("explain needs one function: FILE.py:Qual.Name or module:Qual.Name")
    f = target.files[0]
    try:
        text = read_text(f)
    except _FileError as e:
        raise UsageError(str(e)) from None
    linecache.checkcache(f.path)
    try:
        found = functions(f, text)
    except _FileError as e:
        print(f"autograph: error: {e}", file=err)
        return EXIT_CONVERSION
    if target.qualname is None:
        units = [fn for fn in found if is_unit(fn.qualname)]
        if len(units) != 1:
            names = ", ".join(fn.qualname for fn in units[:6]) + (", ..." if len(units) > 6 else "")
            raise UsageError(f"explain needs one function: {args.target}:NAME"
                             + (f" (one of {names})" if units else
                                f" ({f.display} defines no functions)"))
        fn = units[0]
    else:
        exact = [fn for fn in found if fn.qualname == target.qualname]
        if not exact:
            members = [m.qualname for m in select(found, target.qualname, f.display)]
            raise UsageError(f"`{target.qualname}` is a class; explain one of its methods: "
                             + ", ".join(members[:6]))
        fn = exact[0]
    try:
        exp = explain.explain_function(fn.node, fn.qualname, f.display, text)
    except errors.ConversionError as e:
        print(e, file=err)
        return EXIT_CONVERSION
    except Exception as e:  # noqa: BLE001 - an internal error must not become a traceback
        print(f"autograph: error: {f.display}:{fn.line}: internal error explaining "
              f"`{fn.qualname}`: {type(e).__name__}: {e} (please report this)", file=err)
        return EXIT_CONVERSION
    out.write(explain.render(exp, _style(args.color, out)))
    return EXIT_OK


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autograph",
        description="AutoGraph for JAX: show how Python control flow is converted to `lax`.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    color = dict(choices=("auto", "always", "never"), default="auto",
                 help="ANSI colors: always, never, or auto (when stdout is a terminal)")

    dump = commands.add_parser(
        "dump", help="print the converted source of functions",
        description="Print the converted source of every function and method in TARGET, "
                    "with a header per function. Nothing is imported or run.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    dump.add_argument("target", metavar="TARGET",
                      help="a .py file, package directory or dotted module name, "
                           "optionally with :Qual.Name")
    mode = dump.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true",
                      help="print a unified diff from the original to the converted source")
    mode.add_argument("--check", action="store_true",
                      help="print nothing but failures (file:line: reason) and a summary; "
                           "exit 1 if any function fails to convert")
    mode.add_argument("-o", "--output", dest="outdir", metavar="OUTDIR",
                      help="write a converted mirror of the module tree under OUTDIR")
    dump.add_argument("--color", **color)

    explain = commands.add_parser(
        "explain", help="what each if/loop of one function carries, and how it runs",
        description="For each if, while and for of one function: the variables carried "
                    "in and out, those local to the block, and whether it runs as Python "
                    "or as lax at run time, depending on the arguments.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    explain.add_argument("target", metavar="TARGET:Qual.Name",
                         help="a .py file or dotted module name, and the function")
    explain.add_argument("--color", **color)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the ``autograph`` command line; returns the exit status.

    Examples:
      >>> main(["dump", "no/such/file.py"])
      2
    """
    out, err = sys.stdout, sys.stderr
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help, or argparse's own usage error
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    if args.command is None:
        parser.print_help(err)
        return EXIT_USAGE
    run = _dump if args.command == "dump" else _explain
    try:
        return run(args, out, err)
    except UsageError as e:
        print(f"autograph: error: {e}", file=err)
        return EXIT_USAGE
    except BrokenPipeError:  # `autograph dump pkg | head`
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
