"""The engine's part-2 features on hand-computed cases and the papers'
worked examples: selection strategies, consumption, LIMIT, conjunction,
cross-event conditions and their summaries, the enumeration budget and
order, counting. Every case is also run through the reference evaluator.
"""

from __future__ import annotations

from typing import Any

import pytest

from sharp_cer.engine import Engine
from sharp_cer.engine.enumeration import BestFirst
from sharp_cer.engine.shedder_protocol import WalkControl
from sharp_cer.events.match import Match
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, to_batch
from tests.test_reference_papers import FARM, FIGURE_1, PHI_1, PHI_3, UNBOUNDED


def rows(spec: str) -> list[dict[str, Any]]:
    """'A1 B2 C0' -> events with type and x (k = 0, t = position seconds)."""
    return [{"type": w[0], "x": int(w[1:] or 0), "k": 0, "t": i * 10**9} for i, w in enumerate(spec.split())]


def run(text: str, spec: str, **options: Any) -> tuple[list[Match], Engine]:
    checked = parse_and_check(text, SCHEMA)
    batch = to_batch(rows(spec))
    engine = Engine(compile_plan([("q", checked)], counting=options.get("count_only", False)), debug=True, **options)
    found = engine.process(batch)
    if not options.get("count_only"):
        expected = evaluate([("q", checked)], batch).matches
        assert sorted(m.key() for m in found) == sorted(m.key() for m in expected), "engine and reference differ"
    return found, engine


def events(matches: list[Match]) -> list[tuple[int, ...]]:
    return sorted(m.events for m in matches)


# ---------------------------------------------------------------- strategies


def farm(strategy: str, formula: str) -> set[frozenset[int]]:
    query = parse_and_check(f"SELECT {strategy} * FROM Farm WHERE {formula}{UNBOUNDED}", FARM)
    import pandas as pd

    from sharp_cer.events.loaders import load_pandas

    batch, _ = load_pandas(pd.DataFrame(FIGURE_1), FARM)
    return {frozenset(m.events) for m in Engine(compile_plan([("q", query)]), debug=True).process(batch)}


def test_cel_strategies_on_figure_1() -> None:
    # CEL §4, as restored in test_reference_papers: the paper's own outputs
    assert farm("", PHI_1) == {frozenset({1, 2}), frozenset({1, 8}), frozenset({5, 8})}
    assert farm("STRICT", PHI_1) == {frozenset({1, 2})}
    assert farm("NEXT", PHI_1) == {frozenset({1, 2}), frozenset({1, 8})}
    assert farm("LAST", PHI_1) == {frozenset({1, 2}), frozenset({5, 8})}
    for strategy in ("MAX", "NEXT", "LAST"):
        assert farm(strategy, PHI_3) == {frozenset({3, 4, 6, 7})}


def test_strict_with_consumption_checks_each_match() -> None:
    # STRICT without consumption drops the automaton's non-marking moves; with
    # CONSUME BY it must see every completion, so it filters enumerated matches
    text = "SELECT STRICT * WHERE A ; B+ WITHIN 9 EVENTS"
    plain, _ = run(text, "A0 B0 C0 A0 B0 B0")
    consumed, _ = run(text + " CONSUME BY ANY", "A0 B0 C0 A0 B0 B0")
    assert events(plain) == [(0, 1), (3, 4), (3, 4, 5)]
    assert events(consumed) == [(0, 1), (3, 4)]  # the completion at 4 consumes the run of 3


# ---------------------------------------------------------------- consumption and LIMIT


def test_consume_by_any_forgets_partial_matches() -> None:
    found, _ = run("SELECT * WHERE A ; B WITHIN 9 EVENTS CONSUME BY ANY", "A0 A0 B0 B0 A0 B0")
    assert events(found) == [(0, 2), (1, 2), (4, 5)]


def test_consumption_counts_completions_outside_the_window() -> None:
    # at 3, A0 ; B3 completes outside the window: it still consumes C2's run
    text = "SELECT * WHERE (A ; B) OR (C ; B ; B) WITHIN 2 EVENTS CONSUME BY ANY"
    found, _ = run(text, "A0 D0 C0 B0 B0")
    assert found == []
    kept, _ = run(text.replace(" CONSUME BY ANY", ""), "A0 D0 C0 B0 B0")
    assert events(kept) == [(2, 3, 4)]


