"""Latency as users feel it: events arrive, wait behind the events before
them, and are served one at a time by one server.

An event's *arrival* is the wall-clock time it reached the engine (live
feeding), or, for replayed input, a time derived from a fixed input rate
or from its primary time at a replay speed (:class:`Pace`). Its *service*
is its update work plus each query's enumeration, one query after the
other. A query's latency for an event is the time its matches ending there
are out (for an event that completes none of them: the end of the event's
service) minus the arrival, queueing included.

Service is counted in one of two ways:

* *capacity* mode (deterministic, reproducible to the match): the server
  does ``capacity`` cost units per second, so an event's service takes its
  units divided by the capacity, and a latency in cost units is its
  seconds times the capacity;
* *wall* mode (``capacity=None``): the server's service is the wall time of
  ``Engine.process``. Events processed together in one batch share its
  timing: the batch starts once its last event has arrived and the server
  is free, and every event's matches are out when the batch is done.

With service times ``b`` and arrivals ``a``, event ``k`` finishes at
``f[k] = max(a[k], f[k-1]) + b[k]``, which unrolls to
``f[k] = S[k] + max(f[-1], max_{j<=k} (a[j] - S[j-1]))`` with ``S`` the
running sum of ``b``: one numpy pass per batch (:func:`finish_times`).

>>> finish_times(np.array([0.0, 0.0, 5.0]), np.array([2.0, 2.0, 1.0]), 1.0).tolist()
[3.0, 5.0, 6.0]
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from sharp_cer.errors import EngineError
from sharp_cer.events.batch import EventBatch

from .histogram import LogHistogram

_NEG = -math.inf


def finish_times(
    arrivals: npt.NDArray[np.float64], service: npt.NDArray[np.float64], free: float
) -> npt.NDArray[np.float64]:
    """When each event's service ends, one server in order, the server free
    from ``free`` on (see the module docstring)."""
    if not len(arrivals):
        return np.zeros(0)
    total = np.cumsum(service)
    before = total - service
    return total + np.maximum(free, np.maximum.accumulate(arrivals - before))


@dataclass(frozen=True)
class Pace:
    """How replayed events arrive: ``rate`` events per second (event k of
    the stream arrives at k / rate), or at their primary time divided by
    ``speed`` (``speed=2``: twice as fast as recorded), counted from the
    stream's first event.

    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.language import Schema
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { t:primary_time } }")
    >>> batch = load_csv("A,2024-03-04T09:30:00Z\\nA,2024-03-04T09:30:02Z\\nA,2024-03-04T09:30:10Z\\n", s)[0]
    >>> Pace(rate=4).arrivals(batch).tolist(), Pace(speed=2).arrivals(batch).tolist()
    ([0.0, 0.25, 0.5], [0.0, 1.0, 5.0])
    """

    rate: float | None = None
    speed: float | None = None

    def __post_init__(self) -> None:
        if (self.rate is None) == (self.speed is None):
            raise EngineError("a pace is an input rate or a replay speed: give exactly one")
        for name, value in (("input rate", self.rate), ("replay speed", self.speed)):
            if value is not None and not value > 0:
                raise EngineError(f"the {name} must be a positive number, not {value!r}")

    def origin(self, batch: EventBatch) -> float | None:
        """The origin of a stream whose first batch is ``batch``: its first
        event's primary time in seconds (None with a rate, which needs none)."""
        if self.speed is None:
            return None
        times = batch.times()
        return float(times.values[0]) / 1e9 if len(batch) and times.valid[0] else 0.0

    def arrivals(self, batch: EventBatch, origin: float | None = None) -> npt.NDArray[np.float64]:
        """The arrival (seconds) of each event of ``batch``; ``origin`` is
        the first event's primary time in seconds (None: this batch's)."""
        if self.rate is not None:
            return batch.positions.astype(np.float64) / self.rate
        assert self.speed is not None
        times = batch.times()
        if len(batch) and not times.valid.all():
            raise EngineError(
                "a replay speed needs every event's primary time\n"
                "  hint: replay at a fixed input rate (--rate EVENTS_PER_S) instead"
            )
        seconds = times.values.astype(np.float64) / 1e9
        if origin is None:
            origin = float(seconds[0]) if len(seconds) else 0.0
        # an event that is late (up to the allowed lateness) arrives when
        # the latest before it did: arrivals never go back
        return (np.maximum.accumulate(seconds) - origin) / self.speed if len(seconds) else seconds


