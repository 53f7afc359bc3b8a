"""The item-assignment converter: golden output, and NumPy habits on JAX arrays."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import autograph
from autograph.converters import item_assignments
from tests.helpers import assert_golden


@pytest.mark.parametrize("src, expected", [
    pytest.param("""
        def f(x, i, v):
            x[i] = v
            return x
    """, """
        def f(x, i, v):
            x = ag__.setitem(x, i, v)
            return x
    """, id="docstring example"),
    pytest.param("""
        def f(x, v):
            x[1:3, ...] += v
            x[0][1] = v
            return x
    """, """
        def f(x, v):
            x = ag__.setitem(x, (slice(1, 3, None), ...), v, op=ag__.operator.iadd)
            x = ag__.setitem(x, 0, ag__.setitem(x[0], 1, v))
            return x
    """, id="slices, augmented, nested"),
    pytest.param("""
        def f(self, k, v):
            self.buf[k] *= v
            return self
    """, """
        def f(self, k, v):
            ag__.setitem_attr(self, 'buf', k, v, op=ag__.operator.imul)
            return self
    """, id="attribute base"),
    pytest.param("""
        def f(x, f, j, v):
            x[f()][j] += v
            return x
    """, """
        def f(x, f, j, v):
            index = f()
            x = ag__.setitem(x, index, ag__.setitem(x[index], j, v, op=ag__.operator.iadd))
            return x
    """, id="docstring example: an index with an effect is evaluated once"),
    pytest.param("""
        def f(x, u, v):
            a, x[0] = u, v
            return x
    """, """
        def f(x, u, v):
            (a, value) = (u, v)
            x = ag__.setitem(x, 0, value)
            return x
    """, id="docstring example: unpacking"),
    pytest.param("""
        def f(x, it):
            x[next(it)] = next(it)
            return x
    """, """
        def f(x, it):
            value = next(it)
            index = next(it)
            x = ag__.setitem(x, index, value)
            return x
    """, id="the value first, then the index"),
    pytest.param("""
        def f(x, i, g):
            x[i] += g()
            return x
    """, """
        def f(x, i, g):
            item = x[i]
            item += g()
            x = ag__.setitem(x, i, item)
            return x
    """, id="augmented: the item is read before the value"),
    pytest.param("""
        def f(m, it):
            m[next(it)][next(it)] += 5
            return m
    """, """
        def f(m, it):
            index = next(it)
            item = m[index]
            index_1 = next(it)
            m = ag__.setitem(m, index, ag__.setitem(item, index_1, 5, op=ag__.operator.iadd))
            return m
    """, id="nested: each index once, each row read once, in order"),
    pytest.param("""
        def f(self, k, v):
            self.buf[k()] = v
            return self
    """, """
        def f(self, k, v):
            buf = self.buf
            index = k()
            ag__.setitem_attr(self, 'buf', index, v, current=buf)
            return self
    """, id="attribute read before the index"),
    pytest.param("""
        def f(a, c, d, v):
            a.b[c()][d()] *= v
            return a
    """, """
        def f(a, c, d, v):
            b = a.b
            index = c()
            item = b[index]
            index_1 = d()
            ag__.setitem_attr(a, 'b', index, ag__.setitem(item, index_1, v, op=ag__.operator.imul), current=b)
            return a
    """, id="attribute chain"),
    pytest.param("""
        def f(x, i, ys):
            x[i], i, *x[:2] = ys
            return x
    """, """
        def f(x, i, ys):
            (value, value_1, *value_2) = ys
            x = ag__.setitem(x, i, value)
            i = value_1
            x = ag__.setitem(x, slice(None, 2, None), value_2)
            return x
    """, id="unpacking and starred: stored in order"),
    pytest.param("""
        def f(x, y, g):
            x[0] = y[1] = g()
            return x, y
    """, """
        def f(x, y, g):
            value = g()
            x = ag__.setitem(x, 0, value)
            y = ag__.setitem(y, 1, value)
            return (x, y)
    """, id="chained targets"),
    pytest.param("""
        def f(x, y, i):
            x[i % 4] += jnp.sin(y[i]).sum()
            x[len(y)] = y
            return x
    """, """
        def f(x, y, i):
            x = ag__.setitem(x, i % 4, jnp.sin(y[i]).sum(), op=ag__.operator.iadd)
            x = ag__.setitem(x, len(y), y)
            return x
    """, id="no effect to order: one call"),
])
def test_golden(src, expected):
    assert_golden(src, expected, passes=(item_assignments,))


def scatter_loop(x, n):
    out = jnp.zeros(4)
    for i in range(n):
        out[i % 4] += x[i % 3] * i
        if out.sum() > 5.0:
            out[0] = -1.0
    return out


def masked_and_sliced(x):
    x[x > 1.0] = 0.0
    x[1:] *= 2.0
    x[..., 0] -= 1.0
    return x


def matrix_rows(m, v):
    for i in range(2):
        m[i] = m[i] + v
        m[i][0] = v * i
    return m


@pytest.mark.parametrize("n", [0, 2, 5])
def test_item_assignment_in_loops_and_branches_matches_numpy(n):
    x = np.array([1.0, 2.0, 3.0], np.float32)

    def numpy_version(x, n):
        out = np.zeros(4, np.float32)
        for i in range(n):
            out[i % 4] += x[i % 3] * i
            if out.sum() > 5.0:
                out[0] = -1.0
        return out

    want = numpy_version(x, n)
    np.testing.assert_allclose(autograph.convert(scatter_loop)(jnp.asarray(x), n), want)
    np.testing.assert_allclose(jax.jit(autograph.convert(scatter_loop))(jnp.asarray(x), n), want)


@pytest.mark.parametrize("x", [[0.5, 2.0, 3.0], [-1.0, 0.5, 0.2]])
def test_masks_slices_ellipsis(x):
    want = masked_and_sliced(np.array(x, np.float32))
    got = jax.jit(autograph.convert(masked_and_sliced))(jnp.array(x))
    np.testing.assert_allclose(got, want)


def test_rows_of_a_matrix_and_grad():
    m = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    want = matrix_rows(m.copy(), np.float32(2.0))
    got = jax.jit(autograph.convert(matrix_rows))(jnp.asarray(m), 2.0)
    np.testing.assert_allclose(got, want)
    g = jax.grad(lambda v: autograph.convert(matrix_rows)(jnp.asarray(m), v).sum())(2.0)
    assert float(g) == pytest.approx(2 * 2.0 + 1.0)  # rows get +v on 2 columns; m[1][0] = v


def test_vmap_of_item_assignment():
    def f(x):
        y = jnp.zeros(3)
        y[0] = x.sum()
        y[2] = x.max()
        return y

    xs = jnp.arange(6.0).reshape(2, 3)
    got = jax.vmap(autograph.convert(f))(xs)
    np.testing.assert_allclose(got, [[3.0, 0.0, 2.0], [12.0, 0.0, 5.0]])


def test_lists_dicts_and_numpy_arrays_keep_in_place_semantics():
    def f(d, ys, a):
        d["k"] = 1.0
        ys[0] += 2.0
        a[1] = 7.0
        return None

    d, ys, a = {}, [1.0, 2.0], np.zeros(3)
    autograph.convert(f)(d, ys, a)
    assert d == {"k": 1.0} and ys == [3.0, 2.0] and a[1] == 7.0


def test_repeated_index_is_written_once_as_in_numpy():
    def f(x, idx):
        x[idx] += 1.0
        return x

    idx = np.array([0, 0, 2])
    want = f(np.zeros(3, np.float32), idx)
    np.testing.assert_allclose(jax.jit(autograph.convert(f))(jnp.zeros(3), jnp.asarray(idx)),
                               want)


CACHE = {}


def test_globals_and_closure_variables_keep_python_meaning():
    def f(x):
        CACHE["k"] = x
        y = jnp.zeros(2)
        y[0] = x
        return y

    src = autograph.to_code(f)
    assert "CACHE['k'] = x" in src and "y = ag__.setitem(y, 0, x)" in src
    np.testing.assert_allclose(autograph.convert(f)(2.0), [2.0, 0.0])
    assert CACHE == {"k": 2.0}

    box = [0.0]

    def g(x):
        box[0] = x
        return x

    autograph.convert(g)(3.0)
    assert box == [3.0]


def rows_from_a_stack(x, v):
    rows = [x, x * 2.0, x * 3.0]
    todo = [0, 1, 2]
    rows[todo.pop()][0] = v
    return rows, len(todo)


def cells_from_an_iterator(m, v):
    it = iter([0, 1, 1, 0])
    m[next(it)][next(it)] += v
    return m, next(it)


@pytest.mark.parametrize("fn, args", [
    pytest.param(rows_from_a_stack, (np.arange(3.0, dtype=np.float32), 9.0), id="pop"),
    pytest.param(cells_from_an_iterator, (np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), 5.0),
                 id="next"),
])
def test_an_index_with_an_effect_is_evaluated_once(fn, args):
    want = fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    got = autograph.convert(fn)(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    jitted = jax.jit(autograph.convert(fn))(*[jnp.asarray(a) for a in args])
    for result in (got, jitted):
        for w, g in zip(jax.tree_util.tree_leaves(want), jax.tree_util.tree_leaves(result)):
            np.testing.assert_allclose(g, w)


def test_parts_are_evaluated_in_python_order():
    log = []

    def note(tag, value):
        log.append(tag)
        return value

    def f(x, v):
        x[note("i", 0)][note("j", 1)] += note("v", v)
        x[note("k", 1)] = note("w", x[0] * 2.0)
        x[note("a", 0)], (x[note("b", 1)][0], c) = note("rhs", (x[1], (v, 3.0)))
        return x, c

    def run(fn, x, v):
        log.clear()
        out = fn(x, v)
        return out, list(log)

    m = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    (want, want_c), want_log = run(f, m.copy(), np.float32(5.0))
    assert want_log == ["i", "j", "v", "w", "k", "rhs", "a", "b"]
    for fn, x in ((autograph.convert(f), m.copy()),
                  (jax.jit(autograph.convert(f)), jnp.asarray(m))):
        (got, got_c), got_log = run(fn, x, np.float32(5.0))
        assert got_log == want_log
        np.testing.assert_allclose(got, want)
        assert float(got_c) == want_c


class _Ring:
    def __init__(self, x):
        self.buf = [x, x]

    def slot(self):
        self.buf = self.buf + [self.buf[-1]]  # a new list: the store goes to the old one
        return 0


def ring_store(x, v):
    ring = _Ring(x)
    old = ring.buf
    ring.buf[ring.slot()] = v
    return old[0], ring.buf[0]


def test_the_attribute_is_read_before_the_index():
    want = ring_store(1.0, 2.0)
    assert want == (2.0, 1.0)
    assert autograph.convert(ring_store)(1.0, 2.0) == want
    np.testing.assert_allclose(jax.jit(autograph.convert(ring_store))(1.0, 2.0), want)


def test_an_attribute_holding_an_array_is_rebound_once():
    class Counter:
        def __init__(self):
            self.buf = jnp.zeros((3, 3))
            self.n = 0

        def next(self):
            self.n += 1
            return self.n - 1

    def f(x):
        c = Counter()
        c.buf[c.next()][c.next()] += x
        c.buf[c.next()] = x * 3.0
        return c.buf, c.n

    buf, n = jax.jit(autograph.convert(f))(2.0)
    np.testing.assert_allclose(buf, [[0.0, 2.0, 0.0], [0.0, 0.0, 0.0], [6.0, 6.0, 6.0]])
    assert n == 3


def swap_and_unpack(x, ys):
    x[0], x[1] = x[1], x[0]
    x[2], *x[3:] = ys
    return x


def test_unpacking_into_items_of_an_array():
    x = np.arange(6.0, dtype=np.float32)
    ys = np.array([7.0, 8.0, 9.0, 10.0], np.float32)
    want = swap_and_unpack(x.copy(), list(ys))
    np.testing.assert_allclose(autograph.convert(swap_and_unpack)(x.copy(), list(ys)), want)
    got = jax.jit(autograph.convert(swap_and_unpack))(jnp.asarray(x), list(jnp.asarray(ys)))
    np.testing.assert_allclose(got, want)
