"""Alerts: a match with its events' attributes, grouped by variable, each
event once. One record shape everywhere (``sharp-cer match --with-events``,
``Detector.alerts``, Spark's ``matches_with_events``).

A variable's events are often also another's: an event type is a variable of
its own (``HB AS h`` binds HB and h to the same event) and ``(A ; B) AS x``
holds A's and B's events. Each event is listed once, under the most specific
variable that holds it: a name given with AS before an event type's name,
then the variable holding the fewest events, then the first name in order.

>>> from sharp_cer.events.match import Match
>>> m = Match("silent", 4, 4, (4,), {"HB": (4,), "h": (4,)}, deadline=9)
>>> rows = {4: {"type": "HB", "position": 4, "dev": 7, "t": 5}}
>>> grouped = by_variable(m, rows, {"HB"})
>>> grouped
{'h': [{'type': 'HB', 'position': 4, 'dev': 7, 't': 5}]}
>>> record(m, grouped)["attributes"] == grouped, record(m, grouped)["deadline"]
(True, 9)
>>> flat(m, grouped, ("dev", "t"))
[{'query': 'silent', 'tenant': None, 'start': 4, 'end': 4, 'deadline': 9, 'variable': 'h', 'position': 4, \
'type': 'HB', 'dev': 7, 't': 5}]
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from .match import Match

#: the columns of the flat form (CSV, Parquet, Spark) before the attributes
FLAT_HEAD = ("query", "tenant", "start", "end", "deadline", "variable", "position", "type")


def owner(holders: Sequence[str], sizes: Mapping[str, int], type_names: Collection[str]) -> str:
    """The variable an event is listed under, of those holding it (see the module).

    >>> owner(["A", "x", "a"], {"A": 1, "x": 2, "a": 1}, {"A"})
    'a'
    """
    return min(holders, key=lambda v: (v in type_names, sizes[v], v))


def by_variable(
    match: Match, rows: Mapping[int, Mapping[str, Any]], type_names: Collection[str]
) -> dict[str, list[dict[str, Any]]]:
    """Each variable of ``match`` with the events listed under it (``rows``:
    each position's event as a dict: type, position and attributes), in
    stream order; variables sorted by name."""
    sizes = {v: len(p) for v, p in match.vars.items()}
    holders: dict[int, list[str]] = {}
    for variable, positions in match.vars.items():
        for p in positions:
            holders.setdefault(p, []).append(variable)
    grouped: dict[str, list[dict[str, Any]]] = {}
    for p in sorted(holders):
        grouped.setdefault(owner(holders[p], sizes, type_names), []).append(dict(rows[p]))
    return dict(sorted(grouped.items()))


def record(match: Match, grouped: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The match as its JSON line has it, with ``attributes``: the events by variable."""
    out: dict[str, Any] = {
        "query": match.query,
        "tenant": match.tenant,
        "start": match.start,
        "end": match.end,
        "events": list(match.events),
        "vars": {k: list(v) for k, v in sorted(match.vars.items())},
    }
    if match.deadline is not None:
        out["deadline"] = match.deadline
    out["attributes"] = dict(grouped)
    return out


def flat(match: Match, grouped: Mapping[str, list[dict[str, Any]]], attributes: Sequence[str]) -> list[dict[str, Any]]:
    """The flat form: one row per event of the match (``FLAT_HEAD``, then
    every name of ``attributes``, None where the event has no such attribute)."""
    head = {
        "query": match.query,
        "tenant": match.tenant,
        "start": match.start,
        "end": match.end,
        "deadline": match.deadline,
    }
    rows = []
    for variable, events in grouped.items():
        for event in events:
            row = {**head, "variable": variable, "position": event["position"], "type": event["type"]}
            row.update({a: event.get(a) for a in attributes})
            rows.append(row)
    rows.sort(key=lambda r: r["position"])
    return rows
