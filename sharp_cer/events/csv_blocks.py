"""Reading CORE-style CSV in blocks of bytes, column-wise.

A block is split into lines and fields by pyarrow compute, without a Python
step per row. Only the suspicious lines, those holding a quote or longer than
the csv module's field limit, go to Python's ``csv`` one by one; a block that
is not UTF-8 or breaks lines with a bare carriage return is read that way as
a whole. A line is a row, as in Spark's reading, with one exception kept from
the csv module: a quoted field may hold line breaks, so a line with an odd
number of quotes is joined with the lines up to the next such line when the
joined text is exactly one well-formed CSV record of at most ``JOIN_LINES``
lines; otherwise the line stands alone, and an unbalanced quote costs that
one line (and holds back at most ``JOIN_LINES`` lines while it waits).

>>> import io
>>> made = read_blocks(io.BytesIO(b'A,1\\n\\nB,"x\\ny",2\\nA,"3\\n'), {"A": ("v",), "B": ("s", "v")}, None)
>>> blocks = [make() for make in made]
>>> [(b.lines.tolist(), b.types.to_pylist(), b.counts.tolist(), b.skipped) for b in blocks]
[([1, 3], ['A', 'B'], [2, 3], 1), ([5], ['A'], [2], 0)]
>>> blocks[0].values["s"].to_pylist(), blocks[1].values["v"].to_pylist()
([None, 'x\\ny'], ['3'])

The last line's quote may close in a later block, so it waits for the next
read; at the end of the input it stands alone.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.csv as pcsv

from . import arrow_compute as compute
from .arrow_numpy import EMPTY_STRING, NULL_STRING, from_numpy, strings, to_numpy

#: bytes read at a time; a block holds this much and ends at a line break
BLOCK_BYTES = 4 << 20
#: the first read is smaller, so whoever consumes the blocks starts sooner
FIRST_BYTES = 256 << 10
#: the most lines one record (a quoted field holding line breaks) may span
JOIN_LINES = 100
_BLANK = " \t\r\n\x0b\x0c"
_LIMIT = csv.field_size_limit()
_UNDECODED = re.compile("[\udc80-\udcff]")  # what surrogateescape makes of bytes that are not UTF-8

#: decides whether a record is a header: (fields, line, text) -> True to skip it (or raises)
HeaderCheck = Callable[[list[str], int, str], bool]


def typed_columns(layouts: Mapping[str, tuple[str, ...]], numbers: Mapping[str, Any], width: int) -> dict[int, Any]:
    """The field numbers of a block of rows of ``width`` fields to parse as
    numbers: where every type of that width has an attribute of one type in
    ``numbers``, and only where each such attribute sits in no other field,
    so an attribute's fields are all strings or all numbers.

    >>> layouts = {"A": ("x", "s"), "B": ("y", "x"), "C": ("x",)}
    >>> typed_columns(layouts, {"x": pa.int64(), "y": pa.int64()}, 3)
    {}
    >>> typed_columns(layouts, {"x": pa.int64(), "y": pa.int64()}, 2)
    {1: DataType(int64)}
    >>> typed_columns({"A": ("x", "s"), "B": ("x", "t")}, {"x": pa.float64()}, 3)
    {1: DataType(double)}
    """
    matching = [attrs for attrs in layouts.values() if 1 + len(attrs) == width]
    chosen: dict[int, Any] = {}
    for j in range(1, width if matching else 1):
        found = {numbers.get(attrs[j - 1]) for attrs in matching}
        if len(found) == 1 and None not in found:
            chosen[j] = found.pop()
    places: dict[str, set[int]] = {}
    for attrs in matching:
        for j, attr in enumerate(attrs):
            places.setdefault(attr, set()).add(j + 1)
    settled = False
    while not settled:
        settled = True
        for spots in places.values():
            if any(j in chosen for j in spots) and not all(j in chosen for j in spots):
                for j in spots:
                    chosen.pop(j, None)
                settled = False
    return chosen


#: after a block whose number fields did not all parse, the most blocks read as strings before the next try
_MOST_WAIT = 64


class _Numbers:
    """When an even block's number fields are parsed as numbers: while
    they parse; after a block where one did not (read again as strings),
    the next tries wait one block, then two, four, ... (at most
    ``_MOST_WAIT``), and each block that parses halves the wait again, so a
    file of text in number fields is not read twice over."""

    def __init__(self, layouts: Mapping[str, tuple[str, ...]], numbers: Mapping[str, Any]) -> None:
        self.layouts, self.numbers = layouts, numbers
        self.by_width: dict[int, dict[int, Any]] = {}
        self.wait = self.skip = 0

    def columns(self, data: bytes) -> dict[int, Any]:
        """The fields to parse as numbers in ``data``'s block (by its first line)."""
        if self.skip > 0:
            self.skip -= 1
            return {}
        if not self.numbers:
            return {}
        width = data[: data.find(b"\n")].count(b",") + 1
        if width not in self.by_width:
            self.by_width[width] = typed_columns(self.layouts, self.numbers, width)
        typed = self.by_width[width]
        ints = any(pa.types.is_integer(t) for t in typed.values())
        return {} if ints and _hexadecimal(data) else typed  # arrow reads 0x10 as an int, the patterns do not

    def parsed(self, ok: bool) -> None:
        self.wait = min(max(1, 2 * self.wait), _MOST_WAIT) if not ok else self.wait // 2
        self.skip = 0 if ok else self.wait


