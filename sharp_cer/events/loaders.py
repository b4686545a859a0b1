"""Loaders: CSV (CORE's convention), JSONL, Parquet, pandas and Arrow input
into an :class:`EventBatch` of the accepted events and a :class:`LoadReport`.

Every loader reads all rows, numbers them 0, 1, 2, ... (``position``; a CSV
header and blank lines are not rows), and either accepts a row or turns it
into one :class:`DeadLetter` naming the first problem found, checked in this
order: a malformed row (CSV parse error, bytes that are not UTF-8, malformed
JSON), the event type (``unknown_type``), the CSV field count, each declared
attribute in declaration order (``missing_attribute``, ``mistyped_attribute``,
and ``bad_time`` for the ``primary_time``), then lateness: an event whose
primary time is more than ``allowed_lateness`` (nanoseconds) below the largest
primary time of the events accepted before it is dead-lettered as ``late``
(events within the lateness stay, in input order; events of a type without a
``primary_time`` are never late and do not move the clock). With ``strict=True`` the
first bad row raises :class:`EventsError` instead. Nothing is dropped:
``report.accepted + len(report.dead_letters) == report.read``.

Values: NA, null, NaN and an empty CSV field mean null. A declared attribute
that is there and null (a JSON ``null``, an empty CSV field, a null in a
table's column, for strings too) is null in the event: its column's ``valid``
mask is False there, and conditions read it with SQL's three-valued logic
(see ``sharp_cer.reference``, rule 6). A declared attribute that is not there
at all (a JSON key, or a table column, left out) is ``missing_attribute``, and
so is a null primary time: an event needs its time. Text is accepted for any
type when it spells a value of it (``int``: ``[+-]digits`` in int64 range;
``double``: a decimal or scientific number, ``inf``; ``bool``: ``true``,
``false``, ``1``, ``0`` in any case; ``primary_time``: int64 nanoseconds or an
ISO-8601 timestamp, naive ones read as UTC), surrounding whitespace ignored;
an integral float is an int when exactly representable (at most 2**53).
Typed columns (pandas, Arrow, Parquet) are validated column by column with
numpy and pyarrow compute; a column of mixed Python objects is split by value
type first.

>>> from sharp_cer.language import Schema
>>> schema = Schema.parse("CREATE STREAM S { EVENT BUY { id:int, price:double, t:primary_time } }")
>>> batch, report = load_csv("BUY,1,10.5,100\\nBUY,2,abc,200\\nBUY,3,9.0,50\\n", schema)
>>> batch.positions.tolist(), report.counts
([0], {'mistyped_attribute': 1, 'late': 1})
>>> report.dead_letters[0].reason
"mistyped attribute 'price' of BUY: expected a double, found 'abc'"
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from sharp_cer.errors import EventsError
from sharp_cer.language.diagnostics import did_you_mean, listing
from sharp_cer.language.schema import EventSchema, Schema

if TYPE_CHECKING:  # pandas costs a third of a second to import: imported where a path needs it
    import pandas as pd

from . import arrow_compute as compute
from .ahead import ahead
from .arrow_numpy import from_numpy, nulls, strings, to_numpy
from .batch import FILLER, STORAGE, Column, DeadLetter, EventBatch, LoadReport, concat_batches
from .csv_blocks import BLOCK_BYTES, CsvBlock, line_blocks, plain_utf8, read_blocks

Source = str | os.PathLike[str]
#: what the text loaders read: a path, the text itself (a ``str`` holding a newline), or its bytes
TextSource = Source | bytes
_Mask = npt.NDArray[np.bool_]
#: kinds whose CSV fields pyarrow's reader may parse: every text it takes, the string patterns take alike
_ARROW_NUMBER = {"int": pa.int64(), "primary_time": pa.int64(), "double": pa.float64()}
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_RESERVED = ("type", "position")
_BLANK = " \t\r\n\x0b\x0c"
_SURROGATE = re.compile("[\ud800-\udfff]")
_ARROW_FAILURES = (pa.ArrowException, ValueError, TypeError, OverflowError, NotImplementedError)
_EXPECTED = {
    "int": "an int",
    "double": "a double",
    "bool": "a bool (true, false, 1 or 0)",
    "string": "a string",
    "primary_time": "int64 nanoseconds or an ISO-8601 timestamp",
}
_FIX = {
    "int": "write a whole number between -2**63 and 2**63-1, such as 42",
    "double": "write a number such as 12.5 or 1e-3",
    "bool": "write true, false, 1 or 0",
    "string": "write the value as text",
    "primary_time": "write nanoseconds since the epoch (1709544600000000000) or ISO-8601 (2024-03-04T09:30:00Z)",
}


@dataclass(frozen=True)
class _Problem:
    kind: str
    headline: str
    column: str | None
    expected: str
    found: str
    hint: str
    field: int | None = None  # 1-based CSV field number


@dataclass
class _Col:
    """A column as pyarrow arrays: one for every row, or parts (row indices,
    array) when mixed Python objects were split by type; ``objects`` keeps
    the original values to show them in reasons."""

    parts: list[tuple[npt.NDArray[np.intp] | None, Any]]
    objects: Sequence[Any] | None = None

    def value(self, i: int) -> Any:
        if self.objects is not None:
            return self.objects[i]
        return self.parts[0][1][i].as_py()


@dataclass
class _Raw:
    """Rows read from one input, before validation."""

    name: str
    n: int
    lines: npt.NDArray[np.int64]
    types: _Col
    columns: dict[str, _Col]
    raw: Callable[[int], str | dict[str, Any]]
    pre: dict[int, _Problem] = field(default_factory=dict)
    absent: dict[str, _Mask] = field(default_factory=dict)
    null_text: str = "null"
    absent_text: str = "no key {!r}"
    csv_fields: bool = False
    line_word: str = "line"
    codes: npt.NDArray[np.int32] | None = None  # the types' indices in the schema's, when known


@dataclass(frozen=True)
class _Converted:
    values: npt.NDArray[Any]
    ok: _Mask
    null: _Mask


# ---------------------------------------------------------------- public loaders


def load_csv(
    source: TextSource,
    schema: Schema,
    *,
    header: bool | None = None,
    strict: bool = False,
    allowed_lateness: int = 0,
    stream: str | None = None,
    progress: StreamProgress | None = None,
) -> tuple[EventBatch, LoadReport]:
    """Load CORE-style CSV: each row is an event type and then that type's
    attributes in declaration order (rows of different types may differ in
    length). ``source`` is a path, CSV text if it is a ``str`` holding a
    newline, or its bytes (``bytes``). ``header=None`` treats the first row as a header when its first
    field is no event type and it is ``type`` or the rest are attribute
    names; a header naming only attributes must list one event type's
    attributes in order (rows are read by position, not by header name).
    A line is a row (a quoted field may span lines when its quotes balance);
    blank lines and the header are counted as ``skipped``. This reads the
    whole input: :func:`iter_csv` reads it block by block.

    >>> from sharp_cer.language import Schema
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { ok:bool, x:int } }")
    >>> batch, report = load_csv("type,x\\nA,1\\nB,TRUE,2\\nB,3\\n", s)
    >>> [batch.row(i)["attributes"] for i in range(len(batch))]
    [{'x': 1}, {'ok': True, 'x': 2}]
    >>> report.summary()
    '<csv text>: 3 rows read, 2 accepted, 1 dead-lettered (field_count 1); 1 line skipped'
    """
    chunks = iter_csv(
        source, schema, header=header, strict=strict, allowed_lateness=allowed_lateness, stream=stream,
        progress=progress,
    )  # fmt: skip
    return collect(chunks, _source_name(source, "<csv text>"))


def iter_csv(
    source: TextSource,
    schema: Schema,
    *,
    header: bool | None = None,
    strict: bool = False,
    allowed_lateness: int = 0,
    stream: str | None = None,
    block_bytes: int = BLOCK_BYTES,
    progress: StreamProgress | None = None,
) -> Iterator[tuple[EventBatch, LoadReport]]:
    """:func:`load_csv` block by block: each block of about ``block_bytes``
    bytes gives its batch and its report, with positions and lateness
    running on across blocks, so memory stays with a few blocks (the next
    ones are read and judged in threads while the caller uses one).
    ``progress`` (as ``load_arrow``'s): where an earlier piece of the
    stream left off, its position and largest time, which it advances.

    >>> from sharp_cer.language import Schema
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    >>> [(b.positions.tolist(), r.read) for b, r in iter_csv("A,1\\nA,2\\nA,x\\nA,4\\n", s, block_bytes=8)]
    [([0, 1], 2), ([3], 2)]
    """
    etypes, kinds = _layout(schema, stream)
    lateness = _check_lateness(allowed_lateness)
    name = _source_name(source, "<csv text>")
    by_name = {e.name: e for e in etypes}

    def is_header(fields: list[str] | None, line: int, text: str) -> bool:
        if header or (fields is not None and _looks_like_header(fields, by_name, kinds)):
            _check_header(line, text, fields, name, etypes, kinds)
            return True
        return False

    progress = progress if progress is not None else StreamProgress()
    with _open_bytes(source, name) as data:
        layouts = {e.name: tuple(e.attributes) for e in etypes}
        # fields arrow parses exactly as the patterns do (hexadecimal refused by the reader)
        numbers = {a: _ARROW_NUMBER[k] for a, k in kinds.items() if k in _ARROW_NUMBER}
        blocks = ahead(read_blocks(data, layouts, None if header is False else is_header, block_bytes, numbers))
        # two stages, each a block ahead: the next block is read while one is
        # judged, and judged while the caller uses the batch before it
        yield from ahead(_judge_block(make(), name, etypes, kinds, strict, lateness, progress) for make in blocks)


def collect(chunks: Iterable[tuple[EventBatch, LoadReport]], name: str) -> tuple[EventBatch, LoadReport]:
    """One batch and one report from the chunks of one input.

    >>> from sharp_cer.language import Schema
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    >>> batch, report = collect(iter_csv("A,1\\n\\nA,2\\n", s, block_bytes=4), "t")
    >>> batch.positions.tolist(), report.summary()
    ([0, 1], 't: 2 rows read, 2 accepted, 0 dead-lettered; 1 line skipped')
    """
    batches: list[EventBatch] = []
    reports: list[LoadReport] = []
    for batch, report in chunks:
        batches.append(batch)
        reports.append(report)
    letters = [d for r in reports for d in r.dead_letters]
    report = LoadReport(
        name,
        sum(r.read for r in reports),
        sum(r.accepted for r in reports),
        letters,
        sum(r.skipped for r in reports),
    )
    return concat_batches(batches), report


def load_jsonl(
    source: TextSource,
    schema: Schema,
    *,
    strict: bool = False,
    allowed_lateness: int = 0,
    stream: str | None = None,
    progress: StreamProgress | None = None,
) -> tuple[EventBatch, LoadReport]:
    """Load JSON Lines: one object per line with a ``type`` key and one key
    per attribute (other keys are ignored; blank lines are not rows).
    ``source`` is a path, JSONL text if it is a ``str`` holding a newline,
    or its bytes (``bytes``).

    >>> from sharp_cer.language import Schema
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int, t:primary_time } }")
    >>> text = '{"type": "A", "x": 1, "t": "2024-03-04T09:30:00Z"}\\n{"type": "A", "x": 2\\n'
    >>> batch, report = load_jsonl(text, s)
    >>> batch.row(0), report.dead_letters[0].kind
    ({'type': 'A', 'position': 0, 'attributes': {'x': 1, 't': 1709544600000000000}}, 'malformed_json')
    """
    chunks = iter_jsonl(
        source, schema, strict=strict, allowed_lateness=allowed_lateness, stream=stream, progress=progress
    )
    return collect(chunks, _source_name(source, "<jsonl text>"))


def iter_jsonl(
    source: TextSource,
    schema: Schema,
    *,
    strict: bool = False,
    allowed_lateness: int = 0,
    stream: str | None = None,
    block_bytes: int = BLOCK_BYTES,
    progress: StreamProgress | None = None,
) -> Iterator[tuple[EventBatch, LoadReport]]:
    """:func:`load_jsonl` in blocks of about ``block_bytes`` bytes, each
    giving its batch and report (positions and lateness run on, from
    ``progress`` if given, as :func:`iter_csv`'s).

    >>> from sharp_cer.language import Schema
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    >>> text = '{"type": "A", "x": 1}\\n\\n{"type": "A", "x": 2}\\n'
    >>> [(b.positions.tolist(), r.skipped) for b, r in iter_jsonl(text, s, block_bytes=16)]
    [([0], 1), ([1], 0)]
    """
    etypes, kinds = _layout(schema, stream)
    lateness = _check_lateness(allowed_lateness)
    name = _source_name(source, "<jsonl text>")
    progress = progress if progress is not None else StreamProgress()
    with _open_bytes(source, name) as data:
        for block, first_line in line_blocks(data, block_bytes):
            fast = _read_jsonl_block(block, name, etypes, first_line)
            raw, skipped = fast if fast is not None else _read_jsonl(block, name, kinds, first_line)
            yield _judge(raw, etypes, kinds, strict, lateness, progress, skipped)


def load_parquet(
    path: Source,
    schema: Schema,
    *,
    strict: bool = False,
    allowed_lateness: int = 0,
    stream: str | None = None,
) -> tuple[EventBatch, LoadReport]:
    """Load a Parquet file with a ``type`` column and attribute columns (as
    :func:`load_arrow`; other columns are not read).

    >>> import pathlib, tempfile
    >>> import pandas as pd
    >>> from sharp_cer.language import Schema
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:double } }")
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = pathlib.Path(tmp) / "e.parquet"
    ...     pd.DataFrame({"type": ["A", "A"], "x": [1.5, None]}).to_parquet(path)
    ...     batch, report = load_parquet(path, s)
    >>> batch.columns["x"].to_list(), report.dead_letters
    ([1.5, None], [])
    """
    chunks = iter_parquet(path, schema, strict=strict, allowed_lateness=allowed_lateness, stream=stream)
    return collect(chunks, str(path))


def iter_parquet(
    path: Source,
    schema: Schema,
    *,
    strict: bool = False,
    allowed_lateness: int = 0,
    stream: str | None = None,
    batch_rows: int = 131_072,
) -> Iterator[tuple[EventBatch, LoadReport]]:
    """:func:`load_parquet` in record batches of ``batch_rows`` rows, each
    giving its batch and report (positions and lateness run on)."""
    import pyarrow.parquet as pq

    etypes, kinds = _layout(schema, stream)
    lateness = _check_lateness(allowed_lateness)
    name = str(path)
    progress = StreamProgress()

    def fail(exc: Exception) -> EventsError:
        return _error(name, "cannot read the Parquet file", "a readable Parquet file", str(exc), None)

    try:
        parquet = pq.ParquetFile(path)
        wanted = [c for c in dict.fromkeys(parquet.schema_arrow.names) if c == "type" or c in kinds]
        batches = parquet.iter_batches(batch_size=batch_rows, columns=wanted)
        layout = parquet.schema_arrow
    except (OSError, pa.ArrowException) as exc:
        raise fail(exc) from exc
    with parquet:
        while True:
            try:
                table = pa.Table.from_batches([next(batches)])
            except StopIteration:
                break
            except (OSError, pa.ArrowException) as exc:
                raise fail(exc) from exc
            raw = _read_table(_arrow_columns(table, name), table.num_rows, name, "null", progress.position)
            yield _judge(raw, etypes, kinds, strict, lateness, progress)
    if progress.position == 0:  # no rows: one empty chunk (made only then: making it imports pandas)
        empty = layout.empty_table().select(wanted)
        yield _judge(_read_table(_arrow_columns(empty, name), 0, name, "null"), etypes, kinds, strict, lateness)


def load_pandas(
    df: pd.DataFrame,
    schema: Schema,
    *,
    strict: bool = False,
    allowed_lateness: int = 0,
    stream: str | None = None,
    progress: StreamProgress | None = None,
) -> tuple[EventBatch, LoadReport]:
    """Load a DataFrame with a ``type`` column and attribute columns (other
    columns and the index are ignored); NA in an attribute the row's type
    does not declare is expected, NA in a declared one is a null.

    >>> import pandas as pd
    >>> from sharp_cer.language import Schema
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { y:string } }")
    >>> df = pd.DataFrame({"type": ["A", "B", "C"], "x": [1, None, None], "y": [None, "hi", None]})
    >>> batch, report = load_pandas(df, s)
    >>> batch.to_pandas()  # doctest: +NORMALIZE_WHITESPACE
             type     x     y
    position
    0           A     1  <NA>
    1           B  <NA>    hi
    >>> report.dead_letters[0].reason
    "unknown event type: expected a declared event type (A, B), found 'C'"
    """
    etypes, kinds = _layout(schema, stream)
    lateness = _check_lateness(allowed_lateness)
    name = "<DataFrame>"
    wanted = [c for c in df.columns if c == "type" or c in kinds]
    duplicated = sorted({str(c) for c in wanted if wanted.count(c) > 1})
    if duplicated:
        raise _error(name, "duplicate columns", "one column per name", listing(duplicated), "rename the duplicates")
    columns = {str(c): _pandas_column(df[c]) for c in wanted}
    return _judge(_read_table(columns, len(df), name, "NA"), etypes, kinds, strict, lateness, progress)


def load_arrow(
    table: pa.Table,
    schema: Schema,
    *,
    strict: bool = False,
    allowed_lateness: int = 0,
    stream: str | None = None,
    progress: StreamProgress | None = None,
) -> tuple[EventBatch, LoadReport]:
    """Load a pyarrow Table with a ``type`` column and attribute columns
    (other columns are ignored). Primary times may be integers (nanoseconds),
    timestamps of any unit (naive ones read as UTC) or ISO-8601 strings.

    >>> import pyarrow as pa
    >>> from sharp_cer.language import Schema
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int, t:primary_time } }")
    >>> batch, report = load_arrow(pa.table({"type": ["A", "A"], "x": [1, 2], "t": [5, 3]}), s, allowed_lateness=1)
    >>> batch.positions.tolist(), report.dead_letters[0].kind
    ([0], 'late')
    """
    etypes, kinds = _layout(schema, stream)
    lateness = _check_lateness(allowed_lateness)
    name = "<arrow table>"
    raw = _read_table(_arrow_columns(table, name), table.num_rows, name, "null")
    return _judge(raw, etypes, kinds, strict, lateness, progress)


# ---------------------------------------------------------------- inputs


def _layout(schema: Schema, stream: str | None) -> tuple[tuple[EventSchema, ...], dict[str, str]]:
    """The event types to load and every attribute name with its type."""
    if stream is not None and stream not in schema.streams:
        raise EventsError(f"unknown stream {stream!r}; the schema declares {listing(schema.streams) or 'none'}")
    etypes = tuple(schema.event_types((stream,) if stream is not None else None))
    streams: dict[str, str] = {}
    kinds: dict[str, str] = {}
    owner: dict[str, str] = {}
    for event in etypes:
        if event.name in streams:
            raise EventsError(
                f"event type {event.name} is declared in streams {streams[event.name]} and {event.stream}; "
                "pass stream=... to load one of them"
            )
        streams[event.name] = event.stream
        for attr, kind in event.attributes.items():
            if attr in _RESERVED:
                raise EventsError(
                    f"attribute {attr!r} of {event.name}: the names {', '.join(_RESERVED)} are reserved "
                    "for the event type and position columns; rename the attribute"
                )
            if kinds.setdefault(attr, kind) != kind:
                raise EventsError(
                    f"attribute {attr!r} is {owner[attr]}'s {kinds[attr]} but {event.name}'s {kind}; "
                    "a batch holds one column per attribute name, so give them one type or two names"
                )
            owner.setdefault(attr, event.name)
    return etypes, kinds


def _check_lateness(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _I64_MAX:
        raise EventsError(f"allowed_lateness must be an integer from 0 to 2**63-1 (nanoseconds), not {value!r}")
    return value


def _source_name(source: TextSource, label: str) -> str:
    if isinstance(source, bytes) or _is_text(source):
        return label
    return str(Path(source))


def _is_text(source: TextSource) -> bool:
    """Whether ``source`` is the data itself: bytes, or a str holding a line break."""
    return isinstance(source, bytes) or (isinstance(source, str) and (source == "" or "\n" in source or "\r" in source))


def _text_bytes(text: str) -> bytes:
    """The bytes of a text given as data: bytes that were not UTF-8, kept
    by ``surrogateescape`` (as a stream's files are decoded), become those
    bytes again, so its dead letters show what the file held.

    >>> _text_bytes("A,\\udcff\\n"), _text_bytes("A,\\ud800\\n")
    (b'A,\\xff\\n', b'A,\\xed\\xa0\\x80\\n')
    """
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a surrogate no byte made
        return text.encode("utf-8", "surrogatepass")


@contextmanager
def _open_bytes(source: TextSource, name: str) -> Iterator[BinaryIO]:
    """The input as a binary stream: the file, or the text (or bytes) given."""
    if isinstance(source, bytes):
        yield io.BytesIO(source)
        return
    if _is_text(source):
        yield io.BytesIO(_text_bytes(str(source)))
        return
    try:
        handle = open(source, "rb")  # noqa: SIM115 - closed below, after the caller's reading
    except OSError as exc:
        raise _error(
            name,
            "cannot read the events file",
            "a readable file",
            exc.strerror or str(exc),
            "check the path; to pass the data itself, give a str that holds a newline",
        ) from exc
    with handle:
        yield handle


def _judge_block(
    block: CsvBlock,
    name: str,
    etypes: tuple[EventSchema, ...],
    kinds: dict[str, str],
    strict: bool,
    lateness: int,
    progress: StreamProgress,
) -> tuple[EventBatch, LoadReport]:
    return _judge(_csv_raw(block, name, etypes), etypes, kinds, strict, lateness, progress, block.skipped)


def _csv_raw(block: CsvBlock, name: str, etypes: tuple[EventSchema, ...]) -> _Raw:
    """A block's rows for judging: unreadable records and wrong field counts found."""
    pre = {
        i: _Problem(
            "malformed_row",
            "malformed row",
            None,
            "a CSV record in UTF-8",
            found,
            "fix the quoting (a quote inside a quoted field is doubled) or re-encode the file as UTF-8",
        )
        for i, found in block.malformed.items()
    }
    codes = block.codes
    for code, event in enumerate(etypes):
        wanted = 1 + len(event.attributes)
        layout = ", ".join(["type", *event.attributes])
        for i in np.flatnonzero((codes == code) & (block.counts >= 0) & (block.counts != wanted)).tolist():
            pre[i] = _Problem(
                "field_count",
                f"wrong field count for {event.name}",
                None,
                f"{wanted} fields ({layout})",
                f"{int(block.counts[i])} fields",
                f"write {event.name} rows as {layout} (CORE's CSV: the type, then its attributes in declaration order)",
            )
    return _Raw(
        name=name,
        n=len(block),
        lines=block.lines,
        types=_Col([(None, block.types)]),
        columns={attr: _Col([(None, arr)]) for attr, arr in block.values.items()},
        raw=block.text,
        pre=pre,
        null_text="an empty field",
        csv_fields=True,
        codes=codes,
    )


def _looks_like_header(fields: list[str], by_name: Mapping[str, EventSchema], kinds: Mapping[str, str]) -> bool:
    first, rest = fields[0].strip(_BLANK), [f.strip(_BLANK) for f in fields[1:]]
    if first in by_name:
        return False
    return first.lower() == "type" or (bool(rest) and all(f in kinds for f in rest))


def _check_header(
    line: int,
    row_text: str,
    fields: list[str] | None,
    name: str,
    etypes: tuple[EventSchema, ...],
    kinds: dict[str, str],
) -> None:
    if fields is None:
        raise _error(f"{name}, line {line}", "cannot read the header row", "a CSV record", repr(row_text), None)
    rest = [f.strip(_BLANK) for f in fields[1:]]
    if rest and all(f in kinds for f in rest) and not any(rest == list(e.attributes) for e in etypes):
        layouts = "; ".join(f"{e.name}: {', '.join(e.attributes)}" for e in etypes)
        raise _error(
            f"{name}, line {line}",
            "the header does not match CORE's CSV layout",
            f"type, then one event type's attributes in declaration order ({layouts})",
            repr(row_text),
            "rows are read by position, not by header name: reorder the columns to the declaration order "
            "(write_core_csv does), or read the file with pandas and use load_pandas",
        )


_ABSENT = object()


_PLAIN_JSON = (pa.int64(), pa.float64(), pa.bool_(), pa.string())


def _read_jsonl_block(
    block: bytes, name: str, etypes: tuple[EventSchema, ...], first_line: int
) -> tuple[_Raw, int] | None:
    """A block of JSON lines read by pyarrow, when that reads it as the
    line-by-line reader would: every non-blank line one object, every row
    with a type and every attribute its type declares (pyarrow makes no
    difference between a null and an absent key: where a declared
    attribute is null, its line must show the key with ``null``), attribute
    columns of plain JSON types (no timestamps inferred from strings, no
    ints turned floats beside an int attribute); else None."""
    import pyarrow.json as pj

    if not block.strip(_BLANK.encode()) or not plain_utf8(block):  # else pyarrow lets bad keys through
        return None
    try:
        table = pj.read_json(pa.py_buffer(block))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None  # a bad line, or columns of changing types: line by line
    data = np.frombuffer(block, dtype=np.uint8)
    breaks = np.flatnonzero(data == ord("\n"))
    starts = np.concatenate(([0], breaks + 1))
    stops = np.concatenate((breaks, [len(block)]))
    if block.endswith(b"\n"):
        starts, stops = starts[:-1], stops[:-1]
    filled = np.concatenate(([0], np.cumsum(~np.isin(data, np.frombuffer(_BLANK.encode(), dtype=np.uint8)))))
    rows = np.flatnonzero(filled[stops] - filled[starts] > 0)
    if table.num_rows != len(rows) or "type" not in table.column_names:
        return None
    columns = {c: table.column(c).combine_chunks() for c in table.column_names}
    types = columns["type"]
    if types.type != pa.string() or types.null_count:
        return None
    codes = to_numpy(compute.index_in(types, value_set=strings([e.name for e in etypes])), -1)
    found_nulls = False
    for code, event in enumerate(etypes):
        rows_of_type = codes == code
        if not rows_of_type.any():
            continue
        for attr, kind in event.attributes.items():
            column = columns.get(attr)
            if column is None or column.type not in _PLAIN_JSON:
                return None
            if kind in ("int", "primary_time") and column.type == pa.float64():
                return None
            null = nulls(column) & rows_of_type if column.null_count else None
            if null is not None and null.any():
                if not _null_keys(attr, null, block, starts, stops, rows):
                    return None
                found_nulls = True
    if found_nulls and not all(c.type in _PLAIN_JSON for c in columns.values()):
        return None  # a nested object could hold the key that _null_keys found

    def text(i: int) -> str:
        line = int(rows[i])
        return block[starts[line] : stops[line]].decode("utf-8", "replace").rstrip("\r")

    raw = _Raw(
        name=name,
        n=table.num_rows,
        lines=(rows + first_line).astype(np.int64),
        types=_Col([(None, types)]),
        columns={c: _Col([(None, v)]) for c, v in columns.items() if c != "type"},
        raw=text,
    )
    return raw, len(starts) - len(rows)


def _null_keys(
    attr: str,
    null: _Mask,
    block: bytes,
    starts: npt.NDArray[np.intp],
    stops: npt.NDArray[np.intp],
    rows: npt.NDArray[np.intp],
) -> bool:
    """Whether the line of every ``null`` row holds ``"attr": null`` (so its
    null is there, not an absent key). In valid JSON without nested objects
    a quoted name followed by a colon is a key; a name JSON would escape
    never matches, and the caller falls back to reading line by line."""
    pattern = re.compile(b'"' + re.escape(attr.encode()) + rb'"\s*:\s*null\b')
    for i in np.flatnonzero(null).tolist():
        line = int(rows[i])
        if pattern.search(block, int(starts[line]), int(stops[line])) is None:
            return False
    return True


def _read_jsonl(data: bytes, name: str, kinds: dict[str, str], first_line: int = 1) -> tuple[_Raw, int]:
    """The rows of a block of lines starting at ``first_line``, and how many
    lines were blank."""
    lines = data.split(b"\n")
    if data.endswith(b"\n"):
        lines.pop()  # the break ends the last line: no line follows
    keys = ["type", *kinds]
    values: dict[str, list[Any]] = {k: [] for k in keys}
    absent: dict[str, list[bool]] = {k: [] for k in keys}
    texts: list[str] = []
    numbers: list[int] = []
    pre: dict[int, _Problem] = {}
    blank = _BLANK.encode()
    for number, line in enumerate(lines, first_line):
        if not line.strip(blank):
            continue
        pos = len(numbers)
        numbers.append(number)
        obj, found = _parse_json_line(line)
        texts.append(line.decode("utf-8", "replace").rstrip("\r"))
        if found is not None:
            pre[pos] = _Problem(
                "malformed_json",
                "malformed JSON",
                None,
                "one JSON object per line",
                found,
                'write each event as one object on one line, such as {"type": "BUY", "price": 12.5}',
            )
            obj = {}
        for key in keys:
            value = obj.get(key, _ABSENT)
            absent[key].append(value is _ABSENT)
            values[key].append(None if value is _ABSENT else value)
    raw = _Raw(
        name=name,
        n=len(numbers),
        lines=np.array(numbers, dtype=np.int64),
        types=_object_column(values["type"]),
        columns={k: _object_column(values[k]) for k in kinds},
        raw=lambda i: texts[i],
        pre=pre,
        absent={k: np.array(v, dtype=np.bool_) for k, v in absent.items()},
    )
    return raw, len(lines) - len(numbers)


def _parse_json_line(line: bytes) -> tuple[dict[str, Any], str | None]:
    """(the object, None), or ({}, what was found instead)."""
    try:
        text = line.decode("utf-8").rstrip("\r")
    except UnicodeDecodeError as exc:
        return {}, f"bytes that are not UTF-8 (at byte {exc.start + 1})"
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, f"{exc.msg} at character {exc.colno}"
    except (ValueError, RecursionError) as exc:
        return {}, f"unreadable JSON ({type(exc).__name__})"
    if not isinstance(obj, dict):
        return {}, f"a JSON {_json_kind(obj)}"
    return obj, None


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    return "number"


def _read_table(columns: dict[str, _Col], n: int, name: str, null_text: str, before: int = 0) -> _Raw:
    """Rows of a table, numbered on after ``before`` rows."""
    if "type" not in columns:
        raise _error(
            name,
            "no 'type' column",
            "a 'type' column naming each row's event type, and one column per attribute",
            f"columns {listing(columns) or '(none of the schema)'}",
            "add the event type as a column named 'type'",
        )
    return _Raw(
        name=name,
        n=n,
        lines=np.arange(before + 1, before + n + 1, dtype=np.int64),
        types=columns["type"],
        columns={k: v for k, v in columns.items() if k != "type"},
        raw=lambda i: {k: col.value(i) for k, col in columns.items()},
        null_text=null_text,
        absent_text="no column {!r}",
        line_word="row",
    )


def _arrow_columns(table: pa.Table, name: str) -> dict[str, _Col]:
    names = list(table.column_names)
    duplicated = sorted({c for c in names if names.count(c) > 1})
    if duplicated:
        raise _error(name, "duplicate columns", "one column per name", listing(duplicated), "rename the duplicates")
    return {c: _Col([(None, table.column(c).combine_chunks())]) for c in names}


def _pandas_column(series: pd.Series) -> _Col:
    try:
        arr = pa.array(series, from_pandas=True)
    except _ARROW_FAILURES:
        return _object_column(series.to_numpy(dtype=object))
    return _Col([(None, arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr)])


def _object_column(values: Sequence[Any]) -> _Col:
    """Python values as arrow: in one piece when arrow can, else split by value type."""
    try:
        arr = pa.array(values, from_pandas=True)
        # arrow turns ints and even True into floats beside floats: keep them apart, so that
        # a bool never passes for a number and a large int keeps every digit
        if not (pa.types.is_floating(arr.type) and any(isinstance(v, (int, np.integer, np.bool_)) for v in values)):
            return _Col([(None, arr)], values)
    except _ARROW_FAILURES:
        pass
    groups: dict[str, list[int]] = {}
    for i, value in enumerate(values):
        groups.setdefault(_tag(value), []).append(i)
    parts: list[tuple[npt.NDArray[np.intp] | None, Any]] = []
    for tag, rows in groups.items():
        items = [values[i] for i in rows]
        if tag == "null":
            arr = pa.nulls(len(items))
        elif tag == "bool":
            arr = pa.array([bool(v) for v in items], pa.bool_())
        elif tag == "int":
            arr = pa.array([int(v) for v in items], pa.int64())
        elif tag == "bigint":
            arr = pa.array([str(int(v)) for v in items], pa.string())
        elif tag == "float":
            arr = pa.array([float(v) for v in items], pa.float64())
        elif tag == "str":
            arr = pa.array([str(v) for v in items], pa.string())
        else:  # no schema type accepts these; binary values fail every conversion
            arr = pa.array([b""] * len(items), pa.binary())
        parts.append((np.asarray(rows, dtype=np.intp), arr))
    return _Col(parts, values)


def _pandas_missing(value: Any) -> bool:
    """pandas' NA or NaT; only pandas makes them, so without pandas loaded there are none."""
    pd = sys.modules.get("pandas")
    return pd is not None and (value is pd.NA or value is pd.NaT)


def _tag(value: Any) -> str:
    if value is None or _pandas_missing(value):
        return "null"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int" if _I64_MIN <= int(value) <= _I64_MAX else "bigint"
    if isinstance(value, (float, np.floating)):
        return "null" if math.isnan(value) else "float"
    if isinstance(value, str):
        return "other" if _SURROGATE.search(value) else "str"
    return "other"


# ---------------------------------------------------------------- conversion


def _mask(arr: Any) -> _Mask:
    return to_numpy(arr, False)


_PARALLEL_ROWS = 50_000  # a batch this large converts its text columns in parallel


def _convert_all(raw: _Raw, kinds: dict[str, str], n: int) -> dict[str, _Converted]:
    """Every attribute column converted to its kind; on a large batch with
    several columns of text to parse, in threads, as arrow's compute and
    numpy release the GIL (a pool per batch: a pool kept across a fork
    would hang in the child). Columns that come as numbers are quick to
    convert, and threads for them only contend with the reader's."""
    parsing = sum(
        1
        for attr, kind in kinds.items()
        if kind != "string" and attr in raw.columns and any(_is_text_array(arr) for _, arr in raw.columns[attr].parts)
    )
    if n < _PARALLEL_ROWS or parsing < 2:
        return {attr: _convert(raw.columns.get(attr), kind, n) for attr, kind in kinds.items()}
    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        futures = {attr: pool.submit(_convert, raw.columns.get(attr), kind, n) for attr, kind in kinds.items()}
        return {attr: future.result() for attr, future in futures.items()}


def _is_text_array(arr: Any) -> bool:
    t = arr.type.value_type if pa.types.is_dictionary(arr.type) else arr.type
    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _convert(col: _Col | None, kind: str, n: int) -> _Converted:
    if col is not None and len(col.parts) == 1 and col.parts[0][0] is None:  # one array of every row
        part = _convert_array(col.parts[0][1], kind)
        return _Converted(np.asarray(part.values, dtype=STORAGE[kind]), part.ok, part.null)
    values = np.full(n, FILLER[kind], dtype=STORAGE[kind])
    ok = np.zeros(n, dtype=np.bool_)
    null = np.ones(n, dtype=np.bool_)
    for rows, arr in col.parts if col is not None else []:
        part = _convert_array(arr, kind)
        where = slice(None) if rows is None else rows
        values[where], ok[where], null[where] = part.values, part.ok, part.null
    return _Converted(values, ok, null)


def _convert_array(arr: Any, kind: str) -> _Converted:
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    if pa.types.is_large_string(t):
        arr, t = compute.cast(arr, pa.string()), pa.string()
    null = nulls(arr)
    if pa.types.is_string(t):
        return _from_strings(arr, kind, null)
    if pa.types.is_floating(t) or pa.types.is_decimal(t):
        floats = to_numpy(compute.cast(arr, pa.float64()), np.nan).astype(np.float64)
        return _from_floats(floats, kind, null | np.isnan(floats))
    values = np.full(len(arr), FILLER[kind], dtype=STORAGE[kind])
    ok = np.zeros(len(arr), dtype=np.bool_)
    if pa.types.is_boolean(t) and kind == "bool":
        values, ok = _mask(arr), ~null
    elif pa.types.is_integer(t) and kind != "string":
        ints = to_numpy(arr, 0)
        if kind == "double":
            values, ok = ints.astype(np.float64), ~null
        elif kind == "bool":
            values, ok = ints == 1, ~null & ((ints == 0) | (ints == 1))
        else:
            fits = ints <= np.uint64(_I64_MAX) if ints.dtype == np.uint64 else np.ones(len(ints), dtype=np.bool_)
            ok = ~null & fits
            values = ints.astype(np.int64) if ok.all() else np.where(ok, ints, 0).astype(np.int64)
    elif pa.types.is_timestamp(t) and kind == "primary_time":
        scale = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}[t.unit]
        ticks = to_numpy(compute.cast(arr, pa.int64()), 0).astype(np.int64)
        ok = ~null & (ticks <= _I64_MAX // scale) & (ticks >= -(_I64_MAX // scale))
        values = np.where(ok, ticks, 0) * scale
    return _Converted(values, ok, null)


def _from_floats(floats: npt.NDArray[np.float64], kind: str, null: _Mask) -> _Converted:
    if kind == "double":
        return _Converted(np.where(null, np.nan, floats), ~null, null)
    if kind == "bool":
        return _Converted(floats == 1, ~null & ((floats == 0) | (floats == 1)), null)
    if kind == "string":
        return _Converted(np.full(len(floats), None, dtype=object), np.zeros(len(floats), dtype=np.bool_), null)
    with np.errstate(invalid="ignore"):
        ok = ~null & np.isfinite(floats) & (np.trunc(floats) == floats) & (np.abs(floats) <= 2.0**53)
    return _Converted(np.where(ok, floats, 0).astype(np.int64), ok, null)


_INT = r"^[+-]?[0-9]{1,18}$"
_LONG_INT = r"^[+-]?[0-9]{19,}$"
_FLOAT = r"(?i)^[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[+-]?[0-9]+)?|inf|infinity|nan)$"


def _from_strings(arr: Any, kind: str, null: _Mask) -> _Converted:
    if kind == "string":
        return _Converted(_strings(arr), ~null, null)
    if kind != "bool":
        quick = _quick_cast(arr, kind, null)
        if quick is not None:
            return quick
    text = compute.utf8_trim(arr, characters=_BLANK)
    if kind == "bool":
        lower = compute.utf8_lower(text)
        yes = _mask(compute.is_in(lower, value_set=strings(["true", "1"])))
        no = _mask(compute.is_in(lower, value_set=strings(["false", "0"])))
        return _Converted(yes, yes | no, null)
    if kind == "double":
        ok = _mask(compute.match_substring_regex(text, _FLOAT))
        floats = _cast_matching(text, ok, pa.float64(), float, np.float64)
        nan = ok & np.isnan(floats)
        return _Converted(np.where(nan, np.nan, floats), ok & ~nan, null | nan)
    ok = _mask(compute.match_substring_regex(text, _INT))
    values = _cast_matching(compute.replace_substring_regex(text, r"^\+", ""), ok, pa.int64(), int, np.int64)
    for i in np.flatnonzero(_mask(compute.match_substring_regex(text, _LONG_INT))):
        try:
            number = int(text[i].as_py())
        except ValueError:  # more digits than Python converts
            continue
        if _I64_MIN <= number <= _I64_MAX:
            values[i], ok[i] = number, True
    if kind == "primary_time":
        rest = np.flatnonzero(~null & ~ok)
        if rest.size:
            ns, good = _parse_iso(compute.take(text, from_numpy(rest)).to_pylist())
            values[rest[good]], ok[rest[good]] = ns[good], True
    return _Converted(values, ok, null)


def _strings(arr: Any) -> npt.NDArray[Any]:
    """Strings as an object array; a column of few distinct values (names,
    symbols) is built from its dictionary, one Python str per value."""
    if len(arr) > 1000:
        encoded = compute.dictionary_encode(arr)
        if len(encoded.dictionary) * 4 < len(arr):
            words = np.array(encoded.dictionary.to_pylist(), dtype=object)
            indices = to_numpy(encoded.indices, 0)
            result = words[indices] if len(words) else np.full(len(arr), None, dtype=object)
            result[nulls(encoded.indices)] = None
            return result
    return np.array(arr.to_pylist(), dtype=object)


def _may_hold(arr: Any, letters: bytes) -> bool:
    """Whether some string of ``arr`` may hold one of ``letters``: its
    character buffer is searched whole (a slice's neighbours may say yes)."""
    chars = arr.buffers()[2]
    if chars is None:
        return False
    data = chars.to_pybytes()
    return any(data.find(letter) >= 0 for letter in letters)


def _quick_cast(arr: Any, kind: str, null: _Mask) -> _Converted | None:
    """Arrow's cast when it takes every string and reads each as the
    patterns below would (its hexadecimal ints excluded); else None."""
    try:
        if kind == "double":
            floats = to_numpy(compute.cast(arr, pa.float64()), np.nan)
            nan = np.isnan(floats) & ~null
            return _Converted(floats, ~null & ~nan, null | nan)
        if _may_hold(arr, b"xX"):
            return None
        ints = to_numpy(compute.cast(arr, pa.int64()), 0)
    except _ARROW_FAILURES:
        return None
    return _Converted(ints, ~null, null)


def _cast_matching(text: Any, ok: _Mask, to: Any, parse: Callable[[str], Any], dtype: Any) -> npt.NDArray[Any]:
    """Cast the strings where ``ok`` (others read as 0) with arrow, or one by
    one if arrow refuses some string the pattern let through."""
    chosen = compute.if_else(from_numpy(ok), text, strings(["0"])[0])
    try:
        return np.array(to_numpy(compute.cast(chosen, to), 0), dtype=dtype)
    except _ARROW_FAILURES:
        values = np.zeros(len(ok), dtype=dtype)
        for i in np.flatnonzero(ok):
            try:
                values[i] = parse(chosen[i].as_py())
            except (ValueError, OverflowError):
                ok[i] = False
        return values


def _parse_iso(texts: list[str]) -> tuple[npt.NDArray[np.int64], _Mask]:
    """ISO-8601 timestamps as int64 ns since the epoch (naive ones as UTC)."""
    import pandas as pd

    def parse(values: list[str]) -> Any:
        return pd.to_datetime(pd.Series(values, dtype=object), format="ISO8601", utc=True, errors="coerce")

    try:
        stamps = parse(texts)
    except (ValueError, OverflowError, TypeError):
        stamps = pd.concat([_safe(parse, [t]) for t in texts], ignore_index=True)
    good = np.array(stamps.notna(), dtype=np.bool_)
    ns = np.array(stamps.dt.as_unit("ns").array.asi8, dtype=np.int64)
    return np.where(good, ns, 0), good


def _safe(parse: Callable[[list[str]], Any], values: list[str]) -> Any:
    import pandas as pd

    try:
        return parse(values)
    except (ValueError, OverflowError, TypeError):
        return pd.Series([pd.NaT], dtype="datetime64[ns, UTC]")


# ---------------------------------------------------------------- judging


@dataclass
class StreamProgress:
    """Where a stream read in chunks stands: the next row's position and
    the largest primary time accepted so far. ``load_pandas`` and
    ``load_arrow`` take one to judge lateness across calls (``Detector.feed``)."""

    position: int = 0
    latest: int = _I64_MIN


def _judge(
    raw: _Raw,
    etypes: tuple[EventSchema, ...],
    kinds: dict[str, str],
    strict: bool,
    lateness: int,
    progress: StreamProgress | None = None,
    skipped: int = 0,
) -> tuple[EventBatch, LoadReport]:
    """Find each row's first problem, split off the bad rows, build the batch
    (numbered on from ``progress``, which it advances)."""
    progress = progress if progress is not None else StreamProgress()
    n = raw.n
    problems = dict(raw.pre)
    bad = np.zeros(n, dtype=np.bool_)
    bad[list(problems)] = True
    names = [e.name for e in etypes]

    codes = np.full(n, -1, dtype=np.int32) if raw.codes is None else raw.codes.astype(np.int32)
    type_null = np.ones(n, dtype=np.bool_)
    for rows, arr in raw.types.parts:
        where = slice(None) if rows is None else rows
        if pa.types.is_dictionary(arr.type):
            arr = arr.dictionary_decode()
        type_null[where] = nulls(arr)
        if raw.codes is None and (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            found = compute.index_in(arr, value_set=strings(names))
            if found.null_count > arr.null_count:  # names padded with blanks are names too
                found = compute.index_in(compute.utf8_trim(arr, characters=_BLANK), value_set=strings(names))
            codes[where] = to_numpy(found, -1)
    for i in np.flatnonzero(~bad & (codes < 0)):
        problems[int(i)] = _type_problem(raw, int(i), bool(type_null[i]), names)
    bad |= codes < 0

    converted = _convert_all(raw, kinds, n)
    # a value that is present and null is a null (not for a primary time: an event needs its time)
    nulled = {attr: _present(raw, attr, c.null) for attr, c in converted.items() if kinds[attr] != "primary_time"}
    failed = {attr: ~c.ok & ~nulled[attr] if attr in nulled else ~c.ok for attr, c in converted.items()}
    failing = {attr: bool(f.any()) for attr, f in failed.items()}
    times = np.zeros(n, dtype=np.int64)
    timed = np.zeros(n, dtype=np.bool_)
    for code, event in enumerate(etypes):
        rows = (codes == code) & ~bad
        for j, (attr, kind) in enumerate(event.attributes.items()):
            if not failing[attr]:  # the usual case: no row to look at
                continue
            wrong = rows & failed[attr]
            for i in np.flatnonzero(wrong):
                problems[int(i)] = _attribute_problem(raw, event, j, attr, kind, converted[attr], int(i))
            rows &= ~wrong
            bad |= wrong
        if event.primary_time is not None:
            times[rows] = converted[event.primary_time].values[rows]
            timed |= rows

    if n and timed.any():
        marked = np.where(timed, times, _I64_MIN)
        latest = np.empty(n, dtype=np.int64)
        latest[0] = progress.latest
        latest[1:] = np.maximum(np.maximum.accumulate(marked)[:-1], progress.latest)
        late = timed & (marked < np.maximum(latest, np.int64(_I64_MIN + lateness)) - np.int64(lateness))
        for i in np.flatnonzero(late):
            event = etypes[codes[i]]
            problems[int(i)] = _late_problem(event, int(times[i]), int(latest[i]), lateness)
        bad |= late

    if n and timed.any():
        progress.latest = max(progress.latest, int(marked.max()))
    start = progress.position
    progress.position += n
    order = sorted(problems)
    if strict and order:
        raise _strict_error(raw, order[0], problems[order[0]])
    letters = [_dead_letter(start + i, int(raw.lines[i]), problems[i], raw.raw(i)) for i in order]
    everyone = not bad.any()
    keep = np.arange(n) if everyone else np.flatnonzero(~bad)
    kept_codes = codes if everyone else codes[keep]
    columns: dict[str, Column] = {}
    for attr, kind in kinds.items():
        declares = np.array([attr in e.attributes for e in etypes], dtype=np.bool_)
        valid = np.ones(len(keep), dtype=np.bool_) if declares.all() else declares[kept_codes]
        # converted values are this batch's own: taken whole when every row stays
        values = converted[attr].values if everyone else converted[attr].values[keep]
        null = nulled.get(attr)
        if null is not None and null.any():
            valid = valid & ~(null if everyone else null[keep])
        if not valid.all():
            values = np.where(valid, values, FILLER[kind])
        columns[attr] = Column(kind, values, valid)
    batch = EventBatch(etypes, keep.astype(np.int64) + start, kept_codes, columns)
    return batch, LoadReport(raw.name, n, len(keep), letters, skipped)


def _present(raw: _Raw, attr: str, null: _Mask) -> _Mask:
    """The rows where ``attr`` is there and null (an absent JSON key or table
    column is missing, not null)."""
    if attr not in raw.columns:
        return np.zeros(raw.n, dtype=np.bool_)
    absent = raw.absent.get(attr)
    return null if absent is None else null & ~absent


def _show(value: Any) -> str:
    text = repr(value) if isinstance(value, (str, bytes)) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _type_problem(raw: _Raw, i: int, is_null: bool, names: list[str]) -> _Problem:
    expected = f"a declared event type ({listing(names) or 'the schema declares none'})"
    if is_null:
        absent = raw.absent.get("type")
        found = raw.absent_text.format("type") if absent is not None and absent[i] else raw.null_text
        hint = "give every row its event type"
        return _Problem("unknown_type", "missing event type", "type", expected, found, hint, 1)
    value = raw.types.value(i)
    hint = (did_you_mean(value.strip(), names) if isinstance(value, str) else None) or (
        "declare the event type in the schema, or correct the row"
    )
    return _Problem("unknown_type", "unknown event type", "type", expected, _show(value), hint, 1)


def _attribute_problem(
    raw: _Raw, event: EventSchema, j: int, attr: str, kind: str, conv: _Converted, i: int
) -> _Problem:
    expected = _EXPECTED[kind]
    if conv.null[i]:
        absent = raw.absent.get(attr)
        gone = attr not in raw.columns or (absent is not None and bool(absent[i]))
        found = raw.absent_text.format(attr) if gone else raw.null_text
        hint = f"give {attr} a value in every {event.name} row; {_FIX[kind]}"
        headline, problem = f"missing attribute {attr!r} of {event.name}", "missing_attribute"
    else:
        found, hint = _show(raw.columns[attr].value(i)), _FIX[kind]
        if kind == "primary_time":
            headline, problem = f"unparsable time {attr!r} of {event.name}", "bad_time"
        else:
            headline, problem = f"mistyped attribute {attr!r} of {event.name}", "mistyped_attribute"
    return _Problem(problem, headline, attr, expected, found, hint, j + 2)


def _late_problem(event: EventSchema, t: int, latest: int, lateness: int) -> _Problem:
    attr = event.primary_time or "time"
    return _Problem(
        "late",
        f"late event {event.name}",
        attr,
        f"{attr} >= {latest - lateness} (the latest time so far, {latest}, minus allowed_lateness {lateness})",
        f"{attr} = {t}, {latest - t} ns behind",
        f"sort the input by {attr}, or allow a lateness of at least {latest - t}",
        list(event.attributes).index(attr) + 2 if attr in event.attributes else None,
    )


def _dead_letter(position: int, line: int, p: _Problem, raw: str | dict[str, Any]) -> DeadLetter:
    reason = f"{p.headline}: expected {p.expected}, found {p.found}"
    return DeadLetter(position, line, p.kind, reason, p.column, p.expected, p.found, p.hint, raw)


def late_letter(
    event: EventSchema, position: int, line: int, time: int, latest: int, lateness: int, raw: str | dict[str, Any]
) -> DeadLetter:
    """The dead letter of an accepted event that turns out late against
    events loaded elsewhere (by a caller that loads a stream in pieces, such
    as the Spark pipeline): ``latest`` is the largest time before it.

    >>> from sharp_cer.language import Schema
    >>> a = Schema.parse("CREATE STREAM S { EVENT A { t:primary_time } }").event("A")
    >>> late_letter(a, 7, 8, 90, 100, 5, {"type": "A", "t": 90}).reason
    'late event A: expected t >= 95 (the latest time so far, 100, minus allowed_lateness 5), found t = 90, 10 ns behind'
    """
    return _dead_letter(position, line, _late_problem(event, time, latest, lateness), raw)


def _error(where: str, headline: str, expected: str, found: str, hint: str | None) -> EventsError:
    text = f"{where}: error: {headline}\n  expected: {expected}\n  found: {found}"
    return EventsError(text + (f"\n  hint: {hint}" if hint else ""))


def _strict_error(raw: _Raw, i: int, p: _Problem) -> EventsError:
    where = f"{raw.name}, {raw.line_word} {int(raw.lines[i])}"
    if p.column is not None:
        where += f", column {p.column!r}" + (f" (field {p.field})" if raw.csv_fields and p.field else "")
    row = raw.raw(i)
    shown = row if isinstance(row, str) else json.dumps(row, default=str)
    hint = f"{p.hint}; or load with strict=False to send bad rows to the dead-letter list"
    error = _error(where, p.headline, p.expected, p.found, hint)
    return EventsError(f"{error}\n  row: {shown if len(shown) <= 200 else shown[:197] + '...'}")
