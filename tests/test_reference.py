"""The reference evaluator on hand-computed cases, one or more per rule of
its docstring. Expected outputs are worked out by hand in the comments."""

from __future__ import annotations

from typing import Any

import pytest

from sharp_cer.language import Schema, parse_and_check
from sharp_cer.reference import evaluate

SCHEMA = Schema.parse(
    """CREATE STREAM S {
         EVENT A { x:int, k:int, name:string, t:primary_time },
         EVENT B { x:int, k:int, name:string, t:primary_time },
         EVENT C { x:int, k:int, name:string, t:primary_time }
       }
       CREATE STREAM T { EVENT D { x:int } }"""
)
SEC = 1_000_000_000


def stream(spec: str, **columns: list[Any]) -> list[dict[str, Any]]:
    """'A B C' with optional per-event columns; t defaults to 10 ns apart."""
    types = spec.split()
    rows = []
    for i, kind in enumerate(types):
        row: dict[str, Any] = {"type": kind, "x": 0, "k": 0, "name": "n", "t": 10 * i}
        for col, values in columns.items():
            row[col] = values[i]
        if kind == "D":
            row = {"type": "D", "x": row["x"]}
        rows.append(row)
    return rows


def run(query: str, events: list[dict[str, Any]]) -> set[tuple[int, int, tuple[int, ...]]]:
    checked = parse_and_check(query, SCHEMA)
    return {(m.start, m.end, m.events) for m in evaluate([("q", checked)], events).matches}


def matches(query: str, events: list[dict[str, Any]]):  # type: ignore[no-untyped-def]
    return evaluate([("q", parse_and_check(query, SCHEMA))], events)


W = " WITHIN 100 EVENTS"


# 1-2: sequence and contiguity
def test_sequence_skips() -> None:
    assert run("SELECT * WHERE A ; B" + W, stream("A B A B")) == {(0, 1, (0, 1)), (0, 3, (0, 3)), (2, 3, (2, 3))}


def test_contiguous_sequence() -> None:
    assert run("SELECT * WHERE A : B" + W, stream("A C B A B")) == {(3, 4, (3, 4))}


# 3: iteration
def test_kleene_takes_every_subset() -> None:
    # B+ between A@0 and C@3: {1}, {2}, {1, 2}
    assert run("SELECT * WHERE A ; B+ ; C" + W, stream("A B B C")) == {
        (0, 3, (0, 1, 3)),
        (0, 3, (0, 2, 3)),
        (0, 3, (0, 1, 2, 3)),
    }


def test_contiguous_kleene() -> None:
    assert run("SELECT * WHERE A : B:+ : C" + W, stream("A B B C")) == {(0, 3, (0, 1, 2, 3))}


def test_kleene_rebinds_per_iteration() -> None:
    # iterations (a, b): (0,1) ok 1<2, (0,3) ok 1<2, (2,3) fails 3<2; no two chain
    result = matches("SELECT * WHERE (A AS a ; B AS b FILTER a.x < b.x)+" + W, stream("A B A B", x=[1, 2, 3, 2]))
    assert {(m.start, m.end, m.events) for m in result.matches} == {(0, 1, (0, 1)), (0, 3, (0, 3))}
    assert {m.vars["b"] for m in result.matches} == {(1,), (3,)}


# 4: disjunction and conjunction
def test_disjunction() -> None:
    assert run("SELECT * WHERE (A OR B) ; C" + W, stream("A B C")) == {(0, 2, (0, 2)), (1, 2, (1, 2))}


def test_conjunction_any_order() -> None:
    assert run("SELECT * WHERE AND(A, B)" + W, stream("B A")) == {(0, 1, (0, 1))}
    assert run("SELECT * WHERE AND(A, B)" + W, stream("A A B")) == {(0, 2, (0, 2)), (1, 2, (1, 2))}


def test_conjunction_needs_disjoint_events() -> None:
    assert run("SELECT * WHERE AND(A, A)" + W, stream("A")) == set()
    assert run("SELECT * WHERE AND(A, A)" + W, stream("A A")) == {(0, 1, (0, 1))}


# 5: NOT and ABSENT
def test_not_opens_the_interval() -> None:
    # the example: NOT(A) ; B ; A over A B B A -> events {2, 3}, interval [1, 3]
    assert run("SELECT * WHERE NOT(A) ; B ; A" + W, stream("A B B A")) == {(1, 3, (2, 3))}


def test_absence_between_parts() -> None:
    assert run("SELECT * WHERE A ; ABSENT(C) ; B" + W, stream("A C B A B")) == {(3, 4, (3, 4))}


def test_absence_with_condition() -> None:
    q = "SELECT * WHERE A ; ABSENT(C FILTER C[x > 5]) ; B" + W
    assert run(q, stream("A C B", x=[0, 1, 0])) == {(0, 2, (0, 2))}
    assert run(q, stream("A C B", x=[0, 9, 0])) == set()


