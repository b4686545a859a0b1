"""Snapshots of the engine's state (``Engine.snapshot`` / ``restore``):
random workloads over random streams, cut at a random event; the engine
snapshots there, the snapshot is pickled and restored into a fresh engine
of the same plan (whose determinizer has numbered no state yet), and that
engine processes the rest. Its matches before and after the cut equal the
uninterrupted run's, in order, and the reference evaluator's. A long tECS
chain pickles without recursion; a snapshot of another format version or
plan is refused."""

from __future__ import annotations

import pickle
import sys
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine
from sharp_cer.engine.state import FORMAT_VERSION
from sharp_cer.errors import EngineError
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, full_queries, queries, streams, to_batch

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def _cut_and_resume(texts: list[str], rows: list[dict[str, Any]], cut: int, skip: bool) -> None:
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    batch = to_batch(rows)
    plan = compile_plan(named)
    options: dict[str, Any] = {"debug": True, "allowed_lateness": 4, "cut_after": 1, "skip": skip}
    whole = Engine(plan, **options).process(batch)
    cut = min(cut, len(batch))
    first = Engine(plan, **options)
    before = first.process(batch.take(np.arange(cut)))
    blob = pickle.dumps(first.snapshot())
    second = Engine(compile_plan(named), **options)  # the same plan, compiled again
    second.restore(pickle.loads(blob))
    after = second.process(batch.take(np.arange(cut, len(batch))))
    assert [m.key() for m in before + after] == [m.key() for m in whole]
    expected = evaluate(named, batch)
    for name, _ in named:
        want = sorted(m.key() for m in expected.per_query[name])
        assert sorted(m.key() for m in before + after if m.query == name) == want, name
    # the counters go on from the snapshot as if never cut
    stats, resumed = first.stats(), second.stats()
    uninterrupted = Engine(plan, **options)
    uninterrupted.process(batch.take(np.arange(cut)))
    uninterrupted.process(batch.take(np.arange(cut, len(batch))))
    total = uninterrupted.stats()
    for key in ("events", "events_processed", "events_skipped", "partitions_evicted", "matches"):
        assert resumed[key] == total[key], key
    assert stats["events"] == cut


@settings(max_examples=150, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(), min_size=1, max_size=4), streams(), st.integers(0, 10), st.booleans())
def test_resume_from_a_snapshot(texts: list[str], rows: list[dict[str, Any]], cut: int, skip: bool) -> None:
    _cut_and_resume(texts, rows, cut, skip)


@settings(max_examples=150, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(full_queries(), min_size=1, max_size=3), streams(), st.integers(0, 10), st.booleans())
def test_resume_every_feature(texts: list[str], rows: list[dict[str, Any]], cut: int, skip: bool) -> None:
    _cut_and_resume(texts, rows, cut, skip)


KLEENE = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int }, EVENT C { k:int } }")


def test_a_long_chain_pickles() -> None:
    # A ; B+ ; C over thousands of B: each B extends the run by one node, a
    # chain far deeper than the recursion limit; the C completes every
    # nonempty subset of the B, counted without enumerating them
    text = "SELECT * WHERE A ; B+ ; C WITHIN 100000 EVENTS"
    plan = compile_plan([("q", parse_and_check(text, KLEENE))], counting=True)
    many = 3 * sys.getrecursionlimit()
    events = load_csv("A,1\n" + "B,1\n" * many + "C,1\n", KLEENE)[0]
    first = Engine(plan, count_only=True)
    first.process(events.take(np.arange(many + 1)))
    blob = pickle.dumps(first.snapshot())
    second = Engine(plan, count_only=True)
    second.restore(pickle.loads(blob))
    assert second.live_nodes() == first.live_nodes() > many
    second.process(events.take([many + 1]))
    assert second.stats()["matches"]["q"] == 2**many - 1


def _snapshot(text: str) -> Any:
    plan = compile_plan([("q", parse_and_check(text, KLEENE))])
    engine = Engine(plan)
    engine.process(load_csv("A,1\nB,1\n", KLEENE)[0])
    return engine.snapshot()


def test_another_format_version_is_refused() -> None:
    snapshot = replace(_snapshot("SELECT * WHERE A ; B WITHIN 5 EVENTS"), version=FORMAT_VERSION + 1)
    engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 5 EVENTS", KLEENE))]))
    with pytest.raises(EngineError, match=f"format version {FORMAT_VERSION}, and this one is of version"):
        engine.restore(snapshot)


def test_another_plan_is_refused() -> None:
    snapshot = _snapshot("SELECT * WHERE A ; B WITHIN 5 EVENTS")
    engine = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE A ; C WITHIN 5 EVENTS", KLEENE))]))
    with pytest.raises(EngineError, match=r"(?s)another plan .* hint: restore it into an engine of the same queries"):
        engine.restore(snapshot)


def test_the_state_does_not_depend_on_state_numbering() -> None:
    # the restoring engine's determinizer numbered its states in another
    # order (it saw a C first); the snapshot names states by their sets
    text = "SELECT * WHERE A ; B+ ; C WITHIN 9 EVENTS"
    plan = compile_plan([("q", parse_and_check(text, KLEENE))])
    first = Engine(plan)
    first.process(load_csv("A,1\nB,1\n", KLEENE)[0])
    second = Engine(plan)
    assert second.process(load_csv("B,1\nA,1\nC,1\n", KLEENE)[0]) == []
    second.restore(first.snapshot())
    events = load_csv("A,1\nB,1\nB,1\nC,1\n", KLEENE)[0]
    found = sorted(m.events for m in second.process(events.take([2, 3])))
    assert found == [(0, 1, 2, 3), (0, 1, 3), (0, 2, 3)]  # A, a nonempty subset of the B, C
