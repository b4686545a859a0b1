"""Semantic checks: names, types, variables, well-formedness, safety, options.

``check_query`` turns a parsed query into a :class:`CheckedQuery` or raises
the first problem as a located :class:`~sharp_cer.language.diagnostics.QueryError`.

Variables follow CORE's semantics: a variable holds a *set* of events, an
event type name is itself a variable holding its events, and ``x[P]`` means
every event of x satisfies P. Inside ``φ+`` the variables re-bind on each
iteration; outside it they hold the events of all iterations (so they are
*Kleene* variables, usable only through aggregates in cross-event conditions).

>>> schema = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
>>> checked = check_query(parse_query("SELECT * WHERE A AS a ; B+ AS b FILTER sum(b.x) < a.x WITHIN 5 EVENTS"), schema)
>>> sorted((v.name, v.many) for v in checked.variables.values())
[('A', False), ('B', True), ('a', False), ('b', True)]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sharp_cer.errors import LanguageError, kind_of

from . import ast
from .diagnostics import (
    AggregateOverSingleEventError,
    AmbiguousEventTypeError,
    ContradictoryOptionsError,
    InvalidLiteralError,
    KleeneReferenceError,
    MisplacedOperatorError,
    NotWellFormedError,
    QueryWarning,
    TypeMismatchError,
    UndeclaredAttributeError,
    UndeclaredEventTypeError,
    UndeclaredStreamError,
    UnknownFunctionError,
    UnknownVariableError,
    UnsafeFormulaError,
    WindowError,
    did_you_mean,
    listing,
)
from .parser import parse_query
from .printer import expr as expr_text
from .printer import formula as formula_text
from .printer import window as window_text
from .schema import NUMERIC_TYPES, EventSchema, Schema
from .source import Source, Span
from .trailing import split, trailing_absence

_Bindings = tuple[dict[str, set[EventSchema]], dict[str, int], set[EventSchema], int]

MATH_FUNCTIONS = frozenset({"sin", "cos", "asin", "acos", "sqrt", "abs"})
AGGREGATES = frozenset({"sum", "count", "avg", "min", "max", "first", "last"})


@dataclass(frozen=True)
class VariableInfo:
    """What a variable can hold: its event types, and whether a match can
    bind it to more than one event (under ``+`` or used twice)."""

    name: str
    event_types: frozenset[EventSchema]
    many: bool
    implicit: bool


@dataclass(frozen=True)
class CheckedQuery:
    """A query that passed every check, with what the checks learned."""

    query: ast.Query
    source: Source
    schema: Schema
    variables: dict[str, VariableInfo]
    event_types: frozenset[EventSchema]
    warnings: tuple[QueryWarning, ...] = field(default=())


def check_query(query: ast.Query, schema: Schema, source: Source | None = None) -> CheckedQuery:
    """Check a parsed query against a schema; raise the first problem found."""
    return _Checker(query, schema, source or Source("", "<query>")).run()


def parse_and_check(text: str, schema: Schema, name: str = "<query>", *, source: Source | None = None) -> CheckedQuery:
    """Parse and check one query.

    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    >>> parse_and_check("SELECT * WHERE A WITHIN 3 EVENTS", s).query.within
    EventWindow(count=3)
    >>> parse_and_check(None, s, "q")
    Traceback (most recent call last):
    ...
    sharp_cer.errors.LanguageError: query q: expected the query's text (SELECT ...), found None
    """
    if source is None and not isinstance(text, str):
        raise LanguageError(f"query {name}: expected the query's text (SELECT ...), found {kind_of(text)}")
    if not isinstance(schema, Schema):
        raise LanguageError(
            f"query {name}: expected a Schema to check it against, found {kind_of(schema)}\n"
            '  hint: Schema.parse("CREATE STREAM ...") makes one of its text'
        )
    src = source or Source(text, name)
    return check_query(parse_query(src.text, source=src), schema, src)


# Children by the node's exact class: the tree walks below visit every node
# of every query, and one dict look-up beats a chain of isinstance tests (the
# AST classes are never subclassed). Classes not listed are leaves.
def _formula(node: Any) -> tuple[ast.Formula]:
    return (node.formula,)


def _parts(node: Any) -> tuple[ast.Formula, ...]:
    return node.parts  # type: ignore[no-any-return]


def _operand(node: Any) -> tuple[ast.Expr]:
    return (node.operand,)


def _left_right(node: Any) -> tuple[Any, Any]:
    return (node.left, node.right)


def _args(node: Any) -> tuple[ast.Expr, ...]:
    return node.args  # type: ignore[no-any-return]


def _in_set(node: Any) -> tuple[ast.Expr, ...]:
    return (node.operand, *node.values)


def _in_interval(node: Any) -> tuple[ast.Expr, ...]:
    return tuple(x for x in (node.operand, node.low, node.high) if x is not None)


def _between(node: Any) -> tuple[ast.Expr, ...]:
    return (node.operand, node.low, node.high)


def _condition(node: Any) -> tuple[ast.Expr]:
    return (node.condition,)


_FORMULA_CHILDREN: dict[type, Callable[[Any], tuple[ast.Formula, ...]]] = {
    ast.Bind: _formula,
    ast.Iteration: _formula,
    ast.Negation: _formula,
    ast.Absence: _formula,
    ast.Filter: _formula,
    ast.Sequence: _parts,
    ast.Conjunction: _parts,
    ast.Disjunction: _left_right,
}

_EXPR_CHILDREN: dict[type, Callable[[Any], tuple[ast.Expr, ...]]] = {
    ast.Call: _args,
    ast.Negate: _operand,
    ast.Not: _operand,
    ast.Arithmetic: _left_right,
    ast.Comparison: _left_right,
    ast.And: _left_right,
    ast.Or: _left_right,
    ast.InSet: _in_set,
    ast.InInterval: _in_interval,
    ast.Between: _between,
    ast.Like: _operand,
    ast.VariableFilter: _condition,
}


def _children(node: ast.Formula) -> tuple[ast.Formula, ...]:
    children = _FORMULA_CHILDREN.get(type(node))
    return () if children is None else children(node)


def expr_children(node: ast.Expr) -> tuple[ast.Expr, ...]:
    """The sub-expressions of an expression node.

    >>> expr_children(ast.Negate(ast.NumberLiteral(1)))
    (NumberLiteral(value=1),)
    """
    children = _EXPR_CHILDREN.get(type(node))
    return () if children is None else children(node)


def conjuncts(node: ast.Expr) -> Iterator[ast.Expr]:
    """The top-level AND-separated parts of a condition."""
    if isinstance(node, ast.And):
        yield from conjuncts(node.left)
        yield from conjuncts(node.right)
    else:
        yield node


def referenced_variables(node: ast.Expr) -> set[str]:
    """Variables a condition mentions (``x.a``, ``x[...]``, ``count(x)``)."""
    found: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.AttributeRef, ast.VariableFilter)) and n.variable is not None:
            found.add(n.variable)
        elif isinstance(n, ast.Call) and n.function.lower() == "count" and len(n.args) == 1:
            arg = n.args[0]
            if isinstance(arg, ast.AttributeRef) and arg.variable is None:
                found.add(arg.attribute)
        stack.extend(expr_children(n))
    return found


def bound_variables(node: ast.Formula) -> frozenset[str]:
    """Variables every match of ``node`` binds (CEL's bound(φ)).

    >>> sorted(bound_variables(parse_query("SELECT * WHERE A AS x ; (B OR C AS y)").pattern))
    ['A', 'x']
    """
    if isinstance(node, ast.EventType):
        return frozenset({node.name})
    if isinstance(node, ast.Bind):
        return bound_variables(node.formula) | {node.variable}
    if isinstance(node, (ast.Filter, ast.Iteration)):
        return bound_variables(node.formula)
    if isinstance(node, ast.Disjunction):
        return bound_variables(node.left) & bound_variables(node.right)
    if isinstance(node, (ast.Sequence, ast.Conjunction)):
        out: frozenset[str] = frozenset()
        for part in node.parts:
            out |= bound_variables(part)
        return out
    return frozenset()  # NOT(...) and ABSENT(...) bind nothing


def _defined_outside_iteration(node: ast.Formula) -> dict[str, Span | None]:
    """Explicit AS variables defined in ``node`` outside every ``+``."""
    out: dict[str, Span | None] = {}
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Iteration):
            continue
        if isinstance(n, ast.Bind):
            out.setdefault(n.variable, n.span)
        stack.extend(_children(n))
    return out


_TYPE_WORDS = {
    "int": "an int",
    "double": "a double",
    "primary_time": "a primary_time",
    "string": "a string",
    "bool": "a bool",
}


def _family(kind: str) -> str:
    return "number" if kind in NUMERIC_TYPES else kind


class _Checker:
    def __init__(self, query: ast.Query, schema: Schema, source: Source) -> None:
        self.query = query
        self.schema = schema
        self.source = source
        self.scope: tuple[str, ...] = ()
        self.scope_types: list[EventSchema] = []  # every event type of the streams in scope
        self.types_of: dict[str, set[EventSchema]] = {}
        self.count_of: dict[str, int] = {}  # 0, 1 or 2 (= many) events per match
        self.implicit: set[str] = set()
        self._bindings_of: dict[int, _Bindings] = {}  # id(node) -> self._bindings(node)
        self._event_of: dict[int, EventSchema] = {}  # id(EventType node) -> its event type, once resolved
        self.used_types: set[EventSchema] = set()
        self.warnings: list[QueryWarning] = []
        # a trailing ABSENT(F) (``p ; ABSENT(F) WITHIN d``): its conditions may read p's variables
        self.trailing = trailing_absence(query.pattern)
        self.prefix_variables = bound_variables(split(query.pattern)[0]) if self.trailing else frozenset()
        self.outer_allowed: frozenset[str] = frozenset()

    def fail(self, cls: type, message: str, span: Span | None, **kw: str | None) -> None:
        raise cls(message, self.source, span, **kw)

    def _locate(self, pattern: str) -> Span | None:
        """The span of group 1 of ``pattern`` in the query text (keywords are
        case-insensitive), or the whole query when the text does not show it."""
        m = re.search(pattern, self.source.text, re.IGNORECASE | re.DOTALL)
        if not m:
            return self.query.span
        return _offset_span(self.source.text, m.start(1), m.end(1))

    # ------------------------------------------------------------ driver
    def run(self) -> CheckedQuery:
        q = self.query
        self._check_streams()
        self._resolve_event_types(q.pattern)
        self._collect_variables(q.pattern)
        self._check_placement(q.pattern, parent=None)
        self._check_safety(q.pattern)
        self._check_well_formed(q.pattern, ancestors=())
        self._check_selection()
        self._check_partition()
        self._check_window()
        self._check_options()
        variables = {
            name: VariableInfo(name, frozenset(types), self.count_of.get(name, 0) > 1, name in self.implicit)
            for name, types in self.types_of.items()
        }
        return CheckedQuery(q, self.source, self.schema, variables, frozenset(self.used_types), tuple(self.warnings))

    # ------------------------------------------------------------ names
    def _check_streams(self) -> None:
        for stream in self.query.streams:
            if stream not in self.schema.streams:
                self.fail(
                    UndeclaredStreamError,
                    f"stream {stream} is not declared",
                    self._locate(r"\bFROM\b[^;]*?\b(" + re.escape(stream) + r")\b"),
                    expected=f"a declared stream: {listing(self.schema.streams)}",
                    found=f"'{stream}'",
                    hint=did_you_mean(stream, self.schema.streams) or "declare it with CREATE STREAM",
                )
        self.scope = self.query.streams or tuple(self.schema.streams)
        self.scope_types = self.schema.event_types(self.scope)

    def _lookup(self, name: str, stream: str | None, span: Span | None) -> EventSchema:
        if stream is not None:
            if stream not in self.scope:
                in_schema = stream in self.schema.streams
                self.fail(
                    UndeclaredStreamError,
                    f"stream {stream} is " + ("not in the FROM clause" if in_schema else "not declared"),
                    span,
                    expected=f"a stream in scope: {listing(self.scope)}",
                    found=f"'{stream}'",
                    hint=(f"add {stream} to FROM" if in_schema else did_you_mean(stream, self.scope)),
                )
            events = self.schema.streams[stream]
            if name not in events:
                self.fail(
                    UndeclaredEventTypeError,
                    f"stream {stream} has no event type {name}",
                    span,
                    expected=f"an event type of {stream}: {listing(events)}",
                    found=f"'{name}'",
                    hint=did_you_mean(name, events),
                )
            return events[name]
        found = [e for e in self.scope_types if e.name == name]
        if not found:
            known = [e.name for e in self.scope_types]
            self.fail(
                UndeclaredEventTypeError,
                f"event type {name} is not declared" + (" in the FROM streams" if self.query.streams else ""),
                span,
                expected=f"a declared event type: {listing(known)}",
                found=f"'{name}'",
                hint=did_you_mean(name, known) or "declare it in the schema with EVENT " + name + " { ... }",
            )
        if len(found) > 1:
            streams = [e.stream for e in found]
            self.fail(
                AmbiguousEventTypeError,
                f"event type {name} is declared in several streams",
                span,
                expected="an event type declared once among the streams in scope",
                found=f"{name} in {listing(streams)}",
                hint=f"qualify it, e.g. {streams[0]}>{name}, or name one stream in FROM",
            )
        return found[0]

    def _resolve_event_types(self, node: ast.Formula) -> None:
        stack = [node]
        while stack:
            n = stack.pop()
            if n.__class__ is ast.EventType:
                event = self._event_of[id(n)] = self._lookup(n.name, n.stream, n.span)
                self.used_types.add(event)
            else:
                stack.extend(_children(n))

    # ------------------------------------------------------------ variables
    def _collect_variables(self, pattern: ast.Formula) -> None:
        types, counts, _, _ = self._bindings(pattern)
        self.types_of = types
        self.count_of = counts

    def _bindings(self, node: ast.Formula) -> _Bindings:
        """Variables -> event types, variables -> events per match (capped at
        2), the event types of the node's output events, and their number.

        Remembered per node (the query keeps every node alive, so ids stay
        unique): each FILTER asks again for the pattern it filters, which
        _collect_variables went through already. The results are shared
        between callers, so nobody changes them in place.
        """
        found = self._bindings_of.get(id(node))
        if found is None:
            found = self._bindings_of[id(node)] = self._compute_bindings(node)
        return found

    def _compute_bindings(self, node: ast.Formula) -> _Bindings:
        if isinstance(node, ast.EventType):
            event = self._event_of.get(id(node)) or self._lookup(node.name, node.stream, node.span)
            self.implicit.add(node.name)
            return {node.name: {event}}, {node.name: 1}, {event}, 1
        if isinstance(node, (ast.Negation, ast.Absence)):
            return {}, {}, set(), 0
        if isinstance(node, ast.Bind):
            if any(e.name == node.variable for e in self.scope_types):
                self.fail(
                    UnsafeFormulaError,
                    f"variable {node.variable} has the name of an event type",
                    node.span,
                    expected="a variable name that is not an event type",
                    found=f"AS {node.variable}",
                    hint=f"the event type {node.variable} is already a variable holding its events; "
                    f"choose another name, e.g. AS {node.variable.lower()}_",
                )
            types, counts, out, size = self._bindings(node.formula)
            types = {k: set(v) for k, v in types.items()}
            types.setdefault(node.variable, set()).update(out)
            counts = dict(counts)
            counts[node.variable] = max(counts.get(node.variable, 0), size)
            return types, counts, out, size
        if isinstance(node, ast.Filter):
            return self._bindings(node.formula)
        if isinstance(node, ast.Iteration):
            types, counts, out, size = self._bindings(node.formula)
            return types, {k: 2 if v else 0 for k, v in counts.items()}, out, 2 if size else 0
        if isinstance(node, ast.Disjunction):
            return _merge([self._bindings(node.left), self._bindings(node.right)], add=False)
        return _merge([self._bindings(p) for p in _children(node)], add=True)

    def _check_placement(self, node: ast.Formula, parent: ast.Formula | None) -> None:
        if isinstance(node, ast.Absence) and not isinstance(parent, ast.Sequence):
            self.fail(
                MisplacedOperatorError,
                "ABSENT(...) must stand between two parts of a sequence",
                node.span,
                expected="p ; ABSENT(F) ; q",
                found=formula_text(node),
                hint="to match one event that is not F, use NOT(F)",
            )
        if isinstance(node, ast.Sequence):
            for i, part in enumerate(node.parts):
                if isinstance(part, ast.Absence) and part is self.trailing and node.links[i - 1] == ";":
                    self._check_trailing(part)
                elif isinstance(part, ast.Absence):
                    inner = 0 < i < len(node.parts) - 1
                    if not inner or node.links[i - 1] != ";" or node.links[i] != ";":
                        self.fail(
                            MisplacedOperatorError,
                            "ABSENT(...) must stand between two parts of a sequence, linked by ';'",
                            part.span,
                            expected="p ; ABSENT(F) ; q, or p ; ABSENT(F) WITHIN d at the end of the whole pattern",
                            found=formula_text(node),
                            hint="absence is checked strictly between the end of p and the start of q, "
                            "or after the whole pattern until its time window ends",
                        )
                elif isinstance(part, ast.Negation) and i == len(node.parts) - 1:
                    self._not_at_end(part)
        if isinstance(node, ast.Negation) and parent is None:
            self._not_at_end(node)
        if isinstance(node, ast.Negation) and isinstance(parent, (ast.Bind, ast.Iteration, ast.Disjunction)):
            self.fail(
                MisplacedOperatorError,
                "NOT(...) matches an event that is not in the output; it cannot be "
                + (
                    "named"
                    if isinstance(parent, ast.Bind)
                    else "repeated"
                    if isinstance(parent, ast.Iteration)
                    else "an alternative"
                ),
                node.span,
                expected="NOT(F) as a part of a sequence, before other parts",
                found=formula_text(parent),
                hint="put NOT(F) in a sequence, e.g. NOT(F) ; B",
            )
        if isinstance(node, (ast.Negation, ast.Absence)):
            self._check_unary_inside(node)
        for child in _children(node):
            self._check_placement(child, node)

    def _check_trailing(self, node: ast.Absence) -> None:
        """``p ; ABSENT(F)`` ends when event time passes p's window: it needs one."""
        within = self.query.within
        if isinstance(within, ast.TimeWindow):
            return
        self.fail(
            WindowError,
            "a trailing ABSENT(...) needs a time window: it completes when event time passes the window's end",
            node.span,
            expected="p ; ABSENT(F) WITHIN d, with d in HOURS, MINUTES, SECONDS or MILLISECONDS",
            found=f"WITHIN {window_text(within)}" if within is not None else "no WITHIN",
            hint="add a time window, e.g. WITHIN 30 SECONDS",
        )

    def _not_at_end(self, node: ast.Formula) -> None:
        self.fail(
            MisplacedOperatorError,
            "a pattern cannot end with NOT(...)",
            node.span,
            expected="a pattern whose last part is an output event",
            found=formula_text(node),
            hint="NOT(F) opens a match; to forbid F after the last event, end the window instead",
        )

    def _check_unary_inside(self, node: ast.Negation | ast.Absence) -> None:
        stack: list[ast.Formula] = [node.formula]
        own: set[str] = set()
        filters: list[ast.Filter] = []
        while stack:
            n = stack.pop()
            if isinstance(n, ast.EventType):
                own.add(n.name)
            if isinstance(n, ast.Filter):
                filters.append(n)
            stack.extend(_children(n))
        outer = self.prefix_variables if node is self.trailing else frozenset()
        for f in filters:
            others = referenced_variables(f.condition) - own - outer
            if others:
                word = "NOT" if isinstance(node, ast.Negation) else "ABSENT"
                self.fail(
                    NotWellFormedError,
                    f"the condition inside {word}(...) refers to variable {sorted(others)[0]} outside it",
                    f.condition.span,
                    expected=f"conditions on the {word} event itself ({listing(own)})",
                    found=expr_text(f.condition),
                    hint=f"inside {word}(...) only its own event type can be filtered",
                )

    def _check_safety(self, node: ast.Formula) -> None:
        if isinstance(node, (ast.Sequence, ast.Conjunction)):
            seen: dict[str, int] = {}
            for i, part in enumerate(node.parts):
                for var, span in _defined_outside_iteration(part).items():
                    if var in seen:
                        op = "AND(...)" if isinstance(node, ast.Conjunction) else "a sequence"
                        self.fail(
                            UnsafeFormulaError,
                            f"variable {var} is defined twice in {op}",
                            span,
                            expected="each part of a sequence or conjunction to define its own variables",
                            found=f"{var} defined in part {seen[var] + 1} and part {i + 1}",
                            hint="one variable cannot name two different events; rename one of them",
                        )
                    seen[var] = i
        for child in _children(node):
            self._check_safety(child)

    # ------------------------------------------------------------ conditions
    def _check_well_formed(self, node: ast.Formula, ancestors: tuple[ast.Formula, ...]) -> None:
        if isinstance(node, (ast.Negation, ast.Absence)):
            # The NOT/ABSENT event is a variable of its own inner filters only.
            inner_types, inner_counts, _, _ = self._bindings(node.formula)
            outer = (self.types_of, self.count_of, self.outer_allowed)
            self.types_of = {**self.types_of, **inner_types}
            self.count_of = {**self.count_of, **inner_counts}
            if node is self.trailing:
                self.outer_allowed = self.prefix_variables - inner_types.keys()
            try:
                self._check_well_formed(node.formula, ())
            finally:
                self.types_of, self.count_of, self.outer_allowed = outer
            return
        chain = (*ancestors, node)
        if isinstance(node, ast.Filter):
            own = bound_variables(node.formula)
            # The variables of each conjunct (_check_condition needs them too);
            # together they are those of the whole condition.
            parts = [(part, referenced_variables(part)) for part in conjuncts(node.condition)]
            for var in sorted(set().union(*(variables for _, variables in parts))):
                if var not in self.types_of:
                    self._unknown_variable(var, node.condition)
                if var in own or var in self.outer_allowed:
                    continue
                wider = any(var in bound_variables(a) for a in ancestors)
                self.fail(
                    NotWellFormedError,
                    f"variable {var} is not bound by the pattern this FILTER applies to",
                    _span_of_var(node.condition, var) or node.span,
                    expected=f"a FILTER on a pattern that binds {var} in every match",
                    found=(
                        f"{var} bound only outside the filtered pattern"
                        if wider
                        else f"{var} bound only in part of the pattern (inside OR, NOT or ABSENT)"
                    ),
                    hint=(
                        "put the FILTER after the whole pattern that binds every variable it names"
                        if wider
                        else f"move the FILTER next to where {var} is bound, or bind {var} on every branch"
                    ),
                )
            # Multiplicity as the filtered pattern sees it: inside p+ a variable
            # of p holds one event per iteration.
            saved_counts = self.count_of
            self.count_of = {**saved_counts, **self._bindings(node.formula)[1]}
            try:
                self._check_condition(node.condition, parts)
            finally:
                self.count_of = saved_counts
        for child in _children(node):
            self._check_well_formed(child, chain)

    def _unknown_variable(self, var: str, where: ast.Expr) -> None:
        self.fail(
            UnknownVariableError,
            f"variable {var} is not bound anywhere in the pattern",
            _span_of_var(where, var) or where.span,
            expected=f"a variable of the pattern: {listing(self.types_of)}",
            found=f"'{var}'",
            hint=did_you_mean(var, self.types_of) or f"bind it with AS {var}",
        )

    def _check_condition(self, condition: ast.Expr, parts: list[tuple[ast.Expr, set[str]]]) -> None:
        """``parts``: the conjuncts of ``condition`` and the variables of each."""
        kind = self._type(condition, context=None)
        if kind != "bool":
            self.fail(
                TypeMismatchError,
                "FILTER needs a condition",
                condition.span,
                expected="a condition such as x[price > 10] or a.price < b.price",
                found=f"{_TYPE_WORDS.get(kind, kind)} expression: {expr_text(condition)}",
                hint="compare the value with something",
            )
        for part, variables in parts:
            if len(variables) > 1 or has_aggregate(part):
                self._check_single_references(part, context=None)

    def _check_single_references(self, node: ast.Expr, context: str | None) -> None:
        """In a cross-event condition, a plain reference must name one event."""
        if isinstance(node, ast.Call) and node.function.lower() in AGGREGATES:
            return
        if isinstance(node, ast.VariableFilter):
            self._check_single_references(node.condition, node.variable)
            return
        if isinstance(node, ast.AttributeRef) and node.variable not in (None, context):
            var, attr = node.variable, node.attribute
            if self.count_of.get(var or "", 0) > 1:
                self.fail(
                    KleeneReferenceError,
                    f"variable {var} can hold many events, so {var}.{attr} has no single value here",
                    node.span,
                    expected=f"an aggregate over {var} (sum, count, avg, min, max, first, last)",
                    found=expr_text(node),
                    hint=f"write e.g. last({var}.{attr}) or sum({var}.{attr})",
                )
        for child in expr_children(node):
            self._check_single_references(child, context)

    def _attribute_type(self, var: str, attr: str, span: Span | None, node: ast.Expr) -> str:
        if var not in self.types_of:
            self._unknown_variable(var, node)
        kinds = set()
        for event in sorted(self.types_of[var], key=lambda e: e.name):
            if attr not in event.attributes:
                self.fail(
                    UndeclaredAttributeError,
                    f"event type {event.name} has no attribute '{attr}'"
                    + (f" (variable {var} can hold {event.name})" if var != event.name else ""),
                    span,
                    expected=f"an attribute of {event.name}: {listing(event.attributes)}",
                    found=f"'{attr}'",
                    hint=did_you_mean(attr, event.attributes)
                    or (
                        f"{var} can hold {listing(e.name for e in self.types_of[var])}; "
                        "an attribute must be declared in each of them"
                        if len(self.types_of[var]) > 1
                        else f"if you meant the text '{attr}', put it in single quotes"
                    ),
                )
            kinds.add(event.attributes[attr])
        families = {_family(k) for k in kinds}
        if len(families) > 1:
            self.fail(
                TypeMismatchError,
                f"attribute '{attr}' has different types in the event types {var} can hold",
                span,
                expected="one type across the event types",
                found=listing(f"{e.name}.{attr}:{e.attributes[attr]}" for e in self.types_of[var]),
                hint="filter each event type separately",
            )
        if len(kinds) == 1:
            return kinds.pop()
        return "double"

    def _type(self, node: ast.Expr, context: str | None) -> str:
        if isinstance(node, ast.NumberLiteral):
            return "int" if isinstance(node.value, int) else "double"
        if isinstance(node, ast.StringLiteral):
            return "string"
        if isinstance(node, ast.BoolLiteral):
            return "bool"
        if isinstance(node, ast.AttributeRef):
            if node.variable is None:
                if context is None:
                    self.fail(
                        UnknownVariableError,
                        f"attribute '{node.attribute}' needs a variable here",
                        node.span,
                        expected="x.attribute, or a bare attribute inside x[...]",
                        found=f"'{node.attribute}'",
                        hint=f"write x.{node.attribute} or x[{node.attribute} ...] with the variable x it belongs to",
                    )
                return self._attribute_type(context or "", node.attribute, node.span, node)
            return self._attribute_type(node.variable, node.attribute, node.span, node)
        if isinstance(node, ast.VariableFilter):
            if context is not None:
                self.fail(
                    TypeMismatchError,
                    f"{node.variable}[...] cannot be nested inside {context}[...]",
                    node.span,
                    expected=f"a condition on the attributes of {context}",
                    found=expr_text(node),
                    hint=f"write {node.variable}.attribute to refer to {node.variable} inside {context}[...]",
                )
            if node.variable not in self.types_of:
                self._unknown_variable(node.variable, node)
            self._require(node.condition, "bool", node.variable, f"{node.variable}[...]")
            return "bool"
        if isinstance(node, ast.Call):
            return self._call_type(node, context)
        if isinstance(node, ast.Negate):
            return self._require_number(node.operand, context, "unary minus")
        if isinstance(node, ast.Arithmetic):
            left = self._require_number(node.left, context, f"'{node.op}'")
            right = self._require_number(node.right, context, f"'{node.op}'")
            if node.op == "/" or "double" in (left, right):
                return "double"
            return "int"
        if isinstance(node, ast.Comparison):
            left = self._type(node.left, context)
            right = self._type(node.right, context)
            lf, rf = _family(left), _family(right)
            if lf != rf:
                self.fail(
                    TypeMismatchError,
                    f"cannot compare {_TYPE_WORDS.get(left, left)} with {_TYPE_WORDS.get(right, right)}",
                    node.span,
                    expected=f"both sides of '{node.op}' of one type",
                    found=f"{expr_text(node.left)} ({left}) {node.op} {expr_text(node.right)} ({right})",
                    hint=_mixed_types_hint(node, lf, rf),
                )
            if lf in ("string", "bool") and node.op not in ("=", "!="):
                self.fail(
                    TypeMismatchError,
                    f"'{node.op}' does not apply to {lf} values",
                    node.span,
                    expected=f"= or != between {lf} values",
                    found=expr_text(node),
                    hint="use LIKE 'regex' to match strings" if lf == "string" else None,
                )
            return "bool"
        if isinstance(node, ast.InSet):
            operand = _family(self._type(node.operand, context))
            for value in node.values:
                vf = _family(self._type(value, context))
                if vf != operand:
                    self.fail(
                        TypeMismatchError,
                        f"the set holds {vf} values but {expr_text(node.operand)} is a {operand}",
                        value.span,
                        expected=f"{operand} values in the set",
                        found=expr_text(value),
                        hint="string values need quotes: {'a', 'b'}" if operand == "string" else None,
                    )
            return "bool"
        if isinstance(node, ast.InInterval):
            self._require_number(node.operand, context, "IN {low..high}")
            return "bool"
        if isinstance(node, ast.Between):
            for part in (node.operand, node.low, node.high):
                self._require_number(part, context, "IN RANGE(low, high)")
            return "bool"
        if isinstance(node, ast.Like):
            self._require(node.operand, "string", context, "LIKE")
            try:
                re.compile(node.pattern)
            except re.error as exc:
                self.fail(
                    InvalidLiteralError,
                    f"invalid regular expression: {exc.msg}",
                    node.span,
                    expected="a regular expression (RE2 syntax)",
                    found=repr(node.pattern),
                    hint="escape special characters with a backslash",
                )
            refused = _re2_refuses(node.pattern)
            if refused:
                self.fail(
                    InvalidLiteralError,
                    f"a regular expression RE2 cannot run: {refused}",
                    node.span,
                    expected="a regular expression in RE2 syntax (the engine matches with RE2)",
                    found=repr(node.pattern),
                    hint="RE2 has no lookarounds or backreferences; rewrite the pattern without them",
                )
            return "bool"
        if isinstance(node, (ast.And, ast.Or)):
            word = "AND" if isinstance(node, ast.And) else "OR"
            self._require(node.left, "bool", context, word)
            self._require(node.right, "bool", context, word)
            return "bool"
        if isinstance(node, ast.Not):
            self._require(node.operand, "bool", context, "NOT")
            return "bool"
        raise TypeError(f"unknown expression node {node!r}")

    def _require(self, node: ast.Expr, family: str, context: str | None, where: str) -> str:
        kind = self._type(node, context)
        if _family(kind) != family:
            self.fail(
                TypeMismatchError,
                f"{where} needs {'a condition' if family == 'bool' else 'a ' + family}",
                node.span,
                expected=("a condition" if family == "bool" else f"a {family} value"),
                found=f"{_TYPE_WORDS.get(kind, kind)} expression: {expr_text(node)}",
                hint="compare the value with something, e.g. price > 10" if family == "bool" else None,
            )
        return kind

    def _require_number(self, node: ast.Expr, context: str | None, where: str) -> str:
        return self._require(node, "number", context, where)

    def _call_type(self, node: ast.Call, context: str | None) -> str:
        fn = node.function.lower()
        if fn in MATH_FUNCTIONS:
            self._arity(node, 1)
            kind = self._require_number(node.args[0], context, f"{fn}()")
            return kind if fn == "abs" else "double"
        if fn not in AGGREGATES:
            self.fail(
                UnknownFunctionError,
                f"unknown function {node.function}()",
                node.span,
                expected=f"one of {', '.join(sorted(MATH_FUNCTIONS | AGGREGATES))}",
                found=f"{node.function}()",
                hint=did_you_mean(fn, sorted(MATH_FUNCTIONS | AGGREGATES)),
            )
        self._arity(node, 1)
        arg = node.args[0]
        if isinstance(arg, ast.Call) and arg.function.lower() in AGGREGATES:
            self.fail(
                TypeMismatchError,
                "aggregates cannot be nested",
                node.span,
                expected=f"an attribute of a Kleene variable, e.g. {fn}(b.price)",
                found=expr_text(node),
                hint=None,
            )
        if fn == "count":
            var = arg.attribute if isinstance(arg, ast.AttributeRef) and arg.variable is None else None
            if var is None:
                self.fail(
                    TypeMismatchError,
                    "count() takes a variable",
                    arg.span,
                    expected="count(b) with b a Kleene variable",
                    found=expr_text(arg),
                    hint=None,
                )
            self._aggregate_variable(node, var or "")
            return "int"
        if not isinstance(arg, ast.AttributeRef) or arg.variable is None:
            self.fail(
                TypeMismatchError,
                f"{fn}() takes an attribute of a Kleene variable",
                arg.span,
                expected=f"{fn}(b.attribute) with b a Kleene variable",
                found=expr_text(arg),
                hint=None,
            )
        assert isinstance(arg, ast.AttributeRef) and arg.variable is not None
        self._aggregate_variable(node, arg.variable)
        kind = self._attribute_type(arg.variable, arg.attribute, arg.span, arg)
        if fn in ("first", "last"):
            return kind
        if _family(kind) != "number":
            self.fail(
                TypeMismatchError,
                f"{fn}() needs a numeric attribute",
                arg.span,
                expected="an int, double or primary_time attribute",
                found=f"{expr_text(arg)} ({kind})",
                hint="first() and last() accept any type",
            )
        return "double" if fn == "avg" else kind

    def _aggregate_variable(self, node: ast.Call, var: str) -> None:
        if var not in self.types_of:
            self._unknown_variable(var, node)
        if self.count_of.get(var, 0) <= 1:
            self.fail(
                AggregateOverSingleEventError,
                f"{node.function}() over variable {var}, which holds one event per match",
                node.span,
                expected="an aggregate over a Kleene variable (bound under +)",
                found=expr_text(node),
                hint=f"refer to the value directly, e.g. {var}.attribute",
            )

    def _arity(self, node: ast.Call, n: int) -> None:
        if len(node.args) != n:
            self.fail(
                TypeMismatchError,
                f"{node.function}() takes {n} argument{'s' if n != 1 else ''}",
                node.span,
                expected=f"{n} argument{'s' if n != 1 else ''}",
                found=f"{len(node.args)}",
                hint=None,
            )

    # ------------------------------------------------------------ clauses
    def _check_selection(self) -> None:
        selection = self.query.selection
        if not isinstance(selection, tuple):
            return
        for p in selection:
            if p.stream is not None:
                self._lookup(p.variable, p.stream, p.span)
            if p.variable not in self.types_of:
                self.fail(
                    UnknownVariableError,
                    f"SELECT names variable {p.variable}, which the pattern does not bind",
                    p.span,
                    expected=f"a variable of the pattern: {listing(self.types_of)}",
                    found=f"'{p.variable}'",
                    hint=did_you_mean(p.variable, self.types_of),
                )
            for attr in p.attributes or ():
                self._attribute_type(p.variable, attr, p.span, ast.AttributeRef(p.variable, attr))

    def _check_partition(self) -> None:
        """Every attribute PARTITION BY names is part of the key, whatever the
        brackets (CORE §3): an event type of the pattern without one of them
        would belong to no substream and could never match."""
        q = self.query
        if not q.partition_by:
            return
        written = list(dict.fromkeys(a for names in q.partition_by for a in names))
        clause = "PARTITION BY " + ", ".join("[" + ", ".join(names) + "]" for names in q.partition_by)
        for event in sorted(self.used_types, key=lambda e: e.name):
            missing = [a for a in written if a not in event.attributes]
            if missing:
                attribute = missing[0]
                self.fail(
                    UndeclaredAttributeError,
                    f"event type {event.name} has no partition attribute '{attribute}'",
                    # the caret on the attribute, in whichever list it is
                    self._locate(
                        r"\bPARTITION\s+BY\s+(?:\[[^\]]*\]\s*,\s*)*\[[^\]]*?(?<![\w`])(`?"
                        + re.escape(attribute)
                        + r"`?)(?![\w`])"
                    ),
                    expected=f"attributes of {event.name}: {listing(event.attributes)}",
                    found=clause,
                    hint=did_you_mean(attribute, event.attributes)
                    or f"every attribute PARTITION BY names is part of the key, so {event.name} events belong "
                    "to no partition and never match; name only attributes every event type of the pattern has",
                )

    def _check_window(self) -> None:
        within = self.query.within
        if within is None:
            self.warnings.append(
                QueryWarning(
                    "query has no WITHIN: partial matches are kept for ever and memory grows with the stream",
                    self.source,
                    self.query.pattern.span,
                    hint="add WITHIN n EVENTS, WITHIN n SECONDS or WITHIN n [attribute]",
                )
            )
            return
        for event in sorted(self.used_types, key=lambda e: e.name):
            if isinstance(within, ast.TimeWindow) and event.primary_time is None:
                self.fail(
                    WindowError,
                    f"a time window needs a primary_time attribute, and {event.name} has none",
                    within.span,
                    expected="every event type of the pattern to declare an attribute of type primary_time",
                    found=f"{event.name} {{ " + ", ".join(f"{k}:{v}" for k, v in event.attributes.items()) + " }",
                    hint="declare the time attribute as primary_time, or use WITHIN n EVENTS",
                )
            if isinstance(within, ast.AttributeWindow):
                kind = event.attributes.get(within.attribute)
                if kind is None:
                    self.fail(
                        UndeclaredAttributeError,
                        f"event type {event.name} has no window attribute '{within.attribute}'",
                        within.span,
                        expected=f"an attribute of {event.name}: {listing(event.attributes)}",
                        found=f"'{within.attribute}'",
                        hint=did_you_mean(within.attribute, event.attributes),
                    )
                elif kind not in NUMERIC_TYPES:
                    self.fail(
                        WindowError,
                        f"WITHIN {within.size} [{within.attribute}] needs a numeric attribute",
                        within.span,
                        expected="an int, double or primary_time attribute",
                        found=f"{event.name}.{within.attribute} of type {kind}",
                        hint="window over a numeric attribute, or use WITHIN n EVENTS",
                    )

    def _check_options(self) -> None:
        q = self.query
        if q.consume == "PARTITION" and not q.partition_by:
            self.fail(
                ContradictoryOptionsError,
                "CONSUME BY PARTITION without PARTITION BY",
                self._locate(r"\b(CONSUME\s+BY\s+PARTITION)\b"),
                expected="PARTITION BY [...] with CONSUME BY PARTITION",
                found="no PARTITION BY clause",
                hint="add PARTITION BY, or write CONSUME BY ANY",
            )
        if q.limit == 0:
            self.fail(
                ContradictoryOptionsError,
                "LIMIT 0 outputs nothing",
                self._locate(r"\b(LIMIT\s+0+)\b"),
                expected="LIMIT n with n >= 1",
                found="LIMIT 0",
                hint="remove the query instead",
            )


def _merge(results: list[_Bindings], *, add: bool) -> _Bindings:
    """The bindings of parts taken together: events per match added (a
    sequence, a conjunction) or the larger taken (a disjunction), capped at 2."""
    types: dict[str, set[EventSchema]] = {}
    counts: dict[str, int] = {}
    out: set[EventSchema] = set()
    size = -1
    for t, c, o, s in results:
        for k, kinds in t.items():
            known = types.get(k)
            if known is None:
                types[k] = set(kinds)
            else:
                known |= kinds
        for k, n in c.items():
            before = counts.get(k, 0)
            counts[k] = min(2, before + n) if add else max(before, n)
        out |= o
        size = s if size < 0 else size + s if add else max(size, s)
    return types, counts, out, min(size, 2)


def has_aggregate(node: ast.Expr) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Call) and n.function.lower() in AGGREGATES:
            return True
        stack.extend(expr_children(n))
    return False