class Server:
    """One server serving events in order: when it is next free, and (in
    wall mode) the units it has done per second so far.

    >>> server = Server(capacity=100)
    >>> server.rate(), server.seconds(50)
    (100.0, 0.5)
    """

    def __init__(self, capacity: float | None = None) -> None:
        if capacity is not None and not capacity > 0:
            raise EngineError(f"the capacity must be a positive number of cost units per second, not {capacity!r}")
        self.capacity = capacity
        self.free = _NEG
        self.units = 0
        self.busy = 0.0  # seconds of service measured (wall mode)

    def rate(self) -> float:
        """Cost units per second: the capacity, or as measured (inf before any)."""
        if self.capacity is not None:
            return float(self.capacity)
        return self.units / self.busy if self.busy > 0 and self.units else math.inf

    def seconds(self, units: float) -> float:
        """How long ``units`` take at ``rate()``."""
        rate = self.rate()
        return units / rate if rate != math.inf else 0.0


class Backlog:
    """The queue as the engine sees it while it serves a batch: for the
    event at a row, its latency so far, in cost units, at the moment a
    group is at it.

    Every group of a batch shares one view, and with a shedder the engine
    runs its groups in lockstep (event by event, each event's groups one
    after the other, as one server serves them), so when a group is at a
    row, every group is done with the events before it and the groups
    before this one are done with this event: in capacity mode the view is
    the one-server queue exactly, whatever the number of groups. Work not
    reported yet (``done``) counts as the ``units`` known when the batch
    began (its condition checks). In wall mode the view reads the clock.

    >>> server = Server(capacity=1.0)
    >>> view = Backlog(server, np.array([0.0, 0.0, 5.0]), [2, 2, 1], time.perf_counter())
    >>> view.latency(1, 0), view.done(0, 1), view.latency(1, 0)  # the first event took 1 unit more
    (4.0, None, 5.0)
    >>> view.done(0, 2), view.latency(1, 0)  # and another group 2 units more: one server
    (None, 7.0)
    >>> view.latency(2, 0)  # it arrives at 5 s, when the server has 2 s of work left
    3.0
    """

    __slots__ = (
        "_a", "_b", "_began", "_begin", "_finish", "_last", "_max", "_rate", "_spent", "_sum", "_wall_start",
        "capacity",
    )  # fmt: skip

    def __init__(self, server: Server, arrivals: npt.NDArray[np.float64], units: list[int], began: float) -> None:
        self._a: list[float] = arrivals.tolist()
        rate = server.rate()
        self.capacity = rate
        self._rate = rate
        self._began = began
        if server.capacity is not None:
            service = np.asarray(units, dtype=np.float64) / rate
            total = np.cumsum(service)
            self._b: list[float] = service.tolist()
            self._sum: list[float] = total.tolist()
            peaks = np.maximum.accumulate(arrivals - (total - service))
            self._max: list[float] = np.maximum(server.free, peaks).tolist()
            self._wall_start: float | None = None
        else:
            self._wall_start = max(server.free, float(arrivals.max())) if len(arrivals) else 0.0
        self._finish = server.free  # when the latest event reported is done
        self._last = -1  # its row
        self._begin = server.free  # when its service began
        self._spent = 0  # the units reported on it

    @property
    def wall(self) -> bool:
        """Whether service is wall time."""
        return self._wall_start is not None

    def _start(self, i: int) -> float:
        """When the event at row i begins its service."""
        last = self._last
        if i == last:
            return self._begin
        if i - 1 == last:
            before = self._finish
        else:
            # the events in between, served with the known work only
            s = self._sum
            done = s[last] if last >= 0 else 0.0
            before = s[i - 1] + max(self._finish - done, self._max[i - 1])
        return max(self._a[i], before)

    def latency(self, i: int, extra: int) -> float:
        """The event at row i's latency so far in cost units, the group at
        it having spent ``extra`` units on it already."""
        if self._wall_start is None:
            spent = self._spent if i == self._last else 0
            return (self._start(i) - self._a[i] + self._b[i]) * self._rate + spent + extra
        now = self._wall_start + time.perf_counter() - self._began
        return (now - self._a[i]) * self._rate if self._rate != math.inf else 0.0

    def done(self, i: int, extra: int) -> None:
        """A group is done with the event at row i, having spent ``extra``
        units (rows come in order; a row's groups one after the other)."""
        if self._wall_start is None:
            if i == self._last:
                self._spent += extra
            else:
                self._begin, self._last, self._spent = self._start(i), i, extra
            self._finish = self._begin + self._b[i] + self._spent / self._rate


