"""The Spark commands end cleanly however they are stopped, and no file of
a stream's source can stop it (issues 40 and 41), on a real local Spark.

A signal (SIGINT, SIGTERM; to the process, or to its whole process group as
``timeout`` and systemd send it) at a moment of a command's life ends it
with one line, no traceback and its exit code (``sharp_cer.cli.signals``).
A poison line is dead-lettered with its file and line; a file replaced
under the same name and a folder inside the source are reported as skipped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sharp_cer.api import Detector
from sharp_cer.cli import main
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import parse_workload

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WORKLOAD = """
[workload]
name = "stops"
schema = "CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { x:int, t:primary_time } }"

[[query]]
name = "ab"
text = "SELECT * WHERE A ; B WITHIN 4 EVENTS"
"""


def _lines(first: int, n: int) -> list[str]:
    """``n`` events from time ``first``: A and B in turn."""
    return [f"{'AB'[k % 2]},{k},{first + k}" for k in range(n)]


def _write(path: Path, lines: list[str], mtime: float | None = None) -> None:
    path.write_bytes(("\n".join(lines) + "\n").encode())
    if mtime is not None:
        os.utime(path, (mtime, mtime))


@pytest.fixture(scope="module")
def spark() -> Any:
    from sharp_cer.spark.session import spark_session
    from sharp_cer.spark.stream import stream_conf

    return spark_session("local[2]", **{**stream_conf(), "spark.sql.shuffle.partitions": "2"})


def test_no_file_stops_a_stream_and_every_skipped_one_is_reported(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file with a line that is not UTF-8 (40.2), a folder inside the
    source and a file replaced under its name after it was read (40.3)."""
    from sharp_cer.spark.stream import StreamSettings, run_stream

    workload = parse_workload(WORKLOAD)
    source, checkpoint, out = tmp_path / "source", tmp_path / "ck", tmp_path / "out"
    source.mkdir()
    good = _lines(0, 8)
    _write(source / "a.csv", good, 1_700_000_000)
    poison = _lines(8, 6)
    (source / "b.csv").write_bytes(
        ("\n".join(poison[:3]) + "\n").encode() + b"A,9\xff,11\n" + ("\n".join(poison[3:]) + "\n").encode()
    )
    os.utime(source / "b.csv", (1_700_000_001, 1_700_000_001))
    (source / "sub").mkdir()
    _write(source / "sub" / "c.csv", _lines(20, 4))
    summary = run_stream(workload, str(source), str(checkpoint), str(out), StreamSettings(), spark)
    # expected: the in-process engine over the same rows, the poison line among them (a dead letter, position kept)
    batch, report = load_csv("\n".join([*good, *poison[:3], "A,9x,11", *poison[3:]]) + "\n", workload.schema)
    assert len(report.dead_letters) == 1
    detector = Detector.from_workload(workload)
    detector.feed(batch)
    assert {q.name: q.matches for q in summary.summary.queries} == detector.counts
    assert summary.summary.dead_letters == {"malformed_row": 1}
    assert [(Path(f).name, r.split(":")[0]) for f, r in summary.skipped] == [("sub", "a folder")]

    letters = spark.read.parquet(str(out)).where("kind = 'dead_letter'").collect()
    assert [(Path(r["file"]).name, r["line"], r["name"], r["raw"]) for r in letters] == [
        ("b.csv", 4, "malformed_row", "A,9\\xff,11")
    ]
    # a.csv replaced under its name: never read again, and said so (the command's summary and summary.json);
    # --dead-letters writes the committed dead letters, located
    _write(source / "a.csv", _lines(100, 4), 1_700_000_100)
    (tmp_path / "w.toml").write_text(WORKLOAD)
    argv = ["stream", str(tmp_path / "w.toml"), "--source", str(source), "--checkpoint", str(checkpoint)]
    argv += ["--out", str(out), "--dead-letters", str(tmp_path / "letters.jsonl")]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "skipped, never read: 2 in the source folder" in printed
    assert f"    {source / 'a.csv'}: replaced after it was read" in printed
    again = json.loads((out / "summary.json").read_text())
    assert [Path(s["file"]).name for s in again["skipped_files"]] == ["a.csv", "sub"]
    assert sum(q["matches"] for q in again["queries"].values()) == sum(detector.counts.values())  # nothing new read
    written = [json.loads(line) for line in (tmp_path / "letters.jsonl").read_text().splitlines()]
    assert [(Path(d["file"]).name, d["line"], d["kind"], d["raw"]) for d in written] == [
        ("b.csv", 4, "malformed_row", "A,9\\xff,11")
    ]
    assert f"dead letters -> {tmp_path / 'letters.jsonl'}" in printed


def test_a_stream_stopped_before_its_first_micro_batch_has_an_empty_summary(spark: Any, tmp_path: Path) -> None:
    from sharp_cer.spark.stream import StreamSettings, stream_summary

    workload = parse_workload(WORKLOAD)
    (tmp_path / "out").mkdir()
    summary = stream_summary(spark, str(tmp_path / "out"), workload, StreamSettings(trigger=1.0))
    assert summary.summary.rows == 0 and [q.matches for q in summary.summary.queries] == [0]
    assert summary.end_to_end["ab"]["matches"] == 0


