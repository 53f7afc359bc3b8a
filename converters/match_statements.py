"""Lowers `match` to an `if`/`elif` chain that tests each pattern as Python does.

    match cmd:                      ->   if cmd == 0:
        case 0:                              y = x
            y = x                        elif cmd == 1 or cmd == 2:
        case 1 | 2:                          y = -x
            y = -x                       elif ag__.is_sequence(cmd, length=2) and cmd[0] == 'scale':
        case ['scale', k]:                   k = cmd[1]
            y = k * x                        y = k * x
        case _:                          else:
            y = 0.0                          y = 0.0

Each case becomes one test, made of the checks Python's `match` makes, in
its order: ``==`` for literal and value patterns (``0``, ``-1``,
``Color.RED``), ``is`` for ``None``/``True``/``False``, ``isinstance`` and
the attributes a class pattern reads (``__match_args__`` for positional
sub-patterns, through ``ag__.has_match_attrs``/``ag__.match_attr``), the
length of a sequence and the keys of a mapping (``ag__.is_sequence``,
``ag__.is_mapping``). The names a pattern captures are bound at the top of
the case's body, once its test holds. A case with a guard binds them before
the guard, which is tested only where the pattern matched, and where the
guard fails the chain goes on, as Python's does::

    case [n] if n > 3:              ->   matched = ag__.is_sequence(cmd, length=1)
        y = n                            if matched:
    case _:                                  n = cmd[0]
        y = 0                                matched = n > 3
                                         if matched:
                                             y = n
                                         else:
                                             y = 0

The subject is evaluated once: a local name no case rebinds is used as it
is, any other subject is bound to a fresh name (``subject = f(x)``) first.
The parts of it a pattern reads (items, attributes, mapping values) are read
again where both a test and a binding use them.

The chain is then lowered by the passes after this one: a traced subject
gives traced ``==`` tests, so the cases stage as nested ``lax.cond``;
types, lengths, keys and attributes are known while tracing, so those
tests stay Python. ``break``, ``continue`` and ``return`` in a case body
are lowered by the jump passes, as in any `if`.
"""

from __future__ import annotations

import copy

import gast

from autograph import templates
from autograph.analysis import Analysis
from autograph.context import Context
from autograph.scopes import LocalNamesTransformer

NODES = (gast.Match,)  # the pass is skipped when the tree has none
REQUIRES = (Analysis.SCOPES,)  # whether the subject is a local name

_BIND = templates.Template("NAME = VALUE")
_IF = templates.Template("""
    if TEST:
        BODY
""")
_GUARDED = templates.Template("""
    MATCHED = TEST
    if MATCHED:
        MATCHED = GUARD
    if MATCHED:
        BODY
""")
_EQUALS = templates.Template("SUBJECT == VALUE")
_IS = templates.Template("SUBJECT is VALUE")
_SEQUENCE = templates.Template("ag__.is_sequence(SUBJECT, length=LENGTH)")
_LONGER_SEQUENCE = templates.Template("ag__.is_sequence(SUBJECT, min_length=LENGTH)")
_ANY_SEQUENCE = templates.Template("ag__.is_sequence(SUBJECT)")
_ITEM = templates.Template("SUBJECT[INDEX]")
_ITEM_FROM_END = templates.Template("ag__.item_from_end(SUBJECT, INDEX)")
_SEQUENCE_REST = templates.Template("ag__.sequence_rest(SUBJECT, START, END)")
_MAPPING = templates.Template("ag__.is_mapping(SUBJECT, KEYS)")
_ANY_MAPPING = templates.Template("ag__.is_mapping(SUBJECT)")
_MAPPING_VALUE = templates.Template("SUBJECT.get(KEY)")
_MAPPING_REST = templates.Template("ag__.mapping_rest(SUBJECT, KEYS)")
_INSTANCE = templates.Template("isinstance(SUBJECT, CLS)")
_HAS_ATTR = templates.Template("hasattr(SUBJECT, NAME)")
_HAS_MATCH_ATTRS = templates.Template("ag__.has_match_attrs(SUBJECT, CLS, COUNT)")
_HAS_MATCH_ATTRS_KW = templates.Template("ag__.has_match_attrs(SUBJECT, CLS, COUNT, KEYWORDS)")
_MATCH_ATTR = templates.Template("ag__.match_attr(SUBJECT, CLS, INDEX)")


