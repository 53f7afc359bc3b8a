"""The public API as users touch it: ``convert``, ``to_code`` and their contracts.

Signatures and metadata are preserved, conversion is cached, ``to_code`` is
deterministic and re-executable, Python values give exactly the plain result
and type, closures/methods/partials/callable objects work, and ``convert``
composes with ``jax.jit``, ``jax.grad`` and ``jax.vmap``.
"""

from __future__ import annotations

import functools
import inspect
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import pipeline, runtime


def collatz_steps(n):
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def clamp(x, /, lo=0.0, *extra, hi=1.0, **options) -> float:
    """Clamps ``x`` to ``[lo, hi]``."""
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def relu(x):
    if x > 0:
        y = x
    else:
        y = 0
    return y


def piecewise(x):
    if x < 0:
        y = 0.0
    elif x < 1:
        y = x ** 2
    else:
        y = 2 * x - 1
    return y


def flags(a, b):
    return a and b, a or b, not a


# ---------------------------------------------------------------------------
# signature and metadata


def test_signature_and_metadata_preserved():
    c = autograph.convert(clamp)
    assert inspect.signature(c) == inspect.signature(clamp)
    assert c.__name__ == "clamp" and c.__qualname__ == "clamp"
    assert c.__doc__ == clamp.__doc__ and c.__module__ == clamp.__module__
    assert c.__wrapped__ is clamp
    assert c(5.0, hi=2.0) == clamp(5.0, hi=2.0) == 2.0
    assert c(0.5, 0.0, 1, 2, hi=3.0, mode="x") == 0.5


def test_decorator_forms():
    deco = autograph.convert(recursive=False)
    c = deco(piecewise)
    assert c(0.5) == piecewise(0.5)
    assert inspect.signature(c) == inspect.signature(piecewise)


# ---------------------------------------------------------------------------
# Python values give exactly the plain result


@pytest.mark.parametrize("fn,args", [
    (collatz_steps, (27,)),
    (collatz_steps, (np.int64(27),)),
    (relu, (3,)),
    (relu, (np.float32(-3.0),)),
    (relu, (jnp.float32(-3.0),)),
    (flags, (0, 5)),
    (flags, ("", "x")),
    (piecewise, (np.float64(0.5),)),
])
def test_python_values_exact_result_and_type(fn, args):
    want = fn(*args)
    got = autograph.convert(fn)(*args)
    assert jax.tree_util.tree_structure(got) == jax.tree_util.tree_structure(want)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert type(g) is type(w) and g == w, (got, want)


# ---------------------------------------------------------------------------
# caching and determinism


def test_converting_twice_is_cached(monkeypatch):
    calls = []
    orig = pipeline.convert_tree
    monkeypatch.setattr(pipeline, "convert_tree",
                        lambda *a, **k: (calls.append(1), orig(*a, **k))[1])

    def make(k):
        def above(x):
            if x > k:
                return x
            return k
        return above

    for k in range(5):
        assert autograph.convert(make(k))(10) == 10
    autograph.to_code(make(0))
    assert len(calls) == 1


def test_to_code_deterministic_and_reexecutable():
    for fn, args in [(collatz_steps, (27,)), (piecewise, (0.5,)), (clamp, (5.0,))]:
        src = autograph.to_code(fn)
        assert src == autograph.to_code(fn) == autograph.to_code(autograph.convert(fn))
        ns = {"ag__": runtime}
        exec(src, ns)
        again = ns[fn.__name__]
        assert again(*args) == fn(*args)
        assert float(jax.jit(again)(*args)) == pytest.approx(fn(*args))


def test_to_code_of_lambda_is_reexecutable():
    src = autograph.to_code(lambda x: x if x > 0 else -x)
    ns = {"ag__": runtime}
    exec(src, ns)
    (fn,) = [v for k, v in ns.items() if k not in ("ag__", "__builtins__")]
    assert fn(-3.0) == 3.0
    assert float(jax.jit(fn)(-3.0)) == 3.0


# ---------------------------------------------------------------------------
# composition with JAX transformations


