"""The two stateful processors of a stream (``transformWithStateInPandas``).

``Sequencer`` (one key for the whole stream, no timers): positions and
lateness (``stream_input.number_rows``). State: ``cursor`` = (next
position, largest time so far, the workload's signature, with the number
of a version the running query moved to, ``stream_versions``).

``KeyGroups`` (key = lane and key group, event time): holds each event
until the watermark passes its time, then feeds the group's engine the
released events in stream order. Stage 1 stamps every row with the
watermark the next micro-batch will run with (``stream_input.horizon_ms``),
so a group releases at once, in the micro-batch that reads them, the
events that watermark passes, rather than one micro-batch later when its
timer fires; the timer stays for the events still held. The released
sequence is the same (stream order), only sooner. State per key:

- ``buffer`` (list): the events not yet released: position, time the
  watermark judges them by (ns), arrival (ms), then the event in its own
  columns (``stream_input.carried_columns``: type and typed attributes, never text);
- ``engine`` (value): the state's format (``stream_key_group.FORMAT``), the
  workload's fingerprint and a token naming the snapshot;
- ``snapshot`` (value): the group's state as data, exactly as the last
  committed micro-batch left it (``stream_key_group.snapshot``: the
  engine's snapshot, tECS nodes, partitions and counters, and the events
  live runs still reach; the plan is rebuilt from the workload where it is
  restored, once per process); a group with a shedder or an updated
  detector is still pickled whole;
- one timer, at the time of the oldest event still held;
- ``cursor`` (value; the one-operator plan only, ``stream._one_operator``):
  the key group's copy of stage 1's cursor (next position, largest time so
  far, and the parts of the workload a stream keeps with the fingerprint of
  the one it runs), updated in each
  micro-batch that reads files (every key group gets each file's summary).

What a micro-batch writes: Spark calls a key only for its rows and expired
timers; a key group's engine snapshot and token are written only when it
released events, fired an absence or switched workloads (a group that only
buffers writes its buffer; one that neither, nothing but its cursor).

A worker keeps each group's engine in memory after a release, under the
token it wrote; the next release uses that copy when the state's token is
the same (the committed state is the one the worker left), and otherwise
restores the snapshot (a restart, a retried micro-batch, or a group last
run by another Python worker: Spark gives a task any idle one).

A flush row releases everything held. Lane -1 is not a lane: it carries
dead letters and counters to the output unchanged.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)
from pyspark.sql.types import StructType

from sharp_cer.language import Workload

from . import stream_versions
from .columns import (
    ALERT,
    ARRIVED,
    CLOCK,
    COUNT,
    DEAD,
    DEAD_LETTER,
    EVENT,
    FILE,
    FIRST,
    FLUSH,
    HORIZON,
    LETTER,
    LETTER_COLUMNS,
    LETTER_FIELDS,
    LINE,
    ROUTE,
    ROW_KIND,
    SEQ,
    STREAM_OUTPUT,
    SUMMARY,
    TEXT,
    TICKS,
    TS,
    TYPE,
    VALUE,
    VERSION,
    arrow_ddl,
    rows_of,
)
from .prepare import attribute_kinds
from .stream_input import (
    KEY_GROUPS_PART,
    NONE,
    Cursor,
    carried_columns,
    check_signature,
    horizon_ms,
    no_event,
    number_key_group,
    number_rows,
    python_values,
)
from .stream_key_group import FORMAT, KeyGroupStream, check_format, restore, snapshot, with_alert_columns
from .stream_packing import unpack_rows
from .telemetry import ENGINE, counter, telemetry_table
from .worker import Job

#: the counter of engines restored from the state's snapshot (not the worker's own copy)
RESTORED = "engines_restored"
#: the key of stage 1's signature naming the version the running query moved to (``stream_versions``)
MOVED_PART = "workload version moved to"
#: the key of the workload's fingerprint in a key group's cursor (the one-operator plan)
FINGERPRINT = "workload fingerprint"
#: the stream's columns, in order
COLUMNS = STREAM_OUTPUT.names

#: each key group's engine, kept in the worker's memory across micro-batches
#: with the token of the state it matches: (fingerprint, lane, key group) -> (token, engine)
_ENGINES: dict[tuple[str, int, int], tuple[str, KeyGroupStream]] = {}


#: the schema of a stream's cursor (stage 1's, and each key group's copy in the one-operator plan)
CURSOR_DDL = "position bigint, latest bigint, signature string"


def state_schemas(**ddl: str) -> dict[str, StructType | str]:
    """Each state variable's schema (given as DDL) parsed here, on the
    driver, by the parser pyspark's state server uses
    (``CatalystSqlParser.parseTableSchema``), so that a task registers its
    state variables without asking the JVM to parse them: a round trip per
    variable, task and micro-batch. Where no Spark runs in this process (a
    processor made in a test), the DDL itself, for the worker to have parsed."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or context._jvm is None:
        return dict(ddl)
    parser = getattr(getattr(context._jvm.org.apache.spark.sql.catalyst.parser, "CatalystSqlParser$"), "MODULE$")
    return {name: StructType.fromJson(json.loads(parser.parseTableSchema(text).json())) for name, text in ddl.items()}


