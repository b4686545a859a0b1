"""Plans: what the engine runs.

A :class:`Plan` holds every query of a workload, one predicate table, the
table of mark labels (sets of variable names) and the query *groups*. A group
is a set of queries that read the same event types, partition by the same
attributes and measure their windows the same way; it runs as one automaton
(and, per partition key, one tECS). Each query keeps its own window and
projection, applied when its matches are enumerated.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sharp_cer._moved import old_names
from sharp_cer.language import CheckedQuery, EventSchema, ast
from sharp_cer.language.trailing import split

from .automaton import Automaton
from .predicates import PredicateTable
from .psd import SharingDegrees, prefix_graph, sharing_degrees
from .sharing import Sharing

if TYPE_CHECKING:
    import networkx as nx

#: How a group measures windows: by position, by the primary time, by an
#: attribute (``("attribute", name)``), or not at all.
WindowKind = tuple[str, str]

EVENTS: WindowKind = ("events", "")
TIME: WindowKind = ("time", "")
UNBOUNDED: WindowKind = ("none", "")


def window_kind(window: ast.Window | None) -> WindowKind:
    """The window kind of a WITHIN clause.

    >>> window_kind(ast.AttributeWindow(5, "t")), window_kind(None)
    (('attribute', 't'), ('none', ''))
    """
    if window is None:
        return UNBOUNDED
    if isinstance(window, ast.EventWindow):
        return EVENTS
    if isinstance(window, ast.AttributeWindow):
        return ("attribute", window.attribute)
    return TIME


def window_bound(window: ast.Window | None) -> tuple[int | float, bool]:
    """The window's size and whether the size itself is inside the window
    (``n EVENTS`` and time windows include it, ``n [attr]`` does not).

    >>> window_bound(ast.EventWindow(3)), window_bound(ast.AttributeWindow(5, "t")), window_bound(None)
    ((3, True), (5, False), (inf, True))
    """
    if window is None:
        return float("inf"), True
    if isinstance(window, ast.EventWindow):
        return window.count, True
    if isinstance(window, ast.AttributeWindow):
        return window.size, False
    return window.nanoseconds, True


#: The tag of every filter over a whole match: it tags no event, so its
#: node summaries are the same for every query and shared among them.
WHOLE = "#"


def prefix_query(checked: CheckedQuery) -> CheckedQuery:
    """A query ending with a trailing absence as its automaton runs it: its
    pattern p without the absence, selecting * (the absence and the
    projection come after, in the engine); any other query unchanged.

    >>> from sharp_cer.language import Schema, parse_and_check, to_ceql
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { t:primary_time }, EVENT B { t:primary_time } }")
    >>> to_ceql(prefix_query(parse_and_check("SELECT NONE WHERE A ; ABSENT(B) WITHIN 1 SECONDS", s)).query)
    'SELECT * WHERE A WITHIN 1 SECONDS'
    """
    prefix, absence = split(checked.query.pattern)
    if absence is None:
        return checked
    query = dataclasses.replace(checked.query, pattern=prefix, selection=ast.SelectAll())
    return dataclasses.replace(checked, query=query)


@dataclass(frozen=True)
class CrossFilter:
    """A FILTER whose conditions span events (several variables, or an
    aggregate): checked during enumeration, once per instance of the
    filtered pattern. Every event of an instance is marked with a label that
    holds ``tag``; the instance's first event also holds ``first_tag``, so
    enumeration (which walks from the last event back) knows where an
    instance is complete.

    A FILTER over the query's whole pattern (``whole``) tags nothing: its one
    instance is the match, complete at the match's first event, and every
    event of a path enumerated from the query's final state is the query's.
    Untagged labels are what lets queries with such conditions share states.

    Tags name a filter's place in its query's pattern (``#0``, ``#1``, ...
    in the order the compiler meets them), not the query, so two queries
    whose patterns have a filter at the same place share the states under
    it, whatever the filters' conditions. The conjuncts read the names of
    the shared labels (``$0``, ``$1``, ...: see ``QueryPlan.variables``).

    >>> CrossFilter("#0", "#0^", ()).first_tag
    '#0^'
    """

    tag: str
    first_tag: str
    conjuncts: tuple[ast.Expr, ...]
    whole: bool = False

    # hashed once: groups of many queries look filters up often (``engine.compiled``), and a
    # syntax tree hashes deeply. Not pickled: another process hashes strings apart.
    def __hash__(self) -> int:
        return self._hash

    @functools.cached_property
    def _hash(self) -> int:
        return hash((self.tag, self.first_tag, self.conjuncts, self.whole))

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state.pop("_hash", None)
        return state


@dataclass(frozen=True)
class QueryPlan:
    """One query: its id (its index in the plan), name and what enumeration
    applies: the window, the projection (``selected`` is None for ``*``
    and NONE, else the projected variables), the cross-event filters, and
    how the strategy is applied. ``strict_by_filter`` says STRICT is checked
    on each enumerated match (else the automaton itself is strict);
    ``counted`` says the group's automaton marks exactly the projected
    events, so matches can be counted without enumerating them.

    Marks name the query's AS variables by shared labels, ``$0``, ``$1``,
    ... in order of first binding, so tenants who name their variables
    differently share states; ``variables`` maps each label back to the
    query's own name, for its matches and its explanation.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    >>> QueryPlan(0, "q", parse_and_check("SELECT A WHERE A WITHIN 1 EVENTS", s), None, ("A",), False).query.within
    EventWindow(count=1)
    """

    id: int
    name: str
    checked: CheckedQuery
    window: ast.Window | None
    selected: tuple[str, ...] | None
    select_none: bool
    filters: tuple[CrossFilter, ...] = ()
    strict_by_filter: bool = False
    counted: bool = False
    #: with a trailing absence (``p ; ABSENT(F) WITHIN d``), the query as
    #: written; ``checked`` is then p selecting * (``prefix_query``)
    trailing: CheckedQuery | None = None
    variables: tuple[tuple[str, str], ...] = ()

    @functools.cached_property
    def own_names(self) -> dict[str, str]:
        """Shared label name -> the query's own variable.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
        >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A AS first ; A AS second", s))])
        >>> plan.queries[0].own_names, plan.queries[0].label_of("second"), plan.queries[0].label_of("A")
        ({'$0': 'first', '$1': 'second'}, '$1', 'A')
        """
        return dict(self.variables)

    def label_of(self, variable: str) -> str:
        """The shared label name of one of the query's variables (event
        type names are their own)."""
        for label, own in self.variables:
            if own == variable:
                return label
        return variable

    @property
    def query(self) -> ast.Query:
        """The query's syntax tree (see the class example)."""
        return self.checked.query

    @property
    def strategy(self) -> str:
        """The effective selection strategy (ANY and none mean ALL)."""
        return self.query.effective_strategy

    @property
    def consume(self) -> str:
        """The consumption policy: NONE, ANY or PARTITION."""
        return self.query.consume or "NONE"

    @property
    def sheddable(self) -> bool:
        """Whether the query's output depends only on its own matches (ALL
        strategy, no consumption, no LIMIT): only such queries share states
        with others or lose matches to an enumeration budget.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
        >>> q = parse_and_check("SELECT * WHERE A WITHIN 1 EVENTS LIMIT 1", s)
        >>> QueryPlan(0, "q", q, None, None, False).sheddable
        False
        """
        q = self.query
        return q.effective_strategy == "ALL" and q.consume in (None, "NONE") and q.limit is None


