"""Spark streaming against the batch pipeline and the in-process engine:
stopped mid-stream (or its driver killed mid-micro-batch) and restarted
from its checkpoint, the stream's committed output (matches and dead
letters, late events included) is exactly the batch result, nothing lost,
nothing doubled; a restart with another workload, or from an older
checkpoint format, is refused, saying why; ``detect_stream`` over a file
source (numbered by ``order_by``) and a Python streaming data source, with
alerts carrying their events; ``sharp-cer stream``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sharp_cer.api import Detector
from sharp_cer.cli import main
from sharp_cer.errors import SurfaceError
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Workload, parse_workload
from tests.test_spark import (
    HAND_MADE,
    WITH_SILENCE,
    _key,
    collected,
    csv_file,
    expected,
    hand_made_events,
    with_faults,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LATE = HAND_MADE.replace('name = "hand-made"', 'name = "late"\nallowed_lateness = 2000000000')
FILES = 6


@pytest.fixture(scope="module")
def spark() -> Any:
    from sharp_cer.spark.session import spark_session
    from sharp_cer.spark.stream import stream_conf

    return spark_session("local[2]", **{**stream_conf(), "spark.sql.shuffle.partitions": "4"})


def events_with_faults(workload: Workload, path: Path) -> list[str]:
    """Hand-made events as CSV lines, with bad and late rows (``with_faults``)."""
    lines = with_faults(csv_file(workload, hand_made_events(1800, 11), path).read_text().splitlines())
    path.write_text("\n".join(lines) + "\n")
    return lines


def committed_matches(out: str | Path, through: int | None = None) -> Counter[tuple[Any, ...]]:
    """The matches of a stream's committed output (up to micro-batch
    ``through``), read with pandas (``read_committed``)."""
    from sharp_cer.spark.stream_output import read_committed

    frame = read_committed(out, through)
    rows = frame[frame["kind"] == "match"].to_dict("records")
    return Counter((r["tenant"], *_key(r["query"], r["start"], r["end"], r["events"], r["vars"])) for r in rows)


def stream_matches(output: Any) -> Counter[tuple[Any, ...]]:
    rows = output.where("kind = 'match'").collect()
    return Counter((r["tenant"], *_key(r["query"], r["start"], r["end"], r["events"], r["vars"])) for r in rows)


@pytest.fixture(scope="module")
def streamed(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The faulty stream in six files, run with one file per micro-batch,
    stopped after two micro-batches, then restarted to the end and flushed."""
    return stopped_and_restarted(spark, tmp_path_factory.mktemp("stream"), parse_workload(LATE))