# 6: conditions
def test_unary_filter() -> None:
    assert run("SELECT * WHERE A AS a ; B FILTER a[x > 1]" + W, stream("A A B", x=[1, 2, 0])) == {(1, 2, (1, 2))}


def test_cross_event_condition() -> None:
    assert run("SELECT * WHERE A AS a ; B AS b FILTER a.x < b.x" + W, stream("A A B", x=[3, 1, 2])) == {(1, 2, (1, 2))}


def test_aggregate_sum() -> None:
    # b = {1}: 1 < 3, {2}: 2 < 3, {1, 2}: 3 < 3 fails
    q = "SELECT * WHERE A ; B+ AS b ; C AS c FILTER sum(b.x) < c.x" + W
    assert run(q, stream("A B B C", x=[0, 1, 2, 3])) == {(0, 3, (0, 1, 3)), (0, 3, (0, 2, 3))}


def test_aggregate_count() -> None:
    assert run("SELECT * WHERE A ; B+ AS b ; C FILTER count(b) >= 2" + W, stream("A B B C")) == {(0, 3, (0, 1, 2, 3))}


def test_kleene_filter_holds_for_every_event() -> None:
    q = "SELECT * WHERE A ; B+ AS b ; C FILTER b[x > 1]" + W
    assert run(q, stream("A B B C", x=[0, 1, 2, 0])) == {(0, 3, (0, 2, 3))}
    q2 = "SELECT * WHERE A ; B+ AS b ; C FILTER b.x > 1" + W  # one variable: same meaning
    assert run(q2, stream("A B B C", x=[0, 1, 2, 0])) == {(0, 3, (0, 2, 3))}


def test_filter_or_across_variables() -> None:
    q = "SELECT * WHERE A AS a ; B AS b FILTER a[x > 5] OR b[x > 5]" + W
    assert run(q, stream("A B", x=[1, 6])) == {(0, 1, (0, 1))}
    assert run(q, stream("A B", x=[1, 1])) == set()


@pytest.mark.parametrize(
    ("condition", "x", "expected"),
    [
        ("asin(a.x) < b.x", 2, 0),  # asin(2) is out of domain
        ("sqrt(a.x - 5) < b.x", 2, 0),
        ("b.x / a.x > 0", 0, 0),  # division by zero
        ("a.x % 3 = 1", 4, 1),
        ("a.x % 3 = 1", -2, 0),  # truncated remainder: -2
        ("abs(a.x) = 2", -2, 1),
    ],
)
def test_math_and_domain(condition: str, x: int, expected: int) -> None:
    result = matches(f"SELECT * WHERE A AS a ; B AS b FILTER {condition}" + W, stream("A B", x=[x, 1]))
    assert len(result.matches) == expected
    out_of_domain = condition.startswith(("asin", "sqrt", "b.x /"))
    assert (result.domain_errors > 0) == out_of_domain


@pytest.mark.parametrize(
    ("predicate", "names", "expected"),
    [
        ("name LIKE 'ab'", ["xaby", "ba"], {0}),  # anywhere unless anchored
        ("name LIKE '^ab'", ["xab", "abc"], {1}),
        ("x IN {1, 3}", [None, None], {0, 2}),
        ("x NOT IN {1, 3}", [None, None], {1}),
        ("x IN {1..2}", [None, None], {0, 1}),
        ("x IN RANGE(2, 3)", [None, None], {1, 2}),
    ],
)
def test_predicates(predicate: str, names: list[Any], expected: set[int]) -> None:
    events = stream("A A A", x=[1, 2, 3], name=[*names, "z"] if names[0] else ["n", "n", "n"])
    found = run(f"SELECT * WHERE A AS a FILTER a[{predicate}]" + W, events)
    assert {start for start, _, _ in found} == expected


# 7-8: partitions and windows
def test_partition_by() -> None:
    assert run("SELECT * WHERE A ; B PARTITION BY [k]" + W, stream("A B B", k=[1, 2, 1])) == {(0, 2, (0, 2))}


def test_contiguity_inside_a_partition() -> None:
    assert run("SELECT * WHERE A : B PARTITION BY [k]" + W, stream("A B B", k=[1, 2, 1])) == {(0, 2, (0, 2))}


def test_event_window_counts_global_positions_under_partition() -> None:
    assert run("SELECT * WHERE A ; B PARTITION BY [k] WITHIN 1 EVENTS", stream("A B B", k=[1, 2, 1])) == set()


def test_event_window() -> None:
    assert run("SELECT * WHERE A ; B WITHIN 2 EVENTS", stream("A C C B A B")) == {(4, 5, (4, 5))}


def test_attribute_window_is_strict() -> None:
    assert run("SELECT * WHERE A ; B WITHIN 5 [x]", stream("A B B", x=[0, 5, 4])) == {(0, 2, (0, 2))}


