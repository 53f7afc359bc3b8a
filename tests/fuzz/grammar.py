"""A grammar of random, well-formed Python functions for differential fuzzing.

Every generated program is ``def f(x, v, n):`` over a float32 scalar ``x``, a
float32[3] vector ``v`` and a small int32 ``n`` (0..4), built from

* assignments and augmented assignments to float locals ``a b c``, vector
  locals ``w u``, int locals ``k j`` and a bool local ``p`` (the parameters
  may be reassigned too);
* ``jnp.sin``, ``jnp.tanh``, ``jnp.minimum``, ``jnp.where``, ... on those, and
  Python's ``math.sin``, ``math.tanh``, ``math.fabs``, ``math.floor``, ... (in
  ``f`` only: a plain helper under ``jax.grad`` cannot call them in Python);
* Python floats of an int (a loop index too): ``i * 0.1``, ``i / 3``,
  ``0.9 ** i``, ``1 - 0.999 ** i`` (float64 in Python);
* ``if``/``elif``/``else`` on comparisons (chained too), reductions of
  vectors (``jnp.any(w > a)``, ``v.sum() > x``), ``and``/``or``/``not``;
* ``while`` loops bounded by a counter (``i1 < n`` with ``i1 += 1``; a loop
  whose increment comes last has no ``continue``), ``while`` loops with no
  counter that run until a growing float passes a bound (``while g1 < 4.0``),
  ``for`` over static
  ranges (short ones, which run as Python loops, and ones of 19-20 steps,
  which are staged), traced ranges (``range(n)``, ``range(k % 4)``) and arrays;
* ``match`` on an int expression: literal cases, an or-pattern, a capture
  with a guard and a wildcard, bodies as ``if`` branches;
* ``break``, ``continue`` and ``return`` at the end of blocks at any depth,
  and ``if ...: break`` first in a ``while`` body,
  nesting up to depth 3, and locals first assigned inside loops and
  branches (occasionally read where they may be unassigned);
* helper functions ``h1``, ``h2`` of the same three parameters, defined
  before ``f``: decorated with ``@autograph.convert`` or
  ``@autograph.function`` (any body), or plain or ``@jax.jit`` (straight-line
  bodies, which plain Python can trace), called from ``f`` directly and
  through ``jax.grad``, ``jax.value_and_grad``, ``jax.vmap``, ``jax.jit``,
  ``jax.checkpoint``, ``jax.vmap(jax.grad(h))``, ``jax.grad(jax.grad(h))`` and
  the gradient of a vmapped helper's sum;
* ``python`` statements and atoms (``tests/fuzz/python_values.py``): long
  static loops whose index is used as a Python value, small-dtype variables
  started from Python numbers, dicts, aliased lists, a helper that appends to
  a module-level list, nested item assignments with side-effecting indices,
  and ``print``; what they build is returned too.

* user functions handed to a library: ``functools.reduce(_larger, [...])``,
  ``sorted([...], key=_magnitude)``, ``map(_magnitude, [...])`` (``_larger`` and
  ``_magnitude`` branch on their arguments; defined in the harness's header);
* a list ``hist = []`` that ``f`` only appends to (``hist.append(...)``,
  ``hist.extend([...])``) in any block, and never reads;

* an object ``o = State(x)`` of a module-level class, whose attributes
  ``o.t`` (a float) and ``o.m`` (an int counter) are assigned, updated,
  read and set by its method ``o.bump(...)`` in any block, and ``o.w``, the
  int 0 until a block assigns it a float32[2] (``o.w = jnp.stack([...])``, a
  loop carrying it with the body's type where the body assigns it before
  reading it); all three are returned.

The plain-Python run of the module (decorators included) is the meaning of
the program. It is always well defined: vector conditions are
reduced, indices are taken ``% 3``, int locals stay small (assignments are
``% 5``; updates are additive) and loops are bounded. It may still raise
``UnboundLocalError``, or ``ZeroDivisionError`` where an index divisor
reaches zero, which the harness accounts for.

Decisions are drawn from a :class:`Chooser`, so the same grammar serves
Hypothesis (``HypothesisChooser``: shrinks toward the first alternative, i.e.
fewer and simpler statements) and seeded campaigns (``RandomChooser``).
"""

from __future__ import annotations

import dataclasses
import random
from typing import Sequence

from tests.fuzz.python_values import EXTRAS, FEATURES, PythonValues

F, V, I, B = "float", "vec", "int", "bool"

PARAMS = {"x": F, "v": V, "n": I}
LOCALS = {"a": F, "b": F, "c": F, "w": V, "u": V, "k": I, "j": I, "p": B}
MAX_DEPTH = 3


def counter(depth: int) -> str:
    return f"i{depth}"


def element(depth: int) -> str:
    return f"e{depth}"


def type_of(name: str) -> str:
    if name in PARAMS:
        return PARAMS[name]
    if name in LOCALS:
        return LOCALS[name]
    if name[0] == "i":
        return I
    if name[0] == "e":
        return F
    raise KeyError(name)


# ---------------------------------------------------------------------------
# Choosers


