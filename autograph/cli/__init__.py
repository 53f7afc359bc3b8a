"""The ``autograph`` command line: ``dump`` and ``explain``.

Both commands are syntactic: they read and parse the file, and convert each
``def`` the way :func:`autograph.to_code` would, without importing or running
the user's module (the runtime operators decide between Python and ``lax``
only when the converted code runs).

Exit status: 0 when everything converted, 1 when a function did not convert
or a file does not parse, 2 for a usage error (a missing file or module, an
unknown function name, an empty directory, a file that is not Python source).

The package holds ``main`` and its argument parser here; the commands are
:mod:`autograph.cli.dump` and :mod:`autograph.cli.explain`, which convert what
:mod:`autograph.cli.targets` finds and print with :mod:`autograph.cli.style`.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Sequence

from autograph.cli import dump, explain
from autograph.cli.status import EXIT_OK, EXIT_USAGE, UsageError

__all__ = ["main"]

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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autograph",
        description="AutoGraph for JAX: show how Python control flow is converted to `lax`.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    from autograph import __version__
    parser.add_argument("--version", action="version", version=f"autograph {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    color: dict[str, Any] = dict(  # add_argument's keywords, shared by two commands
        choices=("auto", "always", "never"), default="auto",
        help="ANSI colors: always, never, or auto (when stdout is a terminal)")

    dump_parser = commands.add_parser(
        "dump", help="print the converted source of functions",
        description="Print the converted source of every function and method in TARGET, "
                    "with a header per function. Nothing is imported or run.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    dump_parser.add_argument("target", metavar="TARGET",
                             help="a .py file, package directory or dotted module name, "
                                  "optionally with :Qual.Name")
    mode = dump_parser.add_mutually_exclusive_group()
    mode.add_argument("--diff", action="store_true",
                      help="print a unified diff from the original to the converted source")
    mode.add_argument("--check", action="store_true",
                      help="print nothing but failures (file:line: reason) and a summary; "
                           "exit 1 if any function fails to convert")
    mode.add_argument("-o", "--output", dest="outdir", metavar="OUTDIR",
                      help="write a converted mirror of the module tree under OUTDIR")
    dump_parser.add_argument("--color", **color)

    explain_parser = commands.add_parser(
        "explain", help="what each if/loop of one function carries, and how it runs",
        description="For each if, while and for of one function: the variables carried "
                    "in and out, those local to the block, and whether it runs as Python "
                    "or as lax at run time, depending on the arguments.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    explain_parser.add_argument("target", metavar="TARGET:Qual.Name",
                                help="a .py file or dotted module name, and the function")
    explain_parser.add_argument("--color", **color)
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
    run = dump.run if args.command == "dump" else explain.run
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
