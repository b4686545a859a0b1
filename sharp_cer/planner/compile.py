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
type and the enclosing ``AS`` names, renamed ``$0``, ``$1``, ... in order of
first binding (tenants name variables as they like; ``QueryPlan.variables``
maps the labels back, for matches and explanations). Unary conditions are
tabled in a normal form (``normal_form``), so equal tests written apart
are one atom.

A conjunct across events (``a.x < b.x``, ``sum(b.x) < c.x``) cannot sit on a
move: the engine checks it during enumeration. Its FILTER adds a tag to the
labels of the events it covers, and a first-tag to the first event of each
pass through it (``AutomatonBuilder.mark_first``), so enumeration knows which
events form one instance (one per iteration inside ``+``). ``AND(p, q)`` is
a product of the parts' automata (``_QueryCompiler._conjunction``). STRICT
drops non-marking moves; counting plans relabel marks so that each match is
one open complex event (``automaton.relabel``).

>>> from sharp_cer.language import Schema, parse_and_check
>>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
>>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A AS a ; B FILTER a.x > 1 WITHIN 3 EVENTS", s))])
>>> cea = plan.groups[0].automaton
>>> cea.n_states, cea.transition_count(), [sorted(v) for v in plan.labels], plan.queries[0].own_names
(3, 3, [['$0', 'A'], ['B']], {'$0': 'a'})
>>> plan.predicates.atoms[1].condition
Comparison(op='>', left=AttributeRef(variable=None, attribute='x'), right=NumberLiteral(value=1))
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sharp_cer.errors import PlanError
from sharp_cer.language import CheckedQuery, EventSchema, ast
from sharp_cer.language.checker import conjuncts, has_aggregate, referenced_variables
from sharp_cer.language.collector import collector_paused

from .automaton import Automaton, AutomatonBuilder, drop_unmarked, merge_bisimilar, merge_bisimilar_map, relabel
from .plan import WHOLE, CrossFilter, Plan, QueryGroup, QueryPlan, prefix_query, window_kind
from .predicates import TRUE, AllOf, Atom, Guard, Not, PredicateTable
from .sharing import Sharing, share


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


def compile_plan(queries: Sequence[tuple[str, CheckedQuery]], *, counting: bool = False) -> Plan:
    """Compile named checked queries into one plan.

    Queries with the ALL strategy, no consumption and no LIMIT that read the
    same event types, partition by the same attributes and measure windows
    the same way share one automaton; every other query is a group of its
    own (a strategy over a shared automaton would choose across queries).
    With ``counting``, queries whose matches can be counted on the tECS get
    an automaton of their own that marks exactly their projected events
    (see ``QueryPlan.counted``).

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { t:primary_time }, EVENT B { t:primary_time } }")
    >>> plan = compile_plan([(n, parse_and_check(t, s)) for n, t in [
    ...     ("q1", "SELECT * WHERE A ; B WITHIN 5 EVENTS"),
    ...     ("q2", "SELECT * WHERE B ; A WITHIN 9 EVENTS"),
    ...     ("q3", "SELECT * WHERE A ; B WITHIN 5 SECONDS"),
    ...     ("q4", "SELECT LAST * WHERE A ; B WITHIN 5 EVENTS")]]
    ... )
    >>> [g.queries for g in plan.groups]
    [(0, 1), (2,), (3,)]
    """
    with collector_paused():
        return _compile(queries, counting)


def _compile(queries: Sequence[tuple[str, CheckedQuery]], counting: bool) -> Plan:
    table = PredicateTable()
    labels: dict[frozenset[str], int] = {}
    compiled = [_compile_query(i, name, full, table, labels, counting) for i, (name, full) in enumerate(queries)]
    plans = [plan for plan, _, _ in compiled]
    buckets: dict[object, list[int]] = {}
    for i, (_, _, key) in enumerate(compiled):
        buckets.setdefault(key, []).append(i)
    label_list = sorted(labels, key=labels.__getitem__)
    groups = [_group(members, [compiled[q][1] for q in members], plans, label_list) for members in buckets.values()]
    return Plan(tuple(plans), tuple(groups), table, tuple(label_list))


