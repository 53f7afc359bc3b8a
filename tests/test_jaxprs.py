"""``runtime.jaxprs.make_jaxpr`` gives what ``jax.make_jaxpr`` gives, faster."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograph.runtime.core import jaxprs


def _same(fn, *args):
    ours = jaxprs.make_jaxpr(fn, *args)
    theirs = jax.make_jaxpr(fn)(*args)
    assert str(ours.jaxpr) == str(theirs.jaxpr)
    assert ours.out_avals == theirs.out_avals
    assert len(ours.consts) == len(theirs.consts)
    return ours


def test_this_jax_gets_the_direct_tracer():
    from autograph import jax_internals
    assert jax_internals._direct_tracer() is not None


@pytest.mark.parametrize("make_args", [
    lambda: (),
    lambda: (jnp.ones(3),),
    lambda: ([jnp.ones(2), jnp.int32(3)], jax.ShapeDtypeStruct((), jnp.int32)),
    lambda: ({"a": np.float32(2.0), "b": (jnp.zeros((2, 2)),)},),
])
def test_same_jaxpr_as_make_jaxpr(make_args):
    def fn(*args):
        leaves = jax.tree_util.tree_leaves(args)
        return [jnp.sum(leaf) * 2 for leaf in leaves] + [jnp.float32(1.0)]

    _same(fn, *make_args())


def test_closure_over_tracers_becomes_constants():
    seen = []

    def outer(x):
        s = x.sum()
        closed = _same(lambda: [x * 2 + s, s])
        seen.append(closed)
        return jax.extend.core.jaxpr_as_fun(closed)()[0]

    x = jnp.arange(4.0)
    np.testing.assert_allclose(jax.jit(outer)(x), x * 2 + 6.0)
    np.testing.assert_allclose(jax.vmap(outer)(jnp.stack([x, -x])),
                               np.stack([x * 2 + 6.0, -x * 2 - 6.0]))
    np.testing.assert_allclose(jax.grad(lambda x: outer(x).sum())(x), 2.0 + 4.0)
    assert seen and all(len(c.consts) == 2 for c in seen)


def test_python_scalar_and_nested_outputs():
    closed = jaxprs.make_jaxpr(lambda a: {"p": 1.5, "q": [a, (a * 2,)]}, jnp.ones(2))
    assert len(closed.out_avals) == 3
    out = jax.extend.core.jaxpr_as_fun(closed)(jnp.full(2, 3.0))
    np.testing.assert_allclose(out[0], 1.5)
    np.testing.assert_allclose(out[2], 6.0)


def test_public_fallback_gives_the_same(monkeypatch):
    fn = lambda a, k: [a * k, a + 1]  # noqa: E731
    direct = jaxprs.make_jaxpr(fn, jnp.ones(2), jax.ShapeDtypeStruct((), jnp.float32))
    from autograph import jax_internals
    monkeypatch.setattr(jax_internals, "_direct_tracer", lambda: None)
    public = jaxprs.make_jaxpr(fn, jnp.ones(2), jax.ShapeDtypeStruct((), jnp.float32))
    assert str(direct.jaxpr) == str(public.jaxpr)


# -- comparing two traces (the proof in `runtime.attributes`) ------------------------


def test_unused_inputs_and_without_inputs():
    s = jax.ShapeDtypeStruct((3,), jnp.float32)
    reads = jaxprs.make_jaxpr(lambda a, b: [a + b], s, s)
    ignores = jaxprs.make_jaxpr(lambda a, b: [a * 2.0], s, s)
    assert not jaxprs.unused_inputs(reads, [1])
    assert jaxprs.unused_inputs(ignores, [1])
    alone = jaxprs.make_jaxpr(lambda a: [a * 2.0], s)
    assert str(jaxprs.without_inputs(ignores, [1]).jaxpr) == str(alone.jaxpr)


def test_same_program_compares_constant_values_and_functions():
    s = jax.ShapeDtypeStruct((3,), jnp.float32)
    sevens, ones = np.full(3, 7.0, np.float32), np.ones(3, np.float32)

    def adding(c):
        return jaxprs.make_jaxpr(lambda a: [a + jnp.asarray(c)], s)

    assert str(adding(sevens).jaxpr) == str(adding(ones).jaxpr)  # printed alike
    assert not jaxprs.same_program(adding(sevens), adding(ones))
    assert jaxprs.same_program(adding(ones), adding(ones.copy()))

    def printing(text):
        def f(a):
            jax.debug.callback(lambda: print(text))
            return [a]
        return jaxprs.make_jaxpr(f, s)

    assert not jaxprs.same_program(printing("int"), printing("Array"))
    relu = jaxprs.make_jaxpr(lambda a: [jax.nn.relu(a)], s)
    assert jaxprs.same_program(relu, jaxprs.make_jaxpr(lambda a: [jax.nn.relu(a)], s))
