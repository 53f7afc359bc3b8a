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
            x = ag__.setitem(x, (slice(1, 3, None), ...), v, op='+')
            x = ag__.setitem(x, 0, ag__.setitem(x[0], 1, v))
            return x
    """, id="slices, augmented, nested"),
    pytest.param("""
        def f(self, k, v):
            self.buf[k] *= v
            return self
    """, """
        def f(self, k, v):
            ag__.setitem_attr(self, 'buf', k, v, op='*')
            return self
    """, id="attribute base"),
    pytest.param("""
        def f(x):
            a, x[0] = 1, 2
            return x
    """, """
        def f(x):
            (a, x[0]) = (1, 2)
            return x
    """, id="unpacking left as it is"),
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
