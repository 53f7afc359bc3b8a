"""Concrete functions and signatures: one trace of an ``autograph.function``.

``ConcreteFunction`` is what ``get_concrete_function`` returns; the helpers
here check call arguments against ``TensorSpec``s and signatures.
"""

from __future__ import annotations

import inspect
from typing import Callable

import jax
import numpy as np

from autograph.specs import TensorSpec

_ARRAYS = (jax.Array, np.ndarray, np.generic)


def describe(value, depth: int = 0) -> str:
    """``value`` for a message: ``float32[3, 4]`` for an array or spec (a tracer
    too), lists, tuples and dicts item by item, else its repr."""
    if isinstance(value, (jax.Array, jax.ShapeDtypeStruct)) or hasattr(value, "aval"):
        return f"{np.dtype(value.dtype).name}{list(np.shape(value))}"
    if isinstance(value, _ARRAYS):
        return f"{np.asarray(value).dtype.name}{list(np.shape(value))}"
    if depth < 3 and type(value) in (list, tuple, dict):
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        shown = [(k, describe(v, depth + 1)) for k, v in items[:8]]
        more = ", ..." if len(items) > 8 else ""
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k!r}: {v}" for k, v in shown) + more + "}"
        inner = ", ".join(v for _, v in shown) + more
        if isinstance(value, list):
            return f"[{inner}]"
        return f"({inner}{',' if len(items) == 1 else ''})"
    return repr(value)


class BoundConcreteFunction:
    """A method's concrete function: called without ``self``."""

    def __init__(self, concrete: "ConcreteFunction", obj):
        self._concrete, self._obj = concrete, obj
        args, kwargs = concrete.structured_input_signature
        self.structured_input_signature = (args[1:], kwargs)

    def __call__(self, *args, **kwargs):
        return self._concrete(self._obj, *args, **kwargs)

    @property
    def jaxpr(self):
        return self._concrete.jaxpr

    def as_text(self) -> str:
        return self._concrete.as_text()


class ConcreteFunction:
    """One trace of a ``Function``: callable, with its jaxpr and StableHLO.

    Attributes:
      structured_input_signature: ``(args, kwargs)`` of specs and static values.
    """

    def __init__(self, name: str, jitted, args: tuple, kwargs: dict, *,
                 jit_args: tuple[tuple, dict], signature: inspect.Signature | None,
                 arg_name: Callable[[int], str]):
        """Traces, lowers and (for static shapes) compiles one signature.

        Args:
          name: the function's name, for error messages.
          jitted: the ``jax.jit`` function whose static arguments fit ``args``.
          args, kwargs: the specs (and static Python values) of the trace.
          jit_args: ``args`` and ``kwargs`` as ``jitted`` takes them.
          signature: the Python function's signature, or None when it has none;
            it maps keyword arguments of a call to positions.
          arg_name: names positional argument ``i`` in error messages.
        """
        self._name = name
        self._signature = signature
        self._arg_name = arg_name
        self.structured_input_signature = (args, kwargs)
        self._jitted = jitted
        self._symbolic = any(isinstance(a, TensorSpec) and a.symbolic
                             for a in list(args) + list(kwargs.values()))
        self._jit_specs = jit_args  # static floats keyed faithfully
        self._traced = self._jitted.trace(*self._jit_specs[0], **self._jit_specs[1])
        self._lowered = self._traced.lower()
        self._compiled = None if self._symbolic else self._lowered.compile()
        self._exported: jax.export.Exported | None = None

    @property
    def jaxpr(self):
        """The ``ClosedJaxpr`` of this trace."""
        return self._traced.jaxpr

    def as_text(self) -> str:
        """The StableHLO text of this trace."""
        return self._lowered.as_text()

    def __call__(self, *args, **kwargs):
        """Calls the trace with its array arguments alone (the Python values were bound
        when it was traced), or with the full original call, the same Python values
        included, as TensorFlow's concrete functions accept both."""
        specs, kwspecs = self.structured_input_signature
        args, kwargs = self._bind_python_values(args, kwargs)
        args, kwargs = self._positional(args, kwargs, len(specs), set(kwspecs))
        checked = [check_spec(self._name, self._arg_name(i), s, a)
                   for i, (s, a) in enumerate(zip(specs, args))]
        checked_kw = {k: check_spec(self._name, f"`{k}`", kwspecs[k], v)
                      for k, v in kwargs.items()}
        # the arrays alone: the Python values are part of the program, as it was traced
        dynamic = [a for s, a in zip(specs, checked) if _is_spec_tree(s)]
        dyn_kw = {k: v for k, v in checked_kw.items() if _is_spec_tree(kwspecs[k])}
        if self._compiled is not None:
            return self._compiled(*dynamic, **dyn_kw)
        if self._exported is None:  # one symbolic trace serves every size
            self._exported = jax.export.export(self._jitted)(*self._jit_specs[0],
                                                             **self._jit_specs[1])
        return self._exported.call(*dynamic, **dyn_kw)

    def _bind_python_values(self, args, kwargs):
        """The array arguments alone, filled in with the Python values of the trace."""
        specs, kwspecs = self.structured_input_signature
        dynamic = [i for i, s in enumerate(specs) if _is_spec_tree(s)]
        static_kw = {k: v for k, v in kwspecs.items() if not _is_spec_tree(v)}
        if (len(dynamic) < len(specs) and len(args) == len(dynamic)
                and set(kwargs) <= set(kwspecs) - set(static_kw)):
            full = list(specs)
            for i, a in zip(dynamic, args):
                full[i] = a
            return tuple(full), {**static_kw, **kwargs}
        if static_kw and len(args) == len(specs) and not set(static_kw) & set(kwargs):
            return args, {**static_kw, **kwargs}
        return args, kwargs

    def _positional(self, args, kwargs, n, kwnames):
        """Maps keyword arguments of the traced positional parameters to positions."""
        extra = set(kwargs) - kwnames
        sig = self._signature
        if extra and sig is not None:
            try:
                bound = sig.bind_partial(*args, **{k: kwargs[k] for k in extra})
            except TypeError as e:
                raise TypeError(f"concrete function of `{self._name}`: {e}") from None
            names = list(sig.parameters)[:n]
            if all(k in bound.arguments for k in names):
                args = tuple(bound.arguments[k] for k in names)
                kwargs = {k: v for k, v in kwargs.items() if k not in extra}
        if len(args) != n or set(kwargs) != kwnames:
            specs = self.structured_input_signature[0]
            raise TypeError(f"concrete function of `{self._name}` takes {n} positional "
                            f"arguments {list(specs)}; got {len(args)}")
        return args, kwargs

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self._name}{self.structured_input_signature[0]}>"