def test_jit_grad_vmap_compose():
    pw = autograph.convert(piecewise)
    xs = [-1.0, 0.5, 2.0]
    assert [float(jax.grad(pw)(x)) for x in xs] == [0.0, 1.0, 2.0]
    assert [float(jax.jit(jax.grad(pw))(x)) for x in xs] == [0.0, 1.0, 2.0]
    np.testing.assert_allclose(jax.vmap(pw)(jnp.array(xs)), [0.0, 0.25, 3.0])
    np.testing.assert_allclose(jax.jit(jax.vmap(jax.grad(pw)))(jnp.array(xs)), [0.0, 1.0, 2.0])
    steps = jax.vmap(autograph.convert(collatz_steps))(jnp.array([1, 6, 27]))
    assert steps.tolist() == [0, 8, 111]


@autograph.convert
def decorated_abs(x):
    if x > 0:
        return x
    return -x


def test_convert_as_decorator_under_jit_and_to_code():
    assert decorated_abs(-2.0) == 2.0
    assert float(jax.jit(decorated_abs)(-2.0)) == 2.0
    assert autograph.to_code(decorated_abs).startswith("def decorated_abs(x):")


# ---------------------------------------------------------------------------
# closures


def scaler(scale):
    def f(x):
        if x > 0:
            return x * scale
        return -x
    return f


def test_closures_over_different_values():
    for s in (1.0, 2.0, 3.0):
        f = autograph.convert(scaler(s))
        assert f(2.0) == 2.0 * s
        assert float(jax.jit(f)(2.0)) == 2.0 * s


def test_closure_variable_rebound_after_conversion():
    k = 1.0

    def f(x):
        if x > 0:
            y = x * k
        else:
            y = x
        return y

    cf = autograph.convert(f)
    assert cf(2.0) == 2.0
    k = 10.0
    assert cf(2.0) == f(2.0) == 20.0
    assert float(jax.jit(cf)(2.0)) == 20.0


SCALE = 2.0


def uses_global(x):
    if x > 0:
        return x * SCALE
    return x


def test_global_rebound_after_conversion(monkeypatch):
    cf = autograph.convert(uses_global)
    assert cf(1.0) == 2.0
    monkeypatch.setitem(globals(), "SCALE", 5.0)
    assert cf(1.0) == 5.0


def test_closure_assigned_later_in_a_branch():
    def outer(x):
        def scaled(v):
            return v * k
        k = 2.0
        if x > 0:
            k = 3.0
        return scaled(x)

    # plain Python: 3.0; converted: 2.0 (the branch's `k = 3.0` is dropped)
    assert autograph.convert(outer)(1.0) == outer(1.0) == 3.0


def test_lambda_defined_before_branch_sees_branch_value():
    def outer(x):
        f = lambda v: v * scale  # noqa: E731
        scale = 1.0
        if x > 0:
            scale = 2.0
        return f(x)

    assert autograph.convert(outer)(1.0) == outer(1.0) == 2.0


def countdown(n):
    if n <= 0:
        return 0
    return 1 + countdown(n - 1)


def test_recursive_function_converts():
    # KeyError: 'countdown' (autograph/loader.py instantiate)
    assert autograph.convert(countdown)(4) == 4


# ---------------------------------------------------------------------------
# methods, partials, callable objects


class Model:
    K = 4.0

    def __init__(self, w):
        self.w = w

    def __call__(self, x, *, scale=1.0):
        if x > 0:
            return self.act(x * self.w) * scale
        return x

    def act(self, x):
        if x > 1:
            return x - 1
        return x

    @staticmethod
    def sym(x):
        if x > 0:
            return x
        return -x

    @classmethod
    def by_class(cls, x):
        if x > 0:
            return x * cls.K
        return x


class Scaled(Model):
    def act(self, x):
        y = super().act(x)
        if y > 2:
            y = y * 10
        return y


def test_bound_static_class_methods():
    m = Model(2.0)
    bound = autograph.convert(m.act)
    assert inspect.signature(bound) == inspect.signature(m.act)
    assert bound.__self__ is m and bound(3.0) == 2.0
    assert float(jax.jit(bound)(3.0)) == 2.0
    assert autograph.convert(Model.sym)(-3.0) == 3.0
    assert autograph.convert(m.sym)(-3.0) == 3.0
    assert autograph.convert(Model.by_class)(3.0) == 12.0
    assert float(jax.jit(autograph.convert(Model.by_class))(3.0)) == 12.0


