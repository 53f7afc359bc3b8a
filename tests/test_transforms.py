"""JAX transformations meet converted code: the transformation is never dropped.

Each transformation is applied inside converted code to (a) a converted
function, (b) a plain function without control flow, (c) an
``autograph.function``, (d) a ``jax.jit`` function, and (e) a plain function
with an ``if`` on its traced argument (which plain ``jax.jit`` cannot run, and
which converted code converts). The result is compared with plain
``jax.jit`` of the same code where that runs, and otherwise with the same
transformation applied by hand to the converted callee.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph.runtime.functions import calls
from tests.helpers import with_globals


def _smooth(w):
    return w * w + jnp.sin(w)


def _branchy(w):
    if w > 0:
        return w * w + jnp.sin(w)
    return -w + jnp.cos(w)


CALLEES = {
    "converted": lambda: autograph.convert(_branchy),
    "plain": lambda: _smooth,
    "function": lambda: autograph.function(_branchy),
    "jit": lambda: jax.jit(_smooth),
    "unconverted_if": lambda: _branchy,
}

# name -> (transformation, input maker)
TRANSFORMS = {
    "grad": (jax.grad, lambda v: v),
    "value_and_grad": (jax.value_and_grad, lambda v: v),
    "jacfwd": (jax.jacfwd, lambda v: v),
    "jacrev": (jax.jacrev, lambda v: v),
    "hessian": (jax.hessian, lambda v: v),
    "checkpoint": (jax.checkpoint, lambda v: v),
    "jit": (jax.jit, lambda v: v),
    "vmap": (jax.vmap, lambda v: jnp.array([v, -v, 0.5 * v])),
    "vmap_of_grad": (lambda f: jax.vmap(jax.grad(f)), lambda v: jnp.array([v, -v, 0.5 * v])),
    "grad_of_grad": (lambda f: jax.grad(jax.grad(f)), lambda v: v),
    "partial_grad": (functools.partial(jax.grad, argnums=0), lambda v: v),
}




def _reference(kind, transform, x):
    """What the program means: plain jit where it runs, else the converted callee."""
    callee = CALLEES[kind]()
    if kind == "unconverted_if":
        callee = autograph.convert(callee)
    return jax.jit(lambda w: transform(callee)(w))(x)


@pytest.mark.parametrize("kind", sorted(CALLEES))
@pytest.mark.parametrize("name", sorted(TRANSFORMS))
@pytest.mark.parametrize("outer_jit", [False, True], ids=["eager", "jit"])
def test_transformation_of_callee_inside_converted_code(name, kind, outer_jit):
    transform, make = TRANSFORMS[name]
    callee = CALLEES[kind]()

    def step(w):
        return transform(callee)(w)

    converted = autograph.convert(step)
    if outer_jit:
        converted = jax.jit(converted)
    for v in (3.0, -2.0):  # both branches of `_branchy`
        x = make(jnp.float32(v))
        got = converted(x)
        want = _reference(kind, transform, x)
        jax.tree_util.tree_map(
            lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6), got, want)


def test_issue_example_grad_is_not_the_loss():
    @autograph.convert
    def loss(w):
        if w > 0:
            return w * w
        return -w

    def step(w):
        return jax.grad(loss)(w)

    assert float(jax.jit(autograph.convert(step))(3.0)) == 6.0
    assert float(autograph.convert(step)(3.0)) == 6.0
    assert float(autograph.convert(step)(-3.0)) == -1.0

    def both(w):
        return jax.value_and_grad(loss)(w)

    value, grad = autograph.convert(both)(3.0)
    assert (float(value), float(grad)) == (9.0, 6.0)


def test_vmap_of_converted_rowsum_maps_rows():
    @autograph.convert
    def rowsum(x):
        return x.sum()

    def f(xs):
        return jax.vmap(rowsum)(xs)

    xs = jnp.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(autograph.convert(f)(xs), [6.0, 22.0, 38.0])
    np.testing.assert_array_equal(jax.jit(autograph.convert(f))(xs), [6.0, 22.0, 38.0])


def test_user_wrapper_of_converted_function_keeps_its_own_behaviour():
    # functools.wraps copies the converted function's attributes onto the
    # wrapper; the wrapper must still run its own code
    conv = autograph.convert(_branchy)

    def twice(fn):
        @functools.wraps(fn)
        def wrapper(x):
            return 2.0 * fn(x)
        return wrapper

    doubled = twice(conv)

    def f(x):
        return doubled(x)

    for v in (3.0, -2.0):
        want = 2.0 * float(_branchy(v))
        assert float(autograph.convert(f)(v)) == pytest.approx(want)
        assert float(jax.jit(autograph.convert(f))(jnp.float32(v))) == pytest.approx(want, 1e-5)


def test_do_not_convert_mark_stays_with_its_function():
    marked = autograph.do_not_convert(_smooth)

    def twice(fn):
        @functools.wraps(fn)
        def wrapper(x):
            if x > 0:  # needs conversion: the mark of `fn` must not stop it
                return 2.0 * fn(x)
            return fn(x)
        return wrapper

    wrapped = twice(marked)

    def f(x):
        return wrapped(x) + marked(x)

    for v in (3.0, -2.0):
        want = float(twice(_smooth)(v) + _smooth(v))
        assert float(jax.jit(autograph.convert(f))(jnp.float32(v))) == pytest.approx(want, 1e-5)
    assert calls.resolve(marked) is marked


# -- JAX's function-taking entry points convert their function arguments --------------

def _scan_body(c, x):
    if x > 0:
        c = c + x
    else:
        c = c - 1.0
    return c, c * 2.0


def _cond_true(x):
    if x.sum() > 10:
        return x * 2.0
    return x


def _cond_false(x):
    return -x


def _while_cond(s):
    i, v = s
    return i < 5


def _while_body(s):
    i, v = s
    if v > 3.0:
        v = v - 1.0
    else:
        v = v + 2.0
    return i + 1, v


def _fori_body(i, v):
    if i % 2 == 0:
        return v + i
    return v * 1.5


def _leaf(a):
    if a.sum() > 0:
        return a + 1.0
    return a - 1.0


ENTRY_POINTS = {
    "scan": lambda xs: jax.lax.scan(_scan_body, 0.0, xs),
    "cond": lambda xs: jax.lax.cond(xs[0] > 0, _cond_true, _cond_false, xs),
    "switch": lambda xs: jax.lax.switch(jnp.int32(xs[1] > 0), [_cond_false, _cond_true], xs),
    "while_loop": lambda xs: jax.lax.while_loop(_while_cond, _while_body, (0, xs[0])),
    "fori_loop": lambda xs: jax.lax.fori_loop(0, 4, _fori_body, xs[0]),
    "map": lambda xs: jax.lax.map(_leaf, xs.reshape(2, 2)),
    "tree_map": lambda xs: jax.tree_util.tree_map(_leaf, {"a": xs, "b": -xs}),
    "tree.map": lambda xs: jax.tree.map(_leaf, [xs, xs * 2.0]),
    "vectorize": lambda xs: jnp.vectorize(_fori_body_scalar)(xs),
    "eval_shape": lambda xs: jax.eval_shape(_leaf, xs).shape,
}


def _fori_body_scalar(v):
    if v > 0:
        return v * 2.0
    return v


def _plain(fn):
    """The same program with its callees converted by hand (the meaning)."""
    names = ("_scan_body", "_cond_true", "_cond_false", "_while_cond", "_while_body",
             "_fori_body", "_leaf", "_fori_body_scalar")
    return with_globals(fn, **{n: autograph.convert(globals()[n]) for n in names})


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_function_arguments_of_jax_entry_points_are_converted(name):
    fn = ENTRY_POINTS[name]
    want_fn = _plain(fn)
    for xs in (jnp.array([1.0, -2.0, 3.0, 4.0]), jnp.array([-1.0, 2.0, -3.0, -4.0])):
        want = want_fn(xs)
        for got in (autograph.convert(fn)(xs), jax.jit(autograph.convert(fn))(xs)):
            jax.tree_util.tree_map(
                lambda g, w: np.testing.assert_allclose(g, w, rtol=1e-6), got, want)


def test_custom_jvp_function_is_rebuilt_around_the_converted_function():
    @jax.custom_jvp
    def clipped(x):
        if x > 1.0:
            return jnp.ones_like(x)
        return x

    @clipped.defjvp
    def clipped_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        if x > 1.0:
            return clipped(x), 0.0 * t
        return clipped(x), 3.0 * t  # a rule different from the true derivative

    def f(x):
        return jax.grad(clipped)(x) + clipped(x)

    cf = jax.jit(autograph.convert(f))
    assert float(cf(0.5)) == pytest.approx(3.5)
    assert float(cf(2.0)) == pytest.approx(1.0)


def test_custom_vjp_function_keeps_its_rule():
    @jax.custom_vjp
    def f(x):
        if x > 0:
            return x * x
        return -x

    def fwd(x):
        return f(x), x

    def bwd(x, g):
        return (10.0 * g,)

    f.defvjp(fwd, bwd)

    def step(x):
        return jax.grad(f)(x), f(x)

    for v, value in ((3.0, 9.0), (-2.0, 2.0)):
        g, y = jax.jit(autograph.convert(step))(v)
        assert (float(g), float(y)) == (10.0, value)


# -- functions already under @jax.jit ----------------------------------------------

def test_convert_of_a_jit_function_converts_and_keeps_static_argnums():
    @functools.partial(jax.jit, static_argnums=1)
    def power(x, n):
        if x > 0:
            return x ** n
        return -x

    cf = autograph.convert(power)
    assert float(cf(2.0, 3)) == 8.0
    assert float(cf(-2.0, 3)) == 2.0
    assert calls.converted_of(cf) is None  # a jit function, with the options of `power`

    fn = autograph.function(power)
    assert float(fn(2.0, 3)) == 8.0
    assert float(fn(2.0, 2)) == 4.0

    def caller(x):
        return power(x, 3) + 1.0

    assert float(jax.jit(autograph.convert(caller))(2.0)) == 9.0
    assert float(jax.jit(autograph.convert(caller))(-2.0)) == 3.0


def test_to_code_of_jit_and_function_shows_the_user_function():
    def sign(x):
        if x > 0:
            return 1.0
        return -1.0

    text = autograph.to_code(sign)
    assert autograph.to_code(jax.jit(sign)) == text
    assert autograph.to_code(autograph.function(sign)) == text
    assert autograph.to_code(autograph.convert(sign)) == text


def test_transformation_results_carrying_converted_attributes_are_not_unwrapped():
    conv = autograph.convert(_branchy)
    for wrapper in (jax.grad(conv), jax.vmap(conv), jax.jit(conv), jax.checkpoint(conv),
                    jax.value_and_grad(conv), jax.jacfwd(conv)):
        assert calls.resolve(wrapper) is not calls.converted_of(conv)
    assert calls.resolve(conv) is calls.converted_of(conv)


def test_call_trees_routes_every_entry_point_of_the_runtime_table():
    from autograph.converters import call_trees
    from autograph.runtime.functions import transforms
    names = {attr for entries in transforms.TABLE.values() for attr in entries}
    assert names <= call_trees.FUNCTION_TAKING


def test_convert_of_library_code_runs_it_unconverted_with_a_warning():
    import operator
    with pytest.warns(UserWarning, match="runs unconverted"):
        g = autograph.convert(jnp.linalg.norm)
    assert g is jnp.linalg.norm
    assert autograph.convert(operator.add) is operator.add
    assert autograph.convert(jax.nn.relu)(-1.0) == 0.0  # a custom_jvp of JAX's own code


# -- functions JAX's transformations made before converted code calls them -------------

@jax.checkpoint
def _checkpointed(x):
    if x.sum() > 1:
        return jnp.tanh(x)
    return x + 1


@functools.partial(jax.checkpoint, prevent_cse=False, static_argnums=(1,))
def _checkpointed_static(x, k):
    assert isinstance(k, float)  # static, as it was made: a Python float
    if x.sum() > k:
        return jnp.tanh(x)
    return x + 1


@functools.partial(jax.vmap, in_axes=1, out_axes=0)
def _columns(c):
    if c[0] > 0.5:
        return c * 2
    return -c


_grad_branchy = jax.grad(_branchy)
_value_and_grad_branchy = jax.value_and_grad(_branchy)  # (`jax.grad` keeps one of these)
_named_branchy = jax.named_call(_branchy, name="branchy")


def _eager_branchy_grad(w):
    return 2 * w + jnp.cos(w) if w > 0 else -1.0 - jnp.sin(w)


def test_functions_jax_made_around_user_functions_are_made_anew_around_converted_ones():
    # `@jax.checkpoint` / `@jax.vmap` helpers and `jax.grad(g)` made before the call:
    # plain `jax.jit` raises on each `if`; converted code converts `g` and keeps the
    # options (static_argnums, in_axes, ...) the function was made with
    def uses(x, m):
        return (_checkpointed(x), _checkpointed_static(x, 1.0), _columns(m),
                jax.vmap(_grad_branchy)(x), jax.vmap(_value_and_grad_branchy)(x),
                jax.vmap(_named_branchy)(x))

    f = jax.jit(autograph.convert(uses))
    for x in (jnp.array([0.5, 0.9]), jnp.array([-0.2, 0.1])):
        m = jnp.stack([x, -x, 2 * x])  # columns of 3 rows
        ckpt, ckpt_static, cols, g, (v, vg), named = f(x, m)
        total = float(x.sum())
        want = jnp.tanh(x) if total > 1 else x + 1
        np.testing.assert_allclose(ckpt, want, rtol=1e-6)
        np.testing.assert_allclose(ckpt_static, want, rtol=1e-6)
        np.testing.assert_allclose(cols, np.stack([np.asarray(c) * 2 if c[0] > 0.5 else -np.asarray(c)
                                                   for c in np.asarray(m).T]), rtol=1e-6)
        want_g = jnp.stack([_eager_branchy_grad(w) for w in x])
        np.testing.assert_allclose(g, want_g, rtol=1e-5)
        np.testing.assert_allclose(vg, want_g, rtol=1e-5)
        np.testing.assert_allclose(v, jnp.stack([_branchy(w) for w in x]), rtol=1e-5)
        np.testing.assert_allclose(named, jnp.stack([_branchy(w) for w in x]), rtol=1e-6)
    # the gradient through the rebuilt checkpoint is the gradient of the branch taken
    x = jnp.array([0.5, 0.9])
    grad = jax.grad(lambda x: autograph.convert(uses)(x, jnp.ones((3, 2)))[0].sum())(x)
    np.testing.assert_allclose(grad, 1 - jnp.tanh(x) ** 2, rtol=1e-6)


def test_a_user_function_decorated_with_a_context_manager_is_converted_inside_it():
    log = []

    class Scope(__import__("contextlib").ContextDecorator):
        def __enter__(self):
            log.append("enter")

        def __exit__(self, *exc):
            log.append("exit")

    scoped = Scope()(_branchy)
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(lambda w: scoped(w))(1.0)
    log.clear()
    f = jax.jit(autograph.convert(lambda w: scoped(w)))
    assert float(f(2.0)) == pytest.approx(float(_branchy(2.0)))
    assert float(f(-2.0)) == pytest.approx(float(_branchy(-2.0)))
    assert log == ["enter", "exit"]  # once, as the one trace calls it (as `jax.jit` would)
