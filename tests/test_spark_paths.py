"""How the Spark commands behave around the edges, without starting Spark:
a micro-batch stream stops at a boundary on SIGINT/SIGTERM with one line,
prints one line per micro-batch, the batch progress bar never runs
backwards, and an empty input draws its plot without a warning."""

from __future__ import annotations

import io
import os
import signal
import warnings
from pathlib import Path
from typing import Any

import pytest

from sharp_cer.spark.progress import Progress
from sharp_cer.spark.summary import QuerySummary, Summary
from sharp_cer.spark.watch import EVENTS_IN, MATCHES_OUT, watch


class FakeQuery:
    """A streaming query's surface as ``watch`` reads it: micro-batch ``k``
    takes ``busy`` polls with a trigger active, then reports its progress
    (``burst`` of them at once); ``on_batch`` runs after each report (a test
    sends its signal there)."""

    def __init__(
        self,
        batches: int,
        busy: int = 3,
        on_batch: Any = None,
        idle: bool = False,
        burst: int = 1,
        first_id: int = 0,
    ) -> None:
        self.batches, self.busy, self.on_batch, self.idle = batches, busy, on_batch, idle
        self.burst = burst  # micro-batches that end together
        self.first_id = first_id  # a restarted query's first micro-batch: the one after its checkpoint's last
        self.reports: list[dict[str, Any]] = []
        self.polls = 0
        self.full_reads = 0  # reads of every report kept (``recentProgress``), the costly one
        self.stopped_mid_trigger: bool | None = None

    @property
    def recentProgress(self) -> list[dict[str, Any]]:
        self.full_reads += 1
        return list(self.reports)

    @property
    def lastProgress(self) -> dict[str, Any] | None:
        return self.reports[-1] if self.reports else None

    @property
    def ran(self) -> int:
        return sum("addBatch" in p["durationMs"] for p in self.reports)

    def _tick(self) -> None:
        if self.ran >= self.batches or self.stopped_mid_trigger is not None:
            return
        self.polls += 1
        for _ in range(self.burst if self.polls % self.busy == 0 else 0):
            k = self.ran
            if k >= self.batches:
                break
            if self.idle:  # a trigger that found no data first reports under the next batch's id, as Spark does
                self.reports.append(
                    {
                        "batchId": self.first_id + k,
                        "durationMs": {"latestOffset": 1, "triggerExecution": 2},
                        "observedMetrics": {},
                    }
                )
            self.reports.append(
                {
                    "batchId": self.first_id + k,
                    "durationMs": {"addBatch": 90 + k, "triggerExecution": 100 + k},
                    "observedMetrics": {EVENTS_IN: {"n": 10 * k}, MATCHES_OUT: {"n": k}},
                }
            )
            if self.on_batch:
                self.on_batch(k)

    @property
    def isActive(self) -> bool:
        self._tick()
        return self.stopped_mid_trigger is None and self.ran < self.batches

    @property
    def status(self) -> dict[str, Any]:
        self._tick()
        return {"isTriggerActive": self.polls % self.busy != 0}

    def stop(self) -> None:
        self.stopped_mid_trigger = self.polls % self.busy != 0


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_stream_at_a_micro_batch_boundary_with_one_line(sent: signal.Signals) -> None:
    query = FakeQuery(batches=10, on_batch=lambda k: k == 1 and os.kill(os.getpid(), sent))
    out = io.StringIO()
    # A SparkContext started earlier in the session installs its own SIGINT handler: restored is "as before".
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    assert watch(query, out, None, poll=0.001) == sent.name
    assert query.stopped_mid_trigger is False  # stopped between micro-batches
    lines = out.getvalue().splitlines()
    assert lines[:2] == [
        "micro-batch 0: 0 events in, 0 matches out, 100 ms",
        "micro-batch 1: 10 events in, 1 matches out, 101 ms",
    ]
    assert [line for line in lines if line.startswith("stopped")] == [lines[-1]]
    assert lines[-1].startswith(f"stopped ({sent.name}) after micro-batch {len(lines) - 2};")
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before  # handlers restored


