"""``--count`` costs like the update (issue 33 item 7): a counted query's
matches are counted per partition by sliding-window sums of per-start run
vectors (``engine.counting.WindowCounter``), not by walking the tECS; a
partition whose window values went back (a late event, an attribute
window) or was restored from a snapshot counts by walking. Exactness:
against the reference evaluator (hypothesis), with the engine's debug mode
checking every count of the counter against a walk of the tECS. Cost:
counted in work units (vector entries touched, nodes walked), not time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.cli import main
from sharp_cer.engine import Engine
from sharp_cer.engine.counting import Moves, WindowCounter
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, full_queries, late_streams, queries, streams, to_batch, to_late_batch

SETTINGS: Any = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
#: how far an ``x`` value of ``engine_cases``' streams may go back (they span 0..3)
X_SPAN = 4
ABC = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }")


def _counts(
    texts: list[str], batch: Any, size: int, lateness: int = 0
) -> tuple[dict[str, int], dict[str, int], Engine]:
    """The engine's counts (fed in batches of ``size``, in debug mode) and the reference's."""
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    expected = evaluate(named, batch, allowed_lateness=lateness)
    # x goes back by up to 3 in these streams: a window over [x] needs the engine told so (the engine's contract:
    # a window value goes back at most by its allowed lateness), as in test_engine_differential
    told = max(lateness, X_SPAN)
    engine = Engine(compile_plan(named, counting=True), debug=True, count_only=True, allowed_lateness=told)
    for lo in range(0, len(batch), size):
        assert engine.process(batch.take(list(range(lo, min(lo + size, len(batch)))))) == []
    counts = engine.stats()["matches"]
    return {name: counts.get(name, 0) for name, _ in named}, {n: len(expected.per_query[n]) for n, _ in named}, engine


def _summed(engine: Engine) -> int:
    return sum(runner.counts_summed for runner in engine.runners)


@settings(max_examples=120, **SETTINGS)
@given(st.lists(queries(depth=2), min_size=1, max_size=3), streams(max_size=22), st.integers(1, 6))
def test_counts_by_window_sums_equal_the_reference_s_matches(
    texts: list[str], rows: list[dict[str, Any]], size: int
) -> None:
    # streams longer than the windows (0-10 events, 0-6 s): starts leave, the counter flips
    got, want, _ = _counts(texts, to_batch(rows), size)
    assert got == want, texts


@settings(max_examples=60, **SETTINGS)
@given(st.lists(full_queries(depth=2), min_size=1, max_size=2), streams(max_size=16), st.integers(1, 4))
def test_counts_where_they_are_walked_or_enumerated_equal_the_reference_s(
    texts: list[str], rows: list[dict[str, Any]], size: int
) -> None:
    # strategies, cross-event filters, LIMIT, CONSUME BY: enumerated (or walked), not summed
    got, want, _ = _counts(texts, to_batch(rows), size)
    assert got == want, texts


@settings(max_examples=60, **SETTINGS)
@given(st.lists(queries(depth=2), min_size=1, max_size=2), late_streams(max_size=16), st.sampled_from([0, 2**31]))
def test_counts_with_late_events_fall_back_to_walking_and_stay_exact(
    texts: list[str], rows: list[dict[str, Any]], lateness: int
) -> None:
    got, want, _ = _counts(texts, to_late_batch(rows, lateness), 3, lateness)
    assert got == want, texts


def test_both_ways_are_taken_the_sums_in_order_and_the_walk_after_a_late_event() -> None:
    rows = [{"type": kind, "x": 0, "k": 0, "t": t} for kind, t in zip("ABBCABC", [0, 1, 2, 3, 4, 5, 6], strict=True)]
    in_order = [t * 10**9 for t in (0, 1, 2, 3, 4, 5, 6)]
    late = [t * 10**9 for t in (0, 1, 2, 3, 4, 2, 6)]  # the second B comes 2 s late
    for times, walked in ((in_order, False), (late, True)):
        for row, t in zip(rows, times, strict=True):
            row["t"] = t
        got, want, engine = _counts(["SELECT * WHERE A ; B+ ; C WITHIN 3 SECONDS"], to_late_batch(rows, 3 * 10**9), 2)
        assert got == want
        (runner,) = engine.runners
        assert runner.counts_summed > 0
        assert (runner.counts_walked > 0) == walked


def _work(window: int, n: int = 3000) -> tuple[int, int, int]:
    """Counting work (steps), matches and events of ``A ; B+ ; C WITHIN window EVENTS``
    over ``n`` uniformly random A/B/C events (seeded)."""
    types = np.random.default_rng(3).choice(["A", "B", "C"], n)
    batch = load_csv("".join(f"{t},{i}\n" for i, t in enumerate(types)), ABC)[0]
    query = parse_and_check(f"SELECT * WHERE A ; B+ ; C WITHIN {window} EVENTS", ABC)
    engine = Engine(compile_plan([("q", query)], counting=True), count_only=True)
    engine.process(batch)
    stats = engine.stats()
    return stats["enumeration_steps"], stats["matches"]["q"], n


def test_counting_work_per_event_does_not_grow_with_the_matches() -> None:
    # the same stream, windows of 30 and 600 events: up to ~2^5 and ~2^200 matches per C;
    # walking the tECS (before) visited ~window/3 nodes per event at the wider window
    narrow_steps, narrow_matches, n = _work(30)
    wide_steps, wide_matches, _ = _work(600)
    assert wide_matches > 2**100 * narrow_matches
    assert wide_steps <= 1.5 * narrow_steps
    assert wide_steps <= 25 * n  # a few vector entries per event: about the update's own units


def test_the_counter_equals_per_start_vectors_and_holds_no_more_than_its_window() -> None:
    # states 0 (initial), 1 (after A, B+ running), 2 (final, after C); the oracle keeps each
    # start's vector and moves it by hand; memory: the counter's entries stay within the window
    # A starts a run; B: a run in 1 marks it or skips it (two paths); C: a run in 1 may complete
    a: Moves = {0: (1,), 1: (1,)}
    b: Moves = {1: (1, 1)}
    c: Moves = {1: (1, 2)}
    kinds = np.random.default_rng(5).choice(3, 3000).tolist()
    counter = WindowCounter(lambda end: lambda start: end - start < 40, True)
    starts: list[tuple[int, dict[int, int]]] = []
    sizes = []
    for value, kind in enumerate(kinds):
        moves = (a, b, c)[kind]
        starts = [(s, _moved(v, moves)) for s, v in starts if value - s < 40]
        if kind == 0:
            starts.append((value, {1: 1}))
        assert counter.step(moves, 0 if kind == 0 else -1, value)
        assert counter.count([2]) == sum(v.get(2, 0) for _, v in starts)
        sizes.append(counter.live())
    assert max(sizes[1500:]) <= 2 * max(sizes[:1500]) <= 2 * 40 * 9


def _moved(vector: dict[int, int], moves: dict[int, tuple[int, ...]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for state, runs in vector.items():
        for target in moves.get(state, ()):
            out[target] = out.get(target, 0) + runs
    return out


def test_a_start_with_no_window_value_falls_back() -> None:
    counter = WindowCounter(lambda end: lambda start: end - start < 5, True)
    assert counter.step({0: (1,)}, 0, 1.0)
    assert not counter.step({1: (1,)}, -1, float("nan"))
    assert not counter.step({1: (1,)}, -1, 0.5)
    unbounded = WindowCounter(lambda end: lambda start: True, False)
    assert unbounded.step({0: (1,)}, 0, float("nan")) and unbounded.count([1]) == 1


def test_a_partition_restored_from_a_snapshot_counts_by_walking_and_exactly() -> None:
    types = np.random.default_rng(11).choice(["A", "B", "C"], 400).tolist()
    batch = load_csv("".join(f"{t},{i % 3}\n" for i, t in enumerate(types)), ABC)[0]
    query = parse_and_check("SELECT * WHERE A ; B+ ; C PARTITION BY [x] WITHIN 40 EVENTS", ABC)

    def engine() -> Engine:
        return Engine(compile_plan([("q", query)], counting=True), count_only=True, debug=True)

    whole = engine()
    whole.process(batch)
    first, second = engine(), engine()
    first.process(batch.take(list(range(200))))
    second.restore(first.snapshot())
    second.process(batch.take(list(range(200, 400))))
    assert second.stats()["matches"] == whole.stats()["matches"]
    assert second.runners[0].counts_walked > 0 and whole.runners[0].counts_walked == 0


def test_match_count_prints_what_the_reference_prints_as_starts_leave_the_window(tmp_path: Path, capsys: Any) -> None:
    types = np.random.default_rng(2).choice(["A", "B", "C"], 24).tolist()
    (tmp_path / "s.core").write_text("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }")
    (tmp_path / "q.ceql").write_text("SELECT * FROM S WHERE A ; B+ ; C WITHIN 5 EVENTS")
    (tmp_path / "ev.csv").write_text("".join(f"{t},{i}\n" for i, t in enumerate(types)))
    args = ["match", "--schema", str(tmp_path / "s.core"), "--query", str(tmp_path / "q.ceql")]
    args += ["--events", str(tmp_path / "ev.csv"), "--count"]
    outputs = []
    for engine in ("core", "reference"):
        assert main([*args, "--engine", engine]) == 0
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1] and outputs[0].startswith('{"query": "q", "count": ')