@dataclass(frozen=True)
class QueryGroup:
    """Queries that run as one automaton: same visible event types, same
    partition attributes (``Query.partition_attributes``), same window
    kind. ``parts`` holds each query's own automaton (in the order of
    ``queries``) before their prefixes were shared (:mod:`sharp_cer.planner.sharing`).

    >>> QueryGroup((0, 1), frozenset(), (), EVENTS, Automaton(1, frozenset({0}), ((),), {})).queries
    (0, 1)
    """

    queries: tuple[int, ...]
    event_types: frozenset[EventSchema]
    partition_attributes: tuple[str, ...]
    window: WindowKind
    automaton: Automaton
    parts: tuple[Automaton, ...] = ()
    #: how the parts' states were shared (:class:`~sharp_cer.planner.sharing.Sharing`), and
    #: the automaton's state of each shared state: what lets queries join the group while
    #: it runs (``compile.change_plan``); None for a query that runs alone
    sharing: Sharing | None = field(default=None, compare=False, repr=False)
    classes: tuple[int, ...] = field(default=(), compare=False, repr=False)
    #: the cross-event filters the group's node summaries are laid out for, in layers in
    #: the order the group gained them (None: its queries' own, one layer); a group that
    #: lost or gained queries while running keeps the layout its live nodes have
    basis: tuple[tuple[CrossFilter, ...], ...] | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple[frozenset[EventSchema], tuple[str, ...], WindowKind]:
        """What queries of one group have in common (see the class docstring)."""
        return (self.event_types, self.partition_attributes, self.window)

    @functools.cached_property
    def graph(self) -> nx.DiGraph:
        """The shared-prefix graph of the automaton (:func:`sharp_cer.planner.psd.prefix_graph`),
        built on first use.

        >>> g = QueryGroup((0,), frozenset(), (), EVENTS, Automaton(1, frozenset({0}), ((),), {}))
        >>> g.graph.number_of_nodes()
        1
        """
        return prefix_graph(self.automaton)

    @functools.cached_property
    def psd(self) -> SharingDegrees:
        """The pattern-sharing degrees of the group's states (Sharp Alg. 2),
        bit k for ``queries[k]``; built on first use.

        >>> g = QueryGroup((5,), frozenset(), (), EVENTS, Automaton(1, frozenset({0}), ((),), {0: frozenset({5})}))
        >>> g.psd.bitmaps
        (1,)
        """
        return sharing_degrees(self.automaton, self.queries, self.graph)


@dataclass(frozen=True)
class Plan:
    """Every query of a workload, compiled.

    >>> from sharp_cer.planner import compile_plan
    >>> Plan((), (), PredicateTable(), ()).queries
    ()
    """

    queries: tuple[QueryPlan, ...]
    groups: tuple[QueryGroup, ...]
    predicates: PredicateTable
    labels: tuple[frozenset[str], ...]

    def query(self, name: str) -> QueryPlan:
        """The query called ``name``.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
        >>> compile_plan([("q", parse_and_check("SELECT * WHERE A WITHIN 1 EVENTS", s))]).query("q").id
        0
        """
        for q in self.queries:
            if q.name == name:
                return q
        raise KeyError(name)


if not TYPE_CHECKING:  # ``Group`` was the 0.1 name of a query group; it warns until 0.3
    __getattr__ = old_names(__name__, {"Group": "QueryGroup"}, globals())
