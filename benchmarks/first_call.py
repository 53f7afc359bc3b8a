"""First call (convert + trace + compile + run) of ordinary functions against hand-written ``lax``.

Each measurement defines the function afresh from its source (a new code
object, so no conversion or tracing cache helps either side), wraps it in
``jax.jit`` and times its first call. Converted and hand-written versions
are measured alternately, and the median of the rounds is kept.
"""

from __future__ import annotations

import gc
import itertools
import linecache
import statistics
import time

import jax
import jax.numpy as jnp

import autograph

PRELUDE = """\
import collections
import jax
import jax.numpy as jnp
from jax import lax
State = collections.namedtuple("State", "t value")
"""

CASES = {
    "while with a Python-int counter": ("""
def f(x, n):
    i = 0
    while i < n:
        x = x * 0.9 + jnp.sin(x)
        i += 1
    return x
""", """
def f(x, n):
    def body(s):
        i, x = s
        return i + 1, x * 0.9 + jnp.sin(x)
    return lax.while_loop(lambda s: s[0] < n, body, (0, x))[1]
""", lambda: (jnp.linspace(0.0, 1.0, 256), jnp.int32(20))),

    "line search (while a and b, break, namedtuple)": ("""
def f(x, d):
    f0 = jnp.sum(x ** 2)
    slope = jnp.sum(2 * x * d)
    s = State(1.0, jnp.sum((x + d) ** 2))
    it = 0
    while s.value > f0 + 1e-4 * s.t * slope and it < 30:
        if s.t < 1e-6:
            break
        t = s.t * 0.5
        s = State(t, jnp.sum((x + t * d) ** 2))
        it += 1
    return s.t
""", """
def f(x, d):
    f0 = jnp.sum(x ** 2)
    slope = jnp.sum(2 * x * d)
    def cond(c):
        s, it = c
        return (s.value > f0 + 1e-4 * s.t * slope) & (it < 30) & (s.t >= 1e-6)
    def body(c):
        s, it = c
        t = s.t * 0.5
        return State(t, jnp.sum((x + t * d) ** 2)), it + 1
    s0 = State(jnp.float32(1.0), jnp.sum((x + d) ** 2))
    return lax.while_loop(cond, body, (s0, 0))[0].t
""", lambda: (jnp.linspace(0.0, 1.0, 256), -3.0 * jnp.linspace(0.0, 1.0, 256))),

    "for range with an if inside": ("""
def f(x):
    for i in range(50):
        if x.sum() > 0:
            x = x * 0.9 - 0.1
        else:
            x = x * 1.1 + 0.1
    return x
""", """
def f(x):
    def body(i, x):
        return lax.cond(x.sum() > 0, lambda x: x * 0.9 - 0.1, lambda x: x * 1.1 + 0.1, x)
    return lax.fori_loop(0, 50, body, x)
""", lambda: (jnp.linspace(-1.0, 1.0, 256),)),

    "nested if/elif chain": ("""
def f(x):
    s = x.sum()
    if s > 10:
        y = x * 2
    elif s > 0:
        if x[0] > 0:
            y = x + 1
        else:
            y = x - 1
    elif s > -10:
        y = -x
    else:
        y = x * 0
    return y
""", """
def f(x):
    s = x.sum()
    inner = lambda x: lax.cond(x[0] > 0, lambda x: x + 1, lambda x: x - 1, x)
    low = lambda x: lax.cond(s > -10, lambda x: -x, lambda x: x * 0, x)
    mid = lambda x: lax.cond(s > 0, inner, low, x)
    return lax.cond(s > 10, lambda x: x * 2, mid, x)
""", lambda: (jnp.linspace(-1.0, 1.0, 256),)),
}

_fresh = itertools.count()


def _define(source):
    name = f"<first_call_{next(_fresh)}>"
    text = PRELUDE + source
    linecache.cache[name] = (len(text), None, text.splitlines(True), name)
    namespace = {}
    exec(compile(text, name, "exec"), namespace)
    return namespace["f"]


def _first_call(make, args):
    # Both sides start from a collected heap, and the function outlives the
    # timing: freeing it (and its executable, about 1 ms) is not part of a first
    # call. A function defined by `exec` sits in a cycle with its namespace and
    # is freed by a later collection, a converted one at once; timing the
    # teardown would charge it to one side only.
    gc.collect()
    start = time.perf_counter()
    fn = make()
    jax.block_until_ready(fn(*args))
    elapsed = time.perf_counter() - start
    del fn
    return elapsed


def main(rounds: int = 7) -> list:
    rows = []
    # warm JAX's and autograph's own one-time costs
    warm = _define(CASES["nested if/elif chain"][0])
    jax.jit(autograph.convert(warm))(jnp.ones(3))
    for name, (user, hand, make_args) in CASES.items():
        args = make_args()
        tc, th = [], []
        for _ in range(rounds):
            tc.append(_first_call(lambda: jax.jit(autograph.convert(_define(user))), args))
            th.append(_first_call(lambda: jax.jit(_define(hand)), args))
        c, h = statistics.median(tc), statistics.median(th)
        rows.append({"program": name, "converted_ms": 1e3 * c, "lax_ms": 1e3 * h,
                     "ratio": c / h})
        print(f"first call, {name:<48} converted {1e3 * c:7.1f} ms  lax {1e3 * h:7.1f} ms  "
              f"ratio {c / h:.3f}")
    return rows


if __name__ == "__main__":
    main()
