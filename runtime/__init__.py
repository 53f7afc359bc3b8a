"""The operators that converted code calls, under the name ``ag__``.

Each operator decides at run time: Python values keep plain Python
semantics; traced values are staged with ``lax``.
"""

import builtins as _python
import operator  # generated code names comparisons and in-place operators by these functions

from .branches.conditionals import if_exp, if_stmt
from .branches.logical import and_, not_, or_
from .core.constructs import Construct
from .core.handlers import as_jit_where_caught, handled_by
from .core.values import Undefined, UndefinedReturn, ld, outer_assigned
from .functions import calls
from .functions.calls import converted_call
from .loop_forms.loops import (
    Bound,
    enumerate_,
    for_stmt,
    misplaced_loop_options,
    range_,
    reversed_,
    while_stmt,
    zip_,
)
from .python import builtins, math_functions
from .python.builtins import in_
from .python.items import setitem, setitem_attr
from .python.patterns import (
    has_match_attrs,
    is_mapping,
    is_sequence,
    item_from_end,
    mapping_rest,
    match_attr,
    sequence_rest,
)
from .python.side_effects import assert_, in_flight, print_, raised, reraised
from .python.strings import format_, fstring, percent_format, repr_, str_, str_format

__all__ = [
    "converted_call", "in_", "if_stmt", "if_exp", "and_", "or_", "not_", "while_stmt",
    "for_stmt", "Bound", "operator", "range_", "enumerate_", "zip_", "reversed_", "Undefined",
    "UndefinedReturn", "print_", "assert_", "ld", "raised", "reraised", "in_flight",
    "outer_assigned",
    "setitem", "setitem_attr", "fstring", "str_", "repr_", "format_", "str_format",
    "percent_format", "Construct",
    "is_sequence", "item_from_end", "sequence_rest", "is_mapping", "mapping_rest",
    "has_match_attrs", "match_attr", "misplaced_loop_options", "handled_by",
]

# Built-ins reached as values (`fn = range; fn(n)`) run as if written literally;
# those of `builtins` (`min`, `float`, ...) are called so wherever they are written.
for _builtin, _replacement in ((range, range_), (enumerate, enumerate_), (zip, zip_),
                               (reversed, reversed_), (print, print_)):
    calls.register_builtin(_builtin, _replacement)
# (those whose built-in raises on a traced value under plain `jax.jit` raise so inside
# a `try` whose handler catches that: see `core.handlers`)
for _name in builtins.__all__:
    if _name != "in_":
        _builtin, _replacement = getattr(_python, _name[:-1]), getattr(builtins, _name)
        if _name in builtins.RAISING:
            _replacement = as_jit_where_caught(_builtin, _replacement)
        calls.register_builtin(_builtin, _replacement)
# Python's `math` functions: what they compute on a float, on traced values too
for _builtin, _replacement in math_functions.TABLE.items():
    calls.register_builtin(_builtin, as_jit_where_caught(_builtin, _replacement))
# `operator.truth(x)` and `operator.not_(x)` are `bool(x)` and `not x`
calls.register_builtin(operator.truth, builtins.bool_)
calls.register_builtin(operator.not_, not_)
del _builtin, _replacement, _name
