"""Lists a function only appends to: their contents are never read.

A solver that keeps every iterate in a history list it never returns::

    def solve(x):
        hist = []                   # a new list, bound at the top level
        while x > 1.0:
            x = x / 2
            hist.append(x)          # the only use: appended to, result unused
        return x

Nothing can observe ``hist``: it is made by a list display in the function,
every read of the name is the receiver of ``.append(...)`` or ``.extend(...)``
as a statement of its own, no other function (nested function, lambda,
comprehension, class body) mentions it, and the function does not reach its
frame (``locals()``, ``vars()``, ``eval``, ``exec``, ``sys._getframe``, a
traceback's ``tb_frame``, ``gc.get_referrers``, ...). Lowered blocks need not
carry such a list: a staged loop would otherwise have to carry a list that
grows, which cannot be staged, while the list is dead whatever it holds. The
appends still run (their arguments are evaluated as before); staged, they add
values nobody reads.

Any other use of the name keeps it an ordinary variable: ``return hist``,
``hist[-1]``, ``len(hist)``, ``h = hist``, ``hist += [x]``, an assignment
inside a block, ``del hist``, ``f(hist)``.
"""

from __future__ import annotations

import gast

from autograph.analysis import activity

# the methods that only add to a list, called as a statement of their own
_APPENDS = frozenset({"append", "extend"})
# calls that can reach the function's frame, and so any local
_FRAME_READERS = frozenset({"locals", "vars", "eval", "exec"})
# names that reach frames, or the objects that refer to a value: as an attribute
# (`sys._getframe`, `e.__traceback__.tb_frame`), a name or a keyword argument
_FRAME_ATTRIBUTES = frozenset({
    "_getframe", "currentframe", "stack", "trace", "f_locals", "f_back", "tb_frame",
    "gi_frame", "cr_frame", "ag_frame", "getargvalues", "getouterframes", "getinnerframes",
    "walk_tb", "walk_stack", "capture_locals", "get_referrers", "settrace", "setprofile",
    "exc_info", "exception"})
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef,
           gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def _fresh_list(value) -> bool:
    return isinstance(value, (gast.List, gast.ListComp)) and not any(
        isinstance(e, gast.Starred) for e in getattr(value, "elts", ()))


def _top_level_binding(stmt) -> str | None:
    """The name a top-level ``name = [...]`` binds to a new list, or None."""
    if isinstance(stmt, gast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
    elif isinstance(stmt, gast.AnnAssign) and stmt.value is not None:
        target, value = stmt.target, stmt.value
    else:
        return None
    return target.id if isinstance(target, gast.Name) and _fresh_list(value) else None


def _append_receiver(stmt) -> gast.Name | None:
    """``hist`` in a statement ``hist.append(...)`` / ``hist.extend(...)``, or None."""
    call = stmt.value if isinstance(stmt, gast.Expr) else None
    if (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
            and call.func.attr in _APPENDS and isinstance(call.func.value, gast.Name)):
        return call.func.value
    return None


def write_only_lists(node: gast.FunctionDef) -> frozenset:
    """The local names of ``node`` bound only to new lists that are only appended to."""
    candidates = {name for s in node.body if (name := _top_level_binding(s)) is not None}
    candidates &= activity.function_locals(node) - activity.param_names(node.args)
    if not candidates:
        return frozenset()
    allowed = set()  # the Name nodes of the uses that keep a list write-only
    for s in node.body:
        if _top_level_binding(s) is not None:
            allowed.add(id(s.targets[0] if isinstance(s, gast.Assign) else s.target))
    for n in gast.walk(node):
        if isinstance(n, gast.stmt):
            receiver = _append_receiver(n)
            if receiver is not None:
                allowed.add(id(receiver))
    stack: list[tuple[gast.AST, bool]] = [(s, False) for s in node.body]
    while stack and candidates:
        child, nested = stack.pop()
        if isinstance(child, gast.Name):
            if child.id in candidates and (nested or id(child) not in allowed):
                candidates.discard(child.id)
            elif child.id in _FRAME_READERS or child.id in _FRAME_ATTRIBUTES:
                return frozenset()
            continue
        if (isinstance(child, gast.Attribute) and child.attr in _FRAME_ATTRIBUTES
                or isinstance(child, gast.keyword) and child.arg in _FRAME_ATTRIBUTES):
            return frozenset()
        if isinstance(child, (gast.Global, gast.Nonlocal)):
            candidates -= set(child.names)
            continue
        # bindings whose names are strings, not `Name` nodes: `import m as hist`,
        # `def hist(): ...`, a pattern's capture (`case [*hist]:`)
        if isinstance(child, (gast.Import, gast.ImportFrom)):
            candidates -= {(a.asname or a.name).split(".")[0] for a in child.names}
        elif isinstance(child, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            candidates.discard(child.name)
        elif isinstance(child, (gast.MatchAs, gast.MatchStar)) and child.name:
            candidates.discard(child.name)
        elif isinstance(child, gast.MatchMapping) and child.rest:
            candidates.discard(child.rest)
        inner = nested or isinstance(child, _SCOPES)
        activity.push_children(child, lambda c: stack.append((c, inner)))
    return frozenset(candidates)


def appended_in(block: gast.AST, write_only: frozenset) -> tuple[str, ...]:
    """The lists of ``write_only`` that ``block`` names (sorted): the ones it appends to."""
    if not write_only:
        return ()
    return tuple(sorted({n.id for n in gast.walk(block)
                         if isinstance(n, gast.Name) and n.id in write_only}))
