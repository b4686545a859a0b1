"""Pattern-sharing degrees (Sharp §4.1, Alg. 2) over a group's shared automaton.

The shared-prefix graph has one node per state of the group's automaton and
an edge per move between two states (a state's own skip loop is left out).
A node's *PSD* is a bitmap over the group's queries (bit k for the group's
k-th query): the OR of its successors' bitmaps, with a query's bit set where
the query accepts. It says which queries a partial match in that state can
still become a match of. Loops (Kleene) make the graph cyclic, so the bitmaps
are propagated over its strongly connected parts, sinks first; on an acyclic
plan that is exactly Sharp's depth-first rule.

Nodes with equal bitmaps form a cluster, found from its bitmap with one dict
lookup. Bitmaps are Python ints, so a group of 10,000 queries needs nothing
special.

>>> from sharp_cer.planner.automaton import Automaton, Transition
>>> from sharp_cer.planner.predicates import Atom
>>> def move(s, a, t):
...     return Transition(s, Atom(a), a, t)
>>> # Sharp's Fig. 2: SEQ(A,B,C,D), SEQ(A,B,E,F), SEQ(A,B,E,G) sharing A and AB, and ABE by the last two
>>> moves = [[move(0, 0, 1)], [move(1, 1, 2)], [move(2, 2, 3), move(2, 4, 5)], [move(3, 3, 4)], [],
...          [move(5, 5, 6), move(5, 6, 7)], [], []]
>>> cea = Automaton(8, frozenset({0}), tuple(map(tuple, moves)), {4: frozenset({10}), 6: frozenset({11}),
...                 7: frozenset({12})})
>>> psd = sharing_degrees(cea, (10, 11, 12))
>>> [bin(b) for b in psd.bitmaps]
['0b111', '0b111', '0b111', '0b1', '0b1', '0b110', '0b10', '0b100']
>>> psd.cluster(0b111).states, psd.cluster(0b110).states, psd.cluster(0b1000)
((0, 1, 2), (5,), None)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .automaton import Automaton

if TYPE_CHECKING:
    import networkx as nx


@dataclass(frozen=True)
class Cluster:
    """The states whose partial matches can still complete exactly the
    queries of ``bitmap``.

    >>> Cluster(0b11, (1, 2)).states
    (1, 2)
    """

    bitmap: int
    states: tuple[int, ...]


@dataclass(frozen=True)
class SharingDegrees:
    """A group's PSD: ``bitmaps[state]`` over ``queries`` (bit k is
    ``queries[k]``), and the clusters of states with equal bitmaps. States
    no query can complete from (bitmap 0) form no cluster.

    >>> SharingDegrees((7,), (1, 0), (Cluster(1, (0,)),)).bit(7)
    1
    """

    queries: tuple[int, ...]
    bitmaps: tuple[int, ...]
    clusters: tuple[Cluster, ...]
    _index: dict[int, Cluster] = field(default_factory=dict, compare=False, repr=False)

    _bits: dict[int, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.update((c.bitmap, c) for c in self.clusters)
        self._bits.update((q, 1 << k) for k, q in enumerate(self.queries))

    def bit(self, query: int) -> int:
        """The bit of a query (by its id in the plan), in constant time.

        >>> SharingDegrees((4, 9), (), ()).bit(9)
        2
        """
        return self._bits[query]

    def cluster(self, bitmap: int) -> Cluster | None:
        """The cluster of a bitmap, in constant time (see the module example)."""
        return self._index.get(bitmap)

    def queries_of(self, bitmap: int) -> tuple[int, ...]:
        """The query ids whose bits are set.

        >>> SharingDegrees((4, 9, 11), (), ()).queries_of(0b101)
        (4, 11)
        """
        return tuple(q for k, q in enumerate(self.queries) if bitmap >> k & 1)


def prefix_graph(automaton: Automaton) -> nx.DiGraph:
    """The shared-prefix graph: a node per state (attributes ``initial``,
    ``prefix``: a marking move enters it, ``queries``: the queries it
    accepts), an edge per pair of distinct states joined by moves (attribute
    ``moves``: their (guard, label) pairs).

    >>> from sharp_cer.planner.automaton import Transition
    >>> from sharp_cer.planner.predicates import TRUE
    >>> cea = Automaton(2, frozenset({0}), ((Transition(0, TRUE, 0, 1),), (Transition(1, TRUE, None, 1),)),
    ...                 {1: frozenset({3})})
    >>> g = prefix_graph(cea); sorted(g.edges), g.nodes[1]
    ([(0, 1)], {'initial': False, 'prefix': True, 'queries': frozenset({3})})
    """
    import networkx as nx  # here, not at the top: its import costs 0.1-0.4 s that matching never needs

    graph = nx.DiGraph()
    entered = {t.target for ts in automaton.transitions for t in ts if t.label is not None}
    for state in range(automaton.n_states):
        graph.add_node(
            state,
            initial=state in automaton.initial,
            prefix=state in entered,
            queries=automaton.finals.get(state, frozenset()),
        )
    for ts in automaton.transitions:
        for t in ts:
            if t.source != t.target:
                if not graph.has_edge(t.source, t.target):
                    graph.add_edge(t.source, t.target, moves=[])
                graph.edges[t.source, t.target]["moves"].append((t.guard, t.label))
    return graph


def sharing_degrees(automaton: Automaton, queries: tuple[int, ...], graph: nx.DiGraph | None = None) -> SharingDegrees:
    """Sharp's Alg. 2 on a group's automaton: bitmaps, then clusters (see
    the module example). ``queries`` are the group's query ids, in bit
    order; ``graph`` is its :func:`prefix_graph` if already built."""
    import networkx as nx  # here, not at the top: its import costs 0.1-0.4 s that matching never needs

    graph = prefix_graph(automaton) if graph is None else graph
    bit = {q: 1 << k for k, q in enumerate(queries)}
    dag = nx.condensation(graph)
    part_bitmap: dict[int, int] = {}
    for part in reversed(list(nx.topological_sort(dag))):
        bitmap = 0
        for state in dag.nodes[part]["members"]:
            for q in automaton.finals.get(state, ()):
                bitmap |= bit[q]
        for successor in dag.successors(part):
            bitmap |= part_bitmap[successor]
        part_bitmap[part] = bitmap
    bitmaps = tuple(part_bitmap[dag.graph["mapping"][s]] for s in range(automaton.n_states))
    members: dict[int, list[int]] = {}
    for state, bitmap in enumerate(bitmaps):
        if bitmap:
            members.setdefault(bitmap, []).append(state)
    return SharingDegrees(queries, bitmaps, tuple(Cluster(b, tuple(s)) for b, s in members.items()))
