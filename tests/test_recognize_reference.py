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
