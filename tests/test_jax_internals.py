"""Each shim of ``autograph.jax_internals`` against the installed JAX.

A failure here means JAX changed what a shim relies on: the message names the
shim. Nothing outside ``autograph/jax_internals.py`` imports ``jax._src``.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from autograph import jax_internals as internals

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_declared_oldest_jax_is_the_one_pyproject_asks_for():
    pyproject = (ROOT / "pyproject.toml").read_text()
    declared = re.search(r'"jax>=([\d.]+)"', pyproject).group(1)
    assert tuple(int(p) for p in declared.split(".")) == internals.OLDEST
    assert internals.VERSION >= internals.OLDEST


def test_nothing_else_imports_jax_private_modules():
    own = [p for d in ("autograph", "converters", "runtime") for p in (ROOT / d).rglob("*.py")]
    users = [str(p.relative_to(ROOT)) for p in own
             if "jax._src" in p.read_text() and p.name != "jax_internals.py"]
    assert users == []
    tests = [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.py")
             if "jax._src" in p.read_text() and p.name != "test_jax_internals.py"]
    assert tests == []


def test_array_impl_is_the_type_of_an_array():
    assert type(jnp.zeros(2)) is internals.ArrayImpl


def test_is_concrete():
    assert internals.is_concrete(jnp.ones(2))
    seen = []
    jax.jit(lambda x: seen.append(internals.is_concrete(x)) or x)(1.0)
    assert seen == [False]


def test_convert_element_type_keeps_the_weak_type():
    weak = internals.convert_element_type(jnp.asarray(3), np.dtype("float32"), True)
    strong = internals.convert_element_type(jnp.asarray(3), np.dtype("float32"), False)
    assert weak.dtype == strong.dtype == jnp.float32
    assert weak.weak_type and not strong.weak_type
    assert (weak + jnp.float16(1)).dtype == jnp.float16  # it promotes as a Python float


def test_trace_to_jaxpr_gives_what_make_jaxpr_gives():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the direct path, no fallback warning
        assert internals._direct_tracer() is not None
    fn = lambda a, b: [a * b + 1, jnp.sin(a)]  # noqa: E731
    leaves = [jnp.ones(3), jax.ShapeDtypeStruct((), jnp.float32)]
    ours = internals.trace_to_jaxpr(fn, leaves)
    theirs = jax.make_jaxpr(fn)(*leaves)
    assert str(ours.jaxpr) == str(theirs.jaxpr) and ours.out_avals == theirs.out_avals


def test_the_cpp_dispatcher_calls_our_miss_until_it_is_handed_a_program():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        build = internals.cpp_jit_builder()
    assert build is not None
    jitted = jax.jit(lambda x: x * 2)
    miss = internals.jit_cache_miss(jitted)
    calls = []

    def counting(*args):
        calls.append(args)
        return miss(*args)

    f = build("f", counting)
    x = jnp.arange(3.0)
    for _ in range(3):
        np.testing.assert_allclose(f(x), x * 2)
    assert len(calls) == 1  # later calls stay in C++
    np.testing.assert_allclose(f(jnp.ones(2)), 2.0)
    assert len(calls) == 2  # a new signature misses again


def test_jit_info_gives_the_options_a_jit_function_was_made_with():
    info = internals.jit_info(jax.jit(lambda x, n: x * n, static_argnums=1, donate_argnums=0))
    assert info.static_argnums == (1,) and info.donate_argnums == (0,)
    assert all(internals.is_unspecified(s) for s in info.out_shardings_leaves)
    assert internals.jit_info(lambda x: x) is None


def test_runtime_tokens_and_callback_loggers():
    assert isinstance(internals.output_runtime_tokens(), dict)
    import importlib
    for name in internals.CALLBACK_LOGGERS:
        importlib.import_module(name)  # the loggers are named after these modules


def test_exclude_from_tracebacks_accepts_a_path():
    internals.exclude_from_tracebacks(str(ROOT / "runtime"))


def test_stop_gradient_transpose_is_made_only_when_asked():
    script = textwrap.dedent("""
        import jax
        from jax.interpreters import ad
        before = dict(ad.primitive_transposes)
        import autograph
        from autograph import jax_internals
        after = dict(ad.primitive_transposes)
        assert all(after[p] is rule for p, rule in before.items()), "a rule was replaced"
        added = {p.name for p in set(after) - set(before)}
        assert added <= {"checkpointed_while"}, added  # autograph's own primitive only
        assert not jax_internals.backends_started(), "import started a backend"
        jax_internals.allow_stop_gradient_transpose()
        from jax._src import ad_util
        ct = ad.primitive_transposes[ad_util.stop_gradient_p](1.5, None)
        assert ct == [1.5]
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("x", [0.5, 3.0])
def test_grad_of_vmap_through_a_bounded_loop_transposes_stop_gradient(x):
    # the computation that needs the rule, from a fresh process's point of view:
    # the bounded form is built before the rule is consulted
    import autograph

    def f(x):
        i = 0
        while x < 10.0 and i < 20:
            x = x * 1.5 + 0.1
            i += 1
        return x

    xs = jnp.array([x, 2 * x])
    got = jax.grad(lambda xs: jnp.sum(jax.vmap(autograph.convert(f))(xs)))(xs)
    want = [jax.grad(f)(float(v)) for v in xs]
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_bind_while_runs_traced_jaxprs_as_lax_while_loop():
    from autograph.runtime.core.jaxprs import make_jaxpr, without_consts

    scale = jnp.float32(1.5)
    x0 = jnp.arange(3.0)
    test = without_consts(make_jaxpr(lambda a: [a[0].sum() < 40.0], [x0]))
    body = without_consts(make_jaxpr(lambda a: [a[0] * scale + 1.0], [x0]))
    n_t, n_b = len(test.in_avals) - 1, len(body.in_avals) - 1
    assert n_t == 0 and n_b == 1  # `scale` is the body's one constant
    got = internals.bind_while(test, body, [], [scale], [x0])
    want = jax.lax.while_loop(lambda x: x.sum() < 40.0, lambda x: x * scale + 1.0, x0)
    np.testing.assert_allclose(got[0], want)
    assert "while[" in str(jax.make_jaxpr(
        lambda x: internals.bind_while(test, body, [], [scale], [x]))(x0))
    # a body that makes a weak carry strong: not bound (lax.while_loop promotes there)
    weak = without_consts(make_jaxpr(lambda a: [a[0] * jnp.float32(2.0)], [1.0]))
    weak_test = without_consts(make_jaxpr(lambda a: [a[0] < 10.0], [1.0]))
    assert internals.bind_while(weak_test, weak, [], [], [1.0]) is None