def _span_of_var(node: ast.Expr, var: str) -> Span | None:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.AttributeRef) and (n.variable == var or (n.variable is None and n.attribute == var)):
            return n.span
        if isinstance(n, ast.VariableFilter) and n.variable == var:
            return n.span
        stack.extend(reversed(expr_children(n)))
    return None


def _offset_span(text: str, start: int, end: int) -> Span:
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    end_line = text.count("\n", 0, end) + 1
    end_column = end - (text.rfind("\n", 0, end) + 1) + 1
    return Span(line, column, end_line, end_column)


def _re2_refuses(pattern: str) -> str | None:
    """Why RE2 (pyarrow's regex engine, which the engine uses for LIKE)
    refuses ``pattern``, or None if it accepts it."""
    import pyarrow as pa
    from pyarrow._compute import MatchSubstringOptions, call_function

    # one null string: RE2 compiles the pattern for any non-empty input. Not
    # ``pa.array([""])`` nor ``pyarrow.compute``: the first imports pandas
    # (pyarrow asks it whether a list is a pandas object), the second wraps
    # ~300 kernels; together 0.3-0.5 s of every ``match`` with a LIKE
    try:
        call_function("match_substring_regex", [pa.nulls(1, pa.string())], MatchSubstringOptions(pattern))
    except pa.ArrowInvalid as exc:
        return str(exc).removeprefix("Invalid regular expression: ")
    return None


def _mixed_types_hint(node: ast.Comparison, left: str, right: str) -> str | None:
    """Quotes to add or to drop, for a comparison of a string with a number."""
    if "string" not in (left, right):
        return None
    quoted = node.left if isinstance(node.left, ast.StringLiteral) else node.right
    other = node.right if quoted is node.left else node.left
    if isinstance(quoted, ast.StringLiteral):
        try:
            float(quoted.value)
        except ValueError:
            return f"{expr_text(other)} is a number: compare it with a number"
        return f"numbers go without quotes: {expr_text(other)} {node.op} {quoted.value}"
    return "string values need quotes: name = 'MSFT'"
