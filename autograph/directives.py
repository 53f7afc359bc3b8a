"""Directives: calls that steer conversion and mean nothing at run time."""

from __future__ import annotations


def set_loop_options(*, maximum_iterations: int | None = None) -> None:
    """Bounds the traced ``while`` loop whose body starts with this call.

    With ``maximum_iterations=N`` a ``while`` loop whose condition is traced
    is staged as a ``lax.scan`` of ``N`` steps that stops changing its state
    once the condition is false, so reverse-mode ``jax.grad`` works through
    it. The loop stops after ``N`` iterations even if its condition still
    holds. Outside converted code, and for loops that run in Python, the call
    does nothing.

    Args:
      maximum_iterations: the most iterations the loop may run.
    """
    if maximum_iterations is not None and int(maximum_iterations) < 0:
        raise ValueError("maximum_iterations must be >= 0")
