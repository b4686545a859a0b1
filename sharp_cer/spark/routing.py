"""A batch run's events validated and routed where they are read, once, in
Python: each input partition is read (``prepare.load_partition``), its
rows numbered within it, and each event sent, as one row, to every lane
that reads it, with its key group there (a hash of its key's values); each
dead letter goes, once, to the letters' own lane (``LETTERS``), whose
worker writes it out as an output row; the partition's summary (rows,
lines, largest and least time) goes to the driver (``SUMMARIES``), which
learns from all of them where each partition starts (``prepare.offsets``)
and the workers number the rows they get from that (``Numbering``). Each
input batch's rows of one lane and key group travel as one row of Arrow
IPC bytes (``BLOBS``): Spark's row handling moves a few rows per batch, not
one per event and lane (no explode, no per-event shuffle or sort).

A partition is judged late against its own earlier rows only, unless
``Routing.latest`` gives the largest time before each partition: the
driver reads the input again that way only where an event may be late
against an earlier partition (``late_across``), which input in time
order never is.
Nothing here imports PySpark.

>>> from sharp_cer.language import Schema
>>> from .lanes import Lane
>>> from .prepare import LoadSpec, offsets
>>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int, t:primary_time }, EVENT B { t:primary_time } }")
>>> spec = LoadSpec(s, "csv", 0)
>>> lanes = (Lane(("q",), ("k",), frozenset({"A"})), Lane(("r",), (), frozenset({"A", "B"})))
>>> lines = pa.record_batch({"value": ["A,1,10", "B,oops", "B,12", "A,1,13"]})
>>> plan = Routing(spec, lanes, 4)
>>> blobs = pa.Table.from_batches(route_partition(plan, iter([lines]), part=1))
>>> summaries(blobs.to_pylist())  # partition, rows, lines, largest and least time
[(1, 4, 4, 13, 10)]
>>> numbering = Numbering(offsets([(0, 7, 9, 20), (1, 4, 4, 13)]), text=True)
>>> out = pa.concat_tables(list(unpack(blobs.filter(pc.not_equal(blobs[LANE], SUMMARIES)), numbering)))
>>> [(r[LANE], r[SEQ], r[TYPE]) for r in out.to_pylist()]
[(0, 7, 'A'), (0, 10, 'A'), (1, 7, 'A'), (1, 9, 'B'), (1, 10, 'A'), (-1, 8, None)]
>>> len(set(out.column(KEY_GROUP).to_pylist()[:2]))  # one key, one key group
1
>>> out.column(LINE)[-1].as_py(), json.loads(out.column(PACKED)[-1].as_py())["raw"]
(11, 'B,oops')
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .columns import (
    DEAD,
    DEAD_LETTER,
    EVENT,
    KEY_GROUP,
    LANE,
    LETTER,
    LETTER_COLUMNS,
    LINE,
    LOCAL,
    OUTPUT,
    PART,
    PREV,
    ROW_KIND,
    SEQ,
    SUMMARY,
    TS,
    TYPE,
    arrow_ddl,
)
from .lanes import Lane
from .prepare import _ARROW_TYPES, LoadSpec, Offsets, load_partition, offsets

#: the lane of the dead letters' rows: its worker writes them out, no engine runs there
LETTERS = -1
#: the lane of a partition's summary row, which the driver reads (``summaries``); no worker gets it
SUMMARIES = -3
#: a dead letter's fields as one JSON text (null on an event's row): one column, not seven
PACKED = "__letter"
#: a partition's summary: the partition, its rows and lines, its largest and least event time
SUMMARY_COLUMNS = (PART, LOCAL, LINE, TS, PREV)
#: the rows a batch run shuffles: a lane, a key group, the input order (partition << 32 | batch), the rows
ORDER, BLOB = "__order", "__blob"
BLOBS = pa.schema([(LANE, pa.int32()), (KEY_GROUP, pa.int64()), (ORDER, pa.int64()), (BLOB, pa.binary())])
#: what a batch worker writes: ``OUTPUT`` and a dead letter's fields (its position in ``start``, kind in ``name``)
BATCH_OUTPUT = pa.schema([*OUTPUT, pa.field("line", pa.int64()), *(pa.field(f, pa.string()) for f in LETTER[1:])])


@dataclass(frozen=True)
class Routing:
    """What ``route_partition`` needs: how to read a partition, the lanes,
    how many key groups a partitioned lane has, and (a second read) the
    largest event time before each partition (``prepare.Offsets.latest``)."""

    spec: LoadSpec
    lanes: tuple[Lane, ...]
    key_groups: int
    latest: Mapping[int, int | None] | None = None

    def schema(self) -> pa.Schema:
        """The routed rows: lane, key group, position, type, attributes, a letter's line and packed fields."""
        attributes = [(n, _ARROW_TYPES[k]) for n, k in self.spec.kinds.items()]
        head = [(LANE, pa.int32()), (KEY_GROUP, pa.int64()), (SEQ, pa.int64()), (TYPE, pa.string())]
        return pa.schema([*head, *attributes, (LINE, pa.int64()), (PACKED, pa.string())])