@pytest.mark.parametrize("idle", [False, True])
def test_every_micro_batch_gets_one_line_and_an_ended_stream_none_about_stopping(idle: bool) -> None:
    # with idle triggers' reports between them (seen live: a report of micro-batch 1 with 0 rows in 4 ms,
    # then the real micro-batch 1, which read a file, got no line), each micro-batch that ran gets its own
    out = io.StringIO()
    assert watch(FakeQuery(batches=4, idle=idle), out, None, poll=0.001) == "ended"
    assert out.getvalue().splitlines() == [
        f"micro-batch {k}: {10 * k} events in, {k} matches out, {100 + k} ms" for k in range(4)
    ]


@pytest.mark.parametrize("burst", [1, 3])
def test_micro_batches_between_two_polls_each_get_their_line_and_the_reports_are_read_one_at_a_time(
    burst: int,
) -> None:
    # burst=3: three micro-batches end between two polls, and the whole list of reports is read to find
    # them; burst=1: one at a time, each read alone
    query = FakeQuery(batches=12, burst=burst)
    out = io.StringIO()
    assert watch(query, out, None, poll=0.001) == "ended"
    assert out.getvalue().splitlines() == [
        f"micro-batch {k}: {10 * k} events in, {k} matches out, {100 + k} ms" for k in range(12)
    ]
    assert query.full_reads == (4 if burst == 3 else 0)


def test_a_restarted_stream_s_lines_go_on_from_its_checkpoint_s_micro_batch_reading_its_reports_once() -> None:
    # its first report, for a while, is an idle trigger's under the id after the checkpoint's last micro-batch
    query = FakeQuery(batches=3, busy=5, first_id=7)
    query.reports.append(
        {"batchId": 7, "durationMs": {"latestOffset": 1, "triggerExecution": 2}, "observedMetrics": {}}
    )
    out = io.StringIO()
    assert watch(query, out, None, poll=0.001) == "ended"
    assert [line.split(":")[0] for line in out.getvalue().splitlines()] == [f"micro-batch {k}" for k in (7, 8, 9)]
    assert query.full_reads == 2  # at the first idle report (nothing ran yet), at micro-batch 7; then one at a time


class FakeTracker:
    """Stage 1 is 80 % done; then stage 2 appears, 5 of its 10 tasks done."""

    def __init__(self) -> None:
        self.calls = 0

    def getActiveStageIds(self) -> list[int]:
        self.calls += 1
        return [1] if self.calls == 1 else [1, 2]

    def getStageInfo(self, stage: int) -> Any:
        class Info:
            numTasks = 10
            numCompletedTasks = 8 if stage == 1 else 5

        return Info()


def test_the_progress_bar_never_runs_backwards() -> None:
    class Context:
        def statusTracker(self) -> FakeTracker:
            return FakeTracker()

    class Spark:
        sparkContext = Context()

    bar = Progress(Spark(), 1000, io.StringIO())
    shares = [bar._share() for _ in range(3)]
    assert shares == [0.8, 0.8, 0.8]  # 13 of 20 tasks is 65 %: shown as the 80 % already reached


def test_an_empty_input_plots_without_a_warning(tmp_path: Path) -> None:
    query = QuerySummary("q", "t", 0, 0, "-", None, 0.0, 0.0, 0.0, None)
    summary = Summary("w", 0, {}, 0, 0, None, (query,), 1000, {})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary.plot(str(tmp_path / "empty.png"))
    assert (tmp_path / "empty.png").stat().st_size > 0


