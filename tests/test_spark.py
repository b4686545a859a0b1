"""The Spark pipeline against the in-process engine: the same matches,
exactly, on the example workloads and on hand-made ones (positions across
keys, absence, consumption across keys), from every input format split
into several partitions; dead letters and lateness judged across
partitions; the physical plan runs the Python UDTF (or mapInArrow) on the
events with nothing brought to the driver; and ``sharp-cer run``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from sharp_cer.api import Detector
from sharp_cer.cli import main
from sharp_cer.events.generators import generate, write_core_csv
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Workload, load_workload, parse_workload

pytestmark = pytest.mark.spark

CONFIGS = Path(__file__).parent.parent / "configs"


@pytest.fixture(scope="module")
def spark() -> Any:
    from sharp_cer.spark import spark_session

    # small input splits, so every file is read as several partitions
    return spark_session("local[2]", **{"spark.sql.files.maxPartitionBytes": "16384"})


def _key(query: str, start: int, end: int, events: Any, variables: Any) -> tuple[Any, ...]:
    return (query, start, end, tuple(events), tuple(sorted((k, tuple(v)) for k, v in dict(variables or {}).items())))


def expected(workload: Workload, events: Any, **options: Any) -> Counter[tuple[Any, ...]]:
    """The in-process detector's matches (with their tenants)."""
    tenant = {q.name: q.tenant for q in workload.queries}
    found = Detector.from_workload(workload, history=False, **options).feed(events)
    return Counter((tenant[m.query], *_key(m.query, m.start, m.end, m.events, m.vars)) for m in found)


def collected(detection: Any) -> Counter[tuple[Any, ...]]:
    rows = detection.matches.collect()
    return Counter((r["tenant"], *_key(r["query"], r["start"], r["end"], r["events"], r["vars"])) for r in rows)


def plan_text(frame: Any) -> str:
    return str(frame._jdf.queryExecution().executedPlan().toString())


def csv_file(workload: Workload, frame: pd.DataFrame, path: Path) -> Path:
    attributes = {e.name: list(e.attributes) for e in workload.schema.event_types()}
    write_core_csv(frame, attributes, path)
    return path


@pytest.mark.parametrize("name", ["card_fraud", "iot_sensors", "stock_trading"])
def test_example_workloads_match_the_in_process_engine_exactly(spark: Any, name: str, tmp_path: Path) -> None:
    from sharp_cer.spark import run_detection

    workload = load_workload(CONFIGS / f"{name}.toml")
    frame = generate(workload.generator or "", 4000, seed=3)
    path = csv_file(workload, frame, tmp_path / "events.csv")
    truth = expected(workload, load_csv(str(path), workload.schema)[0])
    assert sum(truth.values()) > 0
    detection = run_detection(str(path), workload, spark=spark)
    try:
        assert detection.prepared.read.rdd.getNumPartitions() > 1  # the file was split
        assert collected(detection) == truth
        text = plan_text(detection.matches)
        assert "ArrowEvalPythonUDTF" in text and "Exchange hashpartitioning" in text
        assert "LocalTableScan" not in text and "FileScan" in text  # read by the executors, not the driver
    finally:
        detection.close()


def test_the_map_in_arrow_fallback_matches_too(spark: Any, tmp_path: Path) -> None:
    from sharp_cer.spark import run_detection

    workload = load_workload(CONFIGS / "stock_trading.toml")
    frame = generate(workload.generator or "", 3000, seed=5)
    frame.to_parquet(tmp_path / "events.parquet", index=False)
    detection = run_detection(str(tmp_path / "events.parquet"), workload, spark=spark, method="map")
    try:
        assert collected(detection) == expected(workload, frame)
        assert "MapInArrow" in plan_text(detection.matches)
    finally:
        detection.close()


HAND_MADE = r'''
[workload]
name = "hand-made"
schema = """CREATE STREAM S { EVENT A { k:int, x:int, j:int, t:primary_time },
                             EVENT B { k:int, x:int, j:int, t:primary_time }, EVENT C { x:int, t:primary_time } }"""
[[query]]
name = "near_by_position"
tenant = "t1"
text = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 6 EVENTS"
[[query]]
name = "no_c_between"
tenant = "t1"
text = "SELECT * WHERE A ; ABSENT(C) ; B WITHIN 8 EVENTS"
[[query]]
name = "consumed_across_keys"
tenant = "t2"
text = "SELECT * WHERE A ; B+ FILTER A[x > 2] PARTITION BY [k] WITHIN 10 EVENTS CONSUME BY ANY"
[[query]]
name = "contiguous_by_key"
tenant = "t2"
text = "SELECT * WHERE A : B PARTITION BY [k] WITHIN 4 SECONDS"
[[query]]
name = "next_by_key"
tenant = "t3"
text = "SELECT NEXT * WHERE A ; B ; B FILTER B[x < 5] PARTITION BY [k] WITHIN 12 EVENTS"
[[query]]
name = "contiguous_by_key_and_j"
tenant = "t3"
text = "SELECT * WHERE A : B PARTITION BY [k], [j] WITHIN 8 EVENTS"
'''


