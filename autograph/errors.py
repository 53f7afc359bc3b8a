"""Every error a user of autograph can see, and the one format they share.

Each message is built from five fields: the rule that was broken, what was
observed, which variable, where (the user's ``file:line``, never generated
code), and how to fix it. They always render the same way::

    model.py:17: a variable used after an array-dependent `if` must be set on every branch
        17 |     if x > 1:
      observed: `y` is assigned when `x > 1` is true, but not when it is false
      variable: y
      fix: initialize `y` before the `if`, or assign it in the `else` branch too

This module also keeps the source maps of converted code (generated line ->
user line), so that errors raised by the runtime while tracing can name the
user's line.
"""

from __future__ import annotations

import dataclasses
import linecache
import os
import re
import sys
import threading
import types
import warnings
import weakref
from typing import Iterable, Mapping, TypeVar

__all__ = [
    "AutographError", "ConversionError", "ConditionError", "BranchError",
    "LoopStateError", "LoopOptionsError", "UndefinedVariableError", "BuiltinError", "Location",
]


_E = TypeVar("_E", bound=BaseException)


@dataclasses.dataclass(frozen=True)
class Location:
    """A place in the user's source: file, 1-based line, and the line's text."""

    filename: str
    lineno: int

    @property
    def short(self) -> str:
        return f"{self.filename}:{self.lineno}"

    @property
    def text(self) -> str:
        return linecache.getline(self.filename, self.lineno).rstrip()


class AutographError(Exception):
    """Base of all autograph errors; renders the five fields in one format."""

    def __init__(self, rule: str, *, observed: str | None = None,
                 variable: str | None = None, location: Location | None = None,
                 fix: str | None = None):
        self.rule = rule
        self.observed = observed
        self.variable = variable
        self.location = location if location is not None else current_location()
        self.fix = fix
        super().__init__(self._render())

    def _render(self) -> str:
        head = self.rule
        lines = []
        if self.location is not None:
            head = f"{self.location.short}: {self.rule}"
            text = self.location.text
            if text:
                lines.append(f"    {self.location.lineno} | {text}")
        if self.observed:
            lines.append(f"  observed: {self.observed}")
        if self.variable:
            lines.append(f"  variable: {self.variable}")
        if self.fix:
            lines.append(f"  fix: {self.fix}")
        return "\n".join([head] + lines)


class ConversionError(AutographError, ValueError):
    """A construct in the function cannot be converted faithfully.

    Raised at conversion time, before anything runs. Example: a generator.

    >>> import autograph
    >>> def gen(x):
    ...     yield x
    >>> autograph.to_code(gen)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    autograph.errors.ConversionError: ...: `yield` is not supported in converted functions
    ...
    """



class SourceUnavailableError(ConversionError):
    """The function's source cannot be found or parsed (``exec``, a plain REPL).

    ``autograph.convert`` and ``autograph.function`` then run the function
    unconverted, with a warning, as ``jax.jit`` would; ``to_code`` raises it.
    """

class ConditionError(AutographError, TypeError):
    """The condition of an `if`, `while` or conditional expression is unusable.

    Example: an array with more than one element; reduce it with ``.any()`` or
    ``.all()`` first.
    """


class BuiltinError(AutographError, TypeError):
    """A built-in function cannot give Python's answer for a traced argument.

    Examples: ``float`` of an array with dimensions (Python's ``TypeError``);
    three-argument ``pow`` of traced integers.

    >>> import jax, jax.numpy as jnp, autograph
    >>> def mean_of(xs):
    ...     return float(xs) / 3
    >>> jax.jit(autograph.convert(mean_of))(jnp.ones(3))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    autograph.errors.BuiltinError: ...: `float` converts only a scalar (0-d) array, ...
    ...
    """


class BranchError(AutographError, ValueError):
    """The two branches of an array-dependent `if` leave a variable incompatible.

    Examples: a variable set on one branch only and used afterwards; different
    shapes; different Python values (strings, ``None``) on the two branches.
    """


class LoopStateError(AutographError, ValueError):
    """A variable carried by a staged loop changes its type, shape or structure,
    or is not defined before a loop whose trip count is only known at run time.
    """


class LoopOptionsError(AutographError, TypeError, ValueError):
    """``set_loop_options`` was given an option it does not know, a value out of
    range, or sits where it configures nothing.

    It is a ``TypeError`` (an unknown keyword, as Python's own signature check
    says) and a ``ValueError`` (a negative bound) at once.
    """


