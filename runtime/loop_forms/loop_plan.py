"""How a loop runs: one decision, made from what is known before its body is traced.

``plan_for`` and ``plan_while`` take what the generated code passes and what
the loop's state tells when the loop starts: the kind of iterable and the
trips left, whether the body uses the index as a Python value
(``python_index=``), a ``break`` or ``return`` (``extra_test=``),
``set_loop_options``, the trips a counter allows. They return a ``Plan``:
the ``Form`` the loop takes once something it touches is traced, and why.
``runtime.loops`` runs the form the plan names; ``autograph explain`` prints
it. The thresholds of the policy live here, and only here.

Whatever the plan, a loop runs as Python for as long as nothing it touches is
traced. What only tracing can tell stays in the runtime: a body ``lax.scan``
cannot stage (a carry that changes dtype, a library that cannot be traced)
makes a ``SCAN`` loop run unrolled after all, with a warning.

Examples:
    >>> plan_for(Iterated.STATIC, PYTHON_TRIPS).form
    <Form.UNROLLED: 'the Python loop `jax.jit` unrolls'>
    >>> plan_for(Iterated.STATIC, PYTHON_TRIPS + 1).form
    <Form.SCAN: 'one `lax.scan` over the static trip count'>
    >>> plan_while(maximum_iterations=8).form
    <Form.BOUNDED: 'a `lax.while_loop` with a most-iterations count'>
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

__all__ = ["CHECKPOINTS", "PYTHON_TRIPS", "UNROLL_LIMIT", "WARN_TRIPS", "Form", "Iterated",
           "Plan", "plan_for", "plan_while"]

# A loop with at most this many iterations left runs as the Python loop `jax.jit`
# unrolls: its index and the Python numbers it carries keep Python's meaning
# (exact integers, `f"{i}"`, `isinstance(i, int)`, shapes and slices), and
# compiling so few copies of the body costs less than the staged loop saves.
PYTHON_TRIPS = 16

# The most iterations a static loop runs unrolled when it cannot be staged (an
# iterator it cannot rewind, a body `lax.scan` cannot trace): past it, the error.
UNROLL_LIMIT = 1000

# A loop run as Python for its index's sake warns past this many iterations: its
# compile time grows with the trip count.
WARN_TRIPS = 100

# States the backward pass of a checkpointed loop keeps, by default (see
# `runtime.checkpointed`).
CHECKPOINTS = 128


class Form(enum.Enum):
    """How a loop runs once its state, items or condition are traced."""

    PYTHON = "a Python loop"
    UNROLLED = "the Python loop `jax.jit` unrolls"
    SCAN = "one `lax.scan` over the static trip count"
    EXITING_SCAN = "a loop over the static trip count that stops at its first exit"
    BOUNDED = "a `lax.while_loop` with a most-iterations count"
    CHECKPOINTED = "a `lax.while_loop` with no most-iterations count"


class Iterated(enum.Enum):
    """What a `for` loop iterates, as far as its plan goes."""

    STATIC = "a `range` of Python ints, an array, or `enumerate`/`zip`/`reversed` of those"
    TRACED_RANGE = "a `range` with traced bounds"
    OTHER = "a list, tuple, dict or other Python iterable"


@dataclasses.dataclass(frozen=True)
class Plan:
    """How one loop runs, and why.

    Attributes:
      form: the form the loop takes.
      reason: why, as a clause (``at most 16 iterations are left``).
      trips: the static trips left of a `for` loop, or None.
      maximum: the most iterations of a ``BOUNDED`` or ``CHECKPOINTED`` loop
        (``maximum_iterations`` or a counter's trips), or None.
      test_bounds: whether the loop's own test stops it within ``maximum``
        steps (a counter), so the staged loop needs no step count of its own.
      checkpoints: the states a ``CHECKPOINTED`` loop's backward pass keeps,
        or None for the default (``CHECKPOINTS``).
      checkpoint_memory: instead, the bytes those states may take, or None.
    """

    form: Form
    reason: str
    trips: int | None = None
    maximum: Any = None  # an int, or what `set_loop_options` was given
    test_bounds: bool = False
    checkpoints: Any = None
    checkpoint_memory: Any = None


def plan_for(iterated: Iterated, trips: int | None = None, *, python_index: str | None = None,
             exits: bool = False, rewindable: bool = True, unproven: str | None = None) -> Plan:
    """How a `for` loop runs, from the iterable and the trips it has left.

    Args:
      iterated: what the loop iterates.
      trips: the iterations left of a ``STATIC`` iterable; None where its length
        is not a Python int (a symbolic dimension of ``jax.export``).
      python_index: why the body needs its index as a Python value (the
        ``python_index=`` the converter found, or a Python number the body
        uses so, or an index past int32), or None.
      exits: whether the body has a ``break`` or ``return`` (``extra_test``).
      rewindable: False where the body reads an iterator (a generator) that a
        staging attempt would draw from and cannot put back.
      unproven: what kept the proof that staging is invisible from clearing the
        body (``autograph.analysis.invisible``), or None where it cleared it or
        has not read it yet.

    Returns:
      The plan: ``PYTHON`` for other iterables, ``CHECKPOINTED`` for a traced
      range, ``UNROLLED`` for a short or index-bound static loop, else ``SCAN``
      (``EXITING_SCAN`` with ``exits``).
    """
    if iterated is Iterated.TRACED_RANGE:
        return Plan(Form.CHECKPOINTED, "its trip count is traced, known only when the "
                                       "program runs")
    if iterated is Iterated.OTHER:
        return Plan(Form.PYTHON, "its items are Python values, iterated as under `jax.jit`")
    if trips is not None:
        if python_index is not None:
            return Plan(Form.UNROLLED, f"{python_index}: staged, its index (a traced int32) "
                                       f"or its exit would change what the program does",
                        trips=trips)
        if unproven is not None:
            return Plan(Form.UNROLLED, f"staging it is not proven to leave the program as "
                                       f"it is: {unproven}", trips=trips)
        if trips <= PYTHON_TRIPS:
            return Plan(Form.UNROLLED, f"at most {PYTHON_TRIPS} iterations are left, so the "
                                       f"index and Python numbers keep Python's meaning",
                        trips=trips)
        if not rewindable and trips <= UNROLL_LIMIT:
            return Plan(Form.UNROLLED, "the body reads an iterator that cannot be rewound",
                        trips=trips)
    if exits:
        return Plan(Form.EXITING_SCAN, f"more than {PYTHON_TRIPS} iterations are left and "
                                       f"the body has a `break` or `return`", trips=trips)
    return Plan(Form.SCAN, f"more than {PYTHON_TRIPS} iterations are left", trips=trips)


def plan_while(*, maximum_iterations: Any = None, checkpoints: Any = None,
               checkpoint_memory: Any = None, counter_trips: Any = None) -> Plan:
    """How a staged `while` loop runs.

    Args:
      maximum_iterations: ``set_loop_options(maximum_iterations=N)``, or None.
      checkpoints: ``set_loop_options(checkpoints=S)``, or None.
      checkpoint_memory: ``set_loop_options(checkpoint_memory=B)``, or None.
      counter_trips: the most iterations a counter that bounds the loop
        allows (``while i < 10``, ``i`` and the limit Python ints), or None.
        ``explain``, which runs nothing, passes a description of them.

    Returns:
      The plan: ``BOUNDED`` with a most-iterations count (given, or a
      counter's) and no ``checkpoints``, else ``CHECKPOINTED``.
    """
    if maximum_iterations is None and counter_trips is not None:
        return Plan(Form.BOUNDED, "a counter its test compares bounds its trip count",
                    maximum=counter_trips, test_bounds=True)
    if maximum_iterations is None:
        return Plan(Form.CHECKPOINTED, "its trip count is known only when the program runs",
                    checkpoints=checkpoints, checkpoint_memory=checkpoint_memory)
    if checkpoints is not None or checkpoint_memory is not None:
        return Plan(Form.CHECKPOINTED, "`set_loop_options` gives it checkpoints",
                    maximum=maximum_iterations, checkpoints=checkpoints,
                    checkpoint_memory=checkpoint_memory)
    return Plan(Form.BOUNDED, f"`set_loop_options` gives it at most {maximum_iterations} "
                              f"iterations", maximum=maximum_iterations)
