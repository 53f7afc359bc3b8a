"""Shrinks a failing generated program to a minimal one with the same failure.

    python -m tests.fuzz.shrink /tmp/fuzz0.jsonl --seed 62
    python -m tests.fuzz.shrink /tmp/fuzz0.jsonl --all-distinct

Greedy, AST-based: delete statements, replace compound statements by their
bodies, drop ``elif``/``else`` branches, replace expressions by their parts
or by simple atoms, and try fewer/simpler inputs, keeping every change that
preserves the outcome's signature (``harness.Outcome.signature``).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import signal
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

from tests.fuzz import harness  # noqa: E402


class _Timeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _Timeout()

_ATOMS = ("x", "v", "n", "0", "1", "1.0", "0.5", "-1.0", "a", "w", "k")


def _parents(tree):
    parents = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
    return parents


def _stmt_lists(tree):
    for idx, node in enumerate(ast.walk(tree)):
        for field in ("body", "orelse"):
            lst = getattr(node, field, None)
            if isinstance(lst, list) and lst and isinstance(lst[0], ast.stmt):
                yield idx, field, len(lst)


def _edit(src, fn):
    tree = ast.parse(src)
    nodes = list(ast.walk(tree))
    if fn(tree, nodes) is False:
        return None
    ast.fix_missing_locations(tree)
    try:
        out = ast.unparse(tree) + "\n"
    except Exception:  # noqa: BLE001
        return None
    return out if out != src else None


def _is_counter_step(st) -> bool:
    return (isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name)
            and re.fullmatch(r"i\d", st.target.id) is not None)


def _protected(tree, keep_loops=False):
    """ids of expressions whose edits could make a loop run forever, and with
    ``keep_loops`` the iterables of ``for`` loops (a program of ``staging_proof``:
    as ``range(n)`` or ``range(1)`` a loop is no longer one the proof decides on)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.While):
            for sub in ast.walk(node.test):
                ids.add(id(sub))
        if keep_loops and isinstance(node, ast.For):
            for sub in ast.walk(node.iter):
                ids.add(id(sub))
        if _is_counter_step(node):
            for sub in ast.walk(node):
                ids.add(id(sub))
    return ids


def candidates(src, statements_only=False, keep_loops=False):
    tree = ast.parse(src)
    lists = list(_stmt_lists(tree))
    # 1. delete statements (the function's final statements last)
    for idx, field, n in lists:
        for i in range(n):
            def delete(tree, nodes, idx=idx, field=field, i=i):
                lst = getattr(nodes[idx], field)
                if _is_counter_step(lst[i]):
                    return False
                if isinstance(nodes[idx], ast.FunctionDef) and len(lst) == 1:
                    return False
                del lst[i]
                if not lst and field == "body":
                    lst.append(ast.Pass())
            yield delete
    # 2. replace a compound statement by its body / else branch; drop else branches
    for idx, field, n in lists:
        for i in range(n):
            for part in ("body", "orelse"):
                def inline(tree, nodes, idx=idx, field=field, i=i, part=part):
                    lst = getattr(nodes[idx], field)
                    st = lst[i]
                    inner = getattr(st, part, None)
                    if not isinstance(st, (ast.If, ast.For, ast.While)) or not inner:
                        return False
                    lst[i:i + 1] = inner
                yield inline

            def drop_else(tree, nodes, idx=idx, field=field, i=i):
                st = getattr(nodes[idx], field)[i]
                if not isinstance(st, (ast.If, ast.For, ast.While)) or not st.orelse:
                    return False
                st.orelse = []
            yield drop_else
    if statements_only:
        return
    # 3. replace expressions by a sub-expression or an atom; `while c and extra` by `while c`
    nodes = list(ast.walk(tree))
    for idx, node in enumerate(nodes):
        if isinstance(node, ast.While) and isinstance(node.test, ast.BoolOp):
            def drop_extra(tree, nodes, idx=idx):
                nodes[idx].test = nodes[idx].test.values[0]
            yield drop_extra
    protected = _protected(tree, keep_loops)
    for idx, node in enumerate(nodes):
        if id(node) in protected:
            continue
        if not isinstance(node, ast.expr) or isinstance(node, ast.Name) and node.id in _ATOMS[:3]:
            continue
        if isinstance(node, (ast.Name, ast.Constant)) and not isinstance(
                getattr(node, "ctx", ast.Load()), ast.Load):
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            continue
        subs = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)
                and not isinstance(c, ast.Attribute)]
        for k in range(len(subs) + len(_ATOMS)):
            def replace(tree, nodes, idx=idx, k=k):
                node = nodes[idx]
                parents = _parents(tree)
                parent = parents.get(id(node))
                if parent is None:
                    return False
                if isinstance(parent, (ast.Call,)) and node is parent.func:
                    return False
                if isinstance(parent, ast.Attribute):
                    return False
                kids = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)
                        and not isinstance(c, ast.Attribute)]
                if k < len(kids):
                    new = kids[k]
                else:
                    atom = _ATOMS[k - len(kids)]
                    new = ast.parse(atom, mode="eval").body
                    if ast.dump(new) == ast.dump(node):
                        return False
                for field, value in ast.iter_fields(parent):
                    if value is node:
                        setattr(parent, field, new)
                        return True
                    if isinstance(value, list):
                        for j, item in enumerate(value):
                            if item is node:
                                value[j] = new
                                return True
                return False
            yield replace