class UndefinedVariableError(AutographError, UnboundLocalError):
    """A variable was read on a path where it was never assigned.

    Python raises ``UnboundLocalError`` there; converted code raises this
    subclass with the place the variable should have been set.
    """


# Generated code carries values of its own beside the user's variables (the
# function's return value, a loop's index, the Flax objects a block updates).
# A message about one names what it is, never a generated name (`retval`), so
# these labels are made here and nowhere else; the runtime puts them where a
# variable name would go.


class Label(str):
    """What a value generated code carries is, standing in for a variable name in
    messages; :func:`quoted` shows it as it is, not in backticks."""

    __slots__ = ()


RETURN_VALUE = Label("the return value")
LOOP_INDEX = Label("the loop index")
OBJECTS = Label("the Flax objects the block updates")


def quoted(name: str) -> str:
    """A variable name (or an attribute, ``c.total``) in backticks, as messages show
    it; a ``Label`` or another description as it is."""
    if isinstance(name, Label) or not all(p.isidentifier() for p in name.split(".")):
        return name
    return f"`{name}`"


def returning(names: tuple[str, ...], returns: int | None) -> tuple[str, ...]:
    """``names`` with the one at position ``returns`` (the slot that holds the
    function's return value, as generated code says) given its label."""
    if returns is None:
        return names
    return names[:returns] + (RETURN_VALUE,) + names[returns + 1:]


class SourceMap:
    """Where the lines of one generated file come from: generated line -> user line.

    Its owner (the compiled converted function, and each function made from
    it) keeps it alive; it is registered under its file's name for exactly as
    long, so that tracebacks through that file name the user's lines.
    """

    __slots__ = ("filename", "lines", "default", "__weakref__")

    def __init__(self, filename: str, lines: Mapping[int, Location], default: Location):
        self.filename = filename
        self.lines = lines
        self.default = default  # for a line with no statement of its own at or above it


# generated filename -> its source map, while the map's owner keeps it
_SOURCE_MAPS: weakref.WeakValueDictionary[str, SourceMap] = weakref.WeakValueDictionary()
_REGISTERING = threading.Lock()  # a name is checked and taken in one step


def register_source_map(filenames: Iterable[str], lines: Mapping[int, Location],
                        default: Location) -> SourceMap:
    """Registers where the lines of a generated file come from, under the first of
    ``filenames`` that no live source map has; the entry goes with the returned map."""
    with _REGISTERING:
        filename = next(name for name in filenames if name not in _SOURCE_MAPS)
        source_map = _SOURCE_MAPS[filename] = SourceMap(filename, lines, default)
    return source_map


def user_location(filename: str, lineno: int) -> Location | None:
    """Maps a line of generated code to the user's line, if the file is ours."""
    source_map = _SOURCE_MAPS.get(filename)
    if source_map is None:
        return None
    lines, default = source_map.lines, source_map.default
    best = None
    for gen_line in range(lineno, 0, -1):  # the nearest statement at or above
        best = lines.get(gen_line)
        if best is not None:
            break
    return best or default


