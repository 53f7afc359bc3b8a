"""The staging proof (autograph/analysis/invisible.py): what it clears, and the
programs written to fool it.

A `for` over a static range of more than 16 iterations stages as one `lax.scan`
only where the proof clears its body. Each case below says whether it must
stage, and its value under `jax.jit(autograph.convert(f))` is compared with
plain `jax.jit(f)` (which unrolls it) on inputs taking different branches.
The cases written to fool the proof hide an effect or a Python use of the
index behind an alias, a container, a lambda, a property, an operator, a
subclass or a library call; every one of them must run as Python.
"""

from __future__ import annotations

import collections
import functools
import textwrap
import warnings

import gast
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph import tree_formats
from autograph.analysis import invisible

N = 20
LOG: list = []


def _staged(fn, *args) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return "scan" in str(jax.make_jaxpr(autograph.convert(fn))(*args))


def _same_as_jit(fn, *args, reference=jax.jit):
    """The converted program under `jax.jit` against ``reference(fn)`` (plain
    `jax.jit`, or the eager run for a program `jax.jit` cannot trace)."""
    LOG.clear()
    DQ.clear()
    jax.clear_caches()
    want = reference(fn)(*args)
    want_log = list(LOG)
    LOG.clear()
    DQ.clear()
    jax.clear_caches()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = jax.jit(autograph.convert(fn))(*args)
    jax.tree_util.tree_map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5), got, want)
    assert LOG == want_log
    LOG.clear()


DQ: collections.deque = collections.deque()
XS = [np.array([0.5, -1.0, 2.0], np.float32), np.array([-3.0, 0.25, 1.0], np.float32)]


# ---------------------------------------------------------------------------
# cleared: array arithmetic, jnp/lax by identity, pure helpers, pytrees


def _pure_step(x, i):
    return x * 0.9 + jnp.sin(x) * 0.01 + i * 0.001


def cleared_arithmetic(x):
    for i in range(N):
        x = x * 0.9 + jnp.cos(x).sum() * 0.01 - i * 0.001
    return x


def cleared_helper(x):
    for i in range(N):
        x = _pure_step(x, i)
    return x


def cleared_python_float_start(x):
    acc = 0.0
    for i in range(N):
        acc = acc + x[i % 3] * i
    return acc


def cleared_item_assignment(x):
    out = jnp.zeros(N)
    for i in range(N):
        out = out.at[i].set(x[i % 3] * i)
        x = x * 0.5
    return out


def cleared_tree_map(x):
    p = {"a": x, "b": x * 2.0}
    for i in range(N):
        # (a lambda that closes over `i` keeps `i` a Python int after the loop, which
        # a scan cannot hand back: that loop runs as Python)
        p = jax.tree_util.tree_map(lambda v, w: v * 0.9 + w, p, {"a": i * 0.01, "b": i * 0.02})
    return p["a"] + p["b"]


def cleared_if_on_array(x):
    for i in range(N):
        if x.sum() > 0:
            x = x - 0.5
        else:
            x = x + 0.25 * i
    return x


def cleared_counter(x):
    n = 0
    for i in range(N):
        x = x * 0.9
        n += 1
    return x * n


def cleared_lax_scan_inside(x):
    for i in range(N):
        x = jax.lax.fori_loop(0, 2, lambda j, v: v * 0.9 + j, x)
    return x


@pytest.mark.parametrize("fn", [cleared_arithmetic, cleared_helper, cleared_python_float_start,
                                cleared_item_assignment, cleared_tree_map, cleared_if_on_array,
                                cleared_counter, cleared_lax_scan_inside],
                         ids=lambda f: f.__name__)
def test_cleared_loops_stage(fn):
    assert _staged(fn, XS[0])
    for x in XS:
        _same_as_jit(fn, jnp.asarray(x), reference=lambda f: f)  # eager: `if` on arrays


# ---------------------------------------------------------------------------
# written to fool the proof: each must run as Python, with jit's answer


def _effect(v):
    LOG.append(1)
    return v


class Counter:
    def __init__(self):
        self.calls = 0

    def step(self, v):
        LOG.append("step")
        return v * 0.5

    @property
    def scale(self):
        LOG.append("scale")
        return 0.5

    def __radd__(self, other):
        LOG.append("radd")
        return other


class LoggingDict(dict):
    def __getitem__(self, key):
        LOG.append(key)
        return super().__getitem__(key)


