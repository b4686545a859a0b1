"""A stream's input, before the engines: files parsed and validated
(stage 0, stateless), then numbered in arrival order (stage 1, one
stateful key). Nothing here imports PySpark.

Stage 0 reads each new file whole (``wholetext``), so a row knows its file
and line; the in-process loaders validate it (``prepare.load_partition``,
one file as one partition: a CSV header is recognised on each file's first
line). An event leaves stage 0 as the loaders made it, its type and one
typed column per attribute (``carried_columns``: never text to parse
again), with its lanes and key groups (``__route``); a bad row as a dead
letter; each file adds a summary row (its rows and largest time).

Stage 1 (``number_rows``) sees a micro-batch's rows in one place, orders
its files by name, and gives every row its position: rows before it in the
stream, bad rows included, exactly as the batch pipeline numbers one file
holding the same rows in that order. It judges lateness as the loaders do
(more than ``allowed_lateness`` behind the largest time before it: a dead
letter, with its reason), so nothing behind the watermark ever reaches
Spark's own late-row filter (the watermark delay is above the allowed
lateness). Its state: the next position, the largest time so far and the
workload's signature.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from sharp_cer.errors import SurfaceError
from sharp_cer.events.loaders import late_letter
from sharp_cer.language import Schema
from sharp_cer.language.workload import signature_changes

from .columns import (
    ARRIVED,
    CLOCK,
    CONTROL,
    COUNT,
    DEAD,
    EVENT,
    FILE,
    FLUSH,
    HORIZON,
    LETTER,
    LETTER_COLUMNS,
    LINE,
    LOCAL,
    PART,
    PREV,
    ROUTE,
    ROW_KIND,
    SEQ,
    SUMMARY,
    TEXT,
    TEXT_VALUE,
    TS,
    TYPE,
    VALUE,
    VERSION,
)
from .prepare import LoadSpec, attribute_kinds, late_mask, letter_text, load_partition

_MS = 1_000_000
#: "no time" in an int64 column (pandas keeps int64 only without nulls)
NONE = int(np.iinfo(np.int64).min)
#: stage 1's output, before the event's type and attributes (``numbered_schema``)
NUMBERED = pa.schema(
    [
        (ROW_KIND, pa.string()),
        (SEQ, pa.int64()),
        (FILE, pa.string()),
        (LINE, pa.int64()),
        (TS, pa.int64()),
        (CLOCK, pa.int64()),
        (ARRIVED, pa.int64()),
        (ROUTE, pa.list_(pa.int64())),
        (TEXT, pa.string()),
        (VALUE, pa.float64()),
        (HORIZON, pa.int64()),
        *((c, pa.string()) for c in LETTER_COLUMNS),
    ]
)
#: attribute kinds held as int64 (pandas turns an int64 column with nulls into floats, which
#: cannot hold every int64: stages 1 and 2 carry such a column with 0 for null, and a null flag)
INT_KINDS = ("int", "primary_time")
_ARROW_KINDS = {"int": pa.int64(), "primary_time": pa.int64(), "double": pa.float64(), "bool": pa.bool_()}
_ARROW_KINDS["string"] = pa.string()


def null_flag(index: int) -> str:
    """The column flagging the nulls of the schema's ``index``-th attribute, an int one (``INT_KINDS``)."""
    return f"__null{index}"


def carried_columns(kinds: dict[str, str]) -> list[tuple[str, pa.DataType]]:
    """How stages 1 and 2 carry an event: its type, then each attribute in
    its own type (an int one followed by its null flag, ``null_flag``).

    >>> [name for name, _ in carried_columns({"x": "int", "s": "string"})]
    ['type', 'x', '__null0', 's']
    """
    out: list[tuple[str, pa.DataType]] = [(TYPE, pa.string())]
    for i, (name, kind) in enumerate(kinds.items()):
        out.append((name, _ARROW_KINDS[kind]))
        if kind in INT_KINDS:
            out.append((null_flag(i), pa.bool_()))
    return out


