"""Complex event automata (CEL Appendix C, CORE §3) with labelled marks.

A transition reads one event and either *marks* it (the event joins the
output, with a label naming the variables it is bound to) or does not (a
skipped event, or the event of ``NOT(F)``). States are small integers. Final
states carry the ids of the queries they accept, so one automaton serves many
queries and the engine tells their matches apart by the final states a run
reaches.

Automata are built with ε-moves (:class:`AutomatonBuilder`, Thompson style)
and then made ε-free (:meth:`AutomatonBuilder.build`), which is what the
engine runs.

>>> from sharp_cer.planner.predicates import TRUE
>>> b = AutomatonBuilder()
>>> s, e = b.state(), b.state()
>>> b.read(s, TRUE, 0, e)
>>> cea = b.build({s}, {e: 7})
>>> cea.initial, [t.label for t in cea.transitions[cea.initial_list[0]]], cea.finals
(frozenset({0}), [0], {1: frozenset({7})})
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from .predicates import Guard


@dataclass(frozen=True)
class Transition:
    """Read one event satisfying ``guard``; ``label`` is the index of the
    variable set the event is marked with, or None for a non-marking move.

    >>> from sharp_cer.planner.predicates import TRUE
    >>> Transition(0, TRUE, None, 0).label is None
    True
    """

    source: int
    guard: Guard
    label: int | None
    target: int


@dataclass(frozen=True)
class Automaton:
    """An ε-free complex event automaton over many queries.

    ``transitions[p]`` lists the moves out of state ``p``; ``initial`` holds
    every query's initial state; ``finals`` maps a final state to the ids of
    the queries it accepts.

    >>> Automaton(2, frozenset({0}), ((), ()), {1: frozenset({0})}).finals[1]
    frozenset({0})
    """

    n_states: int
    initial: frozenset[int]
    transitions: tuple[tuple[Transition, ...], ...]
    finals: dict[int, frozenset[int]]

    @property
    def initial_list(self) -> list[int]:
        """The initial states, sorted.

        >>> Automaton(3, frozenset({2, 0}), ((), (), ()), {}).initial_list
        [0, 2]
        """
        return sorted(self.initial)

    def transition_count(self) -> int:
        """The number of transitions.

        >>> Automaton(1, frozenset({0}), ((),), {}).transition_count()
        0
        """
        return sum(len(ts) for ts in self.transitions)


@dataclass
class AutomatonBuilder:
    """States, reading moves and ε-moves, in construction.

    >>> AutomatonBuilder().n_states
    0
    """

    n_states: int = 0
    moves: list[Transition] = field(default_factory=list)
    epsilon: dict[int, list[int]] = field(default_factory=dict)

    def state(self) -> int:
        """A fresh state.

        >>> b = AutomatonBuilder(); b.state(), b.state()
        (0, 1)
        """
        self.n_states += 1
        return self.n_states - 1

    def read(self, source: int, guard: Guard, label: int | None, target: int) -> None:
        """A move reading one event.

        >>> from sharp_cer.planner.predicates import TRUE
        >>> b = AutomatonBuilder(); b.read(0, TRUE, None, 0); len(b.moves)
        1
        """
        self.moves.append(Transition(source, guard, label, target))

    def link(self, source: int, target: int) -> None:
        """An ε-move.

        >>> b = AutomatonBuilder(); b.link(0, 1); b.epsilon
        {0: [1]}
        """
        self.epsilon.setdefault(source, []).append(target)

    def _closure(self, state: int) -> list[int]:
        seen = {state}
        order = [state]
        stack = [state]
        while stack:
            for nxt in self.epsilon.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    order.append(nxt)
                    stack.append(nxt)
        return order

    def include(self, other: AutomatonBuilder, start: int, end: int) -> tuple[int, int]:
        """Copy every state and move of ``other`` into this builder; return
        where ``start`` and ``end`` went.

        >>> from sharp_cer.planner.predicates import TRUE
        >>> a, b = AutomatonBuilder(), AutomatonBuilder()
        >>> a.read(a.state(), TRUE, 0, a.state()); _ = b.state()
        >>> b.include(a, 0, 1), b.n_states
        ((1, 2), 3)
        """
        offset = self.n_states
        self.n_states += other.n_states
        for m in other.moves:
            self.read(m.source + offset, m.guard, m.label, m.target + offset)
        for source, targets in other.epsilon.items():
            for target in targets:
                self.link(source + offset, target + offset)
        return start + offset, end + offset

    def mark_first(self, lo: int, entry: int, relabel: Callable[[int], int]) -> int:
        """Give the first marking move of every run through a fragment its
        own label; return the fragment's new entry.

        The fragment is the states from ``lo`` on, entered at ``entry``. The
        states a run reaches from the entry before marking anything are
        copied; from the copies, marking moves carry ``relabel(label)``, so
        the first event of every pass through the fragment is told apart
        from the others (its runs' later moves are the original ones).

        >>> from sharp_cer.planner.predicates import TRUE
        >>> b = AutomatonBuilder()
        >>> s, e = b.state(), b.state()
        >>> b.read(s, TRUE, 0, e); b.link(e, s)  # (one event)+ without skips
        >>> entry = b.mark_first(0, s, lambda label: label + 10)
        >>> cea = b.build({entry}, {e: 0})
        >>> sorted((t.source, t.label, t.target) for ts in cea.transitions for t in ts)
        [(0, 10, 1), (1, 0, 1)]
        """
        region = {entry}
        stack = [entry]
        unmarked: dict[int, list[Transition]] = {}
        for move in self.moves:
            if move.source >= lo and move.label is None:
                unmarked.setdefault(move.source, []).append(move)
        while stack:
            state = stack.pop()
            for nxt in [*self.epsilon.get(state, ()), *(m.target for m in unmarked.get(state, ()))]:
                if nxt not in region:
                    region.add(nxt)
                    stack.append(nxt)
        copy = {state: self.state() for state in sorted(region)}
        for state in sorted(region):
            for nxt in self.epsilon.get(state, ()):
                self.link(copy[state], copy[nxt])
        for move in [m for m in self.moves if m.source in region]:
            if move.label is None:
                self.read(copy[move.source], move.guard, None, copy[move.target])
            else:
                self.read(copy[move.source], move.guard, relabel(move.label), move.target)
        return copy[entry]

    def build(self, initial: set[int], accepting: dict[int, int]) -> Automaton:
        """Remove ε-moves and unreachable states, renumbering states densely,
        then merge bisimilar states (see :func:`merge_bisimilar`).

        ``accepting`` maps each query's end state to the query's id. A state
        is final for a query when its ε-closure reaches that end state.

        >>> from sharp_cer.planner.predicates import TRUE
        >>> b = AutomatonBuilder()
        >>> s, mid, e = b.state(), b.state(), b.state()
        >>> b.read(s, TRUE, 0, mid); b.link(mid, e)
        >>> b.build({s}, {e: 3}).finals  # mid is final through its ε-move
        {1: frozenset({3})}
        """
        return merge_bisimilar(self.epsilon_free(initial, accepting))

    def epsilon_free(self, initial: set[int], accepting: dict[int, int]) -> Automaton:
        """:meth:`build` without the merge: states are numbered in breadth-first
        order from the initial states, so a move to a smaller number closes a
        cycle (what :func:`sharp_cer.planner.sharing.share` relies on).

        >>> from sharp_cer.planner.predicates import TRUE
        >>> b = AutomatonBuilder()
        >>> s, e = b.state(), b.state()
        >>> b.read(s, TRUE, 0, e); b.link(e, s)  # (one event):+
        >>> cea = b.epsilon_free({s}, {e: 0})
        >>> [(t.source, t.target) for ts in cea.transitions for t in ts], cea.finals
        ([(0, 1), (1, 1)], {1: frozenset({0})})
        """
        out_moves: dict[int, list[Transition]] = {}
        for move in self.moves:
            out_moves.setdefault(move.source, []).append(move)
        closures: dict[int, list[int]] = {}

        def closure(state: int) -> list[int]:
            if state not in closures:
                closures[state] = self._closure(state)
            return closures[state]

        number: dict[int, int] = {}
        order: list[int] = []
        for s in sorted(initial):
            number[s] = len(order)
            order.append(s)
        i = 0
        while i < len(order):
            for r in closure(order[i]):
                for move in out_moves.get(r, ()):
                    if move.target not in number:
                        number[move.target] = len(order)
                        order.append(move.target)
            i += 1
        transitions = []
        finals: dict[int, frozenset[int]] = {}
        for s in order:
            seen: set[tuple[int, int | None, Guard]] = set()
            moves = []
            for r in closure(s):
                for move in out_moves.get(r, ()):
                    key = (number[move.target], move.label, move.guard)
                    if key not in seen:
                        seen.add(key)
                        moves.append(Transition(number[s], move.guard, move.label, number[move.target]))
            transitions.append(tuple(moves))
            queries = frozenset(accepting[r] for r in closure(s) if r in accepting)
            if queries:
                finals[number[s]] = queries
        return Automaton(len(order), frozenset(number[s] for s in initial), tuple(transitions), finals)


def merge_bisimilar(automaton: Automaton) -> Automaton:
    """One state per class of bisimilar states (same queries accepted, same
    moves into the same classes): removing ε-moves copies the skip state of
    ``p ; q`` into the state after p, and without this merge both would be
    tracked, doubling the work per event.

    >>> from sharp_cer.planner.predicates import TRUE
    >>> b = AutomatonBuilder()
    >>> s, skip, e = b.state(), b.state(), b.state()
    >>> b.read(s, TRUE, 0, skip); b.link(skip, e); b.read(e, TRUE, None, e)
    >>> b.epsilon_free({s}, {e: 0}).n_states, merge_bisimilar(b.epsilon_free({s}, {e: 0})).n_states
    (3, 2)
    """
    merged, _ = merge_bisimilar_map(automaton)
    return merged


def merge_bisimilar_map(automaton: Automaton) -> tuple[Automaton, list[int]]:
    """``merge_bisimilar``, and the merged state of each state.

    >>> from sharp_cer.planner.predicates import TRUE
    >>> b = AutomatonBuilder()
    >>> s, skip, e = b.state(), b.state(), b.state()
    >>> b.read(s, TRUE, 0, skip); b.link(skip, e); b.read(e, TRUE, None, e)
    >>> merge_bisimilar_map(b.epsilon_free({s}, {e: 0}))[1]
    [0, 1, 1]
    """
    n = automaton.n_states
    # guards hash deeply: number them once, so refining compares small tuples
    guard_ids: dict[object, int] = {}
    moves = [
        [(guard_ids.setdefault(t.guard, len(guard_ids)), t.label, t.target) for t in ts] for ts in automaton.transitions
    ]
    first: dict[frozenset[int], int] = {}
    classes = [first.setdefault(automaton.finals.get(s, frozenset()), len(first)) for s in range(n)]
    count = -1
    while True:
        signatures = [
            (classes[s], frozenset([(g, label, classes[target]) for g, label, target in moves[s]])) for s in range(n)
        ]
        ids: dict[object, int] = {}
        classes = [ids.setdefault(sig, len(ids)) for sig in signatures]
        if len(ids) == count:
            break
        count = len(ids)
    if count == n:
        return automaton, list(range(n))
    # renumber by first occurrence so initial states keep the smallest ids
    order: dict[int, int] = {}
    for s in range(n):
        order.setdefault(classes[s], len(order))
    transitions: list[tuple[Transition, ...]] = [() for _ in range(count)]
    for s in range(n):
        c = order[classes[s]]
        if not transitions[c]:
            seen = dict.fromkeys((t.guard, t.label, order[classes[t.target]]) for t in automaton.transitions[s])
            transitions[c] = tuple(Transition(c, g, label, target) for g, label, target in seen)
    finals = {order[classes[s]]: queries for s, queries in automaton.finals.items()}
    merged = Automaton(count, frozenset(order[classes[s]] for s in automaton.initial), tuple(transitions), finals)
    return merged, [order[c] for c in classes]


def drop_unmarked(automaton: Automaton) -> Automaton:
    """The automaton without its non-marking moves: a run then marks every
    event from its start to its end, which is the STRICT strategy (CEL §5).

    >>> from sharp_cer.planner.predicates import TRUE
    >>> b = AutomatonBuilder()
    >>> s, skip, e = b.state(), b.state(), b.state()
    >>> b.read(s, TRUE, 0, skip); b.read(skip, TRUE, None, skip); b.read(skip, TRUE, 0, e)
    >>> drop_unmarked(b.build({s}, {e: 0})).transition_count()
    2
    """
    moves = tuple(tuple(t for t in ts if t.label is not None) for ts in automaton.transitions)
    return merge_bisimilar(replace(automaton, transitions=moves))


def relabel(automaton: Automaton, labels: Callable[[int], int | None]) -> Automaton:
    """The automaton with every marking move's label replaced by
    ``labels(label)`` (None makes the move non-marking).

    >>> from sharp_cer.planner.predicates import TRUE
    >>> b = AutomatonBuilder()
    >>> s, e = b.state(), b.state()
    >>> b.read(s, TRUE, 4, e)
    >>> [t.label for t in relabel(b.build({s}, {e: 0}), lambda label: None).transitions[0]]
    [None]
    """
    moves = tuple(
        tuple(t if t.label is None else replace(t, label=labels(t.label)) for t in ts) for ts in automaton.transitions
    )
    return merge_bisimilar(replace(automaton, transitions=moves))
