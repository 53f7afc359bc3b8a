"""Turns the value of a condition into a Python bool or a traced scalar bool."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from autograph import errors, jax_internals

from . import handlers
from .values import Tracer, is_undefined, raise_undefined

# asking is cheaper than failing: `bool()` of a tracer builds a long error
_is_concrete = jax_internals.is_concrete


def condition(pred, construct: str):
    """Returns ``pred`` itself when Python can branch on it, else a traced bool.

    A Python value, a NumPy value or a concrete array (outside ``jax.jit``, or
    under eager ``jax.grad``) takes the Python path: the caller branches with
    plain ``if``. A traced value must hold exactly one element.

    Raises:
      ConditionError: ``pred`` is traced and has more than one element.
    """
    if is_undefined(pred):
        raise_undefined(pred)
    if not isinstance(pred, Tracer):
        return pred
    shape = np.shape(pred)
    if handlers.catching(jax.errors.TracerBoolConversionError) and not _is_concrete(pred):
        # an `except` around it catches what plain `jax.jit` raises here
        handlers.warn_caught(f"the condition of {construct}")
        handlers.raise_as_jit(pred)
    if int(np.prod(shape)) != 1:
        if handlers.active() and not _is_concrete(pred):
            # JAX's error there (a `ValueError`) or autograph's: an `except` around it
            # that catches either sees JAX's, from autograph's
            jit_error = handlers.jit_error(pred)
            if handlers.catching(type(jit_error)) or handlers.catching(errors.ConditionError):
                raise jit_error from errors.ConditionError(
                    f"the condition of {construct} must be a single value",
                    observed=f"the condition is an array of shape {shape}")
        raise errors.ConditionError(
            f"the condition of {construct} must be a single value",
            observed=f"the condition is an array of shape {shape}",
            fix="reduce it to one boolean, e.g. with `.any()` or `.all()` "
                "(or `jnp.any(...)`/`jnp.all(...)`), or use `jnp.where` for an "
                "elementwise choice")
    if _is_concrete(pred):
        try:
            return bool(pred)  # concrete under eager `jax.grad`: Python decides
        except jax.errors.ConcretizationTypeError:
            pass
    if shape != ():
        pred = jnp.reshape(pred, ())
    if pred.dtype != jnp.bool_:
        pred = pred != 0
    return pred