def stopped_and_restarted(
    spark: Any,
    root: Path,
    workload: Workload,
    first_run: contextlib.AbstractContextManager[None] | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """``workload`` over the faulty stream in six files, one file per
    micro-batch (``settings``: more ``StreamSettings``), stopped after two
    micro-batches (inside the context manager ``first_run``, if given), then
    restarted to the end and flushed."""
    from sharp_cer.spark.stream import StreamSettings, read_output, run_stream, start_stream

    began = time.time()
    lines = events_with_faults(workload, root / "all.csv")
    source, checkpoint, out = root / "source", str(root / "checkpoint"), str(root / "out")
    source.mkdir()
    step = -(-len(lines) // FILES)
    for k in range(FILES):
        part = source / f"part-{k:02d}.csv"
        part.write_text("\n".join(lines[k * step : (k + 1) * step]) + "\n")
        os.utime(part, (1_700_000_000 + k, 1_700_000_000 + k))  # Spark's file source takes files by time
    how = StreamSettings(max_files=1, **settings)
    with first_run if first_run is not None else contextlib.nullcontext():
        query = start_stream(workload, str(source), checkpoint, out, how, spark)
        deadline = time.time() + 300
        while (query.lastProgress is None or query.lastProgress["batchId"] < 1) and time.time() < deadline:
            time.sleep(0.2)
        query.stop()
    first = read_output(spark, out).where("kind = 'match'").count() if Path(out).exists() else 0
    cut = read_output(spark, out).where("kind = 'counter' AND name LIKE 'cut_%'").count() if first else 0
    summary = run_stream(workload, str(source), checkpoint, out, how, spark)
    return {
        "workload": workload, "root": root, "source": source, "checkpoint": checkpoint, "out": out,
        "first": first, "first_cuts": cut, "summary": summary, "output": read_output(spark, out),
        "wall_ms": 1000 * (time.time() - began),
    }  # fmt: skip


def test_stopped_and_restarted_stream_equals_the_batch_result(spark: Any, streamed: dict[str, Any]) -> None:
    from sharp_cer.spark import run_detection

    workload, whole = streamed["workload"], str(streamed["root"] / "all.csv")
    batch, report = load_csv(whole, workload.schema, allowed_lateness=workload.allowed_lateness)
    truth = expected(workload, batch, allowed_lateness=workload.allowed_lateness)
    detection = run_detection(whole, workload, spark=spark)
    try:
        assert collected(detection) == truth  # the batch result
    finally:
        detection.close()
    got = stream_matches(streamed["output"])
    assert 0 <= streamed["first"] < sum(truth.values())  # the first run stopped mid-stream
    assert got == truth  # nothing lost, nothing doubled
    assert committed_matches(streamed["out"]) == truth  # read without Spark, through the sink's log
    letters = streamed["output"].where("kind = 'dead_letter'").collect()
    assert sorted((r["start"], r["name"], r["reason"]) for r in letters) == sorted(
        (d.position, d.kind, d.reason) for d in report.dead_letters
    )
    assert {"mistyped_attribute", "late"} <= {r["name"] for r in letters}
    assert all(r["file"].endswith(".csv") and 0 < r["line"] <= 300 for r in letters)  # a line of its own file


def test_a_checkpoint_whose_state_the_workers_registered_from_ddl_restarts_with_the_schemas_parsed_ahead(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Up to sharp-cer 0.2 each task registered its state variables from
    DDL text, which pyspark asks the JVM to parse; now the driver parses
    them once (``state_schemas``). Spark checks a restarted query's state
    schemas against its checkpoint's: a checkpoint written the old way goes
    on with the new, every match committed once."""
    import sharp_cer.spark.stream_processors as processors

    assert all(not isinstance(s, str) for s in processors.state_schemas(cursor=processors.CURSOR_DDL).values())
    workload = parse_workload(LATE)

    @contextlib.contextmanager
    def as_text() -> Iterator[None]:
        with monkeypatch.context() as old:
            old.setattr(processors, "state_schemas", lambda **ddl: dict(ddl))  # the DDL, as before
            yield

    run = stopped_and_restarted(spark, tmp_path, workload, first_run=as_text())
    batch, _ = load_csv(str(tmp_path / "all.csv"), workload.schema, allowed_lateness=workload.allowed_lateness)
    truth = expected(workload, batch, allowed_lateness=workload.allowed_lateness)
    assert 0 <= run["first"] < sum(truth.values())
    assert stream_matches(run["output"]) == truth


def test_stream_summary_reports_engine_and_end_to_end_latency(streamed: dict[str, Any]) -> None:
    summary = streamed["summary"]
    workload = streamed["workload"]
    _, report = load_csv(str(streamed["root"] / "all.csv"), workload.schema, allowed_lateness=workload.allowed_lateness)
    assert summary.summary.rows == report.read and summary.summary.dead_letters == report.counts
    matches = {q.name: q.matches for q in summary.summary.queries}
    assert sum(matches.values()) == streamed["output"].where("kind = 'match'").count()
    events = load_csv(str(streamed["root"] / "all.csv"), workload.schema, allowed_lateness=workload.allowed_lateness)[0]
    detector = Detector.from_workload(workload, history=False, record_latency=True)
    detector.feed(events)
    in_process = detector.summary()
    keyed = int((events.types != "C").sum())  # C has no k: no partitioned lane reads it
    for q in summary.summary.queries:
        assert q.events > 0 and 0 < q.p50 <= q.max  # engine latency, cost units per event
        # engine-side ms, the releases' histograms added (wall time: only the shape is checked):
        # one per event its lane reads; the cuts by lever are the in-process detector's
        ms, query = q.latency_ms, next(w.checked.query for w in workload.queries if w.name == q.name)
        by_key = query.partition_by and query.consume != "ANY"  # consuming across keys runs as one partition
        assert ms["events"] == (keyed if by_key else len(events)), q.name
        assert 0 <= ms["p50"] <= ms["p99"] <= ms["max"] and ms["mean"] <= ms["max"], ms
        assert q.cuts == in_process[q.name]["cuts"] and q.matches == in_process[q.name]["matches"], q.name
        figures = summary.end_to_end[q.name]
        assert figures["matches"] == q.matches and 0 <= figures["p50"] <= figures["max"]  # wall ms
        # from each event's arrival in the stream, inside this run: not from its file's modification time, in 2023
        assert figures["max"] <= streamed["wall_ms"], (figures, streamed["wall_ms"])
    assert summary.watermark_ms == 2002 and "end-to-end latency" in summary.render()


def test_cut_counters_of_a_shedding_stream_survive_a_restart(spark: Any, tmp_path: Path) -> None:
    """Cuts go out as increments from the workers' engines: stopped after
    two micro-batches and restarted from its checkpoint, a stream shedding
    to a bound in cost units counts each query's cuts by lever exactly as
    the in-process detector does over the same events (one key group per
    lane, so one engine per lane, as in-process per lane), neither over nor
    under. The bound (1 unit, below any event's update) truncates every
    enumeration of near_by_position, whatever the micro-batches; a query
    beside it in its group that is never shed keeps the group's input (whose
    shedding in wall time depends on how events are batched)."""
    from sharp_cer.spark.lanes import lanes

    beside = '[[query]]\nname = "kept_beside"\nshed = false\n'
    beside += 'text = "SELECT * WHERE B ; A PARTITION BY [k] WITHIN 6 EVENTS"\n'
    bounded = LATE.replace('tenant = "t1"\n', 'tenant = "t1"\nlatency_bound = 1\n', 1) + beside
    workload = parse_workload(bounded)
    run = stopped_and_restarted(spark, tmp_path, workload, shedder="truncate", key_groups=1)
    assert run["first_cuts"] > 0  # the first run shed before it stopped: increments on both sides of the restart
    # issue 36: the driver said the bound below the update floor before the stream started (``stream_floor``)
    said = [w.split(" is below")[0] for w in run["summary"].floor_warnings]
    assert said == ["query near_by_position: its bound (1 units)"]
    events = load_csv(str(tmp_path / "all.csv"), workload.schema, allowed_lateness=workload.allowed_lateness)[0]
    in_process: dict[str, dict[str, int]] = {}
    for lane in lanes(workload):
        queries = tuple(q for q in workload.queries if q.name in lane.queries)
        detector = Detector.from_workload(replace(workload, queries=queries), shedder="truncate", history=False)
        detector.feed(events)
        in_process.update({name: row["cuts"] for name, row in detector.summary().items()})
    streamed_cuts = {q.name: q.cuts for q in run["summary"].summary.queries}
    assert streamed_cuts == in_process
    assert sum(in_process["near_by_position"].values()) > 0


def test_restart_with_another_workload_is_refused_naming_the_difference(
    spark: Any, streamed: dict[str, Any], tmp_path: Path
) -> None:
    from sharp_cer.spark.stream import StreamSettings, run_stream, start_stream

    # the queries may change while a stream runs (issue 39: tests/test_stream_update.py); the lateness may not
    changed = parse_workload(LATE.replace("allowed_lateness = 2000000000", "allowed_lateness = 3000000000"))
    with pytest.raises(SurfaceError) as caught:
        start_stream(
            changed, str(streamed["source"]), streamed["checkpoint"], str(tmp_path / "o"), StreamSettings(), spark
        )
    assert "allowed_lateness changed" in str(caught.value) and "3000000000" in str(caught.value)
    # without the checkpoint's copy of the signature, the state itself refuses it (this test runs last on it)
    checkpoint, source = Path(streamed["checkpoint"]), streamed["source"]
    (checkpoint / "sharp-cer-workload.json").unlink()
    (source / "part-99.csv").write_text("A,1,3,0,999000000000\n")
    with pytest.raises(SurfaceError) as caught:
        run_stream(changed, str(source), str(checkpoint), streamed["out"], StreamSettings(), spark)
    assert "stream state" in str(caught.value) and "allowed_lateness changed" in str(caught.value)


def test_cli_stream_writes_matches_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workload = parse_workload(WITH_SILENCE)  # a trailing absence's alerts are counted in the summary too
    source = tmp_path / "source"
    source.mkdir()
    frame = hand_made_events(400, 3)
    (source / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")))
    spec = tmp_path / "w.toml"
    spec.write_text(WITH_SILENCE)
    out = tmp_path / "out"
    argv = ["stream", str(spec), "--source", str(source), "--checkpoint", str(tmp_path / "ck"), "--out", str(out)]
    assert main([*argv, "--master", "local[2]"]) == 0
    text = capsys.readouterr().out
    assert "end-to-end latency" in text
    figures = json.loads((out / "summary.json").read_text())
    truth = Counter(key[1] for key in expected(workload, frame).elements())
    assert {name: q["matches"] for name, q in figures["queries"].items() if q["matches"]} == dict(truth)
    assert set(figures["end_to_end_ms"]) == {q.name for q in workload.queries}
    assert main([*argv, "--watermark-ms", "0"]) == 2
    assert "not above the allowed lateness" in capsys.readouterr().err
    missing = [*argv[:3], str(tmp_path / "nowhere"), *argv[4:], "--format", "jsonl"]
    assert main(missing) == 2
    assert "no such folder" in capsys.readouterr().err


def test_detect_stream_refuses_to_shed_to_a_fraction_bound(spark: Any, tmp_path: Path) -> None:
    from sharp_cer.spark.stream import StreamSettings, detect_stream

    workload = parse_workload(HAND_MADE.replace('tenant = "t1"\n', 'tenant = "t1"\nlatency_bound = "40%"\n', 1))
    events = spark.readStream.schema("type string, k int, x int, j int, t string").json(str(tmp_path))
    with pytest.raises(SurfaceError, match=r'query near_by_position: latency_bound = "40%" .* no unshedded run'):
        detect_stream(events, workload, settings=StreamSettings(shedder="sharp"))
    detect_stream(events, workload)  # without a shedder the bound is only reported


def test_a_checkpoint_of_an_older_format_is_refused_saying_what_to_do(tmp_path: Path) -> None:
    from sharp_cer.spark.stream import SIGNATURE_FILE, check_checkpoint

    workload = parse_workload(HAND_MADE)
    (tmp_path / SIGNATURE_FILE).write_text(json.dumps(workload.signature()))  # format 1 kept the bare signature
    with pytest.raises(SurfaceError) as caught:
        check_checkpoint(str(tmp_path), workload)
    message = str(caught.value)
    assert "written by an older sharp-cer (stream format 1)" in message and "new --checkpoint" in message
    fresh = tmp_path / "fresh"
    check_checkpoint(str(fresh), workload)  # a new checkpoint records this format, and reads back
    check_checkpoint(str(fresh), workload)


def test_a_restart_keeps_the_key_groups_its_checkpoint_started_with(tmp_path: Path) -> None:
    """Stage 0 routes a partitioned lane's events over N key groups and each
    group's state lives under its number: a restart on a machine with
    another number of cores (the default N) keeps the checkpoint's N, and an
    explicit other N is refused, naming both and the fix."""
    from sharp_cer.spark.stream import check_checkpoint

    workload = parse_workload(HAND_MADE)
    assert check_checkpoint(str(tmp_path), workload, None, 2) == 2  # started on 2 cores
    assert check_checkpoint(str(tmp_path), workload, None, 8) == 2  # restarted on 8
    assert check_checkpoint(str(tmp_path), workload, 2, 8) == 2
    with pytest.raises(SurfaceError) as caught:
        check_checkpoint(str(tmp_path), workload, 4, 8)
    message = str(caught.value)
    assert "over 2 key groups, this run over 4" in message and "StreamSettings(key_groups=2)" in message


def test_driver_killed_mid_micro_batch_restarts_with_every_match_committed_once(spark: Any, tmp_path: Path) -> None:
    """SIGKILL of the driver (and its JVM) while a micro-batch runs: its files
    may be in the output folder, uncommitted; after a restart from the
    checkpoint the committed output is exactly the batch result, the
    alerts of a trailing absence (fired by event-time timers) included."""
    from sharp_cer.spark.stream import StreamSettings, run_stream

    workload = parse_workload(WITH_SILENCE)
    assert "silent_after_a" in {q.name for q in workload.queries}
    whole = csv_file(workload, hand_made_events(900, 7), tmp_path / "all.csv").read_text().splitlines()
    source, checkpoint, out = tmp_path / "source", tmp_path / "ck", tmp_path / "out"
    source.mkdir()
    for k in range(3):
        part = source / f"part-{k}.csv"
        part.write_text("\n".join(whole[k * 300 : (k + 1) * 300]) + "\n")
        os.utime(part, (1_700_000_000 + k, 1_700_000_000 + k))
    spec = tmp_path / "w.toml"
    spec.write_text(WITH_SILENCE)
    argv = ["stream", str(spec), "--source", str(source), "--checkpoint", str(checkpoint), "--out", str(out),
            "--trigger", "0.5", "--max-files", "1", "--timeout", "600", "--master", "local[2]"]  # fmt: skip
    code = "import sys; from sharp_cer.cli import main; sys.exit(main(sys.argv[1:]))"
    driver = subprocess.Popen(  # its own process group: the JVM goes down with it
        [sys.executable, "-c", code, *argv],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    offsets, commits = checkpoint / "query" / "offsets", checkpoint / "query" / "commits"
    in_flight = None
    deadline = time.time() + 300
    try:
        while in_flight is None and time.time() < deadline and driver.poll() is None:
            started = {int(p.name) for p in offsets.glob("[0-9]*")} if offsets.is_dir() else set()
            done = {int(p.name) for p in commits.glob("[0-9]*")} if commits.is_dir() else set()
            in_flight = next((b for b in sorted(started - done) if b >= 1), None)
            time.sleep(0.01)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
    assert in_flight is not None  # killed while micro-batch in_flight ran (offsets written, no commit)
    first = sum(committed_matches(out).values())
    summary = run_stream(workload, str(source), str(checkpoint), str(out), StreamSettings(), spark)
    truth = expected(workload, load_csv(str(tmp_path / "all.csv"), workload.schema)[0])
    assert first < sum(truth.values())
    assert committed_matches(out) == truth  # nothing lost, nothing doubled
    assert any(key[1] == "silent_after_a" for key in truth)
    assert sum(q.matches for q in summary.summary.queries) == sum(truth.values())


@pytest.mark.parametrize("text", [HAND_MADE, LATE], ids=["lateness-0", "lateness-2s"])
def test_a_file_s_matches_come_out_in_the_micro_batch_that_reads_it(spark: Any, text: str, tmp_path: Path) -> None:
    """Every event the next micro-batch's watermark passes is released in
    the micro-batch that reads it, and no micro-batch without data follows. Expected, by hand: Spark's watermark
    after it is the file's latest time + 1 ms (stage 1's clock), in whole
    ms, minus the delay (allowed lateness + 2 ms); an event at t waits
    for the watermark to reach t + 1 ms; a key group releases its events
    in stream order up to its first one still held. So every match ending
    before the stream's first held event is out in that micro-batch; with
    the events in time order (lateness 0: the disordered ones are dead
    letters) nothing else is; with events disordered within the lateness,
    a group may release a little more. Flushed, the whole is the in-process
    detector's."""
    from sharp_cer.spark.stream import StreamSettings, request_flush, start_stream

    workload = parse_workload(text)
    source, checkpoint, out = tmp_path / "source", tmp_path / "ck", tmp_path / "out"
    source.mkdir()
    events_with_faults(workload, source / "part-0.csv")
    batch, _ = load_csv(str(source / "part-0.csv"), workload.schema, allowed_lateness=workload.allowed_lateness)
    truth = expected(workload, batch, allowed_lateness=workload.allowed_lateness)
    times = np.array([int(line.rsplit(",", 1)[1]) for line in (source / "part-0.csv").read_text().splitlines()])
    ms = times // 1_000_000 + 1  # each row's clock, ms
    watermark = int(times.max()) // 1_000_000 + 1 - (workload.allowed_lateness // 1_000_000 + 2)
    first_held = int(np.flatnonzero(ms > watermark)[0])  # a row's position is its line (no header)
    assert 0 < first_held < len(times)

    query = start_stream(workload, str(source), str(checkpoint), str(out), StreamSettings(), spark)
    query.awaitTermination()
    read = [p for p in query.recentProgress if p["numInputRows"]]
    assert [p["batchId"] for p in read] == [0]  # the micro-batch that read the file
    # and no micro-batch without data after it: every key group read the file's summary, so the next
    # watermark has nothing left to release (one-operator plan)
    ran = [p["batchId"] for p in query.recentProgress if "addBatch" in p["durationMs"]]
    assert ran == [0]
    first = committed_matches(out, through=0)
    surely = Counter({k: n for k, n in truth.items() if k[3] < first_held})  # k[3]: the match's end
    assert sum(surely.values()) > 0
    if workload.allowed_lateness:
        assert surely <= first <= truth
    else:
        assert first == surely
    request_flush(str(checkpoint))
    start_stream(workload, str(source), str(checkpoint), str(out), StreamSettings(), spark).awaitTermination()
    assert committed_matches(out) == truth


def _shuffled_parts(frame: Any, folder: Path, parts: int, seed: int) -> None:
    """``frame`` with a row number ``n``, as JSONL files (rows shuffled within
    each file) appearing one after the other."""
    import numpy as np

    folder.mkdir(parents=True)
    numbered = frame.assign(n=range(len(frame)))
    step = -(-len(frame) // parts)
    for k in range(parts):
        part = numbered.iloc[k * step : (k + 1) * step].sample(frac=1, random_state=np.random.default_rng(seed + k))
        path = folder / f"part-{k}.jsonl"
        path.write_text(part.to_json(orient="records", lines=True))
        os.utime(path, (1_700_000_000 + k, 1_700_000_000 + k))


def _run_to_end(frame: Any, checkpoint: Path, out: Path, control: Path) -> None:
    """Write ``frame`` (a streaming DataFrame) to Parquet: everything there, then a flush."""
    from sharp_cer.spark.stream import request_flush

    for run in range(2):
        if run:
            request_flush(str(control.parent))  # writes to the control folder, ck/control
        writer = frame.writeStream.format("parquet").option("path", str(out))
        writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start().awaitTermination()


def _check_alerts(output: Any, frame: Any, workload: Workload) -> None:
    """Every alert carries its events whole (type and attributes, as given) and its last event's time."""
    events = frame.astype(object).to_dict("records")
    schema = workload.schema
    alerts = output[output["kind"] == "match"].to_dict("records")
    assert alerts
    for alert in alerts:
        whole = [{"type": events[p]["type"], **{a: events[p][a] for a in schema.event(events[p]["type"]).attributes}}
                 for p in alert["events"]]  # fmt: skip
        assert [json.loads(e) for e in alert["attributes"]] == whole
        assert alert["end_time"] == events[int(alert["end"])]["t"]


def test_detect_stream_over_a_file_source_numbers_by_order_by_and_alerts_carry_their_events(
    spark: Any, tmp_path: Path
) -> None:
    from sharp_cer.spark import detect_stream
    from sharp_cer.spark.stream_output import read_committed

    workload = parse_workload(HAND_MADE)
    frame = hand_made_events(600, 13)
    _shuffled_parts(frame, tmp_path / "in", 3, 13)
    events = (
        spark.readStream.schema("type string, k bigint, x bigint, j bigint, t bigint, n bigint")
        .option("maxFilesPerTrigger", 1)
        .json(str(tmp_path / "in"))
    )
    control = tmp_path / "ck" / "control"
    alerts = detect_stream(events, workload, order_by=["n"], control=str(control))
    _run_to_end(alerts, tmp_path / "ck" / "query", tmp_path / "out", control)
    assert committed_matches(tmp_path / "out") == expected(workload, frame)  # in the order of n, not the files'
    _check_alerts(read_committed(tmp_path / "out"), frame, workload)


def _events_source() -> Any:
    """A Python streaming data source (``sharp_cer_test_events``) serving a
    JSONL file's rows (option ``path``) 150 a micro-batch."""
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import ReadMaxRows

    class Reader(DataSourceStreamReader):
        def __init__(self, path: str) -> None:
            self.path = path
            self.total = len(Path(path).read_text().splitlines())

        def initialOffset(self) -> dict[str, int]:
            return {"index": 0}

        def getDefaultReadLimit(self) -> Any:
            return ReadMaxRows(150)

        def latestOffset(self, start: dict[str, int], limit: Any) -> dict[str, int]:
            step = limit.max_rows if isinstance(limit, ReadMaxRows) else self.total
            return {"index": min(start["index"] + step, self.total)}

        def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
            return [InputPartition((start["index"], end["index"]))]

        def read(self, partition: Any) -> Any:
            first, last = partition.value
            with open(self.path) as lines:
                for i, line in enumerate(lines):
                    if first <= i < last:
                        r = json.loads(line)
                        yield (r["type"], r["k"], r["x"], r["j"], r["t"])

    class Events(DataSource):
        @classmethod
        def name(cls) -> str:
            return "sharp_cer_test_events"

        def schema(self) -> str:
            return "type string, k bigint, x bigint, j bigint, t bigint"

        def streamReader(self, schema: Any) -> Reader:
            return Reader(self.options["path"])

    return Events


def test_detect_stream_over_a_python_streaming_data_source_equals_the_batch_result(spark: Any, tmp_path: Path) -> None:
    from sharp_cer.spark import detect_stream
    from sharp_cer.spark.stream_output import read_committed

    workload = parse_workload(HAND_MADE)
    frame = hand_made_events(600, 17)
    path = tmp_path / "events.jsonl"
    path.write_text(frame.to_json(orient="records", lines=True))
    spark.dataSource.register(_events_source())
    events = spark.readStream.format("sharp_cer_test_events").option("path", str(path)).load()
    control = tmp_path / "ck" / "control"
    alerts = detect_stream(events, workload, control=str(control))  # the source's order
    _run_to_end(alerts, tmp_path / "ck" / "query", tmp_path / "out", control)
    assert committed_matches(tmp_path / "out") == expected(workload, frame)
    _check_alerts(read_committed(tmp_path / "out"), frame, workload)
