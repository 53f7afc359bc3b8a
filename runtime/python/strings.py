"""Strings made from traced values, formatted when the program runs.

In a `print`, an `assert` message or a `raise` message, the formatting the
program does goes through these operators (see ``converters/print_calls``):

    print(f"{i}: {loss:.4f}")         ag__.fstring(lambda v0, v1: f'{v0}: {v1:.4f}', i, loss)
    print("step {}".format(i))        ag__.str_format('step {}', i)
    print("loss %.3f" % loss)         ag__.percent_format('loss %.3f', loss)
    print("x=" + str(x), repr(x))     'x=' + ag__.str_(x), ag__.repr_(x)

With no traced value among the operands, each operator is the Python
operation, done at once. With one, it returns an ``FString``: a ``str`` (so
string methods keep working on the text tracing gives, as under plain
``jax.jit``) that remembers how it was made. ``print_``, ``assert_`` and a
staged ``raise`` make it again when the program runs, by Python's own
formatting of the concrete values: the text is the one the plain-Python run
prints, format specs and conversions included.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import jax
import jax.numpy as jnp

from ..core.values import Tracer, iterator_leaf

# The text of an `FString` whose formatting a tracer refuses (`"{:.2f}".format(x)`)
_UNFORMATTABLE = "<formatted when the program runs>"


class FString(str):
    """A string formatted from traced values: made again when the program runs.

    Its text is ``fmt(*fields)`` on the tracers (what plain ``jax.jit`` shows),
    or ``_UNFORMATTABLE`` where a tracer refuses the format. ``render`` makes it
    from the fields' concrete values. A pytree whose leaves are ``fields``, so
    ``print_`` sends them to the host with the other traced arguments.

    ``"..." + s``, ``s + "..."``, ``s % values`` and ``template % s`` are
    ``FString`` again; other string operations see the text.
    """

    fmt: Callable[..., str]
    fields: tuple

    def __new__(cls, fmt: Callable[..., str], fields: Sequence[Any]) -> FString:
        try:
            text = fmt(*fields)
        except Exception:  # noqa: BLE001 - a format spec or conversion a tracer refuses
            text = _UNFORMATTABLE
        self = super().__new__(cls, text)
        self.fmt, self.fields = fmt, tuple(fields)
        return self

    def render(self, fields: Sequence[Any]) -> str:
        """The string made from ``fields``, the concrete values of ``self.fields``
        (as a callback receives them), formatted as the jax.Arrays they are."""
        return self.fmt(*[jnp.asarray(f) for f in fields])

    def __add__(self, other: str) -> str:
        if not isinstance(other, str):
            return NotImplemented
        return later(operator.add, (self, other))

    def __radd__(self, other: str) -> str:
        if not isinstance(other, str):
            return NotImplemented
        return later(operator.add, (other, self))

    def __mod__(self, values: Any) -> str:
        return later(operator.mod, (self, values))

    def __rmod__(self, template: Any) -> Any:
        if not isinstance(template, str):
            return NotImplemented
        return later(operator.mod, (template, self))


jax.tree_util.register_pytree_node(
    FString, lambda s: (s.fields, s.fmt), lambda fmt, fields: FString(fmt, fields))

_Fill = Callable[[Iterator[Any]], Any]  # a value rebuilt from the next of its traced leaves


def split(value: Any) -> tuple[list, Callable[[Sequence[Any]], Any]]:
    """The traced leaves of ``value``, and how to make ``value`` from other values of them.

    ``rebuild(arrays)`` is ``value`` with each traced leaf replaced by the
    next of ``arrays`` and each ``FString`` by its text made from them. Lists,
    tuples and dicts are rebuilt as they are (a dict keeps its key order, which
    a pytree round trip sorts); other pytrees by ``jax.tree_util``.
    """
    traced: list = []
    fill = _collect(value, traced)

    def rebuild(arrays):
        return value if fill is None else fill(iter(arrays))
    return traced, rebuild


def _collect(value, traced: list) -> _Fill | None:
    """Adds ``value``'s traced leaves to ``traced``; None when it has none."""
    if isinstance(value, Tracer):
        traced.append(value)
        return next
    if isinstance(value, FString):
        traced.extend(value.fields)
        n = len(value.fields)
        return lambda it: value.fmt(*[next(it) for _ in range(n)])
    if type(value) in (list, tuple, dict):
        items = list(value.values() if isinstance(value, dict) else value)
        fills = [_collect(v, traced) for v in items]
        if all(f is None for f in fills):
            return None

        def fill_items(it):
            new = [v if f is None else f(it) for v, f in zip(items, fills)]
            return dict(zip(value, new)) if isinstance(value, dict) else type(value)(new)
        return fill_items
    leaves, treedef = jax.tree_util.tree_flatten(
        value, is_leaf=lambda v: isinstance(v, FString) or iterator_leaf(v))
    if jax.tree_util.treedef_is_leaf(treedef):
        return None  # a Python value
    fills = [_collect(v, traced) for v in leaves]
    if all(f is None for f in fills):
        return None
    return lambda it: jax.tree_util.tree_unflatten(
        treedef, [v if f is None else f(it) for v, f in zip(leaves, fills)])


def later(render: Callable[..., str], args: tuple, kwargs: dict | None = None) -> Any:
    """``render(*args, **kwargs)``: at once, or an ``FString`` when an operand is traced."""
    kwargs = kwargs or {}
    traced, rebuild = split((args, kwargs))
    if not traced:
        return render(*args, **kwargs)

    def fmt(*arrays):
        a, kw = rebuild(arrays)
        return render(*a, **kw)
    return FString(fmt, traced)


def fstring(fmt: Callable[..., str], *fields: Any) -> Any:
    """``fmt(*fields)``, an f-string: at once, or at run time when a field is traced.

    The semantics are given by this Python implementation::

        return fmt(*fields)

    Args:
      fmt: formats the f-string from the values of its fields.
      *fields: the values of the f-string's ``{...}`` fields.

    Returns:
      The formatted string, or, when a field is traced, an ``FString`` that
      ``print_``, ``assert_`` and staged ``raise`` format when the program runs.
    """
    return later(fmt, fields)


def str_(value: Any) -> Any:
    """``str(value)``, formatted when the program runs if ``value`` is traced.

    The semantics are given by this Python implementation::

        return str(value)
    """
    return later(str, (value,))


def repr_(value: Any) -> Any:
    """``repr(value)``, formatted when the program runs if ``value`` is traced.

    The semantics are given by this Python implementation::

        return repr(value)
    """
    return later(repr, (value,))


def format_(value: Any, spec: Any = "") -> Any:
    """``format(value, spec)``, formatted when the program runs if ``value`` is traced.

    The semantics are given by this Python implementation::

        return format(value, spec)
    """
    return later(format, (value, spec))


def _format_method(template, /, *args, **kwargs):
    return template.format(*args, **kwargs)


def str_format(template: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``template.format(*args, **kwargs)``, formatted when the program runs if an
    argument is traced.

    The semantics are given by this Python implementation::

        return template.format(*args, **kwargs)

    A ``template`` that is not a string (an object with a ``format`` method of
    its own) is called as it is.
    """
    if not isinstance(template, str):
        return template.format(*args, **kwargs)
    return later(_format_method, (template, *args), kwargs)


def percent_format(template: Any, values: Any) -> Any:
    """``template % values``, formatted when the program runs if a value is traced.

    The semantics are given by this Python implementation::

        return template % values

    A ``template`` that is not a string is the ``%`` operator, as it is.
    """
    if not isinstance(template, str):
        return template % values
    return later(operator.mod, (template, values))
