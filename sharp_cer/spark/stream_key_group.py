"""One lane and key group of a stream: the engine, fed the events the
watermark releases, emitting matches and the statistics of each release.
Its state is plain data (``snapshot`` / ``restore``: the engine's snapshot
and the group's own figures, never the compiled plan), so a restart
resumes the engine exactly where the last committed micro-batch left it. Nothing here imports PySpark at import time.

>>> from sharp_cer.language import parse_workload
>>> w = parse_workload('''
... [workload]
... name = "w"
... schema = "CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }"
... [[query]]
... name = "ab"
... text = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 5 EVENTS"
... ''')
>>> group = KeyGroupStream(Job(w, lanes=(("ab",),), bin_width=100), lane=0)
>>> out = group.release(['{"type": "A", "k": 1}'], [3], [0], now_ms=0)
>>> group = restore(snapshot(group))  # as a restart would
>>> out = group.release(['{"type": "B", "k": 1}'], [7], [0], now_ms=40)
>>> alerts = out.filter(pa.compute.equal(out["kind"], "match"))
>>> alerts.select(["query", "start", "end", "attributes"]).to_pylist()  # the events whole: no join needed
[{'query': 'ab', 'start': 3, 'end': 7, 'attributes': ['{"type": "A", "k": 1}', '{"type": "B", "k": 1}']}]
>>> sorted(group.recent)  # kept while a live run reaches them: the A at 3 may start another match
[3, 7]
>>> {r["bin"]: r["value"] for r in out.to_pylist() if r["kind"] == E2E}  # one match, 40 ms after arrival
{40: 1.0}
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import pickle
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from sharp_cer._moved import old_names
from sharp_cer.errors import SurfaceError
from sharp_cer.events.batch import EventBatch
from sharp_cer.events.checked import checked_arrow
from sharp_cer.events.loaders import load_jsonl
from sharp_cer.events.match import Match
from sharp_cer.language import Workload

from .columns import ALERT, COUNTER, E2E, TYPE
from .recent_events import RecentEvents
from .telemetry import MAX_COUNTERS, MIN_COUNTERS, Telemetry, read_telemetry, telemetry_table
from .worker import _NO_LATENESS, Job, KeyGroupRun

#: ``E2E`` rows of a match's end-to-end latency: bin = milliseconds from the
#: arrival of its last event in the stream to its emission (rounded down to E2E_MS)
E2E_MS = 10
#: the format of a stream's state and of its checkpoint's workload file.
#: 1: sharp-cer 0.1.0 as first released (no format recorded; the engine
#: re-pickled whole into the state each micro-batch, beside the fingerprint);
#: 2: the engine's state split from a token naming it (kept in worker memory);
#: 3: one key group per shuffle partition by default, not four (a format-2
#: checkpoint's events would reach other key groups than the ones holding their state);
#: 4: sharp-cer 0.2.0: the engine split into plan, state and observers and its classes renamed
#: (a format-3 state's pickled engine does not load); the checkpoint's workload file
#: may list workload versions and lanes (issue 39), which format 4 without them reads as one version;
#: 5: events held in the state as typed columns, not JSON lines (issue 38)
FORMAT = 5
#: counters that are per release already (the rest are running totals, sent as increments)
_PER_RELEASE = frozenset({"events", "over_bound", "ms_sum"}) | MAX_COUNTERS | MIN_COUNTERS


def check_live_bounds(workload: Workload, shedder: str | None) -> None:
    """Refuse to shed a live stream to a bound given as a fraction: it is a
    fraction of the query's mean latency in an unshedded run under the same
    arrivals, and a live stream's events are seen once, so it has none.

    >>> from sharp_cer.language import parse_workload
    >>> w = parse_workload('''
    ... [workload]
    ... name = "w"
    ... schema = "CREATE STREAM S { EVENT A { k:int } }"
    ... [[query]]
    ... name = "q"
    ... latency_bound = "40%"
    ... text = "SELECT * WHERE A WITHIN 1 EVENTS"
    ... ''')
    >>> check_live_bounds(w, None)  # nothing is shed: the bound is only reported
    >>> check_live_bounds(w, "sharp")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sharp_cer.errors.SurfaceError: query q: latency_bound = "40%" is a fraction of ... or stream without --shedder
    """
    if shedder is None:
        return
    for q in workload.queries:
        if q.shed and q.latency_bound is not None and q.latency_bound.fraction is not None:
            raise SurfaceError(
                f'query {q.name}: latency_bound = "{q.latency_bound}" is a fraction of the query\'s mean latency '
                "in an unshedded run, and a live stream has no unshedded run (each event is seen once): "
                'give the bound in milliseconds ("250ms") or cost units (500), or stream without --shedder'
            )


class KeyGroupStream(KeyGroupRun):
    """A ``KeyGroupRun`` that never finishes: ``release`` feeds events and
    returns their matches and the statistics since the last release. It
    sheds to bounds in milliseconds or cost units, never to fractions
    (``check_live_bounds``)."""

    def __init__(self, job: Job, lane: int) -> None:
        check_live_bounds(job.workload, job.shedder)
        super().__init__(job, lane)
        self.sent: dict[tuple[str, str], float] = {}
        # the released events a later match may still hold (an alert carries its events whole),
        # forgotten once no live run reaches them, so it stays within the windows
        self.recent = RecentEvents()
        # workload versions to move to, each from a stream position on (``switch``), oldest first
        self.pending: list[tuple[int, Job]] = []
        if self.detector is not None:
            self.detector.version = job.version

    def switch(self, job: Job, position: int) -> None:
        """Move to ``job``'s workload for the events from stream ``position``
        on (the first the stream numbered under it): events before it, still
        held, are released under the workload they came under (the rule of
        ``Detector.update``: a query added at p sees nothing before p)."""
        latest = self.pending[-1][1] if self.pending else self.job
        if job.fingerprint != latest.fingerprint:
            self.pending.append((position, job))

    def _switch_to(self, job: Job) -> None:
        """``Detector.update`` to the lane's queries in ``job``."""
        assert self.detector is not None
        lane = job.lane_workload(self.lane)
        self.detector.update(lane)
        self.job, self.workload = job, lane
        self.detector.version = job.version

    def as_data(self) -> dict[str, Any] | None:
        """The group's state as plain data: its engine's (``Engine.snapshot``:
        partitions, tECS nodes, counters, with the plan's fingerprint), the
        detector's positions, the counters sent, the events live runs still
        reach, the pending versions, the server's backlog, and the job (the
        workload: data, not compiled). None where that is not all of it yet:
        a shedder's statistics and an updated detector's query groups are not
        in an engine's snapshot (``snapshot`` keeps such a group whole)."""
        detector = self.detector
        if detector is None or detector.shedder is not None or detector.versions or self.held is not None:
            return None
        engine = detector.engine
        return {
            "format": DATA_FORMAT,
            "job": _job_bytes(self.job),
            "lane": self.lane,
            "engine": engine.snapshot(),
            "positions": (detector._last_position, detector._next_position, detector._latest_time),
            "sent": self.sent,
            "recent": self.recent,
            "pending": [(at, _job_bytes(job)) for at, job in self.pending],
            "server_ahead": engine.observers.ahead(),
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> KeyGroupStream:
        """The group ``as_data`` gave: a new one of its job and lane (the
        plan from this process's cache), its engine restored."""
        if data.get("format") not in (1, DATA_FORMAT):
            raise SurfaceError(
                f"stream state: a key group's state of format {data.get('format')}\n"
                f"  expected: format {DATA_FORMAT} (written by this sharp-cer)\n"
                "  hint: finish the stream with the sharp-cer that wrote it, or start with a new --checkpoint and --out"
            )
        group = cls(_job_of(data["job"]), int(data["lane"]))
        detector = group.detector
        assert detector is not None
        detector.engine.restore(data["engine"])
        detector._last_position, detector._next_position, detector._latest_time = data["positions"]
        group.sent = data["sent"]
        # data format 1 kept the events as Python values (position -> (time, event))
        recent = data["recent"]
        group.recent = RecentEvents.from_dict(recent) if isinstance(recent, dict) else recent
        group.pending = [(at, _job_of(job)) for at, job in data["pending"]]
        detector.engine.observers.resume(data["server_ahead"])
        return group

    def __getstate__(self) -> dict[str, Any]:
        # a live server's timeline is this process's clock, whose origin
        # another host (or a new process) does not share: the snapshot keeps
        # how far the server's work reaches past now, not the reading, so a
        # restore resumes the same backlog instead of queueing behind the old clock
        state = self.__dict__.copy()
        if self.detector is not None:
            state["server_ahead"] = self.detector.engine.observers.ahead()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        ahead = state.pop("server_ahead", -math.inf)  # a snapshot without it: the server starts idle
        if isinstance(state.get("recent"), dict):  # pickled whole before RecentEvents (data format 1)
            state["recent"] = RecentEvents.from_dict(state["recent"])
        self.__dict__.update(state)
        if self.detector is not None:
            self.detector.engine.observers.resume(ahead)

    def release(
        self, events: pa.Table | Sequence[str], positions: Sequence[int], arrived: Sequence[int], now_ms: int
    ) -> pa.Table:
        """Process released events (validated already: a table of their type
        and typed attributes, as stage 2 holds them, or JSON lines; their
        positions in stream order, the arrival of each in ms) at wall time
        ``now_ms``; a pending ``switch`` applies between the events before
        its position and the ones after."""
        table = events if isinstance(events, pa.Table) else lines_batch(self.job.workload.schema, events, positions)
        parts = []
        while self.pending:
            at, job = self.pending[0]
            cut = int(np.searchsorted(np.asarray(positions, dtype=np.int64), at))
            if cut == len(positions):
                break  # no event from its position on yet
            if cut:
                parts.append(self._release(table.slice(0, cut), positions[:cut], arrived[:cut], now_ms))
                table, positions, arrived = table.slice(cut), positions[cut:], arrived[cut:]
            self.pending.pop(0)
            self._switch_to(job)
        if parts:
            return pa.concat_tables([*parts, self._release(table, positions, arrived, now_ms)])
        return self._release(table, positions, arrived, now_ms)

    def _release(self, table: pa.Table, positions: Sequence[int], arrived: Sequence[int], now_ms: int) -> pa.Table:
        batch = checked_arrow(table, self.workload.schema, positions)
        # kept as they came (no text made): an alert writes its few events as JSON
        self.recent.add(batch.positions, *_times(batch), table)
        assert self.detector is not None
        found = self.detector.feed(batch)
        stats = self._statistics(self.detector)
        # each release reports its own latencies; emptied now, the logs stay out of the snapshot
        self.detector.engine.observers.fresh()
        self.match_bins.clear()
        alerts = self._alerts(found)
        self._forget()
        return pa.concat_tables(
            [
                alerts,
                *(with_alert_columns(t) for t in (self._increments(stats), _e2e(found, positions, arrived, now_ms))),
            ]
        )

    def advance(self, time_ns: int) -> pa.Table:
        """Move event time to ``time_ns`` with no event (a watermark's
        timer, or the end of the stream) and return the trailing absences'
        alerts it fires, with the counters that changed."""
        assert self.detector is not None
        found = self.detector.advance(time_ns)
        stats = self._statistics(self.detector)
        self.detector.engine.observers.fresh()
        self.match_bins.clear()
        alerts = self._alerts(found)
        self._forget()
        return pa.concat_tables([alerts, with_alert_columns(self._increments(stats))])

    def next_deadline(self) -> int | None:
        """The earliest deadline (ns) of the key group's pending trailing absences (None: none)."""
        assert self.detector is not None
        absences = self.detector.engine.absences
        return absences.next_deadline() if absences is not None else None

    def _alerts(self, found: list[Match]) -> pa.Table:
        """The matches as rows, each with its events as JSON (in ``events``
        order) and the time of its last event."""
        rows = self._matches(found)
        named = rows.column("events").to_pylist()
        # an event in several matches is written once
        texts = {p: self._text(row) for p, row in self.recent.rows(p for e in named for p in e).items()}
        ends = [self.recent.time(m.end) for m in found]
        return with_alert_columns(rows, [[texts[p] for p in e] for e in named], ends)

    def _text(self, row: dict[str, Any]) -> str:
        """A released event as an alert shows it: JSON of its type and its type's attributes, in order."""
        event = self._types[row[TYPE]]
        return json.dumps({TYPE: row[TYPE], **{a: row[a] for a in event.attributes}})

    @functools.cached_property
    def _types(self) -> dict[str, Any]:
        return {e.name: e for e in self.job.workload.schema.event_types()}

    def _forget(self) -> None:
        """Drop the events no live run reaches (released in stream order:
        the oldest come first)."""
        assert self.detector is not None
        self.recent.forget(self.detector.engine.oldest_position())

    def _increments(self, stats: pa.Table) -> pa.Table:
        """Running-total counters turned into what changed since the last release."""
        keep: list[Telemetry] = []
        for row in read_telemetry(stats):
            if row.kind == COUNTER and row.name is not None and row.name not in _PER_RELEASE:
                key = (row.query, row.name)
                row, self.sent[key] = row._replace(value=row.value - self.sent.get(key, 0.0)), row.value
                if not row.value:
                    continue
            keep.append(row)
        return telemetry_table(keep)


def with_alert_columns(table: pa.Table, events: list[Any] | None = None, times: list[Any] | None = None) -> pa.Table:
    """``table`` with the alert's columns (null unless given)."""
    n = table.num_rows
    table = table.append_column(
        ALERT.field(0), pa.array(events, ALERT.field(0).type) if events else pa.nulls(n, ALERT.field(0).type)
    )
    return table.append_column(ALERT.field(1), pa.array(times, pa.int64()) if times else pa.nulls(n, pa.int64()))


def _times(batch: EventBatch) -> tuple[np.ndarray, np.ndarray]:
    """Each event's primary time in ns, and whether it has one (its type has
    one, and its value is not null)."""
    times = np.zeros(len(batch), dtype=np.int64)
    timed = np.zeros(len(batch), dtype=bool)
    for code, event in enumerate(batch.event_types):
        if event.primary_time is None:
            continue
        mine = batch.codes == code
        column = batch.columns[event.primary_time]
        times[mine] = column.values[mine]
        timed[mine] = column.valid[mine]
    return times, timed


def check_format(found: int, where: str) -> None:
    """Refuse state written in another format than this sharp-cer's,
    saying which wrote it and what to do.

    >>> check_format(FORMAT, "ck")
    >>> check_format(1, "ck")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sharp_cer.errors.SurfaceError: ck: error: this checkpoint was written by an older sharp-cer (stream format 1)
      expected: stream format 5
      hint: finish that stream with the sharp-cer that wrote it ..., then start this version with a new --checkpoint...
    """
    if found == FORMAT:
        return
    older = found < FORMAT
    raise SurfaceError(
        f"{where}: error: this checkpoint was written by {'an older' if older else 'a newer'} sharp-cer "
        f"(stream format {found})\n  expected: stream format {FORMAT}\n  hint: "
        + (
            "finish that stream with the sharp-cer that wrote it (sharp-cer stream without --trigger flushes it), "
            "then start this version with a new --checkpoint and --out"
            if older
            else "upgrade sharp-cer to the version that wrote it"
        )
    )


def _e2e(found: list[Match], positions: Sequence[int], arrived: Sequence[int], now_ms: int) -> pa.Table:
    """Per query, a histogram of its matches' end-to-end latency."""
    if not found:
        return telemetry_table([])
    order = np.asarray(positions, dtype=np.int64)
    at = np.asarray(arrived, dtype=np.int64)[np.searchsorted(order, [m.end for m in found])]
    buckets = (np.maximum(now_ms - at, 0) // E2E_MS) * E2E_MS
    counts: dict[tuple[str, int], int] = {}
    for m, b in zip(found, buckets.tolist(), strict=True):
        counts[(m.query, b)] = counts.get((m.query, b), 0) + 1
    return telemetry_table(Telemetry(E2E, q, b, None, float(n)) for (q, b), n in sorted(counts.items()))


def lines_batch(schema: Any, texts: Sequence[str], positions: Sequence[int]) -> pa.Table:
    """Events given as JSON lines (``KeyGroupStream.release``'s other input),
    loaded and judged by the JSON lines loader, as the table of their type and
    typed attributes that stage 2 holds; a line it rejects is an error (the
    stream's own rows never take this way)."""
    batch, report = load_jsonl("\n".join(texts) + "\n", schema, allowed_lateness=_NO_LATENESS)
    if report.dead_letters:
        raise SurfaceError(f"KeyGroupStream.release: a line is not a valid event: {report.dead_letters[0].reason}")
    table = batch.to_arrow()
    return table.select([c for c in table.column_names if c != "position"])


#: a snapshot's first byte: the key group's state as data (``KeyGroupStream.as_data``),
#: or the whole group pickled (a shedder's or an updated detector's state, not data yet)
_DATA, _WHOLE = b"D", b"W"
#: the format of a key group's state as data; another one is refused.
#: 1: the released events a match may hold kept as Python values; 2: as the Arrow tables
#: they were released in (``RecentEvents``; a format-1 state is read and converted)
DATA_FORMAT = 2


def snapshot(state: KeyGroupStream) -> bytes:
    """The bytes of a key group's state: its engine's state and the group's
    own figures as plain data (``as_data``: nothing compiled; the plan is
    rebuilt from the workload where it is restored, once per process); a
    group with a shedder or an updated detector, whole (cloudpickle: its
    compiled conditions are closures; the tECS is deep, hence a thread with room)."""
    data = state.as_data()
    if data is not None:
        return _DATA + pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    from pyspark import cloudpickle

    return _WHOLE + _deep(cloudpickle.dumps, state)  # type: ignore[no-any-return]


def restore(data: bytes) -> KeyGroupStream:
    """A key group's state from ``snapshot``'s bytes."""
    kind, body = bytes(data[:1]), memoryview(data)[1:]
    if kind == _DATA:
        return KeyGroupStream.from_data(pickle.loads(body))
    if kind == _WHOLE:
        return _deep(pickle.loads, body)  # type: ignore[no-any-return]
    raise SurfaceError(
        "stream state: a key group's snapshot of an unknown kind\n"
        f"  expected: stream format {FORMAT} (written by this sharp-cer)\n"
        "  hint: start with a new --checkpoint and --out"
    )


#: each job pickled once per process (by identity: kept alive beside its bytes), and each job read back
#: once per process (by its bytes' digest): the plan cache (``worker.lane_plan``) is keyed by its workload
_JOB_BYTES: dict[int, tuple[Job, bytes]] = {}
_JOBS: dict[bytes, Job] = {}


def _job_bytes(job: Job) -> bytes:
    found = _JOB_BYTES.get(id(job))
    if found is None or found[0] is not job:
        found = _JOB_BYTES[id(job)] = (job, pickle.dumps(job, protocol=pickle.HIGHEST_PROTOCOL))
    return found[1]


def _job_of(data: bytes) -> Job:
    key = hashlib.blake2b(data, digest_size=16).digest()
    job = _JOBS.get(key)
    if job is None:
        job = _JOBS[key] = pickle.loads(data)
    return job


def _deep(fn: Callable[[Any], Any], arg: Any) -> Any:
    """``fn(arg)`` on a thread with a large stack: pickling the tECS's
    linked nodes recurses once per node of a chain."""
    result: dict[str, Any] = {}

    def run() -> None:
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(1_000_000)
        try:
            result["value"] = fn(arg)
        except BaseException as error:  # re-raised on the caller's thread
            result["error"] = error
        finally:
            sys.setrecursionlimit(limit)

    size = threading.stack_size(512 * 1024 * 1024)
    try:
        thread = threading.Thread(target=run)
        thread.start()
    finally:
        threading.stack_size(size)
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


if not TYPE_CHECKING:  # old names warn; type checkers see only the new ones
    __getattr__ = old_names(__name__, {"StreamGroup": "KeyGroupStream"}, globals())
