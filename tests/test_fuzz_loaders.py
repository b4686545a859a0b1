"""Fuzzing the event loaders: valid CORE-style CSV and JSON Lines for a small
schema, corrupted line by line (bad types, missing and extra fields, stray
quotes, NUL bytes, invalid UTF-8, byte order marks, huge lines, timestamps
going back) and as a whole (CRLF line ends, blank lines, a header, a BOM),
go through every text loader, strict and not, whole and in small blocks.

What must hold, whatever the corruption:
- non-strict loading raises nothing but a documented whole-file error (a
  CSV header that does not fit CORE's layout);
- every line is accounted for: rows read (accepted + dead-lettered) plus
  lines skipped (blank lines, the header) are the input's lines, fewer only
  where a quoted field joined lines into one record;
- every dead letter has a known kind, a non-empty reason and a line inside
  the input;
- a line left intact is accepted with the values this file's own simple
  reading of it gives (the generator's values);
- loading block by block gives what loading whole gives;
- strict loading raises an :class:`EventsError` naming the first bad line,
  or returns what the non-strict load accepted when no row was bad.
"""

from __future__ import annotations

import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.errors import EventsError
from sharp_cer.events.batch import REASON_KINDS, EventBatch, LoadReport
from sharp_cer.events.loaders import collect, iter_csv, iter_jsonl, load_csv, load_jsonl
from sharp_cer.language import Schema

SCHEMA = Schema.parse(
    "CREATE STREAM S { EVENT A { id:int, price:double, t:primary_time }, "
    "EVENT B { name:string, ok:bool, t:primary_time }, EVENT C { id:int, ok:bool } }"
)
LAYOUT = {e.name: dict(e.attributes) for e in SCHEMA.event_types(None)}
#: CSV field limit of Python's csv module is 131072: a huge line passes it
HUGE = 140_000