def route_partition(
    routing: Routing, batches: Iterator[pa.RecordBatch], part: int | None = None
) -> Iterator[pa.RecordBatch]:
    """One input partition, read, numbered within it and routed (see the
    module docstring), as ``BLOBS`` rows: per input batch, one row per lane
    and key group it reaches, holding that key group's rows as Arrow IPC
    bytes; last, the partition's summary (lane ``SUMMARIES``)."""
    schema = routing.schema()
    latest = None if routing.latest is None else dict(routing.latest)
    index = 0
    for rows in load_partition(routing.spec, batches, part, carried=latest):
        kinds = rows.column(ROW_KIND).to_numpy(zero_copy_only=False)
        if not len(kinds):
            continue
        where = int(rows.column(PART)[0].as_py())
        order = (where << 32) + index  # the input's order: partition, then batch within it
        index += 1
        if kinds[0] == SUMMARY:
            pieces = [(SUMMARIES, 0, rows.select(list(SUMMARY_COLUMNS)))]
        else:
            pieces = list(_route(routing, schema, rows, kinds))
        if pieces:
            blobs = [ipc_bytes(piece) for _, _, piece in pieces]
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([p[0] for p in pieces], pa.int32()),
                    pa.array([p[1] for p in pieces], pa.int64()),
                    pa.array([order] * len(pieces), pa.int64()),
                    pa.array(blobs, pa.binary()),
                ],
                schema=BLOBS,
            )


def ipc_bytes(piece: pa.RecordBatch) -> bytes:
    """One batch as an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, piece.schema) as writer:
        writer.write_batch(piece)
    return bytes(sink.getvalue().to_pybytes())


def summaries(rows: Iterable[Mapping[str, Any]]) -> list[tuple[int, int, int, int | None, int | None]]:
    """The partitions' summaries (partition, rows, lines, largest and least
    event time) in the ``SUMMARIES`` rows of ``BLOBS`` rows (others are
    passed over)."""
    out = []
    for row in rows:
        if row[LANE] == SUMMARIES:
            (found,) = pa.ipc.open_stream(row[BLOB]).read_all().to_pylist()
            out.append((found[PART], found[LOCAL], found[LINE], found[TS], found[PREV]))
    return out


def late_across(found: list[tuple[int, int, int, int | None, int | None]], lateness: int) -> bool:
    """Whether an event of some partition may be late against the partitions
    before it (its partition's least time more than ``lateness`` behind
    their largest), so that the partitions must be read again, each judged
    against them (``Routing.latest``). Input in time order never is.

    >>> late_across([(0, 2, 2, 50, 40), (1, 2, 2, 60, 50)], 0), late_across([(1, 2, 2, 60, 45), (0, 2, 2, 50, 40)], 4)
    (False, True)
    """
    latest = offsets([s[:4] for s in found]).latest
    for part, *_, least in found:
        before = latest[part]
        if least is not None and before is not None and before - least > lateness:
            return True
    return False


@dataclass(frozen=True)
class Numbering:
    """Where each input partition's rows start in the stream (``offsets``:
    rows and lines before it) and whether a row's line is the text's line
    (``text``) or, as in a table, its position + 1: what makes a routed
    row's partition-local position and line the in-process ones."""

    offsets: Offsets
    text: bool

    def number(self, rows: pa.Table, part: int) -> pa.Table:
        """``rows`` of partition ``part`` with their stream positions and lines."""
        seq = pc.add(rows.column(SEQ), self.offsets.rows[part])
        rows = rows.set_column(rows.schema.get_field_index(SEQ), SEQ, seq)
        lines = rows.column(LINE)
        if lines.null_count == rows.num_rows:  # events: a piece holds either events or dead letters, which have lines
            return rows
        line = pc.add(lines, self.offsets.lines[part]) if self.text else pc.add(seq, 1)
        return rows.set_column(rows.schema.get_field_index(LINE), LINE, line)


def unpack(blobs: pa.RecordBatch | pa.Table, numbering: Numbering | None = None) -> Iterator[pa.Table]:
    """The routed rows of ``BLOBS`` rows, in their order (numbered in the
    stream by ``numbering``, if given; else within their partitions)."""
    orders = blobs.column(ORDER).to_pylist()
    for blob, order in zip(blobs.column(BLOB).to_pylist(), orders, strict=True):
        rows = pa.ipc.open_stream(blob).read_all()
        yield rows if numbering is None else numbering.number(rows, order >> 32)


