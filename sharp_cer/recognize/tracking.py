"""A thread's history for the thread-list matcher when DEFINE conditions
read running aggregates: the rows its ``reads`` keep, then one state per
running COUNT/SUM/MIN/MAX (``expressions.Running``), so a condition reads an
aggregate in O(1) instead of recomputing it over the match so far, and
threads merge when their states (and kept rows) agree.

>>> from sharp_cer.recognize.clause_parser import parse_clause
>>> from sharp_cer.recognize.run import compile_clause
>>> r = compile_clause(parse_clause("MATCH_RECOGNIZE (PATTERN (A+) DEFINE A AS SUM(A.v) < 4)"), ["v"])
>>> t = Tracker(r.conditions, r.reads or (), {"v": [1, 2, 3]}, 0, 1, [None])
>>> h = t.initial
>>> t.condition(0, (0,), 0, h), t.condition(0, (0, 0), 1, t.advance(h, 0, (0,), 0))
(True, True)
>>> h = t.advance(t.advance(h, 0, (0,), 0), 0, (0, 0), 1)
>>> h, t.condition(0, (0, 0, 0), 2, h)
(((3, <class 'int'>),), False)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .expressions import Compiled, Read, Running, View, state_key
from .matcher import _remember


def running_of(conditions: Sequence[Compiled | None]) -> tuple[Running, ...]:
    """The running aggregates of the conditions that read the match so far."""
    return tuple(spec for c in conditions if c is not None and not c.row_local for spec in c.running)


class Tracker:
    """``matcher.Tracked`` for one start: conditions see the thread's states."""

    def __init__(
        self,
        conditions: Sequence[Compiled | None],
        reads: Sequence[Read],
        columns: dict[str, Sequence[Any]],
        start: int,
        match_number: int,
        memo: list[list[bool | None] | None],
    ) -> None:
        self.conditions = conditions
        self.reads = reads
        self.specs = running_of(conditions)
        self.columns = columns
        self.start = start
        self.match_number = match_number
        self.memo = memo
        self.initial: tuple[object, ...] = (
            *(() for _ in reads),
            *(state_key(spec.initial()) for spec in self.specs),
        )

    def condition(self, variable: int, labels: Sequence[int], row: int, history: tuple[object, ...]) -> bool:
        compiled = self.conditions[variable]
        if compiled is None:
            return True  # an undefined variable matches every row
        if compiled.row_local:
            column = self.memo[variable]
            assert column is not None
            known = column[row]
            if known is None:  # its evaluation failed: raise the located error now
                view = View(self.columns, row, (variable,), 1, self.match_number)
                known = column[row] = compiled.fn(view, None) is True
            return known
        kept = len(self.reads)
        states = {spec: entry[0] for spec, entry in zip(self.specs, history[kept:], strict=True)}  # type: ignore[index]
        view = View(self.columns, self.start, labels, len(labels), self.match_number, states=states)
        return compiled.fn(view, None) is True

    def advance(
        self, history: tuple[object, ...], variable: int, labels: Sequence[int], row: int
    ) -> tuple[object, ...]:
        kept = len(self.reads)
        rows = _remember(history[:kept], self.reads, row, variable) if kept else ()
        view = View(self.columns, self.start, labels, len(labels), self.match_number)
        states = []
        for spec, entry in zip(self.specs, history[kept:], strict=True):
            if spec.members is None or variable in spec.members:
                entry = state_key(spec.add(entry[0], view, row))  # type: ignore[index]
            states.append(entry)
        return (*rows, *states)
