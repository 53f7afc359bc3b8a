"""`for` loops that run as Python: over Python iterables, short static loops, and
static loops whose index or numbers must keep Python's meaning (``runtime.loop_plan``'s
``PYTHON`` and ``UNROLLED`` forms), with the notes and warnings they give."""

from __future__ import annotations

import sys
import threading
from typing import Any, NamedTuple, Sequence

import jax

from autograph import errors

from ..branches.conditionals import if_stmt
from ..carried import attributes
from ..core.conditions import condition
from ..core.constructs import Construct
from ..core.values import Tracer, is_array, is_python_number, is_traced, is_undefined
from ..functions.libraries import layers_made_before
from ..python.iterables import Seq
from .loop_plan import WARN_TRIPS


def items_from(seq: Seq, k: int):
    """The items of ``seq`` from index ``k`` on, for a loop that runs as Python."""
    return (seq.element(j, seq.python_slice(j)) for j in range(k, seq.n))


# A body that needs its loop index as a Python value (`layers[i]`, `range(i)`)
# cannot be traced with a traced index; such loops run unrolled instead.
_NEEDS_PYTHON_INDEX = (jax.errors.ConcretizationTypeError, jax.errors.TracerIntegerConversionError,
                       IndexError)  # `x[i:i + 2]`: "Slice entries must be static integers"
INDEX_MAY_CAUSE = (errors.LoopStateError, errors.BranchError, errors.ConditionError)

# Loops over a static range that run as Python because of their index (see
# ``python_index``), with why: the tests read them; the first 64 are kept, and the
# warning is given once per place (``_warned``). Written under ``_noting``: loops
# run in many threads at once.
python_loops: list[tuple[Any, str, int]] = []
_warned: set = set()
_noting = threading.Lock()


def note_python_loop(why: str, trips: int, *, proof: bool = False) -> None:
    """Remembers a loop over a static range run as Python for its index's sake; one
    whose trip count makes unrolling costly also warns, once per place."""
    loc = errors.current_location()
    entry = (loc, why, trips)
    with _noting:
        if entry not in python_loops and len(python_loops) < 64:
            python_loops.append(entry)
        if entry in _warned:
            return
        if len(_warned) < 4096:
            _warned.add(entry)
    if trips > WARN_TRIPS:
        where = f"{loc.short}: " if loc is not None else ""
        if proof:
            errors.warn(f"{where}this `for` loop of {trips} iterations runs unrolled in "
                        f"Python, as under plain `jax.jit`, because {why}. A body that "
                        f"only computes on arrays (operators, `jnp`/`lax` functions, "
                        f"helpers of that kind) stages as one `lax.scan`; `autograph "
                        f"explain` shows what blocks it")
            return
        errors.warn(f"{where}this `for` loop of {trips} iterations runs unrolled in Python, "
                    f"as under plain `jax.jit`, because {why}; staged as one `lax.scan` its "
                    f"index would be a traced int32. Use the index only in arithmetic, "
                    f"comparisons and array indexing to stage it")


class NumberUse(NamedTuple):
    """A variable, or an attribute chain (``self.n``), that a loop body assigns and
    uses as a Python value (``f"w{n}"``): the converter's ``python_state=`` entries."""

    ref: int | str  # its position among the loop's variables, or the free variable
    # of the loop's functions that an attribute chain starts at
    path: tuple[str, ...]  # the attributes of the chain, () for a variable
    why: str  # what the body does with it, as a clause

    def label(self, names: Sequence[str]) -> str:
        root = names[self.ref] if isinstance(self.ref, int) else self.ref
        return ".".join((root, *self.path))

    def value(self, state, fns) -> Any:
        """Its value before the loop, or None where there is none."""
        if isinstance(self.ref, int):
            root = state[self.ref]
        else:
            root = attributes.free_value(self.ref, fns)
        return attributes.path_value(root, self.path)


def python_number_used(uses: Sequence[Sequence[Any]], state, names,
                       fns) -> tuple[NumberUse, str] | None:
    """The first of ``uses`` (``python_state=`` entries) that starts as a Python number,
    with why the loop must therefore run as Python; or None."""
    for entry in uses:
        use = NumberUse(*entry)
        value = use.value(state, fns)
        if is_python_number(value) or (is_array(value) and not is_traced(value)):
            return use, f"{use.why}, and `{use.label(names)}` starts as a concrete number"
    return None


def observed(error) -> str:
    """What an error observed, as a clause (``the body divides by zero ...``): an
    autograph error's ``observed``, else its rule or message's first line."""
    said = getattr(error, "observed", None) if isinstance(error, errors.AutographError) else None
    if said:
        return said
    rule = getattr(error, "rule", None) if isinstance(error, errors.AutographError) else None
    lines = str(error).strip().splitlines()
    return rule or (lines[0] if lines else type(error).__name__)


def warn_unrolled(error) -> None:
    where = errors.here()
    lines = str(error).strip().splitlines()
    reason = lines[0] if lines else type(error).__name__
    if isinstance(error, errors.AutographError):
        reason = error.rule or reason
    if isinstance(error, _NEEDS_PYTHON_INDEX):
        why = (f"its body uses the loop index or item as a Python value ({reason}); iterate "
               f"over the Python list itself, or index arrays with the traced index, to stage "
               f"it as one `lax.scan`")
    else:
        if isinstance(error, errors.AutographError) and error.observed:
            reason = f"observed: {error.observed}"
        why = (f"it cannot be staged as one `lax.scan` ({type(error).__name__}: {reason}); "
               f"as under plain `jax.jit`, each iteration is traced in turn, so compile time "
               f"grows with the trip count")
    errors.warn(f"{where}this `for` loop runs unrolled in Python, because {why}")


def in_linen() -> bool:
    """Whether a Flax linen module's method is running (``@nn.compact`` code).

    Linen creates submodules and parameters as its methods run, which a
    staged loop body cannot do; there, a loop with a static trip count runs
    as the Python loop linen expects (linen's own ``nn.scan`` stages one).
    """
    module = sys.modules.get("flax.linen.module")
    context = getattr(module, "_context", None)
    stack = getattr(context, "module_stack", None)
    if not stack:
        return False
    return stack[-1] is not None


def st_any_traced(tree) -> bool:
    return any(isinstance(leaf, Tracer)
               for leaf in jax.tree_util.tree_leaves(tree, is_leaf=is_undefined))


def python_for(iterable, body, state, names, extra_test, dead: Sequence[str] = ()):
    # the exit test runs before the next item is drawn, as Python's `break` leaves an
    # iterator (a generator) at the item it broke on
    c: Any = True
    if extra_test is not None:
        c = condition(extra_test(*state), "a `for` loop's exit test")
        if not is_traced(c) and not c:
            return state
    for item in iterable:
        if is_traced(c):
            with layers_made_before(Construct.FOR):
                state = if_stmt(c, lambda *s, item=item: body(item, *s), None, state,
                                names=names, dead=dead)
        else:
            state = tuple(body(item, *state))
        if extra_test is not None:
            c = condition(extra_test(*state), "a `for` loop's exit test")
            if not is_traced(c) and not c:
                break
    return state
