"""Which events of a batch no accepted run can mark, so the engine need not
step them.

An event is in a match only if it takes a marking transition of the group's
automaton that lies on an accepting path: some run reaches the transition's
source with a start, and from its target some later events reach a final
state with an end, start and end within the group's largest window. Where
only the events of a match decide the output (``density.match_reach``), an
event on no such path changes nothing, and is skipped like an event the
group does not see.

The test runs on one batch with numpy: two passes over the automaton's
states, each a running maximum or minimum over the batch:

- forward, the latest start of a run in each state after each event;
- backward, the earliest end reachable from each state from each event on.

An automaton with a cycle of states is passed over again until nothing
changes (``ROUNDS`` at most, else every event of the batch is kept).

It over-approximates, so it only ever keeps too many events: a non-marking
move (skip-till-any's wait) needs no event; a guard is read from the
event's symbol, and cross-event conditions are left to the enumeration. An
event within the window plus the allowed lateness of its partition's first
or last candidate event in the batch may be in a match with the events of
other batches, so it is kept too.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.planner import compile_plan
>>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int }, EVENT C { k:int } }")
>>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B+ ; C WITHIN 3 EVENTS", s))])
>>> test = Relevance.of(plan.groups[0], plan.queries, 0)

The events A B B C A B B B B C, positions 0 to 9, as symbols: one bit per
type. Only the first four are in a match: the second A's run has no C
within 3 events. The events near the batch's edges (within 3 of position 0
or 9) are kept, as they may match with other batches' events:

>>> bits = [0b001, 0b010, 0b100]   # A, B, C: the atoms of the automaton
>>> symbols = np.array([0, 1, 1, 2, 0, 1, 1, 1, 1, 2])
>>> values = np.arange(10)
>>> test.idle(bits, symbols, values, None).tolist()
[False, False, False, False, True, True, False, False, False, False]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from sharp_cer.planner.automaton import Automaton
from sharp_cer.planner.plan import QueryGroup, QueryPlan
from sharp_cer.planner.predicates import Guard

from .density import match_reach

#: Automata with more transitions are not tested: a pass costs a numpy
#: operation over the batch per transition, more than the steps it saves
#: (a large shared plan relies on the skip index alone).
MOST_TRANSITIONS = 64
#: Passes over a cycle of states: a run that goes round a cycle keeps an
#: older start, so the latest starts settle at once; an automaton whose do
#: not settle in this many keeps every event of the batch.
ROUNDS = 4
#: Integer window values must be exact in float64 after the partitions'
#: offsets (below 2**53).
_EXACT = float(1 << 52)
_INF = float("inf")


class Relevance:
    """The relevance test of one group (see the module example): its
    automaton's transitions, the window, and a table of which marking
    transitions each symbol fires."""

    def __init__(self, automaton: Automaton, bound: float, inclusive: bool, margin: float) -> None:
        self.bound, self.inclusive, self.margin = bound, inclusive, margin
        self.order, cyclic = _order(automaton)
        self.starts = [s in automaton.initial for s in range(automaton.n_states)]
        self.ends = [s in automaton.finals for s in range(automaton.n_states)]
        marks = [t for ts in automaton.transitions for t in ts if t.label is not None]
        self.guards: list[Guard] = [t.guard for t in marks]
        self.moves = [(t.source, t.target) for t in marks]
        # non-marking moves: a run may wait in either state
        self.waits = sorted(
            {
                (t.source, t.target)
                for ts in automaton.transitions
                for t in ts
                if t.label is None and t.source != t.target
            }
        )
        # without cycles, one round settles every state; with them, a round
        # more shows it
        self.rounds = ROUNDS if cyclic else 1
        self._fires = np.zeros((len(marks), 0), dtype=bool)  # transition x symbol
        #: of the events the last test kept, how many it kept only because
        #: they are near the batch's edges (or a cycle did not settle)
        self.unsure = 0

    @staticmethod
    def of(group: QueryGroup, queries: Sequence[QueryPlan], lateness: float) -> Relevance | None:
        """The test for ``group`` (None: it does not apply).

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.planner import compile_plan
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
        >>> def test(text):
        ...     plan = compile_plan([("q", parse_and_check(text, s))])
        ...     return Relevance.of(plan.groups[0], plan.queries, 0)
        >>> test("SELECT * WHERE A ; B WITHIN 5 EVENTS").bound
        5
        >>> test("SELECT * WHERE A ; B WITHIN 5 EVENTS LIMIT 1") is None
        True
        """
        reach = match_reach(group, queries, lateness)
        automaton = group.automaton
        if reach is None or automaton.transition_count() > MOST_TRANSITIONS:
            return None
        if any(t.label is None for s in automaton.initial for t in automaton.transitions[s]):
            return None  # a run would start at an event it does not mark
        return Relevance(automaton, *reach)

    def idle(
        self,
        bits: Sequence[int],
        symbols: npt.NDArray[np.int64],
        values: npt.NDArray[Any],
        codes: npt.NDArray[np.int64] | None,
    ) -> npt.NDArray[np.bool_] | None:
        """Which of these events (in stream order: their symbol ids, whose
        predicate bits are ``bits``, their window values and their partition
        codes, None for one partition) no accepted run marks. None: some
        value is NaN or the partitions' values cannot be told apart exactly,
        so the test does not apply."""
        table = self._table(bits)
        reads = np.any(table, axis=0)
        rows = reads[symbols].nonzero()[0]  # the events some marking transition reads
        idle = np.ones(len(symbols), dtype=bool)
        self.unsure = 0
        if len(rows) == 0:
            return idle
        v = values[rows].astype(np.float64)
        if np.isnan(v).any() or np.abs(v).max() >= _EXACT:
            return None
        fires = table[:, symbols[rows]]
        order = None
        new = np.zeros(len(rows), dtype=bool)
        new[0] = True
        if codes is not None:
            if not np.array_equal(v, np.floor(v)):
                return None  # the partitions' offsets below would round them
            c = codes[rows]
            low = int(c.min())
            # numpy sorts 16-bit keys by radix (as ``density.far``): the same stable order, far sooner
            key = (c - low).astype(np.uint16) if int(c.max()) - low < 1 << 16 else c
            order = np.argsort(key, kind="stable")  # each partition's events stay in stream order
            c = c[order]
            new[1:] = c[1:] != c[:-1]
            v, fires = v[order], fires[:, order]
        if (np.diff(v)[~new[1:]] < 0).any():
            return None  # values fall within a partition: the edges below would not hold
        block = np.cumsum(new) - 1
        if order is not None:
            moved = _apart(v, block, self.bound)
            if moved is None:
                return None
            v = moved
        marked, near = self._marked(v, fires), _near_edges(v, new, block, self.margin)
        kept = near | marked if marked is not None else np.ones(len(v), dtype=bool)
        self.unsure = int(np.count_nonzero(kept if marked is None else near & ~marked))
        if order is not None:
            kept[order] = kept.copy()
        idle[rows[kept]] = False
        return idle

    def _table(self, bits: Sequence[int]) -> npt.NDArray[np.bool_]:
        """Which marking transition each symbol fires (symbol -1: none)."""
        known = self._fires.shape[1] - 1
        if known < len(bits):
            fresh = bits[max(known, 0) :]
            grown = np.array([[g.holds(b) for b in fresh] for g in self.guards], dtype=bool)
            grown = grown.reshape(len(self.guards), len(fresh))
            old = self._fires[:, :-1] if known >= 0 else self._fires
            none = np.zeros((len(self.guards), 1), dtype=bool)
            self._fires = np.concatenate((old, grown, none), axis=1)
        return self._fires

    def _marked(self, v: npt.NDArray[np.float64], fires: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_] | None:
        """Which events take a marking transition on an accepting path in
        the window (None: a cycle did not settle)."""
        m, n = len(v), len(self.order)
        rows = [f.nonzero()[0] for f in fires]  # per transition, the events it reads: few
        # per state: the latest start of a run there after each event, the
        # earliest end reachable from there from each event on
        latest, earliest = [np.full(m, -_INF)] * n, [np.full(m, _INF)] * n
        for _ in range(self.rounds):
            settled = True
            for q in self.order:
                reached = np.full(m, -_INF)
                for p, target in self.waits:
                    if target == q:
                        reached = np.maximum(reached, latest[p])
                for t, (p, target) in enumerate(self.moves):
                    if target == q and (p != q or self.starts[p]):
                        at = rows[t]
                        reached[at] = np.maximum(reached[at], self._start(p, at, v, latest))
                found = np.maximum.accumulate(reached)
                if not np.array_equal(found, latest[q]):
                    latest[q], settled = found, False
            if settled or self.rounds == 1:
                break
        else:
            return None  # a cycle that would not settle
        for _ in range(self.rounds):
            settled = True
            for p in reversed(self.order):
                reached = np.full(m, _INF)
                for source, q in self.waits:
                    if source == p:
                        reached = np.minimum(reached, earliest[q])
                for t, (source, q) in enumerate(self.moves):
                    if source == p and (q != p or self.ends[q]):
                        at = rows[t]
                        reached[at] = np.minimum(reached[at], self._end(q, at, v, earliest))
                found = np.minimum.accumulate(reached[::-1])[::-1]
                if not np.array_equal(found, earliest[p]):
                    earliest[p], settled = found, False
            if settled or self.rounds == 1:
                break
        else:
            return None
        marked = np.zeros(m, dtype=bool)
        for t, (p, q) in enumerate(self.moves):
            at = rows[t]
            span = self._end(q, at, v, earliest) - self._start(p, at, v, latest)
            marked[at[span <= self.bound if self.inclusive else span < self.bound]] = True
        return marked

    def _start(
        self, p: int, at: npt.NDArray[np.intp], v: npt.NDArray[np.float64], latest: list[npt.NDArray[np.float64]]
    ) -> Any:
        """The latest start of a run leaving state ``p`` at the events ``at``."""
        before = latest[p][at - 1]
        before[at == 0] = -_INF  # (index -1 read the last event)
        return np.maximum(before, v[at]) if self.starts[p] else before

    def _end(
        self, q: int, at: npt.NDArray[np.intp], v: npt.NDArray[np.float64], earliest: list[npt.NDArray[np.float64]]
    ) -> Any:
        """The earliest end of a run entering state ``q`` at the events ``at``."""
        after = earliest[q][np.minimum(at + 1, len(v) - 1)]
        after[at == len(v) - 1] = _INF  # (the last event has none after it)
        return np.minimum(after, v[at]) if self.ends[q] else after


def _order(automaton: Automaton) -> tuple[list[int], bool]:
    """The states, each after every state that reaches it and is not reached
    from it, and whether some states reach each other (from the closure of
    the transition relation: the automata tested are small)."""
    n = automaton.n_states
    reach = np.eye(n, dtype=np.int32)
    for ts in automaton.transitions:
        for t in ts:
            reach[t.source, t.target] = 1
    while True:
        wider = (reach @ reach > 0).astype(np.int32)
        if np.array_equal(wider, reach):
            break
        reach = wider
    # a state reached from another it does not reach has strictly more states reaching it
    ancestors = reach.sum(axis=0)
    cyclic = bool(((reach & reach.T) > np.eye(n, dtype=np.int32)).any())
    return sorted(range(n), key=lambda s: int(ancestors[s])), cyclic


def _apart(v: npt.NDArray[np.float64], block: npt.NDArray[np.int64], bound: float) -> npt.NDArray[np.float64] | None:
    """Partition ``block``'s values moved apart by more than their range plus
    the window, so running extremes across partitions never fit a window."""
    spread = float(v.max() - v.min()) + float(bound) + 1.0
    moved = v + block * spread
    return None if np.abs(moved).max() >= _EXACT else moved


def _near_edges(
    v: npt.NDArray[np.float64], new: npt.NDArray[np.bool_], block: npt.NDArray[np.int64], margin: float
) -> npt.NDArray[np.bool_]:
    """Which values lie within ``margin`` of their partition's first or last
    (``new`` marks each partition's first event, ``block`` numbers them)."""
    starts = np.flatnonzero(new)
    ends = np.concatenate((starts[1:], [len(v)])) - 1
    near: npt.NDArray[np.bool_] = (v - v[starts][block] <= margin) | (v[ends][block] - v <= margin)
    return near
