"""What a lowered `if` or loop takes in, hands out and keeps to itself.

The formulas the converters lower blocks with, in one place, so that
``autograph explain`` describes exactly what they do. They read the
annotations of the last analysis (``Anno.BODY_SCOPE``, ``LIVE_OUT``,
``BODY_LIVE_IN``, ...), with ``locals_`` the local names of the function the
block is in:

* an `if` hands out the names it modifies that are live after it; its branch
  functions take the modified names a branch reads before assigning them;
* a loop carries the names its body modifies that are live at its head
  (read by the test, by a later iteration or after the loop), and a `for`
  also the target when it is live after the loop (Python keeps its last
  value); the loop functions take and return exactly those.
"""

from __future__ import annotations

import dataclasses

import gast

from autograph import anno
from autograph.analysis import activity
from autograph.anno import Anno


@dataclasses.dataclass(frozen=True)
class BlockState:
    """The names a lowered block passes around.

    Attributes:
      params: the parameters of the block's functions, in order.
      outputs: the names the statement assigns from the block's result, in order.
      local: names the block assigns that stay inside its functions.
    """

    params: tuple[str, ...]
    outputs: tuple[str, ...]
    local: tuple[str, ...]


def branch_state(node: gast.If, locals_: frozenset) -> BlockState:
    """What an `if` takes in and hands out."""
    modified = (anno.get(node, Anno.BODY_SCOPE).modified
                | anno.get(node, Anno.ORELSE_SCOPE).modified) & locals_
    outputs = tuple(sorted(modified & anno.get(node, Anno.LIVE_OUT)))
    reads = anno.get(node, Anno.BODY_LIVE_IN) | anno.get(node, Anno.ORELSE_LIVE_IN)
    needed = modified & reads
    params = tuple(o for o in outputs if o in needed) + tuple(sorted(needed - set(outputs)))
    return BlockState(params, outputs, tuple(sorted(modified - set(outputs) - needed)))


def loop_state(node: gast.While | gast.For, locals_: frozenset) -> BlockState:
    """What a loop carries: its functions take and return the same names."""
    extra = anno.get(node, Anno.EXTRA_TEST)
    test_reads = activity.expression_scope(extra).reads
    if isinstance(node, gast.While):
        test_reads |= activity.expression_scope(node.test).reads
    modified = anno.get(node, Anno.BODY_SCOPE).modified & locals_
    head = anno.get(node, Anno.LIVE_OUT) | anno.get(node, Anno.BODY_LIVE_IN) | test_reads
    state = modified & head
    local = modified - state
    if isinstance(node, gast.For):
        target = activity.expression_scope(node.target).kills
        state |= target & anno.get(node, Anno.LIVE_OUT) & locals_
        local -= target
    carried = tuple(sorted(state))
    return BlockState(carried, carried, tuple(sorted(local)))