def numbered_schema(kinds: dict[str, str]) -> pa.Schema:
    """Stage 1's output: ``NUMBERED``, then the event (``carried_columns``)."""
    return pa.schema([*NUMBERED, *carried_columns(kinds)])


def python_values(frame: pd.DataFrame, kinds: dict[str, str]) -> dict[str, list[Any]]:
    """Each attribute of a stage's pandas rows as Python values, None where
    null (an int one read with its null flag; a double's NaN is a null, as
    the loaders read it).

    >>> frame = pd.DataFrame({"x": [3, 0], "__null0": [False, True], "d": [1.5, float("nan")], "s": ["a", None]})
    >>> python_values(frame, {"x": "int", "d": "double", "s": "string"})
    {'x': [3, None], 'd': [1.5, None], 's': ['a', None]}
    """
    out: dict[str, list[Any]] = {}
    for i, (name, kind) in enumerate(kinds.items()):
        values = frame[name].tolist()
        if kind in INT_KINDS:
            flags = frame[null_flag(i)].tolist()
            out[name] = [None if f is True or v is None else int(v) for v, f in zip(values, flags, strict=True)]
        elif kind == "double":
            out[name] = [None if v is None or v != v else float(v) for v in values]
        elif kind == "bool":
            out[name] = [None if v is None or (isinstance(v, float) and v != v) else bool(v) for v in values]
        else:
            out[name] = [None if v is None or (isinstance(v, float) and v != v) else str(v) for v in values]
    return out


def parse_files(spec: LoadSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stage 0 over whole files (columns ``value``, ``__file``,
    ``__arrived``, ``__control``): prepare's pass 1 per file (each event's
    type and typed attributes), plus the file and its arrival time. A control file
    becomes one ``flush`` row, or one ``version`` row (its number as text)
    when it asks for a workload version (``stream_versions.announce``).

    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int, t:primary_time } }")
    >>> files = pa.record_batch({"value": ["A,1,10\\nA,x,11\\n"], FILE: ["f.csv"], ARRIVED: [5], CONTROL: [False]})
    >>> out = pa.Table.from_batches(parse_files(LoadSpec(s, "csv", 0), iter([files]))).to_pylist()
    >>> [(r[ROW_KIND], r[LOCAL], r[TYPE], r["x"], r["t"]) for r in out]
    [('event', 0, 'A', 1, 10), ('dead', 1, None, None, None), ('summary', 2, None, None, None)]
    """
    schema = stage_zero_schema(spec)
    for batch in batches:
        # the files' bytes, undecoded: Spark's text source passes bytes that are not UTF-8 on as they are, and
        # one such line must be one dead letter, not a failed micro-batch (the loaders dead-letter it)
        data = batch.column(TEXT_VALUE).cast(pa.binary()).to_pylist()
        columns = {name: batch.column(name).to_pylist() for name in (FILE, ARRIVED, CONTROL)}
        for raw, path, arrived, control in zip(data, columns[FILE], columns[ARRIVED], columns[CONTROL], strict=True):
            if control:  # a flush, or a workload version to move to (``stream_versions.announce``)
                asked = (raw or b"").decode("utf-8", "replace")
                row = {ROW_KIND: VERSION, TEXT: asked.split()[1]} if asked.startswith("version ") else {ROW_KIND: FLUSH}
                yield pa.RecordBatch.from_pylist([{**row, FILE: path, ARRIVED: arrived}], schema=schema)
                continue
            lines = (raw or b"").split(b"\n")
            if lines and lines[-1] == b"":
                lines.pop()
            for rows in load_partition(spec, iter([pa.record_batch({TEXT_VALUE: pa.array(lines, pa.binary())})]), 0):
                yield _stamped(rows, schema, path, arrived)


def _stamped(rows: pa.RecordBatch, schema: pa.Schema, path: str | None, arrived: Any) -> pa.RecordBatch:
    """Pass 1's rows with their file and arrival (a column or one value) and no text."""
    n = rows.num_rows
    at = arrived if isinstance(arrived, pa.Array) else pa.array([arrived] * n, pa.int64())
    extra = [pa.array([path] * n, pa.string()), at, pa.nulls(n, pa.string())]
    return pa.RecordBatch.from_arrays([*rows.columns, *extra], schema=schema)