# -- JAX's error messages: one test per matcher, each making JAX raise its error ---------


def test_reverse_while_error_is_recognised():
    def f(x):
        return jax.lax.while_loop(lambda c: c < 10.0, lambda c: c * 2.0, x)

    with pytest.raises(ValueError) as info:
        jax.grad(f)(1.0)
    assert internals.is_reverse_while_error(info.value)
    assert not internals.is_reverse_while_error(ValueError("something else"))


def test_traced_shape_error_is_recognised():
    with pytest.raises(TypeError) as info:
        jax.jit(lambda n: jnp.zeros((1, n)))(3)
    assert internals.traced_shape(info.value) is not None
    assert "int32[]" in internals.traced_shape(info.value)
    assert internals.traced_shape(TypeError("other")) is None


def test_static_size_error_is_recognised():
    with pytest.raises(jax.errors.ConcretizationTypeError) as info:
        jax.jit(lambda x: jnp.where(x > 0))(jnp.ones(3))
    assert internals.is_static_size_error(info.value)


def test_ordered_callbacks_refused_is_recognised():
    if jax.device_count() < 2:  # the error needs two devices: checked on its text alone
        error = ValueError("ordered effects are not supported for more than 1 device")
        assert internals.is_ordered_callbacks_refused(error)
        return
    mesh = jax.make_mesh((2,), ("d",))
    sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("d"))

    def f(x):
        jax.debug.callback(lambda v: None, x, ordered=True)
        return x

    with pytest.raises(ValueError) as info:
        jax.jit(f, in_shardings=sharding).lower(jnp.ones(2)).compile()
    assert internals.is_ordered_callbacks_refused(info.value)


def test_jax_messages_are_read_in_jax_internals_alone():
    phrases = [internals._REVERSE_WHILE, internals._ORDERED_MANY_DEVICES,
               internals._TRACED_SHAPE.strip(), internals._STATIC_SIZE]
    found = []
    for folder in ("autograph", "runtime", "converters"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "jax_internals.py":
                continue
            text = path.read_text(encoding="utf-8")
            found += [f"{path.relative_to(ROOT)}: {p}" for p in phrases if p in text]
    assert not found, found


def test_rebuild_transformed_makes_a_transformation_anew_with_its_options():
    def g(x, k):
        return x * k

    def doubled(x, k):
        return 2 * x * k

    def user(fn):
        return fn in (g, doubled)

    ckpt = jax.checkpoint(g, static_argnums=(1,))
    new = internals.rebuild_transformed(ckpt, lambda fn: doubled, user)
    assert new is not None and new.__wrapped__ is doubled
    assert float(new(jnp.float32(3.0), 2.0)) == 12.0
    mapped = jax.vmap(g, in_axes=(0, None))
    new = internals.rebuild_transformed(mapped, lambda fn: doubled, user)
    np.testing.assert_allclose(new(jnp.arange(3.0), 2.0), [0.0, 4.0, 8.0])
    # around another transformation's function: `jax.grad` keeps `value_and_grad`'s
    grad = jax.grad(g)
    new = internals.rebuild_transformed(grad, lambda fn: doubled, user)
    assert float(new(jnp.float32(3.0), 2.0)) == 4.0
    # not rebuilt: the replacement keeps the function, a library function, a user one
    assert internals.rebuild_transformed(ckpt, lambda fn: fn, user) is None
    assert internals.rebuild_transformed(jax.checkpoint(jnp.sin), lambda fn: g, user) is None
    assert internals.rebuild_transformed(g, lambda fn: doubled, user) is None