def _compile_query(
    i: int,
    name: str,
    full: CheckedQuery,
    table: PredicateTable,
    labels: dict[frozenset[str], int],
    counting: bool,
) -> tuple[QueryPlan, Automaton, object]:
    """One query as query ``i`` of a plan whose atoms and labels are
    ``table`` and ``labels`` (both grow): its plan, its own automaton and
    the key of the query group it belongs to (``("alone", i, ...)``: a
    group of its own)."""
    # ``p ; ABSENT(F) WITHIN d``: the automaton runs p selecting *; the engine does the rest
    checked = prefix_query(full)
    q = checked.query
    compiler = _QueryCompiler(i, name, checked, AutomatonBuilder(), table, labels)
    start, end = compiler.whole(q.pattern)
    renaming = compiler.canonical
    if isinstance(q.selection, tuple):
        selected: tuple[str, ...] | None = tuple(p.variable for p in q.selection)
    else:
        selected = None
    strategy, consumes = q.effective_strategy, q.consume not in (None, "NONE")
    # the conditions read the shared labels' names: rewritten once the whole pattern has bound them
    filters = tuple(
        dataclasses.replace(f, conjuncts=tuple(renamed(c, renaming) for c in f.conjuncts)) if renaming else f
        for f in compiler.filters
    )
    counted = counting and not filters and (strategy == "ALL" or (strategy == "STRICT" and not consumes))
    plan = QueryPlan(
        i,
        name,
        checked,
        q.within,
        selected,
        isinstance(q.selection, ast.SelectNone),
        filters,
        strict_by_filter=strategy == "STRICT" and consumes,
        counted=counted and checked is full,
        variables=tuple((label, own) for own, label in renaming.items()),
        trailing=None if checked is full else full,
    )
    scope = q.streams or tuple(checked.schema.streams)
    visible = frozenset(checked.schema.event_types(scope))
    key: object = (visible, q.partition_attributes, window_kind(q.within))
    if not plan.sheddable or counted:
        key = ("alone", i, key)
    return plan, compiler.builder.epsilon_free({start}, {end: i}), key


def _group(
    members: Sequence[int], parts: Sequence[Automaton], plans: Sequence[QueryPlan], labels: Sequence[frozenset[str]]
) -> QueryGroup:
    """The query group of ``members`` (ids into ``plans``) with their own automata ``parts``."""
    first = plans[members[0]]
    q = first.query
    scope = q.streams or tuple(first.checked.schema.streams)
    visible = frozenset(first.checked.schema.event_types(scope))
    window = window_kind(q.within)
    if len(members) > 1 or (first.sheddable and not first.counted):
        # queries that share (one query alone is grouped so only if it may): kept
        # as shared, so that more can join while the group runs
        sharing = Sharing()
        for part in parts:
            sharing.add(part)
        automaton, classes = merge_bisimilar_map(sharing.automaton())
        return QueryGroup(
            tuple(members), visible, q.partition_attributes, window, automaton, tuple(parts), sharing, tuple(classes)
        )
    automaton = group_automaton(parts, first, labels)
    return QueryGroup(tuple(members), visible, q.partition_attributes, window, automaton, tuple(parts))


@dataclass(frozen=True)
class PlanChange:
    """A running plan changed (``change_plan``): ``plan`` holds the old
    plan's queries (removed ones too, so that ids stay), then the added
    ones, and as groups exactly those that run now. Per group of ``plan``:
    ``sources`` gives the old plan's group it continues (None: a new group,
    whose state starts empty), ``maps`` where each state of the old group's
    automaton went (a tuple of states of the new automaton, empty: the
    runs there end; None: the same automaton, nothing to map). ``joined``
    lists the added queries that joined a running group: they share its
    partial matches, so the engine keeps them to matches starting from the
    change on."""

    plan: Plan
    sources: tuple[int | None, ...]
    maps: tuple[tuple[tuple[int, ...], ...] | None, ...]
    joined: tuple[int, ...]