def _is_spec_tree(spec) -> bool:
    return any(isinstance(leaf, jax.ShapeDtypeStruct) for leaf in jax.tree_util.tree_leaves(
        spec, is_leaf=lambda x: isinstance(x, jax.ShapeDtypeStruct)))


def check_spec(fname, name, spec, value):
    """Checks ``value`` against ``spec`` (a spec, a pytree of specs, or a Python value).

    Returns ``value``, with Python numbers turned into arrays of the spec's dtype.
    """
    if isinstance(spec, jax.ShapeDtypeStruct):
        return _check_leaf_spec(fname, name, spec, value)
    if _is_spec_tree(spec):
        is_spec = lambda x: isinstance(x, jax.ShapeDtypeStruct)  # noqa: E731
        # jaxlib ships no stubs: without this, mypy reads PyTreeDef as an unknown type
        spec_tree: jax.tree_util.PyTreeDef
        spec_leaves, spec_tree = jax.tree_util.tree_flatten(spec, is_leaf=is_spec)
        value_leaves, value_tree = jax.tree_util.tree_flatten(value)
        if spec_tree != value_tree:
            raise ValueError(f"argument {name} of `{fname}` must have the structure of its "
                             f"signature {spec!r}; got {value!r}")
        checked = [check_spec(fname, f"{name}[{i}]", s, v)
                   for i, (s, v) in enumerate(zip(spec_leaves, value_leaves))]
        return jax.tree_util.tree_unflatten(value_tree, checked)
    if not (value is spec or value == spec):
        raise ValueError(f"argument {name} of `{fname}` was traced with the Python value "
                         f"{spec!r}; got {value!r}")
    return value


def _check_leaf_spec(fname, name, spec, value):
    if not isinstance(spec, TensorSpec):
        spec = TensorSpec(spec.shape, spec.dtype)
    converted = value
    if isinstance(value, (bool, int, float, complex)):
        converted = np.asarray(value, dtype=spec.dtype)
        if np.asarray(value).dtype.kind not in ("b", "i", "u", "f", "c") or converted != value:
            raise TypeError(f"argument {name} of `{fname}` must match {spec!r}; got the Python "
                            f"{type(value).__name__} {value!r}")
    elif not isinstance(value, (*_ARRAYS, jax.ShapeDtypeStruct)) and not hasattr(value, "dtype"):
        raise TypeError(f"argument {name} of `{fname}` must be an array matching {spec!r}; "
                        f"got {type(value).__name__} {value!r}")
    why = spec.mismatch(converted)
    if why is not None:
        error = TypeError if why.startswith("dtype") else ValueError
        raise error(f"argument {name} of `{fname}` does not match its signature: expected "
                    f"{spec!r}, got {describe(converted)} ({why})")
    return converted


def as_spec(value):
    """The spec an array stands for in ``get_concrete_function``; other values as they are."""
    if isinstance(value, jax.ShapeDtypeStruct):
        return value
    if isinstance(value, _ARRAYS):
        return TensorSpec(np.shape(value), np.asarray(value).dtype if not hasattr(value, "dtype")
                          else value.dtype)
    return value
