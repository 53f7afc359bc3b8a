"""Stateful objects under staged control flow: Flax NNX modules and variables.

A staged loop body or branch is traced inside ``lax.while_loop``/``scan``/
``cond``, so an update such as ``self.count[...] += 1`` made there cannot
simply write into the caller's object: the object was made outside, and the
traced values exist only inside. The rule is the one of ``flax.nnx``'s own
``nnx.while_loop`` and ``nnx.cond``:

* the NNX graph nodes a staged block can reach (the values it carries, and
  the objects its functions read from the enclosing function, such as
  ``self`` or a ``model`` local) are split into their state, which is
  carried through the staged block like any other variable;
* inside, the block runs on fresh objects merged from that state (the
  enclosing function's names point at them while it is traced), and their
  state after the block is its output;
* after the block, the caller's own objects are updated in place with the
  final state: the same objects, never copies.

A block that replaces such an object by another, or changes its structure
(adds a submodule or a variable), cannot be written back and raises
``LoopStateError``/``BranchError``. Without Flax imported, nothing here runs.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import jax

from autograph import errors

from ..core.constructs import Construct
from ..core.values import closure_cells

OBJECTS = errors.OBJECTS  # the label of the lifted state among the carried names


class _Node:
    """A stand-in for graph node ``k`` in carried state: a static, hashable value."""

    __slots__ = ("k",)

    def __init__(self, k: int):
        self.k = k

    def __eq__(self, other):
        return isinstance(other, _Node) and other.k == self.k

    def __hash__(self):
        return hash((_Node, self.k))

    def __repr__(self):
        return f"<object {self.k}>"


def _nnx():
    return sys.modules.get("flax.nnx")


_SCALARS = (int, float, bool, complex, str, bytes, type(None))


class Lifted:
    """The graph nodes a staged block reaches, lifted into its carried state."""

    def __init__(self, nnx, nodes, cells, construct: Construct):
        self.nnx = nnx
        self.nodes = nodes              # the caller's objects, in a fixed order
        self.cells = cells              # (cell, k): closure cells that hold node k
        self.construct = construct
        self.graphdef, state = nnx.split(tuple(nodes))
        # carried as plain arrays: Variables rebuilt from them inside the block
        # belong to its trace, so Flax lets the block update them
        # annotated: jaxlib ships no stubs, and mypy would read PyTreeDef as an unknown type
        self.treedef: jax.tree_util.PyTreeDef
        leaves, self.treedef = jax.tree_util.tree_flatten(state)
        self.state = tuple(leaves)
        self.changed: set[int] = set()  # positions of the leaves a block function sets

    def _state(self, leaves):
        return jax.tree_util.tree_unflatten(self.treedef, list(leaves))

    def _leaves(self, state) -> tuple:
        leaves, treedef = jax.tree_util.tree_flatten(state)
        if treedef != self.treedef:
            raise self._error("changes the structure of an object it updates (a variable's "
                              "value becomes a different kind of tree)",
                              f"keep each variable's structure the same in the {self.construct}")
        return tuple(leaves)

    # -- the carried state ----------------------------------------------------

    def tokens(self, values) -> tuple:
        """``values`` with each lifted node replaced by its static stand-in."""
        ids = {id(n): k for k, n in enumerate(self.nodes)}
        return tuple(_Node(ids[id(v)]) if id(v) in ids else v for v in values)

    def finish(self, values) -> tuple:
        """The final state: nodes updated in place; stand-ins become the nodes again."""
        *user, state = values
        self.nnx.update(tuple(self.nodes), self._changed_only(self._state(state)))
        return tuple(self.nodes[v.k] if isinstance(v, _Node) else v for v in user)

    def _changed_only(self, state):
        """``state`` less the variables no block function set: writing one back would be
        a mutation Flax refuses where the caller's object belongs to an outer trace (a
        module read, never updated, by a loop under ``jax.vmap``)."""
        if len(self.changed) == len(self.state):
            return state
        keep, start = set(), 0
        for var in jax.tree_util.tree_leaves(state, is_leaf=self._is_variable):
            n = len(jax.tree_util.tree_leaves(var))
            if not self.changed.isdisjoint(range(start, start + n)):
                keep.add(id(var))
            start += n
        return self.nnx.filter_state(state, lambda path, var: id(var) in keep)

    def _is_variable(self, value) -> bool:
        return isinstance(value, self.nnx.Variable)

    # -- the functions of the block ---------------------------------------------

    def wrap(self, fn: Callable | None, *, leading: int = 0, returns_state: bool = True,
             n_out: int | None = None):
        """``fn`` taking (and, with ``returns_state``, returning) the lifted state last.

        ``leading`` arguments (a loop item) come before the state. ``fn=None``
        (an `if` without `else`) returns its first ``n_out`` arguments.
        """

        def run(*args):
            lead, (*user, state) = args[:leading], args[leading:]
            fresh = self.nnx.merge(self.graphdef, self._state(state))
            saved = [(cell, cell.cell_contents) for cell, _ in self.cells]
            for cell, k in self.cells:
                cell.cell_contents = fresh[k]
            try:
                user = [fresh[v.k] if isinstance(v, _Node) else v for v in user]
                out = tuple(user[:n_out]) if fn is None else fn(*lead, *user)
                if not returns_state:
                    return out
                out = self._tokens_out(tuple(out), fresh)
                graphdef, new_state = self.nnx.split(tuple(fresh))
            finally:
                for cell, value in saved:
                    cell.cell_contents = value
            if graphdef != self.graphdef:
                raise self._error("changes the structure of an object it updates (a "
                                  "submodule or a variable is added, removed or replaced)",
                                  "create every submodule and variable before the "
                                  f"{self.construct}")
            new = self._leaves(new_state)
            self.changed.update(i for i, (a, b) in enumerate(zip(state, new)) if a is not b)
            return out + (new,)

        return run

    def _tokens_out(self, out, fresh):
        ids = {id(n): k for k, n in enumerate(fresh)}
        originals = {id(n) for n in self.nodes}
        result = []
        for v in out:
            if id(v) in ids:
                result.append(_Node(ids[id(v)]))
            elif id(v) in originals or (not isinstance(v, _SCALARS) and _is_node(self.nnx, v)):
                raise self._error("binds a name to a different Flax object than it had",
                                  "update the object's variables in place instead of "
                                  "replacing the object")
            else:
                result.append(v)
        return tuple(result)

    def _error(self, observed: str, fix: str):
        cls = self.construct.error
        return cls(f"a staged {self.construct} can update Flax objects only in place",
                   observed=f"the {self.construct} {observed}", fix=fix)


def _is_node(nnx, value) -> bool:
    try:
        return bool(nnx.graph.is_graph_node(value))
    except Exception:  # noqa: BLE001 - an object Flax cannot inspect is not one of its nodes
        return False


def lift(state, fns, construct: Construct) -> Lifted | None:
    """The Flax graph nodes ``state`` and ``fns``' closures reach, or None (the common case)."""
    nnx = _nnx()
    if nnx is None:
        return None
    nodes: list = []
    index: dict[int, int] = {}  # id of a node -> its position in nodes
    cells: list[tuple[Any, int]] = []

    def add(obj) -> int:
        k = index.get(id(obj))
        if k is None:
            k = index[id(obj)] = len(nodes)
            nodes.append(obj)
        return k

    for v in state:
        if not isinstance(v, _SCALARS) and _is_node(nnx, v):
            add(v)
    # also the closures of the functions those read: an unrolled loop's later
    # iterations are staged branches that call its body from a wrapper
    for cell in closure_cells(fns):
        try:
            v = cell.cell_contents
        except ValueError:  # an empty cell: a name not assigned yet
            continue
        if (not isinstance(v, _SCALARS) and _is_node(nnx, v)
                and all(c is not cell for c, _ in cells)):
            cells.append((cell, add(v)))
    if not nodes:
        return None
    return Lifted(nnx, nodes, cells, construct)


