"""``print`` and ``assert`` inside ``autograph.function``, and ``autograph.print``.

A traced ``print`` must print at run time, in order, the same text as the
plain-Python run of the same function on concrete values.
"""

from __future__ import annotations

import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph


def _jitted_output(capsys, fn, *calls):
    f = autograph.function(fn)
    capsys.readouterr()
    for args in calls:
        f(*args)
    jax.effects_barrier()
    return capsys.readouterr()


def _eager_output(capsys, fn, *calls):
    capsys.readouterr()
    for args in calls:
        fn(*args)
    return capsys.readouterr()


def _same_as_eager(capsys, fn, *calls):
    got = _jitted_output(capsys, fn, *calls)
    want = _eager_output(capsys, fn, *calls)
    assert got.out == want.out
    assert got.err == want.err
    return want.out


def _loop_prints(x, n):
    print("start", n)
    for i in range(3):
        x = x * 2
        print("step", i, "x", x, sep=", ")
    print("sum:", x.sum())
    return x


def test_print_traced_values_in_python_loop(capsys):
    out = _same_as_eager(capsys, _loop_prints, (jnp.array([1.0, 2.0]), 7))
    assert "step, 2, x, [ 8. 16.]" in out


def _branch_prints(x, n):
    if x.sum() > 0:
        print("pos", x)
    else:
        print("neg", x)
    for i in range(n):
        print("i =", i, "x*i =", x * i)
    print(x.dtype, x.shape, x > 0)
    print(x[0], 1.5, None, "s", True, "{}", "{0}")
    return x


def test_print_in_staged_branches_and_loops(capsys):
    calls = [(jnp.array([1.0, 2.0]), jnp.int32(2)), (jnp.array([-3.0, 1.0]), jnp.int32(3))]
    out = _same_as_eager(capsys, _branch_prints, *calls)
    assert out.count("pos") == 1 and out.count("neg") == 1  # only the branch taken


def _while_prints(x):
    i = 0
    while x.sum() < 10:
        x = x + 1
        print("i", i, x)
        i += 1
    return x


def test_print_in_while_loop_ordered(capsys):
    out = _same_as_eager(capsys, _while_prints, (jnp.array([1.0, 2.0]),), (jnp.array([4.0, 4.0]),))
    assert out.splitlines()[0] == "i 0 [2. 3.]"


def _print_end(x):
    print("sum:", x.sum(), end="!\n")
    print("a", x, end="")
    print("b", x, sep="")
    return x


def test_print_end_argument(capsys):
    _same_as_eager(capsys, _print_end, (jnp.array([1, 2]),))


def _print_to_stderr(x):
    print("to stderr", x, file=sys.stderr)
    print("to stdout", x)
    return x


def test_print_file_argument(capsys):
    _same_as_eager(capsys, _print_to_stderr, (jnp.array([1, 2]),))


def _print_container(x):
    print([x[1], 1], (x[0], "a"))
    return x


def test_print_container_with_python_values(capsys):
    _same_as_eager(capsys, _print_container, (jnp.array([1.0, 2.0]),))


def _callee_prints(x):
    print("callee", x)
    return x + 1


def _caller(x):
    print("caller", x)
    return _callee_prints(x)


def test_print_in_called_function(capsys):
    _same_as_eager(capsys, _caller, (jnp.int32(3),), (jnp.int32(4),))


def test_print_python_values_only_is_builtin_print(capsys):
    @autograph.function
    def f(x, n):
        print("n is", n)
        return x * n

    capsys.readouterr()
    f(jnp.ones(2), 3)
    jax.effects_barrier()
    assert capsys.readouterr().out == "n is 3\n"


def test_autograph_print_explicit_form(capsys):
    @autograph.function
    def f(x):
        autograph.print("val", x, 3)
        return x

    capsys.readouterr()
    f(jnp.int32(4))
    f(jnp.int32(5))
    jax.effects_barrier()
    assert capsys.readouterr().out == "val 4 3\nval 5 3\n"


def test_autograph_print_without_traced_values_prints_every_run(capsys):
    @autograph.function
    def f(x):
        autograph.print("plain")
        autograph.print("val", x)
        return x

    capsys.readouterr()
    f(jnp.int32(4))
    f(jnp.int32(5))
    jax.effects_barrier()
    # "when the program runs, traced or not": every call, in program order
    assert capsys.readouterr().out == "plain\nval 4\nplain\nval 5\n"