class Chooser:
    """Where the grammar's decisions come from. Alternative 0 is the simplest."""

    def integer(self, lo: int, hi: int) -> int:  # inclusive
        raise NotImplementedError

    def flip(self, p: float) -> bool:
        """True with probability ``p``; shrinks to False.

        Draws stay within 0..99, where Hypothesis draws about uniformly (wider
        ranges lean hard toward small values), and True is a band in the middle
        (Hypothesis also favours the bounds of a range).
        """
        if p >= 0.01:
            width = int(round(p * 100))
            return 50 - width // 2 <= self.integer(0, 99) < 50 - width // 2 + width
        if self.integer(0, 99) != 50:
            return False
        width = int(round(p * 10000))
        return 50 - width // 2 <= self.integer(0, 99) < 50 - width // 2 + width

    def pick(self, options: Sequence, weights: Sequence[float] | None = None):
        if weights is None:
            return options[self.integer(0, len(options) - 1)]
        total_w = float(sum(weights))
        scaled = [0 if w <= 0 else max(1, int(round(w * 100 / total_w))) for w in weights]
        r = self.integer(0, sum(scaled) - 1)
        for opt, w in zip(options, scaled):
            if r < w:
                return opt
            r -= w
        raise AssertionError("unreachable")


class RandomChooser(Chooser):
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def integer(self, lo, hi):
        return self.rng.randint(lo, hi)


class HypothesisChooser(Chooser):
    def __init__(self, data):
        import hypothesis.strategies as st
        self.data, self.st = data, st

    def integer(self, lo, hi):
        return self.data.draw(self.st.integers(lo, hi))


# ---------------------------------------------------------------------------
# Definite assignment


@dataclasses.dataclass
class Env:
    defs: set       # assigned on every path to here
    maybe: set      # assigned on some path (or in an earlier iteration)

    def copy(self) -> "Env":
        return Env(set(self.defs), set(self.maybe))

    def assign(self, name: str) -> None:
        self.defs.add(name)
        self.maybe.add(name)


@dataclasses.dataclass
class Loop:
    depth: int
    allow_continue: bool
    jumped: bool = False   # a jump somewhere in the body (after-loop definiteness)


@dataclasses.dataclass
class Program:
    source: str
    name: str = "f"
    maybe_reads: int = 0   # reads of a variable that some path leaves unassigned
    loops: int = 0         # proof programs: their long static loops,
    clean_loops: int = 0   # and those whose body only computes on arrays (may stage)


# ---------------------------------------------------------------------------
# The generator

_FLOAT_CONSTS = ("1.0", "0.5", "2.0", "0.0", "-1.0", "3.0", "-0.25", "1", "0")
_INT_CONSTS = ("1", "0", "2", "3")
_CMP = ("<", ">", "<=", ">=")