OBJ = Counter()
FNS = {"f": _effect}
LD = LoggingDict(w=1.0)
with_effect = lambda v: (LOG.append("lambda"), v)[1]  # noqa: E731


def fool_alias(x):
    o = OBJ
    for i in range(N):
        x = o.step(x) + 1.0
    return x


def fool_function_in_dict(x):
    for i in range(N):
        x = FNS["f"](x) * 0.9
    return x


def fool_getattr_call(x):
    for i in range(N):
        x = getattr(OBJ, "st" + "ep")(x) + 1.0
    return x


def fool_lambda_global(x):
    for i in range(N):
        x = with_effect(x) * 0.9
    return x


def fool_property(x):
    for i in range(N):
        x = x * OBJ.scale
    return x


def fool_operator(x):
    for i in range(N):
        x = x * 0.9 + OBJ
    return x


def fool_dict_subclass(x):
    for i in range(N):
        x = x * LD["w"] * 0.9
    return x


def fool_partial(x):
    f = functools.partial(_effect)
    for i in range(N):
        x = f(x) * 0.9
    return x


def fool_tree_map_helper(x):
    for i in range(N):
        x = jax.tree_util.tree_map(_effect, x) * 0.9
    return x


def _formats_first(t):
    LOG.append(str(t[0]))
    return t[1]


def fool_index_in_tuple_to_map(x):
    for i in range(N):
        x = jax.tree_util.tree_map(lambda v: v * 0.9, x) + _formats_first((i, 1.0))
    return x


def _index_type(k):
    return 1.0 if isinstance(k, int) else 2.0


def fool_index_through_local(x):
    for i in range(N):
        k = i + 1
        j = k
        x = x + _index_type(j)
    return x


def fool_index_in_list_then_helper(x):
    for i in range(N):
        ks = [i]
        x = x + _index_type(ks[0])
    return x


def fool_deque_append(x):
    for i in range(N):
        DQ.append(1)
        LOG.append(len(DQ))
        x = x * 0.9
    return x


def fool_closure_list_item(x):
    box = [0]
    for i in range(N):
        box[0] = box[0] + 1
        x = x * 0.9
    return x * box[0]


def fool_print_python_only(x):
    for i in range(N):
        x = x * 0.9
        LOG.append(i)
    return x


@pytest.mark.parametrize("fn", [fool_alias, fool_function_in_dict, fool_getattr_call,
                                fool_lambda_global, fool_property, fool_operator,
                                fool_dict_subclass, fool_partial, fool_tree_map_helper,
                                fool_index_in_tuple_to_map, fool_index_through_local,
                                fool_index_in_list_then_helper, fool_deque_append,
                                fool_closure_list_item, fool_print_python_only],
                         ids=lambda f: f.__name__)
def test_programs_written_to_fool_the_proof_run_as_python(fn):
    assert not _staged(fn, XS[0])
    for x in XS:
        DQ.clear()
        _same_as_jit(fn, x)


# ---------------------------------------------------------------------------
# the verdict: typed, with the blocker and its line


def _verdict(source: str, **names) -> invisible.Verdict:
    tree = tree_formats.parse_gast(textwrap.dedent(source))
    loop = next(n for n in gast.walk(tree) if isinstance(n, gast.For))
    scope = invisible.SourceScope({"jnp": "jax.numpy", "jax": "jax"},
                                  {f.name: f for f in tree.body
                                   if isinstance(f, gast.FunctionDef)})
    return invisible.prove_source_loop(loop, scope, ("x",), "model.py")


def test_verdict_names_the_blocker_and_its_line():
    v = _verdict("""
        def f(x, P):
            for i in range(100):
                k = i + 1
                x = x + P.get(f"w{k}", 0.0)
            return x
        """)
    assert not v.proven
    assert "formats `k`" in v.blocker and "computed from the loop index" in v.blocker
    assert v.location is not None and v.location.lineno == 5 and "model.py:5" in v.why


def test_verdict_follows_helpers_of_the_same_source():
    v = _verdict("""
        def step(x, i):
            return x * 0.9 + jnp.sin(x) * i

        def f(x):
            for i in range(100):
                x = step(x, i)
            return x
        """)
    assert v.proven and not v.pending


def test_verdict_blocks_a_write_in_a_helper():
    v = _verdict("""
        def step(x, store):
            store.last = x
            return x

        def f(x, store):
            for i in range(100):
                x = step(x, store)
            return x
        """)
    assert not v.proven
    assert "in `step`" in v.blocker and "attribute `store.last`" in v.blocker
    assert v.location.lineno == 3


