"""Honest shedding surfaces (issue 36): without a shedder a bound is judged,
never enforced; the footer names what the shedder cut, by lever; a bound
below the update floor is said before the run (CLI and ``Detector``); a
bound missed while shedding comes with why; the recall kept is an estimate,
labelled as one."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sharp_cer.api import Detector
from sharp_cer.builder import DetectorBuilder, DetectorConfig
from sharp_cer.cli import main
from sharp_cer.engine.queueing import Pace
from sharp_cer.language import LatencyBound, Schema, parse_and_check
from sharp_cer.latency_summary import render

SCHEMA = "CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int }, EVENT C { v:int } }"
QUERY = "SELECT * FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER a.v < c.v WITHIN 10 EVENTS"


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    (tmp_path / "s.core").write_text(SCHEMA)
    (tmp_path / "q.ceql").write_text(QUERY)
    rng = np.random.default_rng(1)
    lines = ["type,v", *(f"{rng.choice(list('AABBBBBC'))},{rng.integers(0, 10)}" for _ in range(200))]
    (tmp_path / "ev.csv").write_text("\n".join(lines) + "\n")
    given = ["--schema", str(tmp_path / "s.core"), "--query", str(tmp_path / "q.ceql")]
    return ["match", *given, "--events", str(tmp_path / "ev.csv")]


def test_a_bound_without_a_shedder_is_judged_never_enforced(
    files: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(files) == 0
    every = capsys.readouterr().out.splitlines()
    stats = tmp_path / "stats.json"
    tight = ["--latency-bound", "1ms", "--rate", "500", "--capacity", "20000", "--stats", str(stats)]
    assert main([*files, *tight]) == 0
    out = capsys.readouterr()
    assert out.out.splitlines() == every  # nothing shed
    assert "no --shedder: the bound of 1ms is judged, not enforced" in out.err
    figures = json.loads(stats.read_text())
    q = figures["queries"]["q"]
    assert figures["shedder"] is None and q["bound_ms"] == 1 and q["latency"]["over_bound_share"] > 0
    assert sum(q["cuts"].values()) == 0


def test_the_python_api_without_a_shedder_only_judges_the_bound() -> None:
    s = Schema.parse(SCHEMA)
    queries = [("q", parse_and_check(QUERY, s))]
    builder = DetectorBuilder(s, queries, DetectorConfig(bound=LatencyBound(milliseconds=1), capacity=20_000))
    judged = Detector.from_builder(builder, record_latency=True, pace=Pace(rate=500))
    plain = Detector.from_queries(queries, s)
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"type": rng.choice(list("AABBBBBC"), 200), "v": rng.integers(0, 10, 200)})
    assert judged.shedder is None
    assert [m.key() for m in judged.feed(frame)] == [m.key() for m in plain.feed(frame)]
    row = judged.summary()["q"]
    assert row["bound_ms"] == 1 and row["latency"]["over_bound"] > 0 and "recall_kept_estimate" not in row


def test_the_footer_names_what_the_shedder_cut(
    files: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bound below the floor: truncate cuts input events for the floor,
    and says so (not just "N events"); the figures match the stats."""
    stats = tmp_path / "stats.json"
    args = ["--latency-bound", "1ms", "--rate", "500", "--capacity", "2000", "--shedder", "truncate"]
    assert main([*files, *args, "--stats", str(stats)]) == 0
    err = capsys.readouterr().err
    q = json.loads(stats.read_text())["queries"]["q"]
    floor, policy = q["shedder"]["events_shed_for_floor"], q["shedder"]["events_shed_by_group"]
    assert floor > 0 and policy == 0  # truncation has no input policy of its own
    assert (
        f"cut by truncate: {floor} input events while the wait and update alone passed a bound, 0 by its policy" in err
    )
    assert f"{q['cuts']['partial_matches']} partial matches; {q['cuts']['enumerations_cut_short']} enumerations" in err
    assert err.index("warning: query q: its bound") < err.index("cut by truncate")  # the floor, said first


def test_a_detector_says_a_bound_below_the_floor_before_it_runs() -> None:
    s = Schema.parse(SCHEMA)
    queries = [("q", parse_and_check(QUERY, s))]
    config = DetectorConfig(shedder="truncate", bound=LatencyBound(cost_units=1))
    detector = Detector.from_builder(DetectorBuilder(s, queries, config), record_latency=True)
    frame = pd.DataFrame({"type": list("ABBC") * 10, "v": [1, 2, 3, 4] * 10})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        detector.feed(frame)
        detector.feed(frame)
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1 and said == detector.floor_warnings
    assert said[0].startswith("query q: its bound (1 units) is below the update floor")