def has_graph_nodes(args, kwargs) -> bool:
    """Whether Flax NNX objects are among ``args`` and ``kwargs`` (top level or in containers)."""
    nnx = _nnx()
    if nnx is None:
        return False
    for v in (*args, *kwargs.values()):
        if isinstance(v, _SCALARS) or isinstance(v, jax.Array):
            continue
        if _is_node(nnx, v) or (isinstance(v, (list, tuple, dict)) and any(
                _is_node(nnx, leaf) for leaf in jax.tree_util.tree_leaves(
                    v, is_leaf=lambda x: _is_node(nnx, x)))):
            return True
    return False


class _Watch:
    """The values of the NNX variables a call is handed, to tell if the call changed them."""

    def __init__(self, variables):
        self.before = [(v, v.get_raw_value()) for v in variables]

    def changed(self) -> bool:
        return any(v.get_raw_value() is not raw for v, raw in self.before)


def watch_copies(args, kwargs, caller: str) -> _Watch | None:
    """A watch on the NNX variables among ``args`` and ``kwargs`` when a JAX transformation
    (``caller``, the module that called) hands them in: ``jax.jit`` flattens NNX objects
    like any pytree, so the function is given copies, and what it changes in them is
    lost. None in every other case (at once where Flax is not imported)."""
    nnx = _nnx()
    if nnx is None or not caller.startswith("jax.") or not has_graph_nodes(args, kwargs):
        return None
    variables = [v for value in (*args, *kwargs.values())
                 for _, v in nnx.iter_graph(value) if isinstance(v, nnx.Variable)]
    return _Watch(variables) if variables else None