def _hexadecimal(data: bytes) -> bool:
    """Whether ``data`` holds ``0x`` or ``0X`` (numpy: a tenth of the time of a search of the bytes).

    >>> _hexadecimal(b"A,0X1f"), _hexadecimal(b"A,0,x")
    (True, False)
    """
    codes = np.frombuffer(data, dtype=np.uint8)
    step = 1 << 16  # pieces whose scratch arrays the allocator reuses (a block's would be fresh pages each time)
    for k in range(0, len(codes), step):
        piece = codes[k : k + step + 1]
        if (((piece[1:] | 0x20) == ord("x")) & (piece[:-1] == ord("0"))).any():
            return True
    return False


@dataclass(frozen=True)
class CsvBlock:
    """The rows of one block: where each starts (``lines``, 1-based), its
    type field (trimmed, null when empty or unreadable) and that type's index
    in the layouts (``codes``, -1 for no type of theirs), its field count
    (-1 when it is no CSV record: see ``malformed``), and per attribute
    name the field of the rows whose type declares it and whose field count
    fits (null elsewhere and where the field is empty). ``skipped`` counts
    the blank lines and the header; ``text(i)`` is row i as written."""

    lines: npt.NDArray[np.int64]
    types: Any
    codes: npt.NDArray[np.int32]
    counts: npt.NDArray[np.int64]
    values: dict[str, Any]
    malformed: dict[int, str]
    skipped: int
    text: Callable[[int], str]

    def __len__(self) -> int:
        return len(self.lines)


@dataclass(frozen=True)
class _Record:
    """A record read by Python's csv: its first line (index in the block),
    fields (None when unreadable, with ``error``) and text."""

    line: int
    size: int  # lines it spans
    fields: list[str] | None
    error: str
    text: str