def test_a_bound_missed_while_shedding_comes_with_why_and_recall_is_an_estimate() -> None:
    """Two queries in one group, one reading an absence (NOT): input may not
    be shed, and the summary says so next to the events over the bound."""
    s = Schema.parse(SCHEMA)
    absent = "SELECT * FROM S WHERE A AS a ; NOT(A) ; C AS c WITHIN 10 EVENTS"
    queries = [("q", parse_and_check(QUERY, s)), ("absent", parse_and_check(absent, s))]
    config = DetectorConfig(shedder="truncate", bound=LatencyBound(cost_units=3))
    detector = Detector.from_builder(
        DetectorBuilder(s, queries, config), record_latency=True, capacity=1000, pace=Pace(rate=2000)
    )
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"type": rng.choice(list("AABBBBBC"), 300), "v": rng.integers(0, 10, 300)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        detector.feed(frame)
    summaries = detector.summary()
    row = summaries["q"]
    assert row["latency"]["over_bound_share"] > 0
    assert len(detector.plan.groups) == 1
    reason = "input shedding is forbidden: absent read an absence (NOT, ABSENT, ':') or are STRICT"
    assert reason in row["over_bound_why"]
    assert row["cuts"]["enumerations_cut_short"] > 0 and 0 <= row["recall_kept_estimate"] < 1
    text = render(summaries)
    assert f"q passed its bound: {reason}" in text
    assert "recall kept (an estimate from what was cut, not measured): q " in text


def test_nothing_cut_estimates_every_match_kept() -> None:
    s = Schema.parse(SCHEMA)
    queries = [("q", parse_and_check(QUERY, s))]
    config = DetectorConfig(shedder="sharp", bound=LatencyBound(cost_units=1e9))
    detector = Detector.from_builder(DetectorBuilder(s, queries, config), record_latency=True, capacity=1e6)
    detector.feed(pd.DataFrame({"type": list("ABBC") * 10, "v": [1, 2, 3, 4] * 10}))
    assert detector.summary()["q"]["recall_kept_estimate"] == 1.0


def _burst(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"type": rng.choice(list("AABBBBBC"), n), "v": rng.integers(0, 10, n)})


def test_input_shed_counts_in_the_recall_estimate_and_the_summary_names_the_shedder() -> None:
    """Issue 36: events shed at the floor lose matches too, so the recall
    estimate counts them (it counted only cut enumerations and partial
    matches: 0.50 here, where 3 of 75 matches are kept); the table names the
    shedder that cut."""
    s = Schema.parse(SCHEMA)
    queries = [("q", parse_and_check("SELECT * FROM S WHERE A AS a ; C AS c WITHIN 6 EVENTS", s))]
    frame = _burst(3, 400)
    every = len(Detector.from_queries(queries, s).feed(frame))
    config = DetectorConfig(shedder="truncate", bound=LatencyBound(cost_units=60))
    detector = Detector.from_builder(
        DetectorBuilder(s, queries, config), record_latency=True, capacity=1000, pace=Pace(rate=3000), check_floor=False
    )
    kept = len(detector.feed(frame))
    row = detector.summary()["q"]
    assert row["cuts"]["events"] > 10 * row["cuts"]["enumerations_cut_short"] and kept < every / 10
    assert row["recall_kept_estimate"] < 0.5
    assert "cut by truncate: events / PMs / enumerations" in str(detector.summary())


def test_a_query_never_shed_in_another_group_is_named_when_a_bound_is_missed() -> None:
    """A query that may not be shed (LIMIT) in a query group of its own still
    waits in the one server's queue: the summary names it among the reasons
    a shed query passed its bound, and a query cut without a match found says
    its recall is unknown, not 1.0."""
    s = Schema.parse(SCHEMA)
    queries = [
        ("q", parse_and_check(QUERY, s)),
        ("audit", parse_and_check("SELECT * FROM S WHERE B ; B WITHIN 30 EVENTS LIMIT 1000000", s)),
    ]
    config = DetectorConfig(shedder="value", bound=LatencyBound(cost_units=5))
    detector = Detector.from_builder(
        DetectorBuilder(s, queries, config), record_latency=True, capacity=1000, pace=Pace(rate=2000), check_floor=False
    )
    assert len(detector.plan.groups) == 2
    detector.feed(_burst(2, 300))
    summaries = detector.summary()
    row = summaries["q"]
    why = "audit may not be shed: its update and enumeration wait in the same queue, never cut"
    assert row["latency"]["over_bound_share"] > 0 and why in row["over_bound_why"]
    assert "audit" not in [r for r in summaries if "recall_kept_estimate" in summaries[r]]
    if row["matches"] == 0 and row["shedder"]["matches_lost_estimate"] == 0:
        assert row["recall_kept_estimate"] is None and "q unknown" in render(summaries)
