"""Choosing among the matches that end at one event: selection strategies,
LIMIT's order, and projection onto a query's SELECT list.

A *candidate* is an enumerated open complex event that passed the window and
every condition: its start and its (position, label) marks.

>>> SELECT["MAX"]([(0, ((1, 0),)), (0, ((1, 0), (2, 0)))])
[(0, ((1, 0), (2, 0)))]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from planner.plan import QueryPlan
from sharp_cer.events.match import Match

Candidate = tuple[int, tuple[tuple[int, int], ...]]
Selection = Callable[[list[Candidate]], list[Candidate]]
_INF = float("inf")


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


def end_order(m: Match) -> tuple[int, tuple[int, ...]]:
    """The output order of one query's matches ending at one event (Match
    order, without comparing the equal query and end).

    >>> [m.start for m in sorted([Match("q", 2, 5, (2, 5), {}), Match("q", 1, 5, (1, 5), {})], key=end_order)]
    [1, 2]
    """
    return (m.start, m.events)


def limit_order(m: Match) -> tuple[int, tuple[int, ...]]:
    """LIMIT keeps the latest starts, then the latest output positions.

    >>> sorted([Match("q", 1, 5, (1, 5), {}), Match("q", 2, 5, (2, 5), {})], key=limit_order)[0].start
    2
    """
    return (-m.start, tuple(-p for p in reversed(m.events)))


def project(query: QueryPlan, start: int, end: int, marks: Any, held: dict[str, list[int]]) -> Match:
    """The match a query outputs for a candidate: every marked event, none,
    or the events of its selected variables; ``held`` maps each variable to
    its positions."""
    if query.selected is None:
        events = () if query.select_none else tuple([pos for pos, _ in marks])
        return Match(query.name, start, end, events, {k: tuple(v) for k, v in held.items()})
    shown = {k: tuple(held[k]) for k in query.selected if k in held}
    return Match(query.name, start, end, tuple(sorted({p for v in shown.values() for p in v})), shown)
