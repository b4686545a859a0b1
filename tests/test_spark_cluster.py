"""sharp-cer on a real Spark standalone cluster (issue 38.6): a master and
two workers of one core each, started on this machine with the scripts
pyspark ships (``benchmarks/spark_cluster.py``), on loopback, their ports
the system's, their logs in a temporary folder, stopped whatever happens.

``sharp-cer run`` and ``sharp-cer stream`` (stopped by Ctrl-C after its
first micro-batch, then restarted from its checkpoint to the end) run
against it with ``--master spark://...``, and their matches are the
in-process detector's over the same events, exactly. The commands run in
this process, one after the other, on one driver (the CLI reuses a running
session): one application, so the cluster starts its executors once.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from sharp_cer.api import Detector
from sharp_cer.cli import main
from sharp_cer.events.generators import generate, write_core_csv
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import load_workload

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from spark_cluster import Cluster, standalone  # noqa: E402  (a benchmark's module, found through the path above)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

WORKLOAD = Path(__file__).resolve().parent.parent / "configs" / "stock_trading.toml"
#: events per file, and files: the stream reads one a micro-batch
EVENTS, FILES = 400, 4

Key = tuple[str, int, int, tuple[int, ...]]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with standalone(tmp_path_factory.mktemp("cluster"), workers=2, cores=1, memory="512m") as running:
        yield running


@pytest.fixture(scope="module")
def spark(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The driver, on the cluster, with the stream's settings: the
    commands below find it running and use it. A session another test
    module of this process left running is stopped first (the commands
    would reuse it, on its master), and this one is stopped at the end."""
    from pyspark import SparkContext

    from sharp_cer.spark.session import spark_session
    from sharp_cer.spark.stream import stream_conf

    left = SparkContext._active_spark_context
    if left is not None:
        left.stop()
    before = os.environ.get("SPARK_LOCAL_IP")
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"  # the driver on loopback too, as the cluster
    log = str(tmp_path_factory.mktemp("driver") / "spark.log")
    session = spark_session(cluster.url, log=log, **{**stream_conf(), "spark.executor.memory": "512m"})
    try:
        assert session.sparkContext.master == cluster.url
        yield session
    finally:
        session.stop()
        if before is None:
            os.environ.pop("SPARK_LOCAL_IP", None)
        else:
            os.environ["SPARK_LOCAL_IP"] = before


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """The stock-trading generator's events as one CSV file, and as
    ``FILES`` files of ``EVENTS`` each (the stream's source folder)."""
    workload = load_workload(WORKLOAD)
    root = tmp_path_factory.mktemp("events")
    frame = generate(workload.generator or "", EVENTS * FILES, seed=3)
    types = {e.name: list(e.attributes) for e in workload.schema.event_types()}
    write_core_csv(frame, types, root / "all.csv")
    (root / "source").mkdir()
    parts = []
    for k in range(FILES):
        parts.append(root / "parts" / f"part-{k}.csv")
        parts[-1].parent.mkdir(exist_ok=True)
        write_core_csv(frame.iloc[k * EVENTS : (k + 1) * EVENTS], types, parts[-1])
    return root / "all.csv", parts


def in_process(path: Path) -> Counter[Key]:
    """The in-process detector's matches over the events of the CSV file at ``path``."""
    workload = load_workload(WORKLOAD)
    batch, report = load_csv(path.read_text(), workload.schema)
    assert not report.dead_letters
    found = Detector.from_workload(workload, history=False).feed(batch)
    return Counter((m.query, m.start, m.end, tuple(m.events)) for m in found)


def keys(rows: list[dict[str, Any]]) -> Counter[Key]:
    return Counter((r["query"], r["start"], r["end"], tuple(r["events"])) for r in rows)


