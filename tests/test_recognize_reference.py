"""The whole in-process run (real DEFINE conditions that read the match so
far, measures, skips, output modes) with the thread-list matcher against the
same run with the brute-force reference matcher in its place."""

from __future__ import annotations

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

DEFINES = [
    # reads the match so far: aggregates, FIRST, CLASSIFIER of the previous row
    "DEFINE A AS COUNT(A.*) <= 1, B AS SUM(B.v) < 3 OR v IS NULL, C AS COUNT(B.*) = 1 OR FIRST(v) = v",
    "DEFINE A AS PREV(CLASSIFIER()) IS NULL OR PREV(CLASSIFIER()) <> 'A', B AS AVG(v) > 1, C AS v = LAST(A.v)",
    # windows over the ORDER BY column (issue 33 item 3), row-local conjuncts, first/last rows of a variable
    "DEFINE A AS COUNT(*) <= 4, B AS id - FIRST(id) <= 2 AND v IS NOT NULL, C AS id - FIRST(id) < 4 AND "
    "(v = 1 OR A.v IS NULL)",
    "DEFINE A AS FIRST(A.v, 1) IS NULL OR v >= FIRST(A.v, 1), B AS v > A.v OR LAST(B.v, 1) IS NULL, "
    "C AS CLASSIFIER(A) = 'A' AND v <> FIRST(C.v)",
]
MODES = [
    "MEASURES CLASSIFIER() AS m1, RUNNING COUNT(*) AS m2, FINAL SUM(v) AS m3, MATCH_NUMBER() AS m4 ALL ROWS PER MATCH",
    "MEASURES CLASSIFIER() AS m1, COUNT(B.*) AS m2 ALL ROWS PER MATCH WITH UNMATCHED ROWS",
    "MEASURES FIRST(v) AS m1, LAST(B.v) AS m2, COUNT(*) AS m3 ONE ROW PER MATCH",
]
SKIPS = ["AFTER MATCH SKIP PAST LAST ROW", "AFTER MATCH SKIP TO NEXT ROW", "AFTER MATCH SKIP TO LAST B"]


def _outputs(table: pa.Table, text: str) -> Any:
    clause = parse_clause(text)
    try:
        return run.recognize_table(table, run.compile_clause(clause, table.column_names, fast=False)).to_pylist()
    except RecognizeError as err:
        return str(err)


@settings(max_examples=100, deadline=None)
@given(
    _patterns(),
    st.lists(st.tuples(st.sampled_from(["x", "y"]), st.one_of(st.none(), st.integers(0, 3))), max_size=9),
    st.sampled_from(DEFINES),
    st.sampled_from(MODES),
    st.sampled_from(SKIPS),
)
def test_run_with_reference_matcher(
    pattern: nodes.Pattern, data: list[tuple[str, int | None]], define: str, mode: str, skip: str
) -> None:
    if "UNMATCHED" in mode and "{-" in _pattern_text(pattern):
        return  # exclusions with unmatched rows are an error in both runs, tested elsewhere
    table = pa.table(
        {
            "p": pa.array([p for p, _ in data], pa.string()),
            "id": pa.array(range(len(data)), pa.int64()),
            "v": pa.array([v for _, v in data], pa.int64()),
        }
    )
    text = (
        f"MATCH_RECOGNIZE (PARTITION BY p ORDER BY id {mode} {skip} "
        f"PATTERN ((A | B) {_pattern_text(pattern)} | (A B C) ^ ^ $) {define})"
    )
    expected_with_vm = _outputs(table, text)
    variables = nodes.pattern_variables(parse_clause(text).pattern)

    def oracle(program: Any, start: int, size: int, condition: Any, **_: Any) -> Any:
        return reference_match(parse_clause(text).pattern, variables, start, size, condition)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run, "first_match", oracle)
        assert _outputs(table, text) == expected_with_vm


@settings(max_examples=100, deadline=None)
@given(
    _patterns(),
    st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.integers(0, 3))), max_size=9),
    st.integers(0, 3),
    st.sampled_from(SKIPS[:2]),
)
def test_window_from_the_first_variable(
    pattern: nodes.Pattern, data: list[tuple[int, int | None]], limit: int, skip: str
) -> None:
    """``E.t - S.t <= limit`` with S the pattern's first row (a window over the
    ORDER BY column, with ties): the pruned run equals the reference's."""
    table = pa.table({"t": pa.array(sorted(t for t, _ in data), pa.int64()), "v": [v for _, v in data]})
    text = (
        f"MATCH_RECOGNIZE (ORDER BY t MEASURES FIRST(t) AS m1, COUNT(*) AS m2, LAST(C.t) AS m3 ONE ROW PER MATCH "
        f"{skip} PATTERN (S ({_pattern_text(pattern)} | A B ^) C) "
        f"DEFINE S AS v IS NOT NULL, C AS C.t - S.t <= {limit} AND v <> 0, B AS t - S.t < {limit})"
    )
    assert run.compile_clause(parse_clause(text), ["t", "v"], fast=False).windows != (None, None, None, None)
    expected_with_vm = _outputs(table, text)
    variables = nodes.pattern_variables(parse_clause(text).pattern)

    def oracle(program: Any, start: int, size: int, condition: Any, **_: Any) -> Any:
        return reference_match(parse_clause(text).pattern, variables, start, size, condition)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(run, "first_match", oracle)
        assert _outputs(table, text) == expected_with_vm
