"""Events too far from the rest of their partition to be in a match are not
stepped (``sharp_cer.engine.density``): the matches are exactly the
reference evaluator's, in batches of any size, and the test refuses every
query where an event outside a match can change the output. The batch-size
threshold is lowered to 0 so that the small drawn streams are tested."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine, density
from sharp_cer.engine.density import Density, far
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, SECOND, full_queries, queries, streams, to_batch
from tests.test_engine_differential import SETTINGS, check


@st.composite
def sparse_streams(draw: st.DrawFn, max_size: int = 24) -> list[dict[str, Any]]:
    """Events of three partitions (k) with gaps of up to 8 seconds, so that
    some events have no neighbour of their partition in a short window."""
    t = 0
    rows = []
    for _ in range(draw(st.integers(0, max_size))):
        t += draw(st.sampled_from([0, SECOND, 2 * SECOND, 8 * SECOND]))
        kind = draw(st.sampled_from(["A", "B", "C", "D"]))
        row = {"type": kind, "x": draw(st.integers(0, 3)), "k": draw(st.integers(0, 2)), "t": t}
        if kind != "D":
            row["j"] = draw(st.integers(0, 1))
        rows.append(row)
    return rows


@st.composite
def dense_queries(draw: st.DrawFn) -> str:
    """Partitioned sequences of two to four events (some a Kleene or an OR)
    in a short window of each kind: the queries the test applies to."""
    parts = draw(st.lists(st.sampled_from(["A", "B", "C", "B+", "(A OR C)", "AND(A, B)"]), min_size=2, max_size=4))
    text = f"SELECT * WHERE {' ; '.join(parts)} PARTITION BY {draw(st.sampled_from(['[k]', '[j]', '[k, j]']))}"
    window = draw(st.sampled_from(["events", "time", "t", "x"]))
    if window == "events":
        return text + f" WITHIN {draw(st.integers(0, 6))} EVENTS"
    if window == "time":
        return text + f" WITHIN {draw(st.integers(0, 4))} SECONDS"
    if window == "t":
        return text + f" WITHIN {draw(st.sampled_from([1, SECOND, 2 * SECOND + 1, 4 * SECOND]))} [t]"
    return text + f" WITHIN {draw(st.integers(1, 3))} [x]"  # x falls: the engine's lateness covers it


def checked(texts: list[str], rows: list[dict[str, Any]], size: int | None) -> None:
    with patch.object(density, "SMALLEST_BATCH", 0):
        check(texts, rows, batch_sizes=size)


@settings(max_examples=400, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(dense_queries(), min_size=1, max_size=3), sparse_streams(), st.sampled_from([None, 1, 3, 7]))
def test_dense_queries_match_the_reference(texts: list[str], rows: list[dict[str, Any]], size: int | None) -> None:
    checked(texts, rows, size)


@settings(max_examples=300, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(full_queries(depth=2), min_size=1, max_size=3), streams(max_size=14), st.sampled_from([None, 4]))
def test_every_feature_matches_the_reference(texts: list[str], rows: list[dict[str, Any]], size: int | None) -> None:
    # strategies, consumption, LIMIT, NOT, ABSENT and contiguity: refused, or exact
    checked(texts, rows, size)


@settings(max_examples=200, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(depth=2), min_size=1, max_size=3), sparse_streams(max_size=14))
def test_plain_queries_on_sparse_streams(texts: list[str], rows: list[dict[str, Any]]) -> None:
    checked(texts, rows, None)


def _density(text: str) -> Density | None:
    plan = compile_plan([("q", parse_and_check(text, SCHEMA))])
    return Density.of(plan.groups[0], plan.queries, 0)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * WHERE A ; NOT(C) ; B PARTITION BY [k] WITHIN 3 EVENTS",
        "SELECT * WHERE A ; ABSENT(C) ; B PARTITION BY [k] WITHIN 3 EVENTS",
        "SELECT * WHERE A : B PARTITION BY [k] WITHIN 3 EVENTS",
        "SELECT * WHERE A ; B:+ PARTITION BY [k] WITHIN 3 EVENTS",
        "SELECT NEXT * WHERE A ; B PARTITION BY [k] WITHIN 3 EVENTS",
        "SELECT STRICT * WHERE A ; B PARTITION BY [k] WITHIN 3 EVENTS",
        "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 3 EVENTS CONSUME BY ANY",
        "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 3 EVENTS LIMIT 1",
        "SELECT * WHERE A ; B PARTITION BY [k]",  # no window
        "SELECT * WHERE A OR (A ; B) PARTITION BY [k] WITHIN 3 EVENTS",  # one event can be a match
        "SELECT * WHERE A ; B WITHIN 3 EVENTS",  # one partition: see Density.of
    ],
)
def test_refused_where_events_outside_a_match_count(text: str) -> None:
    assert _density(text) is None


def test_fewest_events_and_window_of_a_group() -> None:
    found = _density("SELECT * WHERE A ; B+ ; AND(A, C) PARTITION BY [k] WITHIN 2 SECONDS")
    assert found == Density(fewest=4, bound=2 * SECOND, inclusive=True, margin=2 * SECOND)
    assert _density("SELECT * WHERE A ; B PARTITION BY [j] WITHIN 5 [x]") == Density(2, 5, False, 5)


def test_a_run_must_fit_the_window_strictly_for_an_attribute_window() -> None:
    # hand-computed: partition 0 holds values 0, 10, 20, 30, 40 and 45; with
    # runs of 2 spanning less than 10 only 40 and 45 fit; ``inclusive`` adds all
    codes = np.zeros(6, dtype=np.int64)
    values = np.array([0, 10, 20, 30, 40, 45])
    assert far(codes, values, 2, 10, False, 0).tolist() == [False, True, True, True, False, False]
    assert far(codes, values, 2, 10, True, 0).tolist() == [False] * 6


def test_values_that_fall_or_are_missing_or_too_far_apart_leave_the_batch_whole() -> None:
    codes = np.array([0, 0, 0, 1, 0, 0])
    assert far(codes, np.array([0, 50, 40, 0, 100, 200]), 2, 1, True, 0) is None
    assert far(codes, np.array([0.0, 50, np.nan, 0, 100, 200]), 2, 1, True, 0) is None
    assert far(codes, np.array([-(2**62), 0, 1, 0, 2**62, 2**62]), 2, 1, True, 0) is None  # would overflow
    found = far(codes, np.array([0, 40, 50, 0, 100, 200]), 2, 1, True, 0)
    assert found is not None and found.tolist() == [False, True, True, False, True, False]


def test_the_engine_steps_only_dense_events_of_a_long_batch() -> None:
    # 6,000 events, a lone A and B every 100 positions in partitions 0 and
    # 1, and one dense A B A B in partition 2: only partition 2's events and
    # each partition's first and last (batch edges) are stepped
    rows = [{"type": "A", "x": 0, "k": i // 100 % 2, "j": 0, "t": i} for i in range(0, 6000, 100)]
    rows += [{"type": kind, "x": 0, "k": 2, "j": 0, "t": 3000 + d} for d, kind in enumerate("ABAB", 1)]
    rows += [{"type": "C", "x": 0, "k": 3, "j": 0, "t": i} for i in range(6000) if i % 100]
    rows.sort(key=lambda r: r["t"])
    text = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 10 EVENTS"
    named = [("q", parse_and_check(text, SCHEMA))]
    batch = to_batch(rows)
    engine = Engine(compile_plan(named))
    found = engine.process(batch)
    assert [m.key() for m in found] == [m.key() for m in evaluate(named, batch).per_query["q"]]
    assert len(found) == 3  # A B, A . . B and . . A B of partition 2
    assert engine.stats()["events_processed"] == 4 + 4  # partition 2, and partitions 0 and 1's first and last


def test_partition_codes_far_apart_give_the_same_answer() -> None:
    # codes within 2**16 of each other are sorted as 16-bit keys; wider ones as they are
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 5, 400)
    values = np.cumsum(rng.integers(0, 4, 400))
    narrow, wide = far(codes, values, 3, 6, True, 2), far(codes * 1_000_003 - 7, values, 3, 6, True, 2)
    assert narrow is not None and wide is not None and narrow.any()
    assert narrow.tolist() == wide.tolist()