def test_run_on_a_standalone_cluster_equals_in_process(
    spark: Any, cluster: Cluster, events: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    everything, _ = events
    out = tmp_path / "run"
    assert main(["run", str(WORKLOAD), "--events", str(everything), "--out", str(out), "--master", cluster.url]) == 0
    printed = capsys.readouterr().out
    assert f"on {cluster.url}" in printed
    truth = in_process(everything)
    assert sum(truth.values()) > 20  # the events hold matches of several queries
    assert keys(pq.read_table(out / "matches").to_pylist()) == truth
    summary = json.loads((out / "summary.json").read_text())
    assert {q: v["matches"] for q, v in summary["queries"].items() if v["matches"]} == Counter(k[0] for k in truth)
    assert cluster.workers_used() == 2  # the application's executors ran on both workers


def test_a_stream_stopped_and_restarted_on_a_standalone_cluster_equals_in_process(
    spark: Any, cluster: Cluster, events: tuple[Path, list[Path]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C once the first micro-batch has committed (one file a
    micro-batch, so files are still unread), then the same command
    without a trigger: the rest, from the checkpoint, and a flush."""
    from sharp_cer.spark.stream import committed, read_output

    everything, parts = events
    source, checkpoint, out = tmp_path / "source", tmp_path / "ck", tmp_path / "out"
    source.mkdir()
    for k, part in enumerate(parts):
        (source / part.name).write_bytes(part.read_bytes())
        # Spark's file source takes the files a micro-batch at a time in modification-time order (ties: any
        # order), so the files' times say which comes first, as files arriving one after the other would
        os.utime(source / part.name, (1_700_000_000 + k, 1_700_000_000 + k))
    argv = ["stream", str(WORKLOAD), "--source", str(source), "--checkpoint", str(checkpoint), "--out", str(out)]
    argv += ["--master", cluster.url]

    def interrupt() -> None:
        deadline = time.monotonic() + 300
        while not committed(str(out)) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C: the command stops at a micro-batch boundary

    stopper = threading.Thread(target=interrupt, daemon=True)
    stopper.start()
    assert main([*argv, "--trigger", "0.5", "--max-files", "1"]) == 130
    stopper.join()
    first = json.loads((out / "summary.json").read_text())
    assert first["stopped"] == "SIGINT"
    assert 0 < first["rows"] < EVENTS * FILES  # stopped mid-input
    capsys.readouterr()

    assert main(argv) == 0  # restarted: the files left, then the end of the input
    printed = capsys.readouterr()
    assert "resuming from" in printed.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rows"] == EVENTS * FILES and summary["stopped"] is None
    truth = in_process(everything)
    rows = read_output(spark, str(out)).where("kind = 'match'").select("query", "start", "end", "events").collect()
    got = keys([r.asDict() for r in rows])
    # nothing lost, nothing doubled
    assert got == truth, (
        f"{sum(got.values())} matches, in-process {sum(truth.values())}; "
        f"extra {sorted(got - truth)[:5]}; missing {sorted(truth - got)[:5]}"
    )

    # the plot's data (issue 38.4): ms per time bin from the workers, across the restart, adding up to each
    # query's histogram; the bounds in ms drawn, as a stream judges them
    from sharp_cer.spark.stream import StreamSettings, stream_summary

    workload = load_workload(WORKLOAD)
    streamed = stream_summary(spark, str(out), workload, StreamSettings()).summary
    data = streamed.plot_data()
    assert data.ms_note is None
    in_ms = {q.name: q.latency_bound.milliseconds for q in workload.queries if q.latency_bound is not None}
    drawn = {line.query: line.bound_ms for line in data.lines}
    assert drawn == {q: in_ms.get(q) for q in drawn} and any(v is not None for v in drawn.values())
    for q in streamed.queries:
        if q.latency_ms:
            assert sum(streamed.bins[q.name]["ms_events"]) == q.latency_ms["events"]
            assert max(streamed.bins[q.name]["ms_max"]) == pytest.approx(q.latency_ms["max"], abs=1e-6)
    assert (out / "latency.png").stat().st_size > 10_000