def shrink(source, inputs, signature, *, log=None, max_checks=3000, progress=None,
           valid=False, statements_only=False):
    """The smallest (source, inputs) found whose outcome has ``signature``."""
    programs = harness.ProgramDir()
    checks = [0]
    # a program of `staging_proof` (it keeps effects) keeps its static loops static
    keep_loops = "def fuzz_effects(" in source
    signal.signal(signal.SIGALRM, _alarm)   # an edit may make a Python loop run forever

    def fails(src, ins):
        checks[0] += 1
        signal.alarm(20)
        try:
            out = harness.check_source(src, [harness.make_inputs(*i) for i in ins], programs)
            if out.signature != signature:
                return False
            # `valid`: the program must run in plain Python on every input of the grid
            return not valid or harness.plain_valid(programs.load(src))
        except (Exception, _Timeout):  # noqa: BLE001 - e.g. a syntax error from an edit
            return False
        finally:
            signal.alarm(0)

    try:
        assert fails(source, inputs), "the original does not fail with this signature"
        # inputs: one set, then simpler values
        for i in range(len(inputs)):
            if len(inputs) > 1 and fails(source, [inputs[i]]):
                inputs = [inputs[i]]
                break
        changed = True
        while changed and checks[0] < max_checks:
            changed = False
            i = 0
            while checks[0] < max_checks:
                edits = list(candidates(source, statements_only, keep_loops))
                if i >= len(edits):
                    break
                new = _edit(source, edits[i])
                if new is not None and len(new) <= len(source) and fails(new, inputs):
                    source = new
                    changed = True
                    if log:
                        log(f"[{checks[0]}] {len(source)} chars")
                    if progress:
                        progress(source, inputs)
                else:
                    i += 1
        # simpler input values
        x, v, n = inputs[0]
        for cand in ([0.5, v, n], [1.0, v, n], [x, [1.0, 2.0, 3.0], n], [x, v, 0], [x, v, 1],
                     [x, v, 2], [x, v, 3]):
            if cand != [x, v, n] and fails(source, [tuple(cand)]):
                x, v, n = cand
        inputs = [(x, v, n)]
    finally:
        programs.cleanup()
    return source, inputs


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("jsonl")
    ap.add_argument("--seed", type=int, action="append")
    ap.add_argument("--all-distinct", action="store_true")
    ap.add_argument("--kind", default="failure")
    ap.add_argument("--max-checks", type=int, default=3000)
    ap.add_argument("--valid", action="store_true",
                    help="keep only programs that run in plain Python on every grid input")
    ap.add_argument("--statements-only", action="store_true",
                    help="only delete and inline statements (conditions stay as generated)")
    ap.add_argument("--out", help="append results here (JSON lines), the best so far in OUT.wip")
    args = ap.parse_args(argv)
    recs = [json.loads(line) for line in open(args.jsonl)]
    todo = []
    if args.seed:
        todo = [r for r in recs if r["seed"] in args.seed]
    elif args.all_distinct:
        seen = set()
        for r in recs:
            if r["kind"] == args.kind and r["signature"] not in seen:
                seen.add(r["signature"])
                todo.append(r)
    for r in todo:
        def progress(src, ins, r=r):
            if args.out:
                with open(args.out + ".wip", "w") as fh:
                    fh.write(f"# seed {r['seed']}: {r['signature']}\n{src}# inputs {ins}\n")
        src, ins = shrink(r["source"], [tuple(i) for i in r["inputs"]], r["signature"],
                          log=lambda m: print(m, file=sys.stderr), max_checks=args.max_checks,
                          progress=progress, valid=args.valid,
                          statements_only=args.statements_only)
        line = json.dumps({"seed": r["seed"], "signature": r["signature"], "source": src,
                           "inputs": ins})
        print(line)
        if args.out:
            with open(args.out, "a") as fh:
                fh.write(line + "\n")
        print(f"# seed {r['seed']}: {r['signature']}\n{src}# inputs {ins}\n", file=sys.stderr)


if __name__ == "__main__":
    main()