def _route(
    routing: Routing, schema: pa.Schema, rows: pa.RecordBatch, kinds: Any
) -> Iterator[tuple[int, int, pa.RecordBatch]]:
    """One input batch's rows by lane and key group (each piece in input order)."""
    seq = rows.column(LOCAL).to_numpy()
    events = np.flatnonzero(kinds == EVENT)
    types = rows.column(TYPE)
    for number, lane in enumerate(routing.lanes):
        chosen = np.asarray(pc.is_in(types, pa.array(sorted(lane.event_types))).to_numpy(zero_copy_only=False))
        group = np.zeros(len(kinds), dtype=np.int64)
        if lane.partition_attributes:
            keyed, group = _key_groups(rows, lane.partition_attributes, routing.key_groups)
            chosen &= keyed
        take = events[chosen[events]]
        if not len(take):
            continue
        # each key group's rows together, in input order within it
        take = take[np.argsort(group[take], kind="stable")]
        routed = _routed(schema, rows, take, number, group[take], seq[take])
        groups = group[take]
        edges = np.flatnonzero(np.diff(groups)) + 1
        for lo, hi in zip([0, *edges.tolist()], [*edges.tolist(), len(take)], strict=True):
            yield number, int(groups[lo]), routed.slice(lo, hi - lo)
    dead = np.flatnonzero(kinds == DEAD)
    if len(dead):
        letters = {f: rows.column(c).to_pylist() for f, c in zip(LETTER, LETTER_COLUMNS, strict=True)}
        packed = [json.dumps({f: v[i] for f, v in letters.items()}) for i in dead.tolist()]
        letter_rows = {LANE: pa.array(np.full(len(dead), LETTERS, np.int32)), SEQ: pa.array(seq[dead])}
        letter_rows[KEY_GROUP] = pa.array(np.zeros(len(dead), np.int64))
        # a text row's line within its partition; a table row's is its position + 1 (``Numbering``)
        letter_rows[LINE] = pa.array(rows.column(LINE).to_numpy()[dead])
        letter_rows[PACKED] = pa.array(packed, pa.string())
        columns = [letter_rows.get(f.name, pa.nulls(len(dead), f.type)) for f in schema]
        yield LETTERS, 0, pa.RecordBatch.from_arrays(columns, schema=schema)


def _routed(
    schema: pa.Schema, rows: pa.RecordBatch, take: np.ndarray[Any, Any], lane: int, group: Any, seq: Any
) -> pa.RecordBatch:
    index = pa.array(take)
    columns = {LANE: pa.array(np.full(len(take), lane, np.int32)), KEY_GROUP: pa.array(group), SEQ: pa.array(seq)}
    arrays = [
        columns[f.name] if f.name in columns
        else pa.nulls(len(take), f.type) if f.name == PACKED
        else rows.column(f.name).take(index)
        for f in schema
    ]  # fmt: skip
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _key_groups(rows: pa.RecordBatch, names: tuple[str, ...], count: int) -> tuple[Any, Any]:
    """Which rows have a key (every attribute not null) and each row's key
    group: a hash of the key's values, the same in every process (not
    Python's ``hash``, which each process seeds its own way), each distinct
    value hashed once per batch."""
    keyed = np.ones(rows.num_rows, dtype=bool)
    mixed = np.zeros(rows.num_rows, dtype=np.uint64)
    for name in names:
        column = rows.column(name)
        keyed &= ~np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        encoded = pc.dictionary_encode(column)
        codes = np.asarray(encoded.indices.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        hashed = np.array([_stable_hash(v) for v in encoded.dictionary.to_pylist()] or [0], dtype=np.uint64)
        mixed = mixed * np.uint64(1_000_003) ^ hashed[codes]
    return keyed, (mixed % np.uint64(count)).astype(np.int64)


def _stable_hash(value: Any) -> int:
    """A value's hash, equal for equal values (0.0 and -0.0, 1 and 1.0 too).

    >>> _stable_hash(0.0) == _stable_hash(-0.0), _stable_hash(2) == _stable_hash(2.0)
    (True, True)
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return zlib.crc32(repr(value).encode("utf-8", "surrogatepass"))


def letter_output(rows: pa.RecordBatch | pa.Table) -> pa.Table:
    """The letters' lane's rows (numbered: ``Numbering``) as output rows (``BATCH_OUTPUT``)."""
    letters = [json.loads(t) for t in rows.column(PACKED).to_pylist()]
    n = len(letters)
    columns: dict[str, Any] = {"kind": [DEAD_LETTER] * n, "start": rows.column(SEQ), "value": [1.0] * n}
    columns["name"] = [d["kind"] for d in letters]
    columns["line"] = rows.column(LINE)
    for field in LETTER[1:]:
        columns[field] = [d[field] for d in letters]
    return pa.table(
        [columns[f.name] if f.name in columns else pa.nulls(n, f.type) for f in BATCH_OUTPUT], schema=BATCH_OUTPUT
    )


def widen(table: pa.Table) -> pa.Table:
    """A worker's ``OUTPUT`` rows with the letter columns (null) of ``BATCH_OUTPUT``."""
    n = table.num_rows
    return pa.table(
        [table.column(f.name) if f.name in table.column_names else pa.nulls(n, f.type) for f in BATCH_OUTPUT],
        schema=BATCH_OUTPUT,
    )


#: ``BATCH_OUTPUT`` in Spark's DDL
BATCH_DDL = arrow_ddl(BATCH_OUTPUT)