#: with a trailing absence (issue 35): an A of a key, then no B of that key with A's x for 3 s
WITH_SILENCE = (
    HAND_MADE
    + """[[query]]
name = "silent_after_a"
tenant = "t1"
text = "SELECT a WHERE A AS a ; ABSENT(B[x = a.x]) PARTITION BY [k] WITHIN 3 SECONDS"
"""
)


def hand_made_events(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    types = rng.choice(["A", "B", "C"], size=n, p=[0.4, 0.45, 0.15])
    keys = rng.integers(0, 5, size=n)

    def of_a_and_b(values: np.ndarray) -> pd.api.extensions.ExtensionArray:
        return pd.array([None if t == "C" else int(v) for t, v in zip(types, values, strict=True)], dtype="Int64")

    frame = pd.DataFrame(
        {
            "type": types,
            "k": of_a_and_b(keys),
            "x": rng.integers(0, 8, size=n),
            "t": np.cumsum(rng.integers(0, 2, size=n)) * 1_000_000_000,
        }
    )
    frame.insert(3, "j", of_a_and_b(rng.integers(0, 2, size=n)))  # drawn last: the other columns stay as they were
    return frame


@pytest.mark.parametrize("seed", [1, 2])
def test_hand_made_workload_positions_absence_and_consumption(spark: Any, seed: int, tmp_path: Path) -> None:
    from sharp_cer.spark import run_detection

    workload = parse_workload(HAND_MADE)
    frame = hand_made_events(900, seed)
    truth = expected(workload, frame)
    assert all(n > 0 for n in Counter(key[1] for key in truth.elements()).values())
    assert {key[1] for key in truth} == {q.name for q in workload.queries}
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in frame.to_dict("records")))
    for groups in (1, 3):  # every key in one group, or spread over several
        detection = run_detection(str(path), workload, spark=spark, key_groups=groups)
        try:
            assert collected(detection) == truth
        finally:
            detection.close()


def with_faults(lines: list[str]) -> list[str]:
    """Hand-made CSV lines with bad rows, and events late by 3 s (beyond
    the 2 s allowed) or by 1 s (within), spread over the stream."""
    lines = list(lines)
    for i in range(50, len(lines), 400):
        lines[i] = "A,1,oops,0,5"
    for i in range(120, len(lines), 300):
        kind, *rest = lines[i].split(",")
        t = int(lines[i - 1].split(",")[-1]) - (3 if i % 600 == 120 else 1) * 1_000_000_000
        lines[i] = ",".join([kind, *rest[:-1], str(t)])
    return lines


def test_dead_letters_and_lateness_across_partitions(spark: Any, tmp_path: Path) -> None:
    from sharp_cer.spark import run_detection

    workload = parse_workload(HAND_MADE.replace('name = "hand-made"', 'name = "late"\nallowed_lateness = 2000000000'))
    frame = hand_made_events(3000, 7)
    path = csv_file(workload, frame, tmp_path / "events.csv")
    path.write_text("\n".join(with_faults(path.read_text().splitlines())) + "\n")
    batch, report = load_csv(str(path), workload.schema, allowed_lateness=workload.allowed_lateness)
    assert {"mistyped_attribute", "late"} <= set(report.counts)
    detection = run_detection(str(path), workload, spark=spark)
    try:
        assert detection.prepared.read.rdd.getNumPartitions() > 1
        letters = sorted((r["position"], r["line"], r["kind"], r["reason"]) for r in detection.dead_letters.collect())
        assert letters == [(d.position, d.line, d.kind, d.reason) for d in report.dead_letters]
        assert collected(detection) == expected(workload, batch, allowed_lateness=workload.allowed_lateness)
        summary = detection.summary()
        assert summary.rows == report.read and summary.dead_letters == report.counts
    finally:
        detection.close()