def change_plan(
    plan: Plan,
    removed: Collection[int],
    added: Sequence[tuple[str, CheckedQuery]],
    *,
    counting: bool = False,
) -> PlanChange:
    """Remove the queries with ids ``removed`` from a running plan, and
    compile ``added`` into it, as the sharing planner would have put them:
    an added query joins the running group of its key, if there is one,
    else it goes with the other added queries of its key. A group's node
    summaries keep their layout: the cross-event filters it gains are a
    new layer of its ``basis``. Only the changed groups are compiled again, from the shared states
    kept with each group (``Sharing``): their states keep their numbers, so
    each old state maps to the new states that accept exactly the same of
    the old queries' futures (see ``planner.sharing``); states that serve
    removed queries only are dropped. Atoms and labels are added to the
    plan's tables, never renumbered, so live nodes and predicate bits stay
    valid.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }")
    >>> def q(text): return parse_and_check(text, s)
    >>> plan = compile_plan([("p", q("SELECT * WHERE A AS a ; B ; C WITHIN 9 EVENTS"))])
    >>> change = change_plan(plan, (), [("r", q("SELECT * WHERE A AS first ; B ; A WITHIN 5 EVENTS"))])
    >>> [g.queries for g in change.plan.groups], change.joined, change.sources
    ([(0, 1)], (1,), (0,))
    >>> plan.groups[0].automaton.n_states, change.plan.groups[0].automaton.n_states  # A ; B shared
    (4, 5)
    >>> gone = change_plan(change.plan, (0,), [])
    >>> gone.plan.groups[0].queries, gone.maps[0]  # p's last state is dropped
    ((1,), ((0,), (1,), (2,), (), (3,)))
    """
    table = PredicateTable(list(plan.predicates.atoms), dict(plan.predicates._index))
    labels = {names: k for k, names in enumerate(plan.labels)}
    plans = list(plan.queries)
    compiled = []
    with collector_paused():
        for name, full in added:
            made = _compile_query(len(plans), name, full, table, labels, counting)
            plans.append(made[0])
            compiled.append(made)
    label_list = tuple(sorted(labels, key=labels.__getitem__))
    gone = set(removed)
    joining: dict[int, list[int]] = {}  # old group -> added queries joining it
    buckets: dict[object, list[int]] = {}
    by_key: dict[object, int] = {
        g.key: k for k, g in enumerate(plan.groups) if g.sharing is not None and not set(g.queries) <= gone
    }
    for query, _, key in compiled:
        k = by_key.get(key)
        if k is not None:
            joining.setdefault(k, []).append(query.id)
        else:
            buckets.setdefault(key, []).append(query.id)
    parts = {query.id: part for query, part, _ in compiled}
    groups: list[QueryGroup] = []
    sources: list[int | None] = []
    maps: list[tuple[tuple[int, ...], ...] | None] = []
    with collector_paused():
        for k, group in enumerate(plan.groups):
            kept = tuple(q for q in group.queries if q not in gone)
            if not kept:
                continue  # freed with its state
            more = joining.get(k, [])
            if len(kept) == len(group.queries) and not more:
                groups.append(group)
                maps.append(None)
            else:
                grown, mapped = _regroup(group, kept, [(q, parts[q]) for q in more], plans)
                groups.append(grown)
                maps.append(mapped)
            sources.append(k)
        for members in buckets.values():
            groups.append(_group(members, [parts[q] for q in members], plans, label_list))
            sources.append(None)
            maps.append(None)
    joined = tuple(q for more in joining.values() for q in more)
    return PlanChange(Plan(tuple(plans), tuple(groups), table, label_list), tuple(sources), tuple(maps), joined)


