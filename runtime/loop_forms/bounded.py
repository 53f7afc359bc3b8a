"""Loops with a known most-iterations count that may stop early.

A staged ``for`` over a static sequence with ``break`` or ``return``, and a
``while`` with ``set_loop_options(maximum_iterations=N)`` or a counter that
bounds it, both run::

    k = 0
    while k < n and test(state):
        state = body(state, k)
        k += 1

Two forms give the same values:

* ``lax.while_loop``, which stops as soon as the test fails, but which
  reverse-mode differentiation (``jax.grad``) cannot transpose;
* a *bounded* form: ``lax.scan``\\ s nested a few levels deep, their sizes
  multiplying to ``n`` (1000 = 10 x 10 x 10), each step a ``lax.cond`` that
  skips its whole block once the test fails. It differentiates in reverse
  mode, and after an early exit it only pays a ``cond`` per skipped block.

Which is needed is only known after tracing (``jax.grad(jax.jit(f))`` traces
the loop before the gradient sees it), so the loop is a ``jax.custom_jvp``:
evaluated, it is the ``while_loop``; differentiated (forward or reverse), its
rule is the derivative of the bounded form. The test and the body run their
Python once, into jaxprs that both forms replay.
"""

from __future__ import annotations

import math

import jax
import jax.extend.core as jax_core
import jax.numpy as jnp
from jax import lax

from autograph import jax_internals

from ..core.jaxprs import trace_loop, without_consts

BASE = 16  # most steps in one level of the bounded form

__all__ = ["counted_loop", "level_sizes"]


def level_sizes(n: int, base: int = BASE) -> list[int]:
    """Sizes of the nested scans of the bounded form: product >= n, outermost first."""
    if n <= base:
        return [max(n, 1)]
    levels = math.ceil(math.log(n) / math.log(base) - 1e-9)
    inner = math.ceil(n ** (1.0 / levels) - 1e-9)
    sizes = [inner] * (levels - 1)
    sizes.insert(0, -(-n // inner ** (levels - 1)))
    return sizes


def counted_loop(test, body, arrays, n: int, stabilize=None, test_bounds: bool = False,
                 check=None):
    """Runs ``body`` while ``k < n and test(arrays)``, differentiably.

    Args:
      test: ``test(arrays) -> bool`` (a scalar, traced or not).
      body: ``body(arrays, k) -> arrays`` with the same avals; ``k`` is the
        int32 step index.
      arrays: the carried arrays (a list).
      n: the most steps, a Python int.
      stabilize: optional ``stabilize(out_avals) -> arrays or None``: given
        what one step of ``body`` produces, new initial arrays (promoted to
        the dtypes the body makes), or None when they already match.
      test_bounds: whether ``test`` itself fails after at most ``n`` steps (a
        counter the test compares, as ``while i < 10``); the ``while_loop``
        then needs no step count of its own.
      check: optional ``check(body_jaxpr)``, called once the body is traced
        (its inputs: the arrays, then ``k``); it may raise to refuse the loop.

    Returns:
      The final arrays, as a list.
    """
    arrays = list(arrays)
    if n <= 0:
        return arrays
    jax_internals.allow_stop_gradient_transpose()  # see there: vmap of the bounded form
    k_aval = jax.ShapeDtypeStruct((), jnp.int32)
    arrays, test_jaxpr, body_jaxpr = trace_loop(test, body, arrays, stabilize, k_aval)
    if check is not None:
        check(body_jaxpr)
    run_test = jax_core.jaxpr_as_fun(without_consts(test_jaxpr))
    run_body = jax_core.jaxpr_as_fun(without_consts(body_jaxpr))
    n_test = len(test_jaxpr.consts)

    def active(k, a, consts):
        return jnp.logical_and(k < n, run_test(*consts[:n_test], *a)[0])

    def step(s, consts):
        k, a = s
        return k + 1, list(run_body(*consts[n_test:], *a, k))

    def while_form(a, consts):
        if test_bounds:
            zero = jnp.int32(0)
            return list(lax.while_loop(lambda a: run_test(*consts[:n_test], *a)[0],
                                       lambda a: step((zero, a), consts)[1], list(a)))
        _, final = lax.while_loop(lambda s: active(s[0], s[1], consts),
                                  lambda s: step(s, consts), (jnp.int32(0), list(a)))
        return list(final)

    def bounded_form(a, consts):
        sizes = level_sizes(n)

        def level(depth):
            inner = (lambda s: step(s, consts)) if depth == len(sizes) - 1 else level(depth + 1)

            def one(s, _):
                on = active(s[0], s[1], consts)

                def guarded(s):
                    # Under `vmap` both sides run, and an element that has left the loop
                    # takes a step eager never takes (`jnp.sqrt` of what is now negative):
                    # its state goes in with no gradient, so the step's derivative there
                    # (NaN times the zero it gets) never reaches the state's
                    k, a = s
                    return inner((k, [jnp.where(on, v, lax.stop_gradient(v)) for v in a]))

                return lax.cond(on, guarded, lambda s: s, s), None

            return lambda s: lax.scan(one, s, None, length=sizes[depth])[0]

        return list(level(0)((jnp.int32(0), list(a)))[1])

    loop = jax.custom_jvp(while_form)

    @loop.defjvp
    def _derivative(primals, tangents):
        return jax.jvp(bounded_form, primals, tangents)

    consts = list(test_jaxpr.consts) + list(body_jaxpr.consts)
    try:
        return loop(arrays, consts)
    except NotImplementedError:  # effects `custom_jvp` refuses (ordered callbacks)
        return bounded_form(arrays, consts)


