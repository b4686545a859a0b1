"""The plain enumeration path against the general one and the reference
evaluator. A query with no strategy, LIMIT or STRICT check, run without a
shedder, a match quota or ``debug``, builds its matches straight from the
walk (``QueryGroupRunner._enumerate``): no candidate list, and the choice among
matches that share their interval and events only when two do. ``debug``
takes the general path (it checks every candidate against the tECS
invariants), so the two are compared on random workloads: the same matches,
variables and order, line for line. ``Detector.feed_lines`` (one query's
lines, built without Match objects on the plain path) is compared with the
lines of ``feed``'s matches."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.api import Detector
from sharp_cer.engine import Engine
from sharp_cer.errors import EngineError
from sharp_cer.events.batch import EventBatch
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, full_queries, queries, streams, to_batch

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def chunks(rows: list[dict[str, Any]], size: int | None) -> list[EventBatch]:
    """The stream in batches of ``size`` (None: one)."""
    batch = to_batch(rows)
    size = size or max(len(batch), 1)
    return [batch.take(list(range(lo, min(lo + size, len(batch))))) for lo in range(0, len(batch), size)]


def lines(texts: list[str], rows: list[dict[str, Any]], *, debug: bool, size: int | None = None) -> list[str]:
    """Every match's output line, in the engine's order (batches of ``size``)."""
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    engine = Engine(compile_plan(named), debug=debug, allowed_lateness=4)
    return [m.to_json() for part in chunks(rows, size) for m in engine.process(part)]


def fed_lines(text: str, rows: list[dict[str, Any]], size: int | None = None, tenant: str | None = None) -> list[str]:
    """``Detector.feed_lines`` of one query (the lines built without Match objects)."""
    plan = compile_plan([("q0", parse_and_check(text, SCHEMA))])
    detector = Detector(plan, SCHEMA, allowed_lateness=4, tenants={"q0": tenant} if tenant else None)
    return [line for part in chunks(rows, size) for line in detector.feed_lines(part)]


def check(texts: list[str], rows: list[dict[str, Any]], size: int | None = None) -> None:
    plain = lines(texts, rows, debug=False, size=size)
    assert plain == lines(texts, rows, debug=True, size=size)
    for i in range(len(texts)):
        # one query's matches by end, start, then events (what `sharp-cer match` writes unsorted)
        mine = [json.loads(line) for line in plain if json.loads(line)["query"] == f"q{i}"]
        assert mine == sorted(mine, key=lambda m: (m["end"], m["start"], m["events"]))
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    expected = evaluate(named, to_batch(rows))
    assert sorted(plain) == sorted(m.to_json() for m in expected.matches)


@settings(max_examples=200, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(), min_size=1, max_size=4), streams(), st.sampled_from([None, 1, 3]))
def test_plain_queries_match_the_general_path_and_the_reference(
    texts: list[str], rows: list[dict[str, Any]], size: int | None
) -> None:
    check(texts, rows, size)


@settings(max_examples=300, **SETTINGS)  # type: ignore[arg-type]
@given(st.one_of(queries(), full_queries()), streams(), st.sampled_from([None, 1, 3]), st.sampled_from([None, "t"]))
def test_one_query_s_lines_equal_its_matches_lines(
    text: str, rows: list[dict[str, Any]], size: int | None, tenant: str | None
) -> None:
    # the lines `sharp-cer match` writes for one query, built without Match objects where the query is plain
    named = [("q0", parse_and_check(text, SCHEMA))]
    detector = Detector(compile_plan(named), SCHEMA, allowed_lateness=4, tenants={"q0": tenant} if tenant else None)
    expected = [m.to_json() for part in chunks(rows, size) for m in detector.feed(part)]
    assert fed_lines(text, rows, size, tenant) == expected


@settings(max_examples=150, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(full_queries(), min_size=1, max_size=3), streams())
def test_plain_and_choosing_queries_together(texts: list[str], rows: list[dict[str, Any]]) -> None:
    # strategies, LIMIT and STRICT keep the general path beside plain queries
    check(texts, rows)


def test_matches_sharing_interval_and_events_keep_the_smallest_variables() -> None:
    # each A can be x or y: four labelings of {0, 1, 2}, one output (hand-computed:
    # x=[0], y=[1] sorts before x=[0, 1], x=[1], y=[0] and y=[0, 1])
    rows = [{"type": t, "x": 1, "k": 0, "j": 0, "t": i} for i, t in enumerate("AAB")]
    text = "SELECT * WHERE (A AS y OR A AS x)+ ; B WITHIN 5 EVENTS"
    found = lines([text], rows, debug=False)
    assert fed_lines(text, rows) == found
    head = '{"query": "q0", "tenant": null, '
    assert found == [
        head + '"start": 0, "end": 2, "events": [0, 1, 2], "vars": {"A": [0, 1], "B": [2], "x": [0], "y": [1]}}',
        head + '"start": 0, "end": 2, "events": [0, 2], "vars": {"A": [0], "B": [2], "x": [0]}}',
        head + '"start": 1, "end": 2, "events": [1, 2], "vars": {"A": [1], "B": [2], "x": [1]}}',
    ]


def test_lines_of_several_groups_are_refused_with_a_hint() -> None:
    # matches of several groups are ordered by their ends, which lines no longer show
    texts = ["SELECT * WHERE A ; B WITHIN 3 EVENTS", "SELECT * WHERE A ; C WITHIN 2 [t]"]
    engine = Engine(compile_plan([(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]))
    assert len(engine.runners) == 2
    with pytest.raises(EngineError, match=r"(?s)one query group, found 2.*hint: use Detector\.feed_lines"):
        engine.process_lines(to_batch([{"type": "A", "x": 1, "k": 0, "j": 0, "t": 0}]), {"q0": None, "q1": None})
