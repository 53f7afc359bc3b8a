"""Grammar constructs where a value keeps its Python meaning inside staged code.

Plain ``jax.jit`` runs a static ``range`` loop in Python and calls every
helper once per step; an autograph program that stages the loop as one
``lax.scan`` or a branch as one ``lax.cond`` traces its body once. These
constructs tell the two apart (``grammar.Generator`` draws them as its
``python`` statements and atoms):

* ``index``: ``for i in range(N)`` with N in 17..40 (past the unroll
  threshold) or ``range(2**31 - 20, 2**31 + 5)``, whose body starts with uses
  of the index as a Python value: ``f"w{i}"``, ``str(i)``, ``"w%d" % i`` or
  ``"w{}".format(i)`` as a key of the module-level dict ``D`` (``D.get(key,
  0.0)``, ``key in D``) or an attribute name of the class ``P`` (``getattr(P,
  key, 0.0)``), ``isinstance(i, int)``, and integer arithmetic at the edges
  (``i ** 9``, ``2 ** -i``, ``1 << i``, ``c // (i - m)`` and ``c % (i - m)``
  whose divisor may be zero, ``int(jnp.float32(2.7) * i)``, a float truncated);
* ``narrow``: ``q``, started from a Python number that may not fit
  (``q = 1000``) and assigned ``jnp.int8``, ``jnp.uint8`` or ``jnp.float16``
  values, or another such number on one branch of an array-dependent ``if``
  (a tracer of a Python number after it);
* ``dicts``: ``d = {"w": x, "b": 0.5}`` (insertion order not sorted) or an
  ``OrderedDict``, updated, extended and reordered;
* ``aliases``: ``la = [x]`` and ``lb = la`` or ``lb = [la]``, written
  through one name and read through the other;
* ``log``: the helper ``note`` appends to the module-level list ``LOG``;
* ``nested_items``: ``mm[next(it)][next(it)] += ...`` on a nested list,
  whose indices have side effects (``it`` cycles through 0 and 1 with an odd
  period, so the cells written show how often ``next`` ran);
* ``prints``: ``print`` with ``str.format``, ``%``, f-strings and ``str()``
  of a traced value (the harness compares the text with the Python run's);
* ``wide``: ``h``, started as the Python int 1 and multiplied (``h = h * 3``,
  also on one branch of an array-dependent ``if``), stepped or reduced: a
  Python int that may outgrow int32 within a loop, exact when run eagerly
  (returned as ``h % 1009``, which tells an exact value from a wrapped one).

A construct with state (all but ``index`` and ``prints``) adds its set-up to
the top of ``f`` and its values to every ``return``: ``d``'s values and keys
(as character codes), ``la[0]`` and ``lb``'s element, ``len(LOG)``,
``mm``, ``q`` and ``h % 1009``. Each name is a feature of
``Generator(exclude=...)``; excluding all of ``FEATURES`` draws the same
programs, seed for seed, as the grammar before these constructs.
"""

from __future__ import annotations

FEATURES = frozenset({"index", "narrow", "dicts", "aliases", "log", "nested_items", "prints",
                      "wide"})

# the marker ``ret_value`` leaves in every `return` for the values added at the end
EXTRAS = "@extras@"

_D = ('D = {"w1": 0.5, "w4": -1.5, "w9": 2.0, "w17": 0.25, "w23": -0.75, "w30": 1.0,\n'
      '     "w39": -2.0, "w2147483630": 3.0, "3": 0.5, "12": -1.0, "20": 1.5,\n'
      '     "2147483640": -2.0}\n')
_P = ("class P:\n    w2 = 1.5\n    w5 = -0.5\n    w18 = 0.75\n    w33 = 2.0\n"
      "    w2147483645 = -1.0\n")
_LOG = "LOG = []\n\n\ndef note(value):\n    LOG.append(value)\n    return value\n"