def test_verdict_leaves_unknown_calls_to_the_run():
    v = _verdict("""
        def f(x):
            for i in range(100):
                x = helper(x)
            return x
        """)
    assert v.proven and v.pending == ("helper",)


def test_verdict_blocks_a_python_value_carried():
    v = _verdict("""
        def f(x):
            for i in range(100):
                last = i
                x = x * 0.5
            return x, last
        """)
    # `last` is not in `carried` here (the source proof carries `x` only), so the
    # loop is cleared; the run-time proof sees `last` in the state
    assert v.proven

    def followed(x):  # a Python int the staged loop follows exactly: staged
        last = 0
        for i in range(N):
            last = i * 2
            x = x * 0.5
        return x, jnp.zeros(last)

    def kept(x):  # a Python float: it would be an array, so Python
        last = 0.0
        for i in range(N):
            last = i * 0.5
            x = x * 0.5
        return x, jnp.zeros(int(last))
    assert _staged(followed, XS[0]) and not _staged(kept, XS[0])
    _same_as_jit(followed, XS[0])
    _same_as_jit(kept, XS[0])


def test_explain_prints_the_blocker(tmp_path, capsys):
    from autograph.cli import main
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent("""
        import logging
        import jax.numpy as jnp

        LOG = logging.getLogger(__name__)
        OUT = []

        def f(x):
            for i in range(100):
                x = x * 0.9 + jnp.sin(x)
                OUT.append(1)
            return x
        """))
    main(["explain", f"{path}:f"])
    text = " ".join(capsys.readouterr().out.split())
    assert "staging it is not proven" in text
    assert "OUT.append" in text and "model.py:11" in text


# ---------------------------------------------------------------------------
# the watch stays where Python cannot run the block: an `and`/`or` whose left
# operand is traced runs its right operand's Python while tracing, as a branch


def _logs_and_tests(v):
    LOG.append("right")
    return v > 1.0


def right_operand_with_an_effect(x):
    if x.sum() > 0 and _logs_and_tests(x.sum()):
        x = x * 2.0
    return x


def right_operand_without_one(x):
    if x.sum() > 0 and x.sum() < 10.0:
        x = x * 2.0
    return x


def test_right_operand_of_a_traced_and_without_an_effect_runs():
    for x in XS:
        np.testing.assert_allclose(jax.jit(autograph.convert(right_operand_without_one))(x),
                                   right_operand_without_one(x))


def test_right_operand_of_a_traced_and_is_a_branch():
    LOG.clear()
    with pytest.raises(autograph.BranchError, match="right operand of an `and`"):
        jax.jit(autograph.convert(right_operand_with_an_effect))(jnp.asarray(XS[0]))
    assert LOG == []  # what it changed is undone


# ---------------------------------------------------------------------------
# past the proof's bounds: not proven, so Python


def _chain(depth):
    """``h0(x) -> h1(x) -> ... -> h{depth}(x)``, each a pure helper."""
    namespace = {"jnp": jnp}
    source = "".join(f"def h{k}(x):\n    return h{k + 1}(x) * 0.5\n" for k in range(depth))
    source += f"def h{depth}(x):\n    return jnp.sin(x)\n"
    return source, namespace


def test_helpers_past_the_depth_bound_run_as_python(tmp_path):
    import importlib.util
    for depth, staged in ((3, True), (12, False)):
        source, _ = _chain(depth)
        path = tmp_path / f"chain{depth}.py"
        path.write_text("import jax.numpy as jnp\n" + source + textwrap.dedent("""
            def f(x):
                for i in range(20):
                    x = x + h0(x)
                return x
            """))
        spec = importlib.util.spec_from_file_location(f"chain{depth}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        assert _staged(module.f, XS[0]) is staged
        _same_as_jit(module.f, XS[0])


BIG = [[0] for _ in range(6000)]


def fool_past_a_walk_limit(x):
    for i in range(N):
        x = x + len(BIG[-1]) * 0.0 + 0.5
        BIG[-1].append(1)
    return x


def test_state_past_any_walk_limit_runs_as_python():
    before = len(BIG[-1])
    assert not _staged(fool_past_a_walk_limit, XS[0])
    assert len(BIG[-1]) == before + N  # the Python loop ran (the staging never did)
    _same_as_jit(fool_past_a_walk_limit, XS[0])