def _fresh(node: gast.expr) -> gast.expr:
    return copy.deepcopy(node)


def _all(tests: list[gast.expr]) -> gast.expr:
    return tests[0] if len(tests) == 1 else gast.BoolOp(op=gast.And(), values=tests)


def bound_names(pattern: gast.pattern) -> list[str]:
    """The names ``pattern`` binds, in the order they appear."""
    names = []
    for node in gast.walk(pattern):
        if isinstance(node, (gast.MatchAs, gast.MatchStar)) and node.name:
            names.append(node.name)
        elif isinstance(node, gast.MatchMapping) and node.rest:
            names.append(node.rest)
    return names


def _is_wildcard(pattern: gast.pattern) -> bool:
    return isinstance(pattern, gast.MatchAs) and pattern.pattern is None and not pattern.name


def _has_walrus(node) -> bool:
    return any(isinstance(n, gast.NamedExpr) for n in gast.walk(node))


class _Transformer(LocalNamesTransformer):

    def __init__(self, ctx: Context, nonlocals: frozenset):
        super().__init__(ctx)
        self.nonlocals = nonlocals  # names some function in the tree declares nonlocal

    def visit_Match(self, node: gast.Match):
        self.generic_visit(node)  # matches nested in case bodies first
        out, subject = self._subject(node)
        rest: list[gast.stmt] = []
        for case in reversed(node.cases):
            rest = self._case(case, subject, rest)
        if not out and all(_is_wildcard(case.pattern) for case in node.cases):
            out = [gast.copy_location(gast.Expr(value=subject), node)]  # read, as Python does
        return out + rest

    def _subject(self, node: gast.Match) -> tuple[list[gast.stmt], gast.Name]:
        """The statements that evaluate the subject, and the name that then holds it."""
        subject = node.subject
        if isinstance(subject, gast.Name) and self._stays(subject.id, node):
            return [], subject
        name = self.ctx.namer.new("subject")
        bind = _BIND.substitute(node, NAME=name, VALUE=subject)
        return bind, templates.name(name)

    def _stays(self, name: str, node: gast.Match) -> bool:
        """Whether the local ``name`` holds the same value at every test of ``node``."""
        if name not in self.locals or name in self.nonlocals:
            return False
        for case in node.cases:
            if name in bound_names(case.pattern):
                return False
            if case.guard is not None and any(
                    isinstance(n, gast.NamedExpr) and n.target.id == name
                    for n in gast.walk(case.guard)):
                return False
        return True

    def _case(self, case: gast.match_case, subject: gast.Name,
              rest: list[gast.stmt]) -> list[gast.stmt]:
        """``case``'s statements, with ``rest`` (the later cases) run where it fails."""
        origin = case.pattern
        tests = self._tests(case.pattern, subject)
        binds = self._binds(case.pattern, subject)
        for stmt in binds:
            templates.set_location(stmt, origin)
        guard = case.guard
        if guard is None:
            if not tests:  # irrefutable: the last case
                return binds + case.body
            return self._if(_all(tests), binds + case.body, rest, origin)
        if not binds and not _has_walrus(guard):
            return self._if(_all(tests + [guard]), case.body, rest, origin)
        if not tests:
            return binds + self._if(guard, case.body, rest, origin)
        # the guard sees the captured names, and may bind names of its own
        matched = self.ctx.namer.new("matched")
        out = _GUARDED.substitute(origin, MATCHED=matched, TEST=_all(tests), GUARD=guard,
                                  BODY=case.body)
        out[1].body[:0] = binds
        out[-1].orelse = rest
        for stmt in out:
            templates.set_location(stmt, origin)
        return out

    @staticmethod
    def _if(test, body, orelse, origin) -> list[gast.stmt]:
        (stmt,) = _IF.substitute(origin, TEST=test, BODY=body)
        stmt.orelse = orelse
        templates.set_location(stmt, origin)  # the tests' `and`/`or`, made here
        return [stmt]

    # -- tests: the checks that decide whether a pattern matches, in Python's order

    def _tests(self, pattern: gast.pattern, subject: gast.expr) -> list[gast.expr]:
        method = getattr(self, "_tests_" + type(pattern).__name__)
        return method(pattern, subject)

    def _tests_MatchValue(self, pattern, subject):
        return [_EQUALS.substitute_expr(pattern, SUBJECT=_fresh(subject),
                                        VALUE=_fresh(pattern.value))]

    def _tests_MatchSingleton(self, pattern, subject):
        return [_IS.substitute_expr(pattern, SUBJECT=_fresh(subject),
                                    VALUE=templates.literal(pattern.value))]

    def _tests_MatchAs(self, pattern, subject):
        return [] if pattern.pattern is None else self._tests(pattern.pattern, subject)

    def _tests_MatchOr(self, pattern, subject):
        alternatives = [self._tests(p, subject) for p in pattern.patterns]
        if not all(alternatives):
            return []  # an irrefutable alternative (only the last may be)
        return [gast.BoolOp(op=gast.Or(), values=[_all(t) for t in alternatives])]

    def _tests_MatchSequence(self, pattern, subject):
        items = pattern.patterns
        star = next((i for i, p in enumerate(items) if isinstance(p, gast.MatchStar)), None)
        if star is None:
            out = [_SEQUENCE.substitute_expr(pattern, SUBJECT=_fresh(subject),
                                             LENGTH=templates.literal(len(items)))]
        elif len(items) > 1:
            out = [_LONGER_SEQUENCE.substitute_expr(pattern, SUBJECT=_fresh(subject),
                                                    LENGTH=templates.literal(len(items) - 1))]
        else:
            out = [_ANY_SEQUENCE.substitute_expr(pattern, SUBJECT=_fresh(subject))]
        for i, item in enumerate(items):
            if i != star:
                out += self._tests(item, self._item(pattern, subject, i, star))
        return out

    def _tests_MatchMapping(self, pattern, subject):
        if pattern.keys:
            keys = gast.Tuple(elts=[_fresh(k) for k in pattern.keys], ctx=gast.Load())
            out = [_MAPPING.substitute_expr(pattern, SUBJECT=_fresh(subject), KEYS=keys)]
        else:
            out = [_ANY_MAPPING.substitute_expr(pattern, SUBJECT=_fresh(subject))]
        for key, item in zip(pattern.keys, pattern.patterns):
            out += self._tests(item, self._value(pattern, subject, key))
        return out

    def _tests_MatchClass(self, pattern, subject):
        out = [_INSTANCE.substitute_expr(pattern, SUBJECT=_fresh(subject),
                                         CLS=_fresh(pattern.cls))]
        if pattern.patterns:  # `__match_args__` names the attributes: known when it runs
            count = templates.literal(len(pattern.patterns))
            if pattern.kwd_attrs:
                out.append(_HAS_MATCH_ATTRS_KW.substitute_expr(
                    pattern, SUBJECT=_fresh(subject), CLS=_fresh(pattern.cls), COUNT=count,
                    KEYWORDS=templates.literal(tuple(pattern.kwd_attrs))))
            else:
                out.append(_HAS_MATCH_ATTRS.substitute_expr(
                    pattern, SUBJECT=_fresh(subject), CLS=_fresh(pattern.cls), COUNT=count))
        else:
            out += [_HAS_ATTR.substitute_expr(pattern, SUBJECT=_fresh(subject),
                                              NAME=templates.literal(name))
                    for name in pattern.kwd_attrs]
        for i, item in enumerate(pattern.patterns):
            out += self._tests(item, self._positional(pattern, subject, i))
        for name, item in zip(pattern.kwd_attrs, pattern.kwd_patterns):
            out += self._tests(item, self._attribute(pattern, subject, name))
        return out

    # -- the parts of the subject a sub-pattern matches

    @staticmethod
    def _item(pattern, subject, i, star):
        if star is None or i < star:
            return _ITEM.substitute_expr(pattern, SUBJECT=_fresh(subject),
                                         INDEX=templates.literal(i))
        return _ITEM_FROM_END.substitute_expr(pattern, SUBJECT=_fresh(subject),
                                              INDEX=templates.literal(len(pattern.patterns) - i))

    @staticmethod
    def _value(pattern, subject, key):
        return _MAPPING_VALUE.substitute_expr(pattern, SUBJECT=_fresh(subject), KEY=_fresh(key))

    @staticmethod
    def _positional(pattern, subject, i):
        return _MATCH_ATTR.substitute_expr(pattern, SUBJECT=_fresh(subject),
                                           CLS=_fresh(pattern.cls), INDEX=templates.literal(i))

    @staticmethod
    def _attribute(pattern, subject, name):
        node = gast.Attribute(value=_fresh(subject), attr=name, ctx=gast.Load())
        templates.set_location(node, pattern)
        return node

    # -- binds: the assignments of the captured names, once the pattern matched

    def _binds(self, pattern: gast.pattern, subject: gast.expr) -> list[gast.stmt]:
        if isinstance(pattern, gast.MatchAs):
            out = [] if pattern.pattern is None else self._binds(pattern.pattern, subject)
            if pattern.name:
                out += _BIND.substitute(pattern, NAME=pattern.name, VALUE=_fresh(subject))
            return out
        if isinstance(pattern, gast.MatchOr):
            return self._binds_or(pattern, subject)
        out = []
        if isinstance(pattern, gast.MatchSequence):
            items = pattern.patterns
            star = next((i for i, p in enumerate(items) if isinstance(p, gast.MatchStar)), None)
            for i, item in enumerate(items):
                if i != star:
                    out += self._binds(item, self._item(pattern, subject, i, star))
                elif item.name:
                    out += _BIND.substitute(pattern, NAME=item.name, VALUE=_SEQUENCE_REST
                                            .substitute_expr(pattern, SUBJECT=_fresh(subject),
                                                             START=templates.literal(i),
                                                             END=templates.literal(
                                                                 len(items) - i - 1)))
        elif isinstance(pattern, gast.MatchMapping):
            for key, item in zip(pattern.keys, pattern.patterns):
                out += self._binds(item, self._value(pattern, subject, key))
            if pattern.rest:
                keys = gast.Tuple(elts=[_fresh(k) for k in pattern.keys], ctx=gast.Load())
                out += _BIND.substitute(pattern, NAME=pattern.rest, VALUE=_MAPPING_REST
                                        .substitute_expr(pattern, SUBJECT=_fresh(subject),
                                                         KEYS=keys))
        elif isinstance(pattern, gast.MatchClass):
            for i, item in enumerate(pattern.patterns):
                out += self._binds(item, self._positional(pattern, subject, i))
            for name, item in zip(pattern.kwd_attrs, pattern.kwd_patterns):
                out += self._binds(item, self._attribute(pattern, subject, name))
        return out

    def _binds_or(self, pattern: gast.MatchOr, subject: gast.expr) -> list[gast.stmt]:
        """The binds of the first alternative that matches (all bind the same names)."""
        binds = [self._binds(p, subject) for p in pattern.patterns]
        if not binds[0]:
            return []
        dumps = {"\n".join(gast.dump(s) for s in b) for b in binds}
        if len(dumps) == 1:  # the same parts in every alternative (`('a', x) | ('b', x)`)
            return binds[0]
        out: list[gast.stmt] = []
        for alternative, alternative_binds in reversed(list(zip(pattern.patterns, binds))):
            tests = self._tests(alternative, subject)
            out = (self._if(_all(tests), alternative_binds, out, alternative) if tests
                   else alternative_binds)
        return out


def _nonlocal_names(node: gast.FunctionDef) -> frozenset:
    return frozenset(name for n in gast.walk(node) if isinstance(n, gast.Nonlocal)
                     for name in n.names)


def transform(node: gast.FunctionDef, ctx: Context) -> gast.FunctionDef:
    return _Transformer(ctx, _nonlocal_names(node)).visit(node)
