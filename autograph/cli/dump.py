"""``autograph dump``: converted source, a diff, a check, or a converted mirror tree."""

from __future__ import annotations

import ast
import linecache
import os

from autograph import tree_formats
from autograph.cli.status import EXIT_CONVERSION, EXIT_OK, FileError, UsageError
from autograph.cli.style import choose, diff, is_terminal
from autograph.cli.targets import Function, convert, functions, read_text, resolve, select


def run(args, out, err) -> int:
    """Runs ``autograph dump`` for parsed ``args``; returns the exit status.

    Raises:
      UsageError: TARGET names nothing, or ``-o`` would overwrite a source file.
    """
    target = resolve(args.target)
    style = choose(args.color, out)
    failed = checked = 0
    progress = Progress(err, len(target.files))
    blocks: list[str] = []    # what stdout shows, in order
    mirrors: list[tuple[str, str]] = []

    def report(message: str, detail: str | None = None) -> None:
        nonlocal failed
        failed += 1
        progress.done()  # (a message never lands on the progress line)
        if args.check:
            print(message, file=out)
        else:
            print(detail or f"autograph: error: {message}", file=err)

    for f in target.files:
        progress.show(f.display)
        try:
            text = read_text(f)
        except FileError as e:
            if len(target.files) == 1:
                raise UsageError(str(e)) from None
            report(str(e))
            continue
        linecache.checkcache(f.path)  # error messages quote the file as it is now
        try:
            chosen = select(functions(f, text), target.qualname, f.display)
        except FileError as e:
            report(str(e))
            continue
        for fn in chosen:
            convert(fn)
            checked += 1
            if fn.error_line is not None:  # set with fn.error
                report(fn.error_line, fn.error)
                if not (args.diff or args.check or args.outdir):
                    blocks.append(style.bold(header(fn)) + "\n"
                                  + f"# not converted: {fn.error_line}\n")
            elif args.diff:
                blocks.append(diff(fn, style))
            elif not (args.check or args.outdir):
                blocks.append(style.bold(header(fn)) + "\n" + fn.converted)
        if args.outdir is not None:
            mirrors.append((f.mirror, mirror_text(text, [fn for fn in chosen if fn.error is None])))
    progress.done()
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


class Progress:
    """A one-line count of the files done, on ``stream`` while it is a terminal and
    there are more than a few files; nothing otherwise (a pipe, a log, CI)."""

    def __init__(self, stream, total: int):
        self._stream = stream
        self._on = total > 4 and is_terminal(stream)
        self._total, self._done, self._width = total, 0, 0

    def show(self, name: str) -> None:
        if not self._on:
            return
        self._done += 1
        line = f"[{self._done}/{self._total}] {name}"[:100]
        self._stream.write("\r" + line.ljust(self._width))
        self._stream.flush()
        self._width = len(line)

    def done(self) -> None:
        """Clears the line (for a message, or at the end); the next file shows it again."""
        if self._on and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0


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


def header(fn: Function) -> str:
    """The line above a function's converted source: its name and ``file:line``."""
    return f"# {fn.qualname} ({fn.file.display}:{fn.line})"


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
    tree = tree_formats.parse(text)
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
