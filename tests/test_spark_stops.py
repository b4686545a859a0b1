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
import re
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

CONFIGS = Path(__file__).parent.parent / "configs"

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
        if name == "up":  # run: Spark is up, the driver prepares the events (Python work between jobs)
            return any(line.startswith("Spark up in") for line in command.err)
        assert name == "writing"  # run, demo: a job writing matches runs
        return (out / "matches").exists() or any(out.glob("*_matches"))

    return ready


# (command, signal, to the group?, moment, exit code, the line that ends stderr's account of the stop); a JVM
# each: `run` starts its session through the same guard as `stream` (tests/test_cli_signals.py has both commands
# stopped while their session starts, without Spark). Ctrl-C in a terminal signals the whole process group.
RUN_STOP = "sharp-cer: stopped by Ctrl-C (SIGINT) before the run finished"
CASES = [
    ("stream", signal.SIGTERM, True, "between", 0, "stopped (SIGTERM) after micro-batch"),
    ("stream", signal.SIGINT, True, "in-batch", 130, "stopped (SIGINT) after micro-batch"),
    ("stream", signal.SIGTERM, True, "starting", 0, "sharp-cer: stopped by SIGTERM before the stream started"),
    ("run", signal.SIGINT, False, "writing", 130, RUN_STOP),
    ("run", signal.SIGINT, True, "up", 130, RUN_STOP),
    ("demo", signal.SIGINT, True, "writing", 130, "sharp-cer: stopped by Ctrl-C (SIGINT) before the demo finished"),
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
    elif command == "demo":  # the repository's workloads (their generators), a few events each
        argv = ["demo", "--configs", str(CONFIGS), "--out", "out", "--events", "300", "--master", "local[2]"]
    elif moment == "up":  # events generated on the driver once Spark is up: Python work, then jobs
        argv = ["run", str(CONFIGS / "stock_trading.toml"), "--generate", "200000", "--out", "out"]
        argv += ["--master", "local[2]"]
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
    assert running.err[0].startswith(f"sharp-cer {command}: starting Spark on local[2]") or command == "demo"
    if command == "stream" and moment != "starting":  # stopped at a boundary: the summary of what was committed
        assert "end-to-end latency" in running.out
        assert json.loads((tmp_path / "out" / "summary.json").read_text())["stopped"] == sent.name
    else:
        assert running.out.strip() == "" or "end-to-end" not in running.out


BATCH_LINE = re.compile(r"micro-batch (\d+): ([\d,]+) rows read \(([\d,]+) dead-lettered\), ([\d,]+) matches committed")


def test_ctrl_c_on_a_stream_with_a_file_added_while_it_runs_its_lines_adding_up_to_its_summary(tmp_path: Path) -> None:
    """What a user watching ``stream`` sees (issue 38.5): a line as it
    starts Spark, one once the query runs and one as its first micro-batch
    starts; a line per micro-batch counting what it read and committed, a
    file added while it runs counted in its own; Ctrl-C (SIGINT to the
    process group, as a terminal sends it) then stops it at a boundary
    with one line, and the lines add up to the summary of what was
    committed."""
    (tmp_path / "w.toml").write_text(WORKLOAD)
    source = tmp_path / "source"
    source.mkdir()
    ms = 1_000_000  # 10 ms between events: the watermark (2 ms behind the latest) releases all but the last

    def timed(first: int, n: int) -> list[str]:
        return [f"{'AB'[k % 2]},{k},{(first + k) * 10 * ms}" for k in range(n)]

    for k in range(2):
        _write(source / f"part-{k}.csv", timed(100 * k, 40), 1_700_000_000 + k)
    argv = ["stream", "w.toml", "--source", "source", "--checkpoint", "ck", "--out", "out"]
    running = Command([*argv, "--trigger", "0.3", "--master", "local[2]"], tmp_path)

    def lines() -> list[tuple[int, int, int, int]]:
        found = [BATCH_LINE.match(line) for line in running.err]
        return [tuple(int(g.replace(",", "")) for g in m.groups()) for m in found if m]  # type: ignore[misc]

    running.wait_for(lambda: sum(r for _, r, _, _ in lines()) == 80)
    added = [*timed(1000, 20), f"A,9x,{1020 * 10 * ms}", *timed(1021, 9)]  # 30 rows, one of them a dead letter
    _write(source / "part-9.csv", added)
    running.wait_for(lambda: sum(r for _, r, _, _ in lines()) == 110)
    running.send(signal.SIGINT, group=True)
    assert running.finish() == 130, "".join(running.err)
    err = "".join(running.err)
    assert "Traceback" not in err and "Exception" not in err, err
    # the start: Spark starting, the query running, its first micro-batch, then the micro-batches' lines
    said = [line.split(":")[0] for line in running.err]
    assert said[0] == "sharp-cer stream"
    assert running.err[0].startswith("sharp-cer stream: starting Spark on local[2]")
    running_at = next(i for i, line in enumerate(running.err) if line.startswith("stream running"))
    first_at = next(i for i, line in enumerate(running.err) if line.startswith("first micro-batch started"))
    batch_at = next(i for i, line in enumerate(running.err) if BATCH_LINE.match(line))
    assert running_at < first_at < batch_at
    counted = lines()
    assert (30, 1) in {(r, d) for _, r, d, _ in counted}  # the added file, read by a micro-batch of its own
    assert [b for b, *_ in counted] == sorted({b for b, *_ in counted})  # one line per micro-batch
    stops = [line for line in running.err if "stopped" in line]
    assert len(stops) == 1 and stops[0].startswith("stopped (SIGINT) after micro-batch"), err
    # the lines add up to the summary of what was committed (printed, and summary.json)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["stopped"] == "SIGINT"
    assert sum(r for _, r, _, _ in counted) == summary["rows"] == 110
    assert sum(d for _, _, d, _ in counted) == sum(summary["dead_letters"].values()) == 1
    assert sum(m for *_, m in counted) == sum(q["matches"] for q in summary["queries"].values())
    assert sum(m for *_, m in counted) > 0