def fuzz(examples: int) -> settings:
    """``examples`` cases per run, no deadline (a shared machine's pauses are not the loader's)."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )


# ---------------------------------------------------------------- valid input


@dataclass(frozen=True)
class Row:
    """One generated event: its type and attribute values as Python values."""

    type: str
    values: dict[str, Any]


NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_ ", min_size=1, max_size=8).map(lambda s: "s" + s)


@st.composite
def rows(draw: st.DrawFn) -> list[Row]:
    """Events with strictly increasing primary times (C has none)."""
    out = []
    t = draw(st.integers(0, 10**12))
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(sorted(LAYOUT)))
        values: dict[str, Any] = {}
        for attr, typ in LAYOUT[kind].items():
            if typ == "int":
                values[attr] = draw(st.integers(-(2**63), 2**63 - 1))
            elif typ == "double":
                values[attr] = draw(st.floats(allow_nan=False, allow_infinity=False, width=64))
            elif typ == "string":
                values[attr] = draw(NAMES).strip() or "s"
            elif typ == "bool":
                values[attr] = draw(st.booleans())
            else:
                t += draw(st.integers(1, 10**9))
                values[attr] = t
        out.append(Row(kind, values))
    return out


def csv_field(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def csv_line(row: Row) -> bytes:
    return ",".join([row.type, *(csv_field(v) for v in row.values.values())]).encode()


def jsonl_line(row: Row) -> bytes:
    return json.dumps({"type": row.type, **row.values}).encode()


# ---------------------------------------------------------------- corruption

MUTATIONS = ("bad_type", "missing", "extra", "quote", "nul", "utf8", "bom", "huge", "back", "unknown_type")
#: bytes some mutations insert at a random place of the line
INSERTS = {
    "quote": [b'"'],
    "nul": [b"\x00"],
    "utf8": [b"\xff", b"\xc3", b"\xed\xa0\x80"],  # a bad start byte, a cut sequence, a surrogate
    "bom": [b"\xef\xbb\xbf"],
    "huge": [b"9" * HUGE],
}
JUNK = ["abc", "1.5.2", "99999999999999999999", "", "tru", "--1", "1e", "NA"]


def encode(row: Row, fmt: str) -> bytes:
    return csv_line(row) if fmt == "csv" else jsonl_line(row)


def mutate(draw: st.DrawFn, row: Row, fmt: str, latest: int | None) -> bytes:
    """The row's line, corrupted by one mutation (which may leave it valid:
    a corrupted line is never asserted accepted, nor dead)."""
    how = draw(st.sampled_from(MUTATIONS))
    if how == "back" and "t" in row.values and latest is not None:
        return encode(Row(row.type, {**row.values, "t": latest - draw(st.integers(0, 10**6))}), fmt)
    if how in INSERTS:
        line = encode(row, fmt)
        at = draw(st.integers(0, len(line)))
        return line[:at] + draw(st.sampled_from(INSERTS[how])) + line[at:]
    if how == "unknown_type":
        return encode(Row(draw(st.sampled_from(["Z", "a", "", "AB", "type "])), row.values), fmt)
    attr = draw(st.sampled_from(list(row.values)))
    if how == "missing":
        if fmt == "csv":
            return csv_line(row).rsplit(b",", 1)[0]
        return jsonl_line(Row(row.type, {a: v for a, v in row.values.items() if a != attr}))
    if how == "extra":
        if fmt == "csv":
            return csv_line(row) + b"," + draw(st.sampled_from([b"", b"1", b"x"]))
        # other keys are ignored, even another type's attribute holding junk
        key = draw(st.sampled_from(["zz", "price", "name", "id", "ok", "t"]))
        return jsonl_line(Row(row.type, {**row.values, key: "junk"}))
    # a bad type ("back" too, on an event without a time or before any time)
    junk: Any = draw(st.sampled_from(JUNK))
    if fmt == "csv":
        fields = [junk if a == attr else csv_field(v) for a, v in row.values.items()]
        return ",".join([row.type, *fields]).encode()
    if LAYOUT[row.type][attr] == "string":
        junk = draw(st.sampled_from([5, 1.5, True, None, [1], {}]))
    return jsonl_line(Row(row.type, {**row.values, attr: junk}))


@dataclass(frozen=True)
class Case:
    """A generated input: its bytes, its line count, the generator's rows of
    the lines left intact (line number -> row), and the corrupted lines."""

    data: bytes
    lines: int
    intact: dict[int, Row]
    quoted: bool  # some line holds an odd number of quotes: lines may join
    corrupted: frozenset[int]


@st.composite
def cases(draw: st.DrawFn, fmt: str) -> Case:
    events = draw(rows())
    crlf = draw(st.booleans())
    out: list[bytes] = []
    intact: dict[int, Row] = {}
    corrupted: set[int] = set()
    if fmt == "csv" and draw(st.booleans()):
        out.append(draw(st.sampled_from([b"type,id,price,t", b"type", b"TYPE,name,ok,t"])))
    latest: int | None = None
    for row in events:
        while draw(st.integers(0, 9)) == 0:
            out.append(draw(st.sampled_from([b"", b"  ", b"\t"])))
        line = encode(row, fmt)
        if draw(st.integers(0, 3)) == 0:
            line = mutate(draw, row, fmt, latest)
            corrupted.add(len(out) + 1)
        else:
            intact[len(out) + 1] = row
        out.append(line)
        latest = row.values.get("t", latest)
    end = b"\r\n" if crlf else b"\n"
    data = end.join(out) + (end if draw(st.booleans()) else b"")
    if draw(st.integers(0, 4)) == 0:
        data = b"\xef\xbb\xbf" + data
    quoted = any(line.count(b'"') % 2 for line in out) if fmt == "csv" else False
    return Case(data, len(out), intact, quoted, frozenset(corrupted))


# ---------------------------------------------------------------- checks

_FOLDER = Path(tempfile.mkdtemp(prefix="sharp-cer-fuzz-"))


def as_file(data: bytes) -> Path:
    path = _FOLDER / "events"
    path.write_bytes(data)
    return path


def rows_of(batch: EventBatch) -> list[dict[str, Any]]:
    return [batch.row(i) for i in range(len(batch))]


def documented(exc: EventsError) -> bool:
    """The whole-file errors the loaders document: a CSV header that is not CORE's layout."""
    return "header" in str(exc)


def check_report(case: Case, batch: EventBatch, report: LoadReport) -> None:
    assert report.accepted == len(batch)
    assert report.accepted + len(report.dead_letters) == report.read
    if case.quoted:
        assert report.read + report.skipped <= case.lines
    else:
        assert report.read + report.skipped == case.lines, report.summary()
    for letter in report.dead_letters:
        assert letter.kind in REASON_KINDS
        assert letter.reason.strip()
        assert 1 <= letter.line <= case.lines
        assert letter.line not in case.intact or case.quoted, letter


def check_values(case: Case, batch: EventBatch, report: LoadReport) -> None:
    """Intact lines are accepted with their values: by position when every
    line is a row of its own, else in order among the accepted rows."""
    got = rows_of(batch)
    if not case.quoted:
        dead_lines = {d.line for d in report.dead_letters}
        assert not dead_lines & set(case.intact)
    accepted = iter((r["type"], r["attributes"]) for r in got)
    for line, row in sorted(case.intact.items()):
        if case.quoted and any(c < line for c in case.corrupted):
            continue  # a stray quote above may have joined this line into its record
        want = (row.type, row.values)
        assert any(item == want for item in accepted), f"line {line} {want} not accepted in order: {got}"


def check_strict(load: Any, case: Case, batch: EventBatch, report: LoadReport) -> None:
    try:
        strict_batch, _ = load(as_file(case.data), SCHEMA, strict=True)
    except EventsError as exc:
        if documented(exc):
            return
        assert report.dead_letters, f"strict mode failed on an input with no bad row: {exc}"
        first = report.dead_letters[0]
        located = re.search(r", line (\d+)\b", str(exc).splitlines()[0])
        assert located is not None and int(located.group(1)) == first.line, (str(exc), first)
        return
    assert not report.dead_letters
    assert rows_of(strict_batch) == rows_of(batch)


