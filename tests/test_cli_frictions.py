"""The command line's small promises (issues 40 and 33): nothing ignored
silently, nothing that crashes on an edge of a flag's range."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sharp_cer.cli import main
from sharp_cer.engine.histogram import LogHistogram

SCHEMA = "CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { x:int, t:primary_time } }"


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.core").write_text(SCHEMA)
    (tmp_path / "q.ceql").write_text("SELECT * WHERE A ; B WITHIN 3 EVENTS")
    (tmp_path / "e.csv").write_text("A,1,1\nB,2,2\nA,3,3\nB,4,4\n")
    return tmp_path


MATCH = ["match", "--schema", "s.core", "--query", "q.ceql"]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exit:
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


# ---------------------------------------------------------------- 40.5: the latency path's edges


@pytest.mark.parametrize("content", ["", "type,x,t\n", "A,x,1\n"], ids=["empty", "header-only", "bad-rows-only"])
def test_a_latency_bound_over_a_file_without_rows_is_an_empty_run(
    files: Path, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    (files / "none.csv").write_text(content)
    code, out, err = _run([*MATCH, "--events", "none.csv", "--latency-bound", "10ms", "--rate", "100"], capsys)
    assert code == 0 and out == ""
    assert "matches: q=0" in err
    assert "1 dead-lettered" in err if content.startswith("A,x") else "0 dead-lettered" in err


@pytest.mark.parametrize("capacity", ["1e-300", "1e-20", "0.0009"])
def test_a_capacity_that_would_overflow_latencies_is_refused_with_the_range(
    files: Path, capsys: pytest.CaptureFixture[str], capacity: str
) -> None:
    argv = [*MATCH, "--events", "e.csv", "--latency-bound", "10ms", "--rate", "100", "--capacity", capacity]
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    assert f"--capacity must be at least 0.001 cost units per second, not {float(capacity):g}" in err
    assert "[0.001, inf)" in err


def test_the_smallest_capacity_runs_and_its_latencies_are_measured(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [*MATCH, "--events", "e.csv", "--latency-bound", "10ms", "--rate", "100", "--capacity", "0.001"]
    code, _, err = _run(argv, capsys)
    assert code == 0 and "over bound" in err


def test_an_infinite_latency_is_counted_in_the_last_bin() -> None:
    h = LogHistogram(error=0.01)
    h.add(np.array([1.0, np.inf]))
    index, counts = h.bins()
    assert counts.tolist() == [1, 1] and index[-1] == len(h._counts) - 1 and h.max == np.inf


# ---------------------------------------------------------------- 40.6: one query file twice


@pytest.mark.parametrize("second", ["q.ceql", "./q.ceql", "DIR/q.ceql"])
@pytest.mark.parametrize("command", ["match", "explain"])
def test_a_query_name_given_twice_is_refused_by_the_readme_s_rule(
    files: Path, capsys: pytest.CaptureFixture[str], second: str, command: str
) -> None:
    if second.startswith("DIR"):
        (files / "DIR").mkdir()
        (files / "DIR" / "q.ceql").write_text("SELECT * WHERE B")
    if command == "match":
        argv = [*MATCH, "--query", second, "--events", "e.csv"]
    else:
        argv = ["explain", "--schema", "s.core", "q.ceql", second]
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    first = err.splitlines()[0]
    assert first == f"{second}: error: two query files named 'q'"
    assert ("twice" in err) == (not second.startswith("DIR"))


# ---------------------------------------------------------------- 40.8: output paths and names checked first


@pytest.mark.parametrize(
    ("stats", "says"),
    [
        ("nowhere/s.json", "error: nowhere/s.json: --stats's folder nowhere does not exist"),
        ("a_file/s.json", "error: a_file/s.json: --stats is under a file"),
        ("/proc/s.json", "error: /proc/s.json: --stats cannot be written"),
        ("", "error: --stats is empty"),
    ],
)
def test_stats_that_cannot_be_written_are_refused_before_the_run(
    files: Path, capsys: pytest.CaptureFixture[str], stats: str, says: str
) -> None:
    (files / "a_file").write_text("")
    argv = [*MATCH, "--events", "e.csv", "--latency-bound", "10ms", "--rate", "100", "--stats", stats]
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""  # refused before any match was written
    assert err.splitlines()[0] == says or err.splitlines()[0].startswith(says), err
    assert "folder" not in err.splitlines()[0] or "does not exist" in err or "under a file" in err


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [("--png", "somedir", "somedir: error: --png names a folder, not a file"), ("--dot", "", "error: --dot is empty")],
)
def test_explain_refuses_a_picture_path_it_cannot_write(
    files: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str, says: str
) -> None:
    (files / "somedir").mkdir()
    code, out, err = _run(["explain", "--schema", "s.core", "q.ceql", flag, value], capsys)
    assert code == 2 and out == ""
    assert err.splitlines()[0] == says
    assert not (files / "somedir.png").exists()


def test_a_sketch_attribute_no_event_type_has_is_refused(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [*MATCH, "--events", "e.csv", "--latency-bound", "10ms", "--rate", "100", "--sketch-attribute", "price"]
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    assert err.splitlines()[:2] == [
        "error: --sketch-attribute 'price' is no event type's attribute",
        "  expected: one of t, x",
    ]
    code, _, _ = _run([*argv[:-1], "x"], capsys)
    assert code == 0


# ---------------------------------------------------------------- 33.13: outputs without a suffix, flags a run ignores


@pytest.mark.parametrize("format", [None, "jsonl", "csv", "parquet"])
def test_an_output_without_a_known_suffix_takes_format(
    files: Path, capsys: pytest.CaptureFixture[str], format: str | None
) -> None:
    code, expected, _ = _run([*MATCH, "--events", "e.csv"], capsys)
    assert code == 0
    code, out, err = _run(
        [*MATCH, "--events", "e.csv", "--out", "/dev/null"] + (["--format", format] if format else []), capsys
    )
    assert code == 0 and out == "" and "matches: q=3" in err
    # the same, to a file without a suffix: written in the format asked for
    code, _, _ = _run([*MATCH, "--events", "e.csv", "--out", "m"] + (["--format", format] if format else []), capsys)
    assert code == 0
    if format in (None, "jsonl"):
        assert (files / "m").read_text() == expected
    elif format == "csv":
        import csv

        rows = list(csv.DictReader((files / "m").open()))
        assert [(int(r["start"]), int(r["end"])) for r in rows] == [
            (json.loads(line)["start"], json.loads(line)["end"]) for line in expected.splitlines()
        ]
    else:
        import pyarrow.parquet as pq

        table = pq.read_table(files / "m")
        assert table.column("end").to_pylist() == [json.loads(line)["end"] for line in expected.splitlines()]


@pytest.mark.parametrize(
    ("extra", "note"),
    [
        (["--count", "--limit", "1"], "note: --count counts every match: --limit 1 is ignored"),
        (["--shedder", "random-input"], "note: --shedder random-input sheds to a latency bound, and none is given"),
        (["--format", "csv"], "note: --format csv is the format of --out: stdout takes JSON Lines"),
    ],
)
def test_a_flag_the_run_ignores_gets_a_note_line(
    files: Path, capsys: pytest.CaptureFixture[str], extra: list[str], note: str
) -> None:
    code, out, err = _run([*MATCH, "--events", "e.csv", *extra], capsys)
    assert code == 0
    assert next(line for line in err.splitlines() if line.startswith("note:")).startswith(note)
    if "--count" in extra:
        assert json.loads(out) == {"query": "q", "count": 3}  # every match counted


def test_no_note_when_every_flag_is_used(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run([*MATCH, "--events", "e.csv", "--shedder", "random-input", "--latency-bound", "500"], capsys)
    assert code == 0 and "note:" not in err


# ---------------------------------------------------------------- 40.2: a poison line in a stream's file


def _spark_text(data: bytes) -> object:
    """A string column as Spark's text source passes it: the file's bytes as they are, UTF-8 or not."""
    import pyarrow as pa

    return pa.array([data], pa.binary()).view(pa.string())


@pytest.mark.parametrize(
    ("fmt", "data", "kind"),
    [
        ("csv", b"A,1,10\nA,2\xff,11\nB,3,12\n", "malformed_row"),
        ("jsonl", b'{"type": "A", "x": 1, "t": 10}\n{"type": "A", "x": "\xff", "t": 11}\n'
                  b'{"type": "B", "x": 3, "t": 12}\n', "malformed_json"),
    ],
)  # fmt: skip
def test_a_line_that_is_not_utf8_is_one_dead_letter_of_stage_zero(fmt: str, data: bytes, kind: str) -> None:
    import pyarrow as pa

    from sharp_cer.language import Schema
    from sharp_cer.spark.columns import ARRIVED, CONTROL, FILE, LETTER_COLUMNS, LINE, LOCAL, ROW_KIND
    from sharp_cer.spark.prepare import LoadSpec
    from sharp_cer.spark.stream_input import parse_files

    files = pa.record_batch({"value": _spark_text(data), FILE: [f"f.{fmt}"], ARRIVED: [5], CONTROL: [False]})
    rows = pa.Table.from_batches(parse_files(LoadSpec(Schema.parse(SCHEMA), fmt, 0), iter([files]))).to_pylist()
    kinds = [(r[ROW_KIND], r[LOCAL]) for r in rows]
    assert kinds == [("event", 0), ("event", 2), ("dead", 1), ("summary", 3)]
    dead = rows[2]
    assert (dead[LINE], dead[LETTER_COLUMNS[0]], dead[FILE]) == (2, kind, f"f.{fmt}")
    # the raw text shows where the byte that is not UTF-8 was, as the in-process loader's letter does
    assert dead[LETTER_COLUMNS[-1]] == ("A,2\\xff,11" if fmt == "csv" else '{"type": "A", "x": "\ufffd", "t": 11}')


# ---------------------------------------------------------------- 33.12: dead letters located, to a file


@pytest.mark.parametrize("engine", ["core", "reference"])
def test_match_writes_every_dead_letter_located_to_dead_letters(
    files: Path, capsys: pytest.CaptureFixture[str], engine: str
) -> None:
    (files / "bad.csv").write_bytes(b"A,1,1\nA,oops,2\nB,2,3\nC,1,4\nA,2\xff,5\nB,3,6\n")
    argv = [*MATCH, "--events", "bad.csv", "--engine", engine, "--dead-letters", "letters.jsonl"]
    code, out, err = _run(argv, capsys)
    assert code == 0 and [json.loads(line)["events"] for line in out.splitlines()] == [[0, 2]]
    letters = [json.loads(line) for line in (files / "letters.jsonl").read_text().splitlines()]
    assert [(d["file"], d["line"], d["column"], d["kind"], d["raw"]) for d in letters] == [
        ("bad.csv", 2, "x", "mistyped_attribute", "A,oops,2"),
        ("bad.csv", 4, "type", "unknown_type", "C,1,4"),
        ("bad.csv", 5, None, "malformed_row", "A,2\\xff,5"),
    ]
    assert all(set(d) == {"file", "line", "column", "kind", "reason", "raw"} and d["reason"] for d in letters)
    assert "3 dead-lettered" in err and "dead letters -> letters.jsonl (3)" in err


@pytest.mark.parametrize(("path", "says"), [("e.csv", "--dead-letters is the input e.csv"), ("", "is empty")])
def test_dead_letters_onto_an_input_or_nowhere_is_refused(
    files: Path, capsys: pytest.CaptureFixture[str], path: str, says: str
) -> None:
    before = (files / "e.csv").read_text()
    code, out, err = _run([*MATCH, "--events", "e.csv", "--dead-letters", path], capsys)
    assert code == 2 and out == "" and says in err.splitlines()[0]
    assert (files / "e.csv").read_text() == before