def test_autograph_print_outside_function(capsys):
    autograph.print("a", 1, sep="-")
    assert capsys.readouterr().out == "a-1\n"


# -- assert ----------------------------------------------------------------------------------------


@pytest.fixture
def positive():
    @autograph.function
    def f(x):
        assert x.sum() > 0, "sum must be positive"
        return x * 2

    return f


def test_assert_traced_true_does_nothing(positive):
    out = positive(jnp.ones(2))
    jax.effects_barrier()
    assert out.tolist() == [2.0, 2.0]


def test_assert_traced_false_raises_with_message(positive):
    with pytest.raises(Exception, match="sum must be positive"):
        positive(-jnp.ones(2)).block_until_ready()
        jax.effects_barrier()
    # the function stays usable
    assert positive(jnp.ones(2)).tolist() == [2.0, 2.0]
    jax.effects_barrier()


def test_assert_traced_without_message():
    @autograph.function
    def f(x):
        assert x.sum() > 0
        return x

    with pytest.raises(Exception, match="assert"):
        f(-jnp.ones(2)).block_until_ready()
        jax.effects_barrier()


def test_assert_traced_in_branch_only_when_taken():
    @autograph.function
    def f(x):
        if x.sum() > 0:
            assert x.min() > 0, "all positive"
        return x

    f(-jnp.ones(2))  # the branch is not taken
    jax.effects_barrier()
    f(jnp.array([1.0, 2.0]))
    jax.effects_barrier()
    with pytest.raises(Exception, match="all positive"):
        f(jnp.array([5.0, -1.0])).block_until_ready()
        jax.effects_barrier()


def test_assert_python_value_is_python_assert():
    @autograph.function
    def f(x, n):
        assert n > 0, f"n={n} must be positive"
        return x * n

    assert f(jnp.ones(2), 2).tolist() == [2.0, 2.0]
    with pytest.raises(AssertionError, match="n=-1 must be positive"):
        f(jnp.ones(2), -1)


def test_assert_under_vmap_and_grad(positive):
    with pytest.raises(Exception, match="sum must be positive"):
        jax.vmap(positive)(jnp.array([[1.0, 1.0], [-1.0, -1.0]])).block_until_ready()
        jax.effects_barrier()
    g = jax.grad(lambda x: positive(x).sum())(jnp.ones(2))
    jax.effects_barrier()
    assert g.tolist() == [2.0, 2.0]


def _fstring_steps(x, n):
    loss = x * 2.0
    for i in range(n):
        loss = loss * 0.5
        print(f"step {i}: loss={loss:.4f} [{i:>3}]")
    print(f"done {loss:.2f}", "plain", 3)
    return loss


@pytest.mark.parametrize("x,n", [(3.0, 2), (5.0, 3), (1.0, 0)])
def test_fstring_prints_the_same_text_on_every_call(x, n, capsys):
    _fstring_steps(jnp.float32(x), n)
    want = capsys.readouterr().out
    f = jax.jit(autograph.convert(_fstring_steps))
    for _ in range(2):  # every call, not only the trace
        f(jnp.float32(x), n)
        jax.effects_barrier()
        assert capsys.readouterr().out == want


def _checked_loss(x):
    loss = x * 2.0
    assert loss < 100.0, f"loss too big: {loss:.1f}"
    return loss


def test_fstring_assert_message_formatted_at_run_time():
    f = jax.jit(autograph.convert(_checked_loss))
    assert float(f(3.0)) == 6.0
    with pytest.raises(Exception, match="loss too big: 1000.0"):
        jax.block_until_ready(f(500.0))
        jax.effects_barrier()


# -- under `jax.vmap`: each element prints what its own run prints -----------------


def _per_element(capsys, fn, xs) -> list[list[str]]:
    """The lines the plain-Python run prints for each element of ``xs``."""
    lines = []
    for x in xs:
        capsys.readouterr()
        fn(x)
        lines.append(capsys.readouterr().out.splitlines())
    return lines


def _step_by_step(lines: list[list[str]]) -> list[str]:
    """Per-element lines of a loop printing once a step, as a batched loop prints them:
    step by step, in element order, the elements still looping."""
    return [ls[t] for t in range(max(map(len, lines))) for ls in lines if t < len(ls)]


def _vmapped_output(capsys, fn, xs, jit: bool) -> list[str]:
    f = jax.vmap(autograph.convert(fn))
    f = jax.jit(f) if jit else f
    capsys.readouterr()
    jax.block_until_ready(f(xs))
    jax.effects_barrier()
    return capsys.readouterr().out.splitlines()


