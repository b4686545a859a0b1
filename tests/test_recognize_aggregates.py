"""Running aggregates in DEFINE (COUNT, SUM, MIN, MAX over a variable's
rows or the whole match) kept per thread and updated by one row at a time
(issue 40 item 7): the same results as recomputing them over the match so
far (the thread-list matcher without merging, and the brute-force matcher), NULLs,
int64 overflows and argument errors included, and a number of column reads
linear in the rows where recomputing is quadratic."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_recognize_fast import _pattern_text
from test_recognize_matcher import _patterns

from sharp_cer.errors import RecognizeError
from sharp_cer.recognize import nodes, run
from sharp_cer.recognize.brute_force import reference_match
from sharp_cer.recognize.clause_parser import parse_clause

BIG = 2**63 - 1
DEFINES = [
    "DEFINE A AS SUM(A.v) >= 0 OR v IS NULL, B AS MIN(B.v) < MAX(v) OR COUNT(A.v) > 2, "
    "C AS COUNT(*) <= 3 AND SUM(v) IS NOT NULL",
    "SUBSET U = (A, B) DEFINE A AS SUM(U.v) > -5, B AS MAX(U.f) >= 0.5 OR MIN(A.f) = 0.0, "
    "C AS SUM(C.f) < 2 OR SUM(A.v) < 0",
    # int64 overflows of partial sums, read later or never
    "DEFINE A AS SUM(A.v) <> 7, B AS SUM(v) > 0 AND COUNT(B.v) < 3, C AS MAX(C.v) > MIN(A.v)",
    # errors of the argument (overflow, division by zero) come before the sum's own
    "DEFINE A AS SUM(A.v + 1) > 0 OR v IS NULL, B AS COUNT(B.v / v) >= 0, C AS MIN(1.0 * v) < 1",
    # a running aggregate next to reads of the match's rows
    "DEFINE A AS SUM(A.v) < 3 AND (LAST(A.v, 1) IS NULL OR v >= LAST(A.v, 1)), B AS COUNT(A.*) = 2, "
    "C AS FIRST(C.v) = v OR MAX(C.f) > 1",
]
MODES = [
    "MEASURES CLASSIFIER() AS m1, RUNNING SUM(v) AS m2, MATCH_NUMBER() AS m3 ALL ROWS PER MATCH",
    "MEASURES FIRST(v) AS m1, COUNT(B.*) AS m2, MAX(f) AS m3 ONE ROW PER MATCH",
]
SKIPS = ["AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO NEXT ROW"]
VALUES = st.sampled_from([None, 0, 1, -1, 2, 2**62, BIG, -(2**63)])
FLOATS = st.sampled_from([None, 0.5, 0.0, -0.0, 1.5, float("inf")])


def _outputs(table: pa.Table, text: str) -> Any:
    try:
        return run.recognize_table(table, run.compile_clause(parse_clause(text), table.column_names)).to_pylist()
    except RecognizeError as err:
        return str(err)


def _table(data: list[tuple[str, int | None, float | None]]) -> pa.Table:
    return pa.table(
        {
            "p": pa.array([p for p, _, _ in data], pa.string()),
            "id": pa.array(range(len(data)), pa.int64()),
            "v": pa.array([v for _, v, _ in data], pa.int64()),
            "f": pa.array([f for _, _, f in data], pa.float64()),
        }
    )


def _text(pattern: nodes.Pattern, define: str, mode: str, skip: str) -> str:
    return (
        f"MATCH_RECOGNIZE (PARTITION BY p ORDER BY id {mode} {skip} "
        f"PATTERN ((A | B) {_pattern_text(pattern)} | (A B C) ^ ^ $) {define})"
    )


@settings(max_examples=150, deadline=None)
@given(
    _patterns(),
    st.lists(st.tuples(st.sampled_from(["x", "y"]), VALUES, FLOATS), max_size=9),
    st.sampled_from(DEFINES),
    st.sampled_from(MODES),
    st.sampled_from(SKIPS),
)
def test_running_aggregates_equal_recomputation(
    pattern: nodes.Pattern, data: list[tuple[str, int | None, float | None]], define: str, mode: str, skip: str
) -> None:
    """Errors included: the same thread-list matcher, once with threads
    keeping aggregate states, once recomputing every aggregate over the
    match so far with threads told apart by all their labels (no merging).
    (The brute-force matcher also tries paths the matcher prunes as unable
    to complete, so it may raise an overflow the matcher never meets.)"""
    table = _table(data)
    text = _text(pattern, define, mode, skip)
    incremental = _outputs(table, text)
    matcher = run.first_match

    def recomputing(*args: Any, **kwargs: Any) -> Any:
        return matcher(*args, **{**kwargs, "reads": None, "tracked": None})

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run, "first_match", recomputing)
        assert _outputs(table, text) == incremental


@settings(max_examples=100, deadline=None)
@given(
    _patterns(),
    st.lists(
        st.tuples(
            st.sampled_from(["x", "y"]),
            st.one_of(st.none(), st.integers(-2, 3)),
            st.sampled_from([None, 0.5, 0.0, -0.0, 1.5]),
        ),
        max_size=9,
    ),
    st.sampled_from([d for d in DEFINES if "/" not in d]),
    st.sampled_from(MODES),
    st.sampled_from(SKIPS),
)
def test_running_aggregates_equal_brute_force(
    pattern: nodes.Pattern, data: list[tuple[str, int | None, float | None]], define: str, mode: str, skip: str
) -> None:
    """Without errors: against the brute-force matcher, whose conditions
    recompute each aggregate over the match so far."""
    table = _table(data)
    text = _text(pattern, define, mode, skip)
    incremental = _outputs(table, text)
    variables = nodes.pattern_variables(parse_clause(text).pattern)

    def oracle(program: Any, start: int, size: int, condition: Any, **_: Any) -> Any:
        return reference_match(parse_clause(text).pattern, variables, start, size, condition)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run, "first_match", oracle)
        assert _outputs(table, text) == incremental


class Counted(list[Any]):
    """A column that counts its reads."""

    reads = 0

    def __getitem__(self, at: Any) -> Any:
        Counted.reads += 1
        return super().__getitem__(at)


def _reads(clause: str, v: Sequence[int]) -> tuple[int, list[Any]]:
    recognizer = run.compile_clause(parse_clause(clause), ["id", "v"], fast=False)
    Counted.reads = 0
    _, values = recognizer.run({"id": list(range(len(v))), "v": Counted(v)}, len(v))
    return Counted.reads, values


@pytest.mark.parametrize(
    "define",
    [
        "A AS SUM(A.v) >= 0",
        "A AS COUNT(A.v) >= 0 AND MAX(v) < 5",
        "A AS MIN(A.v) > 0 AND COUNT(*) > 0",
        "A AS SUM(v) >= 0",  # the whole match
    ],
)
def test_running_aggregate_reads_each_row_once(define: str) -> None:
    # one match of every row: recomputing each aggregate reads n(n+1)/2 values;
    # kept per thread, each row's value is read a bounded number of times
    clause = f"MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+ B) DEFINE {define}, B AS v < 0)"
    for n in (300, 600):
        reads, values = _reads(clause, [1] * (n - 1) + [-1])
        assert values == [[n]]
        assert reads <= 12 * n, (n, reads)


def test_an_overflowed_partial_sum_is_an_error_even_when_later_rows_bring_it_back() -> None:
    # SUM adds as BIGINTs: BIG + 1 overflows, though BIG + 1 - 1 fits; the
    # sum is read only at row 3 (w is NULL before, so the sum is not evaluated)
    table = pa.table(
        {
            "id": pa.array(range(4), pa.int64()),
            "v": pa.array([BIG, 1, -1, 0], pa.int64()),
            "w": pa.array([None, None, None, 0], pa.int64()),
        }
    )
    clause = "MATCH_RECOGNIZE (ORDER BY id PATTERN (A+ B) DEFINE A AS w IS NULL, B AS w + SUM(A.v) > 0)"
    result = _outputs(table, clause)
    assert isinstance(result, str) and "integer overflow" in result
    fitting = pa.table({"id": table["id"], "v": pa.array([BIG - 1, 1, -1, 0], pa.int64()), "w": table["w"]})
    assert _outputs(fitting, clause.replace("ORDER BY id", "ORDER BY id MEASURES SUM(A.v) AS s")) == [{"s": BIG - 1}]