def test_consume_by_partition_keeps_other_partitions() -> None:
    text = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 9 EVENTS CONSUME BY "
    stream = [{"type": t, "x": 0, "k": k, "t": 0} for t, k in [("A", 0), ("A", 1), ("B", 0), ("B", 1), ("B", 0)]]
    batch = to_batch(stream)
    for policy, expected in (("PARTITION", [(0, 2), (1, 3)]), ("ANY", [(0, 2)])):
        checked = parse_and_check(text + policy, SCHEMA)
        found = Engine(compile_plan([("q", checked)]), debug=True).process(batch)
        assert events(found) == expected
        assert sorted(m.key() for m in found) == sorted(m.key() for m in evaluate([("q", checked)], batch).matches)


def test_limit_keeps_latest_starts_then_latest_events() -> None:
    found, _ = run("SELECT * WHERE A ; B+ WITHIN 9 EVENTS LIMIT 1", "A0 A0 B0 B0")
    # at 3 the latest start is 1; of {1, 2, 3} and {1, 3}, compared from the
    # last position back (3 = 3, then 2 against 1), {1, 2, 3} is later
    assert events(found) == [(1, 2), (1, 2, 3)]


# ---------------------------------------------------------------- conjunction


def test_conjunction_takes_disjoint_events_in_any_order() -> None:
    found, _ = run("SELECT * WHERE AND(A, B) WITHIN 9 EVENTS", "A0 B0 A0")
    assert events(found) == [(0, 1), (1, 2)]
    both, _ = run("SELECT * WHERE AND(A AS a, A AS b) WITHIN 9 EVENTS", "A0 A0")
    assert [sorted(m.vars) for m in both] == [["A", "a", "b"]] and events(both) == [(0, 1)]


def test_conjunction_inside_a_sequence() -> None:
    found, _ = run("SELECT * WHERE AND(A ; B, C) : D WITHIN 9 EVENTS", "C0 A0 B0 D0 A0 C0 B0 D0")
    # D7 must follow the conjunction's last event, B6; A and C can be either
    assert events(found) == [(0, 1, 2, 3), (0, 1, 6, 7), (0, 4, 6, 7), (1, 5, 6, 7), (4, 5, 6, 7)]


# ---------------------------------------------------------------- cross-event conditions


Q1 = "SELECT * WHERE (A ; B+ AS b ; C AS c ; D) FILTER sum(b.x) < c.x WITHIN 20 EVENTS"


def test_sum_over_a_kleene_variable() -> None:
    found, _ = run(Q1, "A0 B1 B2 C4 D0")
    assert events(found) == [(0, 1, 2, 3, 4), (0, 1, 3, 4), (0, 2, 3, 4)]  # 3, 1 and 2 are below 4
    fewer, _ = run(Q1, "A0 B1 B2 C3 D0")
    assert events(fewer) == [(0, 1, 3, 4), (0, 2, 3, 4)]


def test_conditions_apply_per_iteration_and_per_branch() -> None:
    per_iteration, _ = run("SELECT * WHERE ((A AS a ; B AS b) FILTER a.x < b.x)+ WITHIN 9 EVENTS", "A1 B2 A2 B1")
    # A2 B1 fails on its own, so only iterations among (0,1) and (0,3)
    assert events(per_iteration) == [(0, 1)]
    branch, _ = run("SELECT * WHERE ((A AS a ; B AS b) FILTER a.x = b.x) OR C WITHIN 9 EVENTS", "A1 B2 C0 A3 B3")
    assert events(branch) == [(2,), (3, 4)]


def test_summaries_prune_without_changing_the_matches() -> None:
    stream = "A0 " + " ".join(f"B{x}" for x in [3, 1, 2, 3, 1, 2, 1, 3, 2, 1]) + " C4 D0"
    pruned, with_summaries = run(Q1, stream)
    plain, without = run(Q1, stream, prune=False)
    assert events(pruned) == events(plain) and len(pruned) > 5
    cost_on, cost_off = with_summaries.clock.per_query["q"], without.clock.per_query["q"]
    # without summaries all 1023 subsets of the B events are built and rejected
    assert cost_off.candidates == 2**10 - 1
    assert cost_on.candidates < cost_off.candidates / 10
    assert cost_on.enumeration_steps < cost_off.enumeration_steps / 10