def test_callable_object():
    m = Model(2.0)
    c = autograph.convert(m)
    assert inspect.signature(c) == inspect.signature(m)
    assert c(3.0, scale=2.0) == m(3.0, scale=2.0) == 10.0
    assert float(jax.jit(c)(3.0)) == 5.0


def test_super_in_method():
    s = Scaled(2.0)
    assert autograph.convert(s.act)(4.0) == s.act(4.0) == 30.0
    assert float(jax.jit(autograph.convert(s))(2.0)) == s(2.0)
    assert autograph.convert(Scaled.act)(s, 4.0) == 30.0


class _Base:
    def add_one(self, x):
        return x + 1


class _ShadowsSuper(_Base):
    def forward(self, x):
        def super():  # noqa: A001 - a local function of that name, as Python allows
            class Other:
                def add_one(self, x):
                    return x + 10
            return Other()
        if x > 0:
            return super().add_one(x)
        return x


def test_a_local_function_named_super_is_called_as_written():
    m = _ShadowsSuper()
    assert m.forward(1.0) == 11.0
    assert float(jax.jit(autograph.convert(m.forward))(1.0)) == 11.0
    assert float(jax.jit(autograph.convert(m.forward))(-1.0)) == -1.0


def test_partial():
    p = functools.partial(clamp, lo=-1.0, hi=3.0)
    c = autograph.convert(p)
    assert isinstance(c, functools.partial)
    assert inspect.signature(c) == inspect.signature(p)
    assert c(5.0) == p(5.0) == 3.0
    assert float(jax.jit(c)(-5.0)) == -1.0


def calls_everything(x):
    m = Model(2.0)
    p = functools.partial(clamp, hi=10.0)
    return m(x) + p(x) + Model.sym(-x) + (lambda v: v if v > 0 else -v)(x)


def test_callables_called_from_converted_code():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert autograph.convert(calls_everything)(2.0) == calls_everything(2.0)
        assert float(jax.jit(autograph.convert(calls_everything))(2.0)) == calls_everything(2.0)


class Buffer:
    def __init__(self):
        self.total = 0.0

    def add(self, x):
        if x > 0:
            return self.total + x
        return self.total

    def get(self, x, default):
        if x > default:
            return x
        return default


def use_buffer(x):
    b = Buffer()
    return b.add(x) + b.get(x, 1.0)


def test_user_methods_named_add_get_are_converted():
    # `add`/`get` are in the call converter's list of library methods, so the
    # user's methods run unconverted: TracerBoolConversionError under jit.
    assert float(jax.jit(autograph.convert(use_buffer))(2.0)) == use_buffer(2.0)


def functools_decorated(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs) + 1
    return inner


@functools_decorated
def decorated_relu(x):
    if x > 0:
        return x
    return 0.0 * x


def test_user_decorator_on_converted_function():
    c = autograph.convert(decorated_relu)
    assert c(-3.0) == decorated_relu(-3.0) == 1.0
    assert float(jax.jit(c)(2.0)) == 3.0
    assert inspect.signature(c) == inspect.signature(decorated_relu)


def test_unconvertible_inputs_give_clear_errors():
    def gen(x):
        yield x

    with pytest.raises(autograph.ConversionError) as e:
        autograph.convert(gen, strict=True)
    assert "yield" in str(e.value) and "test_api.py" in str(e.value)
    with pytest.warns(UserWarning, match=r"`yield`.*test_api\.py|test_api\.py.*`yield`"):
        assert autograph.convert(gen) is gen
    with pytest.raises(TypeError, match="autograph can convert"):
        autograph.convert(42)


def _absolute(x):
    if x > 0:
        return x
    return -x


@pytest.mark.parametrize("transform", [jax.grad, jax.vmap], ids=["grad", "vmap"])
def test_a_jax_transformation_of_a_function_is_named_as_one(transform):
    with pytest.raises(TypeError, match=r"transformation of `_absolute`.*"
                                        r"jax.vmap\(autograph.convert\(_absolute\)\)"):
        autograph.to_code(transform(_absolute))
    with pytest.warns(UserWarning, match="transformation of `_absolute`"):
        assert autograph.convert(transform(_absolute)) is not None
    # what the message says to do works
    got = jax.vmap(autograph.convert(_absolute))(jnp.array([1.0, -2.0]))
    np.testing.assert_allclose(got, [1.0, 2.0])