def read_blocks(
    stream: BinaryIO,
    layouts: Mapping[str, tuple[str, ...]],
    header: HeaderCheck | None,
    size: int = BLOCK_BYTES,
    numbers: Mapping[str, Any] | None = None,
) -> Iterator[Callable[[], CsvBlock]]:
    """The rows of a CSV byte stream, block by block: for each block, what
    makes its rows when called, as the reading goes on (the part of a
    block's work that holds the GIL, which a caller can do in its own
    thread while this one reads the next block). ``layouts`` gives
    each event type's attribute names in field order; ``header`` judges the
    first record (None: there is no header). ``numbers`` names attributes
    whose fields may come as numbers (arrow ``int64`` or ``float64``)
    instead of strings: in an even block, where each such field parses
    (see :func:`typed_columns`)."""
    numeric = _Numbers(layouts, numbers or {})
    buffer = b""  # read bytes not yet in a block: the start of a line
    line = 1
    first = True
    yielded = False
    reading = min(size, FIRST_BYTES)
    while True:
        got = stream.read(reading)
        reading = size
        final = not got
        if first:
            got, buffer = buffer + got, b""
            if len(got) < 3 and not final:  # a mark split across reads is still one mark
                buffer = got
                continue
            got, first = got.removeprefix(b"\xef\xbb\xbf"), False
            buffer = got if final else buffer
        if final:
            data, rest = buffer, b""
        else:
            end = got.rfind(b"\n") + 1
            if end == 0:
                buffer += got  # no whole line yet
                continue
            # one copy of the block's bytes (a slice of all is no copy)
            data = b"".join((buffer, memoryview(got)[:end])) if buffer else got[:end]
            rest = got[end:]
        if data:
            made, used, lines = _read_block(data, line, final, layouts, header, numeric)
            if made is not None:
                header = None  # only the first record can be a header
                yielded = True
                yield made
            buffer, line = data[used:] + rest, line + lines
        else:
            buffer = rest
        if final and not buffer:
            break
    if not yielded:  # an empty input is one empty block
        nothing = strings([])
        attributes = dict.fromkeys(a for attrs in layouts.values() for a in attrs)
        none = np.zeros(0, np.int64)
        empty = CsvBlock(none, nothing, none.astype(np.int32), none, dict.fromkeys(attributes, nothing), {}, 0, str)
        yield _made(empty)


def line_blocks(stream: BinaryIO, size: int = BLOCK_BYTES) -> Iterator[tuple[bytes, int]]:
    """Blocks of about ``size`` bytes that end at a line break (or the end),
    each with the number of its first line; an empty input is one empty block.
    A byte order mark that opens the input is no part of its first line.

    >>> [(block, line) for block, line in line_blocks(io.BytesIO(b"\\xef\\xbb\\xbfa\\nb\\nc"), 2)]
    [(b'a\\n', 1), (b'b\\n', 2), (b'c', 3)]
    """
    buffer = b""
    line = 1
    yielded = False
    first = True
    while True:
        chunk = stream.read(size)
        buffer += chunk
        if first and (len(buffer) >= 3 or not chunk):
            buffer, first = buffer.removeprefix(b"\xef\xbb\xbf"), False
        cut = buffer.rfind(b"\n") + 1 if chunk else len(buffer)
        if cut:
            yield buffer[:cut], line
            yielded = True
            line += buffer.count(b"\n", 0, cut)
            buffer = buffer[cut:]
        if not chunk:
            break
    if not yielded:
        yield b"", 1


