"""Terminal output of the command line: ANSI styling, and the coloured diff."""

from __future__ import annotations

import difflib
import os
import re

from autograph.cli.targets import Function


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


def choose(choice: str, stream) -> Style:
    """The styling ``--color=choice`` asks for; ``auto``: when ``stream`` is a terminal
    and ``NO_COLOR`` is not set."""
    if choice == "always":
        return Style(True)
    if choice == "never":
        return Style(False)
    return Style(is_terminal(stream) and not os.environ.get("NO_COLOR"))


def is_terminal(stream) -> bool:
    """Whether ``stream`` is a terminal (a pipe, a file or a test's buffer is not)."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def _user_line(lines: dict, start: int, default: int) -> int:
    """The user's line of the unparsed line ``start``: that of the nearest mapped
    line at or before it (a docstring's or a continued statement's lines have no
    entry of their own), else the one after it."""
    if start in lines:
        return lines[start]
    before = [k for k in lines if k <= start]
    if before:
        return lines[max(before)]
    after = [k for k in lines if k > start]
    return lines[min(after)] if after else default


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
            user = _user_line(fn.original_map, start, fn.line)
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