def _basis(group: QueryGroup, queries: Sequence[QueryPlan]) -> tuple[tuple[CrossFilter, ...], ...]:
    """The cross-event filters a group's node summaries are laid out for, in layers."""
    if group.basis is not None:
        return group.basis
    return (tuple(f for q in group.queries for f in queries[q].filters),)


def _regroup(
    group: QueryGroup, kept: tuple[int, ...], more: Sequence[tuple[int, Automaton]], queries: Sequence[QueryPlan]
) -> tuple[QueryGroup, tuple[tuple[int, ...], ...]]:
    """A running group with only the queries ``kept`` and the ``more``
    (id, own automaton) joined, and where each state of its automaton went."""
    assert group.sharing is not None
    sharing = group.sharing.copy() if more else group.sharing
    for _, part in more:
        sharing.add(part)
    members = (*kept, *(q for q, _ in more))
    automaton, classes = merge_bisimilar_map(sharing.automaton(members))
    # the states that serve removed queries only are left without moves, in one class: dropped
    dead = [not automaton.transitions[c] and c not in automaton.finals for c in range(automaton.n_states)]
    if any(dead):
        number = list(itertools.accumulate((0 if d else 1 for d in dead), initial=-1))[1:]
        automaton = Automaton(
            automaton.n_states - sum(dead),
            frozenset(number[s] for s in automaton.initial if not dead[s]),
            tuple(
                tuple(dataclasses.replace(t, source=number[c], target=number[t.target]) for t in ts)
                for c, ts in enumerate(automaton.transitions)
                if not dead[c]
            ),
            {number[c]: q for c, q in automaton.finals.items()},
        )
        classes = [-1 if dead[c] else number[c] for c in classes]
    targets: list[set[int]] = [set() for _ in range(group.automaton.n_states)]
    for shared, old in enumerate(group.classes):  # the old sharing's states keep their numbers
        if old >= 0 and classes[shared] >= 0:  # -1: a state dropped before, or now
            targets[old].add(classes[shared])
    keep = set(kept)
    basis = _basis(group, queries)
    known = {f for earlier in basis for f in earlier}
    layer = tuple(dict.fromkeys(f for q, _ in more for f in queries[q].filters if f not in known))
    grown = dataclasses.replace(
        group,
        queries=members,
        automaton=automaton,
        parts=(*(p for q, p in zip(group.queries, group.parts, strict=True) if q in keep), *(p for _, p in more)),
        sharing=sharing,
        classes=tuple(classes),
        basis=(*basis, layer) if layer else basis,
    )
    return grown, tuple(tuple(sorted(t)) for t in targets)


def group_automaton(parts: Sequence[Automaton], first: QueryPlan, labels: Sequence[frozenset[str]]) -> Automaton:
    """The automaton a group runs: its queries' own automata with their
    prefixes shared and bisimilar states merged; a group of one STRICT
    query drops its non-marking moves, a counted query relabels its marks.
    ``first`` is the group's first query, ``labels`` the plan's labels.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
    >>> plan = compile_plan([("q", parse_and_check("SELECT STRICT * WHERE A ; B", s))])
    >>> group = plan.groups[0]
    >>> group_automaton(group.parts, plan.queries[0], plan.labels) == group.automaton
    True
    """
    automaton = merge_bisimilar(share(parts))
    if first.strategy == "STRICT" and not first.strict_by_filter:
        automaton = drop_unmarked(automaton)
    if first.counted:
        automaton = relabel(automaton, _projected(first, labels))
    return automaton


def _projected(query: QueryPlan, labels: Sequence[frozenset[str]]) -> Callable[[int], int | None]:
    """Counting labels: one label for an event the query outputs, none for
    the others, so the tECS holds each (start, output events) once."""
    if query.select_none:
        return lambda label: None
    if query.selected is None:
        return lambda label: 0
    selected = {query.label_of(v) for v in query.selected}
    return lambda label: 0 if labels[label] & selected else None


