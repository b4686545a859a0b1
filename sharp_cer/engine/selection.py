"""Choosing among the matches that end at one event: selection strategies,
LIMIT's order, and projection onto a query's SELECT list.

A *candidate* is an enumerated open complex event that passed the window and
every condition: its start and its (position, label) marks.

>>> SELECT["MAX"]([(0, ((1, 0),)), (0, ((1, 0), (2, 0)))])
[(0, ((1, 0), (2, 0)))]
>>> [m.start for m in sorted([Match("q", 2, 5, (2, 5), {}), Match("q", 1, 5, (1, 5), {})], key=end_order)]
[1, 2]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import attrgetter

from sharp_cer.events.match import Match, line_template
from sharp_cer.planner.plan import QueryPlan

Candidate = tuple[int, tuple[tuple[int, int], ...]]
Selection = Callable[[list[Candidate]], list[Candidate]]
_INF = float("inf")
#: line templates a projection keeps (each a few hundred bytes)
_TEMPLATES = 4096


def _select_max(candidates: list[Candidate]) -> list[Candidate]:
    """MAX: the candidates whose output positions no other's strictly contain."""
    data = [frozenset(pos for pos, _ in marks) for _, marks in candidates]
    distinct = sorted(set(data), key=len, reverse=True)
    maximal = {d for i, d in enumerate(distinct) if not any(d < o for o in distinct[:i])}
    return [c for c, d in zip(candidates, data, strict=True) if d in maximal]


def _select_first(key: Callable[[tuple[int, ...]], tuple[float, ...]]) -> Selection:
    def select(candidates: list[Candidate]) -> list[Candidate]:
        if not candidates:
            return candidates
        keys = [key(tuple(pos for pos, _ in marks)) for _, marks in candidates]
        best = min(keys)
        return [c for c, k in zip(candidates, keys, strict=True) if k == best]

    return select


#: NEXT keeps the candidate whose smallest position differing from any
#: other is its own: the least on ascending positions, where a longer one
#: beats its prefix (hence the trailing infinity); LAST the same on
#: descending positions.
SELECT: dict[str, Selection] = {
    "MAX": _select_max,
    "NEXT": _select_first(lambda positions: (*positions, _INF)),
    "LAST": _select_first(lambda positions: (*(-p for p in reversed(positions)), _INF)),
}


#: the output order of one query's matches ending at one event (Match
#: order, without comparing the equal query and end); an attrgetter, as it
#: keys every sort of matches
end_order: Callable[[Match], tuple[int, tuple[int, ...]]] = attrgetter("start", "events")


def distinct(matches: Sequence[Match]) -> list[Match]:
    """One match per interval and output events: of those that share them
    (their labels differ where their positions do not), the one with the
    smallest variables, in the order the first of each came.

    >>> [m.vars for m in distinct([Match("q", 1, 5, (1, 5), {"b": (1,)}), Match("q", 1, 5, (1, 5), {"a": (1,)})])]
    [{'a': (1,)}]
    """
    best: dict[tuple[int, tuple[int, ...]], Match] = {}
    for match in matches:
        k = (match.start, match.events)
        other = best.get(k)
        if other is None or sorted(match.vars.items()) < sorted(other.vars.items()):
            best[k] = match
    return list(best.values())


def limit_order(m: Match) -> tuple[int, tuple[int, ...]]:
    """LIMIT keeps the latest starts, then the latest output positions.

    >>> sorted([Match("q", 1, 5, (1, 5), {}), Match("q", 2, 5, (2, 5), {})], key=limit_order)[0].start
    2
    """
    return (-m.start, tuple(-p for p in reversed(m.events)))