def current_location() -> Location | None:
    """The user's line of the innermost converted-code frame on the stack."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        loc = user_location(frame.f_code.co_filename, frame.f_lineno)
        if loc is not None:
            return loc
        frame = frame.f_back
    return None


def here() -> str:
    """``"file.py:12: "``, the user's line of the innermost converted-code frame on the
    stack, to lead a message with; ``""`` outside converted code."""
    loc = current_location()
    return f"{loc.short}: " if loc is not None else ""


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """Warns at the user's line: that of the innermost converted-code frame on the
    stack, else the first caller outside autograph, JAX and generated code.

    ``warnings.warn``'s ``stacklevel`` counts frames, which differ with the path a
    call takes (a loop run from ``while_stmt`` or from ``for_stmt``, a callee
    reached through ``converted_call``); the user's line does not. The warning
    goes through the user module's registry, so Python's "once per location"
    filters hold.
    """
    frame: types.FrameType | None = sys._getframe(1)
    filename, lineno = "", 0
    while frame is not None:
        code = frame.f_code
        loc = user_location(code.co_filename, frame.f_lineno)
        if loc is not None:
            filename, lineno = loc.filename, loc.lineno
            break
        if not (_module_of(frame) in ("autograph", "jax", "jaxlib")
                or is_generated(code.co_filename)):
            filename, lineno = code.co_filename, frame.f_lineno
            break
        frame = frame.f_back
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    module_globals = frame.f_globals
    registry = module_globals.setdefault("__warningregistry__", {})
    warnings.warn_explicit(message, category, filename, lineno,
                           module=module_globals.get("__name__", "<unknown>"),
                           registry=registry)


def innermost_user_location(exc: BaseException) -> Location | None:
    """The user's line of the innermost converted-code frame in ``exc``'s traceback."""
    found = None
    tb = exc.__traceback__
    while tb is not None:
        found = user_location(tb.tb_frame.f_code.co_filename, tb.tb_lineno) or found
        tb = tb.tb_next
    return found


def note_raised_at(exc: BaseException, loc: Location | None) -> None:
    """Adds to ``exc``, which the running program raises from a staged ``raise`` or
    ``assert``, a note that names the user's line (its traceback shows only JAX's
    frames and the call)."""
    if loc is None:
        return
    try:
        exc.add_note(f"raised as the program ran, at {loc.short}: {loc.text.strip()}")
    except (AttributeError, TypeError):  # pragma: no cover - exotic exception types
        pass


def is_generated(filename: str) -> bool:
    return filename in _SOURCE_MAPS


def fresh(error: _E, args: tuple | None = None) -> _E:
    """A new exception of ``error``'s type, with its attributes (and ``args``, if given):
    what to raise again for each caller, so that no two raises share one object, its
    traceback or its chained context.

    It is made without calling the class's ``__init__`` (whose parameters may not be
    ``error.args``), as pickling does; notes and an explicit cause go with it.
    """
    cls = type(error)
    new_args = error.args if args is None else args
    try:
        new = cls.__new__(cls, *new_args)
    except Exception:  # noqa: BLE001 - a ``__new__`` of its own, with other parameters
        return error.with_traceback(None)
    state = getattr(error, "__dict__", None)
    if state:
        new.__dict__.update(state)
        if isinstance(state.get("__notes__"), list):
            new.__notes__ = list(state["__notes__"])
    new.args = new_args
    new.__cause__ = error.__cause__
    new.__suppress_context__ = error.__suppress_context__
    return new


# set on an exception once `annotate_traceback` has added its note
_NOTED = "_autograph_noted"


def annotate_traceback(exc: BaseException) -> None:
    """Adds the user's lines to an exception raised inside converted code.

    Tracebacks through converted code show generated lines; this note names
    the user's ``file:line`` for each converted frame, innermost last.
    """
    if getattr(exc, _NOTED, False) or isinstance(exc, AutographError):
        return
    seen: list[Location] = []
    tb = exc.__traceback__
    while tb is not None:
        loc = user_location(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        if loc is not None and (not seen or seen[-1] != loc):
            seen.append(loc)
        tb = tb.tb_next
    if seen:
        notes = [f"  {loc.short}: {loc.text.strip()}" for loc in seen]
        try:
            exc.add_note("in converted code, from the user's source:\n" + "\n".join(notes))
            setattr(exc, _NOTED, True)
        except (AttributeError, TypeError):
            pass


_TRACED_AT = re.compile(r"the function (\S+) at (\S+?):(\d+)( for \w+)?")
_GENERATED_AT = re.compile(r"(<autograph [^>]*>):(\d+)")
_GENERATED_QUALNAME = re.compile(r"__autograph_factory\.<locals>\.(?:__autograph_converted\."
                                 r"<locals>\.)?")


def clean_generated_names(exc: BaseException) -> None:
    """Rewrites a message (JAX's, say) that names generated code or autograph's own
    functions: ``loop_body at <autograph f@model.py:3>:9`` becomes the user's
    ``model.py:5``, and "tracing the function flat_fn at .../runtime/jaxprs.py:46"
    names the user's line where the error was raised."""
    if not exc.args or not isinstance(exc.args[0], str):
        return
    text = exc.args[0]
    if "<autograph " not in text and "__autograph_" not in text and not any(
            d in text for d in _OWN_DIRS):
        return
    innermost = innermost_user_location(exc)

    def traced_at(m: re.Match) -> str:
        filename, line = m.group(2), int(m.group(3))
        if is_generated(filename):
            loc = user_location(filename, line)
            return f"converted code at {loc.short}" if loc is not None else m.group(0)
        if _own_code(filename):
            where = f" at {innermost.short}" if innermost is not None else ""
            return f"converted code{where}"
        return m.group(0)

    def generated_at(m: re.Match) -> str:
        loc = user_location(m.group(1), int(m.group(2)))
        return loc.short if loc is not None else m.group(0)

    new = _TRACED_AT.sub(traced_at, text)
    if new != text:  # its arguments are the flattened state of a staged block
        new = re.sub(r"(the value of )?the argument flat\[\d+\]",
                     "a value the staged loop or branch carries", new)
    new = _GENERATED_AT.sub(generated_at, new)
    new = _GENERATED_QUALNAME.sub("", new)
    if new != text:
        try:
            exc.args = (new,) + tuple(exc.args[1:])
        except (AttributeError, TypeError):  # pragma: no cover - read-only args
            pass


# The project's own code: its frames are dropped from tracebacks of errors
# raised in converted code, as JAX drops its internal frames. Installed, the
# package holds `runtime/` and `converters/`; in the source tree (an editable
# install) they lie beside it. Never a sibling folder of an installed package:
# that would be some other top-level `runtime` package.
_HERE = os.path.dirname(os.path.abspath(__file__))
_OWN_DIRS = (_HERE + os.sep,) if os.path.isdir(os.path.join(_HERE, "runtime")) else tuple(
    os.path.normpath(os.path.join(_HERE, d)) + os.sep for d in (".", "../runtime",
                                                                "../converters"))


def _own_frame(tb) -> bool:
    return _own_module(tb.tb_frame)


def _module_of(frame: types.FrameType) -> str:
    """The top-level package of the module ``frame`` runs."""
    return (frame.f_globals.get("__name__") or "").split(".")[0]


def _own_module(frame: types.FrameType) -> bool:
    """Whether ``frame`` runs autograph's own code: decided by its module's package."""
    return _module_of(frame) == "autograph"


def _own_code(filename: str) -> bool:
    return filename.startswith(_OWN_DIRS)


def filter_traceback(exc: BaseException) -> None:
    """Drops autograph's own frames from ``exc``'s traceback.

    What is left is the user's code: their functions, the generated code of
    converted ones (each named with the user's line by ``annotate_traceback``)
    and the libraries they call. Called in the handler of an entry point, which
    re-raises with a bare ``raise`` (that adds no frame of its own).
    ``AUTOGRAPH_TRACEBACK_FILTERING=off`` keeps every frame.
    """
    if os.environ.get("AUTOGRAPH_TRACEBACK_FILTERING", "on").lower() in ("off", "0", "no"):
        return
    frames = traceback_entries(exc)
    kept = [t for t in frames if not _own_frame(t)]
    kept, dropped = _without_repeats(kept)
    if len(kept) == len(frames):
        return  # (none kept: the frames of the handler's callers follow as it propagates)
    if dropped:
        try:
            exc.add_note(f"({dropped} frames of the recursion through converted code are "
                         f"left out of the traceback)")
        except (AttributeError, TypeError):  # pragma: no cover - an exception with __slots__
            pass
    new = None
    for t in reversed(kept):
        new = types.TracebackType(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    exc.__traceback__ = new


def traceback_entries(exc: BaseException) -> list[types.TracebackType]:
    """The entries of ``exc``'s traceback, outermost first."""
    entries = []
    tb = exc.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    return entries


def _without_repeats(frames: list, keep: int = 2) -> tuple[list, int]:
    """``frames`` less the generated-code frames met more than ``keep`` times before
    (a recursion through converted code: the same lines again and again), the last
    ``keep`` frames always kept; and how many were left out."""
    seen: dict = {}
    out = []
    for i, t in enumerate(frames):
        code = t.tb_frame.f_code
        if is_generated(code.co_filename) and i < len(frames) - keep:
            key = (code, t.tb_lineno)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > keep:
                continue
        out.append(t)
    return out, len(frames) - len(out)


def _exclude_from_jax_tracebacks() -> None:
    """Asks JAX to drop these frames too, from errors that pass through ``jax.jit``."""
    from autograph import jax_internals
    for path in _OWN_DIRS:
        jax_internals.exclude_from_tracebacks(path)


_exclude_from_jax_tracebacks()