def _read_block(
    data: bytes,
    first_line: int,
    final: bool,
    layouts: Mapping[str, tuple[str, ...]],
    header: HeaderCheck | None,
    numeric: _Numbers,
) -> tuple[Callable[[], CsvBlock] | None, int, int]:
    """(what makes the block's rows or None when it has no line, bytes
    used, lines used).
    Lines from an odd quote on are left over when their record may go on in
    the next block."""
    carriage = data.count(b"\r") if b"\r" in data else 0
    even = carriage == 0 or carriage == data.count(b"\r\n")
    names = strings(list(layouts))
    if even and b'"' not in data:
        typed = numeric.columns(data) if header is None else {}  # a header is no numbers
        read = _read_even(data, names, typed)
        if typed:
            numeric.parsed(read is not None)
        if read is None and typed:  # a number field that does not parse (or the block is not even)
            read = _read_even(data, names, {})
        if read is not None:
            table, codes = read
            rows = np.arange(table.num_rows, dtype=np.int64)
            # the rest is left to the caller's thread, while this one reads on
            made = partial(_from_table, table, codes, rows, first_line, layouts, header, data)
            return made, len(data), table.num_rows
    try:
        text = data.decode("utf-8")
        undecoded = False
    except UnicodeDecodeError:
        text, undecoded = data.decode("utf-8", "surrogateescape"), True
    if undecoded or not even:
        slow, used_bytes, used_lines = _read_slowly(text, data, first_line, final, layouts, header, undecoded)
        return (None if slow is None else _made(slow)), used_bytes, used_lines
    pieces = compute.split_pattern(compute.cast(strings([text]), pa.large_string()), "\n")
    lines = compute.cast(pieces.values, pa.string())
    if text.endswith("\n"):
        lines = lines.slice(0, len(lines) - 1)
    stripped = compute.replace_substring_regex(lines, "\r$", "") if carriage else lines
    quotes = to_numpy(compute.count_substring(lines, '"'), 0) if b'"' in data else np.zeros(len(lines), dtype=np.int64)
    suspicious = (quotes > 0) | (to_numpy(compute.binary_length(lines), 0) > _LIMIT)
    records, used = _python_records(
        len(lines), quotes, np.flatnonzero(suspicious).tolist(), lambda k: lines[k].as_py() + "\n", final
    )
    if used < len(lines):
        lines, stripped, suspicious = lines.slice(0, used), stripped.slice(0, used), suspicious[:used]
        byte_count = int(compute.total(compute.binary_length(lines)).as_py() or 0) + used
    else:
        byte_count = len(data)
    if used == 0:
        return None, 0, 0
    # lines inside a multi-line record are no rows of their own
    simple = ~suspicious
    for r in records:
        simple[r.line : r.line + r.size] = False
    simple &= ~to_numpy(compute.equal(compute.utf8_trim(stripped, characters=_BLANK), EMPTY_STRING), False)
    rows = np.flatnonzero(simple)
    records = [r for r in records if r.fields is None or r.text.strip(_BLANK)]
    found = _header_row(rows, records, stripped, first_line, header)
    if found == "fast":
        rows = rows[1:]
    elif found == "python":
        records = records[1:]
    skipped = used - len(rows) - sum(r.size for r in records)
    block = _assemble(rows, compute.take(stripped, from_numpy(rows)), records, layouts)
    split = _finish(block, names, rows, records, first_line, skipped, lambda k: stripped[k].as_py())
    return _made(split), byte_count, used


def _made(block: CsvBlock) -> Callable[[], CsvBlock]:
    return lambda: block


def plain_utf8(data: bytes) -> bool:
    """Whether pyarrow's readers see ``data`` as Python's would: it is
    UTF-8 and holds no byte order mark (pyarrow skips one that opens a
    buffer, so a line corrupted by one would pass or not by where a block
    starts; the mark opening the input is removed before).

    >>> plain_utf8(b"A,1"), plain_utf8(b"A,\\xff"), plain_utf8(b"A,1\\n\\xef\\xbb\\xbfA,2")
    (True, False, False)
    """
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return b"\xef\xbb\xbf" not in data


def _read_even(data: bytes, names: Any, typed: Mapping[int, Any]) -> tuple[Any, npt.NDArray[np.int32]] | None:
    """The block as a table by pyarrow's CSV reader, with each row's index
    in ``names`` (-1: none), when that is exact: no quotes (checked by the
    caller), every line with the first line's field count (pyarrow raises
    on another), no blank line, no field over the csv module's limit; else
    None. Fields are strings, those of the field numbers in ``typed`` (for
    the first line's field count) parsed as its arrow type (empty: null),
    and None when one does not parse. Refused up front unless
    :func:`plain_utf8`."""
    if not plain_utf8(data):
        return None
    width = data[: data.find(b"\n")].count(b",") + 1
    fields = [f"f{i}" for i in range(width)]
    types = {f"f{i}": typed.get(i, pa.string()) for i in range(width)}
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data),
            read_options=pcsv.ReadOptions(column_names=fields, block_size=1 << 20),  # threads share a block
            parse_options=pcsv.ParseOptions(quote_char=False, ignore_empty_lines=False, newlines_in_values=False),
            convert_options=pcsv.ConvertOptions(column_types=types, null_values=[""], strings_can_be_null=False),
        )
    except pa.ArrowInvalid:
        return None
    if table.num_rows == 0:
        return None
    types = table.column(0).combine_chunks()
    codes = to_numpy(compute.index_in(types, value_set=names), -1)
    unknown = np.flatnonzero(codes < 0)
    # a blank line is no row (a row of a known type is not blank)
    if len(unknown):
        trimmed = compute.utf8_trim(compute.take(types, from_numpy(unknown)), characters=_BLANK)
        if compute.any_true(compute.equal(trimmed, EMPTY_STRING)).as_py():
            return None
    long_lines = len(data) > _LIMIT and not _short_lines(data)
    if long_lines and (typed or any(compute.maximum(compute.binary_length(c)).as_py() > _LIMIT for c in table.columns)):
        return None
    return table, codes