def is_cross(part: ast.Expr) -> bool:
    """Whether a FILTER conjunct spans events (several variables, or an
    aggregate) and so is checked during enumeration, not on transitions.

    >>> from sharp_cer.language import parse_query
    >>> [is_cross(c) for c in conjuncts(parse_query("SELECT * WHERE A FILTER a.x < b.x AND a.y > 1").pattern.condition)]
    [True, False]
    """
    return len(referenced_variables(part)) > 1 or has_aggregate(part)


def _part_moves(cea: Automaton, status: int, idle: int, done: int) -> list[tuple[Guard, int | None, int]]:
    """A conjunction part's choices on one event: (guard, label, status)."""
    if status == done:
        return [(TRUE, None, done)]
    sources = cea.initial_list if status == idle else [status]
    moves: list[tuple[Guard, int | None, int]] = [(TRUE, None, idle)] if status == idle else []
    for source in sources:
        for t in cea.transitions[source]:
            if cea.transitions[t.target]:
                moves.append((t.guard, t.label, t.target))
            if t.target in cea.finals:
                moves.append((t.guard, t.label, done))
    return moves


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
    kind: type = type(expr)
    for name in _field_names(kind):
        value = getattr(expr, name)
        if isinstance(value, tuple):
            changes[name] = tuple(erase_variables(v) if _is_expr(v) else v for v in value)
        elif _is_expr(value):
            changes[name] = erase_variables(value)
    return dataclasses.replace(expr, **changes) if changes else expr  # type: ignore[arg-type]


def renamed(expr: ast.Expr, renaming: dict[str, str]) -> ast.Expr:
    """The condition with its variables renamed (``x.a``, ``x[...]``,
    ``count(x)``); names not in ``renaming`` (event types) stay.

    >>> from sharp_cer.language import parse_query, printer
    >>> cond = parse_query("SELECT * WHERE A FILTER sum(b.x) < a.x AND count(b) > 1 AND a[x > B.x]").pattern.condition
    >>> printer.expr(renamed(cond, {"a": "$0", "b": "$1"}))
    'sum(`$1`.x) < `$0`.x AND count(`$1`) > 1 AND `$0`[x > B.x]'
    """
    if isinstance(expr, ast.AttributeRef):
        if expr.variable is not None and expr.variable in renaming:
            return dataclasses.replace(expr, variable=renaming[expr.variable])
        return expr
    if isinstance(expr, ast.Call) and expr.function.lower() == "count":
        (arg,) = expr.args
        if isinstance(arg, ast.AttributeRef) and arg.variable is None and arg.attribute in renaming:
            return dataclasses.replace(expr, args=(dataclasses.replace(arg, attribute=renaming[arg.attribute]),))
    changes: dict[str, Any] = {}
    if isinstance(expr, ast.VariableFilter) and expr.variable in renaming:
        changes["variable"] = renaming[expr.variable]
    kind: type = type(expr)
    for name in _field_names(kind):
        value = getattr(expr, name)
        if isinstance(value, tuple):
            changes[name] = tuple(renamed(v, renaming) if _is_expr(v) else v for v in value)
        elif _is_expr(value):
            changes[name] = renamed(value, renaming)
    return dataclasses.replace(expr, **changes) if changes else expr  # type: ignore[arg-type]


_MIRRORED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "!=": "!="}


_NEGATED = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "=": "!=", "!=": "="}
_LITERALS = (ast.NumberLiteral, ast.StringLiteral, ast.BoolLiteral)