@pytest.mark.parametrize("late", [False, True])
def test_numbering_without_a_python_pass_and_letters_carried_in_the_output(
    spark: Any, tmp_path: Path, late: bool
) -> None:
    """Each partition is judged against the largest time of the ones before
    it (counted by a first read), so an event late across partitions gets
    the letter in-process gives it: its line and CSV text. Before and once
    persisted (the dead letters then read from the workers' output, the
    summary counting them in its one collect), the dead letters, matches
    and summary are the in-process ones."""
    from sharp_cer.spark import run_detection

    workload = parse_workload(HAND_MADE.replace('name = "hand-made"', 'name = "late"\nallowed_lateness = 2000000000'))
    path = csv_file(workload, hand_made_events(3000, 11), tmp_path / "events.csv")
    lines = path.read_text().splitlines()
    lines = [("A,1,oops,0,5" if i % 400 == 50 else line) for i, line in enumerate(lines)]
    if late:  # the lines about each 16 KB split (``spark``) 3 s behind the one before them: some late across splits
        starts = np.cumsum([0] + [len(line) + 1 for line in lines])
        for edge in range(16384, int(starts[-1]), 16384):
            at = int(np.searchsorted(starts, edge))
            before = int(lines[at - 3].split(",")[-1])
            for i in range(at - 2, min(at + 3, len(lines))):
                kind, *rest = lines[i].split(",")
                lines[i] = ",".join([kind, *rest[:-1], str(before - 3_000_000_000)])
    path.write_text("\n".join(lines) + "\n")
    batch, report = load_csv(str(path), workload.schema, allowed_lateness=workload.allowed_lateness)
    assert ("late" in report.counts) == late and report.counts["mistyped_attribute"] > 1
    kept = spark.sparkContext._jsc.getPersistentRDDs().size()
    detection = run_detection(str(path), workload, spark=spark)
    try:
        assert detection.prepared.read.rdd.getNumPartitions() > 1
        # the input read once and kept for the run; read again (not kept) only where a row is late across splits
        assert spark.sparkContext._jsc.getPersistentRDDs().size() == kept + (0 if late else 1)

        # every field of every letter, a row late against an earlier split's events too (its line and CSV text)
        def fields(position: int, line: int, kind: str, reason: str, raw: str) -> tuple[Any, ...]:
            return (position, line, kind, reason, raw)

        truth = sorted(fields(d.position, d.line, d.kind, d.reason, d.raw) for d in report.dead_letters)
        for persisted in (False, True):
            if persisted:
                detection.persist()
            rows = detection.dead_letters.collect()
            got = [fields(r["position"], r["line"], r["kind"], r["reason"], r["raw"]) for r in rows]
            assert sorted(got) == truth
            assert collected(detection) == expected(workload, batch, allowed_lateness=workload.allowed_lateness)
            summary = detection.summary()
            assert summary.rows == report.read and summary.dead_letters == report.counts
    finally:
        detection.close()
    assert spark.sparkContext._jsc.getPersistentRDDs().size() == kept  # released


@pytest.mark.parametrize("method", ["udtf", "map"])
def test_a_tables_rows_numbered_across_partitions_with_their_letters(spark: Any, tmp_path: Path, method: str) -> None:
    """A table (Parquet, several files, so several partitions) read once:
    every row's position and every dead letter's line (a table row's line
    is its position + 1) are the in-process loader's, the workers numbering
    the rows of each partition from the partitions' summaries; the matches
    too, with the fallback method as well."""
    from sharp_cer.events.loaders import load_pandas
    from sharp_cer.spark import run_detection

    workload = parse_workload(HAND_MADE)
    frame = hand_made_events(2400, 13)
    frame["t"] = frame["t"].astype("Int64")
    frame.loc[frame.index % 300 == 17, "t"] = pd.NA  # a primary time missing: a dead letter, counted in positions
    folder = tmp_path / "events"
    folder.mkdir()
    for i, lo in enumerate(range(0, len(frame), 600)):  # in name order, which is the order Spark reads them in
        frame.iloc[lo : lo + 600].to_parquet(folder / f"part-{i}.parquet", index=False)
    batch, report = load_pandas(frame, workload.schema)
    assert report.counts == {"missing_attribute": 8}
    detection = run_detection(str(folder), workload, spark=spark, method=method)
    try:
        assert detection.prepared.read.rdd.getNumPartitions() > 1
        letters = sorted((r["position"], r["line"], r["kind"]) for r in detection.dead_letters.collect())
        assert letters == [(d.position, d.position + 1, d.kind) for d in report.dead_letters]
        assert collected(detection) == expected(workload, batch)
        detection.persist()
        assert detection.summary().dead_letters == report.counts
    finally:
        detection.close()