class Sequencer(StatefulProcessor):
    """Stage 1 (see the module docstring)."""

    def __init__(
        self,
        workload: Workload,
        routes: list[int],
        columns: list[str],
        order: list[str] | None,
        delay_ms: int,
        key_groups: int,
        version: int = 0,
        registry: str | None = None,
        job: Job | None = None,
        stage_one: Sequence[Sequence[str]] = (),
    ) -> None:
        self.columns = columns
        self.order = order
        self.delay_ms = delay_ms
        self.workload = workload
        self.routes = routes
        self.key_groups = key_groups
        self.signature = {**workload.signature(), KEY_GROUPS_PART: str(key_groups)}
        #: the number of the version the query started with, and where later versions' jobs are
        self.version = version
        self.registry = registry
        self.job = job
        self.schemas = state_schemas(cursor=CURSOR_DDL)
        # the lanes Spark's expression routes (None: every lane); the others stage 1 routes
        # (``stream_versions.stage_one_routes``): lanes added while a query ran, and after its restarts
        ones = {tuple(spec) for spec in stage_one}
        self.spark_routed = (
            None
            if job is None
            else {lane.partition_attributes for lane in stream_versions.job_lanes(job)
                  if lane.queries and lane.partition_attributes not in ones}
        )  # fmt: skip

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.cursor = handle.getValueState("cursor", self.schemas["cursor"])

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        frame = _named(rows, self.columns)
        asked = frame[frame[ROW_KIND] == VERSION]
        frame = frame[frame[ROW_KIND] != VERSION]
        stored = self.cursor.get()  # None where it has no value: one round trip, not two
        saved = json.loads(str(stored[2])) if stored is not None else {}
        # the version in force: one moved to inside the query (kept in the cursor's signature, so
        # that the state's schema stays the one older checkpoints have), if later than the query's own
        moved = int(saved.pop(MOVED_PART, -1))
        number, signature = (moved, self._signature(moved)) if moved > self.version else (self.version, self.signature)
        switch, told = None, None
        if stored is None:
            cursor = Cursor(0, NONE, json.dumps(signature))
        else:
            cursor = Cursor(int(stored[0]), int(stored[1]), str(stored[2]))
            # the queries may change (issue 39); the schema, lateness, capacity and key groups may not
            check_signature(json.dumps(_fixed(saved)), _fixed(signature), "stream state (positions)")
            if saved != signature:
                switch = cursor.position  # a restart with a new workload: it applies from the next position on
        wanted = max((int(t) for t in asked[TEXT] if str(t).isdigit()), default=-1)
        if self.registry is not None and wanted > number:
            # a version announced while the query runs: from the first position of this micro-batch
            # (a micro-batch redone after a crash reads the same control file: the same position)
            number, signature, switch, told = wanted, self._signature(wanted), cursor.position, str(wanted)
        kept = {**signature, MOVED_PART: str(number)} if number > self.version else signature
        cursor = Cursor(cursor.position, cursor.latest, json.dumps(kept))
        lateness = self.workload.allowed_lateness
        routes, found = self._routing(number)
        out, cursor = number_rows(frame, cursor, self.workload.schema, lateness, routes, self.order, self.delay_ms)
        if found:  # the lanes stage 1 routes, by each event's key
            values = python_values(out, attribute_kinds(self.workload.schema))
            kinds, types = out[ROW_KIND].tolist(), out[TYPE].tolist()
            extra = stream_versions.stage_one_routes(kinds, types, values, found, self.key_groups)
            out[ROUTE] = [[*r, *e] if e else r for r, e in zip(out[ROUTE], extra, strict=True)]
        if switch is not None:  # told to every lane and key group, as a flush is
            kinds = attribute_kinds(self.workload.schema)
            out = pd.concat([out, version_row(out, switch, routes, told, kinds)], ignore_index=True)
        self.cursor.update((cursor.position, cursor.latest, cursor.signature))
        yield out

    def _routing(self, number: int) -> tuple[list[int], list[tuple[int, Any]]]:
        """Every route of version ``number`` and of the query's own (where
        flushes and versions go), and its lanes stage 1 routes."""
        if self.spark_routed is None or self.job is None:
            return self.routes, []
        job = self.job if number <= self.version else stream_versions.load(str(self.registry), number)
        found = stream_versions.stage_one_lanes(job, self.spark_routed)
        every = sorted({*self.routes, *stream_versions.every_route(job, self.key_groups)})
        return every, found

    def _signature(self, number: int) -> dict[str, str]:
        """The signature of version ``number`` (from the stream's registry), as stage 1 keeps it."""
        assert self.registry is not None
        job = stream_versions.load(self.registry, number)
        return {**job.workload.signature(), KEY_GROUPS_PART: str(self.key_groups)}

    def close(self) -> None:
        pass


