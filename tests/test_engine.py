"""The engine on hand-computed cases: the tECS operations, iterative
enumeration, memory bounded by the window, partition eviction, the cost
clock, the determinization cache, lateness, unsupported features, and the
public API."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from sharp_cer.api import Detector, matches_to_arrow
from sharp_cer.engine import Engine
from sharp_cer.engine.enumeration import Walk, open_events
from sharp_cer.engine.runtime import CUT_AFTER, SWEEP_EVERY
from sharp_cer.engine.tecs import Node, bottom, check_node, extend, insert, merge, union
from sharp_cer.errors import EngineError, SurfaceError
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, to_batch


def rows(spec: str, **columns: list[Any]) -> list[dict[str, Any]]:
    out = []
    for i, kind in enumerate(spec.split()):
        row = {"type": kind, "x": 0, "k": 0, "j": 0, "t": i}
        row.update({name: values[i] for name, values in columns.items()})
        out.append(row)
    return out


def engine_for(*texts: str, **options: Any) -> Engine:
    named = [(f"q{i}", parse_and_check(t, SCHEMA)) for i, t in enumerate(texts)]
    return Engine(compile_plan(named), debug=True, **options)


def everything(node: Node) -> set[tuple[int, tuple[tuple[int, int], ...]]]:
    return set(open_events(node))


# ---------------------------------------------------------------- tECS


def test_union_gadgets_keep_every_open_event_once() -> None:
    # two union nodes of equal max-start 2, built from four runs
    b0, b1, b2, b2b = bottom(0, 0, 0), bottom(1, 1, 1), bottom(2, 2, 2), bottom(2, 2, 2)
    left = union(extend(b2, 5, 0), extend(b1, 6, 0))  # gadget (a)
    right = union(extend(b2b, 7, 0), extend(b0, 8, 0))
    both = union(left, right)  # gadget (c): right(left) has max-start 1 >= 0
    assert everything(both) == {(2, ((5, 0),)), (1, ((6, 0),)), (2, ((7, 0),)), (0, ((8, 0),))}
    flipped = union(right, left)  # gadget (d)
    assert everything(flipped) == everything(both)
    for node in (left, right, both, flipped, union(left, extend(b2, 9, 0))):  # (b) included
        check_node(node)


def test_union_list_insert_and_merge() -> None:
    ulist = [extend(bottom(5, 5, 5), 9, 0)]
    for label, start in enumerate((2, 4, 2, 0)):
        insert(ulist, extend(bottom(start, start, start), 9, label))
    assert [n.maxstart for n in ulist] == [5, 4, 2, 0]  # sorted, the two 2s united
    merged = merge(ulist)
    check_node(merged)
    assert sorted(s for s, _ in everything(merged)) == [0, 2, 2, 4, 5]


def test_enumeration_prunes_by_max_start() -> None:
    ulist = [extend(bottom(s, s, s), 9, 0) for s in (8, 5, 1)]
    walk = Walk(lambda key: 9 - key <= 4, lambda v: 9 - v <= 4)
    found = list(walk.run([merge(ulist)]))
    assert [b.pos for b, _ in found] == [8, 5]
    assert walk.steps == 6  # two unions, two outputs, two bottoms; the branch at 1 is never entered


def test_debug_mode_catches_a_broken_node() -> None:
    young, old = bottom(5, 5, 5), bottom(1, 1, 1)
    broken = Node(2, -1, -1, old, young, 1, 1, 0)  # left is older than right
    with pytest.raises(EngineError, match="not time-ordered"):
        check_node(broken)


def test_enumeration_is_iterative() -> None:
    # one match of 3,002 events: recursion would overflow Python's stack
    n = 3000
    engine = engine_for(f"SELECT * WHERE A : B:+ : C WITHIN {n + 5} EVENTS")
    (match,) = engine.process(to_batch(rows("A " + "B " * n + "C")))
    assert (match.start, match.end, len(match.events)) == (0, n + 1, n + 2)


# ---------------------------------------------------------------- memory and partitions


@pytest.mark.parametrize("window", [20, 80])
def test_live_nodes_stay_proportional_to_the_window(window: int) -> None:
    engine = engine_for(f"SELECT * WHERE A ; B ; C WITHIN {window} EVENTS")
    engine.debug = False  # the duplicate check would hold every match of an end event
    batch = to_batch(rows("A B C B A C " * 400))
    peak = 0
    for lo in range(0, len(batch), 100):
        engine.process(batch.take(list(range(lo, lo + 100))))
        peak = max(peak, engine.live_nodes())
    # about three nodes per event of the window stay reachable, plus at most
    # CUT_AFTER created since the last cut; everything older is freed
    assert 0 < peak <= 4 * (window + 1) + CUT_AFTER
    assert engine.clock.nodes_created > 10 * peak


def test_idle_partitions_are_evicted() -> None:
    n = 3 * SWEEP_EVERY
    engine = engine_for("SELECT * WHERE A ; B PARTITION BY [k] WITHIN 5 EVENTS")
    engine.process(to_batch(rows("A " * n, k=list(range(n)))))
    stats = engine.stats()
    assert stats["partitions"] <= SWEEP_EVERY
    assert stats["partitions_evicted"] >= n - SWEEP_EVERY


def test_a_sweep_inside_a_batch_judges_by_the_time_so_far() -> None:
    # key 1 opens a run at t=0 and closes it at row SWEEP_EVERY + 10 (t in
    # the window); key 2's fillers run the clock far past the window only
    # after that. A sweep at row SWEEP_EVERY once judged by the batch's
    # largest time and evicted key 1 (found by the Spark differential test).
    n = SWEEP_EVERY + 200
    second = 1_000_000_000
    times = [i * second for i in range(SWEEP_EVERY + 11)] + [10**6 * second] * (n - SWEEP_EVERY - 11)
    spec = "A " * (SWEEP_EVERY + 10) + "B " + "A " * (n - SWEEP_EVERY - 11)
    keys = [1] + [2] * (SWEEP_EVERY + 9) + [1] + [2] * (n - SWEEP_EVERY - 11)
    data = rows(spec, k=keys, t=times)
    text = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 2000 SECONDS"
    engine = engine_for(text)
    found = [(m.start, m.end) for m in engine.process(to_batch(data))]
    assert found == [(0, SWEEP_EVERY + 10)]
    assert found == [(m.start, m.end) for m in evaluate([("q", parse_and_check(text, SCHEMA))], to_batch(data)).matches]


def test_a_partition_without_live_runs_is_dropped_at_once() -> None:
    engine = engine_for("SELECT * WHERE A : B PARTITION BY [k] WITHIN 5 EVENTS")
    engine.process(to_batch(rows("B B C", k=[1, 2, 3])))
    assert engine.partitions() == 0


# ---------------------------------------------------------------- cost clock and cache


def test_cost_clock_counts_by_hand() -> None:
    engine = engine_for("SELECT * WHERE A ; B WITHIN 5 EVENTS")
    engine.process(to_batch(rows("A B")))
    clock = engine.clock
    # A: a bottom node, its marking move, an output node -> 3 units
    # B: no bottom node (a run starting at B dies at once, so none is made);
    # the run after A marks B (an output node) and skips it -> 3 units
    assert (clock.transitions, clock.nodes_created, clock.update_units) == (3, 3, 6)
    # enumeration at B visits output(B), output(A), bottom(A)
    assert clock.per_query["q0"].enumeration_steps == 3 and clock.per_query["q0"].matches == 1
    assert (clock.events, clock.max_event_units, clock.last_event_units) == (2, 6, 6)


def test_condition_checks_are_counted_per_atom_and_event() -> None:
    engine = engine_for("SELECT * WHERE A FILTER A[x > 1] WITHIN 5 EVENTS")
    engine.process(to_batch(rows("A B A", x=[0, 5, 3])))
    assert engine.clock.condition_checks == 2  # the B is never checked


def test_a_tiny_cache_evicts_and_stays_exact() -> None:
    text = "SELECT * WHERE A ; (B OR C)+ ; A WITHIN 6 EVENTS"
    data = rows("A B C A C B A B A C A A B")
    engine = engine_for(text, cache_capacity=4)
    found = sorted(m.key() for m in engine.process(to_batch(data)))
    expected = evaluate([("q0", parse_and_check(text, SCHEMA))], to_batch(data))
    assert found == sorted(m.key() for m in expected.matches)
    stats = engine.stats()
    assert stats["cache_evictions"] > 0 and 0 < stats["cache_hit_rate"] < 1


def test_the_cycle_collector_is_paused_only_while_a_batch_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    engine = engine_for("SELECT * WHERE A ; B WITHIN 3 EVENTS")
    during: list[bool] = []
    step = engine.runners[0].step
    monkeypatch.setattr(engine.runners[0], "step", lambda *a: during.append(gc.isenabled()) or step(*a))
    batch = to_batch(rows("A B"))
    assert gc.isenabled()
    assert len(engine.process(batch.take([0]))) == 0 and gc.isenabled()
    gc.disable()
    try:
        assert len(engine.process(batch.take([1]))) == 1 and not gc.isenabled()  # left as the caller had it
    finally:
        gc.enable()
    assert during == [False, False]


def test_cache_capacity_must_be_positive() -> None:
    with pytest.raises(EngineError, match="capacity of at least 1"):
        engine_for("SELECT * WHERE A WITHIN 1 EVENTS", cache_capacity=0)


# ---------------------------------------------------------------- windows and lateness


def test_attribute_window_over_values_that_go_back() -> None:
    text = "SELECT * WHERE A ; B WITHIN 3 [x]"
    data = rows("A A B A B B", x=[5, 1, 6, 0, 2, 7])
    expected = sorted(m.key() for m in evaluate([("q0", parse_and_check(text, SCHEMA))], to_batch(data)).matches)
    told = engine_for(text, allowed_lateness=10)
    assert sorted(m.key() for m in told.process(to_batch(data))) == expected
    assert told.late_window_values == 0
    untold = engine_for(text)
    untold.process(to_batch(data))
    assert untold.late_window_values == 3  # x=1, 0 and 2 go back past the running maximum


# ---------------------------------------------------------------- API


def test_detector_feeds_across_batches_like_one() -> None:
    frame = pd.DataFrame(rows("A B C A B C A C"))
    one = Detector.from_queries([("q", "SELECT * WHERE A ; C WITHIN 4 EVENTS")], SCHEMA)
    many = Detector.from_queries([("q", "SELECT * WHERE A ; C WITHIN 4 EVENTS")], SCHEMA, history=True)
    one.feed(frame)
    for lo in range(0, len(frame), 3):
        many.feed(frame.iloc[lo : lo + 3].reset_index(drop=True))
    assert [m.key() for m in many.matches] == [m.key() for m in one.matches]
    assert [(m.start, m.end) for m in one.matches] == [(0, 2), (3, 5), (3, 7), (6, 7)]


def test_detector_reports_bad_rows_and_keeps_positions() -> None:
    detector = Detector.from_queries([("q", "SELECT * WHERE A ; B WITHIN 4 EVENTS")], SCHEMA)
    frame = pd.DataFrame([*rows("A"), {"type": "Z", "x": 0, "k": 0, "j": 0, "t": 1}, *rows("B")])
    (match,) = detector.feed(frame)
    assert (match.start, match.end) == (0, 2)
    assert detector.reports[0].counts == {"unknown_type": 1}
    assert detector.events_of(match)["B"] == [{"type": "B", "position": 2, "x": 0, "k": 0, "j": 0, "t": 0}]


def test_matches_as_arrow() -> None:
    detector = Detector.from_queries([("q", "SELECT * WHERE A AS a ; B WITHIN 4 EVENTS")], SCHEMA)
    detector.feed(pd.DataFrame(rows("A B B")))
    table = matches_to_arrow(detector.matches).to_pylist()
    assert table == [
        {
            "query": "q",
            "tenant": None,
            "start": 0,
            "end": 1,
            "events": [0, 1],
            "vars": [("A", [0]), ("B", [1]), ("a", [0])],
            "deadline": None,
            "version": None,
        },
        {
            "query": "q",
            "tenant": None,
            "start": 0,
            "end": 2,
            "events": [0, 2],
            "vars": [("A", [0]), ("B", [2]), ("a", [0])],
            "deadline": None,
            "version": None,
        },
    ]


def test_detector_keeps_only_the_latest_feed_by_default() -> None:
    detector = Detector.from_queries([("q", "SELECT * WHERE A ; B WITHIN 4 EVENTS")], SCHEMA)
    (first,) = detector.feed(pd.DataFrame(rows("A B")))
    assert (first.start, first.end) == (0, 1) and detector.matches == [first]
    # positions 2, 3, 4; times go on from the first feed's (an earlier one would be late across feeds)
    found = detector.feed(pd.DataFrame(rows("B A B", t=[2, 3, 4])))
    assert detector.matches == found and [(m.start, m.end) for m in found] == [(0, 2), (0, 4), (3, 4)]
    across = found[0]
    assert detector.events_of(detector.matches[2])["B"] == [
        {"type": "B", "position": 4, "x": 0, "k": 0, "j": 0, "t": 4}
    ]
    for old in (first, across):  # their A at position 0 came in the first feed
        with pytest.raises(SurfaceError, match="history=True"):
            detector.events_of(old)
    assert len(detector.reports) == 1 and detector.reports[0].read == 3
