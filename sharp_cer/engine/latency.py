"""Per-event, per-query service, in cost units and in wall time: the work
an event costs until a query's matches are out, without the time it waited
in the queue (latency from arrival, queueing included, is
``engine.queueing.QueueLog``).

A query's service for an event is the update work the event has cost
before the query's matches are out (its condition checks, and the steps of
every group run before and including the query's own) plus the query's own
enumeration. It is recorded for every event a group processes or sheds
(events skipped in bulk cost their condition checks only and are not
recorded). Floors are kept per query group and event, enumeration per query and
event, so recording costs O(1) per event plus O(1) per enumeration.

>>> log = LatencyLog()
>>> log.floor(0, 10, 0.001, 5); log.floor(0, 12, 0.001, 9)
>>> log.enumerated(0, "q", 30, 0.002)
>>> log.units(0, "q").tolist(), log.floor_units(0).tolist(), log.positions(0).tolist()
([10, 42], [10, 12], [5, 9])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


class LatencyLog:
    """The recorded latencies (see the module docstring). An engine books
    them event by event (``floor``, ``enumerated``), or a batch's at once
    (``floors``, ``walks``: the compiled core), to the same figures.

    >>> log = LatencyLog()
    >>> log.floors(0, [10, 12], [0.001, 0.001], [5, 9])
    0
    >>> log.walks("q", [1], [30], [0.002])
    >>> log.units(0, "q").tolist(), [a.tolist() for a in log.enumerations("q")]
    ([10, 42], [[1], [30]])
    """

    def __init__(self) -> None:
        self._floor_units: dict[int, list[int]] = {}
        self._floor_seconds: dict[int, list[float]] = {}
        self._positions: dict[int, list[int]] = {}
        # query name -> each enumeration's (index of the group's recorded event, steps, seconds):
        # lists that one enumeration or a batch's extend
        self._at: dict[str, list[int]] = {}
        self._steps: dict[str, list[int]] = {}
        self._seconds: dict[str, list[float]] = {}

    def floor(self, group: int, units: int, seconds: float, position: int = -1) -> None:
        """A recorded event of ``group`` (at stream ``position``), with its
        update units and time."""
        self._floor_units.setdefault(group, []).append(units)
        self._floor_seconds.setdefault(group, []).append(seconds)
        self._positions.setdefault(group, []).append(position)

    def floors(self, group: int, units: list[int], seconds: list[float], positions: list[int]) -> int:
        """``floor`` for several events of ``group`` in order; the index of
        the first among the group's recorded events (``walks`` takes it)."""
        at = len(self._floor_units.setdefault(group, []))
        self._floor_units[group].extend(units)
        self._floor_seconds.setdefault(group, []).extend(seconds)
        self._positions.setdefault(group, []).extend(positions)
        return at

    def positions(self, group: int) -> npt.NDArray[np.int64]:
        """The stream position of each recorded event of ``group``."""
        return np.asarray(self._positions.get(group, []), dtype=np.int64)

    def enumerated(self, group: int, query: str, steps: int, seconds: float) -> None:
        """``query`` enumerated at the group's latest recorded event."""
        at = len(self._floor_units[group]) - 1
        self._at.setdefault(query, []).append(at)
        self._steps.setdefault(query, []).append(steps)
        self._seconds.setdefault(query, []).append(seconds)

    def walks(self, query: str, at: list[int], steps: list[int], seconds: list[float]) -> None:
        """``enumerated`` for several enumerations of ``query``, each at its
        index among its group's recorded events (``at``, as ``floors`` counts)."""
        self._at.setdefault(query, []).extend(at)
        self._steps.setdefault(query, []).extend(steps)
        self._seconds.setdefault(query, []).extend(seconds)

    def enumerations(self, query: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Each enumeration of ``query`` in the order booked: the index of
        its event among its group's recorded events, and its steps."""
        return (
            np.asarray(self._at.get(query, []), dtype=np.int64),
            np.asarray(self._steps.get(query, []), dtype=np.int64),
        )

    def floor_units(self, group: int) -> npt.NDArray[np.int64]:
        """The update units of each recorded event of ``group``."""
        return np.asarray(self._floor_units.get(group, []), dtype=np.int64)

    def units(self, group: int, query: str) -> npt.NDArray[np.int64]:
        """``query``'s latency in cost units at each recorded event of its group."""
        out = self.floor_units(group)
        at, steps = self.enumerations(query)
        np.add.at(out, at, steps)
        return out

    def seconds(self, group: int, query: str) -> npt.NDArray[np.float64]:
        """``query``'s latency in seconds at each recorded event of its group."""
        out = np.asarray(self._floor_seconds.get(group, []), dtype=np.float64)
        np.add.at(out, self.enumerations(query)[0], np.asarray(self._seconds.get(query, []), dtype=np.float64))
        return out

    def summary(self, group: int, query: str, bound: float | None = None) -> dict[str, Any]:
        """Events recorded, p50, p99 and max in units and seconds, and (with
        a bound in units) how many events were over it.

        >>> log = LatencyLog(); log.floor(0, 5, 0.5, 0); log.summary(0, "q", bound=4)["over_bound"]
        1
        """
        units, seconds = self.units(group, query), self.seconds(group, query)
        if not len(units):
            return {"events": 0}
        out: dict[str, Any] = {"events": len(units)}
        for name, values in (("units", units), ("seconds", seconds)):
            p50, p99 = np.percentile(values, [50, 99]).tolist()
            out[name] = {"p50": p50, "p99": p99, "max": values.max().item(), "mean": float(values.mean())}
        if bound is not None:
            out["over_bound"] = int(np.count_nonzero(units > bound))
        return out