class Generator:
    """Draws one program from the grammar.

    ``p_maybe``: the chance that a read picks a variable some path leaves
    unassigned (Python may raise ``UnboundLocalError``; autograph may refuse).
    ``exclude``: features to leave out, for campaigns that look past a known
    failure or measure a refusal category: ``"value_boolop"`` (``a or b`` on
    numbers), ``"after_loop_reads"`` (reading, after a loop over a static
    range or an array, what its body assigned), ``"ifexp"`` (``a if c else
    b``), ``"helpers"`` (helper functions and JAX transformations of them),
    ``"match"`` (``match`` statements), ``"attributes"`` (the object ``o``),
    ``"library"`` (user functions handed to a library), ``"history"`` (the list
    ``f`` only appends to), and
    each of ``python_values.FEATURES``.
    A feature left out takes no draws: excluding all of ``FEATURES`` gives the
    programs each seed gave before they were added (``match`` statements and
    ``while`` loops with no counter (``"until_while"``), added after them, are
    left out then too).

    ``proof``: draw instead a program of the loops a static-loop staging proof
    must refuse or clear (``tests/fuzz/staging_proof.py``): straight-line code,
    which plain ``jax.jit`` runs, around ``for`` loops of 17-40 static steps
    with traced state that call helpers with effects, use the index as a Python
    value, or only compute on arrays. Off by default, when it takes no draws:
    every seed draws the program it drew before. ``exclude`` leaves out its
    kinds too (``staging_proof.PROOF_FEATURES``).
    """

    def __init__(self, ch: Chooser, *, p_maybe: float = 0.0015, max_depth: int = MAX_DEPTH,
                 exclude=(), proof: bool = False):
        self.ch = ch
        self.proof = proof
        # the grammar before python_values.FEATURES: newer constructs take no draws either
        # (helpers, whose generators exclude FEATURES, follow the program's setting)
        self.legacy = FEATURES <= set(exclude)
        self.exclude = frozenset(exclude)
        self.p_maybe = p_maybe
        self.max_depth = max_depth
        self.ret_kind = None
        self.loops: list[Loop] = []
        self.maybe_reads = 0
        self.helpers: list[tuple[str, str]] = []   # (name, kind) callable from `f`
        self.pv = PythonValues(self)
        self.attrs = False   # whether `f` has the object `o`
        self.history = False  # whether `f` has the list `hist`, only appended to

    # -- variables ---------------------------------------------------------

    def _var(self, env: Env, typ: str, must: bool = False):
        """A variable of ``typ`` to read: defined on all paths, or rarely one that may not be."""
        defs = sorted(n for n in env.defs if type_of(n) == typ)
        maybe = sorted(n for n in env.maybe - env.defs if type_of(n) == typ)
        if maybe and self.ch.flip(self.p_maybe):
            self.maybe_reads += 1
            return self.ch.pick(maybe)
        if defs:
            return self.ch.pick(defs)
        return None

    # -- expressions ---------------------------------------------------------

    def fexpr(self, env: Env, d: int) -> str:
        ch = self.ch
        if d <= 0:
            return self.fatom(env)
        kind = ch.pick(["atom", "bin", "unary", "minmax", "where", "ifexp", "vred", "idx",
                        "int", "boolop", "call", "python", "math", "library", "pyfloat"],
                       [5, 3, 2.5, 1.2, 0.8, 0 if "ifexp" in self.exclude else 0.8, 1, 0.8, 0.6,
                        0 if "value_boolop" in self.exclude else 0.15,
                        0.9 if self.helpers else 0, self.pv.atom_weight(),
                        0 if self.legacy or "math" in self.exclude else 0.5,
                        0 if self.legacy or "library" in self.exclude else 0.3,
                        0 if self.legacy or "pyfloat" in self.exclude else 0.4])
        if kind == "atom":
            return self.fatom(env)
        if kind == "python":
            return self.pv.atom()
        if kind == "call":
            return self.helper_call(env, d - 1)
        if kind == "bin":
            op = ch.pick(["+", "-", "*"], [3, 2, 1.5])
            if op == "*":  # keep products bounded
                return f"({self.fexpr(env, d - 1)} * {self.fbounded(env, d - 1)})"
            return f"({self.fexpr(env, d - 1)} {op} {self.fexpr(env, d - 1)})"
        if kind == "library":  # a module-level user function (HEADER) handed to a library
            items = ", ".join(self.fexpr(env, d - 1) for _ in range(ch.integer(2, 3)))
            return ch.pick([f"functools.reduce(_larger, [{items}])",
                            f"sorted([{items}], key=_magnitude)[0]",
                            f"sum(map(_magnitude, [{items}]))"])
        if kind == "math":  # Python's `math` on a float: traced, its `jnp` twin
            fn = ch.pick(["math.sin", "math.tanh", "math.fabs", "math.atan", "math.exp"],
                         [2, 2, 2, 1, 0.5])
            if fn == "math.exp":  # bounded: exp of a sine
                return f"math.exp(math.sin({self.fexpr(env, d - 1)}))"
            if fn == "math.fabs" and ch.flip(0.3):  # Python's int, an integer array traced
                return f"math.floor(math.fabs({self.fexpr(env, d - 1)}))"
            return f"{fn}({self.fexpr(env, d - 1)})"
        if kind == "unary":
            fn = ch.pick(["jnp.sin", "jnp.tanh", "jnp.cos", "jnp.abs", "-"])
            if fn == "-":
                return f"(-{self.fexpr(env, d - 1)})"
            return f"{fn}({self.fexpr(env, d - 1)})"
        if kind == "minmax":
            fn = ch.pick(["jnp.minimum", "jnp.maximum"])
            return f"{fn}({self.fexpr(env, d - 1)}, {self.fexpr(env, d - 1)})"
        if kind == "where":
            return (f"jnp.where({self.cond(env, d - 1)}, {self.fexpr(env, d - 1)}, "
                    f"{self.fexpr(env, d - 1)})")
        if kind == "ifexp":
            return (f"({self.fexpr(env, d - 1)} if {self.cond(env, d - 1)} "
                    f"else {self.fexpr(env, d - 1)})")
        if kind == "vred":
            red = ch.pick(["sum", "max", "min", "mean"])
            vec = self.vexpr(env, d - 1)
            return ch.pick([f"{vec}.{red}()", f"jnp.{red}({vec})"])
        if kind == "idx":
            return f"{self.vatom(env)}[{self.iexpr(env, 1)} % 3]"
        if kind == "int":
            return f"({self.iexpr(env, 1)} * {ch.pick(['0.5', '1.0', '-0.25'])})"
        if kind == "pyfloat":  # a Python float of an int (a loop index): float64 in Python
            i = self.iexpr(env, 1)
            return ch.pick([f"({i} * 0.1)", f"({i} / 3)", f"(0.9 ** {i})", f"(1 - 0.999 ** {i})"])
        # boolop: `and`/`or` on numbers, Python returns one of the operands
        op = ch.pick(["or", "and"])
        return f"({self.fexpr(env, d - 1)} {op} {self.fexpr(env, d - 1)})"

    def fbounded(self, env: Env, d: int) -> str:
        ch = self.ch
        kind = ch.pick(["const", "tanh", "sin", "min"])
        if kind == "const":
            return ch.pick(["0.5", "2.0", "-1.0", "1.5", "0.9"])
        if kind == "min":
            return f"jnp.minimum({self.fexpr(env, max(d - 1, 0))}, 1.5)"
        return f"jnp.{kind}({self.fexpr(env, max(d - 1, 0))})"

    def fatom(self, env: Env) -> str:
        ch = self.ch
        if ch.flip(0.7):
            name = self._var(env, F)
            if name is not None:
                return name
        return ch.pick(_FLOAT_CONSTS)

    def vatom(self, env: Env) -> str:
        name = self._var(env, V)
        return name if name is not None else "v"

    def vexpr(self, env: Env, d: int) -> str:
        ch = self.ch
        if d <= 0:
            return self.vatom(env)
        kind = ch.pick(["atom", "bin", "scale", "unary", "minmax", "where", "ifexp", "new",
                        "at", "vmap"], [5, 2, 2, 1.5, 1, 1, 0 if "ifexp" in self.exclude else 0.6,
                                        0.6, 0.6, 0.5 if self.helpers else 0])
        if kind == "atom":
            return self.vatom(env)
        if kind == "vmap":
            return self.helper_vmap(env, d - 1)
        if kind == "bin":
            op = ch.pick(["+", "-"])
            return f"({self.vexpr(env, d - 1)} {op} {self.vexpr(env, d - 1)})"
        if kind == "scale":
            op = ch.pick(["*", "+", "-"])
            rhs = self.fbounded(env, d - 1) if op == "*" else self.fexpr(env, d - 1)
            return f"({self.vexpr(env, d - 1)} {op} {rhs})"
        if kind == "unary":
            fn = ch.pick(["jnp.sin", "jnp.tanh", "jnp.abs", "jnp.cos"])
            return f"{fn}({self.vexpr(env, d - 1)})"
        if kind == "minmax":
            fn = ch.pick(["jnp.minimum", "jnp.maximum"])
            return f"{fn}({self.vexpr(env, d - 1)}, {self.fexpr(env, d - 1)})"
        if kind == "where":
            vec = self.vexpr(env, d - 1)
            op = ch.pick(_CMP)
            return (f"jnp.where({vec} {op} {self.fexpr(env, d - 1)}, {vec}, "
                    f"{self.fexpr(env, d - 1)})")
        if kind == "ifexp":
            return (f"({self.vexpr(env, d - 1)} if {self.cond(env, d - 1)} "
                    f"else {self.vexpr(env, d - 1)})")
        if kind == "new":
            return ch.pick(["jnp.zeros(3)", "jnp.ones(3)", "jnp.arange(3.0)",
                            f"jnp.full(3, {self.fexpr(env, d - 1)}, jnp.float32)"])
        return (f"jnp.asarray({self.vexpr(env, d - 1)}).at[{self.iexpr(env, 1)} % 3]"
                f".{ch.pick(['set', 'add'])}({self.fexpr(env, d - 1)})")

    def iatom(self, env: Env) -> str:
        if self.ch.flip(0.75):
            name = self._var(env, I)
            if name is not None:
                return name
        return self.ch.pick(_INT_CONSTS)

    def iexpr(self, env: Env, d: int) -> str:
        ch = self.ch
        if d <= 0:
            return self.iatom(env)
        kind = ch.pick(["atom", "add", "sub", "mod", "div"], [4, 2, 1.5, 0.7, 0.5])
        if kind == "atom":
            return self.iatom(env)
        if kind == "add":
            return f"({self.iexpr(env, d - 1)} + {self.iexpr(env, d - 1)})"
        if kind == "sub":
            return f"({self.iexpr(env, d - 1)} - {self.iexpr(env, d - 1)})"
        if kind == "mod":
            return f"({self.iexpr(env, d - 1)} % 3)"
        return f"({self.iexpr(env, d - 1)} // 2)"

    def cond(self, env: Env, d: int) -> str:
        ch = self.ch
        kinds = ["fcmp", "icmp", "chain", "reduce", "sumcmp", "not", "and", "or", "bool"]
        weights = [4, 1.5, 1, 1.5, 1, 0.8, 1, 1, 0.5]
        if d <= 0:
            kinds, weights = kinds[:5] + ["bool"], weights[:5] + [0.5]
        if "python_bool" in self.exclude:  # only conditions `jnp.where` can take traced
            kinds, weights = ["fcmp", "icmp", "reduce", "sumcmp"], [4, 1.5, 1.5, 1]
        kind = ch.pick(kinds, weights)
        if kind == "fcmp":
            return f"{self.fexpr(env, min(d, 1))} {ch.pick(_CMP)} {self.fexpr(env, min(d, 1))}"
        if kind == "icmp":
            op = ch.pick(_CMP + ("==", "!="))
            return f"{self.iexpr(env, 1)} {op} {self.iexpr(env, 1)}"
        if kind == "chain":
            if ch.flip(0.3):
                return (f"{self.iexpr(env, 0)} {ch.pick(['<', '<='])} {self.iexpr(env, 1)} "
                        f"{ch.pick(['<', '<='])} {self.iexpr(env, 0)}")
            ops = ch.pick([("<", "<"), ("<", "<="), (">", ">"), (">=", ">")])
            return (f"{self.fexpr(env, 0)} {ops[0]} {self.fexpr(env, 1)} {ops[1]} "
                    f"{self.fexpr(env, 0)}")
        if kind == "reduce":
            red = ch.pick(["jnp.any", "jnp.all"])
            vec = self.vexpr(env, min(d, 1))
            inner = f"{vec} {ch.pick(_CMP)} {self.fexpr(env, 0)}"
            if ch.flip(0.3):
                return f"({inner}).{red[4:]}()"
            return f"{red}({inner})"
        if kind == "sumcmp":
            red = ch.pick(["sum", "max", "min"])
            return f"{self.vatom(env)}.{red}() {ch.pick(_CMP)} {self.fexpr(env, min(d, 1))}"
        if kind == "bool":
            name = self._var(env, B)
            if name is not None:
                return name
            return f"{self.fatom(env)} > {self.fatom(env)}"
        if kind == "not":
            return f"not ({self.cond(env, d - 1)})"
        op = kind
        return f"({self.cond(env, d - 1)}) {op} ({self.cond(env, d - 1)})"

    # -- helpers and JAX transformations -----------------------------------------

    def _helper_args(self, env: Env, d: int, first: str | None = None) -> str:
        x = first if first is not None else f"1.0 * ({self.fexpr(env, max(d, 0))})"
        return f"{x}, {self.vatom(env)}, {self.iatom(env)}"

    def helper_call(self, env: Env, d: int) -> str:
        """A call of a helper, directly or through a JAX transformation (a float)."""
        ch = self.ch
        name, kind = ch.pick(self.helpers)
        # a plain helper with control flow on its argument is called directly only:
        # plain Python cannot trace it, so plain `jax.jit` would fail too
        forms = ["direct", "grad", "value_and_grad", "jit", "checkpoint", "vmap_grad",
                 "grad_grad", "grad_vmap"]
        weights = ([3, 2, 1, 1, 0.7, 0.6, 0 if self.legacy else 0.5,
                    0 if self.legacy else 0.5] if kind != "plain_if"
                   else [1, 0, 0, 0, 0, 0, 0, 0])
        form = ch.pick(forms, weights)
        args = self._helper_args(env, d)
        if form == "direct":
            return f"{name}({args})"
        if form == "grad":
            return f"jax.grad({name})({args})"
        if form == "value_and_grad":
            return f"jax.value_and_grad({name})({args})[{ch.pick(['0', '1'])}]"
        if form == "jit":
            return f"jax.jit({name})({args})"
        if form == "checkpoint":
            return f"jax.checkpoint({name})({args})"
        if form == "grad_grad":  # reverse over reverse, through the helper's loops too
            return f"jax.grad(jax.grad({name}))({args})"
        if form == "grad_vmap":  # a gradient of a batch: each element's branches and loops
            # run with the batch's, batched after they are differentiated
            rest = f"{self.vatom(env)}, {self.iatom(env)}"
            return (f"jax.grad(lambda u: jax.vmap({name}, in_axes=(0, None, None))"
                    f"(u, {rest}).sum())({self.vexpr(env, max(d, 0))}).{ch.pick(['sum', 'max'])}()")
        vec = self.vexpr(env, max(d, 0))
        return (f"jax.vmap(jax.grad({name}), in_axes=(0, None, None))"
                f"({self._helper_args(env, d, first=vec)}).{ch.pick(['sum', 'max'])}()")

    def helper_vmap(self, env: Env, d: int) -> str:
        """A helper mapped over a vector's elements with ``jax.vmap`` (a vector)."""
        candidates = [h for h in self.helpers if h[1] != "plain_if"]
        if not candidates:
            return self.vatom(env)
        name, _ = self.ch.pick(candidates)
        vec = self.vexpr(env, max(d, 0))
        return (f"jax.vmap({name}, in_axes=(0, None, None))"
                f"({self._helper_args(env, d, first=vec)})")

    def helper(self, index: int) -> tuple[str, str, str]:
        """(name, kind, source) of helper ``index``, built by a generator of its own."""
        ch = self.ch
        kind = ch.pick(["convert", "plain", "function", "jit", "plain_if"], [3, 2, 1.5, 1.5, 1])
        straight = kind in ("plain", "jit")
        sub = Generator(ch, p_maybe=0, max_depth=0 if straight else 2,
                        exclude=self.exclude | FEATURES | {"math"} | (
                            {"ifexp", "value_boolop", "bool_assign", "python_bool"}
                            if straight else set()))
        sub.ret_kind = "f"
        sub.legacy = self.legacy
        env = Env(defs=set(PARAMS), maybe=set(PARAMS))
        body, term = sub.block(env, 0, 1, 4 if straight else 5, kind="top")
        if not term:
            body.append(f"return {sub.ret_value(env)}")
        # a float on every path: `jax.grad` needs one (an int return is its own error)
        body = [_float_return(ln) for ln in body]
        name = f"h{index}"
        decorator = {"convert": "@autograph.convert\n", "function": "@autograph.function\n",
                     "jit": "@jax.jit\n"}.get(kind, "")
        src = f"{decorator}def {name}(x, v, n):\n" + "".join(f"    {ln}\n" for ln in body)
        return name, kind, src

    # -- statements ------------------------------------------------------------

    def ret_value(self, env: Env) -> str:
        parts = [self.fexpr(env, 2)]
        if "v" in self.ret_kind:
            parts.append(self.vexpr(env, 1))
        if "i" in self.ret_kind:
            parts.append(self.iexpr(env, 1))
        if self.attrs:
            parts.append("o.t, o.m, jnp.sum(o.w)")
        if self.pv.enabled:
            parts.append(EXTRAS)   # the values of `python` statements, filled in at the end
        return ", ".join(parts)

    def assign(self, env: Env) -> list[str]:
        ch = self.ch
        typ = ch.pick([F, V, I, B], [5, 2.5, 1.5, 0 if "bool_assign" in self.exclude else 0.5])
        if typ == F:
            target = ch.pick(["a", "b", "c", "x"], [3, 3, 2, 1])
            rhs = self.fexpr(env, ch.integer(1, 3))
        elif typ == V:
            target = ch.pick(["w", "u", "v"], [3, 2, 1])
            rhs = self.vexpr(env, ch.integer(1, 2))
        elif typ == I:
            target = ch.pick(["k", "j", "n"], [3, 2, 0.5])
            rhs = self.iexpr(env, ch.integer(0, 2))
            if target == "n" or (" " in rhs and not rhs.strip("()").lstrip("-").isdigit()):
                rhs = f"({rhs}) % 5"  # int locals stay small
        else:
            target = "p"
            rhs = self.cond(env, 1)
        env.assign(target)
        return [f"{target} = {rhs}"]

    def augassign(self, env: Env) -> list[str] | None:
        ch = self.ch
        typ = ch.pick([F, V, I], [5, 2, 1.5])
        target = self._var(env, typ)
        if target is None or target == "n" or target.startswith("i") or target.startswith("e"):
            return None
        if typ == F:
            op = ch.pick(["+=", "-=", "*="], [3, 2, 1])
            rhs = self.fbounded(env, 1) if op == "*=" else self.fexpr(env, ch.integer(0, 2))
        elif typ == V:
            op = ch.pick(["+=", "-=", "*="], [3, 1, 1])
            if op == "*=":
                rhs = self.fbounded(env, 1)
            else:
                rhs = ch.pick([self.fexpr(env, 1), self.vexpr(env, 1)])
        else:
            op = ch.pick(["+=", "-="])
            rhs = self.iatom(env)
        env.assign(target)
        return [f"{target} {op} {rhs}"]

    def jump(self, env: Env, top_of_loop: bool) -> str | None:
        """A `break`, `continue` or `return` to end a block with, or None."""
        ch = self.ch
        options, weights = [], []
        if self.loops:
            options.append("break")
            weights.append(3)
            if self.loops[-1].allow_continue:
                options.append("continue")
                weights.append(2)
        options.append("return")
        weights.append(1.5 if self.loops else 1)
        p = 0.08 if top_of_loop else 0.35
        if not ch.flip(p):
            return None
        kind = ch.pick(options, weights)
        if kind == "return":
            for lp in self.loops:
                lp.jumped = True
            return f"return {self.ret_value(env)}"
        if kind == "continue":
            self.loops[-1].jumped = True
            return "continue"
        self.loops[-1].jumped = True
        return "break"

    def block(self, env: Env, depth: int, lo: int, hi: int, *, kind: str):
        """Statements of a block at nesting ``depth``; mutates ``env``.

        Returns (lines, terminated): terminated when every path through the
        block ends in a jump (the code after it is dead).
        """
        lines = []
        count = self.ch.integer(lo, hi)
        for _ in range(count):
            out, terminated = self.statement(env, depth)
            lines += out
            if terminated:
                return lines, True
        if kind in ("if", "loop") and depth > 0:
            j = self.jump(env, top_of_loop=(kind == "loop"))
            if j is not None:
                return lines + [j], True
        return lines, False

    def statement(self, env: Env, depth: int):
        ch = self.ch
        kinds = ["assign", "aug", "if", "for", "while", "python", "match", "attr", "history"]
        legacy = "match" in self.exclude or FEATURES <= self.exclude
        weights = [5, 3, 2.2, 1.4, 1.1, self.pv.weight(), 0 if legacy else 0.4,
                   0.8 if self.attrs else 0, 0.6 if self.history else 0]
        if depth >= self.max_depth:
            kinds, weights = kinds[:2] + kinds[5:6], weights[:2] + weights[5:6]
        kind = ch.pick(kinds, weights)
        if kind == "history":  # appended to, never read: no block carries it
            if ch.flip(0.3):
                return [f"hist.extend([{self.fexpr(env, 1)}, {self.vexpr(env, 1)}])"], False
            return [f"hist.append({self.fexpr(env, ch.integer(1, 2))})"], False
        if kind == "python":
            return self.pv.statement(env, depth)
        if kind == "match":
            return self.match_stmt(env, depth)
        if kind == "attr":
            return self.attr_stmt(env), False
        if kind == "aug":
            out = self.augassign(env)
            return (out, False) if out is not None else (self.assign(env), False)
        if kind == "assign":
            return self.assign(env), False
        if kind == "if":
            return self.if_stmt(env, depth)
        if kind == "for":
            return self.for_stmt(env, depth), False
        return self.while_stmt(env, depth), False

    def attr_stmt(self, env: Env) -> list[str]:
        """An assignment, update or read of the attributes of ``o``."""
        ch = self.ch
        form = ch.pick(["set", "aug", "count", "method", "read", "fresh", "read_fresh"],
                       [2, 3, 1, 1.5, 2, 0 if self.legacy else 1.2, 0 if self.legacy else 0.6])
        if form == "fresh":  # an int before: a loop assigning it first carries the array
            return [f"o.w = jnp.stack([{self.fexpr(env, 1)}, {self.fexpr(env, 1)}])"]
        if form == "read_fresh":
            target = ch.pick(["a", "b", "c"])
            env.assign(target)
            return [f"{target} = jnp.sum(o.w) * {self.fbounded(env, 0)}"]
        if form == "set":
            return [f"o.t = {self.fexpr(env, ch.integer(1, 2))}"]
        if form == "aug":
            op = ch.pick(["+=", "-=", "*="], [3, 2, 1])
            return [f"o.t {op} {self.fbounded(env, 1) if op == '*=' else self.fexpr(env, 1)}"]
        if form == "count":
            return ["o.m += 1"]
        if form == "method":
            return [f"o.bump({self.fexpr(env, 1)})"]
        target = ch.pick(["a", "b", "c"])
        line = f"{target} = o.t * {self.fbounded(env, 0)} + {self.fexpr(env, 1)}"
        env.assign(target)
        return [line]

    def if_stmt(self, env: Env, depth: int):
        ch = self.ch
        lines = []
        paths, all_maybe = [], set(env.maybe)
        n_elif = ch.pick([0, 1, 2], [6, 2, 0.7])
        has_else = ch.flip(0.5)
        heads = [f"if {self.cond(env, 2)}:"]
        heads += [f"elif {self.cond(env, 2)}:" for _ in range(n_elif)]
        if has_else:
            heads.append("else:")
        for head in heads:
            b_env = env.copy()
            self.pv.blocks.append("if")
            try:
                body, term = self.block(b_env, depth + 1, 1, 3, kind="if")
            finally:
                self.pv.blocks.pop()
            lines.append(head)
            lines += ["    " + ln for ln in body]
            all_maybe |= b_env.maybe
            if not term:
                paths.append(b_env)
        if not has_else:
            paths.append(env.copy())
        env.maybe = all_maybe
        if not paths:
            return lines, True
        env.defs = set.intersection(*(p.defs for p in paths))
        return lines, False

    def match_stmt(self, env: Env, depth: int):
        """``match`` on an int: each case a branch, as in ``if_stmt``."""
        ch = self.ch
        capture = f"m{depth}"   # read only by its guard and its own body
        heads = ["case 0:", f"case {ch.pick(['1 | 2', '1', '-1 | 3'])}:"]
        if ch.flip(0.5):
            heads.append(f"case {capture} if {capture} {ch.pick(_CMP)} {self.iatom(env)}:")
        has_wildcard = ch.flip(0.5)
        if has_wildcard:
            heads.append("case _:")
        lines = [f"match {self.iexpr(env, 1)}:"]
        paths, all_maybe = [], set(env.maybe)
        for head in heads:
            b_env = env.copy()
            prefix = []
            if capture in head:
                prefix = [f"k = ({capture} + 1) % 5"]
                b_env.assign("k")
            self.pv.blocks.append("if")
            try:
                body, term = self.block(b_env, depth + 1, 1, 3, kind="if")
            finally:
                self.pv.blocks.pop()
            lines.append("    " + head)
            lines += ["        " + ln for ln in prefix + body]
            all_maybe |= b_env.maybe
            if not term:
                paths.append(b_env)
        if not has_wildcard:
            paths.append(env.copy())
        env.maybe = all_maybe
        if not paths:
            return lines, True
        env.defs = set.intersection(*(p.defs for p in paths))
        return lines, False

    def _loop_body(self, env: Env, depth: int, loop: Loop, header: list[str],
                   prefix: list[str] = (), suffix: list[str] = (), at_least_once=False,
                   targets=()):
        b_env = env.copy()
        for t in targets:
            b_env.assign(t)
        self.loops.append(loop)
        self.pv.blocks.append("loop")
        try:
            body, term = self.block(b_env, depth + 1, 1, 3, kind="loop")
        finally:
            self.loops.pop()
            self.pv.blocks.pop()
        # an increment after a final jump would be dead code (the loop exits anyway)
        lines = header + ["    " + ln for ln in list(prefix) + body + (list(suffix) if not term else [])]
        env.maybe |= b_env.maybe
        if at_least_once and not loop.jumped and not term and "after_loop_reads" not in self.exclude:
            env.defs |= b_env.defs
        return lines

    def while_stmt(self, env: Env, depth: int) -> list[str]:
        ch = self.ch
        if not self.legacy and "until_while" not in self.exclude and ch.flip(0.2):
            return self.until_stmt(env, depth)
        i = counter(depth)
        bound = ch.pick(["n", "3", "2", "k % 4", "n - 1", "j % 3"], [4, 1.5, 1, 1, 0.7, 0.7])
        if "k" in bound and "k" not in env.defs or "j" in bound and "j" not in env.defs:
            bound = "n"
        extra = ""
        if ch.flip(0.25):
            extra = f" and ({self.cond(env, 1)})"
        inc_first = ch.flip(0.5)
        down = ch.flip(0.3)
        if down:
            init, test, step = f"{i} = {bound}", f"{i} > 0", f"{i} -= 1"
        else:
            init, test, step = f"{i} = 0", f"{i} < {bound}", f"{i} += 1"
        if ch.flip(0.1):
            test = f"not ({i} <= 0)" if down else f"not ({i} >= {bound})"
        env.assign(i)
        loop = Loop(depth, allow_continue=inc_first)
        prefix = [step] if inc_first else []
        suffix = [] if inc_first else [step]
        if ch.flip(0.15):  # an exit first in the body joins the loop test when converted
            prefix = [f"if {self.cond(env, 1)}:", "    break"] + prefix
            loop.jumped = True
        # with the increment last, a `break`/`return` may end the body; never `continue`
        return [init] + self._loop_body(env, depth, loop, [f"while {test}{extra}:"],
                                        prefix=prefix, suffix=suffix)

    def until_stmt(self, env: Env, depth: int) -> list[str]:
        """A ``while`` with no counter, which runs until a float passes a bound: staged,
        its trip count is known only at run time (reverse mode: the checkpointed form).

        ``g<depth>`` starts at ``|expr| + 0.25`` and grows by half each step before the
        body runs (so a ``continue`` cannot skip it): the loop ends after at most
        about 240 steps (float32 overflow), NaN at once.
        """
        ch = self.ch
        g = f"g{depth}"
        bound = ch.pick(["4.0", "10.0", "jnp.abs(x) + 2.0", "jnp.abs(v).sum() + 1.0"])
        extra = f" and ({self.cond(env, 1)})" if ch.flip(0.25) else ""
        init = f"{g} = jnp.abs({self.fexpr(env, 1)}) + 0.25"
        loop = Loop(depth, allow_continue=True)
        return [init] + self._loop_body(env, depth, loop, [f"while {g} < {bound}{extra}:"],
                                        prefix=[f"{g} = {g} * 1.5 + 0.25"])

    def for_stmt(self, env: Env, depth: int) -> list[str]:
        ch = self.ch
        i, e = counter(depth), element(depth)
        kind = ch.pick(["static", "traced", "array", "enumerate"], [3, 3, 2.5, 1])
        targets = [i]
        at_least_once = False
        long_loops = 0 if self.pv.enabled and self.pv.in_long_loop else 1
        if kind == "static":
            # past `runtime.loops.PYTHON_TRIPS` (16) a static loop is staged as one scan;
            # not inside another long loop, which plain `jax.jit` would unroll in full
            it = ch.pick(["range(3)", "range(2)", "range(1, 4)", "range(4, 0, -1)", "range(0)",
                          "range(20)", "range(19, 0, -1)"],
                         [3, 2, 1, 1, 0.3, 0.6 * long_loops, 0.2 * long_loops])
            at_least_once = it != "range(0)"
            head = f"for {i} in {it}:"
        elif kind == "traced":
            it = ch.pick(["range(n)", "range(1, n)", "range(n, 0, -1)", "range(k % 4)",
                          "range(n + 1)", "range(j % 3, n)", "reversed(range(n))"],
                         [4, 1, 1, 1, 1, 0.7, 0.5])
            if "k" in it and "k" not in env.defs or "j" in it and "j" not in env.defs:
                it = "range(n)"
            head = f"for {i} in {it}:"
        elif kind == "array":
            vec = ch.pick([self.vatom(env), "v", "jnp.sin(v)", "reversed(v)"], [3, 2, 0.5, 0.5])
            head = f"for {e} in {vec}:"
            targets = [e]
            at_least_once = True
        else:
            head = f"for {i}, {e} in enumerate({self.vatom(env)}):"
            targets = [i, e]
            at_least_once = True
        loop = Loop(depth, allow_continue=True)
        long_loop = head.endswith(("range(20):", "range(19, 0, -1):"))
        self.pv.in_long_loop += long_loop
        try:
            # the target is defined after the loop only if the loop ran
            out = self._loop_body(env, depth, loop, [head], at_least_once=at_least_once,
                                  targets=targets)
        finally:
            self.pv.in_long_loop -= long_loop
        for t in targets:
            env.maybe.add(t)
        return out

    # -- programs ----------------------------------------------------------------

    def program(self) -> Program:
        if self.proof:
            from tests.fuzz.staging_proof import StagingProof
            return StagingProof(self).program()
        ch = self.ch
        prelude = ""
        if "helpers" not in self.exclude:
            for index in range(1, ch.pick([0, 1, 2], [5, 3, 1.5]) + 1):
                name, kind, src = self.helper(index)
                self.helpers.append((name, kind))
                prelude += src + "\n\n"
        self.ret_kind = ch.pick(["f", "fv", "fi", "fvi"], [3, 2, 1.5, 1])
        if "attributes" not in self.exclude and not FEATURES <= self.exclude:
            self.attrs = ch.flip(0.3)
        if not self.legacy and "history" not in self.exclude:
            self.history = ch.flip(0.25)
        env = Env(defs=set(PARAMS), maybe=set(PARAMS))
        body, term = self.block(env, 0, 2, 7, kind="top")
        if not term:
            body.append(f"return {self.ret_value(env)}")
        body = ((["o = State(x)"] if self.attrs else []) + (["hist = []"] if self.history else [])
                + self.pv.setup() + body)
        src = (self.pv.prelude() + (_STATE if self.attrs else "") + prelude
               + "def f(x, v, n):\n"
               + "".join(f"    {ln}\n" for ln in body))
        extras = "".join(f", {e}" for e in self.pv.extras())
        return Program(src.replace(f", {EXTRAS}", extras), maybe_reads=self.maybe_reads)


_STATE = ("class State:\n    def __init__(self, t):\n        self.t = t\n        self.m = 0\n"
          "        self.w = 0\n\n"
          "    def bump(self, y):\n        self.t = self.t + y\n        self.m += 1\n\n\n")


def _float_return(line: str) -> str:
    stripped = line.lstrip()
    if not stripped.startswith("return "):
        return line
    indent = line[:len(line) - len(stripped)]
    return f"{indent}return jnp.float32({stripped[len('return '):]})"


def generate(ch: Chooser, **kwargs) -> Program:
    return Generator(ch, **kwargs).program()
