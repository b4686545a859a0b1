"""Counting and crowded events in the compiled core (issue 37).

``count_only`` (``sharp-cer match --count``): a query group with no query
counted on the tECS without a walk (``QueryPlan.counted``) runs in the core,
its matches counted in C as the output path would put them out
(``_lines.counts``). Counted against the reference evaluator and the
Python engine (counts and figures equal), on random queries with every
option (strategies, LIMIT, CONSUME BY, cross-event filters, projections).

An event with more matches of one query than ``EVENT_BLOCK`` goes out in
blocks (``QueryGroupRunner._plain``); the core's C lines now write those
blocks too, emitted in the same lists as the Python path's. And at the
command line, ``--count`` prints, per query, the number of lines ``--out``
writes, on both engines.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.cli import main
from sharp_cer.engine import Engine, native, runtime
from sharp_cer.events.generators import generate, write_core_csv
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, load_workload, parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, full_queries, queries, streams, to_batch

compiled_only = pytest.mark.skipif(not native.available(), reason="the compiled core is not built (or SHARP_CER_PURE)")
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
CONFIGS = Path(__file__).resolve().parent.parent / "configs"
#: the figures both engines must agree on when counting
FIGURES = ("events", "transitions", "nodes_created", "enumeration_steps", "matches", "events_processed")


def _pure(engine: Engine) -> Engine:
    """The engine with every query group on the Python path (as SHARP_CER_PURE=1 makes it)."""
    for runner in engine.runners:
        runner.core = None
    return engine


def _feed(engine: Engine, batch: Any, size: int | None) -> None:
    if not size or not len(batch):
        assert engine.process(batch) == []
        return
    for lo in range(0, len(batch), size):
        assert engine.process(batch.take(list(range(lo, min(lo + size, len(batch)))))) == []


def _counts(texts: list[str], rows: list[dict[str, Any]], size: int | None) -> None:
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    batch = to_batch(rows)
    plan = compile_plan(named, counting=True)
    fast = Engine(plan, allowed_lateness=4, count_only=True)
    slow = _pure(Engine(plan, allowed_lateness=4, count_only=True))
    _feed(fast, batch, size)
    _feed(slow, batch, size)
    fast_stats, slow_stats = fast.stats(), slow.stats()
    assert {k: fast_stats[k] for k in FIGURES} == {k: slow_stats[k] for k in FIGURES}
    expected = evaluate(named, batch)
    for name, text in named:
        assert fast_stats["matches"].get(name, 0) == len(expected.per_query[name]), text.source.text


@compiled_only
@settings(max_examples=150, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(full_queries(), min_size=1, max_size=3), streams(), st.sampled_from([None, 1, 3]))
def test_counts_in_the_core_equal_the_reference_and_python(
    texts: list[str], rows: list[dict[str, Any]], size: Any
) -> None:
    _counts(texts, rows, size)


@compiled_only
@settings(max_examples=60, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(negation=True), min_size=1, max_size=3), streams(max_size=14))
def test_counts_of_plain_queries_equal_the_reference_and_python(texts: list[str], rows: list[dict[str, Any]]) -> None:
    _counts(texts, rows, None)


@compiled_only
def test_which_counting_groups_the_core_takes() -> None:
    def runner(text: str) -> Any:
        plan = compile_plan([("q", parse_and_check(text, SCHEMA))], counting=True)
        return Engine(plan, count_only=True).runners[0]

    # enumerated to be counted on the Python path too: the core enumerates it and counts in C
    filtered = "SELECT * WHERE (A AS a ; B+ AS b) FILTER a.x < sum(b.x) WITHIN 5 EVENTS"
    assert runner(filtered).core is not None
    assert runner("SELECT NEXT * WHERE A ; B+ WITHIN 5 EVENTS").core is not None
    # counted without a walk (a partition's counter, sums over the window): left to the Python path
    counted = runner("SELECT * WHERE A ; B+ WITHIN 5 EVENTS")
    assert counted.core is None
    assert native.ineligible(counted) == "a query counted without enumeration (count_only)"


@compiled_only
def test_a_counted_event_crowded_past_the_block_counts_each_block(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2^4 - 1 = 15 matches at the C, in blocks of 4; two of one block share their projected events
    monkeypatch.setattr(runtime, "EVENT_BLOCK", 4)
    schema = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }")
    text = "".join(f"{kind},{x}\n" for kind, x in [("A", 0), ("B", 1), ("B", 2), ("B", 3), ("B", 4), ("C", 5)])
    batch, _ = load_csv(text, schema)
    for query, want in [
        ("SELECT * WHERE A ; B+ ; C FILTER A[x < 9] AND count(B) > 0 WITHIN 8 EVENTS", 15),
        ("SELECT A, C WHERE A ; B+ ; C FILTER count(B) > 0 WITHIN 8 EVENTS", None),
    ]:
        plan = compile_plan([("q", parse_and_check(query, schema))], counting=True)
        fast = Engine(plan, count_only=True)
        assert fast.runners[0].core is not None
        slow = _pure(Engine(plan, count_only=True))
        fast.process(batch)
        slow.process(batch)
        got = fast.stats()["matches"]["q"]
        assert got == slow.stats()["matches"]["q"]
        if want is not None:
            assert got == want
        else:  # one (start, events) per block of 4 in walk order: 4 blocks, so 4 lines (what --out writes)
            assert got == 4


@compiled_only
@settings(max_examples=80, **SETTINGS)  # type: ignore[arg-type]
@given(queries(), streams(max_size=14), st.sampled_from([1, 2, 3]), st.sampled_from([1, 2, 5]))
def test_crowded_events_go_out_in_the_same_blocks_as_python(
    text: str, rows: list[dict[str, Any]], block: int, flush_at: int
) -> None:
    named = [("q", parse_and_check(text, SCHEMA))]
    batch = to_batch(rows)
    plan = compile_plan(named)
    tenants = {"q": "acme"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "EVENT_BLOCK", block)
        patch.setattr(runtime, "FLUSH_AT", flush_at)
        fast, slow = Engine(plan), _pure(Engine(plan))
        got: list[list[str]] = []
        want: list[list[str]] = []
        assert fast.process_lines(batch, tenants, emit=got.append) == []
        assert slow.process_lines(batch, tenants, emit=want.append) == []
    assert got == want  # the same lines in the same lists
    assert (fast.crowded_events, fast.crowded_at) == (slow.crowded_events, slow.crowded_at)
    assert fast.stats()["matches"] == slow.stats()["matches"]


def _lines_per_query(path: Path) -> dict[str, int]:
    return dict(Counter(json.loads(line)["query"] for line in path.read_text().splitlines()))


@pytest.mark.parametrize("pure", [False, True])
def test_count_prints_the_lines_out_writes(
    pure: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    if pure:
        monkeypatch.setattr(native, "_CORE", None)  # what SHARP_CER_PURE=1 makes at import
    elif not native.available():
        pytest.skip("the compiled core is not built (or SHARP_CER_PURE)")
    workload = CONFIGS / "iot_sensors.toml"
    spec = load_workload(workload)
    assert spec.generator is not None
    events = tmp_path / "events.csv"
    attributes = {e.name: list(e.attributes) for e in spec.schema.event_types()}
    write_core_csv(generate(spec.generator, 6000, seed=0), attributes, events)
    out = tmp_path / "m.jsonl"
    assert main(["match", str(workload), "--events", str(events), "--out", str(out)]) == 0
    written = capsys.readouterr().err
    assert main(["match", str(workload), "--events", str(events), "--count"]) == 0
    captured = capsys.readouterr()
    counts = {row["query"]: row["count"] for row in map(json.loads, captured.out.splitlines())}
    lines = _lines_per_query(out)
    assert sum(lines.values()) > 50  # matches of several queries to count
    assert counts == {q.name: lines.get(q.name, 0) for q in spec.queries}
    engine = "compiled core" if not pure else "pure Python"
    assert engine in captured.err.splitlines()[-1] and engine in written.splitlines()[-1]
    if not pure:  # the groups with no query counted without a walk ran compiled
        assert "compiled core (Cython C++) for 5 of 8 query groups" in captured.err


@settings(max_examples=80, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(full_queries(), min_size=2, max_size=3), streams(max_size=14), st.sampled_from([1, 2, 5]))
def test_ranked_lines_of_several_groups_order_as_the_reference(
    texts: list[str], rows: list[dict[str, Any]], flush_at: int
) -> None:
    # what ``sharp-cer match`` writes for several queries: (end, rank, line), ordered by (end, rank)
    # as they came within, is the reference's order (end, query as given, start, events), both engines
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    batch = to_batch(rows)
    ranks = {name: len(named) - 1 - k for k, (name, _) in enumerate(named)}  # not the plan's order
    expected = sorted(evaluate(named, batch).matches, key=lambda m: (m.end, ranks[m.query], m.start, m.events))
    plan = compile_plan(named)
    for pure in (False, True):
        engine = Engine(plan, allowed_lateness=4)
        if pure:
            _pure(engine)
        got: list[Any] = []
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(runtime, "FLUSH_AT", flush_at)
            assert engine.process_lines(batch, {}, emit=got.extend, ranks=ranks) == []
        assert [end for end, _, _ in got] == sorted(end for end, _, _ in got)  # in end order
        lines = [line for _, _, line in sorted(got, key=lambda item: item[:2])]
        assert lines == [m.to_json() for m in expected], "the compiled core" if not pure else "the Python engine"