# ---------------------------------------------------------------- budget and order


class FixedBudget:
    """The smallest shedder: every sheddable query gets ``units`` steps per
    event, nothing else is shed (the engine's ``Shedder`` protocol)."""

    def __init__(self, units: int) -> None:
        self.asked: list[str] = []
        self.units_each = units

    def for_group(self, view: Any) -> FixedBudget:
        self.queries = [q.id for q in view.queries]
        return self

    def ranking(self) -> list[int]:
        return self.queries

    def latency_bounds(self) -> tuple[dict[str, float], dict[str, float]]:
        return {}, {}

    def begin_batch(self, batch: Any) -> None:
        pass

    def admit(self, row: int, progress: Any) -> bool:
        return True

    def enumeration(self, query: Any, progress: Any) -> WalkControl:
        self.asked.append(query.name)
        return WalkControl(limit=self.units_each)

    def enumerated(self, query: Any, progress: Any, walk: Any, candidates: Any) -> None:
        pass

    def stepped(self, instance: Any, outputs: Any, row: int, progress: Any) -> None:
        pass


def test_budget_truncates_enumeration_of_sheddable_queries_only() -> None:
    stream = "A0 B0 B0 B0 B0 B0"
    full, _ = run("SELECT * WHERE A ; B+ WITHIN 9 EVENTS", stream)
    budget = FixedBudget(6)
    checked = parse_and_check("SELECT * WHERE A ; B+ WITHIN 9 EVENTS", SCHEMA)
    engine = Engine(compile_plan([("q", checked)]), shedder=budget, debug=True)
    cut = engine.process(to_batch(rows(stream)))
    assert {m.key() for m in cut} < {m.key() for m in full}
    assert engine.clock.per_query["q"].truncated > 0 and budget.asked
    capped = FixedBudget(1)
    limited_query = parse_and_check("SELECT * WHERE A ; B+ WITHIN 9 EVENTS LIMIT 99", SCHEMA)
    limited = Engine(compile_plan([("q", limited_query)]), shedder=capped)
    assert len(limited.process(to_batch(rows(stream)))) == len(full)  # LIMIT queries are never cut
    assert not capped.asked


def test_best_first_order_finds_the_same_matches() -> None:
    stream = "A0 A0 B0 B0 B0"
    checked = parse_and_check("SELECT * WHERE A ; B+ WITHIN 9 EVENTS", SCHEMA)
    oldest_first = Engine(compile_plan([("q", checked)]), order=BestFirst(lambda n: -n.maxstart), debug=True)
    found = oldest_first.process(to_batch(rows(stream)))
    assert sorted(m.key() for m in found) == sorted(m.key() for m in evaluate([("q", checked)], rows(stream)).matches)


# ---------------------------------------------------------------- counting


@pytest.mark.parametrize("n", [3, 9, 40])
def test_counting_kleene_matches_without_enumerating(n: int) -> None:
    # SASE+: SEQ(A, B+, C) over A, n B's, C has 2^n - 1 matches
    _, engine = run(f"SELECT * WHERE A ; B+ ; C WITHIN {n + 2} EVENTS", "A0 " + "B0 " * n + "C0", count_only=True)
    assert engine.stats()["matches"]["q"] == 2**n - 1
    assert engine.clock.enumeration_steps <= 10 * (n + 2)  # linear in the events: each node counted once


def test_counting_collapses_what_projection_and_labels_merge() -> None:
    for text in (
        "SELECT A WHERE A ; B+ WITHIN 9 EVENTS",
        "SELECT * WHERE (A AS x) OR (A AS y) WITHIN 9 EVENTS",
        "SELECT NONE WHERE A ; B+ WITHIN 9 EVENTS",
    ):
        found, _ = run(text, "A0 A0 B0 B0")
        _, counter = run(text, "A0 A0 B0 B0", count_only=True)
        assert counter.stats()["matches"].get("q", 0) == len(found), text