class KeyGroups(StatefulProcessor):
    """Stage 2 (see the module docstring)."""

    def __init__(
        self,
        job: Job,
        columns: list[str],
        registry: str | None = None,
        delay_ms: int | None = None,
        packed: bool = False,
    ) -> None:
        self.job = job
        self.columns = columns
        #: rows come packed, a key group's rows of an input batch in one (``stream_packing``)
        self.packed = packed
        #: the one-operator plan (``stream.ONE``): each key group numbers its own rows (``number_key_group``)
        #: with the watermark delay ``delay_ms``; None: stage 1 numbered them
        self.delay_ms = delay_ms
        #: the event's columns (``stream_input.carried_columns``), as the buffer holds them
        self.carried = pa.schema(carried_columns(attribute_kinds(job.workload.schema)))
        #: where the jobs of versions moved to inside the running query are (``stream_versions``)
        self.registry = registry
        # the event's columns under names of their own: the state's schema holds no user name
        carried = ", ".join(f"c{i} {arrow_ddl(pa.schema([f])).split(' ', 1)[1]}" for i, f in enumerate(self.carried))
        self.schemas = state_schemas(
            engine="format int, fingerprint string, token string",
            snapshot="data binary",
            buffer=f"seq bigint, clock bigint, arrived bigint, {carried}",
            # the earliest deadline (ns) of the group's pending trailing absences, timed like held events
            deadline="at bigint",
            cursor=CURSOR_DDL,
        )

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        schemas = self.schemas
        self.engine = handle.getValueState("engine", schemas["engine"])
        self.snapshot = handle.getValueState("snapshot", schemas["snapshot"])
        self.buffer = handle.getListState("buffer", schemas["buffer"])
        self.deadline = handle.getValueState("deadline", schemas["deadline"])
        if self.delay_ms is not None:  # the key group's copy of the stream's cursor (``number_key_group``)
            self.cursor = handle.getValueState("cursor", schemas["cursor"])

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        lane = int(key[0])
        frame = unpack_rows(rows) if self.packed else _named(rows, self.columns)
        switch = None
        if self.delay_ms is not None:
            if lane == TICKS:  # rows that only move the watermark
                return
            frame, switch, letters, horizon = self._numbered(frame, lane)
            if len(letters):
                yield _passed_on(letters)
            if lane < 0:
                return
        elif lane < 0:
            yield _passed_on(frame)
            return
        else:
            horizon = int(frame[HORIZON].max())
        new = frame.loc[frame[ROW_KIND] == EVENT, [SEQ, CLOCK, ARRIVED, *self.carried.names]]
        flushes = frame[frame[ROW_KIND] == FLUSH]
        flush = bool(len(flushes))
        # a flush row's clock is the stream's latest time + 1 ms (stream_input.number_rows)
        latest = int(flushes[CLOCK].max()) - 1_000_000 if flush else None
        # a new workload version, for the events from its row's position on (``Sequencer``)
        versions = frame[frame[ROW_KIND] == VERSION]
        if len(versions):  # one per micro-batch: stage 1 tells the version in force from the batch's first position
            told = versions.iloc[-1]
            number = told[TEXT]
            moved = number is not None and str(number).isdigit() and self.registry is not None
            job = stream_versions.load(self.registry, int(number)) if moved else self.job  # type: ignore[arg-type]
            switch = (int(told[SEQ]), job)
        yield from self._release(key, timerValues, flush, horizon, new, latest, switch)

    def _numbered(
        self, frame: pd.DataFrame, lane: int
    ) -> tuple[pd.DataFrame, tuple[int, Job] | None, pd.DataFrame, int]:
        """The one-operator plan: the key group's rows numbered by its copy of
        the stream's cursor (``number_key_group``), flushes at the stream's
        latest time; the dead letters it writes (lane -1: the bad rows, the
        late events no lane reads and the rows counter; another: its late
        events, by the key group of an event's first route only, so that each
        is one dead letter); a switch to the query's workload from this
        micro-batch's first position where the group ran another one (a
        restart with changed queries: what stage 1 tells the key groups in
        the two-operator plan); and the watermark of the next micro-batch."""
        workload = self.job.workload
        stored = self.cursor.get()  # None where it has no value: one round trip, not two
        # what the cursor keeps of the workload: the parts a stream may not change, and its fingerprint
        fixed = {**_fixed(workload.signature()), KEY_GROUPS_PART: str(self.job.key_groups)}
        kept = json.dumps({**fixed, FINGERPRINT: self.job.fingerprint})
        cursor = Cursor(0, NONE, kept)
        if stored is not None:
            cursor = Cursor(int(stored[0]), int(stored[1]), str(stored[2]))
        saved = json.loads(cursor.signature)
        ran = saved.pop(FINGERPRINT, None)
        # the checkpoint's record of the workload is checked on the driver; this is the state's own check
        check_signature(json.dumps(saved), fixed, "stream state (positions)")
        summaries = int((frame[ROW_KIND] == SUMMARY).sum())
        switch = None
        if ran != self.job.fingerprint and lane >= 0 and self.engine.exists():
            switch = (cursor.position, self.job)
        numbered, after = number_key_group(frame, cursor, workload.schema, workload.allowed_lateness)
        if summaries or switch is not None:
            self.cursor.update((after.position, after.latest, kept))
        first = numbered[FIRST].astype(object).where(numbered[FIRST].notna(), True).astype(bool)
        letters = numbered[(numbered[ROW_KIND] == DEAD) & first]
        horizon = horizon_ms(after.latest, self.delay_ms or 0)
        if lane < 0:
            if summaries:  # the rows the micro-batch read (``number_rows``'s counter)
                counted = {ROW_KIND: COUNT, TEXT: "rows", VALUE: float(after.position - cursor.position)}
                letters = pd.concat([letters, pd.DataFrame([counted])], ignore_index=True)
            return numbered.iloc[:0], None, letters, horizon
        events = numbered[numbered[ROW_KIND] == EVENT]
        flushes = frame[frame[ROW_KIND] == FLUSH].copy()
        if not len(flushes):  # the usual case: no concat (it copies every column to unify their types)
            return events.reset_index(drop=True), switch, letters, horizon
        flushes[SEQ] = after.position
        flushes[CLOCK] = max(0 if after.latest == NONE else after.latest, 0) + 1_000_000
        return pd.concat([events, flushes], ignore_index=True), switch, letters, horizon

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[pd.DataFrame]:
        yield from self._release(key, timerValues, flush=False)

    def _release(
        self,
        key: Any,
        timer_values: TimerValues,
        flush: bool,
        horizon: int = 0,
        new: pd.DataFrame | None = None,
        latest: int | None = None,
        switch: tuple[int, Job] | None = None,
    ) -> Iterator[pd.DataFrame]:
        """Release the held and ``new`` events the watermark (or ``horizon``)
        passes, then fire the trailing absences whose deadline the watermark
        (or, at a flush, the stream's ``latest`` time) passed. Each state
        call is a round trip to the JVM: new events go to the buffer only if
        they stay held, and a key that holds nothing and waits for no
        deadline has no timer."""
        lane = int(key[0])
        had = self.buffer.exists()  # a key holds events exactly when it has a timer for them
        deadline = self.deadline.get()  # None where it has no value
        due = int(deadline[0]) if deadline is not None else None
        timed = had or due is not None  # whether the key may have timers
        # what the next micro-batch's watermark would release goes now (stage 1 knows that watermark)
        held = self._held(list(self.buffer.get()) if had else [], new)
        clocks = held[CLOCK].to_numpy(np.int64)
        watermark = max(timer_values.getCurrentWatermarkInMs(), horizon)
        limit = math.inf if flush else watermark * 1_000_000
        # the released prefix: stream order, each event at or behind the watermark
        beyond = clocks > limit
        n = int(np.argmax(beyond)) if beyond.any() else len(clocks)
        # event time to move the engine to: every event at or behind it is released by now
        lateness = self.job.workload.allowed_lateness
        moved = latest if flush and latest is not None else watermark * 1_000_000 + lateness
        fire = due is not None and due + lateness < moved
        timer = max(-(-int(clocks[n]) // 1_000_000), watermark + 1) if n < len(held) else None
        if n or (new is not None and len(new)):
            if n < len(held):
                self.buffer.put(list(held.iloc[n:].itertuples(index=False, name=None)))
            elif had:
                self.buffer.clear()
        if not n and not fire and switch is None:
            self._time(timer, due, timed)
            return
        cache = (self.job.fingerprint, lane, int(key[1]))
        # a key group with no state yet starts with the version it is told (a lane the query's own workload lacks)
        state, restored = self._load(lane, cache, switch[1] if switch is not None else self.job)
        if switch is not None:
            state.switch(switch[1], switch[0])
        now = int(time.time() * 1000)
        parts = [with_alert_columns(telemetry_table([]))]
        if n:
            released = held.iloc[:n]
            events = events_table(self.carried, {name: released[name].to_numpy() for name in self.carried.names})
            parts.append(state.release(events, released[SEQ].tolist(), released[ARRIVED].tolist(), now))
        due = state.next_deadline()
        if due is not None and due + lateness < moved:
            # the watermark (other key groups' events) passed deadlines this group's own events did not
            parts.append(state.advance(moved))
            due = state.next_deadline()
        out = pa.concat_tables(parts)
        if due is None:
            if timed:
                self.deadline.clear()
        else:
            self.deadline.update((due,))
        self._time(timer, due, timed)
        token = uuid.uuid4().hex
        self.engine.update((FORMAT, self.job.fingerprint, token))
        self.snapshot.update((snapshot(state),))
        _ENGINES[cache] = (token, state)
        if restored:  # counted: how often the worker's own copy could not be used
            counted = with_alert_columns(telemetry_table([counter(ENGINE, RESTORED, 1.0)]))
            out = pa.concat_tables([out, counted])
        yield _frame(out)

    def _held(self, buffered: list[tuple[Any, ...]], new: pd.DataFrame | None) -> pd.DataFrame:
        """The events the key group holds (``buffered``, from its state) and
        the ``new`` ones, in stream order: position, clock, arrival, then the
        carried columns."""
        names = [SEQ, CLOCK, ARRIVED, *self.carried.names]
        parts = [pd.DataFrame(buffered, columns=names)] if buffered else []
        if new is not None and len(new):
            parts.append(new.set_axis(names, axis=1))
        if not parts:
            return pd.DataFrame(columns=names)
        held = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
        return held.sort_values(SEQ, kind="stable", ignore_index=True)

    def _time(self, held: int | None, due: int | None, timed: bool) -> None:
        """One timer at the oldest held event's time and one just past the
        earliest deadline (in ms; a timer fires once the watermark reaches it);
        ``timed``: whether the key may have timers now."""
        wanted = {t for t in (held, None if due is None else due // 1_000_000 + 1) if t is not None}
        timers = set(self.handle.listTimers()) if timed else set()
        for t in timers - wanted:
            self.handle.deleteTimer(t)
        for t in wanted - timers:
            self.handle.registerTimer(t)

    def _load(self, lane: int, cache: tuple[str, int, int], fresh: Job) -> tuple[KeyGroupStream, bool]:
        """The group's engine as the last committed micro-batch left it: the
        worker's own copy when the state's token says it is that one, else
        restored from the state's snapshot (a restart, a retried micro-batch,
        a group another worker ran)."""
        mine = _ENGINES.pop(cache, None)  # taken out: a failed release must not leave a changed engine behind
        stored = self.engine.get()
        if stored is None:
            return KeyGroupStream(fresh, lane), False
        written, _, token = stored
        check_format(int(written), f"stream state (lane {lane})")
        # a state of another workload version goes on as it is until the stream's version row
        # says from which position the new one applies (``KeyGroupStream.switch``)
        if mine is not None and mine[0] == token:
            return mine[1], False
        group: KeyGroupStream = restore(bytes(self.snapshot.get()[0]))  # type: ignore[index]
        return group, True

    def close(self) -> None:
        pass


def _fixed(signature: dict[str, str]) -> dict[str, str]:
    """The parts of a signature a running stream keeps: all but its queries."""
    return {k: v for k, v in signature.items() if not k.startswith("query ")}


def version_row(
    out: pd.DataFrame, position: int, routes: list[int], number: str | None = None, kinds: dict[str, str] | None = None
) -> pd.DataFrame:
    """The row that tells every lane and key group a new workload version
    applies from ``position`` on (stage 1's columns, as a flush row's):
    ``number`` names a version moved to inside the running query (its job
    is in the stream's registry), None the query's own workload; ``kinds``:
    the schema's attributes (``no_event``)."""
    row: dict[str, Any] = {c: None for c in out.columns} | (no_event(kinds) if kinds is not None else {})
    now = int(out[CLOCK].max()) if len(out) else 1_000_000
    horizon = int(out[HORIZON].max()) if len(out) else 0
    row.update({ROW_KIND: VERSION, SEQ: position, CLOCK: now, ROUTE: routes, HORIZON: horizon, VALUE: np.nan})
    row.update({FILE: "", LINE: -1, ARRIVED: 0, TEXT: number, TS: NONE})
    return pd.DataFrame([row], columns=out.columns)


def events_table(carried: pa.Schema, by_name: dict[str, Any]) -> pa.Table:
    """Released events' ``carried`` columns (arrays or sequences, by name) as
    the events' table: type and typed attributes (an int one null where its
    flag says so, a double's NaN null), no row judged again.

    >>> carried = pa.schema(carried_columns({"x": "int", "d": "double"}))
    >>> columns = {"type": ["A", "A"], "x": [7, 0], "__null0": [False, True], "d": [float("nan"), 2.5]}
    >>> events_table(carried, columns).to_pylist()
    [{'type': 'A', 'x': 7, 'd': None}, {'type': 'A', 'x': None, 'd': 2.5}]
    """
    names = carried.names
    out: dict[str, pa.Array] = {}
    for field in carried:
        if field.name.startswith("__null"):
            continue
        values = by_name[field.name]
        if pa.types.is_integer(field.type):
            flag = names[names.index(field.name) + 1]
            mask = np.asarray(by_name[flag], dtype=bool) if len(values) else None
            out[field.name] = pa.array(values, field.type, mask=mask)
        else:
            out[field.name] = pa.array(values, field.type, from_pandas=True)
    return pa.table(out)


def _named(rows: Iterator[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    """The micro-batch's rows of one key, under their names (Spark passes
    them by position)."""
    frame = pd.concat(list(rows), ignore_index=True)
    frame.columns = columns
    return frame


def _frame(table: Any) -> pd.DataFrame:
    """An ``OUTPUT`` table (with or without the alerts' columns) as the stream's rows (``STREAM_OUTPUT``)."""
    frame = table.to_pandas()
    frame["vars"] = [None if v is None else dict(v) for v in frame["vars"]]
    for name in [*(ALERT.names if ALERT.names[-1] not in frame else ()), *LETTER_FIELDS]:
        frame[name] = None
    return frame[COLUMNS]


def _passed_on(frame: pd.DataFrame) -> pd.DataFrame:
    """Dead letters and counters, as the stream's rows."""
    dead = frame[frame[ROW_KIND] == DEAD]
    counts = frame[frame[ROW_KIND] == COUNT]
    letters = rows_of([DEAD_LETTER] * len(dead), start=dead[SEQ].tolist())
    out = _frame(letters)
    out["name"] = dead[LETTER_COLUMNS[0]].tolist()
    out["file"], out["line"] = dead[FILE].tolist(), dead[LINE].astype(np.int64).tolist()
    for field, column in zip(LETTER[1:], LETTER_COLUMNS[1:], strict=True):
        out[field] = dead[column].tolist()
    counted = _frame(telemetry_table(counter(ENGINE, n, v) for n, v in zip(counts[TEXT], counts[VALUE], strict=True)))
    return pd.concat([out, counted], ignore_index=True)[COLUMNS]
