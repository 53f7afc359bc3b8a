"""What ``autograph.function`` reads from the shardings it passes to ``jax.jit``.

* :func:`spans_devices`: whether ``in_shardings``/``out_shardings`` put the
  program on more than one device, where its ``print``, ``assert`` and
  ``raise`` run unordered (see :mod:`autograph.runtime.core.host_callbacks`).
* :func:`without_static`: ``in_shardings`` for a call some of whose arguments
  are Python values. ``jax.jit`` matches ``in_shardings`` against the arguments
  that are not static; ``autograph.function`` makes a Python number static (it
  keys the cache by its value), so its entry, written as under ``jax.jit``
  (``lr=0.5`` with a replicated sharding), is left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import jax


def _shardings(value) -> list[Any]:
    return jax.tree_util.tree_leaves(
        value, is_leaf=lambda s: isinstance(s, (jax.sharding.Sharding,
                                                jax.sharding.PartitionSpec)))


def spans_devices(jit_kwargs: Mapping[str, Any]) -> bool:
    """Whether the given ``in_shardings`` or ``out_shardings`` name more than one device.

    A ``PartitionSpec`` names no devices of its own (the mesh in context does):
    that is found when the program is compiled.
    """
    for key in ("in_shardings", "out_shardings"):
        for s in _shardings(jit_kwargs.get(key)):
            if isinstance(s, jax.sharding.Sharding) and s.num_devices > 1:
                return True
    return False


def without_static(jit_kwargs: Mapping[str, Any], static: Iterable[int],
                   user_static: Iterable[int]) -> dict[str, Any]:
    """``jit_kwargs`` with the ``in_shardings`` entries of the arguments at ``static``
    (positions that ``autograph.function`` makes static) left out.

    ``in_shardings`` is given as under ``jax.jit``: one entry per positional
    argument not in ``user_static`` (the user's ``static_argnums``). A single
    sharding for all arguments stays as it is.

    >>> from jax.sharding import PartitionSpec as P
    >>> without_static({"in_shardings": (P("data"), P())}, static=[1], user_static=[])
    {'in_shardings': (P('data',),)}
    """
    out = dict(jit_kwargs)
    specs = out.get("in_shardings")
    if not isinstance(specs, (tuple, list)):
        return out  # one sharding for all the arguments
    user = sorted(set(user_static))
    drop = {p - sum(u < p for u in user) for p in set(static) - set(user)}
    out["in_shardings"] = tuple(s for i, s in enumerate(specs) if i not in drop)
    return out
