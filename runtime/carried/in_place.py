"""Lists and dicts a staged block updates in place: shared, copied and written back.

Python updates a list or dict in place, and every name for it sees the update:
an alias (``b = a``), a nesting (``b = [a]``), a caller's name for an argument.
Staged code works on copies: a loop carries the contents as arrays, and each
branch of a staged `if` runs on its own copy. To keep Python's meaning:

* a branch's copies (``fresh_copies``) share as the originals do: two names
  for one list stay one list;
* a loop carries a list or dict that two places in its state share once
  (``InPlace``): the later places stand for it as a ``Shared``, so that updates
  through either name compose as in Python;
* after the block, each list or dict it handed back as the very object it was
  given (``kept_paths``) gets the block's contents (``write_back``), nested ones
  included, and is handed on instead of a copy.

A place in the state is a *path*: the position of a variable, then list
indices, dict keys and tuple indices, as in ``(1, 'hist', 0)``.
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import jax
import numpy as np

from autograph import errors

from ..core import key_order
from ..core.constructs import Construct
from ..core.values import is_undefined

Path = tuple
Pairs = frozenset  # of (path out, path in): a container handed back as the very object


def mutable_node(x) -> bool:
    """Whether ``x`` is a list or dict that JAX flattens as a pytree node (a plain
    list or dict, ``OrderedDict``, ``defaultdict``): staged code copies it."""
    t = type(x)
    if t is list or t is dict:
        return True
    if not isinstance(x, (list, dict)):
        return False
    node = _NODE_TYPES.get(t)
    if node is None:
        leaves = jax.tree_util.tree_leaves(x, is_leaf=lambda y: y is not x)
        node = _NODE_TYPES[t] = not (len(leaves) == 1 and leaves[0] is x)
    return node


_NODE_TYPES: dict[type, bool] = {}


def _children(x) -> Iterable[tuple[Any, Any]]:
    """``(key, child)`` of a list, dict or tuple, without calling overridden methods."""
    if isinstance(x, list):
        return enumerate(list.__iter__(x))
    if isinstance(x, dict):
        return list(x.items())
    return enumerate(x)


def _walks_into(x) -> bool:
    return type(x) is tuple or isinstance(x, tuple) and hasattr(x, "_fields") or mutable_node(x)


def _rebuilt(x, children: list):
    """A container like ``x`` holding ``children`` (values in ``x``'s order)."""
    if isinstance(x, list):
        return list(children)
    if isinstance(x, dict):
        new = x.copy()
        for k, v in zip(list(x), children):
            dict.__setitem__(new, k, v)
        return new
    return type(x)(*children) if hasattr(x, "_fields") else tuple(children)


def _at(values: Sequence[Any], path: Path):
    node = values[path[0]]
    for key in path[1:]:
        node = list.__getitem__(node, key) if isinstance(node, list) else node[key]
    return node


def nodes(values: Sequence[Any]) -> dict[int, tuple[Path, Any]]:
    """Each list and dict in ``values``, by id: its first path, and the object itself
    (held, so that its id stays its own while the map lives)."""
    found: dict[int, tuple[Path, Any]] = {}

    def walk(x, path):
        if not _walks_into(x):
            return
        if mutable_node(x):
            if id(x) in found:
                return
            found[id(x)] = (path, x)
        for k, child in _children(x):
            walk(child, path + (k,))

    for i, v in enumerate(values):
        walk(v, (i,))
    return found


def kept_paths(origin: dict[int, tuple[Path, Any]], out: Sequence[Any],
               same_place: bool = False) -> Pairs:
    """``(path out, path in)`` for each list or dict in ``out`` that is an object of
    ``origin`` (see ``nodes``): handed back as the very object, updated in place if at
    all. With ``same_place``, only those handed back where they were given (a loop
    body: an object that moves would be another one after two iterations)."""
    pairs = set()
    for path, node in _every_path(out):
        given = origin.get(id(node))
        if given is not None and given[1] is node and (not same_place or given[0] == path):
            pairs.add((path, given[0]))
    return frozenset(pairs)


_MOST_PATHS = 10_000  # places looked at: one list nested in itself many times has more


def _every_path(values: Sequence[Any]) -> list[tuple[Path, Any]]:
    """``(path, object)`` for each list and dict in ``values`` at each of its paths: one
    held in two places (``{"enc": emb, "dec": emb}``) is kept at both, so that both come
    out as the one object, as in Python."""
    found: list[tuple[Path, Any]] = []
    seen: set[int] = set()  # (a list that holds itself is walked into once)

    def walk(x, path):
        if not _walks_into(x) or len(found) > _MOST_PATHS:
            return  # (past that many, a later place gets a copy, as it did before)
        if mutable_node(x):
            found.append((path, x))
            if id(x) in seen:
                return
            seen.add(id(x))
        for k, child in _children(x):
            walk(child, path + (k,))
        if mutable_node(x):
            seen.discard(id(x))

    for i, v in enumerate(values):
        walk(v, (i,))
    return found


def updated_paths(kept: Iterable[tuple], before: Sequence[Any], out: Sequence[Any]) -> Pairs:
    """Those of the ``kept`` pairs whose list or dict (at its path in ``out``) no longer
    holds what the original (at its path in ``before``) holds: updated in place."""
    return frozenset((p, q) for p, q in kept if not same_contents(_at(out, p), _at(before, q)))


def one_sided(kept_a: Iterable[tuple], updated_a: Iterable[tuple], kept_b: Iterable[tuple],
              updated_b: Iterable[tuple]) -> tuple | None:
    """A ``(path out, path in)`` pair that one branch updates in place while the other
    does not hand back that object there (it rebinds the name), or None.

    Python leaves the original updated after one branch and untouched after the
    other, and the name bound to it after one branch only: no staged output says
    both."""
    for updated, other in ((updated_a, set(kept_b)), (updated_b, set(kept_a))):
        for pair in sorted(updated, key=repr):
            if pair not in other:
                return pair
    return None


def fresh_copies(values: Sequence[Any]) -> tuple:
    """``values`` with each list and dict copied (nested ones too), sharing kept: a
    list two names hold is one copy that both hold. Other values stay themselves."""
    return _copied(values, {})


def _copied(values: Sequence[Any], memo: dict[int, Any]) -> tuple:
    """``fresh_copies``, with ``memo`` filled with each list's and dict's copy, by the
    original's id."""

    def copied(x):
        if not _walks_into(x):
            return x
        if mutable_node(x):
            if id(x) in memo:
                return memo[id(x)]
            new: Any = [] if isinstance(x, list) else copy.copy(x)
            memo[id(x)] = new
            if isinstance(x, list):
                new.extend(copied(c) for c in list.__iter__(x))
            else:
                for k, c in list(x.items()):
                    dict.__setitem__(new, k, copied(c))
            return new
        children = [copied(c) for _, c in _children(x)]
        return x if all(a is b for a, (_, b) in zip(children, _children(x))) else _rebuilt(
            x, children)

    return tuple(copied(v) for v in values)


def run_in_place(fn: Callable[..., Iterable[Any]], values: Sequence[Any]
                 ) -> tuple[tuple, dict[int, tuple[Path, Any]]]:
    """Runs ``fn(*values)`` on the very lists and dicts of ``values``, then puts back what
    they held: as Python runs a branch, where every name for a list (``b = a``, a closure
    reading ``a``, a list holding it) sees what the branch does to it.

    Returns ``fn``'s outputs with each list and dict in them copied (see
    ``fresh_copies``), so that they hold what ``fn`` left there while the lists and
    dicts of ``values`` hold again what they held before; and, as ``nodes`` gives
    them, the copies of those of ``values`` (each under its id, with its original's
    first path in ``values``), for ``kept_paths``.
    """
    found = nodes(values)
    held = [(x, _items(x)) for _, x in found.values()]
    memo: dict[int, Any] = {}
    try:
        out = _copied(tuple(fn(*values)), memo)
    finally:
        for x, items in held:
            _put_back(x, items)
    return out, {id(memo[key]): (path, memo[key]) for key, (path, _) in found.items()
                 if key in memo}


def _items(x) -> list:
    """What the list or dict ``x`` holds: its items, or its ``(key, value)`` pairs."""
    return list(list.__iter__(x)) if isinstance(x, list) else list(x.items())


def _put_back(x, items: list) -> None:
    """Makes the list or dict ``x`` hold ``items`` (see ``_items``) again."""
    if isinstance(x, list):
        if len(x) != len(items) or any(a is not b for a, b in zip(list.__iter__(x), items)):
            list.__setitem__(x, slice(None), items)
        return
    now = list(x.items())
    if len(now) != len(items) or any(k is not k0 or v is not v0
                                     for (k, v), (k0, v0) in zip(now, items)):
        x.clear()
        for k, v in items:
            x[k] = v


def same_contents(a, b) -> bool:
    """Whether ``a`` (a copy) holds what ``b`` holds: the same structure of lists, dicts
    and tuples, and the very same objects in it."""
    if a is b:
        return True
    if not (_walks_into(a) and _walks_into(b)) or _kind(a) != _kind(b):
        return False
    ca, cb = list(_children(a)), list(_children(b))
    return len(ca) == len(cb) and all(
        ka == kb and same_contents(x, y) for (ka, x), (kb, y) in zip(ca, cb))


def _kind(x) -> type:
    """``x``'s type as far as its contents go: list (a tracked list's copy is a plain
    one), dict, or the tuple's type."""
    return list if isinstance(x, list) else dict if isinstance(x, dict) else type(x)


def write_back(before: Sequence[Any], after: Sequence[Any], kept: Iterable[tuple]) -> tuple:
    """``after`` with the lists and dicts a block kept (``kept``: ``(path out, path
    in)`` pairs, see ``kept_paths``) written back into the objects of ``before``.

    A staged loop carries their contents, and each branch of a staged `if`
    works on its own copy, so they come out as new objects. The contents of
    each one the block kept go back into the object at its path in
    ``before``, which is handed on instead: an alias or a caller's name for
    it, or a list holding it, sees what Python would show.
    """
    sources = dict(kept)
    if not sources:
        return tuple(after)
    done: dict[int, Any] = {}

    def back(x, path):
        if not _walks_into(x):
            return x
        if id(x) in done:
            return done[id(x)]
        pairs = list(_children(x))
        children = [back(c, path + (k,)) for k, c in pairs]
        source = sources.get(path)
        target = None if source is None else _at(before, source)
        if target is not None and (isinstance(target, list) and isinstance(x, list) or
                                   isinstance(target, dict) and isinstance(x, dict)):
            _fill(target, [k for k, _ in pairs], children)
            result = target
        elif mutable_node(x):
            _fill(x, [k for k, _ in pairs], children)
            result = x
        else:
            same = all(a is b for a, (_, b) in zip(children, pairs))
            result = x if same else _rebuilt(x, children)
        done[id(x)] = result
        return result

    return tuple(back(v, (i,)) for i, v in enumerate(after))


def _fill(target, keys: list, children: list) -> None:
    """Puts ``children`` (under ``keys``) into the list or dict ``target`` in place."""
    if isinstance(target, list):
        if len(target) != len(children) or any(
                a is not b for a, b in zip(list.__iter__(target), children)):
            list.__setitem__(target, slice(None), children)
        return
    if list(target) == keys:
        for k, v in zip(keys, children):
            if target[k] is not v:
                target[k] = v
        return
    target.clear()  # other keys, or the same in another order: the block's order
    for k, v in zip(keys, children):
        target[k] = v


class Shared:
    """Stands, in a loop's carried state, for the list or dict at ``path`` (the place
    where the state holds it first): carried once, handed to the body as one object."""

    __slots__ = ("path",)

    def __init__(self, path: Path):
        self.path = path

    def __eq__(self, other):
        return isinstance(other, Shared) and other.path == self.path

    def __hash__(self):
        return hash((Shared, self.path))

    def __repr__(self):
        return f"Shared({self.path!r})"


def fold(values: Sequence[Any]) -> tuple[tuple, tuple]:
    """``values`` with each list or dict met a second time replaced by a ``Shared``,
    and the sharing as ``((path, first path), ...)``; ``values`` itself if none is."""
    first: dict[int, Path] = {}
    sharing: list[tuple[Path, Path]] = []

    def walk(x, path):
        if not _walks_into(x):
            return x
        if mutable_node(x):
            if id(x) in first:
                sharing.append((path, first[id(x)]))
                return Shared(first[id(x)])
            first[id(x)] = path
        pairs = list(_children(x))
        children = [walk(c, path + (k,)) for k, c in pairs]
        if all(a is b for a, (_, b) in zip(children, pairs)):
            return x
        return _rebuilt(x, children)

    out = tuple(walk(v, (i,)) for i, v in enumerate(values))
    return (out, tuple(sharing)) if sharing else (tuple(values), ())


def unfold(values: Sequence[Any], sharing: tuple) -> tuple:
    """``values`` (fresh objects, as a carry rebuilds them) with each ``Shared``
    replaced by the object at its path: what ``fold`` took apart, shared again."""
    if not sharing:
        return tuple(values)
    out = list(values)

    def walk(x):
        if isinstance(x, Shared):
            return _at(out, x.path)
        if not _walks_into(x):
            return x
        pairs = list(_children(x))
        children = [walk(c) for _, c in pairs]
        if isinstance(x, list):
            for j, (a, (_, b)) in enumerate(zip(children, pairs)):
                if a is not b:
                    list.__setitem__(x, j, a)
            return x
        if isinstance(x, dict):
            for a, (k, b) in zip(children, pairs):
                if a is not b:
                    dict.__setitem__(x, k, a)
            return x
        return x if all(a is b for a, (_, b) in zip(children, pairs)) else _rebuilt(x, children)

    for i in range(len(out)):
        out[i] = walk(out[i])
    return tuple(out)


class InPlace:
    """A staged loop's state with its shared lists and dicts carried once, and the
    ones its body updates in place written back after the loop.

    ``state`` is what the loop carries (``values`` folded, see ``fold``); the
    loop's functions, wrapped by ``wrap``, see the state unfolded, so ``a``
    and ``b = a`` are one object in the body as before the loop; ``finish``
    gives the loop's result as Python would (see ``write_back``). A body that
    makes two names share a list they did not share before the loop (or stop
    sharing one) cannot be carried so: ``LoopStateError`` names them.
    """

    def __init__(self, values: Sequence[Any], names: Sequence[str], loop: Construct):
        self.before = tuple(values)
        self.names, self.loop = tuple(names), loop
        self.state, self.sharing = fold(self.before)
        self.kept: Pairs = frozenset()
        # per leaf of the state, the name of the NumPy array it is (None for other leaves)
        self.numpy = self._numpy_leaves()

    def _numpy_leaves(self) -> list[str | None]:
        out: list[str | None] = []
        for i, value in enumerate(self.before):
            name = self.names[i] if i < len(self.names) else f"<{i}>"
            out.extend(name if isinstance(leaf, np.ndarray) and leaf.flags.writeable else None
                       for leaf in key_order.leaves(value, is_undefined))
        return out

    def wrap(self, fn: Callable | None, leading: int = 0,
             returns_state: bool = True) -> Callable | None:
        """``fn`` (taking ``leading`` arguments, then the state) on the unfolded state;
        with ``returns_state``, its new state folded back."""
        if fn is None:
            return None

        def run(*args):
            head, state = args[:leading], unfold(args[leading:], self.sharing)
            if not returns_state:
                return fn(*head, *state)
            origin = nodes(state)
            with self._numpy_standins(state):
                out = tuple(fn(*head, *state))
            self.kept = kept_paths(origin, out, same_place=True)
            folded, sharing = fold(out)
            if sharing != self.sharing:
                raise self._sharing_error(sharing)
            return folded
        return run

    def _numpy_standins(self, state):
        """Marks the traced values that stand for the NumPy arrays of the state (see
        ``refuse_numpy_update``) while the body runs."""
        standins = dict(_NUMPY_STANDINS.get() or {})
        if any(self.numpy):
            leaves = key_order.leaves(state, is_undefined)
            if len(leaves) == len(self.numpy):
                for leaf, name in zip(leaves, self.numpy):
                    if name is not None:
                        standins[id(leaf)] = (leaf, name, self.loop)
        return _marked(standins)

    def finish(self, after: Sequence[Any]) -> tuple:
        """The loop's final state (as the carry gives it), shared and written back."""
        return write_back(self.before, unfold(after, self.sharing), self.kept)

    def _sharing_error(self, sharing) -> errors.LoopStateError:
        was, now = set(self.sharing), set(sharing)
        path, first = sorted(was ^ now, key=repr)[0]
        a, b = self._label(path), self._label(first)
        if (path, first) in was:
            observed = f"{a} and {b} are one object before the loop but two after one iteration"
        else:
            observed = f"{a} and {b} are two objects before the loop but one after one iteration"
        return errors.LoopStateError(
            f"a list or dict shared by two names in a staged {self.loop} must stay shared",
            observed=observed + "; staged, the loop carries each list once",
            variable=self.names[path[0]] if path[0] < len(self.names) else None,
            fix="copy the list before the loop (`b = list(a)`) if the names are meant to be "
                "separate, or assign to one name only")

    def _label(self, path: Path) -> str:
        name = self.names[path[0]] if path[0] < len(self.names) else f"<{path[0]}>"
        return "`" + name + "".join(f"[{k!r}]" for k in path[1:]) + "`"


_NUMPY_STANDINS: contextvars.ContextVar[dict | None] = contextvars.ContextVar(
    "numpy_standins", default=None)


@contextlib.contextmanager
def _marked(standins: dict) -> Iterator[None]:
    """``_NUMPY_STANDINS`` set to ``standins`` for the duration of a ``with`` block."""
    token = _NUMPY_STANDINS.set(standins)
    try:
        yield
    finally:
        _NUMPY_STANDINS.reset(token)


def refuse_numpy_update(obj) -> None:
    """Raises where ``obj`` (an item assignment's target) stands for a NumPy array a
    staged loop carries: Python updates that array in place, so that every name for it
    sees the update, where the staged loop carries it as a new JAX array.

    Raises:
      LoopStateError: ``obj`` is such a stand-in (a loop over a static range then
        runs as Python, as under ``jax.jit``).
    """
    hit = (_NUMPY_STANDINS.get() or {}).get(id(obj))
    if hit is None or hit[0] is not obj:
        return
    _, name, loop = hit
    raise errors.LoopStateError(
        f"a NumPy array carried by a staged {loop} cannot be updated in place",
        observed=f"the body assigns into the NumPy array `{name}`, which Python updates in "
                 f"place (every name for it sees the update); staged, the loop carries it as "
                 f"a JAX array",
        variable=name,
        fix=f"make it a JAX array before the loop (`{name} = jnp.asarray({name})`), where "
            f"item assignment makes a new array")


class BranchInputs:
    """The lists and dicts a staged `if` hands its branches but not back.

    A branch may update one in place: ``a[0] += 1`` where only ``b = a`` is read
    after the `if`, or a helper filling a list it is given. Each branch runs on
    the original, which holds again what it held once the branch has traced
    (``run_in_place``), so such an update must come out of the `if` as one more
    output, to be written into the original. Which ones a branch changes is
    known only once it has run: ``start(False)`` makes each branch hand back
    the copies it changed (None for the others, which adds no output); where
    the two branches changed the same ones, that is enough. Otherwise the
    `if` is staged again after ``start(True)``: both branches hand back every
    input either changed (a branch that did not, the original). ``finish``
    writes them back.
    """

    def __init__(self, init: Sequence[Any], n: int, fn: Callable | None):
        self.init, self.n = tuple(init), n
        self.positions = [j for j in range(n, len(init)) if _holds_mutable(init[j])]
        code = getattr(fn, "__code__", None)
        params = code.co_varnames[:code.co_argcount] if code is not None else ()
        self.labels = [params[j] if j < len(params) else f"<input {j}>" for j in range(len(init))]
        self.handed: list[int] = []   # positions handed back, in this order, after the outputs
        self.order: list[int] = []    # the positions of `init` in the order the `if` gets them
        self.forced = False
        self.traces: list[tuple[frozenset, Pairs]] = []  # per branch: changed, kept pairs

    def start(self, forced: bool) -> tuple:
        """Starts a staging of the `if`: the inputs in the order it gets them."""
        self.handed = sorted(self.changed()) if forced else list(self.positions)
        self.forced, self.traces = forced, []
        rest = [j for j in range(self.n, len(self.init)) if j not in self.handed]
        self.order = list(range(self.n)) + self.handed + rest
        return tuple(self.init[j] for j in self.order)

    def changed(self) -> set[int]:
        return set().union(*(changed for changed, _ in self.traces))

    def agree(self) -> bool:
        """Whether the branches traced so far changed the same inputs."""
        return len({changed for changed, _ in self.traces}) <= 1

    def labels_handed(self) -> tuple[str, ...]:
        return tuple(self.labels[j] for j in self.handed)

    def wrap(self, fn: Callable | None) -> Callable:
        """``fn`` on the inputs in the caller's order, handing back what ``start`` says."""
        def run(*args):
            fresh: list[Any] = [None] * len(args)
            for k, j in enumerate(self.order):
                fresh[j] = args[k]
            origin = nodes(fresh)
            before = fresh_copies(fresh)  # `fn` may update the inputs themselves
            out = tuple(fn(*fresh)) if fn is not None else tuple(fresh[:self.n])
            changed = frozenset(j for j in self.positions
                                if not same_contents(fresh[j], before[j]))
            probe = [fresh[j] if j in self.positions else None for j in range(len(fresh))]
            self.traces.append((changed, kept_paths(origin, probe)))
            handed = tuple(fresh_copies([fresh[j]])[0] if j in changed  # the `if` writes back
                           else self.init[j] if self.forced else None  # only these copies
                           for j in self.handed)
            return out + handed
        return run

    def finish(self, out: Sequence[Any]) -> tuple:
        """The `if`'s outputs, once the inputs it hands back are written back."""
        changed = self.changed()
        if changed:
            after: list[Any] = [None] * len(self.init)
            for e, j in enumerate(self.handed):
                if j in changed:
                    after[j] = out[self.n + e]
            kept = set(frozenset.intersection(*(pairs for _, pairs in self.traces)))
            kept.update(((j,), (j,)) for j in changed)  # each branch was given it
            write_back(self.init, after, kept)
        return tuple(out[:self.n])


def _holds_mutable(x) -> bool:
    if mutable_node(x):
        return True
    return _walks_into(x) and any(_holds_mutable(c) for _, c in _children(x))
