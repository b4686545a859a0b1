"""One query group of a plan, compiled for the engine: everything derived
from the plan and the engine's options, and nothing about the stream.

The automaton's determinizer fills its cache of deterministic states and
steps lazily; that cache is derived from the automaton alone, so it counts
as compiled (a memo), not as state: the live state of a query group
(``engine.state``) names deterministic states by their ids in this
determinizer, and its snapshot by their sets of automaton states.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.planner import compile_plan
>>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
>>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 5 EVENTS", s))])
>>> compiled = CompiledQueryGroup(plan, 0)
>>> compiled.largest, compiled.det.initial, compiled.by_position
(5, 0, True)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from sharp_cer.planner.plan import Plan, QueryGroup, QueryPlan, window_bound
from sharp_cer.planner.predicates import guard_atoms

from .conditions import Summaries
from .density import Density
from .determinize import Determinizer
from .relevance import Relevance
from .selection import Projection
from .symbols import SymbolTable

_INF = float("inf")


class QueryWindow:
    """One query's window test on start values against an end value.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.planner import compile_plan
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int } }")
    >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A WITHIN 2 EVENTS", s))])
    >>> test = QueryWindow(plan.queries[0]).test(5)
    >>> test(3), test(2)
    (True, False)
    """

    __slots__ = ("bound", "inclusive")

    def __init__(self, query: QueryPlan) -> None:
        self.bound, self.inclusive = window_bound(query.window)

    def test(self, end_value: float) -> Callable[[float], bool]:
        """Whether a start value is in the window of a match ending at ``end_value``."""
        bound, inclusive = self.bound, self.inclusive
        if bound == _INF:
            return lambda start: True
        if inclusive:
            return lambda start: end_value - start <= bound
        return lambda start: end_value - start < bound


class CompiledQueryGroup:
    """The automaton, symbols, windows, projections, conditions and the
    tests that skip events of query group ``number`` of ``plan`` (see the
    module example). ``lone_tests`` turns on the density and relevance
    tests (``engine.density``, ``engine.relevance``); ``skip`` those and the
    skip index of idle symbols. The tests stay exact under a shedder: an
    event in no match of the whole stream is in no match of what is left
    once some events or partial matches are shed.
    """

    def __init__(
        self,
        plan: Plan,
        number: int,
        *,
        cache_capacity: int = 65536,
        allowed_lateness: float = 0,
        skip: bool = True,
        lone_tests: bool = True,
    ) -> None:
        group = plan.groups[number]
        self.plan = plan
        self.group: QueryGroup = group
        self.number = number  # the query group's index in the plan
        self.det = Determinizer(group.automaton, cache_capacity)
        self.queries = [plan.queries[q] for q in group.queries]
        self.windows = {q.id: QueryWindow(q) for q in self.queries}
        filters = [f for q in self.queries for f in q.filters]
        if group.basis is not None:
            # a group whose queries changed while it ran: its live nodes' summaries keep
            # their layout, and each query's filters are among those it is laid out for
            basis = [f for layer in group.basis for f in layer]
            self.summaries = Summaries(basis, plan.labels, _numeric(group), group.basis) if basis else None
            checks = self.summaries.checks if self.summaries else []
            # each query's filter objects are in the basis (its own, or an equal one before it)
            by_object = {id(f): check for f, check in zip(basis, checks, strict=True)}
            equal = {f: check for f, check in zip(reversed(basis), reversed(checks), strict=True)}
            self.checks = {q.id: [by_object.get(id(f)) or equal[f] for f in q.filters] for q in self.queries}
        else:
            self.summaries = Summaries(filters, plan.labels, _numeric(group)) if filters else None
            made = iter(self.summaries.checks if self.summaries else ())  # in the order of ``filters``
            self.checks = {q.id: [next(made) for _ in q.filters] for q in self.queries}
        # a consuming query is a query group of its own: it must see every
        # run complete, in its window or not
        self.consumes = any(q.consume != "NONE" for q in self.queries)
        self.largest = max(w.bound for w in self.windows.values())
        if self.consumes and filters:
            self.largest = _INF  # a condition needs the nodes: no run is dropped
        self.symbols = SymbolTable(
            sorted({a for ts in group.automaton.transitions for t in ts for a in guard_atoms(t.guard)})
        )
        # STRICT checked on marks counts a partition's every event
        self.every_event = any(q.strict_by_filter for q in self.queries)
        # whether the skip index of idle symbols applies (engine.skipping)
        self.skips = skip and not self.every_event
        self.floors: Mapping[int, int] = {}
        self.walk_class: dict[int, int] = {}
        self.widest: dict[int, QueryWindow] = {}
        self.walk_peers: dict[int, bool] = {}
        self.set_floors({})
        # which events are too far from the rest of their partition to be in a match
        self.density = Density.of(group, self.queries, allowed_lateness) if skip and lone_tests else None
        # which events no accepted run can mark
        self.relevance = Relevance.of(group, self.queries, allowed_lateness) if skip and lone_tests else None
        # per mark label, the variables a match shows for it (not filter tags),
        # by the shared labels' names; each query's projection shows its own
        self.variables = [tuple(v for v in names if v[0] != "#") for names in plan.labels]
        self.projections = {
            q.id: Projection(q, OwnNames(self.variables, q.own_names) if q.variables else self.variables)
            for q in self.queries
        }
        # the horizon: the window measure (the position, or the running
        # maximum of the partition) minus how far back any window reaches
        self.by_position = group.window[0] == "events"
        self.reach = self.largest if self.by_position else self.largest + allowed_lateness

    def set_floors(self, floors: Mapping[int, int]) -> None:
        """Each query's first start (``Engine.update``: a query that joined
        the group while it ran matches no event before it; absent: none),
        and the walks shared by queries that differ only in their windows
        (same cross-event filters, by the shared labels' names, and the same
        floor): one walk with the class's widest window serves them all."""
        self.floors = {q.id: floors[q.id] for q in self.queries if q.id in floors}
        classes: dict[object, int] = {}
        self.walk_class = {
            q.id: classes.setdefault((q.filters, self.floors.get(q.id, -1)), len(classes)) for q in self.queries
        }
        widest: dict[int, QueryWindow] = {}
        peers: dict[int, int] = {}
        for q in self.queries:
            cls = self.walk_class[q.id]
            peers[cls] = peers.get(cls, 0) + 1
            if cls not in widest or self.windows[q.id].bound > widest[cls].bound:
                widest[cls] = self.windows[q.id]
        self.widest = {q.id: widest[self.walk_class[q.id]] for q in self.queries}
        self.walk_peers = {q.id: peers[self.walk_class[q.id]] > 1 for q in self.queries}

    def horizon(self, position: int, running_max: float) -> float:
        """Keys below the horizon are outside every window of the query
        group for every later event (see the module example's plan).

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int } }")
        >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A WITHIN 2 EVENTS", s))])
        >>> CompiledQueryGroup(plan, 0).horizon(10, 0.0)
        8
        """
        return (position if self.by_position else running_max) - self.reach

    @property
    def window_events(self) -> int | None:
        """The query group's largest window in events (None: not counted in events)."""
        return int(self.largest) if self.by_position and self.largest != _INF else None


class OwnNames(dict[int, tuple[str, ...]]):
    """Per mark label, one query's own names of the variables it shows,
    filled on first use: a query meets only its own few labels of the plan's
    many.

    >>> names = OwnNames([("A", "$0"), ("B",)], {"$0": "first"})
    >>> names[0], names[1], len(names)
    (('A', 'first'), ('B',), 2)
    """

    def __init__(self, shared: Sequence[tuple[str, ...]], own: Mapping[str, str]) -> None:
        super().__init__()
        self.shared = shared
        self.own = own

    def __missing__(self, label: int) -> tuple[str, ...]:
        own = self.own
        names = self[label] = tuple(own.get(v, v) for v in self.shared[label])
        return names


def _numeric(group: QueryGroup) -> set[str]:
    """The attributes with numeric values in every event type that has them."""
    kinds: dict[str, set[str]] = {}
    for event in group.event_types:
        for name, kind in event.attributes.items():
            kinds.setdefault(name, set()).add(kind)
    return {name for name, found in kinds.items() if found <= {"int", "double", "primary_time"}}