def _signs(x):
    if x > 0:
        print("pos {:.1f}".format(x))
    else:
        print("neg", x)
    return x


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "eager"])
def test_print_in_a_staged_branch_under_vmap_prints_for_the_elements_taking_it(jit, capsys):
    xs = jnp.array([1.0, -2.0, 3.0, -4.0])
    want = [line for lines in _per_element(capsys, _signs, xs) for line in lines]
    got = _vmapped_output(capsys, _signs, xs, jit)
    assert len(got) == len(xs)
    for branch in ("pos", "neg"):  # the branches print one after the other
        assert [g for g in got if g.startswith(branch)] == [w for w in want
                                                             if w.startswith(branch)]


def _counts_up(x):
    while x < 10:
        x = x + 3
        print("x = %.1f" % x, "%s" % (x > 8))
    return x


def _doubles_until(x):
    for i in range(30):  # a `break`: staged as a loop that stops when it exits
        if x > 20:
            break
        x = x * 2
        print("i=%d x=%s" % (i, x))
    return x


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "eager"])
@pytest.mark.parametrize("fn", [_counts_up, _doubles_until])
def test_print_in_a_staged_loop_under_vmap_prints_for_the_elements_still_looping(
        fn, jit, capsys):
    xs = jnp.array([1.0, 8.0, 3.0, 25.0])
    want = _step_by_step(_per_element(capsys, fn, xs))
    assert _vmapped_output(capsys, fn, xs, jit) == want


def _checked_steps(x):
    while x < 10:
        x = x + 3
        assert x < 12, "too big: %.1f" % x
    return x


@pytest.mark.parametrize("jit", [True, False], ids=["jit", "eager"])
def test_assert_in_a_staged_while_under_vmap_checks_the_elements_still_looping(jit):
    f = jax.vmap(autograph.convert(_checked_steps))
    f = jax.jit(f) if jit else f
    # 8 -> 11 stops; another step, which the batched loop computes, would be 14
    assert f(jnp.array([1.0, 8.0])).tolist() == [10.0, 11.0]
    jax.effects_barrier()
    with pytest.raises(Exception, match="too big: 12.5"):
        jax.block_until_ready(f(jnp.array([1.0, 9.5])))
        jax.effects_barrier()


def _prints_then_checks(x):
    for i in range(20):  # staged as one `lax.scan`
        print("k", i, x)
        assert x < 2.5, "too big"
        x = x + 1
    return x


def test_failed_check_in_a_staged_loop_under_eager_vmap_has_its_effects_once(capsys):
    # Without `jax.jit` the staged loop runs as it is staged; its failure is the
    # program's own, not a reason to run the loop again unrolled.
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(AssertionError, match="too big"):
            jax.vmap(autograph.convert(_prints_then_checks))(jnp.array([0.0, 1.0]))
        jax.effects_barrier()
    assert not [w for w in caught if "unrolled" in str(w.message)]
    assert capsys.readouterr().out.splitlines() == [
        "k 0 0.0", "k 0 1.0", "k 1 1.0", "k 1 2.0", "k 2 2.0", "k 2 3.0"]


# -- changes to outside state in a staged `if` ------------------------------------


class _Settings:
    pass


SETTINGS = _Settings()
SETTINGS.mode = "off"
SETTINGS.items = []
LOG: list = []


def _sets_global_attribute(x):
    if x > 0:
        SETTINGS.mode = "on"
    return x * 2


def _appends_to_global_object_list(x):
    if x > 0:
        SETTINGS.items.append(1)
    return x


def _appends_to_global_list(x):
    y = (LOG.append(1) or x) if x > 0 else -x
    return y


def _reads_globals_only(x):
    if x > SETTINGS.__dict__.get("limit", 0.0) and len(LOG) == 0:
        y = x * len(SETTINGS.items) + 1
    else:
        y = -x
    return y


@pytest.mark.parametrize("fn, what", [
    (_sets_global_attribute, "attribute `mode` of a `_Settings` object"),
    (_appends_to_global_object_list, "a `list` it reads"),
    (_appends_to_global_list, "a `list` it reads"),
])
def test_branch_changing_outside_state_is_refused_and_undone(fn, what):
    SETTINGS.mode, SETTINGS.items[:], LOG[:] = "off", [], []
    with pytest.raises(autograph.BranchError, match="cannot change what lies outside") as info:
        jax.jit(autograph.convert(fn))(jnp.float32(-1.0))
    assert what in str(info.value)
    assert (SETTINGS.mode, SETTINGS.items, LOG) == ("off", [], [])  # undone


