"""Counting a query's matches in a sliding window without walking the tECS.

Without cross-event conditions, how a run moves on an event depends only on
its deterministic state, never on where it started: the event maps the
vector of runs per state (of any one start) by one linear map ``M`` (its
*moves*: each stepped state to its targets, one per marking or skipping
transition). The runs of start ``s`` after event ``k`` are
``M_k ... M_(s+1) M_s e_initial``, and a match count is the sum over the
starts in the window of those vectors' final states. A window keeps a
suffix of the starts (its test is monotone in the start's value), so the
sum is a sliding-window aggregate, kept here with the two-stack queue
(amortized O(1) per event, whatever the number of matches):

- the *back* holds the starts since the last flip: their summed vector now
  (``back_sum``, mapped by each event as it comes) and each event's moves;
- the *front* holds the older starts as suffix sums of their vectors at the
  last flip (``front``), and ``product`` maps a vector at the flip to now;
- when the window's edge passes the front's last start while the back has
  one out of the window, a *flip* walks the back's moves once backwards,
  turning its starts into a new front.

The counts equal the number of paths the tECS holds for the final states in
the window (``enumeration.count_matches``): the counter moves exactly the
runs the update moves. It needs the window values stepped in a partition
never to go back (they do not for ``WITHIN n EVENTS``, nor for a time window
over events in order); the engine counts by walking in a partition where
one did (a late event) or after a snapshot restored it.

>>> # states: 0 initial, 1 after A, 2 after A B (final); A starts, B completes
>>> a = {0: (1,), 1: (1,)}  # A: a new start moves to 1; runs in 1 skip it
>>> b = {1: (1, 2)}  # B: runs in 1 skip it or complete
>>> within = lambda events: lambda end: lambda start: end - start < events
>>> wide, narrow = WindowCounter(within(3), True), WindowCounter(within(2), True)
>>> [(wide.step(moves, 0, value), narrow.step(moves, 0, value)) for value, moves in enumerate([a, a, b])]
[(True, True), (True, True), (True, True)]
>>> wide.count([2]), narrow.count([2])
(2, 1)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

_INF = float("inf")

Vector = dict[int, int]  # deterministic state -> number of runs
Moves = dict[int, tuple[int, ...]]  # stepped state -> its targets, with multiplicity


def moved(vector: Vector, moves: Moves) -> Vector:
    """The runs of ``vector`` after an event of ``moves`` (a state without
    moves loses its runs).

    >>> moved({0: 2, 1: 3}, {0: (0, 1), 1: (1, 1)})
    {0: 2, 1: 8}
    """
    out: Vector = {}
    for state, runs in vector.items():
        for target in moves.get(state, ()):
            out[target] = out.get(target, 0) + runs
    return out


class WindowCounter:
    """The matches of one query in one partition, counted per event in
    amortized O(1) vector operations (see the module docstring).
    ``window(end)`` is the query's window test for a match ending at
    ``end`` (``bounded``: the query has a window; without one no start ever
    leaves, and nothing is kept for flips). ``work`` counts the vector
    entries touched: the counter's cost, in the units of a walk's nodes."""

    __slots__ = ("back", "back_sum", "bounded", "front", "head", "last", "product", "window", "work")

    def __init__(self, window: Callable[[float], Callable[[float], bool]], bounded: bool) -> None:
        self.window = window
        self.bounded = bounded
        # (start value, moves, start state or -1) per event since the back's first start
        self.back: list[tuple[float, Moves, int]] = []
        self.back_sum: Vector = {}
        # (start value, the runs of it and of every later front start, at the flip)
        self.front: list[tuple[float, Vector]] = []
        self.head = 0  # the front's first start still in the window
        # per state at the flip, where its runs are now (None: no front)
        self.product: dict[int, Vector] | None = None
        self.last = -_INF  # the latest window value stepped
        self.work = 0

    def step(self, moves: Moves, start: int, value: float) -> bool:
        """Take one event: ``moves`` of the states stepped, ``start`` the
        state a run starting here begins in (-1: none starts), ``value`` the
        event's window value. False when the value goes back (or is NaN):
        the counter can no longer tell which starts are in a window, and the
        caller must count otherwise from now on."""
        bounded = self.bounded
        if bounded:
            if not value >= self.last:
                return False
            self.last = value
        back_sum = self.back_sum
        if start >= 0:
            back_sum[start] = back_sum.get(start, 0) + 1
        self.back_sum = moved(back_sum, moves)
        work = len(back_sum) + 1
        product = self.product
        if product is not None:
            for state, vector in product.items():
                work += len(vector)
                product[state] = moved(vector, moves)
        self.work += work
        if bounded:
            if start >= 0 or self.back:
                self.back.append((value, moves, start))
            self._trim(self.window(value))
        return True

    def count(self, finals: Sequence[int]) -> int:
        """The runs in the states ``finals`` whose start is in the window of
        the event stepped last."""
        back_sum = self.back_sum
        total = sum(back_sum.get(state, 0) for state in finals)
        work = len(finals) + 1
        front, product = self.front, self.product
        if self.head < len(front) and product is not None:
            for state, runs in front[self.head][1].items():
                now = product.get(state)
                if now:
                    total += runs * sum(now.get(final, 0) for final in finals)
                work += len(finals)
        self.work += work
        return total

    def _trim(self, test: Callable[[float], bool]) -> None:
        """Drop the starts that left the window (``test``: monotone, a
        start that passes, every later one passes too)."""
        self._advance(test)
        if not self.front and self.back and not test(self.back[0][0]):
            self._flip()
            self._advance(test)

    def _advance(self, test: Callable[[float], bool]) -> None:
        front, head = self.front, self.head
        while head < len(front) and not test(front[head][0]):
            head += 1
        self.work += head - self.head
        if head == len(front):
            # every front start left the window: nothing to keep for them
            self.front, self.product, head = [], None, 0
        self.head = head

    def _flip(self) -> None:
        """Turn the back's starts into the front: one backward walk over
        the back's moves composes each start's map to now."""
        composed: dict[int, Vector] | None = None  # a state before event j -> its runs now
        suffix: Vector = {}
        front: list[tuple[float, Vector]] = []
        work = 0
        for value, moves, start in reversed(self.back):
            step: dict[int, Vector] = {}
            for state, targets in moves.items():
                runs: Vector = {}
                for target in targets:
                    if composed is None:
                        runs[target] = runs.get(target, 0) + 1
                        continue
                    later = composed.get(target)
                    if later is None:
                        continue
                    for final, n in later.items():
                        runs[final] = runs.get(final, 0) + n
                    work += len(later)
                if runs:
                    step[state] = runs
            composed = step
            if start >= 0:
                suffix = dict(suffix)
                for state, n in step.get(start, {}).items():
                    suffix[state] = suffix.get(state, 0) + n
                front.append((value, suffix))
        front.reverse()
        self.work += work + len(self.back)
        self.front, self.head = front, 0
        # the vectors at the flip are the vectors now: the identity, over the states they hold
        self.product = {state: {state: 1} for state in front[0][1]} if front else None
        self.back, self.back_sum = [], {}

    def live(self) -> int:
        """Entries held (vectors and moves): bounded by the window, not the stream.

        >>> WindowCounter(lambda end: lambda start: True, False).live()
        0
        """
        size = sum(len(v) for _, v in self.front) + len(self.back_sum)
        size += sum(len(moves) for _, moves, _ in self.back)
        if self.product is not None:
            size += sum(len(v) for v in self.product.values())
        return size