class QueueLog:
    """Each query's latency per event, queueing included, in milliseconds
    and in cost units (see the module docstring); recorded per batch by the
    engine. Memory is fixed per query, whatever the length of the stream:
    count, sum and max are exact, as is the number of events over the
    query's bound (``bounds_ms`` judged in ms, ``bounds_units`` in cost
    units); p50 and p99 come from a log-spaced histogram, within
    ``ERROR`` (1%) of numpy's (``engine.histogram``). The latest batch's
    latencies are kept as they are (``latest``).

    >>> log = QueueLog(bounds_ms={"q": 500})
    >>> log.add("q", np.array([0.25, 1.0]), np.array([25.0, 100.0]))
    >>> s = log.summary("q")
    >>> s["ms"]["max"], s["units"]["mean"], s["over_bound"], s["over_bound_share"]
    (1000.0, 62.5, 1, 0.5)

    With ``bin_by(width)`` and the events' positions, it also keeps, per
    query and bin of ``width`` positions, the events, the sum and the
    largest of their latencies in ms (what a plot over the stream draws
    against a bound in ms); a bin's figures add up across batches:

    >>> log = QueueLog()
    >>> log.bin_by(10)
    >>> log.add("q", np.array([0.002, 0.004, 0.001]), np.array([1.0, 1.0, 1.0]), np.array([8, 9, 10]))
    >>> log.add("q", np.array([0.003]), np.array([1.0]), np.array([11]))
    >>> [(b, n, round(total, 9), top) for b, n, total, top in log.bins("q")]
    [(0, 2, 6.0, 4.0), (1, 2, 4.0, 3.0)]
    """

    #: the width of the bins of ``bins`` in positions (None: no bins kept)
    _bin_width: int | None = None

    #: the relative error of the quantiles
    ERROR = 0.01

    def __init__(
        self, bounds_ms: Mapping[str, float] | None = None, bounds_units: Mapping[str, float] | None = None
    ) -> None:
        self.bounds_ms = dict(bounds_ms or {})
        self.bounds_units = dict(bounds_units or {})
        self._ms: dict[str, LogHistogram] = {}
        self._units: dict[str, LogHistogram] = {}
        self._over: dict[str, int] = {}
        self._latest: dict[str, tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]] = {}
        # query -> bin -> [events, sum of ms, largest ms] (``bin_by``)
        self._bins: dict[str, dict[int, list[float]]] = {}

    def fresh(self) -> QueueLog:
        """An empty log with the same bounds (and bins)."""
        log = QueueLog(self.bounds_ms, self.bounds_units)
        log._bin_width = self._bin_width
        return log

    def bin_by(self, width: int) -> None:
        """Keep per-bin figures (``bins``) of ``width`` stream positions from
        the next batch on; memory grows with the stream's bins, not its events."""
        if width < 1:
            raise EngineError(f"QueueLog.bin_by: a bin is one position or more, found {width}")
        self._bin_width = width
        self._bins = {}

    def bins(self, query: str) -> list[tuple[int, int, float, float]]:
        """``query``'s bins in order: (bin, events, sum of their latencies in
        ms, the largest); empty without ``bin_by`` or before its first event."""
        found = self._bins.get(query, {})
        return [(b, int(found[b][0]), found[b][1], found[b][2]) for b in sorted(found)]

    def add(
        self,
        query: str,
        seconds: npt.NDArray[np.float64],
        units: npt.NDArray[np.float64],
        positions: npt.NDArray[np.int64] | None = None,
    ) -> None:
        """A batch's latencies of ``query`` (and its events' stream positions, for ``bins``)."""
        # a finish minus an arrival can come out a hair below zero (float cancellation); a latency cannot
        seconds = np.maximum(seconds, 0.0)
        ms = seconds * 1000
        if self._bin_width is not None and positions is not None and len(ms):
            self._add_bins(query, ms, np.asarray(positions, dtype=np.int64) // self._bin_width)
        for histograms, values in ((self._ms, ms), (self._units, units)):
            if query not in histograms:
                histograms[query] = LogHistogram(self.ERROR)
            histograms[query].add(values)
        # a bound in ms is judged in ms (in wall mode its units follow the measured speed);
        # the margin absorbs the float clock's cancellation (a finish minus an arrival)
        bound, judged = (self.bounds_ms, ms) if query in self.bounds_ms else (self.bounds_units, units)
        if query in bound:
            over = int(np.count_nonzero(judged > bound[query] * (1 + 1e-9)))
            self._over[query] = self._over.get(query, 0) + over
        self._latest[query] = (seconds, units)

    def _add_bins(self, query: str, ms: npt.NDArray[np.float64], bins: npt.NDArray[np.int64]) -> None:
        found, inverse = np.unique(bins, return_inverse=True)
        counts = np.bincount(inverse, minlength=len(found))
        sums = np.bincount(inverse, weights=ms, minlength=len(found))
        tops = np.full(len(found), -np.inf)
        np.maximum.at(tops, inverse, ms)
        mine = self._bins.setdefault(query, {})
        for b, n, total, top in zip(found.tolist(), counts.tolist(), sums.tolist(), tops.tolist(), strict=True):
            had = mine.get(b)
            mine[b] = [n, total, top] if had is None else [had[0] + n, had[1] + total, max(had[2], top)]

    def histogram(self, query: str) -> LogHistogram | None:
        """``query``'s latencies in ms (None before its first event)."""
        return self._ms.get(query)

    def latest(self, query: str) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
        """``query``'s latency at each event of the latest batch, in seconds and in cost units."""
        empty = np.zeros(0)
        return self._latest.get(query, (empty, empty))

    def summary(self, query: str) -> dict[str, object]:
        """Mean, p50, p99 and max in ms and in cost units, and, for a query
        with a bound, how many events were over it and their share."""
        if query not in self._ms:
            return {"events": 0}
        count = self._ms[query].count
        out: dict[str, object] = {"events": count}
        for name, histogram in (("ms", self._ms[query]), ("units", self._units[query])):
            p50, p99 = histogram.quantiles([50, 99])
            figures = {"mean": histogram.total / count, "p50": p50, "p99": p99, "max": histogram.max}
            out[name] = {k: round(v, 6) for k, v in figures.items()}
        if query in self._over:
            out["over_bound"] = self._over[query]
            out["over_bound_share"] = self._over[query] / count
        return out


def live_arrivals(n: int, clock: Callable[[], float] | None = None) -> npt.NDArray[np.float64]:
    """Arrivals of ``n`` events fed now (live): the clock's reading (by
    default ``time.perf_counter``, the server's clock when live)."""
    return np.full(n, (clock or time.perf_counter)())
