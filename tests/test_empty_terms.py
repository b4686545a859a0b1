"""Aggregates over no values (``min``, ``max``, ``avg``, ``first``/``last``
of none, or of only nulls) are out of their domain where they are read, and
only there: OR does not read its right side where its left is true, AND
where its left is false, ``x IN RANGE(lo, hi)`` its ``hi`` where x is below
``lo`` (``reference`` rule 6). The engines' bound tests on
whole tECS branches must not prune such a branch as if the term made the
whole conjunct false (both engines did, for ``(count(A) < 2) OR (min(A.x) <
0)`` over one A with a null x).

Hand-worked cases, then hypothesis: conditions mixing always-defined terms
(``count``, ``sum``) with ones that may be over no values, joined by AND, OR
and NOT, on streams whose attribute is often null; matches of the pure and
the compiled engine equal to the reference evaluator's.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, to_batch


def _matches(text: str, rows: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Sorted match keys of the reference, the pure engine and the engine as built (compiled
    core where it is there)."""
    named = [("q", parse_and_check(text, SCHEMA))]
    batch = to_batch(rows)
    plan = compile_plan(named)
    pure = Engine(plan)
    for runner in pure.runners:
        runner.core = None
    return {
        "reference": sorted(m.key() for m in evaluate(named, batch).per_query["q"]),
        "pure": sorted(m.key() for m in pure.process(batch)),
        "engine": sorted(m.key() for m in Engine(plan).process(batch)),
    }


def _a(x: int | None, t: int) -> dict[str, Any]:
    return {"type": "A", "x": x, "k": 0, "t": t}


# (condition, rows, the matches' events by hand)
CASES = [
    # one A, x null: count(A) < 2 is true, so min(A.x) (over no values) is never read
    ("(count(A) < 2) OR (min(A.x) < 0)", [_a(None, 0)], [(0,)]),
    # the same sides the other way round: min(A.x) is read first, out of its domain
    ("(min(A.x) < 0) OR (count(A) < 2)", [_a(None, 0)], []),
    # AND's left false: the right is not read, so NOT of it holds
    ("NOT ((count(A) > 2) AND (max(A.x) > 0))", [_a(None, 0)], [(0,)]),
    # AND's left true: the right is read, out of its domain, and NOT keeps it so
    ("NOT ((count(A) < 2) AND (max(A.x) > 0))", [_a(None, 0)], []),
    # two As, one with a value: [0] is over no values, [1] and [0, 1] have min 5
    ("(count(A) > 5) OR (min(A.x) > 4)", [_a(None, 0), _a(5, 1)], [(0, 1), (1,)]),
    # IN RANGE is lo <= x AND x <= hi: below lo, hi (over no values) is not read, so NOT holds
    ("NOT (count(A) IN RANGE(5, min(A.x)))", [_a(None, 0)], [(0,)]),
    # within lo: hi is read, out of its domain, and NOT keeps it so
    ("NOT (count(A) IN RANGE(0, min(A.x)))", [_a(None, 0)], []),
    # avg (an envelope term) over only nulls, behind a true left side
    ("(sum(A.x) = 0) OR (avg(A.x) > 100)", [_a(None, 0), _a(None, 1)], [(0,), (0, 1), (1,)]),
]


@pytest.mark.parametrize("condition, rows, expected", CASES)
def test_a_term_over_no_values_is_out_of_domain_only_where_it_is_read(
    condition: str, rows: list[dict[str, Any]], expected: list[tuple[int, ...]]
) -> None:
    found = _matches(f"SELECT * WHERE A+ FILTER {condition} WITHIN 5 EVENTS", rows)
    assert sorted(key[3] for key in found["reference"]) == sorted(expected)
    assert found["pure"] == found["reference"]
    assert found["engine"] == found["reference"]


_ALWAYS = ("count(A) < 2", "count(A) >= 2", "sum(A.x) = 0", "sum(A.x) > 3")
_MAYBE = (
    "min(A.x) < 3",
    "max(A.x) > 2",
    "avg(A.x) >= 2",
    "first(A.x) = 1",
    "last(A.x) < 3",
    "min(A.x) < max(A.x)",
    "count(A) IN RANGE(2, max(A.x))",
    "sum(A.x) IN RANGE(min(A.x), 4)",
)


@st.composite
def _condition(draw: st.DrawFn, depth: int = 2) -> str:
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(_ALWAYS + _MAYBE))
    kind = draw(st.sampled_from(["AND", "OR", "NOT"]))
    if kind == "NOT":
        return f"NOT ({draw(_condition(depth - 1))})"
    return f"({draw(_condition(depth - 1))}) {kind} ({draw(_condition(depth - 1))})"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _condition(),
    st.lists(st.sampled_from([None, None, 0, 1, 2, 3, 4]), min_size=1, max_size=6),
    st.sampled_from(["A+", "B ; A+", "A+ ; B"]),
    st.integers(1, 6),
)
def test_bound_tests_agree_with_the_reference_on_terms_over_no_values(
    condition: str, xs: list[int | None], pattern: str, window: int
) -> None:
    rows = [_a(x, t) for t, x in enumerate(xs)]
    rows[len(rows) // 2 :] = [{**r, "type": "B"} if i % 3 == 2 else r for i, r in enumerate(rows[len(rows) // 2 :])]
    found = _matches(f"SELECT * WHERE {pattern} FILTER {condition} WITHIN {window} EVENTS", rows)
    assert found["pure"] == found["reference"]
    assert found["engine"] == found["reference"]