def run(load: Any, iterate: Any, case: Case, block_bytes: int) -> None:
    path = as_file(case.data)
    try:
        batch, report = load(path, SCHEMA)
    except EventsError as exc:
        assert documented(exc), exc
        with pytest.raises(EventsError):
            collect(iterate(path, SCHEMA, block_bytes=block_bytes), str(path))
        return
    check_report(case, batch, report)
    check_values(case, batch, report)
    blocks, block_report = collect(iterate(path, SCHEMA, block_bytes=block_bytes), str(path))
    assert rows_of(blocks) == rows_of(batch)
    assert block_report.dead_letters == report.dead_letters
    assert (block_report.read, block_report.skipped) == (report.read, report.skipped)
    check_strict(load, case, batch, report)


# an "Exception ignored" that pyarrow prints to stderr is a failure too
QUIET = pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")


@QUIET
@fuzz(300)
@given(cases("csv"), st.sampled_from([16, 64, 300, 1 << 20]))
def test_corrupted_csv(case: Case, block_bytes: int) -> None:
    run(load_csv, iter_csv, case, block_bytes)


@QUIET
@fuzz(300)
@given(cases("jsonl"), st.sampled_from([16, 64, 300, 1 << 20]))
def test_corrupted_jsonl(case: Case, block_bytes: int) -> None:
    run(load_jsonl, iter_jsonl, case, block_bytes)


# ---------------------------------------------------------------- what the fuzzing found

SMALL = Schema.parse("CREATE STREAM S { EVENT A { id:int, t:primary_time } }")


@pytest.mark.parametrize("block_bytes", [4, 16, 1 << 20])
def test_jsonl_byte_order_mark_opening_the_file_is_no_part_of_line_1(block_bytes: int) -> None:
    """Found by the fuzzing: line 1 read line by line (a bad value sends it
    there) was dead-lettered as malformed JSON, while load_csv strips the mark."""
    path = as_file(b'\xef\xbb\xbf{"type": "A", "id": "x", "t": 1}\n{"type": "A", "id": 2, "t": 2}\n')
    batch, report = collect(iter_jsonl(path, SMALL, block_bytes=block_bytes), "t")
    assert [batch.row(i)["attributes"]["id"] for i in range(len(batch))] == [2]
    assert [(d.line, d.kind, d.column) for d in report.dead_letters] == [(1, "mistyped_attribute", "id")]


@pytest.mark.parametrize("block_bytes", [4, 32, 1 << 20])
def test_jsonl_byte_order_mark_inside_is_malformed_whatever_the_blocks(block_bytes: int) -> None:
    """Found by the fuzzing: pyarrow skipped a mark that opened a block, so
    the same corrupted line was accepted or not by where a block began."""
    path = as_file(b'{"type": "A", "id": 1, "t": 1}\n\xef\xbb\xbf{"type": "A", "id": 2, "t": 2}\n')
    _, report = collect(iter_jsonl(path, SMALL, block_bytes=block_bytes), "t")
    assert [(d.line, d.kind) for d in report.dead_letters] == [(2, "malformed_json")]


def test_jsonl_key_that_is_not_utf8_is_a_dead_letter() -> None:
    """Found by the fuzzing: pyarrow read the key, and its name raised
    UnicodeDecodeError out of load_jsonl."""
    path = as_file(b'{"type": "A", "id": 0, "t": 1}\n{"type": "A", "\xffid": 0, "t": 5}\n')
    batch, report = load_jsonl(path, SMALL)
    assert len(batch) == 1
    assert [(d.line, d.kind) for d in report.dead_letters] == [(2, "malformed_json")]
    assert "not UTF-8" in report.dead_letters[0].reason


@pytest.mark.parametrize("block_bytes", [4, 16, 1 << 20])
def test_csv_byte_order_mark_inside_is_unknown_type_whatever_the_blocks(block_bytes: int) -> None:
    """Found by the fuzzing: pyarrow's CSV reader skipped a mark that opened
    a block, so the same corrupted line was accepted or not by block size."""
    path = as_file(b"\xef\xbb\xbfA,1,1\nA,2,2\n\xef\xbb\xbfA,3,3\nA,4,4\n")
    batch, report = collect(iter_csv(path, SMALL, block_bytes=block_bytes), "t")
    assert [batch.row(i)["attributes"]["id"] for i in range(len(batch))] == [1, 2, 4]
    assert [(d.line, d.kind) for d in report.dead_letters] == [(3, "unknown_type")]


@QUIET
def test_csv_bytes_that_are_not_utf8_print_nothing() -> None:
    """Found by the fuzzing: a line that was not UTF-8 and had another field
    count made pyarrow print "Exception ignored ... UnicodeDecodeError"."""
    batch, report = load_csv(as_file(b"A,1,2\nA,\xff3,4,5\nA,5,6\n"), SMALL)
    assert len(batch) == 2
    assert [(d.line, d.kind) for d in report.dead_letters] == [(2, "malformed_row")]