_KEYS = ('f"w{{{i}}}"', "str({i})", '"w%d" % {i}', '"w{{}}".format({i})', '"w" + str({i})')
_NARROW = {  # dtype: start values that may not fit
    "int8": ("1000", "-1", "200", "-200", "0"),
    "uint8": ("-1", "300", "256", "1"),
    "float16": ("70000.0", "-1", "1e-8", "100000"),
}
_EDGE = 2 ** 31 - 20   # the first index of the range that crosses int32's end


class PythonValues:
    """The ``python`` statements and atoms of one program, and what they add to it."""

    def __init__(self, gen):
        self.gen = gen
        self.enabled = [f for f in sorted(FEATURES) if f not in gen.exclude]
        self.active: dict[str, list[str]] = {}   # feature -> set-up lines, in first-use order
        self.uses: set[str] = set()              # module-level names the program reads
        self.in_long_loop = 0
        self.blocks: list[str] = []   # "if"/"loop": the enclosing compound statements
        self.narrow_dtype = "int8"
        self.alias_nested = False
        self.ordered = False

    def weight(self) -> float:
        """The weight of a ``python`` statement among the grammar's statements."""
        return 0.8 if self.enabled else 0

    def atom_weight(self) -> float:
        return 0.7 if self._atoms() else 0

    # -- features with state -------------------------------------------------------

    def _activate(self, feature: str) -> None:
        if feature in self.active:
            return
        ch = self.gen.ch
        if feature == "dicts":
            self.ordered = ch.flip(0.3)
            if self.ordered:
                self.uses.add("collections")
                lines = ['d = collections.OrderedDict([("w", x), ("b", 0.5)])']
            else:
                lines = ['d = {"w": x, "b": 0.5}']
        elif feature == "aliases":
            self.alias_nested = ch.flip(0.5)
            lines = ["la = [x]", "lb = [la]" if self.alias_nested else "lb = la"]
        elif feature == "log":
            self.uses.add("LOG")
            lines = ["LOG.clear()"]
        elif feature == "nested_items":
            self.uses.add("itertools")
            lines = ["it = itertools.cycle([0, 1, 1, 0, 0])", "mm = [[x, 0.5], [1.0, -x]]"]
        elif feature == "wide":
            lines = ["h = 1"]
        else:  # narrow
            self.narrow_dtype = ch.pick(sorted(_NARROW))
            lines = [f"q = {ch.pick(_NARROW[self.narrow_dtype])}"]
        self.active[feature] = lines

    def _alias_b(self) -> str:
        return "lb[0][0]" if self.alias_nested else "lb[0]"

    def _atoms(self) -> list[str]:
        out = []
        if "dicts" in self.active:
            out += ['d["w"]', 'd["b"]']
        if "aliases" in self.active:
            out += ["la[0]", self._alias_b()]
        if "nested_items" in self.active:
            out += ["mm[0][1]", "mm[1][0]"]
        if "narrow" in self.active:
            out += ["(q * 0.5)"]
        return out

    def atom(self) -> str:
        return self.gen.ch.pick(self._atoms())

    def setup(self) -> list[str]:
        return [ln for lines in self.active.values() for ln in lines]

    def extras(self) -> list[str]:
        out = []
        if "dicts" in self.active:
            out += ["jnp.stack(list(d.values()))", "[ord(key) for key in d]"]
        if "aliases" in self.active:
            out += ["la[0]", self._alias_b()]
        if "log" in self.active:
            out += ["len(LOG)"]
        if "nested_items" in self.active:
            out += ["jnp.asarray(mm)"]   # not `next(it)`: a side effect in every `return`
        if "narrow" in self.active:
            out += ["q"]
        if "wide" in self.active:
            out += ["h % 1009"]
        return out

    def prelude(self) -> str:
        parts = []
        imports = "".join(f"import {m}\n" for m in ("collections", "itertools") if m in self.uses)
        if imports:
            parts.append(imports)
        for name, text in (("D", _D), ("P", _P), ("LOG", _LOG)):
            if name in self.uses:
                parts.append(text)
        return "\n\n".join(parts) + ("\n\n" if parts else "")

    # -- statements ------------------------------------------------------------------

    def statement(self, env, depth: int):
        """(lines, terminated) of one ``python`` statement."""
        ch = self.gen.ch
        compound = depth < self.gen.max_depth and not self.in_long_loop
        # side effects in an array-dependent branch are refused (plain `jax.jit` cannot
        # run the branch either), so they come mostly first in loop bodies
        effects = 1 if self.blocks[-1:] == ["loop"] else 0.15
        weights = {"index": 3 if compound else 0, "narrow": 1.2, "dicts": 1.5,
                   "aliases": 1.2 * effects, "log": effects, "nested_items": effects,
                   "prints": 1, "wide": 0.6}
        kinds = [k for k in self.enabled if weights[k] > 0]
        if not kinds:
            return self.gen.assign(env), False
        kind = ch.pick(kinds, [weights[k] for k in kinds])
        if kind == "index":
            return self.index_loop(env, depth), False
        if kind == "prints":
            return [self.print_stmt(env)], False
        self._activate(kind)
        return getattr(self, f"_{kind}")(env), False

    def _float_target(self, env) -> str:
        target = self.gen.ch.pick(["a", "b", "c"])
        env.assign(target)
        return target

    def _narrow(self, env) -> list[str]:
        g, ch = self.gen, self.gen.ch
        dtype = self.narrow_dtype
        if dtype == "float16":
            value = f"jnp.float16({g.fexpr(env, 1)})"
        elif ch.flip(0.5):
            value = (f"jnp.{dtype}({g.iexpr(env, 1)})" if dtype == "int8"
                     else f"jnp.uint8(({g.iexpr(env, 1)}) % 5)")
        else:
            lo, hi = (-100, 100) if dtype == "int8" else (0, 250)
            value = f"jnp.{dtype}(jnp.clip({g.fexpr(env, 1)} * 10, {lo}, {hi}))"
        form = ch.pick(["guarded", "plain", "step", "number"], [3, 2, 1, 1])
        if form == "guarded":   # `if x > t: q = narrow(...)`: q keeps its start on the other path
            return [f"if {g.cond(env, 1)}:", f"    q = {value}"]
        if form == "plain":
            return [f"q = {value}"]
        if form == "number":   # a traced branch sets a Python number: a tracer of one after it
            return [f"if {g.cond(env, 1)}:", f"    q = {ch.pick(_NARROW[dtype])}"]
        return ["q = q + 1"]

    def _wide(self, env) -> list[str]:
        g, ch = self.gen, self.gen.ch
        form = ch.pick(["times", "guarded", "step", "reduced"], [2, 2, 1, 1])
        if form == "times":
            return [f"h = h * {ch.pick(['3', '2', '7'])}"]
        if form == "guarded":  # a traced branch picks a Python int
            return [f"if {g.cond(env, 1)}:", f"    h = h * {ch.pick(['5', '2'])}"]
        if form == "step":
            return ["h = h + 1"]
        return ["h = (h * 31 + 7) % 1000003"]

    def _dicts(self, env) -> list[str]:
        g, ch = self.gen, self.gen.ch
        forms = ["set", "aug", "insert", "reorder"]
        kind = ch.pick(forms, [4, 3, 1, 0.7])
        key = ch.pick(['"w"', '"b"'])
        if kind == "set":
            return [f"d[{key}] = {g.fexpr(env, ch.integer(1, 2))}"]
        if kind == "aug":
            return [f"d[{key}] {ch.pick(['+=', '-='])} {g.fexpr(env, 1)}"]
        if kind == "insert":   # a key the start value lacks: the dict's structure changes
            return [ch.pick([f'd["c"] = {g.fexpr(env, 1)}',
                             f'd.setdefault("c", {g.fexpr(env, 1)})'])]
        if self.ordered and ch.flip(0.5):
            return [f"d.move_to_end({key})"]
        return [f"d[{key}] = d.pop({key})"]   # moves the key to the end of a plain dict too

    def _aliases(self, env) -> list[str]:
        g, ch = self.gen, self.gen.ch
        target = ch.pick(["la[0]", self._alias_b(), "la"], [3, 3, 0.5])
        if target == "la":   # rebinding ends the aliasing
            return [f"la = [{g.fexpr(env, 1)}]"]
        op = ch.pick(["=", "+=", "-="], [2, 2, 1])
        return [f"{target} {op} {g.fexpr(env, ch.integer(0, 2))}"]

    def _log(self, env) -> list[str]:
        g, ch = self.gen, self.gen.ch
        if ch.flip(0.5):
            return [f"note({g.fexpr(env, 1)})"]
        value = g.fexpr(env, 1)
        return [f"{self._float_target(env)} = note({value}) * 0.5"]

    def _nested_items(self, env) -> list[str]:
        g, ch = self.gen, self.gen.ch
        form = ch.pick(["both", "one"], [3, 1])
        target = "mm[next(it)][next(it)]" if form == "both" else "mm[0][next(it)]"
        op = ch.pick(["+=", "=", "-="], [3, 1, 1])
        rhs = ch.pick(["5.0", g.fexpr(env, 1)])
        return [f"{target} {op} {rhs}"]

    def print_stmt(self, env) -> str:
        """A `print` of at least one traced value (so it prints when the program runs)."""
        g, ch = self.gen, self.gen.ch
        counters = sorted(n for n in env.defs if n[0] == "i")
        idx = counters[-1] if counters else "n"
        scalar = ch.pick([f"jnp.float32({g.fexpr(env, 1)})", f"{g.vatom(env)}.sum()",
                          f"{g.vatom(env)}[{idx} % 3]"])
        form = ch.pick(["format", "percent", "str", "fstring", "args", "vector"],
                       [3, 2, 2, 1.5, 1, 1])
        if form == "format":
            return f'print("{idx}={{}} t={{:.3f}}".format({idx}, {scalar}))'
        if form == "percent":
            return f'print("%d: %.3f" % ({idx}, {scalar}))'
        if form == "str":
            return f'print("t=" + str({scalar}))'
        if form == "fstring":
            return f'print(f"w{{{idx}}}", {scalar})'
        if form == "args":
            return f'print("step", {idx}, {scalar}, sep=", ")'
        return f'print("{{}}: {{}}".format({idx}, {g.vexpr(env, 1)}))'

    # -- loops over long static ranges ---------------------------------------------------

    def index_loop(self, env, depth: int) -> list[str]:
        from tests.fuzz.grammar import Loop, counter

        g, ch = self.gen, self.gen.ch
        i = counter(depth)
        n = ch.integer(17, 40)
        form = ch.pick(["up", "from1", "down", "edge"], [4, 1, 1, 1])
        if form == "up":
            head, lo, hi = f"range({n})", 0, n - 1
        elif form == "from1":
            head, lo, hi = f"range(1, {n})", 1, n - 1
        elif form == "down":
            head, lo, hi = f"range({n}, 0, -1)", 1, n
        else:
            head, lo, hi = "range(2**31 - 20, 2**31 + 5)", _EDGE, _EDGE + 24
        small = f"({i} - 2**31 + 20)" if form == "edge" else i   # 0.. for powers and shifts
        b_env = env.copy()
        b_env.assign(i)
        prefix: list[str] = []
        self.in_long_loop += 1
        self.blocks.append("loop")
        try:
            for _ in range(ch.pick([1, 2, 0], [5, 2, 2])):
                prefix += self.index_use(b_env, i, small, lo, hi)
            if ch.flip(0.4):   # and a statement with state that now runs once per step
                prefix += self.statement(b_env, self.gen.max_depth)[0]
            # the prefix runs on every step: what it assigns is set in the body
            assigned = sorted(b_env.defs - env.defs)
            return g._loop_body(env, depth, Loop(depth, allow_continue=True),
                                [f"for {i} in {head}:"], prefix=prefix, at_least_once=True,
                                targets=assigned)
        finally:
            self.in_long_loop -= 1
            self.blocks.pop()
            env.maybe.add(i)

    def _key(self, i: str) -> str:
        return self.gen.ch.pick(_KEYS).format(i=i)

    def _divisor(self, i: str, lo: int, hi: int) -> str:
        ch = self.gen.ch
        m = ch.integer(lo, hi) if ch.flip(0.25) else ch.pick([lo - 1, hi + 3, lo - 5])
        if m >= _EDGE - 10:
            off = m - 2 ** 31
            return f"({i} - (2**31 {'-' if off < 0 else '+'} {abs(off)}))"
        return f"({i} - {m})" if m >= 0 else f"({i} + {-m})"

    def index_term(self, i: str, small: str, lo: int, hi: int) -> str:
        """A float computed from the index as a Python int."""
        ch = self.gen.ch
        kind = ch.pick(["get", "getattr", "pow", "negpow", "div", "mod", "shift", "scaled"],
                       [4, 2, 2, 1.5, 1, 1, 1.5, 1])
        if kind == "get":
            self.uses.add("D")
            return f"D.get({self._key(i)}, 0.0)"
        if kind == "getattr":
            self.uses.add("P")
            return f"getattr(P, {self._key(i)}, 0.0)"
        if kind == "pow":
            return f"({small} ** {ch.integer(2, 9)} % 1000 * 0.01)"
        if kind == "negpow":
            return f"2 ** -{small}"
        if kind in ("div", "mod"):
            c = ch.pick(["7", "-7", "100", "2**31"])
            op = "//" if kind == "div" else "%"
            return f"({c} {op} {self._divisor(i, lo, hi)} * 0.1)"
        if kind == "shift":
            return f"((1 << {small}) % 997 * 0.01)"
        return ch.pick([f"({i} % 7 * 0.25)", f"({i} * 1e-9)"])

    def index_use(self, env, i: str, small: str, lo: int, hi: int) -> list[str]:
        """Statements that use the index ``i`` as a Python value."""
        g, ch = self.gen, self.gen.ch
        kind = ch.pick(["float", "int", "test"], [5, 1.5, 2])
        if kind == "float":
            src = g.fexpr(env, 1)
            term = self.index_term(i, small, lo, hi)
            return [f"{self._float_target(env)} = {src} + {term}"]
        if kind == "int":
            target = ch.pick(["k", "j"])
            rhs = ch.pick([f"{ch.pick(['7', '-7', '100'])} // {self._divisor(i, lo, hi)}",
                           f"{small} ** {ch.integer(2, 9)}", f"1 << {small}",
                           # a float made an int: truncated toward zero, as Python's `int`
                           f"int(jnp.float32({ch.pick(['2.7', '-1.3', '0.45'])}) * {small})"],
                          [1, 1, 1, 0.8])
            env.assign(target)
            return [f"{target} = ({rhs}) % 5"]
        test = ch.pick([f"isinstance({i}, int)", f"{self._key(i)} in D",
                        f"not isinstance({i}, bool)"], [2, 3, 1])
        if " in D" in test:
            self.uses.add("D")
        lines = [f"if {test}:"]
        b_env = env.copy()
        lines += ["    " + ln for ln in g.assign(b_env)]
        if ch.flip(0.4):
            e_env = env.copy()
            lines += ["else:"] + ["    " + ln for ln in g.assign(e_env)]
            env.defs |= b_env.defs & e_env.defs
            env.maybe |= e_env.maybe
        env.maybe |= b_env.maybe
        return lines
