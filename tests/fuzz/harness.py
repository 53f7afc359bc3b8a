"""Runs a function in plain Python, plain ``jax.jit`` and ``jax.jit(autograph.convert(f))``.

For each input set ``(x, v, n)`` (NumPy float32, float32[3], int32):

* **python**: ``f`` itself on the NumPy inputs, and on the same inputs as
  JAX arrays (what ``jax.jit`` hands the converted function), both eagerly;
* **eager**: ``autograph.convert(f)`` on the NumPy inputs. Nothing is traced,
  so every construct takes the Python path and must give exactly the plain
  result (or raise the same kind of error);
* **plain jit**: ``jax.jit(f)``, traced once. It raises where ``f`` branches
  or loops on a traced value; where it runs, it runs ``range`` loops and
  helpers in Python, step by step;
* **jit**: ``jax.jit(autograph.convert(f))``, compared with the plain run on
  JAX arrays with rtol 1e-4, atol 1e-5 (NaN equals NaN; no comparison where
  the plain result overflows). The NumPy-input run and, where it runs, the
  plain ``jax.jit`` run are accepted as further references: NumPy and JAX
  promote ``float32 * int32`` differently, and what plain ``jax.jit`` gives
  the converted function may give too.

What a run prints is compared as well: the converted function's text (after
``jax.effects_barrier()``, so prints staged with ``jax.debug.callback`` have
landed) must be the Python run's, in the same order, numbers equal within
the tolerance and the precision they are printed with, spacing aside.

So are the effects of a program that keeps them (``tests/fuzz/staging_proof.py``:
its module defines ``fuzz_effects()`` and ``fuzz_reset()``). Each run starts
from ``fuzz_reset()`` and ends with a snapshot of ``fuzz_effects()``: logged
messages, ``StringIO`` text, counters, lists, with the text of a tracer (the
same object in both, traced whether staged or not) read as ``<traced>``. The
eager converted run must leave exactly the Python run's; the jitted converted
run exactly what plain ``jax.jit(f)`` leaves on the same call (the first call
traces, so effects at trace time happen then; later calls hit the cache), or
the outcome is a ``failure`` (``jit-wrong-effects``).

The outcome of a program is one of

* ``ok``: converted and correct;
* ``refused``: the jitted function raised an :class:`autograph.AutographError`
  (a legitimate refusal) on inputs where Python ran; the signature starts
  ``refused-jit-runs`` where plain ``jax.jit`` ran them;
* ``both_raised``: Python raised, and so did the converted function, with an
  ``AutographError`` or the same kind of Python error; or the jitted
  converted function raised what plain ``jax.jit(f)`` raises too (a JAX
  limit such as reverse-mode differentiation of a ``while_loop``);
* ``skipped``: the plain result overflowed, or the two results differ but the
  plain result itself moves beyond the tolerance when the inputs move by a
  few ulps (a near tie, ``sin`` of a huge number): rounding decides;
* ``failure``: anything else: a wrong value, printed text or effect, a value where
  Python raised, an internal error (not an ``AutographError``), or an
  ``AutographError`` that does not name a line of the user's file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import itertools
import logging
import os
import re
import tempfile
import traceback
import warnings

import jax
import jax.extend.core as jax_extend_core
import jax.numpy as jnp
import numpy as np

import autograph
from autograph import jax_internals

# a staged branch that raises when taken reports through jax.debug.callback, which logs
for _logger in jax_internals.CALLBACK_LOGGERS:
    logging.getLogger(_logger).setLevel(logging.CRITICAL)

RTOL, ATOL = 1e-4, 1e-5
HUGE = 1e30

HEADER = ("import functools\nimport math\n\nimport jax\nimport jax.numpy as jnp\n"
          "import numpy as np\n\nimport autograph\n\n\n"
          # user functions the programs hand to `functools.reduce`, `sorted`, `map`
          "def _larger(a, b):\n    if a > b:\n        return a\n    return b\n\n\n"
          "def _magnitude(a):\n    if a < 0:\n        return -a\n    return a\n\n\n")


@dataclasses.dataclass
class Outcome:
    kind: str                      # ok | refused | both_raised | skipped | failure
    detail: str = ""               # what went wrong / which rule refused
    signature: str = ""            # stable key of a failure, for deduplication
    source: str = ""
    inputs: tuple = ()

    @property
    def failed(self) -> bool:
        return self.kind == "failure"

    def report(self) -> str:
        ins = "\n".join(f"    x={x!r}, v={v!r}, n={n!r}" for x, v, n in self.inputs)
        return (f"{self.kind}: {self.detail}\n--- program ---\n{self.source}"
                f"--- inputs ---\n{ins}\n")


# ---------------------------------------------------------------------------
# Programs on disk


class ProgramDir:
    """A temporary directory of generated modules, imported from real files."""

    _ids = itertools.count()

    def __init__(self):
        self.path = tempfile.mkdtemp(prefix="autograph_fuzz_")

    def load(self, source: str, name: str = "f"):
        mod_name = f"agfuzz_{os.getpid()}_{next(self._ids)}"
        filename = os.path.join(self.path, mod_name + ".py")
        with open(filename, "w") as fh:
            fh.write(HEADER + source)
        spec = importlib.util.spec_from_file_location(mod_name, filename)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # not put in sys.modules: freed with the function
        return getattr(module, name)

    def cleanup(self):
        import shutil
        shutil.rmtree(self.path, ignore_errors=True)


# ---------------------------------------------------------------------------
# Inputs


def make_inputs(x, v, n):
    return (np.float32(x), np.asarray(v, np.float32).reshape(3), np.int32(n))


def _copy(args):
    return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)


def _as_jax(args):
    return tuple(jnp.asarray(a) for a in args)


# ---------------------------------------------------------------------------
# Running and comparing


@dataclasses.dataclass
class Run:
    value: object = None
    error: BaseException | None = None
    out: str = ""                  # what the call printed
    effects: object = None         # the program's effects after the call (`Effects`)

    @property
    def raised(self):
        return self.error is not None


_TRACER_TEXT = re.compile(r"Traced<[^>]*>(?:with<[^>]*>)?|\b\w*Tracer\([^()]*\)")


def _plain(value):
    """An effect snapshot as plain data: tracers (and their text) as ``<traced>``."""
    if isinstance(value, jax.core.Tracer):
        return "<traced>"
    if isinstance(value, str):
        return _TRACER_TEXT.sub("<traced>", value)
    if isinstance(value, dict):
        return {k: _plain(x) for k, x in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(x) for x in value]
    if isinstance(value, (np.ndarray, np.generic, jax.Array)):
        return np.asarray(value).tolist()
    return value


class Effects:
    """The effect state of a program whose module defines ``fuzz_effects`` and ``fuzz_reset``."""

    def __init__(self, snapshot, reset):
        self._snapshot, self._reset = snapshot, reset

    @classmethod
    def of(cls, f) -> "Effects | None":
        names = getattr(f, "__globals__", {})
        if callable(names.get("fuzz_effects")) and callable(names.get("fuzz_reset")):
            return cls(names["fuzz_effects"], names["fuzz_reset"])
        return None

    def reset(self) -> None:
        self._reset()

    def snapshot(self):
        return _plain(self._snapshot())


def compare_effects(got, want) -> str | None:
    """None when two effect snapshots are equal, else the first difference."""
    if got == want:
        return None
    for key in sorted(set(got) | set(want)):
        if got.get(key) != want.get(key):
            a, b = repr(got.get(key)), repr(want.get(key))
            short = (lambda t: t if len(t) <= 300 else t[:300] + "...")
            return f"{key}: got {short(a)}, want {short(b)}"
    return "effects differ"


def _call(fn, args, effects: Effects | None = None) -> Run:
    text = io.StringIO()
    with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stdout(text):
        warnings.simplefilter("ignore")
        if effects is not None:
            effects.reset()
        try:
            run = Run(value=fn(*args))
        except Exception as e:  # noqa: BLE001 - classified by the caller
            run = Run(error=e)
        try:
            jax.effects_barrier()   # prints staged by the call land in `text`
        except Exception:  # noqa: BLE001 - a failed computation's effects
            pass
        if effects is not None:
            run.effects = effects.snapshot()
    run.out = text.getvalue()
    return run


def _leaves(value):
    leaves, treedef = jax.tree_util.tree_flatten(value)
    out = []
    for leaf in leaves:
        a = np.asarray(leaf)
        if a.dtype == object:
            raise TypeError(f"non-numeric result leaf {leaf!r}")
        out.append(a)
    return treedef, out


def _overflows(value) -> bool:
    _, leaves = _leaves(value)
    for a in leaves:
        if a.dtype.kind in "fc":
            with np.errstate(all="ignore"):
                if np.any(np.isinf(a)) or np.any(np.abs(np.nan_to_num(a)) > HUGE):
                    return True
    return False


def compare(got, want, rtol=RTOL, atol=ATOL) -> str | None:
    """None when ``got`` matches ``want``, else a description of the difference."""
    try:
        tg, lg = _leaves(got)
        tw, lw = _leaves(want)
    except TypeError as e:
        return str(e)
    if tg.num_leaves != tw.num_leaves or len(lg) != len(lw):
        return f"structure differs: got {tg}, want {tw}"
    for i, (a, b) in enumerate(zip(lg, lw)):
        if a.shape != b.shape:
            return f"leaf {i}: shape {a.shape} vs {b.shape}"
        if a.dtype.kind == "b" or b.dtype.kind == "b":
            if a.dtype.kind != b.dtype.kind:
                return f"leaf {i}: dtype {a.dtype} vs {b.dtype}"
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        if not np.allclose(fa, fb, rtol=rtol, atol=atol, equal_nan=True):
            return f"leaf {i}: got {a!r}, want {b!r}"
    return None


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)")


def compare_text(got: str, want: str, rtol=RTOL, atol=ATOL) -> str | None:
    """None when two printed texts match, else the first difference.

    Text between numbers must be equal up to spacing (arrays pad their
    elements to one width); numbers equal within ``rtol`` and ``atol``, or,
    printed with 3 or more decimals, within the last one (``%.3f`` of two
    close values may round apart).
    """
    tokens = []
    for text in (got, want):
        parts = _NUMBER.split(text)
        tokens.append(([" ".join(p.split()) for p in parts], _NUMBER.findall(text)))
    (gp, gn), (wp, wn) = tokens
    if gp != wp or len(gn) != len(wn):
        return f"printed {got!r}, want {want!r}"
    for a, b in zip(gn, wn):
        # `%.3f` and `{:.3f}` round to 3 places; shorter numbers are exact (`2.5`)
        decimals = min((len(t.split(".")[1].split("e")[0]) for t in (a, b) if "." in t),
                       default=0)
        tol = max(atol, 1.5 * 10.0 ** -decimals) if decimals >= 3 else atol
        if not np.isclose(float(a), float(b), rtol=rtol, atol=tol, equal_nan=True):
            return f"printed {a} where Python printed {b}: {got!r}, want {want!r}"
    return None


def _unstable(f, args, want, tries: int = 6) -> bool:
    """Whether the plain result moves beyond tolerance when the inputs move a few ulps.

    Such a result (a near tie in a comparison, `sin` of a huge number) depends
    on rounding, which legitimately differs between eager and fused jitted code.
    """
    rng = np.random.default_rng(20240607)
    x, v, n = args
    for _ in range(tries):
        d = rng.standard_normal(4)
        px = np.float32(x * (1 + 4e-6 * d[0]) + 1e-6 * d[0])
        pv = (v * (1 + 4e-6 * d[1:]) + 1e-6 * d[1:]).astype(np.float32)
        r = _call(f, _as_jax((px, pv, n)))
        if r.raised or compare(r.value, want) is not None:
            return True
    return False


def _err(e: BaseException) -> str:
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {msg}"


def _internal(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    frames = [f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}" for f in tb[-4:]]
    return _err(e) + "\n  at " + " <- ".join(reversed(frames))


def _compatible_error(conv: BaseException, plain: BaseException) -> bool:
    return isinstance(conv, (autograph.AutographError, type(plain)))


def _clear(e: autograph.AutographError, filename: str) -> bool:
    loc = e.location
    return loc is not None and os.path.abspath(loc.filename) == os.path.abspath(filename)


def _sig(kind: str, e: BaseException | None = None, extra: str = "") -> str:
    if e is None:
        return f"{kind}:{extra}"
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    import re
    msg = re.sub(r"\S+\.py:\d+: ", "", msg)
    msg = re.sub(r"`[^`]*`", "`_`", msg)
    msg = re.sub(r"\d+", "N", msg)
    return f"{kind}:{type(e).__name__}:{msg[:120]}"


def check_function(f, input_sets, *, source: str = "") -> Outcome:
    """Runs ``f`` plainly and converted on each input set; classifies the result."""
    filename = f.__code__.co_filename
    inputs = tuple(input_sets)

    def out(kind, detail="", signature=""):
        return Outcome(kind, detail, signature, source, tuple(
            (float(x), [float(t) for t in v], int(n)) for x, v, n in inputs))

    # 1. plain Python on NumPy inputs, and the converted function on the same (no tracing)
    try:
        cf = autograph.convert(f)
    except autograph.AutographError as e:
        return out("refused", "conversion: " + _err(e), _sig("conversion", e))
    except Exception as e:  # noqa: BLE001
        return out("failure", "conversion raised an internal error: " + _internal(e),
                   _sig("conversion-internal", e))
    fx = Effects.of(f)
    plain_np, plain_jx = [], []
    for args in inputs:
        want = _call(f, _copy(args), fx)
        got = _call(cf, _copy(args), fx)
        plain_np.append(want)
        plain_jx.append(_call(f, _as_jax(args), fx))
        if want.raised:
            if not got.raised and isinstance(want.error, jax.errors.ConcretizationTypeError):
                # Python met a tracer where it needs a value (a helper under `jax.jit`
                # branching on its argument): what the converter exists to stage
                continue
            if not got.raised:
                return out("failure", f"eager converted returned {got.value!r} where Python "
                           f"raised {_err(want.error)}", _sig("eager-value-where-raised",
                                                               want.error))
            if not _compatible_error(got.error, want.error):
                return out("failure", f"eager converted raised {_internal(got.error)} where "
                           f"Python raised {_err(want.error)}", _sig("eager-internal", got.error))
        elif got.raised:
            return out("failure", f"eager converted raised {_internal(got.error)} where Python "
                       f"returned {want.value!r}", _sig("eager-raised", got.error))
        else:
            diff = compare(got.value, want.value, rtol=1e-6, atol=1e-7)
            if diff is not None:
                return out("failure", f"eager converted differs from Python: {diff}",
                           _sig("eager-wrong-value", extra=diff.split(":")[0]))
            diff = compare_text(got.out, want.out, rtol=1e-6, atol=1e-7)
            if diff is not None:
                return out("failure", f"eager converted prints differently: {diff}",
                           _sig("eager-wrong-output"))
            if fx is not None and (diff := compare_effects(got.effects, want.effects)):
                return out("failure", f"eager converted's effects differ from Python's: "
                           f"{diff}", _sig("eager-wrong-effects", extra=diff.split(":")[0]))

    # 2. jitted: traced once, run on every input set; plain `jax.jit(f)` where it decides
    jf, pjf = jax.jit(cf), jax.jit(f)
    if fx is not None:
        def plain(*args):   # a function of its own: no trace shared with `jf` through a cache
            return f(*args)
        pjf = jax.jit(plain)
    plain_jit: dict[int, Run] = {}

    def jit_ref(idx) -> Run:
        if idx not in plain_jit:
            plain_jit[idx] = _call(pjf, _as_jax(inputs[idx]), fx)
        return plain_jit[idx]

    def as_plain_jit(idx, value) -> bool:
        return not jit_ref(idx).raised and compare(value, jit_ref(idx).value) is None

    jit_limit = None
    for idx, args in enumerate(inputs):
        ref, ref_np = plain_jx[idx], plain_np[idx]
        got = _call(jf, _copy(args), fx)
        if fx is not None and not got.raised and not jit_ref(idx).raised:
            # the same call of each (the first traces): effects at trace time must agree
            diff = compare_effects(got.effects, jit_ref(idx).effects)
            if diff is not None:
                return out("failure", f"jit's effects differ from plain jax.jit's: {diff}",
                           _sig("jit-wrong-effects", extra=diff.split(":")[0]))
        if got.raised:
            e = got.error
            if isinstance(e, autograph.AutographError):
                if not _clear(e, filename):
                    return out("failure", f"AutographError without the user's line: {_err(e)}"
                               f" (location {e.location})", _sig("unclear-error", e))
                if all(r.raised for r in plain_jx):
                    return out("both_raised", _err(e))
                if not ref.raised and not jit_ref(idx).raised:
                    return out("refused", "plain jax.jit runs it: " + _err(e),
                               _sig("refused-jit-runs", e))
                return out("refused", _err(e), _sig("refused", e))
            if ref.raised and _compatible_error(e, ref.error):
                continue
            if jit_ref(idx).raised:
                # never worse than plain `jax.jit`, which cannot compile the program
                # either (a branch Python does not take here may still not compile)
                jit_limit = _err(e)
                continue
            return out("failure", f"jit raised {_internal(e)}" + (
                f" where Python raised {_err(ref.error)}" if ref.raised else
                " where Python and plain jax.jit returned a value"), _sig("jit-internal", e))
        if ref.raised:
            if as_plain_jit(idx, got.value) or isinstance(ref.error,
                                                          jax.errors.ConcretizationTypeError):
                continue
            return out("failure", f"jit returned {got.value!r} where Python raised "
                       f"{_err(ref.error)}", _sig("jit-value-where-raised", ref.error))
        if _overflows(ref.value) or (not ref_np.raised and _overflows(ref_np.value)):
            return out("skipped", "plain result overflows")
        diff = compare(got.value, ref.value)
        if diff is not None and (ref_np.raised or compare(got.value, ref_np.value) is not None
                                 ) and not as_plain_jit(idx, got.value):
            if _unstable(f, args, ref.value):
                return out("skipped", f"numerically unstable: {diff}")
            return out("failure", f"jit differs from Python: {diff}",
                       _sig("jit-wrong-value", extra=diff.split(":")[0]))
        diff = compare_text(got.out, ref.out)
        if diff is not None and (ref_np.raised or compare_text(got.out, ref_np.out) is not None):
            if _unstable(f, args, ref.value):
                return out("skipped", f"numerically unstable: {diff}")
            return out("failure", f"jit prints differently: {diff}", _sig("jit-wrong-output"))
    if all(r.raised for r in plain_jx):
        return out("both_raised", _err(plain_jx[0].error))
    if jit_limit is not None:
        return out("both_raised", "plain jax.jit raises too: " + jit_limit)
    return out("ok")


GRID = [make_inputs(x, v, n) for n in range(5) for x in (-2.0, -0.5, 0.0, 0.7, 2.5)
        for v in ([0.5, -1.0, 2.0], [-2.0, -0.3, -1.5], [1.0, 2.0, 0.1])]


def plain_valid(f) -> bool:
    """Whether ``f`` runs without error in plain Python on every input of ``GRID``."""
    return not any(_call(f, _as_jax(args)).raised for args in GRID)


def staged_scans(source: str, args, programs: ProgramDir) -> int | None:
    """The ``scan``s in the jaxpr of ``autograph.convert(f)`` traced on ``args`` (the static
    loops it staged as one ``lax.scan``), or None where tracing raises."""
    f = programs.load(source)
    fx = Effects.of(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            closed = jax.make_jaxpr(autograph.convert(f))(*_as_jax(args))
        except Exception:  # noqa: BLE001 - counted as unknown
            return None
        finally:
            if fx is not None:
                fx.reset()

    def count(jaxpr) -> int:
        total = 0
        for eqn in jaxpr.eqns:
            total += eqn.primitive.name == "scan"
            for sub in jax_extend_core.jaxprs_in_params(eqn.params):
                total += count(sub)
        return total

    return count(closed.jaxpr)


def check_source(source: str, input_sets, programs: ProgramDir) -> Outcome:
    f = programs.load(source)
    outcome = check_function(f, input_sets, source=source)
    return outcome
