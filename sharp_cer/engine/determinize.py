"""I/O-determinization on the fly (CORE §5).

A deterministic state is a set of automaton states, interned as a small
integer. For a deterministic state and an event's predicate bit vector, the
step gives the target of every marking label and the non-marking target;
steps are computed on first use and kept in a bounded LRU cache.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.planner import compile_plan
>>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
>>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 3 EVENTS", s))])
>>> det = Determinizer(plan.groups[0].automaton, capacity=8)
>>> marks, skip = det.step(det.initial, 0b01)   # an A
>>> [label for label, _ in marks], skip
([0], -1)
>>> _ = det.step(det.initial, 0b01); det.hits, det.misses, det.hit_rate
(1, 1, 0.5)
"""

from __future__ import annotations

from collections import OrderedDict

from sharp_cer.errors import EngineError
from sharp_cer.planner.automaton import Automaton

#: A step: ((label, target), ...) for the marking moves, and the non-marking
#: target (-1 for none).
Step = tuple[tuple[tuple[int, int], ...], int]


class Determinizer:
    """The deterministic states and steps of one automaton, built lazily
    (see the module example)."""

    def __init__(self, automaton: Automaton, capacity: int = 65536) -> None:
        if capacity < 1:
            raise EngineError(f"the determinization cache needs a capacity of at least 1, not {capacity}")
        self.automaton = automaton
        self.capacity = capacity
        self.states: list[frozenset[int]] = []
        self.finals: list[frozenset[int]] = []
        self._ids: dict[frozenset[int], int] = {}
        self._cache: OrderedDict[tuple[int, int], Step] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        self._idle: dict[tuple[int, int], bool] = {}
        #: the steps ``step`` returned lately, as a plain dict that the
        #: engine's per-event loop reads first (a lookup, not a call); whoever
        #: reads it adds its finds to ``hits``. Emptied when full.
        self.memo: dict[tuple[int, int], Step] = {}
        self.initial = self.intern(automaton.initial)

    def intern(self, states: frozenset[int]) -> int:
        """The id of a deterministic state, and its accepted queries.

        >>> from sharp_cer.planner.automaton import Automaton
        >>> det = Determinizer(Automaton(2, frozenset({0}), ((), ()), {1: frozenset({4})}))
        >>> det.intern(frozenset({0, 1})), det.finals[1]
        (1, frozenset({4}))
        """
        found = self._ids.get(states)
        if found is None:
            found = self._ids[states] = len(self.states)
            self.states.append(states)
            finals = self.automaton.finals
            self.finals.append(frozenset().union(*(finals[s] for s in states if s in finals)))
        return found

    def step(self, state: int, bits: int) -> Step:
        """Where ``state`` goes on an event with predicate bits ``bits``:
        (label, target) per marking label, and the non-marking target.

        >>> from sharp_cer.planner.automaton import Automaton, Transition
        >>> from sharp_cer.planner.predicates import TRUE, Atom
        >>> moves = ((Transition(0, Atom(0), 0, 1), Transition(0, TRUE, None, 0)), ())
        >>> det = Determinizer(Automaton(2, frozenset({0}), moves, {1: frozenset({0})}))
        >>> det.step(det.initial, 0b1), det.step(det.initial, 0b0)
        ((((0, 1),), 0), ((), 0))
        """
        key = (state, bits)
        cache = self._cache
        found = cache.get(key)
        if found is not None:
            self.hits += 1
            cache.move_to_end(key)
            self._remember(key, found)
            return found
        self.misses += 1
        marked, skipped = self._moves(state, bits)
        result: Step = (
            tuple((label, self.intern(frozenset(targets))) for label, targets in sorted(marked.items())),
            self.intern(frozenset(skipped)) if skipped else -1,
        )
        cache[key] = result
        if len(cache) > self.capacity:
            cache.popitem(last=False)
            self.evictions += 1
        self._remember(key, result)
        return result

    def _remember(self, key: tuple[int, int], step: Step) -> None:
        memo = self.memo
        if len(memo) >= self.capacity:
            memo.clear()
        memo[key] = step

    def _moves(self, state: int, bits: int) -> tuple[dict[int, set[int]], set[int]]:
        marked: dict[int, set[int]] = {}
        skipped: set[int] = set()
        transitions = self.automaton.transitions
        for s in self.states[state]:
            for t in transitions[s]:
                if t.guard.holds(bits):
                    if t.label is None:
                        skipped.add(t.target)
                    else:
                        marked.setdefault(t.label, set()).add(t.target)
        return marked, skipped

    def idle(self, state: int, bits: int) -> bool:
        """Whether an event with ``bits`` can change nothing for the runs in
        ``state``: the state accepts no query, no move marks, and the
        non-marking moves lead back to exactly ``state``; or the state has no
        move at all, so its runs die at the next event they see, whichever
        it is (their matches were enumerated when they got there). Kept in
        a cache of its own, which does not count as determinization work.

        >>> from sharp_cer.planner.automaton import Automaton, Transition
        >>> from sharp_cer.planner.predicates import TRUE, Atom
        >>> moves = ((Transition(0, Atom(0), None, 1), Transition(0, TRUE, None, 0)), ((Transition(1, TRUE, 0, 1),)))
        >>> det = Determinizer(Automaton(2, frozenset({0}), moves, {}))
        >>> det.idle(det.initial, 0b1), det.idle(det.initial, 0b0), det.hits + det.misses
        (False, True, 0)
        """
        return self._idle_check((state, bits))

    def starts(self, bits: int) -> bool:
        """Whether a run starting at an event with ``bits`` survives it (it
        marks the event or moves on without marking).

        >>> from sharp_cer.planner.automaton import Automaton, Transition
        >>> from sharp_cer.planner.predicates import Atom
        >>> det = Determinizer(Automaton(2, frozenset({0}), ((Transition(0, Atom(0), 0, 1),), ()), {}))
        >>> det.starts(0b1), det.starts(0b0)
        (True, False)
        """
        return not self._idle_check((-1, bits))

    def _idle_check(self, key: tuple[int, int]) -> bool:
        found = self._idle.get(key)
        if found is None:
            if len(self._idle) >= self.capacity:
                self._idle.clear()
            state, bits = key
            if state < 0:  # a new run: idle when it dies at once
                marked, skipped = self._moves(self.initial, bits)
                found = not marked and not skipped
            elif not any(self.automaton.transitions[s] for s in self.states[state]):
                found = True
            else:
                marked, skipped = self._moves(state, bits)
                found = not marked and skipped == self.states[state] and not self.finals[state]
            self._idle[key] = found
        return found

    @property
    def hit_rate(self) -> float:
        """Cache hits over lookups (0.0 before the first lookup).

        >>> from sharp_cer.planner.automaton import Automaton
        >>> Determinizer(Automaton(1, frozenset({0}), ((),), {})).hit_rate
        0.0
        """
        total = self.hits + self.misses
        return self.hits / total if total else 0.0
