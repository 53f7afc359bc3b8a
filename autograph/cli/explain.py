"""``autograph explain``: what each ``if`` and loop of one function carries, and how it runs.

The analysis and its rendering are :mod:`autograph.explain`'s; this module
finds the one function TARGET names and reports errors as the command does.
"""

from __future__ import annotations

import linecache

from autograph import errors
from autograph.cli.status import EXIT_CONVERSION, EXIT_OK, FileError, UsageError
from autograph.cli.style import choose
from autograph.cli.targets import functions, is_unit, read_text, resolve, select


def run(args, out, err) -> int:
    """Runs ``autograph explain`` for parsed ``args``; returns the exit status.

    Raises:
      UsageError: TARGET does not name one function.
    """
    from autograph import explain

    target = resolve(args.target)
    if len(target.files) != 1:
        raise UsageError("explain needs one function: FILE.py:Qual.Name or module:Qual.Name")
    f = target.files[0]
    try:
        text = read_text(f)
    except FileError as e:
        raise UsageError(str(e)) from None
    linecache.checkcache(f.path)
    try:
        found = functions(f, text)
    except FileError as e:
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
    out.write(explain.render(exp, choose(args.color, out)))
    return EXIT_OK
