"""One way from a workload to a detector (``sharp_cer.builder``): the
Python API, the CLI's ``match`` and Spark's workers build the same detector
from the same workload, and ``match`` writes what it wrote before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sharp_cer.api import Detector
from sharp_cer.builder import DetectorBuilder, DetectorConfig
from sharp_cer.cli import main
from sharp_cer.language import LatencyBound, Schema, parse_and_check, parse_workload
from sharp_cer.spark.worker import Job, KeyGroupRun

WORKLOAD = """
[workload]
name = "w"
schema = "CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }"
capacity = 1000
allowed_lateness = 7

[[query]]
name = "ab"
tenant = "acme"
weight = 2
latency_bound = "50ms"
text = "SELECT * WHERE A ; B WITHIN 4 EVENTS"

[[query]]
name = "bb"
tenant = "zeta"
latency_bound = "40%"
sketch_attributes = ["k"]
text = "SELECT * WHERE B ; B PARTITION BY [k] WITHIN 5 EVENTS"

[[query]]
name = "kept"
tenant = "acme"
shed = false
latency_bound = "20"
text = "SELECT * WHERE A ; A WITHIN 3 EVENTS"
"""
#: 40 events, A and B with keys 1 to 3 (drawn once with a seed)
EVENTS = (
    "A,3\nA,2\nA,2\nB,2\nB,1\nA,2\nA,2\nB,3\nA,3\nB,2\nA,3\nA,2\nA,1\nA,3\nA,2\nA,2\nA,3\nA,2\nB,3\nA,2\n"
    "A,3\nA,2\nB,1\nB,3\nA,1\nB,1\nB,3\nB,3\nA,2\nB,3\nB,3\nB,3\nA,2\nA,3\nB,2\nA,2\nB,1\nB,3\nA,1\nB,2\n"
)
TENANTS = {"ab": "acme", "bb": "zeta", "kept": "acme"}


def _figures(detector: Detector) -> dict[str, Any]:
    """What the builder decides of a detector: tenants, lateness, capacity, judged bounds, shedder."""
    engine, shedder = detector.engine, detector.shedder
    assert engine.queue is not None
    config = shedder.config if shedder is not None else None
    return {
        "queries": [q.name for q in detector.plan.queries],
        "tenants": detector.tenants,
        "allowed_lateness": detector.allowed_lateness,
        "capacity": engine.server.capacity,
        "judged": (engine.queue.bounds_ms, engine.queue.bounds_units),
        "shedder": None if shedder is None else shedder.name,
        "shed": None
        if config is None
        else (config.bounds, config.bounds_ms, dict(config.weights), dict(config.sketch_attributes), config.seed),
    }


def _spark_detector(shedder: str | None, reference_ms: dict[str, float] | None) -> Detector:
    w = parse_workload(WORKLOAD)
    run = KeyGroupRun(Job(w, (tuple(q.name for q in w.queries),), 10, shedder=shedder, seed=3), 0)
    return run._detector(reference_ms)


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[Detector]:
    """The detectors ``Detector.from_builder`` builds (the CLI's)."""
    out: list[Detector] = []
    original = Detector.from_builder.__func__  # type: ignore[attr-defined]

    def keep(cls: type[Detector], *args: Any, **kwargs: Any) -> Detector:
        detector: Detector = original(cls, *args, **kwargs)
        out.append(detector)
        return detector

    monkeypatch.setattr(Detector, "from_builder", classmethod(keep))
    return out


def test_the_api_and_spark_build_the_same_shedding_detector() -> None:
    w = parse_workload(WORKLOAD)
    reference = {"ab": 30.0, "bb": 10.0, "kept": 5.0}
    api = _figures(Detector.from_workload(w, shedder="sharp", seed=3, reference_ms=reference, record_latency=True))
    spark = _figures(_spark_detector("sharp", reference))
    assert api == spark
    # by hand: kept is not shed (its bound is judged by no one); bb's 40 % of 10 ms; every query weighed
    assert spark["shed"] == ({}, {"ab": 50.0, "bb": 4.0}, {"ab": 2.0, "bb": 1.0, "kept": 1.0},
                             {"ab": (), "bb": ("k",), "kept": ()}, 3)  # fmt: skip
    assert (spark["tenants"], spark["allowed_lateness"], spark["capacity"]) == (TENANTS, 7, 1000.0)


def test_the_three_surfaces_build_the_same_detector_without_a_shedder(
    tmp_path: Path, built: list[Detector], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "w.toml").write_text(WORKLOAD)
    (tmp_path / "e.csv").write_text(EVENTS)
    assert main(["match", str(tmp_path / "w.toml"), "--events", str(tmp_path / "e.csv"), "--rate", "100"]) == 0
    capsys.readouterr()
    cli = _figures(built[-1])
    api = _figures(Detector.from_workload(parse_workload(WORKLOAD), record_latency=True))
    spark = _figures(_spark_detector(None, None))
    assert cli == api == spark
    # by hand: the bounds in ms and in units are judged; the fraction has no unshedded run to be taken of
    assert spark["judged"] == ({"ab": 50.0}, {"kept": 20.0})
    assert (spark["shedder"], spark["tenants"], spark["capacity"]) == (None, TENANTS, 1000.0)


def test_the_cli_bound_replaces_every_shed_querys_own(
    tmp_path: Path, built: list[Detector], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "w.toml").write_text(WORKLOAD)
    (tmp_path / "e.csv").write_text(EVENTS)
    argv = ["match", str(tmp_path / "w.toml"), "--events", str(tmp_path / "e.csv"), "--latency-bound", "5"]
    assert main([*argv, "--rate", "100", "--seed", "4", "--sketch-attribute", "k", "--shedder", "truncate"]) == 0
    capsys.readouterr()
    figures = _figures(built[-1])
    # by hand: kept (shed = false) keeps no bound; the others get 5 units, their weights and k once
    assert figures["shed"] == ({"ab": 5.0, "bb": 5.0}, {}, {"ab": 2.0, "bb": 1.0}, {"ab": ("k",), "bb": ("k",)}, 4)
    assert figures["judged"] == ({}, {"ab": 5.0, "bb": 5.0})  # the shedder's own bounds are judged
    assert (figures["shedder"], figures["tenants"], figures["capacity"]) == ("truncate", TENANTS, 1000.0)


def test_a_fraction_bound_needs_an_unshedded_run_and_is_taken_of_it() -> None:
    s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    queries = [("q", parse_and_check("SELECT * WHERE A WITHIN 1 EVENTS", s))]
    half = DetectorConfig(shedder="sharp", bound=LatencyBound(fraction=0.5))
    builder = DetectorBuilder(s, queries, half, allowed_lateness=3)
    assert builder.needs_reference
    assert (builder.shed_config({"q": 10.0}).bounds_ms, builder.tenants, builder.allowed_lateness) == (
        {"q": 5.0},
        {},
        3,
    )
    # without a shedder the one bound is judged (issue 36), and a fraction is still taken of an unshedded run
    judged = DetectorBuilder(s, queries, DetectorConfig(bound=LatencyBound(fraction=0.5)))
    assert judged.needs_reference and judged.judged_bounds({"q": 10.0}) == ({"q": 5.0}, {})
    assert not DetectorBuilder(
        s, queries, DetectorConfig(shedder="sharp", bound=LatencyBound(milliseconds=9))
    ).needs_reference
    with pytest.raises(Exception, match="needs the latency measured without shedding"):
        builder.shed_config()


#: what ``sharp-cer match w.toml --events e.csv --limit 5`` wrote before the builder (0.1's cli.py)
LIMITED = [
    {"query": "kept", "tenant": "acme", "start": 0, "end": 1, "events": [0, 1], "vars": {"A": [0, 1]}},
    {"query": "kept", "tenant": "acme", "start": 0, "end": 2, "events": [0, 2], "vars": {"A": [0, 2]}},
    {"query": "kept", "tenant": "acme", "start": 1, "end": 2, "events": [1, 2], "vars": {"A": [1, 2]}},
    {"query": "ab", "tenant": "acme", "start": 1, "end": 3, "events": [1, 3], "vars": {"A": [1], "B": [3]}},
    {"query": "ab", "tenant": "acme", "start": 2, "end": 3, "events": [2, 3], "vars": {"A": [2], "B": [3]}},
]


def _match(tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[list[Any], str]:
    (tmp_path / "w.toml").write_text(WORKLOAD)
    (tmp_path / "e.csv").write_text(EVENTS)
    assert main(["match", str(tmp_path / "w.toml"), "--events", str(tmp_path / "e.csv"), *flags]) == 0
    out, err = capsys.readouterr()
    return [json.loads(line) for line in out.splitlines()], err


def test_match_with_tenants_and_a_limit_writes_what_it_wrote_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    limited, err = _match(tmp_path, capsys, "--limit", "5")
    assert limited == LIMITED
    footer = next(line for line in err.splitlines() if line.startswith("matches: "))
    assert footer.startswith("matches: ab=2, bb=0, kept=3;") and footer.endswith("; stopped after --limit 5 matches")


def test_match_without_a_limit_writes_the_reference_evaluators_matches_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    engine, _ = _match(tmp_path, capsys)
    reference, _ = _match(tmp_path, capsys, "--engine", "reference")
    assert engine == reference and len(engine) == 90
    assert {m["query"]: m["tenant"] for m in engine} == TENANTS
    assert _match(tmp_path, capsys, "--engine", "reference", "--limit", "7")[0] == reference[:7]
