"""From raw input to numbered, validated events, before any shuffle.

The stream order is the input's order (a file's rows in order, a
DataFrame's partitions in order), exactly as the in-process loaders read
it. Each partition is loaded by the in-process loaders (CSV and JSONL
lines as text, anything else as Arrow batches), which validate every row
and dead-letter the bad ones (``load_partition``), and each partition ends
with its summary (rows, lines, largest and least time). A batch run reads
the input once (``routing``): its rows are routed numbered within their
partitions, and the driver collects the summaries (``offsets``): how many
rows and lines come before each partition and the largest time before it,
from which the workers number every row densely (``__seq``, the event's
position, as in-process: dead-lettered rows count). An event more than
``allowed_lateness`` behind an earlier partition's largest time is
dead-lettered by the loader as in-process (its line and text) when a
partition is read judged from its start against that time
(``load_partition``'s ``carried``): the run reads the input so again only
where the summaries say some event may be. ``Prepared.events`` and
``dead_letters`` read the input that way, numbering the rows with Spark
expressions.

``Prepared``'s frames are not cached (each use reads the input again);
a run keeps its routed rows, a few packed rows per input batch, only while
it runs. CSV and JSONL rows must each be one line (Spark splits
text files at line breaks); a CSV header is recognised on the first line
of the input only.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sharp_cer.errors import SurfaceError
from sharp_cer.events.batch import EventBatch, LoadReport
from sharp_cer.events.loaders import StreamProgress, load_arrow, load_csv, load_jsonl
from sharp_cer.language import Schema

from .columns import (
    DEAD,
    EVENT,
    LETTER,
    LETTER_COLUMNS,
    LINE,
    LOCAL,
    PART,
    PREV,
    ROW_KIND,
    SEQ,
    SUMMARY,
    TEXT_VALUE,
    TS,
    TYPE,
    arrow_ddl,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

_NONE = np.iinfo(np.int64).min
#: a partition's summary before its first timed event: no event time yet
_NONE_LEFT = np.iinfo(np.int64).max
_SPARK_TYPES = {"int": "bigint", "primary_time": "bigint", "double": "double", "bool": "boolean", "string": "string"}
_ARROW_TYPES = {"int": pa.int64(), "primary_time": pa.int64(), "double": pa.float64(), "bool": pa.bool_()}
_ARROW_TYPES["string"] = pa.string()
#: the input formats read as lines of text
TEXT_FORMATS = ("csv", "jsonl")


def attribute_kinds(schema: Schema) -> dict[str, str]:
    """Every attribute name of the schema with its type (one type per name,
    as the loaders require)."""
    kinds: dict[str, str] = {}
    for event in schema.event_types():
        for name, kind in event.attributes.items():
            kinds.setdefault(name, kind)
    return kinds


def _ddl(columns: list[tuple[str, str]]) -> str:
    return ", ".join(f"`{name}` {kind}" for name, kind in columns)


def _pass_one_columns(kinds: dict[str, str]) -> list[tuple[str, pa.DataType]]:
    head = [(PART, pa.int32()), (ROW_KIND, pa.string()), (LOCAL, pa.int64()), (LINE, pa.int64())]
    head += [(TS, pa.int64()), (PREV, pa.int64()), (TYPE, pa.string())]
    attributes = [(name, _ARROW_TYPES[kind]) for name, kind in kinds.items()]
    return head + attributes + [(c, pa.string()) for c in LETTER_COLUMNS]


_Ints = np.ndarray[Any, np.dtype[np.int64]]


def late_mask(
    ts: np.ndarray[Any, Any], latest: np.ndarray[Any, Any], timed: np.ndarray[Any, Any], lateness: int
) -> Any:
    """Which events are more than ``lateness`` behind the largest time
    before them (``latest``; ``_NONE``: none), without overflowing int64.

    >>> late_mask(np.array([5, 9, 1]), np.array([10, 10, _NONE]), np.array([True, True, True]), 2).tolist()
    [True, False, False]
    """
    late = timed & (latest != _NONE) & (ts < latest)
    late[late] = (latest[late] - ts[late]) > lateness
    return late


@dataclass(frozen=True)
class LoadSpec:
    """How pass 1 loads a partition: the schema, the input format (``csv``,
    ``jsonl`` or ``table``) and the allowed lateness."""

    schema: Schema
    format: str
    allowed_lateness: int

    @functools.cached_property
    def kinds(self) -> dict[str, str]:
        """Attribute name to type."""
        return attribute_kinds(self.schema)

    @functools.cached_property
    def arrow(self) -> pa.Schema:
        """Pass 1's output schema."""
        return pa.schema(_pass_one_columns(self.kinds))


