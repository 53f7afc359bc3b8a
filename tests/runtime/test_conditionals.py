"""`runtime.conditionals` called directly: `if_stmt` and `if_exp`.

A Python predicate runs only the branch it picks (a side-effect list proves
the other did not run); a traced one traces both branches into one
``lax.cond`` whose result must match plain Python for true and false inputs;
outputs that disagree between the branches raise ``BranchError``.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph.runtime.branches import conditionals
from autograph.runtime.branches.conditionals import if_exp, if_stmt
from tests.helpers import primitives

# ---------------------------------------------------------------------------
# if_stmt with a Python predicate


@pytest.mark.parametrize("pred, taken", [
    (True, "true"), (False, "false"), (1, "true"), (0, "false"), ([], "false"), ([0], "true"),
    (None, "false"), (np.bool_(True), "true"), (np.float32(0.0), "false"),
    (jnp.asarray(3.0), "true"), (jnp.asarray(0), "false"),
])
def test_python_predicate_runs_only_the_chosen_branch(pred, taken):
    ran = []

    def true_fn(x, y):
        ran.append("true")
        return x + 1, y * 2

    def false_fn(x, y):
        ran.append("false")
        return x - 1, y * 3

    out = if_stmt(pred, true_fn, false_fn, (10, 5), names=("x", "y"))
    assert ran == [taken]
    assert out == ((11, 10) if taken == "true" else (9, 15))
    assert type(out) is tuple
    assert type(out[0]) is int  # Python values stay Python values


def test_python_predicate_keeps_python_objects():
    # strings and lists are fine on a Python path: nothing is staged
    out = if_stmt(False, lambda s: ("yes",), lambda s: (s + [1],), ([0],), names=("s",))
    assert out == ([0, 1],)
    out = if_stmt(True, lambda s: ("yes",), lambda s: (s + [1],), ([0],), names=("s",))
    assert out == ("yes",)


@pytest.mark.parametrize("pred", [True, False])
def test_python_predicate_without_else(pred):
    ran = []

    def true_fn(x, extra):
        ran.append("true")
        return (x * 10,)

    # init holds more values than names (read, not assigned): only the names' come back
    out = if_stmt(pred, true_fn, None, (4, "extra"), names=("x",))
    assert out == ((40,) if pred else (4,))
    assert ran == (["true"] if pred else [])


def test_python_predicate_with_no_names():
    ran = []
    out = if_stmt(True, lambda: ran.append(1) or (), lambda: ran.append(2) or (), (),
                  names=())
    assert out == ()
    assert ran == [1]


# ---------------------------------------------------------------------------
# if_stmt with a traced predicate


def _branchy(x):
    """Plain Python reference of the staged function below."""
    if x > 0:
        y, z = x * 2.0, x + 1.0
    else:
        y, z = -x, x - 1.0
    return y, z


def _staged_branchy(x):
    return if_stmt(x > 0, lambda y, z: (x * 2.0, x + 1.0), lambda y, z: (-x, x - 1.0),
                   (0.0, 0.0), names=("y", "z"))


def test_traced_predicate_selects_like_python():
    f = jax.jit(_staged_branchy)
    for x in (3.0, -2.5, 0.0, 1e-3):
        got = f(jnp.float32(x))
        want = _branchy(x)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want, np.float32), rtol=1e-6)


def test_traced_predicate_stages_both_branches_in_one_cond():
    def staged(x):
        return if_stmt(x > 0, lambda v: (jnp.sin(v),), lambda v: (jnp.cos(v),), (x,),
                       names=("v",))

    closed = jax.make_jaxpr(staged)(1.0)
    assert "cond" in {e.primitive.name for e in closed.jaxpr.eqns}
    assert {"sin", "cos"} <= primitives(closed)


def test_traced_branch_that_changes_an_outside_list_is_refused():
    # both branches' Python runs while tracing: a side effect would happen whatever
    # the condition, so it is refused, and the list is put back as it was
    log = []

    def staged(x):
        def true_fn(v):
            log.append("true")
            return (v * 2.0,)
        return if_stmt(x > 0, true_fn, lambda v: (-v,), (x,), names=("v",))

    with pytest.raises(autograph.BranchError):
        jax.jit(staged)(1.0)
    assert log == []


def test_traced_predicate_without_else():
    def staged(x):
        return if_stmt(x > 1.0, lambda v: (v * 10.0,), None, (x,), names=("v",))

    f = jax.jit(staged)
    for x in (0.5, 1.0, 2.0):
        (got,) = f(jnp.float32(x))
        want = x * 10.0 if x > 1.0 else x
        np.testing.assert_allclose(float(got), want, rtol=1e-6)


def test_traced_predicate_promotes_dtypes():
    # an int on one branch and a float on the other: one array of the joint dtype
    def staged(p):
        return if_stmt(p, lambda: (1,), lambda: (2.5,), (), names=("v",))

    f = jax.jit(staged)
    (t,), (e,) = f(jnp.bool_(True)), f(jnp.bool_(False))
    assert jnp.issubdtype(t.dtype, jnp.floating)
    assert float(t) == 1.0 and float(e) == 2.5


def test_traced_predicate_under_vmap_selects_per_lane():
    def staged(x):
        return if_stmt(x > 0, lambda v: (v * 2.0,), lambda v: (-v,), (x,), names=("v",))

    xs = np.array([-2.0, 0.0, 1.5, 3.0], np.float32)
    (got,) = jax.vmap(staged)(jnp.asarray(xs))
    np.testing.assert_allclose(np.asarray(got), [_branchy(float(x))[0] for x in xs])


def test_gradient_follows_the_taken_branch():
    def staged(x):
        (y,) = if_stmt(x > 1.0, lambda v: (v ** 3,), lambda v: (jnp.sin(v),), (x,),
                       names=("y",))
        return y

    g = jax.jit(jax.grad(staged))
    np.testing.assert_allclose(float(g(2.0)), 3 * 2.0 ** 2, rtol=1e-6)
    np.testing.assert_allclose(float(g(0.5)), np.cos(0.5), rtol=1e-6)


def test_traced_predicate_of_several_elements_is_a_condition_error():
    def staged(x):
        return if_stmt(x > 0, lambda v: (v,), lambda v: (-v,), (x,), names=("v",))

    with pytest.raises(autograph.ConditionError):
        jax.jit(staged)(jnp.ones(3))


# ---------------------------------------------------------------------------
# Branches that disagree


def test_branch_error_is_an_autograph_error():
    assert issubclass(autograph.BranchError, autograph.AutographError)


def test_branches_of_different_shapes_raise_branch_error():
    def staged(x):
        return if_stmt(x > 0, lambda: (jnp.zeros(2),), lambda: (jnp.zeros(3),), (),
                       names=("v",))

    with pytest.raises(autograph.BranchError) as info:
        jax.jit(staged)(1.0)
    assert type(info.value) is autograph.BranchError
    assert "v" in str(info.value)


def test_branches_of_different_structures_raise_branch_error():
    def staged(x):
        return if_stmt(x > 0, lambda: ((x, x),), lambda: ([x, x],), (), names=("pair",))

    with pytest.raises(autograph.BranchError):
        jax.jit(staged)(1.0)


def test_branches_with_different_python_strings_raise_branch_error():
    def staged(x):
        return if_stmt(x > 0, lambda: ("relu",), lambda: ("tanh",), (), names=("mode",))

    with pytest.raises(autograph.BranchError):
        jax.jit(staged)(1.0)


def test_the_same_python_string_on_both_branches_is_kept():
    def staged(x):
        return if_stmt(x > 0, lambda: ("relu", x), lambda: ("relu", -x), (),
                       names=("mode", "v"))

    out = {}

    def run(x):
        mode, v = staged(x)
        out["mode"] = mode
        return v

    np.testing.assert_allclose(float(jax.jit(run)(-4.0)), 4.0)
    assert out["mode"] == "relu"


def test_the_same_python_number_on_both_branches_stays_a_python_number():
    out = {}

    def run(x):
        out["n"], v = if_stmt(x > 0, lambda: (1, x), lambda: (1, -x), (), names=("n", "v"))
        return v

    jax.jit(run)(2.0)
    assert out["n"] == 1 and type(out["n"]) is int


def test_python_predicate_never_checks_branch_agreement():
    # the mismatch is only an error when both branches are staged
    (v,) = if_stmt(True, lambda: (jnp.zeros(2),), lambda: (jnp.zeros(3),), (), names=("v",))
    assert v.shape == (2,)


# ---------------------------------------------------------------------------
# if_exp


@pytest.mark.parametrize("pred, want", [(True, "a"), (False, "b"), (0, "b"), ("x", "a")])
def test_if_exp_python_predicate_evaluates_one_thunk(pred, want):
    called = []

    def thunk(name):
        def run():
            called.append(name)
            return name
        return run

    assert if_exp(pred, thunk("a"), thunk("b")) == want
    assert called == [want]


def test_if_exp_traced_predicate():
    def staged(x):
        return if_exp(x > 0.5, lambda: x * x, lambda: 1.0 - x)

    f = jax.jit(staged)
    for x in (0.0, 0.5, 0.75, 3.0):
        want = x * x if x > 0.5 else 1.0 - x
        np.testing.assert_allclose(float(f(x)), want, rtol=1e-6)


def test_if_exp_traced_predicate_with_mismatched_shapes():
    def staged(x):
        return if_exp(x > 0, lambda: jnp.zeros(2), lambda: jnp.zeros((2, 2)))

    with pytest.raises(autograph.BranchError):
        jax.jit(staged)(1.0)


def test_module_exports():
    # what generated code names through `ag__` are these very functions
    assert autograph.runtime.if_stmt is conditionals.if_stmt
    assert autograph.runtime.if_exp is conditionals.if_exp


# ---------------------------------------------------------------------------
# derivatives under vmap: the branch an element does not take


def test_the_gradient_of_a_vmapped_branch_ignores_the_branch_an_element_does_not_take():
    # under `vmap` with a batched condition both branches run on every element; the
    # one an element does not take (`jnp.sqrt` of a negative number) must not reach
    # its gradient (NaN). JAX guards a `cond` it batches itself, but not one inside a
    # derivative rule that is linearized before it is batched, as loop forms are
    # (`custom_jvp` rules, then `jax.grad(jax.vmap(...))`)
    def branch(x):
        def sqrt_of(x):
            return (jnp.sqrt(x),)

        def zero(x):
            return (x * 0.0,)

        return if_stmt(x > 0, sqrt_of, zero, (x,), names=("x",))[0]

    def expression(x):
        return if_exp(x > 0, lambda: jnp.log(x), lambda: -x)

    def python_sqrt(x):
        return jnp.sqrt(x) if x > 0 else x * 0.0

    def python_log(x):
        return jnp.log(x) if x > 0 else -x

    def in_a_rule(fn):
        ruled = jax.custom_jvp(fn)
        ruled.defjvp(lambda primals, tangents: jax.jvp(fn, primals, tangents))
        return ruled

    xs = jnp.array([1.0, -2.5, 0.7, 0.0])
    for fn, eager in ((branch, python_sqrt), (expression, python_log)):
        want = [float(jax.grad(eager)(x)) for x in xs]
        for form in (fn, in_a_rule(fn), jax.jit(in_a_rule(fn))):
            batched = jax.grad(lambda v: jnp.sum(jax.vmap(form)(v)))(xs)  # noqa: B023
            np.testing.assert_allclose(batched, want, rtol=1e-6)
            np.testing.assert_allclose(jax.vmap(jax.grad(form))(xs), want, rtol=1e-6)
            np.testing.assert_allclose(jnp.diagonal(jax.jacfwd(jax.vmap(form))(xs)), want,
                                       rtol=1e-6)


def test_a_branch_on_one_value_compiles_without_the_guard():
    # where the condition is one value the branch not taken never runs: the guard is
    # `select(p, x, x)`, which the compiled program no longer holds
    def f(x):
        return if_stmt(x > 0, lambda x: (jnp.sqrt(x),), lambda x: (x * 0.0,), (x,),
                       names=("x",))[0]

    compiled = jax.jit(f).lower(jnp.float32(1.0)).compile().as_text()
    assert "select" not in compiled
    assert float(jax.jit(f)(4.0)) == 2.0 and float(jax.jit(f)(-4.0)) == 0.0
