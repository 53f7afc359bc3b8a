"""Directives: calls that steer conversion and mean nothing at run time."""

from __future__ import annotations


def set_loop_options(*, maximum_iterations: int | None = None,
                     checkpoints: int | None = None) -> None:
    """Sets how the traced ``while`` loop whose body starts with this call runs.

    A ``while`` loop whose condition is traced runs as ``lax.while_loop``, and
    reverse-mode ``jax.grad`` differentiates it in one of two forms:

    * bounded: with ``maximum_iterations=N`` (or a counter that bounds the
      loop, as ``while i < 10`` with ``i += 1`` in the body), as a ``lax.scan``
      of ``N`` steps that stops changing its state once the condition is
      false. Its backward pass keeps what every step computed.
    * checkpointed: any other loop. Its backward pass keeps ``checkpoints``
      copies of the loop state (by default 128, fewer for a state over 2 MiB)
      and recomputes the steps between them; see
      :mod:`autograph.runtime.checkpointed` for the bounds.

    With ``maximum_iterations=N`` the loop stops after ``N`` iterations even if
    its condition still holds. Giving ``checkpoints`` chooses the
    checkpointed form even where the loop has a bound, for a backward pass
    whose memory does not grow with the trip count. Outside converted code,
    and for loops that run in Python, the call does nothing.

    Args:
      maximum_iterations: the most iterations the loop may run.
      checkpoints: how many copies of the loop state the backward pass of the
        checkpointed form keeps (at least 2).
    """
    if maximum_iterations is not None and int(maximum_iterations) < 0:
        raise ValueError("maximum_iterations must be >= 0")
    if checkpoints is not None and int(checkpoints) < 2:
        raise ValueError("checkpoints must be >= 2")