def _partition_id() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def load_partition(
    spec: LoadSpec,
    batches: Iterator[pa.RecordBatch],
    part: int | None = None,
    carried: dict[int, int | None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Pass 1 over one partition (see the module docstring): its rows, then
    its summary row. Every batch is judged against the partition's earlier
    ones (the loader's lateness, with each late row's line and text); with ``carried`` (per partition,
    the largest time of the partitions before it: a second read, see
    ``prepare``) against the earlier partitions too.

    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int, t:primary_time } }")
    >>> lines = pa.record_batch({"value": ["A,1,10", "A,oops,11", "", "A,3,5"]})
    >>> out = pa.Table.from_batches(load_partition(LoadSpec(s, "csv", 10), iter([lines]), part=0)).to_pylist()
    >>> [(r[ROW_KIND], r[LOCAL], r[LINE], r["x"], r[TS], r[PREV]) for r in out]
    ... # doctest: +NORMALIZE_WHITESPACE
    [('event', 0, 0, 1, 10, None), ('event', 2, 0, 3, 5, 10), ('dead', 1, 2, None, None, None),
     ('summary', 3, 4, None, 10, 5)]
    >>> [r[LETTER_COLUMNS[1]] for r in out if r[ROW_KIND] == DEAD]
    ["mistyped attribute 'x' of A: expected an int, found 'oops'"]
    >>> again = load_partition(LoadSpec(s, "csv", 2), iter([lines]), part=1, carried={1: 8})
    >>> [(r[LINE], r[LETTER_COLUMNS[0]], r[LETTER_COLUMNS[-1]]) for r in pa.Table.from_batches(again).to_pylist()
    ...  if r[ROW_KIND] == DEAD]
    [(2, 'mistyped_attribute', 'A,oops,11'), (4, 'late', 'A,3,5')]
    """
    part = _partition_id() if part is None else part
    rows = lines = 0
    before = (carried or {}).get(part)
    latest = _NONE if before is None else before  # the largest time before the next batch
    top = _NONE  # the partition's own largest time
    # the smallest event time (the summary's ``__prev``): what an earlier partition could make late
    least = _NONE_LEFT
    for batch in batches:
        if not batch.num_rows:
            continue
        # judged against the earlier batches (and partitions, given): the loader's letters say line and text
        progress = StreamProgress(0, latest)
        if spec.format in TEXT_FORMATS:
            text, span = _text_of(batch.column(TEXT_VALUE))
            lateness = spec.allowed_lateness
            if spec.format == "csv":
                header = None if part == 0 and lines == 0 else False  # a header on the input's first line only
                events, report = load_csv(
                    text, spec.schema, header=header, allowed_lateness=lateness, progress=progress
                )
            else:
                events, report = load_jsonl(text, spec.schema, allowed_lateness=lateness, progress=progress)
        else:
            table = pa.Table.from_batches([batch])
            events, report = load_arrow(table, spec.schema, allowed_lateness=spec.allowed_lateness, progress=progress)
            span = batch.num_rows
        yield _pass_one_rows(spec, part, events, report, rows, lines, latest)
        times = events.times()
        if times.valid.any():
            timed = times.values[times.valid]
            least, top = min(least, int(timed.min())), max(top, int(timed.max()))
            latest = max(latest, top)
        rows += report.read
        lines += span
    summary = {
        PART: [part],
        ROW_KIND: [SUMMARY],
        LOCAL: [rows],
        LINE: [lines],
        TS: [None if top == _NONE else top],
        PREV: [None if least == _NONE_LEFT else least],
    }
    yield _record(spec.arrow, summary, 1)


def _pass_one_rows(
    spec: LoadSpec, part: int, events: EventBatch, report: LoadReport, rows: int, lines: int, latest: int
) -> pa.RecordBatch:
    n = len(events)
    times = events.times()
    marked = np.where(times.valid, times.values, _NONE)
    before = np.empty(n, dtype=np.int64)
    if n:
        before[0] = latest
        before[1:] = np.maximum(np.maximum.accumulate(marked)[:-1], latest)
    # an event's line: text rows keep the loader's line; table rows are numbered from 1
    letters = report.dead_letters
    k = len(letters)
    columns: dict[str, Any] = {
        PART: pa.array(np.full(n + k, part, np.int32)),
        ROW_KIND: pa.concat_arrays([pa.repeat(EVENT, n), pa.repeat(DEAD, k)]),
        LOCAL: pa.array(np.concatenate([events.positions + rows, _ints(d.position + rows for d in letters)])),
        LINE: pa.array(np.concatenate([np.zeros(n, np.int64), _ints(d.line + lines for d in letters)])),
        TS: pa.array(
            np.concatenate([times.values, np.zeros(k, np.int64)]),
            mask=np.concatenate([~times.valid, np.ones(k, bool)]),
        ),
        PREV: pa.array(
            np.concatenate([before, np.zeros(k, np.int64)]),
            mask=np.concatenate([before == _NONE, np.ones(k, bool)]),
        ),
        TYPE: pa.concat_arrays([pa.array(events.types, pa.string()), pa.nulls(k, pa.string())]),
    }
    for name, kind in spec.kinds.items():
        column = events.columns[name].to_arrow()
        columns[name] = pa.concat_arrays([column, pa.nulls(k, _ARROW_TYPES[kind])])
    for field, column in zip(LETTER, LETTER_COLUMNS, strict=True):
        texts = pa.array([letter_text(getattr(d, field)) for d in letters], pa.string())
        columns[column] = pa.concat_arrays([pa.nulls(n, pa.string()), texts])
    return _record(spec.arrow, columns, n + len(letters))


def _ints(values: Iterable[int]) -> _Ints:
    return np.fromiter(values, dtype=np.int64)


def letter_text(value: Any) -> str | None:
    """A dead letter's field as text: a table row's raw values become JSON;
    bytes that were not UTF-8 (kept by ``surrogateescape``) become ``\\xff``,
    which Arrow's strings can hold.

    >>> letter_text("A,2" + chr(0xDCFF) + ",2"), letter_text({"x": 1}), letter_text(None)
    ('A,2\\\\xff,2', '{"x": 1}', None)
    """
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:  # a surrogate no byte made (a JSON escape such as \ud800)
            return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def _text_of(column: pa.Array) -> tuple[bytes, int]:
    """A text column's lines as the bytes of one text, each line ended by a
    line break, and how many lines: the bytes as Spark's text source passed
    them (a line that is not UTF-8 reaches the loader as it is, which
    dead-letters it, instead of failing the whole batch in a decoding); a
    null line is an empty one.

    >>> _text_of(pa.array(["A,1", None, "B,2"]))
    (b'A,1\\n\\nB,2\\n', 3)
    """
    raw = column.cast(pa.binary()) if pa.types.is_string(column.type) else column
    raw = raw.fill_null(b"")
    lines = pa.ListArray.from_arrays(pa.array([0, len(raw)], pa.int32()), raw)
    joined = pc.binary_join(lines, b"\n")[0].as_py()
    return (joined + b"\n" if len(raw) else b""), len(raw)


def _record(schema: pa.Schema, columns: dict[str, Any], n: int) -> pa.RecordBatch:
    arrays = [
        columns[f.name]
        if isinstance(columns.get(f.name), pa.Array)
        else pa.array(columns.get(f.name, [None] * n), f.type)
        for f in schema
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


@dataclass(frozen=True)
class Offsets:
    """Per input partition: rows and lines before it, and the largest
    primary time before it (None: none)."""

    rows: dict[int, int]
    lines: dict[int, int]
    latest: dict[int, int | None]
    total_rows: int


def offsets(summaries: list[tuple[int, int, int, int | None]]) -> Offsets:
    """The offsets from pass 1's summaries (partition, rows, lines, largest time).

    >>> offsets([(1, 5, 6, 30), (0, 2, 2, None), (2, 1, 1, 10)])
    Offsets(rows={0: 0, 1: 2, 2: 7}, lines={0: 0, 1: 2, 2: 8}, latest={0: None, 1: None, 2: 30}, total_rows=8)
    """
    rows, lines, latest = {}, {}, {}
    done_rows = done_lines = 0
    best: int | None = None
    for part, n, m, top in sorted(summaries):
        rows[part], lines[part], latest[part] = done_rows, done_lines, best
        done_rows, done_lines = done_rows + n, done_lines + m
        if top is not None:
            best = top if best is None else max(best, top)
    return Offsets(rows, lines, latest, done_rows)


@dataclass
class Prepared:
    """The numbered events (``__seq``, ``type``, every attribute), the dead
    letters (``columns.DEAD_LETTERS``), and how many rows were read; both
    frames are computed when used (each use reads the input again: a run
    reads the events through ``routing`` instead, once)."""

    events: DataFrame
    dead_letters: DataFrame
    rows: int
    #: pass 1's rows, each partition judged against the ones before it (not kept)
    read: DataFrame
    #: the largest primary time of the input (None: no event has one): the
    #: stream's event time at its end, which trailing absences read
    latest_time: int | None = None
    #: how pass 1 loads a partition, the raw input, and each partition's offsets
    spec: LoadSpec | None = None
    raw: DataFrame | None = None
    offsets: Offsets | None = None

    def close(self) -> None:
        """Nothing is kept: here for the callers that release what a job kept."""


def read_input(spark: SparkSession, path: str, format: str | None = None) -> tuple[DataFrame, str]:
    """The raw input of an events file or folder and its format: ``.csv``
    and ``.jsonl`` as lines of text, ``.parquet`` as a table. A folder's
    files (those Spark reads there) come in the order of their paths, each
    in its own order: Spark's own scan of several files orders its pieces
    by size, which would put later events before earlier ones."""
    fmt = format or format_of(path)
    if fmt not in (*TEXT_FORMATS, "parquet"):
        raise SurfaceError(f"{path}: error: unknown events format {fmt!r}\n  expected: .csv, .jsonl or .parquet")
    kind = fmt if fmt in TEXT_FORMATS else "table"

    def read(where: str) -> DataFrame:
        return spark.read.text(where) if fmt in TEXT_FORMATS else spark.read.parquet(where)

    whole = read(path)
    files = sorted(whole.inputFiles())
    if len(files) < 2:
        return whole, kind
    # one scan per file, in path order: a union keeps its inputs' partitions in order
    return functools.reduce(lambda a, b: a.union(b), (read(f) for f in files)), kind


def format_of(path: str) -> str:
    p = Path(path)
    suffixes = [p.suffix] if p.is_file() or p.suffix else sorted({f.suffix for f in p.glob("*") if f.is_file()})
    known = {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}
    found = {known[s] for s in suffixes if s in known}
    if len(found) != 1:
        raise SurfaceError(
            f"{path}: error: cannot tell the events format\n  expected: a .csv, .jsonl or .parquet file, "
            f"or a folder of one kind of them\n  found: {', '.join(suffixes) or 'no files'}\n"
            "  hint: name the format (--format)"
        )
    return found.pop()


def _by_partition(values: dict[int, int]) -> Column:
    """A partition's value of ``values`` (pass 1's ``__part`` to an offset) as a Spark column."""
    from pyspark.sql import functions as F

    pairs = [F.lit(v) for part, offset in sorted(values.items()) for v in (part, offset)]
    return F.element_at(F.create_map(*pairs), F.col(PART)) if pairs else F.lit(0)


def prepare(raw: DataFrame, spec: LoadSpec, summaries: list[tuple[int, int, int, int | None, int | None]]) -> Prepared:
    """The input's numbered events and dead letters (see the module
    docstring), planned from its partitions' ``summaries`` (partition,
    rows, lines, largest and least time; ``routing.summaries``), computed
    when used: no Spark job here."""
    from pyspark.sql import functions as F

    ddl = arrow_ddl(spec.arrow)
    at = offsets([s[:4] for s in summaries])
    # each partition judged from its start against the largest time of the ones before it, so that the
    # loader dead-letters an event late across partitions as in-process (its line and text)
    first = raw.mapInArrow(functools.partial(load_partition, spec, carried=dict(at.latest)), ddl)
    kinds = spec.kinds
    attributes = [F.col(f"`{n}`") for n in kinds]
    # the global numbers are Spark expressions: no second trip through Python
    seq = F.col(LOCAL) + _by_partition(at.rows)
    line = seq + 1 if spec.format not in TEXT_FORMATS else F.col(LINE) + _by_partition(at.lines)
    numbered = first.where(F.col(ROW_KIND) != SUMMARY)
    second = numbered.select(ROW_KIND, seq.alias(SEQ), line.alias(LINE), TYPE, *attributes, *LETTER_COLUMNS)
    events = second.where(F.col(ROW_KIND) == EVENT).select(SEQ, TYPE, *attributes)
    letters = second.where(F.col(ROW_KIND) == DEAD).select(
        F.col(SEQ).alias("position"),
        F.col(LINE).alias("line"),
        *[F.col(c).alias(f) for f, c in zip(LETTER, LETTER_COLUMNS, strict=True)],
    )
    latest = max((s[3] for s in summaries if s[3] is not None), default=None)
    return Prepared(events, letters, at.total_rows, first, latest, spec, raw, at)
