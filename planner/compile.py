"""Compiling checked queries into complex event automata (CEL Appendix C).

Each operator becomes a fragment with one entry and one exit state, joined by
ε-moves; the builder then removes the ε-moves. ``p ; q`` puts a skip state
between p and q that loops on any event (or, with ``ABSENT(F)`` in between,
on any event that is not F); ``p : q`` joins them directly; ``p+`` loops from
p's exit back to its entry (through a skip state unless ``:+``); ``NOT(F)``
is one non-marking move on "not F".

FILTER conditions in LP normal form: a conjunct naming one variable (and no
aggregate) holds for every event of that variable, so it is pushed onto the
moves that read those events, as an atom of the predicate table; a conjunct
naming no variable is pushed onto every move under the FILTER. Every marking
move carries the label of the variables its event is bound to: the event
type and the enclosing ``AS`` names.

>>> from sharp_cer.language import Schema, parse_and_check
>>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
>>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A AS a ; B FILTER a.x > 1 WITHIN 3 EVENTS", s))])
>>> cea = plan.groups[0].automaton
>>> cea.n_states, cea.transition_count(), [sorted(v) for v in plan.labels]
(3, 3, [['A', 'a'], ['B']])
>>> plan.predicates.atoms[1].condition
Comparison(op='>', left=AttributeRef(variable=None, attribute='x'), right=NumberLiteral(value=1))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sharp_cer.errors import PlanError
from sharp_cer.language import CheckedQuery, EventSchema, Span, ast
from sharp_cer.language.checker import conjuncts, has_aggregate, referenced_variables
from sharp_cer.language.source import render_location

from .automaton import AutomatonBuilder
from .plan import Group, Plan, QueryPlan, window_kind
from .predicates import TRUE, AllOf, Atom, Guard, Not, PredicateTable

#: The issue that brings what the engine does not run yet.
_LATER = {
    "strategy": "selection strategies other than ALL/ANY are",
    "consume": "CONSUME BY ANY and PARTITION are",
    "limit": "LIMIT is",
    "conjunction": "conjunction AND(...) is",
    "cross": "a condition across events (or with an aggregate) is",
}


@dataclass(frozen=True)
class _Condition:
    """A unary condition pushed down: it applies to the events of
    ``variable`` bound at or below the FILTER (AS names from index ``cut`` of
    the enclosing list, or the event type), or to every event when
    ``variable`` is None."""

    variable: str | None
    cut: int
    condition: ast.Expr


@dataclass(frozen=True)
class _Context:
    enclosing: tuple[str, ...] = ()
    conditions: tuple[_Condition, ...] = ()


def compile_plan(queries: Sequence[tuple[str, CheckedQuery]]) -> Plan:
    """Compile named checked queries into one plan; queries with the same
    event types, PARTITION BY and window kind share one automaton.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { t:primary_time }, EVENT B { t:primary_time } }")
    >>> plan = compile_plan([(n, parse_and_check(t, s)) for n, t in [
    ...     ("q1", "SELECT * WHERE A ; B WITHIN 5 EVENTS"),
    ...     ("q2", "SELECT * WHERE B ; A WITHIN 9 EVENTS"),
    ...     ("q3", "SELECT * WHERE A ; B WITHIN 5 SECONDS")]]
    ... )
    >>> [g.queries for g in plan.groups]
    [(0, 1), (2,)]
    """
    table = PredicateTable()
    labels: dict[frozenset[str], int] = {}
    plans = []
    buckets: dict[tuple[frozenset[EventSchema], tuple[tuple[str, ...], ...], tuple[str, str]], list[int]] = {}
    for i, (name, checked) in enumerate(queries):
        _check_supported(name, checked)
        q = checked.query
        if isinstance(q.selection, tuple):
            selected: tuple[str, ...] | None = tuple(p.variable for p in q.selection)
        else:
            selected = None
        plans.append(QueryPlan(i, name, checked, q.within, selected, isinstance(q.selection, ast.SelectNone)))
        scope = q.streams or tuple(checked.schema.streams)
        visible = frozenset(checked.schema.event_types(scope))
        buckets.setdefault((visible, q.partition_by, window_kind(q.within)), []).append(i)
    groups = []
    for (visible, partition_by, kind), members in buckets.items():
        builder = AutomatonBuilder()
        initial: set[int] = set()
        accepting: dict[int, int] = {}
        for qid in members:
            compiler = _QueryCompiler(queries[qid][0], queries[qid][1], builder, table, labels)
            start, end = compiler.fragment(queries[qid][1].query.pattern, _Context())
            initial.add(start)
            accepting[end] = qid
        groups.append(Group(tuple(members), visible, partition_by, kind, builder.build(initial, accepting)))
    label_list = sorted(labels, key=labels.__getitem__)
    return Plan(tuple(plans), tuple(groups), table, tuple(label_list))


def _unsupported(name: str, checked: CheckedQuery, what: str, span: object) -> PlanError:
    where = f"query {name}"
    snippet = ""
    if isinstance(span, Span):
        where, snippet = render_location(checked.source, span)
        snippet = "\n" + snippet
    return PlanError(
        f"{where}: {_LATER[what]} not supported by the core engine yet (issue 5){snippet}\n"
        f"  hint: run this query with --engine reference (or engine='reference') until the engine supports it"
    )


def _check_supported(name: str, checked: CheckedQuery) -> None:
    q = checked.query
    if q.effective_strategy != "ALL":
        raise _unsupported(name, checked, "strategy", q.span)
    if q.consume not in (None, "NONE"):
        raise _unsupported(name, checked, "consume", q.span)
    if q.limit is not None:
        raise _unsupported(name, checked, "limit", q.span)
    stack: list[ast.Formula] = [q.pattern]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Conjunction):
            raise _unsupported(name, checked, "conjunction", node.span)
        if isinstance(node, ast.Filter):
            for part in conjuncts(node.condition):
                if len(referenced_variables(part)) > 1 or has_aggregate(part):
                    raise _unsupported(name, checked, "cross", part.span)
        if isinstance(node, (ast.Bind, ast.Iteration, ast.Negation, ast.Absence, ast.Filter)):
            stack.append(node.formula)
        elif isinstance(node, (ast.Sequence, ast.Conjunction)):
            stack.extend(node.parts)
        elif isinstance(node, ast.Disjunction):
            stack.extend((node.left, node.right))


def erase_variables(expr: ast.Expr) -> ast.Expr:
    """The condition with every attribute reference made to read "the event"
    and ``x[...]`` unwrapped: the normal form of a unary condition's atom.

    >>> from sharp_cer.language import parse_query
    >>> cond = parse_query("SELECT * WHERE A AS a FILTER a[x > 1] AND a.y < 2").pattern.condition
    >>> from sharp_cer.language import to_ceql
    >>> [str(erase_variables(c)) for c in conjuncts(cond)][0]
    "Comparison(op='>', left=AttributeRef(variable=None, attribute='x'), right=NumberLiteral(value=1))"
    """
    if isinstance(expr, ast.VariableFilter):
        return erase_variables(expr.condition)
    if isinstance(expr, ast.AttributeRef):
        return ast.AttributeRef(None, expr.attribute)
    changes: dict[str, Any] = {}
    for f in dataclasses.fields(expr):
        if f.name == "span":
            continue
        value = getattr(expr, f.name)
        if isinstance(value, tuple):
            changes[f.name] = tuple(erase_variables(v) if _is_expr(v) else v for v in value)
        elif _is_expr(value):
            changes[f.name] = erase_variables(value)
    return dataclasses.replace(expr, **changes) if changes else expr  # type: ignore[arg-type]


def _is_expr(value: object) -> bool:
    return dataclasses.is_dataclass(value) and type(value).__module__ == ast.__name__


class _QueryCompiler:
    def __init__(
        self,
        name: str,
        checked: CheckedQuery,
        builder: AutomatonBuilder,
        table: PredicateTable,
        labels: dict[frozenset[str], int],
    ) -> None:
        self.name = name
        self.checked = checked
        self.builder = builder
        self.table = table
        self.labels = labels
        q = checked.query
        self.scope = checked.schema.event_types(q.streams or tuple(checked.schema.streams))

    def _event(self, node: ast.EventType) -> EventSchema:
        found = [e for e in self.scope if e.name == node.name and node.stream in (None, e.stream)]
        if len(found) != 1:  # the checker rules this out
            raise PlanError(f"query {self.name}: event type {node.name} is unknown or ambiguous")
        return found[0]

    def _leaf_guard(self, node: ast.EventType, ctx: _Context) -> Guard:
        event = self._event(node)
        guards: list[Guard] = [Atom(self.table.type_atom(event.stream, event.name))]
        for c in ctx.conditions:
            if c.variable is None or c.variable == node.name or c.variable in ctx.enclosing[c.cut :]:
                guards.append(Atom(self.table.condition_atom(event.stream, event.name, c.condition)))
        return guards[0] if len(guards) == 1 else AllOf(tuple(guards))

    def _filtered(self, node: ast.Filter, ctx: _Context) -> _Context:
        pushed = list(ctx.conditions)
        for part in conjuncts(node.condition):
            variables = referenced_variables(part)
            variable = next(iter(variables)) if variables else None
            pushed.append(_Condition(variable, len(ctx.enclosing), erase_variables(part)))
        return _Context(ctx.enclosing, tuple(pushed))

    def single_event_guard(self, node: ast.Formula, ctx: _Context) -> Guard:
        """The guard of the events that satisfy the formula inside NOT(...) or
        ABSENT(...): an event type under FILTERs (the grammar allows no more)."""
        if isinstance(node, ast.Filter):
            return self.single_event_guard(node.formula, self._filtered(node, ctx))
        assert isinstance(node, ast.EventType), node
        return self._leaf_guard(node, ctx)

    def _label(self, variables: frozenset[str]) -> int:
        if variables not in self.labels:
            self.labels[variables] = len(self.labels)
        return self.labels[variables]

    def fragment(self, node: ast.Formula, ctx: _Context) -> tuple[int, int]:
        """Entry and exit states of the automaton of ``node``."""
        b = self.builder
        if isinstance(node, ast.EventType):
            start, end = b.state(), b.state()
            label = self._label(frozenset({node.name, *ctx.enclosing}))
            b.read(start, self._leaf_guard(node, ctx), label, end)
            return start, end
        if isinstance(node, ast.Bind):
            return self.fragment(node.formula, _Context((*ctx.enclosing, node.variable), ctx.conditions))
        if isinstance(node, ast.Filter):
            return self.fragment(node.formula, self._filtered(node, ctx))
        if isinstance(node, ast.Negation):
            start, end = b.state(), b.state()
            b.read(start, Not(self.single_event_guard(node.formula, _Context())), None, end)
            return start, end
        if isinstance(node, ast.Disjunction):
            start, end = b.state(), b.state()
            for part in (node.left, node.right):
                s, e = self.fragment(part, ctx)
                b.link(start, s)
                b.link(e, end)
            return start, end
        if isinstance(node, ast.Iteration):
            start, end = b.state(), b.state()
            s, e = self.fragment(node.formula, ctx)
            b.link(start, s)
            b.link(e, end)
            if node.contiguous:
                b.link(e, s)
            else:
                self._skip(e, s, TRUE)
            return start, end
        assert isinstance(node, ast.Sequence), node
        start, end = self.fragment(node.parts[0], ctx)
        absent: list[Guard] = []
        for link, part in zip(node.links, node.parts[1:], strict=True):
            if isinstance(part, ast.Absence):
                absent.append(Not(self.single_event_guard(part.formula, _Context())))
                continue
            s, e = self.fragment(part, ctx)
            if link == ":":
                b.link(end, s)
            else:
                self._skip(end, s, AllOf(tuple(absent)) if absent else TRUE)
            absent = []
            end = e
        return start, end

    def _skip(self, source: int, target: int, guard: Guard) -> None:
        """source -> (any number of events satisfying guard, unmarked) -> target."""
        skip = self.builder.state()
        self.builder.link(source, skip)
        self.builder.read(skip, guard, None, skip)
        self.builder.link(skip, target)
