"""Events no accepted run can mark are not stepped
(``sharp_cer.engine.relevance``): the matches are exactly the reference
evaluator's, in batches of any size; every event of a reference match is
kept; and the test refuses every query where an event outside a match can
change the output. The batch-size threshold is lowered to 0 so that the
small drawn streams are tested (the threshold is density's: its tests of
every feature, strategies, consumption, LIMIT, NOT, ABSENT and contiguity,
run this test too)."""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine, density
from sharp_cer.engine.feed import keyed, partition_codes, visible, window_column
from sharp_cer.engine.predicate_bits import PredicateBits
from sharp_cer.engine.relevance import Relevance
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.planner.automaton import Automaton, Transition
from sharp_cer.planner.predicates import AllOf, Atom
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, SECOND, queries, to_batch
from tests.test_engine_density import sparse_streams
from tests.test_engine_differential import SETTINGS, check

PARTS = ["A", "B", "C", "B+", "(A OR C)", "AND(A, B)", "(A ; B)+", "A AS {v}", "(C AS {v})+", "(B ; (A OR C))"]
#: the unary conditions of the parts that name a variable
CONDITIONS = {"A AS {v}": "{v}[x > 1]", "(C AS {v})+": "{v}[x < 2]"}


@st.composite
def relevant_queries(draw: st.DrawFn) -> str:
    """Sequences of one to four parts (Kleene, nested Kleene, OR, AND,
    unary conditions) in a window of each kind, in one partition or many:
    the queries the test applies to."""
    parts = draw(st.lists(st.sampled_from(PARTS), min_size=1, max_size=4))
    names = [f"v{i}" for i in range(len(parts))]
    text = f"SELECT * WHERE {' ; '.join(p.format(v=v) for p, v in zip(parts, names, strict=True))}"
    conditions = [CONDITIONS[p].format(v=v) for p, v in zip(parts, names, strict=True) if p in CONDITIONS]
    if conditions:
        text += f" FILTER {' AND '.join(conditions)}"
    if draw(st.booleans()):
        text += f" PARTITION BY {draw(st.sampled_from(['[k]', '[j]', '[k, j]']))}"
    window = draw(st.sampled_from(["events", "time", "t", "x"]))
    if window == "events":
        return text + f" WITHIN {draw(st.integers(0, 6))} EVENTS"
    if window == "time":
        return text + f" WITHIN {draw(st.integers(0, 4))} SECONDS"
    if window == "t":
        return text + f" WITHIN {draw(st.sampled_from([1, SECOND, 2 * SECOND + 1, 4 * SECOND]))} [t]"
    return text + f" WITHIN {draw(st.integers(1, 3))} [x]"  # x falls: the engine's lateness covers it


def checked(texts: list[str], rows: list[dict[str, Any]], size: int | None, count: bool = False) -> None:
    with patch.object(density, "SMALLEST_BATCH", 0):
        check(texts, rows, batch_sizes=size, count=count)


@settings(max_examples=400, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(relevant_queries(), min_size=1, max_size=3), sparse_streams(), st.sampled_from([None, 1, 3, 7]))
def test_relevant_queries_match_the_reference(texts: list[str], rows: list[dict[str, Any]], size: int | None) -> None:
    checked(texts, rows, size, count=size is None)  # counted matches too, in one batch


@settings(max_examples=200, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(depth=2, cross=True), min_size=1, max_size=3), sparse_streams(max_size=14))
def test_cross_event_conditions_match_the_reference(texts: list[str], rows: list[dict[str, Any]]) -> None:
    checked(texts, rows, None)


@settings(max_examples=300, **SETTINGS)  # type: ignore[arg-type]
@given(relevant_queries(), sparse_streams())
def test_every_event_of_a_reference_match_is_kept(text: str, rows: list[dict[str, Any]]) -> None:
    named = [("q", parse_and_check(text, SCHEMA))]
    batch = to_batch(rows)
    plan = compile_plan(named)
    group = plan.groups[0]
    test = Relevance.of(group, plan.queries, 0)
    assert test is not None
    runner = Engine(plan).runners[0]
    atoms = PredicateBits(plan.predicates, batch.event_types).evaluate(batch)
    symbols = runner.symbols.encode(atoms, visible(group, batch) & keyed(group, batch))
    measure = window_column(group, batch)
    if measure is None or not len(batch) or not measure.valid.all():
        return
    codes = partition_codes(group, batch, np.arange(len(batch))) if group.partition_attributes else None
    idle = test.idle(runner.symbols.bits, symbols, measure.values, codes)
    if idle is None:
        return  # values fall: the test does not apply
    in_matches = {p for m in evaluate(named, batch).per_query["q"] for p in m.events}
    assert not any(idle[i] for i, p in enumerate(batch.positions.tolist()) if p in in_matches)


def _relevance(text: str) -> Relevance | None:
    plan = compile_plan([("q", parse_and_check(text, SCHEMA))])
    return Relevance.of(plan.groups[0], plan.queries, 0)


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * WHERE A ; NOT(C) ; B WITHIN 3 EVENTS",
        "SELECT * WHERE A ; ABSENT(C) ; B WITHIN 3 EVENTS",
        "SELECT * WHERE A : B WITHIN 3 EVENTS",
        "SELECT * WHERE A ; B:+ WITHIN 3 EVENTS",
        "SELECT NEXT * WHERE A ; B WITHIN 3 EVENTS",
        "SELECT STRICT * WHERE A ; B WITHIN 3 EVENTS",
        "SELECT * WHERE A ; B WITHIN 3 EVENTS CONSUME BY ANY",
        "SELECT * WHERE A ; B WITHIN 3 EVENTS LIMIT 1",
        "SELECT * WHERE A ; B",  # no window
    ],
)
def test_refused_where_events_outside_a_match_count(text: str) -> None:
    assert _relevance(text) is None