def test_summary_counts_latency_and_bounds(spark: Any) -> None:
    from sharp_cer.spark import run_detection
    from sharp_cer.spark.summary import MS_NOT_JUDGED

    workload = parse_workload(
        HAND_MADE.replace(
            'tenant = "t1"\ntext = "SELECT * WHERE A ; B PARTITION',
            'tenant = "t1"\nlatency_bound = 3\ntext = "SELECT * WHERE A ; B PARTITION',
            1,
        ).replace(
            'text = "SELECT * WHERE A ; ABSENT(C)',
            # a bound no event can meet (a millionth of a millisecond): every event is over it
            'latency_bound = "0.000001ms"\ntext = "SELECT * WHERE A ; ABSENT(C)',
            1,
        )
    )
    frame = hand_made_events(1500, 11)
    detector = Detector.from_workload(workload, history=False, record_latency=True)
    detector.feed(frame)
    in_process = detector.summary()
    detection = run_detection(spark.createDataFrame(frame), workload, spark=spark)
    try:
        summary = detection.summary()
    finally:
        detection.close()
    by_name = {q.name: q for q in summary.queries}
    assert {q: by_name[q].matches for q in by_name} == detector.counts
    assert summary.tenants == {
        "t1": detector.counts["near_by_position"] + detector.counts["no_c_between"],
        "t2": detector.counts["consumed_across_keys"] + detector.counts["contiguous_by_key"],
        "t3": detector.counts["next_by_key"] + detector.counts["contiguous_by_key_and_j"],
    }
    near = by_name["near_by_position"]
    assert near.bound_units == 3 and near.over_bound is not None and near.over_bound > 0
    assert sum(summary.bins["near_by_position"]["matches"]) == near.matches
    # per query, the same cuts as in process; engine-side ms latency from the key groups'
    # histograms added: one per event its lane reads (wall time, so only its shape is checked)
    keyed = int((frame["type"] != "C").sum())  # C has no k: no partitioned lane reads it
    for name, row in in_process.items():
        q, query = by_name[name], next(w.checked.query for w in workload.queries if w.name == name)
        by_key = query.partition_by and query.consume != "ANY"  # consuming across keys runs as one partition
        assert q.cuts == row["cuts"] and q.latency_ms["events"] == (keyed if by_key else len(frame)), name
        ms = q.latency_ms
        assert 0 <= ms["p50"] <= ms["p99"] <= ms["max"] and 0 <= ms["mean"] <= ms["max"], (name, ms)
    absent = by_name["no_c_between"]
    # a bound in ms is not judged on a batch (every event arrives at once), and the summary says so (issue 38.4)
    assert absent.bound == "1e-06ms" and absent.latency_ms["events"] > 0
    assert absent.over_bound is None and absent.over_bound_share is None and not summary.ms_bounds_judged
    assert MS_NOT_JUDGED in summary.render() and summary.to_json()["ms_bounds_judged"] is False
    assert "ms mean / p50 / p99 / max" in summary.render() and summary.to_json()["queries"]["no_c_between"]["cuts"]
    # with a shedder, the bounds below the update floor are said before the run (issue 36)
    below = r"query near_by_position: its bound \(3 units\) is below the update floor"
    with pytest.warns(RuntimeWarning, match=below):
        shedding = run_detection(spark.createDataFrame(frame), workload, spark=spark, shedder="truncate")
    shedding.close()
    assert any(line.startswith("query no_c_between: its bound") for line in shedding.floor_warnings)