@pytest.mark.parametrize("command", ["run", "stream", "demo"])
@pytest.mark.parametrize("broken", [BrokenPipeError, ConnectionResetError])
def test_a_broken_worker_connection_ends_a_spark_command_with_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    broken: type[OSError],
    command: str,
) -> None:
    import sharp_cer.cli as cli
    import sharp_cer.cli.demo as cli_demo
    import sharp_cer.spark.pipeline as pipeline
    import sharp_cer.spark.session as session
    import sharp_cer.spark.stream as stream

    def lost(*args: object, **kwargs: object) -> None:
        raise broken(104, "Connection reset by peer")

    monkeypatch.setattr(session, "spark_session", lambda *args, **kwargs: object())
    monkeypatch.setattr(pipeline, "run_detection", lost)
    monkeypatch.setattr(stream, "run_stream", lost)
    monkeypatch.setattr(cli_demo, "_demo_on_spark", lost)
    configs = Path(__file__).parent.parent / "configs"
    workload, out, src = str(configs / "stock_trading.toml"), tmp_path / "o", tmp_path / "src"
    (tmp_path / "e.csv").write_text("")
    src.mkdir()
    argv = {
        "run": ["run", workload, "--events", str(tmp_path / "e.csv"), "--out", str(out)],
        "stream": ["stream", workload, "--source", str(src), "--checkpoint", str(tmp_path / "ck"), "--out", str(out)],
        "demo": ["demo", "--configs", str(configs), "--out", str(out), "--events", "200"],
    }[command]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    # the line saying Spark starts (`run`: and that it is up), then the error (the demo checks and prints its
    # workloads first; its whole Spark part is the stand-in here)
    starting = f"sharp-cer {command}: starting Spark on local[*] (its log: {out / 'spark.log'}); Ctrl-C stops\n"
    assert err.startswith(starting) or command == "demo"
    assert f"\n{err}".count("\nerror: Spark lost a worker's connection") == 1
    assert f"see {out / 'spark.log'}" in err


class BackToBack(FakeQuery):
    """Micro-batches longer than the trigger: a trigger is always active."""

    @property
    def status(self) -> dict[str, Any]:
        self._tick()
        return {"isTriggerActive": True}


def test_a_stop_request_ends_a_stream_whose_micro_batches_run_back_to_back() -> None:
    # no idle moment ever comes: the stream stops once the micro-batch running at the request has
    # committed, cutting the next one short (it is redone from the checkpoint on restart)
    from sharp_cer.spark.watch import StopRequest

    asked = StopRequest()
    query = BackToBack(batches=50, on_batch=lambda k: k == 1 and asked.set())
    out = io.StringIO()
    assert watch(query, out, None, poll=0.001, asked=asked) == "a request"
    assert query.stopped_mid_trigger is not None and len(query.reports) <= 4  # stopped, not run to the end
    assert (
        out.getvalue().splitlines()[-1].startswith(f"stopped (a request) after micro-batch {len(query.reports) - 1};")
    )


def test_the_second_read_of_the_batch_pipeline_runs_in_a_fresh_python_worker() -> None:
    """A Spark Python worker that runs ``prepare.load_partition`` first
    has imported nothing but what unpickling the task imports: the function
    must import what it uses (``pyarrow.compute``; seen failing on local[2]
    as "module 'pyarrow' has no attribute 'compute'")."""
    import functools
    import pickle
    import subprocess
    import sys

    import pyarrow as pa

    from sharp_cer.language import Schema
    from sharp_cer.spark.prepare import LoadSpec, load_partition

    spec = LoadSpec(Schema.parse("CREATE STREAM S { EVENT A { x:int, t:primary_time } }"), "csv", 0)
    # the second read (events late across partitions): each partition judged against the ones before it
    task = pickle.dumps(functools.partial(load_partition, spec, part=1, carried={1: 9}))
    sink = pa.BufferOutputStream()  # the rows come as Arrow IPC, as from the JVM
    lines = pa.schema([("value", pa.string())])
    with pa.ipc.new_stream(sink, lines) as writer:
        writer.write_batch(pa.record_batch({"value": ["A,1,10", "A,2,5"]}, schema=lines))
    rows = sink.getvalue().to_pybytes()
    code = f"""
import pickle, sys
import pyarrow as pa
task = pickle.loads({task!r})
batches = pa.ipc.open_stream(sys.stdin.buffer.read())
print(len(list(task(iter(batches)))))
"""
    done = subprocess.run([sys.executable, "-c", code], input=rows, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "2"  # the rows (one late), then the summary