def _short_lines(data: bytes) -> bool:
    """Whether no line of ``data`` can be over the csv module's field limit:
    every stretch of half the limit holds a line break, so two line breaks
    are less than the limit apart (a look at a few bytes per stretch)."""
    step = _LIMIT // 2
    return all(data.find(b"\n", k, k + step) >= 0 for k in range(0, len(data) - step, step))


def _from_table(
    table: Any,
    codes: npt.NDArray[np.int32],
    rows: npt.NDArray[np.int64],
    first_line: int,
    layouts: Mapping[str, tuple[str, ...]],
    header: HeaderCheck | None,
    data: bytes,
) -> CsvBlock:
    """The rows of an even block read by pyarrow (``data``: its bytes)."""
    columns = [c.combine_chunks() for c in table.columns]
    skipped = 0
    if header is not None:
        first = [c[0].as_py() for c in columns]
        if header(first, first_line, ",".join(first)):
            columns, rows, codes, skipped = [c.slice(1) for c in columns], rows[1:], codes[1:], 1
    types = columns[0]
    if (codes < 0).any():  # names padded with blanks are names too
        types = compute.utf8_trim(types, characters=_BLANK)
        codes = to_numpy(compute.index_in(types, value_set=strings(list(layouts))), -1)
    width = len(columns)
    positions: dict[str, list[tuple[Any, int]]] = {}
    for code, attrs in enumerate(layouts.values()):
        if 1 + len(attrs) == width:
            for j, attr in enumerate(attrs):
                positions.setdefault(attr, []).append((codes == code, j + 1))
    fields: dict[str, Any] = {}
    for attr in dict.fromkeys(a for attrs in layouts.values() for a in attrs):
        places = sorted({j for _, j in positions.get(attr, [])})
        column = None
        for j in places:
            mask = np.logical_or.reduce([m for m, k in positions[attr] if k == j])
            if mask.all():  # a column every row declares is taken whole, without a copy
                column = columns[j]
                continue
            # an attribute's fields are all strings or all of one number type (typed_columns)
            rest = pa.nulls(len(rows), columns[j].type) if column is None else column
            column = compute.if_else(from_numpy(mask), columns[j], rest)
        if column is None:
            column = pa.nulls(len(rows), pa.string())
        fields[attr] = _empty_as_null(column) if pa.types.is_string(column.type) else column
    counts = np.full(len(rows), width, dtype=np.int64)
    ends: list[npt.NDArray[np.intp]] = []

    def text(i: int) -> str:
        # the line as written (a number keeps its text), found in the bytes when a dead letter asks
        if not ends:
            breaks = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10)
            ends.append(breaks if data.endswith(b"\n") else np.append(breaks, len(data)))
        k = int(rows[i])
        begin = int(ends[0][k - 1]) + 1 if k else 0
        return data[begin : int(ends[0][k])].decode("utf-8").removesuffix("\r")

    if (codes < 0).any():  # only an unknown type can be an empty field
        types = compute.if_else(compute.equal(types, EMPTY_STRING), NULL_STRING, types)
    return CsvBlock(rows + first_line, types, codes, counts, fields, {}, skipped, text)


