"""Which events can change nothing, so the engine may skip them in bulk.

An event is *idle* for a group when a new run starting at it dies at once
and, for every deterministic state live in some partition, it is idle for
that state (``Determinizer.idle``: no move marks, the non-marking moves lead
back to exactly that state, the state accepts nothing; or the state has no
move at all). Skipping an idle event then changes no union-list, no output
and no later step, so NOT, ABSENT, STRICT and ``:`` still see every event
they must: those are exactly the events that move a run.

The index keeps, per live state, the number of partitions (and consuming
queries' ghost sets) holding it, and per symbol the number of live states
(plus the new run) for which the symbol is *busy*; a symbol is busy when
that number is positive. Per-state rows are computed once per state and
symbol, kept as the list of symbols busy for it. Updating costs O(those
symbols) per state that appears or disappears.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.planner import compile_plan
>>> from sharp_cer.engine.determinize import Determinizer
>>> from sharp_cer.engine.symbols import SymbolTable
>>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int }, EVENT C { k:int } }")
>>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 9 EVENTS", s))])
>>> det = Determinizer(plan.groups[0].automaton)
>>> symbols = SymbolTable([0, 1])
>>> symbols.bits.extend([0b01, 0b10, 0b00])  # an A, a B, a C
>>> index = SkipIndex(det, symbols)
>>> index.reset([]); index.flags.tolist()  # only an A can start something
[True, False, False, False]
>>> waiting = det.step(det.initial, 0b01)[0][0][1]  # the state after an A
>>> index.moved((), (waiting,)); index.flags.tolist()
[True, True, False, False]
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .determinize import Determinizer
from .symbols import SymbolTable

_NEW_RUN = -1


class SkipIndex:
    """The busy symbols of one group, given its live states (see the module
    example)."""

    def __init__(self, det: Determinizer, symbols: SymbolTable) -> None:
        self.det = det
        self.symbols = symbols
        # per state, the symbols it was judged on so far and, of those, the
        # busy ones: a state is busy for few symbols, so a move touches only
        # those, in plain Python (numpy's per-call cost dominated small rows)
        self._rows: dict[int, tuple[int, list[int]]] = {}
        self.counts: dict[int, int] = {}
        self._busy: list[int] = []
        #: per symbol id, whether an event with it may change something, and
        #: a last entry (False) for id -1 (events the group does not see);
        #: as an array (for numpy) and a list (for the per-event loop)
        self.flags = np.zeros(1, dtype=bool)
        self.flag_list = [False]
        #: set when some symbol became busy; the caller clears it
        self.grew = False

    def reset(self, states: Iterable[int]) -> None:
        """Start over from the live states (one entry per partition holding
        each), for the symbols known now."""
        self.counts = {}
        for state in states:
            self.counts[state] = self.counts.get(state, 0) + 1
        busy = [0] * len(self.symbols.bits)
        for state in (_NEW_RUN, *self.counts):
            for symbol in self._row(state):
                busy[symbol] += 1
        self._busy = busy
        self.flag_list = [b > 0 for b in busy] + [False]
        self.flags = np.array(self.flag_list, dtype=bool)
        self.grew = False

    def moved(self, old: Iterable[int], new: Iterable[int]) -> None:
        """A partition's live states went from ``old`` to ``new``."""
        counts, busy, flags, flag_list = self.counts, self._busy, self.flags, self.flag_list
        for state in old:
            left = counts[state] - 1
            if left:
                counts[state] = left
                continue
            del counts[state]
            for symbol in self._row(state):
                busy[symbol] -= 1
                if not busy[symbol]:
                    flags[symbol] = flag_list[symbol] = False
        for state in new:
            held = counts.get(state, 0)
            counts[state] = held + 1
            if held:
                continue
            for symbol in self._row(state):
                if not busy[symbol]:
                    flags[symbol] = flag_list[symbol] = True
                    self.grew = True
                busy[symbol] += 1

    def _row(self, state: int) -> list[int]:
        """The symbols busy for ``state`` (for ``_NEW_RUN``: those that start a run)."""
        known, row = self._rows.get(state, (0, []))
        bits = self.symbols.bits
        if known < len(bits):
            det = self.det
            for symbol in range(known, len(bits)):
                if det.starts(bits[symbol]) if state == _NEW_RUN else not det.idle(state, bits[symbol]):
                    row.append(symbol)
            self._rows[state] = (len(bits), row)
        return row
