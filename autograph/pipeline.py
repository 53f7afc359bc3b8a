"""The ordered passes, and the function that runs them on one tree."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import gast

from autograph import analysis, anno, checks, directive_calls, tree_formats
from autograph.analysis.activity import walk
from autograph.anno import Anno
from autograph.context import Context
from autograph.converters import (
    assert_statements,
    break_statements,
    call_trees,
    conditional_expressions,
    continue_statements,
    del_statements,
    finally_jumps,
    for_statements,
    global_statements,
    if_statements,
    index_uses,
    item_assignments,
    logical_expressions,
    loop_counters,
    match_statements,
    nested_declarations,
    print_calls,
    private_names,
    raise_statements,
    return_statements,
    truth_tests,
    try_handlers,
    try_statements,
    undefined_reads,
    walrus_operands,
    while_statements,
)
from autograph.naming import Namer


class Together:
    """Converters that run as one walk over the tree, on one analysis.

    Each rewrites its own kind of statement (``Lowering.visit_If``,
    ``visit_While``, ``visit_For``) after the statements inside it, so when an
    outer statement is lowered, its inner ones already are. The analysis made
    before the walk still holds for the outer statement: a lowered inner
    block assigns exactly the names it carries out, so what the outer one
    modifies, reads and leaves live is unchanged (apart from the names of the
    generated functions, which nothing carries).
    """

    def __init__(self, *converters):
        self.converters = converters
        self.__name__ = "+".join(c.__name__.rsplit(".", 1)[-1] for c in converters)
        self.NODES = tuple(n for c in converters for n in c.NODES)
        self.REQUIRES = tuple(dict.fromkeys(a for c in converters for a in c.REQUIRES))
        self.EMITS = tuple(n for c in converters for n in getattr(c, "EMITS", ()))
        self._lowering = type("Lowering", tuple(c.Lowering for c in converters), {})

    def transform(self, node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
        return self._lowering(ctx).visit(node)

PASSES = (
    private_names,            # `__x` -> `_Class__x` in a method, as its class body compiles
                              # it; first, before any pass reads or makes names
    match_statements,         # `match` -> an `if`/`elif` chain of its pattern tests, which
                              # the passes below lower like any `if`; before any pass reads
                              # the names it binds or moves its blocks
    nested_declarations,      # `global`/`nonlocal` in a block -> the top of the function,
                              # whose whole body they apply to; before any pass moves blocks
    try_handlers,             # a `try` body runs knowing what its handlers catch (a traced
                              # `if` there raises as under `jax.jit` where they catch that);
                              # before finally_jumps makes `try` statements of its own
    finally_jumps,            # a `try` whose `finally:` jumps catches what is in flight and
                              # runs that block after it; before index_uses sees the handler
                              # (one that would catch tracing errors) and raise_statements
                              # marks its re-raise, and the jump passes lower what it moves
    walrus_operands,          # `a and (y := b)` as a statement's value or an `if` test ->
                              # `if` statements binding `y` where `b` runs; before
                              # logical_expressions would put `b` in a lambda
    index_uses,               # marks `for` loops that use their index as a Python value
                              # (`f"w{i}"`, `str(i)`), read before print_calls rewrites
                              # the formatting it may do at run time
    truth_tests,              # marks the `and`/`or` read only for truth (`if` tests, ...),
                              # before the passes that lower those statements
    print_calls,              # print(...) -> ag__.print_, before call_trees would see it
    assert_statements,        # assert -> ag__.assert_; a statement less for the passes below
    del_statements,           # del x -> x = ag__.Undefined('x'): then an ordinary assignment
    raise_statements,         # raise E -> raise ag__.raised(E): the user's own, deferred
                              # to run time in a staged branch
    call_trees,               # user calls -> converted_call; sees only user calls
    item_assignments,         # x[i] = v -> x = ag__.setitem(x, i, v): JAX arrays too; after
                              # call_trees, which would route its calls
    loop_counters,            # marks the counter a `while` steps each iteration, before
                              # the jump passes move its step into guarded blocks
    continue_statements,      # continue -> guards, before any loop changes shape
    break_statements,         # break -> flag + extra loop test; needs continue gone
    return_statements,        # one exit; loops gain a `not did_return` test
    try_statements,           # names a `try` body may leave unbound: bound to Undefined
    Together(if_statements,   # also lowers the guards the passes above emit; `if`s and
             while_statements,  # loops in one walk, innermost first, on one analysis
             for_statements),
    conditional_expressions,  # `a if c else b` -> ag__.if_exp
    logical_expressions,      # and/or/not on arrays -> ag__.and_/or_/not_; it also sees
                              # the `not did_break` tests the passes emit
    undefined_reads,          # reads of names a block may leave unassigned; after every
                              # pass that records such names
    global_statements,        # `global`/`nonlocal` copied into the generated functions
                              # that assign those names; last, after every pass that
                              # makes functions
)


def convert_tree(node: gast.FunctionDef, filename: str, *, recursive: bool = True,
                 super_args: tuple[str, str] | None = None, class_name: str | None = None,
                 namespace: Mapping[str, Any] | None = None,
                 imports: Mapping[str, str] | None = None,
                 passes=PASSES) -> gast.FunctionDef:
    """Runs ``passes`` (all, in order, by default) over ``node`` and returns it.

    ``class_name`` is the class whose body ``node`` is written in, if any
    (``parsing.enclosing_class`` of its qualified name). ``namespace`` (a
    live function's closure and globals) or else ``imports`` (its module's,
    for a function read from a file) say what the names of directives such
    as ``set_loop_options`` refer to (see ``directive_calls``).
    """
    directives = directive_calls.Resolver(node, namespace=namespace, imports=imports)
    checks.check(node, filename, directives)
    node.decorator_list = []
    kept = _keep_unconverted(node, directives)
    present: set = set()  # the node types in the tree
    ctx = Context(namer=Namer.for_tree(node, present), filename=filename, recursive=recursive,
                  super_args=super_args, class_name=class_name, directives=directives)
    # analysis -> the node kinds whose functions it was last computed for, while
    # every pass since has declared (``KEEPS``) that it leaves it valid
    fresh: dict = {}
    for converter in passes:
        if not present.intersection(converter.NODES):
            continue  # nothing for this pass to rewrite
        stale = [a for a in converter.REQUIRES if fresh.get(a) != converter.NODES]
        analysis.run(node, stale, converter.NODES)
        fresh.update(dict.fromkeys(stale, converter.NODES))
        node = converter.transform(node, ctx)
        keeps = getattr(converter, "KEEPS", ())
        fresh = {a: kinds for a, kinds in fresh.items() if a in keeps}
        present |= set(getattr(converter, "EMITS", ()))
    if kept:
        _put_back_unconverted(node)
    return node


def _keep_unconverted(node: gast.FunctionDef, directives: directive_calls.Resolver) -> bool:
    """Keeps the user's body of each nested function decorated with ``do_not_convert``,
    and of each nested generator (``checks.runs_as_written``).

    The passes still rewrite it, so that the analyses of the enclosing code
    see the same names, and ``_put_back_unconverted`` restores it: the
    decorator then marks a function that runs as written, as it says. Returns
    whether there was one.
    """
    kept = False
    for child in walk(node):
        if (isinstance(child, gast.FunctionDef) and child is not node
                and checks.runs_as_written(child, directives)):
            anno.set(child, Anno.UNCONVERTED_BODY, copy.deepcopy(child.body))
            kept = True
    return kept


def _put_back_unconverted(node: gast.FunctionDef) -> None:
    for child in gast.walk(node):
        if isinstance(child, gast.FunctionDef) and anno.has(child, Anno.UNCONVERTED_BODY):
            child.body = anno.get(child, Anno.UNCONVERTED_BODY)


def convert_source(source: str, filename: str = "<source>", *, passes=PASSES,
                   recursive: bool = True) -> str:
    """Converts the first function defined in ``source``; returns the new source.

    Purely syntactic (nothing is imported or run), as the command line and the
    golden tests use it.
    """
    from autograph import loader, parsing

    imports = directive_calls.module_imports(tree_formats.parse_gast(source))
    for qualname, node in parsing.parse_source_functions(source, filename):
        return loader.unparse(convert_tree(node, filename, passes=passes, recursive=recursive,
                                           class_name=parsing.enclosing_class(qualname),
                                           imports=imports))[0]
    raise ValueError("no function definition in the source")