@pytest.mark.parametrize("latency", [False, True])
def test_cli_run_writes_matches_summary_and_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], latency: bool
) -> None:
    from sharp_cer.spark.summary import LATENCY_NOT_RECORDED

    out = tmp_path / "run"
    code = main(
        [
            "run",
            str(CONFIGS / "iot_sensors.toml"),
            "--generate",
            "2500",
            "--out",
            str(out),
            "--format",
            "jsonl",
            "--master",
            "local[2]",
            *(["--latency"] if latency else []),
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    workload = load_workload(CONFIGS / "iot_sensors.toml")
    truth = Detector.from_workload(workload, history=False)
    truth.feed(generate(workload.generator or "", 2500, seed=0))
    written = [
        json.loads(line) for f in sorted((out / "matches").glob("*.jsonl")) for line in f.read_text().splitlines()
    ]
    # --format jsonl writes .jsonl files (Spark names them .json)
    assert list((out / "matches").glob("*.jsonl")) and not list((out / "matches").glob("*.json"))
    assert Counter(m["query"] for m in written) == Counter({k: v for k, v in truth.counts.items() if v})
    summary = json.loads((out / "summary.json").read_text())
    assert {q: v["matches"] for q, v in summary["queries"].items()} == truth.counts
    assert (out / "latency.png").stat().st_size > 10_000
    # latency per event only when asked (--latency): then every event its engines saw, in ms too
    assert summary["latency_recorded"] is latency and (LATENCY_NOT_RECORDED in printed) is not latency
    seen = [v["latency_ms"].get("events", 0) for v in summary["queries"].values()]
    assert all(n > 0 for n in seen) if latency else not any(seen)
    for q in workload.queries:
        assert q.name in printed


def test_cli_run_says_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(CONFIGS / "iot_sensors.toml"), "--out", str(tmp_path)]) == 2
    assert "--events PATH, or --generate N" in capsys.readouterr().err


def test_trailing_absence_on_spark_equals_in_process(spark: Any) -> None:
    """A key group sees only its keys' events, so its own event time lags
    the stream's; at its end it moves to the input's last time, and the
    alerts (deadlines included) are the in-process ones."""
    from sharp_cer.spark import run_detection

    workload = parse_workload(WITH_SILENCE)
    frame = hand_made_events(600, 3)
    found = Detector.from_workload(workload).feed(frame)
    truth = Counter(
        (m.tenant, m.query, m.start, m.end, m.events, m.deadline) for m in found if m.query == "silent_after_a"
    )
    detection = run_detection(spark.createDataFrame(frame), workload, spark=spark, key_groups=3)
    try:
        rows = detection.matches.where("query = 'silent_after_a'").collect()
    finally:
        detection.close()
    got = Counter((r["tenant"], r["query"], r["start"], r["end"], tuple(r["events"]), r["deadline"]) for r in rows)
    assert sum(truth.values()) > 0 and got == truth


def test_nulls_in_json_on_spark_equal_in_process(spark: Any, tmp_path: Path) -> None:
    """JSON nulls in x and in the key k (issue 33.14) are nulls on Spark as
    in process: no dead letter, the same matches (a null key is in no
    partition; conditions on a null x are unknown)."""
    from sharp_cer.spark import run_detection

    workload = parse_workload(WITH_SILENCE)
    frame = hand_made_events(600, 5)
    rng = np.random.default_rng(5)
    for column in ("x", "k"):
        values = frame[column].astype("Int64")
        values[rng.random(len(frame)) < 0.15] = pd.NA
        frame[column] = values
    records = [{k: (None if v is pd.NA else v) for k, v in r.items()} for r in frame.to_dict("records")]
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(r, default=int) + "\n" for r in records))
    truth = expected(workload, frame)
    assert sum(truth.values()) > 0
    detection = run_detection(str(path), workload, spark=spark, key_groups=3)
    try:
        assert detection.dead_letters.count() == 0
        assert collected(detection) == truth
    finally:
        detection.close()


def test_join_events_gives_each_match_its_events_attributes(spark: Any) -> None:
    from sharp_cer.spark import run_detection

    workload = parse_workload(HAND_MADE)
    frame = hand_made_events(300, 5)
    detector = Detector.from_workload(workload)
    detector.feed(frame)
    detection = run_detection(spark.createDataFrame(frame), workload, spark=spark)
    try:
        rows = detection.matches_with_events().collect()
    finally:
        detection.close()
    joined: dict[tuple[Any, ...], dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        key = (r["query"], r["start"], r["end"], tuple(r["events"]))
        attributes = {a: r[a] for a in ("k", "x", "j", "t") if r[a] is not None}
        event = {"type": r["type"], "position": r["position"], **attributes}
        joined.setdefault(key, {}).setdefault(r["variable"], []).append(event)
    assert len(joined) == len({(m.query, m.start, m.end, m.events) for m in detector.matches}) > 0
    for m in detector.matches:
        mine = {
            v: sorted(events, key=lambda e: e["position"])
            for v, events in joined[(m.query, m.start, m.end, m.events)].items()
        }
        # each event once, under the variable the in-process record lists it (issue 35)
        assert mine == detector.alerts([m])[0]["attributes"]
        assert sum(map(len, mine.values())) == len({p for held in m.vars.values() for p in held})
