"""Programs that a static-loop staging proof must refuse, and programs it must clear.

A ``for`` over a static ``range`` of more than ``runtime.loop_plan.PYTHON_TRIPS``
(16) iterations whose state is traced may be staged as one ``lax.scan``; plain
``jax.jit`` runs it as a Python loop, each step traced in turn. The two agree
only where the body has no effect and never uses the index as a Python value.
``grammar.Generator(proof=True)`` draws programs that tell them apart:

* ``f`` is straight-line code (the assignments of ``grammar``, no branch on a
  traced value, so plain ``jax.jit`` runs it: it is the reference) around one
  or two ``for`` loops of 17-40 iterations (``range(N)``, ``range(c, N + c)``,
  ``range(N, 0, -1)``) whose state is traced (set from ``x`` or ``v`` just
  before the loop);
* their bodies call module-level helpers with effects (each a feature of
  ``Generator(exclude=...)``):

  - ``log_helper``: logs through a ``logging`` logger whose handler collects
    the messages in a list (``LOGGER.info("step %s", t)``, ``.warning``,
    ``.log``, a bound ``info`` kept in a module name, a step-dependent
    ``if t % 5 == 0``);
  - ``stringio_helper``: writes to an ``io.StringIO`` (``BUF.write(f"{t};")``,
    ``print(..., file=BUF)``);
  - ``global_counter``: ``globals()["COUNT"][0] += 1``, ``COUNT[0] += t``,
    ``global TOTAL``;
  - ``singledispatch``: a ``functools.singledispatch`` function whose ``int``
    case and default case append different things to a list;
  - ``closure_list``: a closure that mutates a list of thousands of items
    (``append``, ``insert``, ``pop``, an item update), some reading it back;

* and flows of the index into uses as a Python value:

  - ``dict_key``: ``s0 = i0 + c`` then ``PD.get(f"w{s0}", 0.0)``,
    ``PD[f"w{s0}"]``, ``PD["w" + str(s0)]`` of a module-level dict;
  - ``tuple_format``: the index in a tuple handed to a helper that formats it
    (``"w{}".format(pair[0] + pair[1])``, ``len("%d" % pair[0])``);
  - ``no_convert``: the index handed to an ``autograph.do_not_convert`` helper
    that uses it as a Python int (a list index, ``str``, ``type(t) is int``,
    ``range``);
  - ``isinstance_helper``: ``isinstance(t, int)`` in a helper;
  - ``try_int``: ``try: m = int(t) except TypeError: ...`` in a helper;
  - ``implicit``: a helper that runs code with no call in its source, on an object
    whose special methods record that they ran (``if WATCH:``, ``not WATCH``,
    ``t in WATCH``, ``WD.get(WATCH, ...)``, ``"{}".format(WATCH)``, ``y += WATCH``),
    compares a float of the index (``t * 0.1 > 0.3``, float64 in Python, float32
    staged), formats the index with a string held in a name (``FMT % t``) or tests
    the identity of a bool of it (``(t % 2 == 0) is True``);

* each helper called directly or, a quarter of the time, through what the
  proof must see through: a helper of its own (``via_log_step0(p, q)``), a
  ``functools.partial``, a lambda, a ``functools.wraps`` wrapper, an object
  whose ``__call__`` calls it, an entry of a module-level dict (``HOOKS``);
* and ``pure_helper``: helpers of ``jnp`` arithmetic only, with the index in
  arithmetic, so that some loops (about a quarter draw nothing else) must
  still be staged and give the same values.

Every program defines ``fuzz_effects()``, a snapshot of all its effect state
(the logged messages, the ``StringIO`` text, the counters, the lists), and
``fuzz_reset()``, which puts it back; ``harness.check_function`` compares the
snapshot of each run with that of the reference (see there).

Nothing here takes a draw unless ``proof=True``: the programs every other seed
draws are those it drew before.
"""

from __future__ import annotations

PROOF_FEATURES = frozenset({
    "log_helper", "stringio_helper", "global_counter", "singledispatch", "closure_list",
    "dict_key", "tuple_format", "no_convert", "isinstance_helper", "try_int", "pure_helper",
    "implicit", "chosen"})

# how often a loop body draws each kind
_WEIGHTS = {"log_helper": 1.2, "stringio_helper": 1, "global_counter": 1,
            "singledispatch": 1, "closure_list": 1, "dict_key": 1.5, "tuple_format": 1,
            "no_convert": 1, "isinstance_helper": 0.8, "try_int": 0.8, "pure_helper": 2,
            "implicit": 1, "chosen": 1}