def normal_form(condition: ast.Expr) -> tuple[ast.Expr, ...]:
    """A unary condition (variables erased) as the conjuncts its atoms are
    tabled under, so tenants who write the same test differently share the
    atoms and the states behind them:

    - ``a AND b`` (also inside ``x[...]``) is two atoms, whatever their
      order (a guard lists its atoms sorted);
    - a comparison with the constant on the left is turned around
      (``5 < x`` is ``x > 5``);
    - NOT goes through a comparison of an attribute with a constant
      (``NOT (x < 10)`` is ``x >= 10``), a set test (``NOT (x IN {1})`` is
      ``x NOT IN {1}``) and another NOT;
    - a bool attribute is tested with ``=`` (``ok != true`` is ``ok = false``).

    Each rule keeps every event's truth value, nulls included: conditions
    read nulls with SQL's three-valued logic (the reference evaluator's rule
    6), where a comparison or set test reading a null is unknown and NOT
    unknown is unknown, so ``x >= 10`` and ``NOT (x < 10)`` are both unknown
    on a null x (and an atom holds only where it is true); AND splits into
    atoms exactly because Kleene's AND is true only when both sides are; and a
    stored value is never NaN (loaders read NaN as null). NOT is not pushed
    through arithmetic (``NOT (x - y < 1)``), where infinities can make NaN.
    Out-of-domain counts may differ: a split conjunction counts each atom's.

    >>> from sharp_cer.language import parse_query, printer
    >>> cond = parse_query("SELECT * WHERE A FILTER A[NOT (5 < x) AND b = 'z']").pattern.condition
    >>> [printer.expr(c) for c in normal_form(erase_variables(cond))]
    ['x <= 5', "b = 'z'"]
    """
    if isinstance(condition, ast.And):
        return (*normal_form(condition.left), *normal_form(condition.right))
    if isinstance(condition, ast.Not):
        inner = condition.operand
        if isinstance(inner, ast.Not):
            return normal_form(inner.operand)
        inner = _oriented(inner)
        if (
            isinstance(inner, ast.Comparison)
            and isinstance(inner.left, ast.AttributeRef)
            and isinstance(inner.right, (*_LITERALS, ast.AttributeRef))
        ):
            return (_tidy(ast.Comparison(_NEGATED[inner.op], inner.left, inner.right)),)
        if isinstance(inner, ast.InSet) and isinstance(inner.operand, ast.AttributeRef):
            return (ast.InSet(inner.operand, inner.values, not inner.negated),)
        return (ast.Not(inner),)
    return (_tidy(_oriented(condition)),)


def _tidy(condition: ast.Expr) -> ast.Expr:
    """A bool attribute tested with ``!=`` tested with ``=`` instead
    (``ok != true`` is ``ok = false``: the checker compares bools with bools
    only, and a null is unknown either way).

    >>> from sharp_cer.language import printer
    >>> printer.expr(_tidy(ast.Comparison("!=", ast.AttributeRef(None, "ok"), ast.BoolLiteral(True))))
    'ok = FALSE'
    """
    if (
        isinstance(condition, ast.Comparison)
        and condition.op == "!="
        and isinstance(condition.left, ast.AttributeRef)
        and isinstance(condition.right, ast.BoolLiteral)
    ):
        return ast.Comparison("=", condition.left, ast.BoolLiteral(not condition.right.value))
    return condition


def _oriented(condition: ast.Expr) -> ast.Expr:
    """A comparison with the constant on the left turned around; only a
    whole condition is turned, never the middle of a chain.

    >>> c = ast.Comparison("<", ast.NumberLiteral(5), ast.AttributeRef(None, "x"))
    >>> _oriented(c) == ast.Comparison(">", ast.AttributeRef(None, "x"), ast.NumberLiteral(5))
    True
    """
    if (
        isinstance(condition, ast.Comparison)
        and isinstance(condition.left, _LITERALS)
        and isinstance(condition.right, ast.AttributeRef)
    ):
        return ast.Comparison(_MIRRORED[condition.op], condition.right, condition.left)
    return condition


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls) if f.name != "span")


def _is_expr(value: object) -> bool:
    return dataclasses.is_dataclass(value) and type(value).__module__ == ast.__name__