def test_the_engine_steps_only_events_an_accepted_run_marks() -> None:
    # 6,000 events: an A every 10 positions, a B every 10 (5 after each A)
    # and a C only at 3,007: A ; B ; C within 10 events holds the A at
    # 3,000, the B at 3,005 and the C; every other A and B is idle
    rows = []
    for i in range(6000):
        kind = "A" if i % 10 == 0 else "B" if i % 10 == 5 else "C" if i == 3007 else "D"
        row = {"type": kind, "x": 0, "k": 0, "t": i}
        if kind != "D":
            row["j"] = 0
        rows.append(row)
    named = [("q", parse_and_check("SELECT * WHERE A ; B ; C WITHIN 10 EVENTS", SCHEMA))]
    batch = to_batch(rows)
    engine = Engine(compile_plan(named))
    found = engine.process(batch)
    assert [m.key() for m in found] == [m.key() for m in evaluate(named, batch).per_query["q"]]
    assert [m.events for m in found] == [(3000, 3005, 3007)]
    # the match's three, and those within 10 positions of the batch's
    # first and last A or B (0, 5, 10 and 5,985, 5,990, 5,995)
    assert engine.stats()["events_processed"] == 3 + 6


def test_partitions_keep_their_runs_apart() -> None:
    # hand-computed: A ; B within 2 events; partition 0 has A at 0 and B at
    # 10, partition 1 has B at 1 and A at 9. Across partitions A(0) and
    # B(1) would fit, and A(9) and B(10): within each, no run does. A
    # margin of 0 keeps each partition's first and last candidate only.
    plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B PARTITION BY [k] WITHIN 2 EVENTS", SCHEMA))])
    test = Relevance(plan.groups[0].automaton, 2, True, 0)
    a, b = _bits(plan, "A"), _bits(plan, "B")
    symbols = np.array([0, 1, 2, 2, 2, 2, 2, 2, 2, 1, 0, 0, 1])
    values = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])
    codes = np.array([0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 2, 2])
    idle = test.idle([a, b, 0], symbols, values, codes)
    # partition 2 has A(11) ; B(12): a match; every event of 0 and 1 is
    # its partition's first or last candidate, so all are kept; the rest
    # (symbol 2, neither A nor B) are idle
    assert idle is not None
    assert idle.tolist() == [False, False] + [True] * 7 + [False] * 4
    # with a margin of 0 and more events in partition 0, its middle A is idle
    codes[5] = 0
    symbols[5] = 0
    idle = test.idle([a, b, 0], symbols, values, codes)
    assert idle is not None and idle[5]


def _bits(plan: Any, name: str) -> int:
    """The predicate bits of an event of type ``name``."""
    table = plan.predicates
    return 1 << table.type_atom("S", name)


def test_a_cycle_entered_from_its_far_side_is_passed_over_until_it_settles() -> None:
    # hand-built (the compiler's automata settle in one round): A enters
    # state 2, which waits into state 1, whose B leads back to 2; C from 2
    # ends. State 1 comes first in the order, so its runs' starts are known
    # only in a second round. A B C within 5 positions: B continues the
    # run A started (a wait needs no event in the test's model), so all
    # three are kept; a lone B at 20 is idle (no run before it).
    skip, a, b, c = AllOf(()), Atom(0), Atom(1), Atom(2)
    moves = (
        (Transition(0, a, 0, 2),),
        (Transition(1, skip, None, 1), Transition(1, b, 1, 2)),
        (Transition(2, skip, None, 1), Transition(2, c, 2, 3)),
        (),
    )
    test = Relevance(Automaton(4, frozenset({0}), moves, {3: frozenset({0})}), 5, True, 0)
    assert test.rounds > 1
    idle = test.idle([0b001, 0b010, 0b100], np.array([0, 1, 2, 1, 1]), np.array([0, 1, 2, 20, 40]), None)
    assert idle is not None and idle.tolist() == [False, False, False, True, False]  # 40: the batch's last


def test_events_kept_only_for_the_batch_edges_are_still_skipped_by_the_index() -> None:
    # the window is wider than the batch, so the test keeps every event as
    # one that may match with later batches; the 3,000 Bs before the only A
    # still have no run to continue, and bulk skipping passes them over
    rows = [{"type": "A" if i == 3000 else "B", "x": 0, "k": 0, "j": 0, "t": i} for i in range(6000)]
    named = [("q", parse_and_check("SELECT * WHERE A ; B WITHIN 100000 EVENTS", SCHEMA))]
    batch = to_batch(rows)
    engine = Engine(compile_plan(named))
    found = engine.process(batch)
    assert len(found) == 2999 and [m.key() for m in found] == [m.key() for m in evaluate(named, batch).per_query["q"]]
    assert engine.stats()["events_processed"] == 3000  # the A and the Bs after it