def test_run_writes_its_dead_letters_located_to_dead_letters(
    spark: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "w.toml").write_text(WORKLOAD)
    events = tmp_path / "e.csv"
    events.write_bytes(b"A,1,1\nB,x,2\nA,3,3\nA,4\xff,4\nB,5,5\n")
    argv = ["run", str(tmp_path / "w.toml"), "--events", str(events), "--out", str(tmp_path / "out")]
    assert main([*argv, "--format", "jsonl", "--dead-letters", str(tmp_path / "letters.jsonl")]) == 0
    assert f"dead letters -> {tmp_path / 'letters.jsonl'}" in capsys.readouterr().out
    written = [json.loads(line) for line in (tmp_path / "letters.jsonl").read_text().splitlines()]
    # the in-process loader's letters of the same file, located the same way
    _, report = load_csv(str(events), parse_workload(WORKLOAD).schema)
    assert [(d["file"], d["line"], d["column"], d["kind"], d["raw"]) for d in written] == [
        (str(events), d.line, d.column, d.kind, "A,4\\xff,4" if d.kind == "malformed_row" else d.raw)
        for d in report.dead_letters
    ]
    assert [d["kind"] for d in written] == ["mistyped_attribute", "malformed_row"]


# ---------------------------------------------------------------- signals, to a command in its own process


class Command:
    """``sharp-cer ARGV`` in its own process group (the test's stand-in for a
    terminal or ``timeout``), its stderr read line by line as it comes."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        code = "import sys; from sharp_cer.cli import main; sys.exit(main(sys.argv[1:]))"
        self.process = subprocess.Popen(
            [sys.executable, "-c", code, *argv],
            cwd=cwd,
            start_new_session=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.err: list[str] = []
        self.out = ""
        assert self.process.stderr is not None
        self._reader = threading.Thread(target=lambda: self.err.extend(self.process.stderr), daemon=True)  # type: ignore[arg-type]
        self._reader.start()

    def wait_for(self, ready: Any, limit: float = 600) -> None:
        deadline = time.monotonic() + limit
        while not ready():
            assert self.process.poll() is None, f"ended before the moment: {''.join(self.err)}"
            assert time.monotonic() < deadline, "the moment never came"
            time.sleep(0.01)

    def send(self, sent: signal.Signals, group: bool) -> None:
        (os.killpg if group else os.kill)(self.process.pid, sent)

    def finish(self) -> int:
        try:
            assert self.process.stdout is not None
            self.out = self.process.stdout.read()  # stderr is the reader thread's alone
            self.process.wait(timeout=600)
        finally:
            if self.process.poll() is None:  # pragma: no cover - a hung command: leave nothing behind
                os.killpg(self.process.pid, signal.SIGKILL)
        self._reader.join(10)
        return self.process.returncode


def _moment(name: str, root: Path, command: Command) -> Any:
    out = root / "out"

    def ready() -> bool:
        if name == "starting":  # the session is being made: the JVM's log is open
            return (out / "spark.log").exists()
        if name == "between":  # a micro-batch has ended
            return any(line.startswith("micro-batch 0:") for line in command.err)
        if name == "in-batch":  # a micro-batch's offsets are written, its commit is not
            offsets, commits = root / "ck" / "query" / "offsets", root / "ck" / "query" / "commits"
            started = {p.name for p in offsets.glob("[0-9]*")} if offsets.is_dir() else set()
            done = {p.name for p in commits.glob("[0-9]*")} if commits.is_dir() else set()
            return bool(started - done)
        assert name == "writing"  # run: the job writing the matches runs
        return (out / "matches").exists()

    return ready


# (command, signal, to the group?, moment, exit code, the line that ends stderr's account of the stop); four JVMs,
# so four cases: `run` starts its session through the same guard as `stream` (tests/test_cli_signals.py has both
# commands stopped while their session starts, without Spark)
CASES = [
    ("stream", signal.SIGTERM, True, "between", 0, "stopped (SIGTERM) after micro-batch"),
    ("stream", signal.SIGINT, True, "in-batch", 130, "stopped (SIGINT) after micro-batch"),
    ("stream", signal.SIGTERM, True, "starting", 0, "sharp-cer: stopped by SIGTERM before the stream started"),
    ("run", signal.SIGINT, False, "writing", 130, "sharp-cer: stopped by Ctrl-C (SIGINT) before the run finished"),
]


@pytest.mark.parametrize(
    ("command", "sent", "group", "moment", "code", "line"),
    CASES,
    ids=[f"{c}-{s.name}-{'group' if g else 'process'}-{m}" for c, s, g, m, _, _ in CASES],
)
def test_a_signal_at_any_moment_ends_a_spark_command_with_one_line_and_its_code(
    tmp_path: Path, command: str, sent: signal.Signals, group: bool, moment: str, code: int, line: str
) -> None:
    (tmp_path / "w.toml").write_text(WORKLOAD)
    source = tmp_path / "source"
    source.mkdir()
    for k in range(4):
        _write(source / f"part-{k}.csv", _lines(100 * k, 40), 1_700_000_000 + k)
    if command == "stream":
        argv = ["stream", "w.toml", "--source", "source", "--checkpoint", "ck", "--out", "out"]
        argv += ["--trigger", "0.2", "--max-files", "1", "--master", "local[2]"]
    else:
        argv = ["run", "w.toml", "--events", "source", "--out", "out", "--master", "local[2]"]
    running = Command(argv, tmp_path)
    running.wait_for(_moment(moment, tmp_path, running))
    running.send(sent, group)
    assert running.finish() == code, "".join(running.err)
    err = "".join(running.err)
    assert "Traceback" not in err and "Exception" not in err, err
    stops = [x for x in running.err if "stopped" in x]
    assert len(stops) == 1 and stops[0].startswith(line), err
    if command == "stream" and moment != "starting":  # stopped at a boundary: the summary of what was committed
        assert "end-to-end latency" in running.out
        assert json.loads((tmp_path / "out" / "summary.json").read_text())["stopped"] == sent.name
    else:
        assert running.out.strip() == "" or "end-to-end" not in running.out