class _QueryCompiler:
    def __init__(
        self,
        qid: int,
        name: str,
        checked: CheckedQuery,
        builder: AutomatonBuilder,
        table: PredicateTable,
        labels: dict[frozenset[str], int],
    ) -> None:
        self.qid = qid
        self.name = name
        self.checked = checked
        self.filters: list[CrossFilter] = []
        #: the query's AS names to the shared labels' names, in order of first binding
        self.canonical: dict[str, str] = {}
        self._events: dict[tuple[str, str | None], EventSchema] = {}
        self._splits: dict[int, tuple[tuple[tuple[str | None, ast.Expr], ...], tuple[ast.Expr, ...]]] = {}
        self.builder = builder
        self.table = table
        self.labels = labels
        q = checked.query
        self.scope = checked.schema.event_types(q.streams or tuple(checked.schema.streams))

    def _event(self, node: ast.EventType) -> EventSchema:
        found = self._events.get((node.name, node.stream))
        if found is None:
            matching = [e for e in self.scope if e.name == node.name and node.stream in (None, e.stream)]
            if len(matching) != 1:  # the checker rules this out
                raise PlanError(f"query {self.name}: event type {node.name} is unknown or ambiguous")
            found = self._events[node.name, node.stream] = matching[0]
        return found

    def _leaf_guard(self, node: ast.EventType, ctx: _Context) -> Guard:
        event = self._event(node)
        kind = Atom(self.table.type_atom(event.stream, event.name))
        conditions = {
            self.table.condition_atom(event.stream, event.name, c.condition)
            for c in ctx.conditions
            if c.variable is None or c.variable == node.name or c.variable in ctx.enclosing[c.cut :]
        }
        # sorted, so that the same conditions in another order give the same guard (and can share states)
        guards = [kind, *(Atom(a) for a in sorted(conditions))]
        return guards[0] if len(guards) == 1 else AllOf(tuple(guards))

    def _split(self, node: ast.Filter) -> tuple[tuple[tuple[str | None, ast.Expr], ...], tuple[ast.Expr, ...]]:
        """A FILTER's unary conjuncts (variable, normalized condition) and its
        cross-event ones; a filter is visited several times, split once."""
        found = self._splits.get(id(node))
        if found is None:
            unary: list[tuple[str | None, ast.Expr]] = []
            cross: list[ast.Expr] = []
            for part in conjuncts(node.condition):
                if is_cross(part):
                    cross.append(part)
                else:
                    variables = referenced_variables(part)
                    variable = next(iter(variables)) if variables else None
                    unary.extend((variable, c) for c in normal_form(erase_variables(part)))
            found = self._splits[id(node)] = (tuple(unary), tuple(cross))
        return found

    def _filtered(self, node: ast.Filter, ctx: _Context) -> _Context:
        """The context inside a FILTER: its unary conjuncts pushed down."""
        cut = len(ctx.enclosing)
        pushed = (*ctx.conditions, *(_Condition(variable, cut, expr) for variable, expr in self._split(node)[0]))
        return _Context(ctx.enclosing, pushed)

    def _cross_filter(self, node: ast.Filter, ctx: _Context) -> tuple[int, int]:
        """A FILTER with conditions across events: its events are tagged and
        the first event of each pass through it tagged again (see
        ``CrossFilter``); the engine checks the conditions as it enumerates."""
        # numbered by position in the pattern, not by query: the same shape tags alike and shares
        tag = f"#{sum(1 for f in self.filters if not f.whole)}"
        cross = CrossFilter(tag, tag + "^", self._split(node)[1])
        self.filters.append(cross)
        inner = self._filtered(node, ctx)
        lo = self.builder.n_states
        start, end = self.fragment(node.formula, _Context((*inner.enclosing, tag), inner.conditions))
        sets = self.label_sets  # the moves to relabel carry labels known now
        entry = self.builder.mark_first(lo, start, lambda label: self._label(sets[label] | {cross.first_tag}))
        return entry, end

    def whole(self, pattern: ast.Formula) -> tuple[int, int]:
        """Entry and exit states of the query's pattern. Cross-event
        conditions of FILTERs around the whole pattern tag no event (see
        ``CrossFilter.whole``); their unary conjuncts are pushed down as
        usual."""
        ctx = _Context()
        while isinstance(pattern, ast.Filter):
            cross = self._split(pattern)[1]
            if cross:
                self.filters.append(CrossFilter(WHOLE, WHOLE + "^", cross, whole=True))
            ctx = self._filtered(pattern, ctx)
            pattern = pattern.formula
        return self.fragment(pattern, ctx)

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

    @property
    def label_sets(self) -> list[frozenset[str]]:
        return sorted(self.labels, key=self.labels.__getitem__)

    def fragment(self, node: ast.Formula, ctx: _Context) -> tuple[int, int]:
        """Entry and exit states of the automaton of ``node``."""
        b = self.builder
        if isinstance(node, ast.EventType):
            start, end = b.state(), b.state()
            label = self._label(frozenset({node.name, *(self.canonical.get(v, v) for v in ctx.enclosing)}))
            b.read(start, self._leaf_guard(node, ctx), label, end)
            return start, end
        if isinstance(node, ast.Bind):
            if node.variable not in self.canonical:
                self.canonical[node.variable] = f"${len(self.canonical)}"
            return self.fragment(node.formula, _Context((*ctx.enclosing, node.variable), ctx.conditions))
        if isinstance(node, ast.Filter):
            if self._split(node)[1]:
                return self._cross_filter(node, ctx)
            return self.fragment(node.formula, self._filtered(node, ctx))
        if isinstance(node, ast.Conjunction):
            return self._conjunction(node, ctx)
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

    def _conjunction(self, node: ast.Conjunction, ctx: _Context) -> tuple[int, int]:
        """``AND(p1, ..., pn)`` as a product of the parts' automata.

        A product state holds each part's status: not started, one of its
        states, or finished. Each event moves every started part (a part not
        started may stay so, or start; a part that reaches a final state may
        finish); at most one part marks the event, so the parts' output
        events are disjoint. The run starts when the first part starts (the
        all-unstarted state is never entered again) and ends with the event
        that finishes the last part."""
        parts = []
        for part in node.parts:
            sub = _QueryCompiler(self.qid, self.name, self.checked, AutomatonBuilder(), self.table, self.labels)
            sub.filters = self.filters  # tags stay unique across the parts
            sub.canonical = self.canonical  # and so do the labels' names
            start, end = sub.fragment(part, ctx)
            parts.append(sub.builder.build({start}, {end: 0}))
        idle, done = -1, -2
        entry_status = tuple(idle for _ in parts)
        exit_status = tuple(done for _ in parts)
        b = self.builder
        states = {entry_status: b.state(), exit_status: b.state()}
        queue = [entry_status]
        while queue:
            status = queue.pop()
            options = [_part_moves(cea, st, idle, done) for cea, st in zip(parts, status, strict=True)]
            for combination in itertools.product(*options):
                marking = [label for _, label, _ in combination if label is not None]
                target = tuple(t for _, _, t in combination)
                if len(marking) > 1 or target == entry_status:
                    continue
                guards = tuple(g for g, _, _ in combination if g != TRUE)
                if target not in states:
                    states[target] = b.state()
                    queue.append(target)
                guard = guards[0] if len(guards) == 1 else AllOf(guards)
                b.read(states[status], guard, marking[0] if marking else None, states[target])
        return states[entry_status], states[exit_status]

    def _skip(self, source: int, target: int, guard: Guard) -> None:
        """source -> (any number of events satisfying guard, unmarked) -> target."""
        skip = self.builder.state()
        self.builder.link(source, skip)
        self.builder.read(skip, guard, None, skip)
        self.builder.link(skip, target)
