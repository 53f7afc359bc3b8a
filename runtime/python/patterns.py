"""The structural checks of `match` patterns, as Python's `match` makes them.

A converted `match` is an `if`/`elif` chain (see ``converters/match_statements``);
these operators are the parts of its tests that have no one-call Python
spelling. Each looks only at types, lengths, keys and attributes, which are
Python facts while tracing, so each returns a Python ``bool`` or the part of
the subject asked for, never a traced value.
"""

from __future__ import annotations

from typing import Any

# The type flags CPython's `match` tests for sequence and mapping patterns
# (`Py_TPFLAGS_SEQUENCE`, `Py_TPFLAGS_MAPPING`); `collections.abc.Sequence` and
# `Mapping` set them on their subclasses and on classes registered with them.
_SEQUENCE = 1 << 5
_MAPPING = 1 << 6
# Set on the built-in types a positional sub-pattern matches as a whole (`int(n)`).
_MATCH_SELF = 1 << 22
_NONE = object()


def is_sequence(subject: Any, *, length: int | None = None,
                min_length: int | None = None) -> bool:
    """Whether ``subject`` is matched by a sequence pattern of that many items.

    The semantics are given by this Python implementation::

        match subject:
            case [_, _]:                # length=2
                return True
            case [_, _, *_]:            # min_length=2
                return True
        return False

    A sequence is an instance of ``collections.abc.Sequence`` other than
    ``str``, ``bytes`` and ``bytearray``; a JAX or NumPy array is none.
    """
    if not type(subject).__flags__ & _SEQUENCE:
        return False
    if length is not None:
        return len(subject) == length
    if min_length:
        return len(subject) >= min_length
    return True


def item_from_end(subject: Any, position: int) -> Any:
    """``subject[-position]``, read with a non-negative index, as `match` reads
    the items after a star (``[*_, last]``)."""
    return subject[len(subject) - position]


def sequence_rest(subject: Any, start: int, end: int) -> list:
    """The list a star sub-pattern binds: the items of ``subject`` after the first
    ``start`` and before the last ``end`` (``[first, *rest, last]``: 1, 1)."""
    items = list(subject)
    return items[start:len(items) - end]


def is_mapping(subject: Any, keys: tuple = ()) -> bool:
    """Whether ``subject`` is matched by a mapping pattern with ``keys``.

    The semantics are given by this Python implementation (``keys=('k',)``)::

        match subject:
            case {'k': _}:
                return True
        return False

    A mapping is an instance of ``collections.abc.Mapping``; keys are looked
    up with ``subject.get`` (a ``defaultdict`` adds none). A key given twice is
    Python's ``ValueError``.
    """
    if not type(subject).__flags__ & _MAPPING:
        return False
    if keys and len(subject) < len(keys):
        return False
    missing = object()
    seen: set = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"mapping pattern checks duplicate key ({key!r})")
        seen.add(key)
        if subject.get(key, missing) is missing:
            return False
    return True


def mapping_rest(subject: Any, keys: tuple) -> dict:
    """The dict ``**rest`` binds in a mapping pattern: ``subject`` without ``keys``."""
    rest = dict(subject)
    for key in keys:
        del rest[key]
    return rest


def _match_args(cls: type, count: int) -> tuple | None:
    """The attribute names ``cls``'s ``count`` positional sub-patterns read, or
    None where the one sub-pattern matches the subject itself (``int(n)``)."""
    if not isinstance(cls, type):
        raise TypeError("called match pattern must be a type")
    if not count:
        return ()
    names = getattr(cls, "__match_args__", _NONE)
    if names is _NONE:  # then only the built-ins that match as a whole take one
        allowed: tuple | None = None if cls.__flags__ & _MATCH_SELF else ()
    elif type(names) is not tuple:
        raise TypeError(f"{cls.__name__}.__match_args__ must be a tuple "
                        f"(got {type(names).__name__})")
    else:
        allowed = names
    size = 1 if allowed is None else len(allowed)
    if size < count:
        raise TypeError(f"{cls.__name__}() accepts {size} positional sub-pattern"
                        f"{'' if size == 1 else 's'} ({count} given)")
    if allowed is None:
        return None
    for name in allowed[:count]:
        if type(name) is not str:
            raise TypeError(f"__match_args__ elements must be strings "
                            f"(got {type(name).__name__})")
    return allowed[:count]


def has_match_attrs(subject: Any, cls: type, positional: int, keywords: tuple = ()) -> bool:
    """Whether ``subject``, an instance of ``cls``, has the attributes a class
    pattern with ``positional`` positional and ``keywords`` keyword sub-patterns
    reads.

    The semantics are given by this Python implementation
    (``positional=2, keywords=('z',)``)::

        match subject:
            case cls(_, _, z=_):
                return True
        return False

    Positional sub-patterns read the attributes ``cls.__match_args__`` names;
    an attribute named twice, or more positional sub-patterns than
    ``__match_args__`` has, is Python's ``TypeError``.
    """
    names = _match_args(cls, positional)
    read = list(names or ()) + list(keywords)
    for i, name in enumerate(read):
        if name in read[:i]:
            raise TypeError(f"{cls.__name__}() got multiple sub-patterns for attribute "
                            f"{name!r}")
        if not hasattr(subject, name):
            return False
    return True


def match_attr(subject: Any, cls: type, index: int) -> Any:
    """What the ``index``-th positional sub-pattern of ``cls(...)`` matches:
    the attribute ``cls.__match_args__[index]`` of ``subject``, or ``subject``
    itself for the built-in types that match as a whole (``int(n)``)."""
    names = _match_args(cls, index + 1)
    return subject if names is None else getattr(subject, names[index])