# the grammar's constructs that plain Python (and so plain `jax.jit`) can trace
STRAIGHT = frozenset({"ifexp", "value_boolop", "bool_assign", "python_bool", "helpers",
                      "match", "attributes", "until_while"})

_PD = 'PD = {f"w{t}": (t % 7) * 0.25 - 0.75 for t in range(96)}\n'
_TABLE = "TABLE = [1.0, 2.0, 0.5, -1.0]\n"

_LOG_STATE = '''class ListHandler(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


HANDLER = ListHandler()
{logger}
LOGGER.addHandler(HANDLER)
'''
_LOGGERS = ('LOGGER = logging.Logger("fuzz", logging.INFO)',
            'LOGGER = logging.getLogger(__name__ + ".fuzz")\n'
            'LOGGER.setLevel(logging.INFO)\nLOGGER.propagate = False')

_ACC_STATE = '''def _make_acc():
    items = list(range({size}))

    def acc(y, t):
{body}

    return acc, items


acc, ACC_ITEMS = _make_acc()
'''
_ACC_BODIES = (
    ("items.append(t)", "return y + 0.01"),
    ("items.append(len(items))", "return y + 0.01"),
    ("items.insert(0, t)", "return y - 0.01"),
    ("items.pop()", "return y + items[-1] * 1e-4"),
    ("items[t % 9] += 1", "return y + 0.02"),
    ("items.append(t)", "return y + len(items) * 1e-5"),
)

_DISPATCH = '''SEEN = []


@functools.singledispatch
def record(t, y):
    SEEN.append("other")
    return y


@record.register{how}
def _(t{ann}, y):
    SEEN.append(t)
    return y + 0.5
'''


_WATCH_STATE = '''WATCHED = []


class Watch:
    def __bool__(self):
        WATCHED.append("bool")
        return True

    def __contains__(self, k):
        WATCHED.append("in")
        return False

    def __hash__(self):
        WATCHED.append("hash")
        return 7

    def __eq__(self, other):
        WATCHED.append("eq")
        return other is self

    def __format__(self, spec):
        WATCHED.append("format")
        return "w"

    def __radd__(self, other):
        WATCHED.append("radd")
        return other + 0.25


WATCH = Watch()
WD = {1: 0.5}
FMT = "w%s"
'''

# what a helper does with `WATCH` (code Python runs without a call in the source), or
# a float of the index compared (float64 in Python, float32 staged)
# a helper whose Python values the index chooses through control flow: an inner loop of
# the index's length carrying a Python number, a branch on the index returning one
_CHOSEN_BODIES = (
    ["    n = 0", "    for j in range(t % 4):", "        n += 1",
     "    return y + len(str(n)) * 0.25"],
    ["    s = 0.0", "    for j in range(t % 5):", "        s = s + 0.1", "    return y + s"],
    ["    p, j = 1, 0", "    while j < t % 23:", "        p = p * 3", "        j += 1",
     "    return y + (p % 7) * 0.125"],
    ["    if t % 3 > 1:", "        return y + len(str(t % 2)) * 0.5", "    return y - 0.25"],
    ["    k = 2", "    if t > 5:", "        k = 1", "    return y * 0.5 + isinstance(k, int)"],
    ["    try:", "        for j in range(3):", "            y = y + 0.5",
     "            if j == t % 4:", "                raise ValueError(j)",
     "    except ValueError:", "        y = y * 0.75", "    return y"],
)

_IMPLICIT_BODIES = (
    ["    if WATCH:", "        y = y + 0.25", "    return y"],
    ["    return y * 0.5 if not WATCH else y + 0.5"],
    ["    return y + (0.5 if t in WATCH else -0.5)"],
    ["    return y + WD.get(WATCH, 0.125)"],
    ['    return y + len("{}".format(WATCH)) * 0.25'],
    ["    return y + (1.0 if t * 0.1 > 0.3 else 0.0)"],
    ["    y += WATCH", "    return y"],
    ["    return y + len(FMT % t) * 0.25"],
    ["    return y + (0.5 if (t % 2 == 0) is True else 0.0)"],
)


