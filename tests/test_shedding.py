"""Load shedding's guarantees (issue 8, DESIGN.md §5), for Sharp and every
baseline:

* no bound, or one never reached: the output is the unshedded engine's;
* any bound: every output is a true match (against the reference
  evaluator), queries that are never shed (or have no bound) keep all their
  matches, and each event's latency in cost units is within the bound
  unless its update alone is not (then input shedding takes over);
* seeded runs are reproducible; weights order the selection.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.cli import _SHEDDER_NAMES, main
from sharp_cer.engine import Engine
from sharp_cer.engine.queueing import Pace
from sharp_cer.events.generators import sharp_ds1
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from sharp_cer.shedding import SHEDDERS, ShedConfig, make_shedder
from sharp_cer.shedding.sketch import HistoricalSketch
from tests.engine_cases import SCHEMA, shared_workloads, streams, to_batch

NAMES = sorted(SHEDDERS)

DS1 = Schema.parse(
    "CREATE STREAM DS1 { "
    + ", ".join(f"EVENT {t} {{ id:int, x:double, y:double, v:int, t:primary_time }}" for t in "ABCDEFGHIJ")
    + " }"
)
Q3 = "SELECT * FROM DS1 WHERE A AS a ; B AS b ; C AS c ; D AS d FILTER a.v < b.v WITHIN {w} EVENTS"


def _keys(matches: list[Any], name: str) -> list[Any]:
    return sorted(m.key() for m in matches if m.query == name)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(shared_workloads(max_size=6), streams(max_size=12), st.sampled_from(NAMES))
def test_a_bound_never_reached_changes_nothing(texts: list[str], rows: list[dict[str, Any]], name: str) -> None:
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    plan, batch = compile_plan(named), to_batch(rows)
    plain = Engine(plan, allowed_lateness=4).process(batch)
    config = ShedConfig(bounds={n: 1e12 for n, _ in named}, seed=1)
    shed = Engine(plan, allowed_lateness=4, shedder=make_shedder(name, config)).process(batch)
    assert [m.to_json() for m in shed] == [m.to_json() for m in plain]
    unbounded = Engine(plan, allowed_lateness=4, shedder=make_shedder(name, ShedConfig(bounds={})))
    assert [m.to_json() for m in unbounded.process(batch)] == [m.to_json() for m in plain]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(
    shared_workloads(max_size=6),
    streams(max_size=14),
    st.sampled_from(NAMES),
    st.integers(1, 80),
    st.data(),
)
def test_any_bound_outputs_true_matches_within_the_bound(
    texts: list[str], rows: list[dict[str, Any]], name: str, bound: int, data: st.DataObject
) -> None:
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    bounded = data.draw(st.sets(st.sampled_from([n for n, _ in named]), min_size=1))
    plan, batch = compile_plan(named), to_batch(rows)
    shedder = make_shedder(name, ShedConfig(bounds=dict.fromkeys(bounded, bound), seed=2))
    engine = Engine(plan, allowed_lateness=4, shedder=shedder, debug=True, record_latency=True)
    found = engine.process(batch)
    expected = evaluate(named, batch)
    for q in plan.queries:
        got, truth = _keys(found, q.name), sorted(m.key() for m in expected.per_query[q.name])
        if q.name in bounded and q.sheddable:
            assert set(got) <= set(truth), f"{name} invented a match of {q.checked.source.text}"
        else:
            assert got == truth, f"{name} shed {q.checked.source.text}, which has no bound or is never shed"
    assert engine.latency is not None
    for g, group in enumerate(plan.groups):
        floors = engine.latency.floor_units(g)
        for qid in group.queries:
            q = plan.queries[qid]
            if q.name in bounded and q.sheddable:
                units = engine.latency.units(g, q.name)
                assert (units <= np.maximum(bound, floors)).all()


def _reference(plan: Any, batch: Any) -> dict[str, float]:
    engine = Engine(plan, record_latency=True)
    engine.process(batch)
    assert engine.latency is not None
    return {q.name: float(engine.latency.units(0, q.name).max()) for q in plan.queries}


def _ds1(n: int, seed: int = 1) -> Any:
    batch, report = load_pandas(sharp_ds1(n, seed=seed), DS1)
    assert report.accepted == n
    return batch


def _dead_cluster_ds1(n: int, seed: int = 2) -> Any:
    """DS1 events of types A to C for ``A ; B ; C FILTER a.v < c.v``: half
    of the A events have a v (10^6) no C event's (below 1,000) exceeds,
    so their PMs, one cluster of the sketch, never end in a match."""
    frame = sharp_ds1(n, seed=seed)
    rng = np.random.default_rng(seed)
    frame["type"] = rng.choice(list("ABC"), n)
    frame["id"] = 1
    frame["v"] = np.where(frame["type"] == "A", rng.choice([1, 1_000_000], n), rng.integers(2, 1000, n))
    batch, _ = load_pandas(frame, DS1)
    return batch


DEAD = "SELECT * FROM DS1 WHERE A AS a ; B AS b ; {last} AS c FILTER a.v < c.v WITHIN 30 EVENTS"


def _q3_pair(window: int) -> list[tuple[str, Any]]:
    text = Q3.format(w=window)
    return [("q3", parse_and_check(text, DS1)), ("q4", parse_and_check(text.replace("; D AS d", "; E AS d"), DS1))]


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_latency_within_the_bound_for_99_percent_of_events(name: str) -> None:
    named = _q3_pair(100)
    plan, batch = compile_plan(named), _ds1(1500)
    plain = Engine(plan, record_latency=True)
    truth = plain.process(batch)
    assert plain.latency is not None
    bounds = {n: 0.1 * float(plain.latency.units(0, n).max()) for n, _ in named}
    config = ShedConfig(bounds=bounds, sketch_attributes={"q3": ["v"]})
    engine = Engine(plan, shedder=make_shedder(name, config), record_latency=True)
    found = engine.process(batch)
    assert engine.latency is not None
    for n, _ in named:
        units = engine.latency.units(0, n)
        assert np.mean(units <= bounds[n]) >= 0.99
        assert set(_keys(found, n)) <= set(_keys(truth, n))
        assert 0 < len(_keys(found, n)) < len(_keys(truth, n))  # the bound bites, and something is kept


@pytest.mark.parametrize("name", ["sharp", "random-state", "random-input", "darling"])
def test_seeded_runs_are_reproducible(name: str) -> None:
    named = _q3_pair(100)
    plan, batch = compile_plan(named), _ds1(1200)
    runs = []
    for _ in range(2):
        shedder = make_shedder(name, ShedConfig(bounds={"q3": 60, "q4": 60}, seed=7, sketch_attributes={"q3": ["v"]}))
        runs.append([m.to_json() for m in Engine(plan, shedder=shedder).process(batch)])
    assert runs[0] == runs[1]


NEVER_SHED = {
    "next": "SELECT NEXT * WHERE A ; B+ ; C WITHIN 8 EVENTS",
    "any": "SELECT * WHERE A ; B+ ; C WITHIN 8 EVENTS CONSUME BY ANY",
    "partition": "SELECT * WHERE A ; B+ ; C PARTITION BY [k] WITHIN 8 EVENTS CONSUME BY PARTITION",
    "limit": "SELECT * WHERE A ; B+ ; C WITHIN 8 EVENTS LIMIT 50",
    "strict": "SELECT STRICT * WHERE A ; B+ ; C WITHIN 8 EVENTS",
}


@pytest.mark.parametrize("name", NAMES)
def test_queries_whose_output_depends_on_other_output_are_never_shed(name: str) -> None:
    rng = np.random.default_rng(3)
    rows = [
        {"type": str(rng.choice(list("ABBBC"))), "x": int(rng.integers(0, 4)), "k": int(rng.integers(0, 2)), "t": i}
        for i in range(300)
    ]
    named = [(n, parse_and_check(text, SCHEMA)) for n, text in NEVER_SHED.items()]
    named.append(("all", parse_and_check("SELECT * WHERE A ; B+ ; C WITHIN 8 EVENTS", SCHEMA)))
    plan, batch = compile_plan(named), to_batch(rows)
    plain = Engine(plan).process(batch)
    shedder = make_shedder(name, ShedConfig(bounds=dict.fromkeys([n for n, _ in named], 3), seed=1))
    engine = Engine(plan, shedder=shedder)
    shed = engine.process(batch)
    for n in NEVER_SHED:
        assert _keys(shed, n) == _keys(plain, n), n
    assert set(_keys(shed, "all")) < set(_keys(plain, "all"))  # the one sheddable query was shed
    assert set(shedder.report()) == {"all"}


def test_the_heavier_of_two_equal_queries_keeps_at_least_the_lighter_recall() -> None:
    """Two copies of the dead-cluster query share a server of 100,000 units
    a second, events arriving 10 ms apart, each bounded at 0.5 ms (50
    units; the update floor is at most 7): unshedded, p99 is 2 and 4 ms,
    so both are overloaded and Sharp's selection sheds PMs for each
    (clusters larger than Eq. 3's room are shed in part). Only true matches
    come out (the unshedded run's), and the heavier keeps at least the
    lighter's recall."""
    text = DEAD.format(last="C")
    named = [("heavy", parse_and_check(text, DS1)), ("light", parse_and_check(text, DS1))]
    plan, batch = compile_plan(named), _dead_cluster_ds1(600)
    truth = Engine(plan).process(batch)  # the unshedded engine, differential-tested against the reference
    config = ShedConfig(
        bounds={},
        bounds_ms={"heavy": 0.5, "light": 0.5},
        weights={"heavy": 3.0, "light": 1.0},
        sketch_attributes={"heavy": ["v"], "light": ["v"]},
    )
    shedder = make_shedder("sharp", config)
    found = Engine(plan, shedder=shedder, capacity=100_000).process(batch, Pace(rate=100).arrivals(batch))
    report = shedder.report()
    recall = {}
    for n, _ in named:
        expected = set(_keys(truth, n))
        assert set(_keys(found, n)) <= expected, f"{n}: a match that is not one"
        assert report[n]["partial_matches_shed"] > 0, f"{n}: Sharp's selection shed no PM"
        recall[n] = len(_keys(found, n)) / len(expected)
    # one server: the heavier enumerates first and gets 3/4 of a tight budget
    assert shedder.groups[0].ranking() == [q.id for q in plan.queries]
    assert recall["light"] <= recall["heavy"] < 1


def test_a_bound_below_the_update_floor_sheds_input_and_says_so() -> None:
    named = _q3_pair(100)
    plan, batch = compile_plan(named), _ds1(1500)
    shedder = make_shedder("sharp", ShedConfig(bounds={"q3": 2, "q4": 2}))
    engine = Engine(plan, shedder=shedder, record_latency=True)
    engine.process(batch)
    report = shedder.report()
    assert report["q3"]["events_shed_for_floor"] > 0
    assert engine.stats()["events_shed"] == report["q3"]["events_shed_for_floor"]
    assert engine.latency is not None
    assert np.mean(engine.latency.units(0, "q3") <= np.maximum(2, engine.latency.floor_units(0))) == 1.0


def test_sketch_decays_so_it_follows_a_drift() -> None:
    sketch = HistoricalSketch(queries=1, buckets=2, epoch=10, decay=0.5)
    key = sketch.key(0, 1)
    for _ in range(10):  # one epoch where every PM with the key ends in a match
        sketch.created(key)
        sketch.matched(0, [key])
        sketch.tick()
    assert sketch.contribution(key, 0) == 1.0
    for _ in range(20):  # two epochs where none does
        sketch.created(key)
        sketch.tick()
    assert sketch.contribution(key, 0) < 0.25  # the old epoch weighs a quarter of each new one
    for _ in range(300):  # rescaling keeps the ratio
        sketch.tick()
    assert sketch.contribution(key, 0) < 0.25


def test_by_view_sheds_for_the_overloaded_query_only() -> None:
    # q4 shares q3's A and B states
    named = [(n, parse_and_check(DEAD.format(last=last), DS1)) for n, last in (("q3", "C"), ("q4", "B"))]
    plan, batch = compile_plan(named), _dead_cluster_ds1(600)
    truth = Engine(plan).process(batch)
    bound = 0.05 * _reference(plan, batch)["q3"]
    shedder = make_shedder("sharp", ShedConfig(bounds={"q3": bound}, sketch_attributes={"q3": ["v"]}))
    engine = Engine(plan, shedder=shedder)
    found = engine.process(batch)
    assert _keys(found, "q4") == _keys(truth, "q4")  # shares every state with q3 but has no bound
    assert shedder.report()["q3"]["partial_matches_shed"] > 0
    assert set(_keys(found, "q3")) < set(_keys(truth, "q3"))


def test_cli_match_sheds_and_writes_stats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.core").write_text("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int }, EVENT C { v:int } }")
    (tmp_path / "q.ceql").write_text(
        "SELECT * FROM S WHERE A AS a ; B+ AS b ; C AS c FILTER a.v < c.v WITHIN 10 EVENTS"
    )
    rng = np.random.default_rng(1)
    lines = ["type,v", *(f"{rng.choice(list('AABBBBBC'))},{rng.integers(0, 10)}" for _ in range(200))]
    (tmp_path / "ev.csv").write_text("\n".join(lines) + "\n")
    common = ["match", "--schema", str(tmp_path / "s.core"), "--query", str(tmp_path / "q.ceql")]
    common += ["--events", str(tmp_path / "ev.csv")]
    assert main([*common, "--count"]) == 0
    total = json.loads(capsys.readouterr().out.splitlines()[0])["count"]
    stats = tmp_path / "stats.json"
    args = [*common, "--latency-bound-fraction", "0.5", "--rate", "500", "--capacity", "20000"]
    args += ["--shedder", "random-state", "--seed", "5"]
    assert main([*args, "--stats", str(stats)]) == 0
    printed = capsys.readouterr().out.splitlines()
    figures = json.loads(stats.read_text())
    q = figures["queries"]["q"]
    assert q["matches"] == len(printed) < total
    assert q["latency"]["over_bound_share"] <= 0.01 and q["bound_ms"] > 0
    assert {"mean", "p50", "p99", "max"} <= set(q["latency"]["ms"]) and figures["shedder"] == "random-state"
    assert sum(q["cuts"].values()) > 0
    with pytest.raises(SystemExit):
        main([*args, "--latency-bound", "5"])
    assert "not allowed with argument" in capsys.readouterr().err
    assert main([*common, "--latency-bound", "50", "--count"]) == 2


def test_cli_knows_every_shedder() -> None:
    assert sorted(_SHEDDER_NAMES) == NAMES


@pytest.mark.parametrize("name", ["random-input", "darling", "hybrid", "sharp"])
def test_input_is_never_shed_where_a_dropped_event_would_invent_a_match(name: str) -> None:
    rng = np.random.default_rng(5)
    rows = [{"type": str(rng.choice(list("AABC"))), "x": 0, "k": 0, "t": i} for i in range(400)]
    named = [("gap", parse_and_check("SELECT * WHERE A ; ABSENT(C) ; B WITHIN 6 EVENTS", SCHEMA))]
    plan, batch = compile_plan(named), to_batch(rows)
    truth = _keys(Engine(plan).process(batch), "gap")
    shedder = make_shedder(name, ShedConfig(bounds={"gap": 2}, seed=1))
    engine = Engine(plan, shedder=shedder)
    assert set(_keys(engine.process(batch), "gap")) <= set(truth)
    assert engine.stats()["events_shed"] == 0 and shedder.report()["gap"]["floor_above_bound_events"] > 0
