"""The released events a stream's later matches may still hold, kept as the
Arrow tables they were released in: an alert carries its events whole, and
only the few events alerts name are ever turned into Python values.

Kept per release: the positions (ascending: events are released in stream
order), each event's primary time in ns (or none) and the table. Forgetting
the events before a position drops whole releases and slices the first one
kept (no copy). The object is plain data: it pickles with a stream's state.

>>> import pyarrow as pa
>>> recent = RecentEvents()
>>> recent.add(np.array([3, 5]), np.array([10, 20]), np.array([True, False]), pa.table({"type": ["A", "B"]}))
>>> recent.add(np.array([8]), np.array([30]), np.array([True]), pa.table({"type": ["C"]}))
>>> sorted(recent.rows([8, 3]).items()), recent.time(5), list(recent)
([(3, {'type': 'A'}), (8, {'type': 'C'})], None, [3, 5, 8])
>>> recent.forget(4); list(recent), len(recent)
([5, 8], 2)
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa


class RecentEvents:
    """Position -> (primary time, event) of released events (see the module docstring)."""

    def __init__(self) -> None:
        # per release: positions, times (ns), whether each has a time, the events' table
        self._releases: list[tuple[np.ndarray, np.ndarray, np.ndarray, pa.Table]] = []
        self._firsts: list[int] = []  # each release's first position, for bisect

    def add(self, positions: np.ndarray, times: np.ndarray, timed: np.ndarray, table: pa.Table) -> None:
        """One release's events (positions ascending, after every earlier release's)."""
        if len(positions) != table.num_rows:
            raise ValueError(f"{len(positions)} positions for {table.num_rows} events")
        if len(positions):
            self._releases.append((np.asarray(positions, np.int64), times, timed, table))
            self._firsts.append(int(positions[0]))

    def time(self, position: int) -> int | None:
        """An event's primary time in ns (None: its type has none)."""
        release, i = self._find(position)
        _, times, timed, _ = self._releases[release]
        return int(times[i]) if timed[i] else None

    def rows(self, positions: Iterable[int]) -> dict[int, dict[str, Any]]:
        """The events at ``positions`` as dicts (type and attributes), one
        ``take`` per release they are in."""
        wanted: dict[int, list[tuple[int, int]]] = {}
        for p in set(positions):
            release, i = self._find(p)
            wanted.setdefault(release, []).append((p, i))
        out: dict[int, dict[str, Any]] = {}
        for release, pairs in wanted.items():
            table = self._releases[release][3]
            taken = table.take(pa.array([i for _, i in pairs], pa.int64())).to_pylist()
            out.update(zip((p for p, _ in pairs), taken, strict=True))
        return out

    def forget(self, oldest: float) -> None:
        """Drop the events before position ``oldest`` (inf: every one)."""
        drop = 0
        while drop < len(self._releases) and int(self._releases[drop][0][-1]) < oldest:
            drop += 1
        del self._releases[:drop], self._firsts[:drop]
        if self._releases and self._firsts[0] < oldest:
            positions, times, timed, table = self._releases[0]
            cut = int(np.searchsorted(positions, oldest))
            self._releases[0] = (positions[cut:], times[cut:], timed[cut:], table.slice(cut))
            self._firsts[0] = int(positions[cut])

    def _find(self, position: int) -> tuple[int, int]:
        release = bisect.bisect_right(self._firsts, position) - 1
        if release >= 0:
            positions = self._releases[release][0]
            i = int(np.searchsorted(positions, position))
            if i < len(positions) and positions[i] == position:
                return release, i
        raise KeyError(position)

    def __iter__(self) -> Iterator[int]:
        for positions, *_ in self._releases:
            yield from positions.tolist()

    def __len__(self) -> int:
        return sum(len(r[0]) for r in self._releases)

    @classmethod
    def from_dict(cls, recent: dict[int, tuple[int | None, dict[str, Any]]]) -> RecentEvents:
        """The events a state of data format 1 kept (position -> (time, event dict))."""
        out = cls()
        for position, (time, row) in sorted(recent.items()):
            timed = time is not None
            out.add(np.array([position]), np.array([time or 0]), np.array([timed]), pa.Table.from_pylist([row]))
        return out