def test_time_window_is_inclusive() -> None:
    events = stream("A B B", t=[0, SEC, SEC + 1])
    assert run("SELECT * WHERE A ; B WITHIN 1 SECONDS", events) == {(0, 1, (0, 1))}


def test_not_under_partition() -> None:
    assert run("SELECT * WHERE NOT(A) ; B PARTITION BY [k]" + W, stream("C A B", k=[1, 2, 1])) == {(0, 2, (2,))}


def test_streams_outside_from_are_invisible() -> None:
    assert run("SELECT * FROM S WHERE A : B" + W, stream("A D B")) == {(0, 2, (0, 2))}


# 9: strategies
def test_strict() -> None:
    assert run("SELECT STRICT * WHERE A ; B" + W, stream("A A B")) == {(1, 2, (1, 2))}


def test_next_and_last() -> None:
    assert run("SELECT NEXT * WHERE A ; B" + W, stream("A A B")) == {(0, 2, (0, 2))}
    assert run("SELECT LAST * WHERE A ; B" + W, stream("A A B")) == {(1, 2, (1, 2))}
    assert run("SELECT NEXT * WHERE A ; B+ ; C" + W, stream("A B B C")) == {(0, 3, (0, 1, 2, 3))}
    assert run("SELECT LAST * WHERE A ; B+ ; C" + W, stream("A B B C")) == {(0, 3, (0, 1, 2, 3))}


def test_max() -> None:
    assert run("SELECT MAX * WHERE A ; B+ ; C" + W, stream("A B B C")) == {(0, 3, (0, 1, 2, 3))}
    assert run("SELECT MAX * WHERE A ; B" + W, stream("A A B")) == {(0, 2, (0, 2)), (1, 2, (1, 2))}


def test_any_means_all() -> None:
    assert run("SELECT ANY * WHERE A ; B" + W, stream("A B A B")) == run("SELECT * WHERE A ; B" + W, stream("A B A B"))


def test_strategy_chooses_after_the_window() -> None:
    # (0, 2) is outside the window; NEXT chooses among what is left
    assert run("SELECT NEXT * WHERE A ; B WITHIN 1 EVENTS", stream("A A B")) == {(1, 2, (1, 2))}


# 11: consumption
def test_consume_by_any() -> None:
    assert run("SELECT * WHERE A ; B" + W + " CONSUME BY ANY", stream("A A B B")) == {(0, 2, (0, 2)), (1, 2, (1, 2))}
    assert run("SELECT * WHERE A ; B" + W + " CONSUME BY ANY", stream("A B A B")) == {(0, 1, (0, 1)), (2, 3, (2, 3))}


def test_consume_by_any_crosses_partitions_but_partition_does_not() -> None:
    events = stream("A A B B", k=[1, 2, 1, 2])
    q = "SELECT * WHERE A ; B PARTITION BY [k]" + W
    assert run(q + " CONSUME BY ANY", events) == {(0, 2, (0, 2))}
    assert run(q + " CONSUME BY PARTITION", events) == {(0, 2, (0, 2)), (1, 3, (1, 3))}


def test_completion_outside_the_window_still_consumes() -> None:
    # at 2 both completions fail the window but still consume; (1, 3) would pass
    events = stream("A A B B", x=[0, 8, 20, 10])
    assert run("SELECT * WHERE A ; B WITHIN 5 [x]", events) == {(1, 3, (1, 3))}
    assert run("SELECT * WHERE A ; B WITHIN 5 [x] CONSUME BY ANY", events) == set()


# 12: limit
def test_limit_keeps_latest_starts() -> None:
    assert run("SELECT * WHERE A ; B" + W + " LIMIT 1", stream("A A B")) == {(1, 2, (1, 2))}
    assert run("SELECT * WHERE A ; B" + W + " LIMIT 2", stream("A A B")) == {(0, 2, (0, 2)), (1, 2, (1, 2))}


# 10, 13: sets and projection
def test_projection() -> None:
    result = matches("SELECT b WHERE A ; B AS b" + W, stream("A B"))
    assert [(m.events, m.vars) for m in result.matches] == [((1,), {"b": (1,)})]
    assert run("SELECT NONE WHERE A ; B" + W, stream("A B")) == {(0, 1, ())}


def test_same_interval_and_positions_is_one_match() -> None:
    result = matches("SELECT * WHERE (A AS x ; A) OR (A ; A AS x)" + W, stream("A A"))
    assert [(m.start, m.end, m.events, m.vars) for m in result.matches] == [(0, 1, (0, 1), {"A": (0, 1), "x": (0,)})]


def test_event_type_variables_hold_every_occurrence() -> None:
    (m,) = matches("SELECT * WHERE A ; B ; A" + W, stream("A B A")).matches
    assert m.vars == {"A": (0, 2), "B": (1,)}
