"""The ordered passes, and the function that runs them on one tree."""

from __future__ import annotations

import gast

from autograph import analysis, checks
from autograph.context import Context
from autograph.naming import Namer
from autograph.converters import (break_statements, call_trees, conditional_expressions,
                        continue_statements, for_statements, if_statements,
                        logical_expressions, return_statements, while_statements)

PASSES = (
    call_trees,               # user calls -> converted_call; first, so it sees only user calls
    continue_statements,      # continue -> guards, before any loop changes shape
    break_statements,         # break -> flag + extra loop test; needs continue gone
    return_statements,        # one exit; loops gain a `not did_return` test
    if_statements,            # also lowers the guards the passes above emit
    while_statements,
    for_statements,
    conditional_expressions,  # `a if c else b` -> ag__.if_exp
    logical_expressions,      # and/or/not on arrays -> ag__.and_/or_/not_; last, so it
                              # also sees the `not did_break` tests the passes emit
)


def convert_tree(node: gast.FunctionDef, filename: str, *, recursive: bool = True,
                 super_args: tuple[str, str] | None = None) -> gast.FunctionDef:
    """Runs every pass over ``node`` (modified in place) and returns it."""
    checks.check(node, filename)
    node.decorator_list = []
    ctx = Context(namer=Namer.for_tree(node), filename=filename, recursive=recursive,
                  super_args=super_args)
    for converter in PASSES:
        analysis.run(node, converter.REQUIRES)
        node = converter.transform(node, ctx)
    return node