def _empty_as_null(arr: Any) -> Any:
    empty = compute.equal(arr, EMPTY_STRING)
    return compute.if_else(empty, NULL_STRING, arr) if compute.any_true(empty).as_py() else arr


def _python_records(
    n: int, quotes: npt.NDArray[Any], suspicious: list[int], line: Callable[[int], str], final: bool
) -> tuple[list[_Record], int]:
    """Python's csv on the suspicious lines (``line(k)`` with its line
    break): (their records, lines used). Work is linear in the lines: a
    join spans no other odd line."""
    odd = np.flatnonzero(quotes % 2 == 1)
    records: list[_Record] = []
    after = 0  # lines before this belong to earlier records
    for k in suspicious:
        if k < after:
            continue
        if quotes[k] % 2 == 1:
            later = odd[np.searchsorted(odd, k, side="right") :]
            if not len(later) and not final and n - k < JOIN_LINES:
                return records, k  # the record may go on in the next block
            if len(later) and later[0] - k < JOIN_LINES:
                end = int(later[0])
                joined = "".join(line(j) for j in range(k, end + 1))
                fields = _strict_record(joined)
                if fields is not None:
                    records.append(_Record(k, end + 1 - k, fields, "", joined.rstrip("\r\n")))
                    after = end + 1
                    continue
        records.append(_loose_record(k, line(k)))
        after = k + 1
    return records, n


def _strict_record(text: str) -> list[str] | None:
    """The one well-formed CSV record ``text`` holds, or None."""
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error:
        return None
    return rows[0] if len(rows) == 1 else None


def _loose_record(k: int, line: str) -> _Record:
    """One line read by the csv module's lenient rules."""
    text = line.rstrip("\r\n")
    try:
        rows = list(csv.reader([text]))
        fields: list[str] | None = rows[0] if rows else [""]
        error = ""
    except csv.Error as exc:
        fields, error = None, str(exc)
    return _Record(k, 1, fields, error, text)


def _read_slowly(
    text: str,
    data: bytes,
    first_line: int,
    final: bool,
    layouts: Mapping[str, tuple[str, ...]],
    header: HeaderCheck | None,
    undecoded: bool,
) -> tuple[CsvBlock | None, int, int]:
    """A block every line of which goes to Python's csv (bytes that are not
    UTF-8, or bare carriage returns, which end a line as in csv's reading)."""
    physical = list(io.StringIO(text, newline=""))
    quotes = np.array([p.count('"') for p in physical], dtype=np.int64)
    records, used = _python_records(len(physical), quotes, list(range(len(physical))), physical.__getitem__, final)
    if used == 0:
        return None, 0, 0
    consumed = len(data)
    if used < len(physical):
        consumed = sum(len(p.encode("utf-8", "surrogateescape")) for p in physical[:used])
    kept = [r for r in records if r.fields is None or r.text.strip(_BLANK)]
    if undecoded:
        kept = [_Record(r.line, r.size, None, "", r.text) if _UNDECODED.search(r.text) else r for r in kept]
    no_rows = np.zeros(0, dtype=np.int64)
    no_lines = strings([])
    if _header_row(no_rows, kept, no_lines, first_line, header) is not None:
        kept = kept[1:]
    skipped = used - sum(r.size for r in kept)
    block = _assemble(no_rows, no_lines, kept, layouts)
    return _finish(block, strings(list(layouts)), no_rows, kept, first_line, skipped, lambda k: ""), consumed, used


def _header_row(
    rows: npt.NDArray[np.int64], records: list[_Record], lines: Any, first_line: int, header: HeaderCheck | None
) -> str | None:
    """Which first record is a header: "fast" (the first simple row),
    "python" (the first record read by csv), or None."""
    if header is None:
        return None
    fast = int(rows[0]) if len(rows) else None
    slow = records[0] if records else None
    if fast is not None and (slow is None or fast < slow.line):
        text = lines[fast].as_py()
        return "fast" if header(text.split(","), first_line + fast, text) else None
    if slow is not None:
        fields = slow.fields if slow.fields is not None else [""]
        return "python" if header(fields, first_line + slow.line, slow.text) else None
    return None


