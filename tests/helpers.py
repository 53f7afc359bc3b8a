"""Shared checks: golden source and behavioural equivalence with plain Python."""

from __future__ import annotations

import textwrap
import types

import jax
import jax.numpy as jnp
import numpy as np

import autograph
from autograph import pipeline


def converted(src: str, passes=None) -> str:
    """The converted source of the function defined in ``src``."""
    src = textwrap.dedent(src)
    kwargs = {} if passes is None else {"passes": passes}
    return pipeline.convert_source(src, "model.py", **kwargs)


def assert_golden(src: str, expected: str, passes=None) -> None:
    """``src`` converts to exactly ``expected``, within the size budget."""
    got = converted(src, passes)
    expected = textwrap.dedent(expected).strip("\n") + "\n"
    assert got == expected, "\n--- got ---\n" + got + "--- expected ---\n" + expected
    n_src = len(textwrap.dedent(src).strip("\n").splitlines())
    n_out = len(got.strip("\n").splitlines())
    assert n_out <= 2 * n_src + 4, f"{n_out} generated lines for {n_src} source lines"


def _to_jax(x):
    return jax.tree_util.tree_map(
        lambda a: jnp.asarray(a) if isinstance(a, (np.ndarray, np.generic)) else a, x)


def _close(a, b, rtol):
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    assert ta == tb, f"structures differ: {ta} vs {tb}"
    for x, y in zip(la, lb):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=rtol, atol=1e-6)


def check_equivalent(fn, *arg_sets, rtol=1e-5, static_argnums=()):
    """Each argument set gives the plain-Python result, converted and jitted.

    Arguments are NumPy values for the plain run and for ``convert(fn)``
    (which must give exactly the Python result), and JAX arrays for
    ``jax.jit(convert(fn))``.
    """
    cf = autograph.convert(fn)
    jf = jax.jit(cf, static_argnums=static_argnums)
    for args in arg_sets:
        want = fn(*args)
        _close(cf(*args), want, rtol)
        jargs = [a if i in static_argnums else _to_jax(a) for i, a in enumerate(args)]
        _close(jf(*jargs), want, rtol)


def with_globals(fn, **replacements):
    """``fn`` running with some of its module globals replaced (e.g. by converted callees):
    the meaning of a program that hands those callees to a JAX transformation."""
    g = {**fn.__globals__, **replacements}
    return types.FunctionType(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)


def primitives(jaxpr) -> set:
    """Names of the primitives in ``jaxpr`` and in every jaxpr nested in it."""
    names = set()

    def walk(jx):
        for eqn in jx.eqns:
            names.add(eqn.primitive.name)
            for v in eqn.params.values():
                subs = v if isinstance(v, (tuple, list)) else [v]
                for s in subs:
                    if hasattr(s, "jaxpr"):
                        walk(s.jaxpr if hasattr(s.jaxpr, "eqns") else s.jaxpr.jaxpr)
                    elif hasattr(s, "eqns"):
                        walk(s)

    walk(jaxpr.jaxpr)
    return names