def test_branch_changing_a_closure_list_is_refused():
    seen = []

    def f(x):
        if x > 0:
            seen.append(x)
        return x

    with pytest.raises(autograph.BranchError, match="a `list` it reads"):
        jax.jit(autograph.convert(f))(jnp.float32(1.0))
    assert seen == []


@pytest.mark.parametrize("x", [-1.0, 2.0])
def test_python_conditions_keep_python_side_effects(x):
    SETTINGS.mode, SETTINGS.items[:] = "off", []
    assert float(autograph.convert(_sets_global_attribute)(jnp.float32(x))) == 2 * x
    assert SETTINGS.mode == ("on" if x > 0 else "off")  # concrete: Python ran one branch
    autograph.convert(_appends_to_global_object_list)(x)
    assert SETTINGS.items == ([1] if x > 0 else [])


def test_branch_reading_outside_state_is_staged():
    SETTINGS.mode, SETTINGS.items[:], LOG[:] = "off", [1, 2], []
    f = jax.jit(autograph.convert(_reads_globals_only))
    assert float(f(jnp.float32(3.0))) == 7.0
    assert float(f(jnp.float32(-3.0))) == 3.0
    assert SETTINGS.items == [1, 2]


def test_attribute_of_a_registered_dataclass_set_in_a_branch_is_carried():
    import dataclasses

    @jax.tree_util.register_dataclass
    @dataclasses.dataclass
    class Params:
        w: jax.Array

    def bump(p, x):
        if x > 0:
            p.w = p.w + x
        return p.w

    for x in (2.0, -2.0):
        want = bump(Params(jnp.float32(1.0)), x)
        assert float(jax.jit(autograph.convert(bump))(Params(jnp.float32(1.0)), x)) == want
    assert float(autograph.convert(bump)(Params(jnp.float32(1.0)), 2.0)) == 3.0  # Python `if`


def prints_in_a_long_loop(x, v, n):
    for i0 in range(24):
        i1 = 0
        while i1 < n and jnp.all(v >= x):
            print("step", i0)
            x = x - 0.5
            i1 += 1
    return x + i0


def prints_and_may_break(x, v, n):
    for i0 in range(24):
        i1 = 0
        while i1 < n and jnp.all(v >= x):
            print("step", i0)
            x = x - 0.5
            i1 += 1
        if x < -100.0:
            break
    return x + i0


@pytest.mark.parametrize("fn", [prints_in_a_long_loop, prints_and_may_break],
                         ids=lambda f: f.__name__)
def test_a_static_loop_given_up_after_staging_prints_once(capsys, fn):
    # the 24-step loop is traced as a scan (one that may stop early, with `break`),
    # then runs as Python (its index stays a Python int after it): the scan must not
    # stay in the program beside it
    import numpy as np
    args = (np.float32(-3.0), np.array([-0.4, 2.9, 0.0], np.float32), np.int32(1))
    want = fn(*args)
    expected = capsys.readouterr().out
    assert expected.count("step") == 24
    got = jax.jit(autograph.convert(fn))(*map(jnp.asarray, args))
    jax.block_until_ready(got)
    jax.effects_barrier()
    assert capsys.readouterr().out == expected
    assert float(got) == float(want)


def test_a_print_of_a_value_of_symbolic_size_prints_while_tracing_with_a_warning(capfd):
    @autograph.function(input_signature=[autograph.TensorSpec([None], jnp.float32)])
    def f(x):
        print("x is", x)
        return x * 2

    with pytest.warns(UserWarning, match="this `print` runs while tracing"):
        concrete = f.get_concrete_function()  # one trace, the size a symbol
    jax.effects_barrier()
    assert "x is" in capfd.readouterr().out  # while tracing, as plain `jax.export` prints
    np.testing.assert_allclose(concrete(jnp.ones(5)), 2 * np.ones(5))
    jax.effects_barrier()
    assert capfd.readouterr().out == ""
    np.testing.assert_allclose(f(jnp.ones(3)), 2 * np.ones(3))  # a size: printed as it runs
    jax.effects_barrier()
    assert capfd.readouterr().out == "x is [1. 1. 1.]\n"