@dataclass(frozen=True)
class _Parts:
    types: Any
    counts: npt.NDArray[np.int64]
    values: dict[str, Any]


def _assemble(
    rows: npt.NDArray[np.int64], lines: Any, records: list[_Record], layouts: Mapping[str, tuple[str, ...]]
) -> _Parts:
    """Types, field counts and attribute fields of the simple rows (split by
    pyarrow) followed by the records read by csv, in that order."""
    names = strings(list(layouts))
    split = compute.split_pattern(lines, ",")
    flat = split.values
    offsets = to_numpy(split.offsets, 0).astype(np.int64)
    counts = np.diff(offsets)
    types = compute.take(flat, from_numpy(offsets[:-1])) if len(rows) else strings([])
    codes = to_numpy(compute.index_in(compute.utf8_trim(types, characters=_BLANK), value_set=names), -1)
    attributes = list(dict.fromkeys(a for attrs in layouts.values() for a in attrs))
    where = {a: np.full(len(rows), -1, dtype=np.int64) for a in attributes}
    for code, attrs in enumerate(layouts.values()):
        chosen = np.flatnonzero((codes == code) & (counts == 1 + len(attrs)))
        for j, attr in enumerate(attrs):
            where[attr][chosen] = offsets[chosen] + 1 + j
    fields = {a: compute.take(flat, from_numpy(w, mask=w < 0)) for a, w in where.items()}

    slow_types: list[str | None] = []
    slow_counts: list[int] = []
    slow_values: dict[str, list[str | None]] = {a: [None] * len(records) for a in attributes}
    for m, r in enumerate(records):
        if r.fields is None:
            slow_types.append(None)
            slow_counts.append(-1)
            continue
        slow_types.append(r.fields[0])
        slow_counts.append(len(r.fields))
        attrs = layouts.get(r.fields[0].strip(_BLANK), ())
        if len(r.fields) == 1 + len(attrs):
            for j, attr in enumerate(attrs):
                slow_values[attr][m] = r.fields[1 + j]
    return _Parts(
        pa.concat_arrays([types, strings(slow_types)]),
        np.concatenate([counts, np.array(slow_counts, dtype=np.int64)]),
        {a: pa.concat_arrays([fields[a], strings(slow_values[a])]) for a in attributes},
    )


def _finish(
    parts: _Parts,
    names: Any,
    rows: npt.NDArray[np.int64],
    records: list[_Record],
    first_line: int,
    skipped: int,
    fast_text: Callable[[int], str],
) -> CsvBlock:
    """The block in line order, empty fields as nulls."""
    starts = np.concatenate([rows, np.array([r.line for r in records], dtype=np.int64)]).astype(np.int64)
    order = np.argsort(starts, kind="stable")
    take = from_numpy(order)
    types = compute.utf8_trim(compute.take(parts.types, take), characters=_BLANK)
    fields = {attr: _empty_as_null(compute.take(arr, take)) for attr, arr in parts.values.items()}
    counts = parts.counts[order]
    types = compute.if_else(compute.equal(types, EMPTY_STRING), NULL_STRING, types)
    codes = to_numpy(compute.index_in(types, value_set=names), -1)
    malformed = {}
    split = len(rows)
    for i in np.flatnonzero(counts < 0).tolist():
        r = records[int(order[i]) - split]
        malformed[i] = f"a CSV parse error ({r.error})" if r.error else "bytes that are not UTF-8"

    def text(i: int) -> str:
        k = int(order[i])
        return fast_text(int(rows[k])) if k < split else records[k - split].text

    return CsvBlock(starts[order] + first_line, types, codes, counts, fields, malformed, skipped, text)
