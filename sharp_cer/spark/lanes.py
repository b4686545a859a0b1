"""Lanes: the queries of a workload that split the stream the same way.

Queries with the same PARTITION BY lists form one lane, which Spark splits
by partition key: each key's events go to one engine (with the other keys
of its key group, see ``worker``). A query without
PARTITION BY, or whose CONSUME BY ANY reaches across keys, belongs to the
lane with no key: all its events go to one engine. An event goes to every
lane whose queries' streams hold its type and in which it has a key (the first PARTITION BY
list whose attributes it all has, as in the engine); the key is the JSON
list of those attributes' values as text.

>>> from sharp_cer.language import parse_workload
>>> w = parse_workload('''
... [workload]
... name = "w"
... schema = "CREATE STREAM S { EVENT A { k:int, j:int }, EVENT B { k:int } }"
... [[query]]
... name = "by_k"
... text = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 5 EVENTS"
... [[query]]
... name = "all"
... text = "SELECT * WHERE A ; A WITHIN 5 EVENTS"
... [[query]]
... name = "by_k_too"
... text = "SELECT * WHERE B ; B PARTITION BY [k] WITHIN 5 EVENTS"
... ''')
>>> [(lane.queries, lane.partition_by, sorted(lane.event_types)) for lane in lanes(w)]
[(('by_k', 'by_k_too'), (('k',),), ['A', 'B']), (('all',), (), ['A', 'B'])]
"""

from __future__ import annotations

from dataclasses import dataclass

from sharp_cer.language import Workload


@dataclass(frozen=True)
class Lane:
    """One lane: its queries, their PARTITION BY lists (empty: one
    partition) and the event types of their streams (by name)."""

    queries: tuple[str, ...]
    partition_by: tuple[tuple[str, ...], ...]
    event_types: frozenset[str]


def lanes(workload: Workload) -> tuple[Lane, ...]:
    """The workload's lanes, in order of their first query (see the module example)."""
    found: dict[tuple[tuple[str, ...], ...], tuple[list[str], set[str]]] = {}
    for q in workload.queries:
        query = q.checked.query
        spec = query.partition_by if query.consume != "ANY" else ()
        names, types = found.setdefault(spec, ([], set()))
        names.append(q.name)
        # the engine sees every event of the query's streams (contiguity and NOT read them all)
        scope = query.streams or tuple(workload.schema.streams)
        types.update(e.name for e in workload.schema.event_types(scope))
    return tuple(Lane(tuple(names), spec, frozenset(types)) for spec, (names, types) in found.items())