class Projection:
    """How one query turns a candidate into the match it outputs: every
    marked event, none, or the events of its selected variables, with the
    positions each variable holds. One per query, made with its group.

    >>> from sharp_cer.planner import compile_plan
    >>> from sharp_cer.language import Schema, parse_and_check
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
    >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A AS x ; B+ AS y WITHIN 9 EVENTS", s))])
    >>> projection = Projection(plan.queries[0], [("A", "x"), ("B", "y")])  # per mark label
    >>> m = projection.match(1, 4, ((1, 0), (3, 1), (4, 1)))
    >>> m.events, m.vars
    ((1, 3, 4), {'A': (1,), 'x': (1,), 'B': (3, 4), 'y': (3, 4)})
    """

    __slots__ = ("_count", "_templates", "every_event", "name", "plain", "select_none", "selected", "variables")

    def __init__(self, query: QueryPlan, variables: Sequence[tuple[str, ...]] | Mapping[int, tuple[str, ...]]) -> None:
        self.name = query.name
        self.selected = query.selected
        self.select_none = query.select_none
        #: every candidate is a match (no strategy, LIMIT or STRICT check chooses)
        self.plain = query.strategy not in SELECT and query.query.limit is None and not query.strict_by_filter
        #: per mark label, the variables a match shows for it
        self.variables = variables
        #: a match's output events are all its marked events (SELECT *)
        self.every_event = self.selected is None and not self.select_none
        # output line templates per tenant and labels of the marks: bounded (_TEMPLATES in
        # all), as a Kleene's labels can vary without end
        self._templates: dict[str | None, dict[tuple[int, ...], str]] = {}
        self._count = 0

    def parts(self, marks: Sequence[tuple[int, int]]) -> tuple[list[int], dict[str, list[int]]]:
        """The output events of a candidate's marks and the positions each
        shown variable holds, in mark order (``match`` without the Match)."""
        held: dict[str, list[int]] = {}
        variables = self.variables
        for pos, label in marks:
            for var in variables[label]:
                holding = held.get(var)
                if holding is None:
                    held[var] = [pos]
                else:
                    holding.append(pos)
        if self.selected is None:
            return ([] if self.select_none else [pos for pos, _ in marks]), held
        shown = {k: held[k] for k in self.selected if k in held}
        return sorted({p for v in shown.values() for p in v}), shown

    def line(self, tenant: str | None, start: int, end: int, positions: Sequence[int], labels: tuple[int, ...]) -> str:
        """The output line (``Match.to_json``) of the candidate whose marks
        are ``positions`` with ``labels``, for a query that outputs every
        marked event (``every_event``).

        >>> from sharp_cer.planner import compile_plan
        >>> from sharp_cer.language import Schema, parse_and_check
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A AS x ; B+ AS y WITHIN 9 EVENTS", s))])
        >>> projection = Projection(plan.queries[0], [("A", "x"), ("B", "y")])
        >>> line = projection.line(None, 1, 4, (1, 3, 4), (0, 1, 1))
        >>> line[53:]
        '"events": [1, 3, 4], "vars": {"A": [1], "B": [3, 4], "x": [1], "y": [3, 4]}}'
        >>> line == projection.match(1, 4, ((1, 0), (3, 1), (4, 1))).to_json()
        True
        """
        template = self._templates.get(tenant, {}).get(labels)
        if template is None:
            template = self._template(tenant, labels)
        return template.format(start, end, *positions)

    def lines(
        self, tenant: str | None, end: int, rows: Iterable[tuple[int, Sequence[int], tuple[int, ...]]]
    ) -> list[str]:
        """``line`` of each (start, positions, labels) of ``rows``, in order:
        a dense query puts out a line for nearly every event, so the loop is
        here, with the tenant's templates looked up once.

        >>> from sharp_cer.planner import compile_plan
        >>> from sharp_cer.language import Schema, parse_and_check
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A AS x ; B+ AS y WITHIN 9 EVENTS", s))])
        >>> projection = Projection(plan.queries[0], [("A", "x"), ("B", "y")])
        >>> rows = [(1, (1, 3, 4), (0, 1, 1)), (2, (2, 4), (0, 1))]
        >>> projection.lines("t", 4, rows) == [projection.line("t", start, 4, at, labels) for start, at, labels in rows]
        True
        """
        templates = self._templates.get(tenant)
        if templates is None:
            templates = {}
        out = []
        for start, positions, labels in rows:
            template = templates.get(labels)
            if template is None:
                template = self._template(tenant, labels)
                templates = self._templates[tenant]  # a new dict if the bound cleared them
            out.append(template.format(start, end, *positions))
        return out

    def _template(self, tenant: str | None, labels: tuple[int, ...]) -> str:
        """The line template of marks with ``labels`` (``line_template``), kept."""
        held: dict[str, list[int]] = {}
        for k, label in enumerate(labels):
            for var in self.variables[label]:
                held.setdefault(var, []).append(k)
        if self._count >= _TEMPLATES:
            self._templates.clear()
            self._count = 0
        template = self._templates.setdefault(tenant, {})[labels] = line_template(self.name, tenant, len(labels), held)
        self._count += 1
        return template

    def match(self, start: int, end: int, marks: Sequence[tuple[int, int]]) -> Match:
        """The match of the candidate ``(start, marks)`` ending at ``end``."""
        return self.whole(start, end, *self.parts(marks))

    def whole(self, start: int, end: int, events: list[int], held: dict[str, list[int]]) -> Match:
        """The match of its ``parts``."""
        return Match(self.name, start, end, tuple(events), {k: tuple(v) for k, v in held.items()})