class StagingProof:
    """The loops, helpers and effect state of one ``proof`` program."""

    def __init__(self, gen):
        from tests.fuzz.grammar import Generator

        self.gen = gen
        self.ch = gen.ch
        self.enabled = [k for k in sorted(PROOF_FEATURES) if k not in gen.exclude]
        # straight-line statements: what plain Python traces (no traced branch)
        self.sub = Generator(gen.ch, p_maybe=0, max_depth=0,
                             exclude=gen.exclude | STRAIGHT | _python_values())
        self.sub.ret_kind = "f"
        self.imports: set[str] = set()
        self.state: dict[str, str] = {}     # effect state / constants, by name: source
        self.helpers: dict[str, str] = {}   # helper name: source
        self.effects: dict[str, str] = {}   # key in fuzz_effects(): expression
        self.resets: list[str] = []
        self.globals: list[str] = []        # names fuzz_reset declares global
        self.n_pure = 0
        self.kept: list[str] = []           # the state each loop left, returned
        self.clean_loops = 0                # loops that drew pure helpers only

    # -- the program ---------------------------------------------------------------

    def program(self):
        from tests.fuzz.grammar import PARAMS, Env, Program

        ch = self.ch
        env = Env(defs=set(PARAMS), maybe=set(PARAMS))
        body: list[str] = []
        for _ in range(ch.integer(0, 2)):
            body += self.straight(env)
        for depth in range(ch.pick([1, 2], [3, 1])):
            body += self.loop(env, depth)
            for _ in range(ch.integer(0, 1)):
                body += self.straight(env)
        self.sub.ret_kind = ch.pick(["f", "fv", "fi", "fvi"], [3, 2, 1.5, 1])
        # and the state of every loop, whatever came after it
        body.append(f"return {self.sub.ret_value(env)}, {', '.join(self.kept)}")
        src = (self.prelude() + "def f(x, v, n):\n" + "".join(f"    {ln}\n" for ln in body))
        return Program(src, loops=len(self.kept), clean_loops=self.clean_loops)

    def prelude(self) -> str:
        parts = []
        if self.imports:
            parts.append("".join(f"import {m}\n" for m in sorted(self.imports)))
        parts += list(self.state.values()) + list(self.helpers.values())
        effects = "".join(f"        {k!r}: {e},\n" for k, e in self.effects.items())
        parts.append("def fuzz_effects():\n    \"\"\"What the program's effects left.\"\"\"\n"
                     + (f"    return {{\n{effects}    }}\n" if effects else "    return {}\n"))
        reset = ([f"    global {', '.join(self.globals)}"] if self.globals else []) + [
            f"    {ln}" for ln in self.resets] or ["    pass"]
        parts.append("def fuzz_reset():\n" + "".join(f"{ln}\n" for ln in reset))
        return "\n\n".join(parts) + "\n\n"

    def straight(self, env) -> list[str]:
        """A straight-line assignment; none to a parameter, which keeps ``x`` and ``v`` traced."""
        from tests.fuzz.grammar import PARAMS

        ch = self.ch
        lines = None
        if ch.flip(0.4):
            lines = self.sub.augassign(env)
        if lines is None:
            lines = self.sub.assign(env)
        if lines[0].split()[0] in PARAMS:
            return []
        return lines

    def loop(self, env, depth: int) -> list[str]:
        """``for`` over 17-40 static steps with traced state, its body drawn from the kinds."""
        from tests.fuzz.grammar import counter

        ch = self.ch
        i = counter(depth)
        n = ch.integer(17, 40)
        form = ch.pick(["up", "offset", "down"], [4, 1.5, 1])
        if form == "up":
            head = f"range({n})"
        elif form == "offset":
            c = ch.integer(1, 5)
            head = f"range({c}, {n + c})"
        else:
            head = f"range({n}, 0, -1)"
        target = ch.pick(["a", "b", "c", "w", "u"], [3, 2, 1, 1.5, 1])
        lines = [f"{target} = {self._traced_init(env, target)}"]
        env.assign(target)
        b_env = env.copy()
        b_env.assign(i)
        # about a quarter of the loops only compute on arrays: the proof must clear them
        clean = ch.flip(0.25) or not [k for k in self.enabled if k != "pure_helper"]
        kinds = [k for k in self.enabled if not clean or k == "pure_helper"]
        body: list[str] = []
        drawn = set()
        for _ in range(ch.integer(1, 3)):
            if kinds:
                kind = ch.pick(kinds, [_WEIGHTS[k] for k in kinds])
                drawn.add(kind)
                body += getattr(self, f"_{kind}")(b_env, i, target)
            if ch.flip(0.5):
                body += self.straight(b_env)
        self.clean_loops += drawn <= {"pure_helper"}
        if not any(ln.startswith(f"{target} ") for ln in body):
            # the state changes on every step
            body.append(f"{target} = {target} * 0.5 + {self.sub.fexpr(b_env, 1)}")
        # what the loop left, kept from later assignments (`r0`, `r1`: no grammar variable)
        kept = f"r{depth}"
        self.kept.append(kept)
        lines += [f"for {i} in {head}:"] + [f"    {ln}" for ln in body] + [f"{kept} = {target}"]
        env.defs |= b_env.defs   # 17 or more steps: what the body assigns is set after it
        env.maybe |= b_env.maybe
        return lines

    def _traced_init(self, env, target: str) -> str:
        ch = self.ch
        if target in ("w", "u"):
            return ch.pick(["v * 0.5", "jnp.sin(v)", f"v + {self.sub.fexpr(env, 1)}"])
        return ch.pick(["x * 0.5", f"jnp.tanh(x) + {self.sub.fexpr(env, 1)}",
                        "v.sum() * 0.25", f"x + {self.sub.fexpr(env, 1)}"])

    def _index(self, i: str) -> str:
        """The index, or a Python int computed from it."""
        return self.ch.pick([i, f"{i} + {self.ch.integer(1, 4)}", f"{i} * 2", f"{i} % 5"],
                            [4, 1, 0.7, 0.7])

    def _call(self, name: str, target: str, arg: str, y_first: bool = True) -> list[str]:
        """A statement calling helper ``name`` on the state and ``arg``."""
        ch = self.ch
        if ch.flip(0.25):   # reached through something the proof must see through
            name = self._via(name)
        args = f"{target}, {arg}" if y_first else f"{arg}, {target}"
        form = ch.pick(["assign", "add", "bare"], [4, 1.5, 1])
        if form == "assign":
            return [f"{target} = {name}({args})"]
        if form == "add":
            y = f"jnp.sin({target})"
            args = f"{y}, {arg}" if y_first else f"{arg}, {y}"
            return [f"{target} = {target} * 0.5 + {name}({args})"]
        return [f"{name}({args})"]

    def _via(self, name: str) -> str:
        """What calls helper ``name`` with the same two arguments: a helper of its own, a
        ``functools.partial``, a lambda, a ``functools.wraps`` wrapper, an object with
        ``__call__``, or an entry of a module-level dict."""
        ch = self.ch
        form = ch.pick(["def", "partial", "lambda", "wraps", "object", "dict"],
                       [3, 1, 1, 1, 1, 1])
        via = f"via_{name}"
        if form == "dict":
            self.state.setdefault("HOOKS", "HOOKS = {}\n")
            self._helper(f"hook_{name}", [f"HOOKS[{name!r}] = {name}"])
            return f"HOOKS[{name!r}]"
        if via in self.helpers:
            return via
        if form == "def":
            lines = [f"def {via}(p, q):", f"    return {name}(p, q)"]
        elif form == "partial":
            self.imports.add("functools")
            lines = [f"{via} = functools.partial({name})"]
        elif form == "lambda":
            lines = [f"{via} = lambda p, q: {name}(p, q)"]
        elif form == "wraps":
            self.imports.add("functools")
            lines = [f"def _wrap_{name}(fn):", "    @functools.wraps(fn)",
                     "    def inner(p, q):", "        return fn(p, q)", "",
                     "    return inner", "", "", f"{via} = _wrap_{name}({name})"]
        else:
            lines = [f"class Via_{name}:", "    def __call__(self, p, q):",
                     f"        return {name}(p, q)", "", "", f"{via} = Via_{name}()"]
        self._helper(via, lines)
        return via

    def _helper(self, name: str, lines: list[str], decorator: str = "") -> None:
        if name not in self.helpers:
            self.helpers[name] = decorator + "\n".join(lines) + "\n"

    # -- effects ---------------------------------------------------------------------

    def _log_helper(self, env, i, target) -> list[str]:
        ch = self.ch
        if "HANDLER" not in self.state:
            self.imports.add("logging")
            self.state["HANDLER"] = _LOG_STATE.format(logger=ch.pick(_LOGGERS, [2, 1]))
            self.effects["log"] = "list(HANDLER.messages)"
            self.resets.append("HANDLER.messages.clear()")
        name = f"log_step{len([h for h in self.helpers if h.startswith('log_step')])}"
        if ch.flip(0.5) or name == "log_step0":
            form = ch.pick(["info", "warning", "log", "bound", "every", "plain"],
                           [3, 1, 1, 1, 1, 1.5])
            call = {"info": 'LOGGER.info("step %s", t)',
                    "warning": 'LOGGER.warning("step %d of the loop", t)',
                    "log": 'LOGGER.log(logging.INFO, "t=%s", t)',
                    "bound": 'INFO("step")',
                    "every": 'if t % 5 == 0:\n        LOGGER.info("every fifth: %s", t)',
                    "plain": 'LOGGER.info("tick")'}[form]
            if form == "bound":
                self.state["INFO"] = "INFO = LOGGER.info\n"
            self._helper(name, [f"def {name}(y, t):", f"    {call}", "    return y * 0.5"])
        else:
            name = "log_step0"
        return self._call(name, target, self._index(i))

    def _stringio_helper(self, env, i, target) -> list[str]:
        ch = self.ch
        if "BUF" not in self.state:
            self.imports.add("io")
            self.state["BUF"] = "BUF = io.StringIO()\n"
            self.effects["buf"] = "BUF.getvalue()"
            self.resets += ["BUF.seek(0)", "BUF.truncate()"]
        if "write_step" not in self.helpers:
            call = ch.pick(['BUF.write(f"{t};")', 'BUF.write("x")',
                           'BUF.write("w" + str(t) + " ")', 'print("step", t, file=BUF)'],
                          [3, 1.5, 1, 0.7])
            self._helper("write_step", ["def write_step(y, t):", f"    {call}",
                                        "    return y + 0.25"])
        return self._call("write_step", target, self._index(i))

    def _global_counter(self, env, i, target) -> list[str]:
        ch = self.ch
        if "COUNT" not in self.state:
            self.state["COUNT"] = "COUNT = [0]\nTOTAL = 0\n"
            self.effects["count"] = "[COUNT[0], TOTAL]"
            self.resets += ["COUNT[0] = 0", "TOTAL = 0"]
            self.globals.append("TOTAL")
        if "bump" not in self.helpers:
            form = ch.pick(["globals", "item", "global"], [3, 1, 1])
            body = {"globals": ['    globals()["COUNT"][0] += 1'],
                    "item": ["    COUNT[0] += t"],
                    "global": ["    global TOTAL", "    TOTAL += 1"]}[form]
            self._helper("bump", ["def bump(y, t):"] + body + ["    return y - 0.125"])
        return self._call("bump", target, self._index(i))

    def _singledispatch(self, env, i, target) -> list[str]:
        ch = self.ch
        if "SEEN" not in self.state:
            self.imports.add("functools")
            how, ann = ch.pick([("", ": int"), ("(int)", "")])
            self.state["SEEN"] = _DISPATCH.format(how=how, ann=ann)
            self.effects["seen"] = "list(SEEN)"
            self.resets.append("SEEN.clear()")
        arg = self._index(i) if ch.flip(0.75) else f"jnp.sin({target})"
        return self._call("record", target, arg, y_first=False)

    def _closure_list(self, env, i, target) -> list[str]:
        ch = self.ch
        if "ACC" not in self.state:
            size = ch.pick([2000, 5000, 10000])
            body = ch.pick(_ACC_BODIES)
            self.state["ACC"] = _ACC_STATE.format(size=size, body="".join(
                f"        {ln}\n" for ln in body).rstrip("\n"))
            self.effects["acc"] = "[len(ACC_ITEMS), ACC_ITEMS[:3], ACC_ITEMS[-3:], sum(ACC_ITEMS)]"
            self.resets.append(f"ACC_ITEMS[:] = range({size})")
        return self._call("acc", target, self._index(i))

    # -- the index as a Python value ----------------------------------------------------

    def _dict_key(self, env, i, target) -> list[str]:
        ch = self.ch
        self.state["PD"] = _PD
        s = f"s{i[1:]}"
        c = ch.integer(0, 5)
        key = ch.pick([f'f"w{{{s}}}"', f'"w" + str({s})', f'"w%d" % {s}'], [3, 1, 1])
        look = ch.pick([f"PD.get({key}, 0.0)", f"PD[{key}]"], [3, 1])
        return [f"{s} = {i} + {c}" if c else f"{s} = {i}", f"{target} = {target} + {look}"]

    def _tuple_format(self, env, i, target) -> list[str]:
        ch = self.ch
        if ch.flip(0.5):
            self.state["PD"] = _PD
            self._helper("key_of", ["def key_of(pair):",
                                    '    return "w{}".format(pair[0] + pair[1])'])
            return [f"{target} = {target} + PD.get(key_of(({i}, {ch.integer(0, 3)})), 0.0)"]
        self._helper("width", ["def width(pair):",
                               '    return pair[1] + len("%d" % pair[0]) * 0.125'])
        return [f"{target} = width(({self._index(i)}, {target}))"]

    def _no_convert(self, env, i, target) -> list[str]:
        ch = self.ch
        if "scale" not in self.helpers:
            form = ch.pick(["table", "str", "type", "range"], [2, 1.5, 1, 1])
            ret = {"table": "y * TABLE[t % 4]", "str": "y + len(str(t)) * 0.1",
                   "type": "y + (0.5 if type(t) is int else 0.0)",
                   "range": "y + sum(range(t % 5)) * 0.1"}[form]
            if form == "table":
                self.state["TABLE"] = _TABLE
            self._helper("scale", ["def scale(t, y):", f"    return {ret}"],
                         decorator="@autograph.do_not_convert\n")
        return self._call("scale", target, self._index(i), y_first=False)

    def _isinstance_helper(self, env, i, target) -> list[str]:
        ch = self.ch
        if "is_int" not in self.helpers:
            body = ch.pick([["    return y + 1.0 if isinstance(t, int) else y - 1.0"],
                            ["    if isinstance(t, int):", "        return y * 0.5",
                             "    return y"],
                            ["    if not isinstance(t, (int, float)):", "        y = y + 2.0",
                             "    return y"]])
            self._helper("is_int", ["def is_int(t, y):"] + body)
        return self._call("is_int", target, self._index(i), y_first=False)

    def _try_int(self, env, i, target) -> list[str]:
        ch = self.ch
        if "as_int" not in self.helpers:
            caught = ch.pick(["TypeError", "(TypeError, ValueError)", "Exception"])
            self._helper("as_int", ["def as_int(t, y):", "    try:", "        m = int(t)",
                                    f"    except {caught}:", "        m = -1",
                                    "    return y + m * 0.01"])
        return self._call("as_int", target, self._index(i), y_first=False)

    def _implicit(self, env, i, target) -> list[str]:
        ch = self.ch
        if "WATCH" not in self.state:
            self.state["WATCH"] = _WATCH_STATE
            self.effects["watched"] = "list(WATCHED)"
            self.resets.append("WATCHED.clear()")
        if "peek" not in self.helpers:
            self._helper("peek", ["def peek(y, t):"] + ch.pick(list(_IMPLICIT_BODIES)))
        return self._call("peek", target, self._index(i))

    def _chosen(self, env, i, target) -> list[str]:
        ch = self.ch
        if "chosen" not in self.helpers:
            self._helper("chosen", ["def chosen(y, t):"] + ch.pick(list(_CHOSEN_BODIES)))
        return self._call("chosen", target, self._index(i))

    # -- helpers free of effects ------------------------------------------------------------

    def _pure_helper(self, env, i, target) -> list[str]:
        ch = self.ch
        if self.n_pure < 2 and (self.n_pure == 0 or ch.flip(0.3)):
            name = f"pure{self.n_pure}"
            self.n_pure += 1
            ret = ch.pick(["jnp.sin(y) * 0.5 + t * 0.01", "jnp.tanh(y) + (t % 3) * 0.25",
                           "jnp.where(y > 0, y * 0.5, y + 0.25) - t * 0.001",
                           "jnp.cos(y * 0.5) * jnp.minimum(t, 3)",
                           "jnp.maximum(y, -2.0) * 0.75 + jnp.float32(t) * 0.002"])
            lines = [f"def {name}(y, t):"]
            if self.n_pure == 2 and ch.flip(0.5):   # a pure helper calling the other
                lines.append("    y = pure0(y, t + 1) * 0.5")
            self._helper(name, lines + [f"    return {ret}"])
        name = f"pure{ch.integer(0, self.n_pure - 1)}"
        arg = ch.pick([i, self._index(i), "n", "2"], [3, 1, 0.5, 0.5])
        return self._call(name, target, arg)


def _python_values() -> frozenset:
    from tests.fuzz.python_values import FEATURES
    return FEATURES
