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
symbol. Updating costs O(symbols) per state that appears or disappears.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from planner import compile_plan
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
import numpy.typing as npt

from .determinize import Determinizer
from .symbols import SymbolTable

_NEW_RUN = -1


class SkipIndex:
    """The busy symbols of one group, given its live states (see the module
    example)."""

    def __init__(self, det: Determinizer, symbols: SymbolTable) -> None:
        self.det = det
        self.symbols = symbols
        self._rows: dict[int, npt.NDArray[np.int64]] = {}
        self.counts: dict[int, int] = {}
        self._busy = np.zeros(0, dtype=np.int64)
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
        busy = self._row(_NEW_RUN).copy()
        for state in self.counts:
            busy += self._row(state)
        self._busy = busy
        self.flags = np.append(busy > 0, False)
        self.flag_list = self.flags.tolist()
        self.grew = False

    def moved(self, old: Iterable[int], new: Iterable[int]) -> None:
        """A partition's live states went from ``old`` to ``new``."""
        counts, busy = self.counts, self._busy
        for state in old:
            left = counts[state] - 1
            if left:
                counts[state] = left
            else:
                del counts[state]
                row = self._row(state)
                busy -= row
                self._flip(np.flatnonzero((busy == 0) & (row > 0)), False)
        for state in new:
            held = counts.get(state, 0)
            counts[state] = held + 1
            if not held:
                row = self._row(state)
                waking = np.flatnonzero((busy == 0) & (row > 0))
                busy += row
                if len(waking):
                    self._flip(waking, True)
                    self.grew = True

    def _flip(self, symbols: npt.NDArray[np.intp], busy: bool) -> None:
        self.flags[symbols] = busy
        for symbol in symbols.tolist():
            self.flag_list[symbol] = busy

    def _row(self, state: int) -> npt.NDArray[np.int64]:
        row = self._rows.get(state)
        bits = self.symbols.bits
        if row is None or len(row) < len(bits):
            det = self.det
            known = 0 if row is None else len(row)
            if state == _NEW_RUN:
                extra = [det.starts(b) for b in bits[known:]]
            else:
                extra = [not det.idle(state, b) for b in bits[known:]]
            row = np.concatenate(
                [row if row is not None else np.zeros(0, dtype=np.int64), np.array(extra, dtype=np.int64)]
            )
            self._rows[state] = row
        return row
