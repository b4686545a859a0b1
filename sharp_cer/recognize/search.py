"""Linear-time search for row-local patterns: which (row, state) pairs can
still complete a match, computed once per partition from right to left, and
the preferred match from a start found by walking only through them.

A *state* is what the thread-list matcher merges threads on: an instruction,
the quantifier counters and the exclusion depth. Every state reachable from
the program's start is numbered once (at most ``MAX_STATES``; past that the
counters are dropped and the sets only prune the thread-list matcher). A *waiting*
state waits on a row (``LABEL``) or is a match (``MATCH``).

Going backwards over the rows' codes (bit ``v`` set: variable ``v``'s
condition holds on the row), the set of states that can complete a match
from row ``r`` depends only on the row's code and on the set at ``r + 1``,
so the sets are interned and the step between them is cached: a lazily
built deterministic automaton, one dictionary look-up per row once warm.
Nothing backtracks and no start is scanned twice: a start is tried only if
a match can begin there, and the walk from it follows, at each row, the
first state in the pattern's preference order that can still complete,
which is the preferred match (the first in the brute-force matcher's
order), found in time proportional to its length.

When some conditions read the match so far (labels matter), the same sets
computed with those conditions taken as "may hold" over-approximate what
can complete: the thread-list matcher then drops threads outside them and
skips starts where no match can begin.

>>> from sharp_cer.recognize.clause_parser import parse_clause
>>> from sharp_cer.recognize.program import compile_pattern
>>> program = compile_pattern(parse_clause("MATCH_RECOGNIZE (PATTERN (A+ B))").pattern, ["A", "B"])
>>> automaton = Automaton.build(program)
>>> codes = [0b01, 0b01, 0b01, 0b10]  # A A A B
>>> sets = automaton.completable(codes)
>>> [automaton.viable(sets, s) for s in range(4)]
[True, True, True, False]
>>> automaton.walk(sets, 1, 4)
Found(end=4, labels=(0, 0, 1), excluded=())
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .matcher import Found
from .program import CHECK, COUNT, END, EXCL_IN, EXCL_OUT, JMP, LABEL, LOOP, MARK, MATCH, SPLIT, START, Program, step

MAX_STATES = 20_000
"""Numbered states at most; a pattern with more (nested counted quantifiers
with large bounds) gets a counter-free automaton that only prunes threads of
the thread-list matcher (and its thread guard)."""

_ALWAYS, _AT_START, _AT_END = 0, 1, 2
_MATCH = -2  # waiting kind of a MATCH state; -1: not waiting; >= 0: LABEL's variable

State = tuple[int, tuple[int, ...], int]


class TooManyStates(Exception):
    """The pattern has more than ``MAX_STATES`` states."""


def _children(program: Program, state: State, abstract: bool = False) -> list[tuple[State, int]]:
    """Non-consuming successors in preference order, each with the row it
    needs (any, the partition's first, after its last), as ``_close`` follows
    them. ``abstract``: counters and marks are dropped, so a counted loop may
    always iterate and always leave, and an empty iteration always lives
    (every real path is still a path)."""
    pc, counters, depth = state
    instruction = program.code[pc]
    op = instruction[0]
    if op in (MARK, CHECK):
        if abstract:
            return [((pc + 1, (), depth), _ALWAYS)]
        return [((pc + 1, after, depth), _ALWAYS) for after in step(instruction, counters, program.loops) or ()]
    if abstract and op == LOOP:
        either: list[tuple[State, int]] = [((pc + 1, (), depth), _ALWAYS), ((instruction[5], (), depth), _ALWAYS)]
        return either if instruction[4] else either[::-1]
    if abstract and op == COUNT:
        return [((instruction[3], (), depth), _ALWAYS)]
    if op == SPLIT:
        return [((instruction[1], counters, depth), _ALWAYS), ((instruction[2], counters, depth), _ALWAYS)]
    if op == JMP:
        return [((instruction[1], counters, depth), _ALWAYS)]
    if op == START:
        return [((pc + 1, counters, depth), _AT_START)]
    if op == END:
        return [((pc + 1, counters, depth), _AT_END)]
    if op in (EXCL_IN, EXCL_OUT):
        return [((pc + 1, counters, depth + (1 if op == EXCL_IN else -1)), _ALWAYS)]
    if op == LOOP:
        _, loop, low, high, greedy, leave = instruction
        count = counters[loop]
        options: list[tuple[State, int]] = []
        if high < 0 or count < high:
            options.append(((pc + 1, counters, depth), _ALWAYS))
        if count >= low:
            reset = (*counters[:loop], 0, *counters[loop + 1 :])
            options.append(((leave, reset, depth), _ALWAYS))
        return options if greedy else options[::-1]
    if op == COUNT:
        _, loop, cap, head = instruction
        counted = (*counters[:loop], min(counters[loop] + 1, cap), *counters[loop + 1 :])
        return [((head, counted, depth), _ALWAYS)]
    return []  # LABEL, MATCH: waiting


@dataclass
class Automaton:
    """A program's states and the cached backward steps over row codes."""

    ids: dict[State, int]
    kind: list[int]  # _MATCH, -1, or the LABEL's variable
    successor: list[int]  # a LABEL state's state after its row; -1 otherwise
    excluding: list[bool]  # a LABEL state inside an exclusion
    edges: list[list[tuple[int, int]]]  # non-consuming, in preference order, with their need
    back: list[list[tuple[int, int]]]  # the same edges reversed
    labels: list[int]
    matches: frozenset[int]
    sets: list[frozenset[int]] = field(default_factory=list)
    interned: dict[frozenset[int], int] = field(default_factory=dict)
    steps: list[dict[int, int]] = field(default_factory=list)
    ends: dict[bool, int] = field(default_factory=dict)
    firsts: dict[tuple[int, int, bool, bool], int] = field(default_factory=dict)
    starts: dict[tuple[int, int], int] = field(default_factory=dict)
    inner: dict[int, dict[int, tuple[int, bool, int]]] = field(default_factory=dict)
    exact: bool = True

    @classmethod
    def build(cls, program: Program, max_states: int = MAX_STATES, abstract: bool = False) -> Automaton:
        """Number the states reachable from the start (``TooManyStates`` past
        ``max_states``). ``abstract``: without counters, an over-approximation
        whose sets only prune (no walk)."""
        code = program.code
        initial: State = (0, () if abstract else program.initial, 0)
        ids: dict[State, int] = {initial: 0}
        order = [initial]
        kind: list[int] = []
        successor: list[int] = []
        excluding: list[bool] = []
        edges: list[list[tuple[int, int]]] = []

        def number(state: State) -> int:
            known = ids.get(state)
            if known is None:
                if len(order) >= max_states:
                    raise TooManyStates
                known = ids[state] = len(order)
                order.append(state)
            return known

        at = 0
        while at < len(order):
            state = order[at]
            at += 1
            pc, counters, depth = state
            op = code[pc][0]
            kind.append(code[pc][1] if op == LABEL else _MATCH if op == MATCH else -1)
            excluding.append(depth > 0)
            successor.append(number((pc + 1, program.consumed(counters), depth)) if op == LABEL else -1)
            edges.append([(number(child), need) for child, need in _children(program, state, abstract)])
        back: list[list[tuple[int, int]]] = [[] for _ in order]
        for source, out in enumerate(edges):
            for target, need in out:
                back[target].append((source, need))
        labels = [i for i, k in enumerate(kind) if k >= 0]
        matches = frozenset(i for i, k in enumerate(kind) if k == _MATCH)
        return cls(ids, kind, successor, excluding, edges, back, labels, matches, exact=not abstract)

    # --- the backward sets ---

    def _intern(self, states: frozenset[int]) -> int:
        known = self.interned.get(states)
        if known is None:
            known = self.interned[states] = len(self.sets)
            self.sets.append(states)
            self.steps.append({})
        return known

    def _close_back(self, waiting: set[int], at_start: bool, at_end: bool) -> frozenset[int]:
        """The states whose closure at a row reaches ``waiting``."""
        reached = set(waiting)
        stack = list(waiting)
        back = self.back
        while stack:
            target = stack.pop()
            for source, need in back[target]:
                if source in reached:
                    continue
                if (need == _AT_START and not at_start) or (need == _AT_END and not at_end):
                    continue
                reached.add(source)
                stack.append(source)
        return frozenset(reached)

    def _step(self, following: int, code: int, at_start: bool) -> int:
        after = self.sets[following]
        kind, successor = self.kind, self.successor
        waiting = set(self.matches)
        waiting.update(q for q in self.labels if code >> kind[q] & 1 and successor[q] in after)
        return self._intern(self._close_back(waiting, at_start, False))

    def completable(self, codes: Sequence[int]) -> list[int]:
        """For each row ``r`` of a partition (and ``len(codes)``, after its last),
        the id of the set of states from which a match can complete at or after ``r``."""
        size = len(codes)
        end = self.ends.get(size == 0)
        if end is None:
            end = self.ends[size == 0] = self._intern(self._close_back(set(self.matches), size == 0, True))
        out = [end] * (size + 1)
        current = end
        steps = self.steps
        for r in range(size - 1, 0, -1):
            code = codes[r]
            known = steps[current].get(code)
            if known is None:
                known = steps[current][code] = self._step(current, code, False)
            out[r] = current = known
        if size:
            key = (current, codes[0])  # row 0 follows START: its steps are cached apart
            first = self.starts.get(key)
            if first is None:
                first = self.starts[key] = self._step(current, codes[0], True)
            out[0] = first
        return out

    def completable_window(self, codes: Sequence[int], first: int, following: int) -> list[int]:
        """The sets of rows ``first .. first + len(codes) - 1`` of a partition,
        given the set of the row after them."""
        out = [following] * len(codes)
        current = following
        for i in range(len(codes) - 1, -1, -1):
            at_start = first + i == 0
            if at_start:
                current = self._step(current, codes[i], True)
            else:
                known = self.steps[current].get(codes[i])
                if known is None:
                    known = self.steps[current][codes[i]] = self._step(current, codes[i], False)
                current = known
            out[i] = current
        return out

    def viable(self, sets: Sequence[int], start: int) -> bool:
        """Can a match begin at row ``start``?"""
        return 0 in self.sets[sets[start]]

    def viable_sets(self) -> list[bool]:
        """For each set id so far: does it hold the start state?"""
        return [0 in s for s in self.sets]

    # --- the walk ---

    def _first_waiting(self, state: int, completing: int, at_start: bool, at_end: bool) -> int:
        """The first waiting state, in preference order, of ``state``'s closure
        that can complete (``state`` itself can)."""
        key = (state, completing, at_start, at_end)
        known = self.firsts.get(key)
        if known is not None:
            return known
        allowed = self.sets[completing]
        seen: set[int] = set()
        stack = [state]
        found = -1
        while stack:
            x = stack.pop()
            if x in seen or x not in allowed:
                continue
            seen.add(x)
            if self.kind[x] != -1:
                found = x
                break
            for target, need in reversed(self.edges[x]):
                if (need == _AT_START and not at_start) or (need == _AT_END and not at_end):
                    continue
                stack.append(target)
        assert found >= 0, "a completable state reaches a completable waiting state"
        self.firsts[key] = found
        return found

    def walk(self, sets: Sequence[int], start: int, size: int) -> Found | None:
        """The preferred match from row ``start``, or None if none begins there."""
        if 0 not in self.sets[sets[start]]:
            return None
        labels: list[int] = []
        excluded: list[int] = []
        state, row = 0, start
        inner = self.inner
        while True:
            completing = sets[row]
            if row == 0 or row == size:
                step = self._step_of(self._first_waiting(state, completing, row == 0, row == size))
            else:  # the common case: one look-up keyed by the set, then the state
                table = inner.get(completing)
                if table is None:
                    table = inner[completing] = {}
                known = table.get(state)
                if known is None:
                    known = table[state] = self._step_of(self._first_waiting(state, completing, False, False))
                step = known
            variable, inside, state = step
            if variable == _MATCH:
                return Found(row, tuple(labels), tuple(excluded))
            labels.append(variable)
            if inside:
                excluded.append(row)
            row += 1

    def _step_of(self, waiting: int) -> tuple[int, bool, int]:
        """A waiting state as the walk uses it: its variable (or MATCH), whether
        its row is excluded, the state after its row."""
        return self.kind[waiting], self.excluding[waiting], self.successor[waiting]

    def alive(self, sets: Sequence[int]) -> AliveCheck:
        """A check for the thread-list matcher: can ``state`` at ``row`` complete?"""
        return AliveCheck(self.ids, self.sets, sets, not self.exact)


class WindowRows(Sequence[int]):
    """Per-row set ids: a window's own from its first row, the others' after it."""

    def __init__(self, first: int, window: list[int], after: Sequence[int]) -> None:
        self.first = first
        self.window = window
        self.after = after

    def __len__(self) -> int:
        return len(self.after)

    def __getitem__(self, row: Any) -> Any:
        at = row - self.first
        return self.window[at] if 0 <= at < len(self.window) else self.after[row]


class AliveCheck:
    """``check(row, state)``: the state, met at ``row``, can still complete a match."""

    __slots__ = ("abstract", "ids", "per_row", "sets")

    def __init__(
        self, ids: dict[State, int], sets: list[frozenset[int]], per_row: Sequence[int], abstract: bool = False
    ) -> None:
        self.ids = ids
        self.sets = sets
        self.per_row = per_row
        self.abstract = abstract

    def __call__(self, row: int, state: State) -> bool:
        number = self.ids.get((state[0], (), state[2]) if self.abstract else state)
        return number is not None and number in self.sets[self.per_row[row]]


def build_automaton(program: Program) -> Automaton:
    """The automaton of ``program``; past ``MAX_STATES`` states (nested counted
    quantifiers), its counter-free over-approximation (``exact`` False)."""
    try:
        return Automaton.build(program)
    except TooManyStates:
        return Automaton.build(program, max_states=2**62, abstract=True)  # bounded by the program's size
