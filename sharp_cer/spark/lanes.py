"""Lanes: the queries of a workload that split the stream the same way.

Queries with the same partition attributes (every attribute their
PARTITION BY names, ``Query.partition_attributes``) form one lane, which
Spark splits by partition key: each key's events go to one engine (with the
other keys of its key group, see ``worker``). A query without PARTITION BY,
or whose CONSUME BY ANY reaches across keys, belongs to the lane with no
key: all its events go to one engine. An event goes to every lane whose
queries' streams hold its type and in which it has a key (a non-null value
of every partition attribute, as in the engine); the key is the JSON list
of those values as text.

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
... [[query]]
... name = "by_j_k"
... text = "SELECT * WHERE A ; A PARTITION BY [k], [j] WITHIN 5 EVENTS"
... [[query]]
... name = "by_j_k_too"
... text = "SELECT * WHERE A ; A PARTITION BY [j, k] WITHIN 5 EVENTS"
... ''')
>>> for lane in lanes(w):
...     print(lane.queries, lane.partition_attributes, sorted(lane.event_types))
('by_k', 'by_k_too') ('k',) ['A', 'B']
('all',) () ['A', 'B']
('by_j_k', 'by_j_k_too') ('j', 'k') ['A', 'B']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sharp_cer.language import Workload


@dataclass(frozen=True)
class Lane:
    """One lane: its queries, their partition attributes (none: one
    partition) and the event types of their streams (by name)."""

    queries: tuple[str, ...]
    partition_attributes: tuple[str, ...]
    event_types: frozenset[str]


def lanes(workload: Workload, keep: Sequence[Sequence[str]] = ()) -> tuple[Lane, ...]:
    """The workload's lanes, in order of their first query (see the module
    example); with ``keep``, the partition attributes of an earlier
    version's lanes, in its order: those lanes keep their numbers (a lane
    whose queries are all gone stays, empty, so that the later ones keep
    theirs: a stream's state lives under its lanes' numbers) and new ones
    come after.

    >>> from sharp_cer.language import parse_workload
    >>> w = parse_workload('[workload]\\nname = "w"\\nschema = "CREATE STREAM S { EVENT A { k:int } }"\\n'
    ...                    '[[query]]\\nname = "q"\\ntext = "SELECT * WHERE A PARTITION BY [k]"')
    >>> [(lane.queries, lane.partition_attributes) for lane in lanes(w, keep=[(), ("k",)])]
    [((), ()), (('q',), ('k',))]
    """
    found: dict[tuple[str, ...], tuple[list[str], set[str]]] = {tuple(spec): ([], set()) for spec in keep}
    for q in workload.queries:
        query = q.checked.query
        spec = query.partition_attributes if query.consume != "ANY" else ()
        names, types = found.setdefault(spec, ([], set()))
        names.append(q.name)
        # the engine sees every event of the query's streams (contiguity and NOT read them all)
        scope = query.streams or tuple(workload.schema.streams)
        types.update(e.name for e in workload.schema.event_types(scope))
    return tuple(Lane(tuple(names), spec, frozenset(types)) for spec, (names, types) in found.items())