def parse_rows(spec: LoadSpec, order: list[str], batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Stage 0 over a DataFrame's rows (``type``, the attributes,
    ``__arrived`` and the ``order`` columns): prepare's pass 1 (as a
    table, each event in its type and typed attributes); each row keeps its ``order``
    values and its place in the task (``__part``, ``__local``), which stage 1
    sorts a micro-batch by. No file: ``__file`` is null, a dead letter's
    line is its row in the task, from 1. A null attribute is a null; a null
    time is a dead letter.

    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int, t:primary_time } }")
    >>> rows = pa.record_batch({"type": ["A", "A", "A"], "x": [1, 2, None], "t": [10, None, 12], ARRIVED: [5] * 3,
    ...                         "__order0": [2, 1, 0]})
    >>> out = pa.Table.from_batches(parse_rows(LoadSpec(s, "table", 0), ["__order0"], iter([rows]))).to_pylist()
    >>> [(r[ROW_KIND], r[LOCAL], r["__order0"], r["x"], r["t"]) for r in out]  # doctest: +NORMALIZE_WHITESPACE
    [('event', 0, 2, 1, 10), ('event', 2, 0, None, 12), ('dead', 1, 1, None, None)]
    """
    base = stage_zero_schema(spec)
    offset = 0
    for batch in batches:
        if not batch.num_rows:
            continue
        events = batch.select([c for c in batch.schema.names if c not in (ARRIVED, *order)])
        schema = base
        for name in order:
            schema = schema.append(batch.schema.field(name))
        for rows in load_partition(spec, iter([events]), None):
            kinds = np.asarray(rows.column(ROW_KIND).to_numpy(zero_copy_only=False))
            keep = np.flatnonzero(kinds != SUMMARY)
            if not len(keep):
                continue
            rows = rows.take(pa.array(keep))
            local = np.asarray(rows.column(LOCAL).to_numpy(), dtype=np.int64)
            at = pa.array(local)
            line = np.asarray(rows.column(LINE).to_numpy(), dtype=np.int64)
            line = np.where(kinds[keep] == DEAD, line + offset, line)
            named = rows.schema.names
            fixed = rows.set_column(named.index(LOCAL), LOCAL, pa.array(local + offset))
            fixed = fixed.set_column(named.index(LINE), LINE, pa.array(line))
            stamped = _stamped(fixed, base, None, batch.column(ARRIVED).take(at))
            ordered = [batch.column(name).take(at) for name in order]
            yield pa.RecordBatch.from_arrays([*stamped.columns, *ordered], schema=schema)
        offset += batch.num_rows


def stage_zero_schema(spec: LoadSpec) -> pa.Schema:
    """Stage 0's output: pass 1's columns (the event's type and typed
    attributes among them), the file, its arrival and a text (a control
    row's: the version asked for)."""
    return (
        spec.arrow.append(pa.field(FILE, pa.string()))
        .append(pa.field(ARRIVED, pa.int64()))
        .append(pa.field(TEXT, pa.string()))
    )


@dataclass(frozen=True)
class Cursor:
    """Stage 1's state: the next position, the largest time so far
    (``NONE``: none yet) and the workload's signature (JSON)."""

    position: int
    latest: int
    signature: str


#: the part of stage 1's signature that is not the workload's: how many key
#: groups a partitioned lane's events are spread over (stage 0 routes by it,
#: so a restart must keep it: the state of a key group lives under its number)
KEY_GROUPS_PART = "key groups per lane"


def check_signature(stored: str, current: dict[str, str], where: str) -> None:
    """Raise a clear error if the state was made by another workload, or
    spreads events over another number of key groups."""
    before = json.loads(stored)
    kept = before.pop(KEY_GROUPS_PART, None)
    current = dict(current)
    now = current.pop(KEY_GROUPS_PART, None)
    changes = signature_changes(before, current)
    if changes:
        listed = "\n".join(f"    {c}" for c in changes)
        raise SurfaceError(
            f"{where}: error: this checkpoint's state was made by another workload\n"
            f"  expected: the workload the stream started with\n  found these differences:\n{listed}\n"
            "  hint: restart with the original workload, or give a new --checkpoint (and --out) to start over"
        )
    if kept is not None and now is not None and kept != now:
        raise SurfaceError(
            f"{where}: error: this checkpoint spreads each lane over {kept} key groups, this run over {now}\n"
            f"  expected: {kept} key groups per lane, as the stream started (each key group's state lives under "
            "its number)\n"
            f"  hint: pass StreamSettings(key_groups={kept}) (by default one per shuffle partition, so one per core "
            "where the stream started), or give a new checkpoint to start over"
        )


def number_rows(
    frame: pd.DataFrame,
    cursor: Cursor,
    schema: Schema,
    lateness: int,
    all_routes: list[int],
    order: list[str] | None = None,
    delay_ms: int = 0,
) -> tuple[pd.DataFrame, Cursor]:
    """Stage 1 over one micro-batch's rows (stage 0's columns, with
    ``__route``, the event as ``carried_columns``): positions, lateness, and flushes
    fanned out to every route. Files' rows are numbered file by file
    (``order`` None); a DataFrame's rows in the order of its ``order``
    columns (``parse_rows``). Every row carries the watermark the next
    micro-batch will run with (``horizon_ms`` of the new latest time and
    the watermark delay ``delay_ms``). Returns the rows to pass on and the
    new cursor.

    >>> s = Schema.parse("CREATE STREAM S { EVENT A { t:primary_time } }")
    >>> def row(kind, file, local, ts):
    ...     event = {TYPE: "A", "t": ts, "__null0": False} if kind == "event" else no_event({"t": "primary_time"})
    ...     return {ROW_KIND: kind, FILE: file, LOCAL: local, LINE: local, TS: ts, PREV: NONE, ARRIVED: 0,
    ...             TEXT: None, ROUTE: [0]} | {c: None for c in LETTER_COLUMNS} | event
    >>> frame = pd.DataFrame([row("event", "b", 0, 50), row("summary", "b", 1, 50),
    ...                       row("event", "a", 0, 100), row("summary", "a", 1, 100)])
    >>> out, cursor = number_rows(frame, Cursor(10, 90, "{}"), s, 20, [0])
    >>> out[[ROW_KIND, SEQ, TS]].values.tolist(), cursor.position, cursor.latest
    ([['event', 10, 100], ['dead', 11, 50], ['count', -1, -9223372036854775808]], 12, 100)
    >>> out[LETTER_COLUMNS[1]][1][:40]
    'late event A: expected t >= 80 (the late'
    """
    is_flush = frame[ROW_KIND] == FLUSH
    data = frame[~is_flush]
    rows, seq, prev, done, latest = _by_file(data, cursor) if order is None else _by_order(data, cursor, order)
    ts = rows[TS].to_numpy(np.int64)
    late = late_mask(ts, prev, (rows[ROW_KIND].to_numpy() == EVENT) & (ts != NONE), lateness)
    rows[SEQ] = seq
    _dead_lettered(rows, late, seq, prev, ts, schema, lateness)
    rows[CLOCK] = _clocks(rows, ts, latest)
    now = max(0 if latest == NONE else latest, 0) + _MS
    rows[VALUE] = np.nan
    # a row that is no (longer an) event goes to no lane
    rows[ROUTE] = [r if k == EVENT else [] for r, k in zip(rows[ROUTE], rows[ROW_KIND], strict=True)]
    kinds = attribute_kinds(schema)
    extra = [_count_row("rows", float(done - cursor.position), now) | no_event(kinds)]
    for _, flush in frame[is_flush].iterrows():
        extra.append({**flush.to_dict(), SEQ: done, CLOCK: now, ROUTE: all_routes, VALUE: np.nan} | no_event(kinds))
    out = pd.concat([rows, pd.DataFrame(extra)], ignore_index=True) if extra else rows
    out[HORIZON] = horizon_ms(latest, delay_ms)
    return out[numbered_schema(attribute_kinds(schema)).names], Cursor(done, latest, cursor.signature)


def _dead_lettered(rows: pd.DataFrame, late: Any, seq: Any, prev: Any, ts: Any, schema: Schema, lateness: int) -> None:
    """Turn the ``late`` events of ``rows`` into dead letters, in place,
    as the loaders judge them (the largest time before each: ``prev``)."""
    if late.any():
        by_name = {e.name: e for e in schema.event_types()}
        kind = rows[ROW_KIND].to_numpy(object).copy()
        letters = {c: rows[c].to_numpy(object).copy() for c in LETTER_COLUMNS}
        lines, types = rows[LINE].tolist(), rows[TYPE].tolist()
        late_rows = np.flatnonzero(late).tolist()
        values = python_values(rows.iloc[late_rows], attribute_kinds(schema))
        for j, i in enumerate(late_rows):
            event = by_name[types[i]]
            raw = {TYPE: types[i], **{a: values[a][j] for a in event.attributes}}
            letter = late_letter(event, int(seq[i]), int(lines[i]), int(ts[i]), int(prev[i]), lateness, raw)
            kind[i] = DEAD
            for field, column in zip(LETTER, LETTER_COLUMNS, strict=True):
                letters[column][i] = letter_text(getattr(letter, field))
        rows[ROW_KIND] = kind
        for column, values in letters.items():
            rows[column] = values


def _clocks(rows: pd.DataFrame, ts: Any, latest: int) -> Any:
    """The time the watermark judges each row by (ns): an event's own, else
    the stream's ``latest`` (never behind it); 1 ms past the epoch at least,
    as Spark's first watermark (0) drops rows at or before it."""
    now = 0 if latest == NONE else latest
    clock = np.where((rows[ROW_KIND].to_numpy() == EVENT) & (ts != NONE), ts, now)
    return np.maximum(clock, 0) + _MS


def number_key_group(frame: pd.DataFrame, cursor: Cursor, schema: Schema, lateness: int) -> tuple[pd.DataFrame, Cursor]:
    """The one-operator plan's stage 1, inside one key group: its rows of a
    micro-batch (events, dead letters) numbered from the micro-batch's file
    summaries, which every key group receives (``SUMMARY`` rows: each file's
    rows and largest time), and ``cursor``, the key group's copy of the
    stream's (next position, largest time so far). Every key group sees the
    same summaries, so each computes the same positions and the same largest
    time before each row as stage 1 does (``number_rows``): the positions,
    lateness and clocks of the rows it holds are stage 1's exactly. Returns
    those rows (late events turned dead letters) and the new cursor.

    >>> s = Schema.parse("CREATE STREAM S { EVENT A { t:primary_time } }")
    >>> def row(kind, file, local, ts, prev=NONE):
    ...     return {ROW_KIND: kind, FILE: file, LOCAL: local, LINE: local, TS: ts, PREV: prev, TYPE: "A", "t": ts,
    ...             "__null0": False} | {c: None for c in LETTER_COLUMNS}
    >>> frame = pd.DataFrame([row("event", "b", 1, 50, 60), row("summary", "b", 2, 60),
    ...                       row("summary", "a", 3, 100)])  # this group holds one event of b, none of a
    >>> out, cursor = number_key_group(frame, Cursor(10, 90, "{}"), s, 20)
    >>> out[[ROW_KIND, SEQ, TS]].values.tolist(), cursor.position, cursor.latest
    ([['dead', 14, 50]], 15, 100)
    """
    data = frame[frame[ROW_KIND].isin([EVENT, DEAD, SUMMARY])]
    rows, seq, prev, done, latest = _by_file(data, cursor)
    ts = rows[TS].to_numpy(np.int64)
    late = late_mask(ts, prev, (rows[ROW_KIND].to_numpy() == EVENT) & (ts != NONE), lateness)
    rows[SEQ] = seq
    _dead_lettered(rows, late, seq, prev, ts, schema, lateness)
    rows[CLOCK] = _clocks(rows, ts, latest)
    return rows, Cursor(done, latest, cursor.signature)


def horizon_ms(latest: int, delay_ms: int) -> int:
    """The watermark (ms) Spark gives the micro-batch after one whose rows'
    largest time is ``latest`` (ns; ``NONE``: no time yet), with the
    watermark delay ``delay_ms``.

    Every micro-batch ``number_rows`` passes on holds a row at the stream's
    latest time + 1 ms (its ``rows`` counter), and Spark's watermark after
    a micro-batch is the largest time it saw, in whole ms, minus the delay,
    never below the one before (0 at first). The stream's latest time never
    goes back, so that is this, and stage 2 can release at once what the
    next micro-batch's watermark would release.

    >>> horizon_ms(5_000_400_000, 1002)  # 5,000.4 ms + 1 ms, in whole ms, - 1,002 ms
    3999
    >>> horizon_ms(NONE, 1002), horizon_ms(500_000_000, 1002)  # never below Spark's first watermark
    (0, 0)
    """
    return max((max(latest, 0) + _MS) // _MS - delay_ms, 0)


def _by_file(data: pd.DataFrame, cursor: Cursor) -> tuple[pd.DataFrame, Any, Any, int, int]:
    """Files in name order, each after every file of earlier micro-batches;
    rows in their file's order (the rows, positions, the largest time
    before each, the next position and the largest time)."""
    summaries = data[data[ROW_KIND] == SUMMARY]
    rows = data[data[ROW_KIND] != SUMMARY].copy()
    files = sorted(summaries[FILE].unique().tolist())
    counts = dict(zip(summaries[FILE], summaries[LOCAL].astype(np.int64), strict=True))
    tops = dict(zip(summaries[FILE], summaries[TS].astype(np.int64), strict=True))
    before_rows, before_latest, done, latest = {}, {}, cursor.position, cursor.latest
    for f in files:
        before_rows[f], before_latest[f] = done, latest
        done += int(counts[f])
        latest = max(latest, int(tops[f]))
    rows = rows.sort_values([FILE, LOCAL], kind="stable")
    seq = rows[LOCAL].to_numpy(np.int64) + rows[FILE].map(before_rows).to_numpy(np.int64)
    carried = rows[FILE].map(before_latest).to_numpy(np.int64)
    prev = np.maximum(rows[PREV].to_numpy(np.int64), carried)
    return rows, seq, prev, done, latest


def _by_order(data: pd.DataFrame, cursor: Cursor, order: list[str]) -> tuple[pd.DataFrame, Any, Any, int, int]:
    """A DataFrame's rows sorted by ``order``, ties (and no ``order``) in
    the source's order (task, then row), after every earlier micro-batch."""
    rows = data.sort_values([*order, PART, LOCAL], kind="stable").copy()
    n = len(rows)
    ts = rows[TS].to_numpy(np.int64)
    marked = np.where((rows[ROW_KIND].to_numpy() == EVENT) & (ts != NONE), ts, NONE)
    running = np.maximum.accumulate(np.concatenate([np.array([cursor.latest], np.int64), marked]))
    seq = cursor.position + np.arange(n, dtype=np.int64)
    return rows, seq, running[:-1], cursor.position + n, int(running[-1])


def no_event(kinds: dict[str, str]) -> dict[str, Any]:
    """The event columns of a row that is no event (``carried_columns``):
    an int attribute 0 and flagged null, so that pandas keeps its column int64.

    >>> no_event({"x": "int", "s": "string"})
    {'type': None, 'x': 0, '__null0': True, 's': None}
    """
    out: dict[str, Any] = {TYPE: None}
    for i, (name, kind) in enumerate(kinds.items()):
        out[name] = 0 if kind in INT_KINDS else None
        if kind in INT_KINDS:
            out[null_flag(i)] = True
    return out


def _count_row(name: str, value: float, now: int) -> dict[str, Any]:
    return {
        ROW_KIND: COUNT,
        SEQ: -1,
        FILE: None,
        LINE: -1,
        TS: NONE,
        CLOCK: now,
        ARRIVED: 0,
        ROUTE: [],
        TEXT: name,
        VALUE: value,
    } | dict.fromkeys(LETTER_COLUMNS)
