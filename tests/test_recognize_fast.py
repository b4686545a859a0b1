"""The fast path (numpy conditions, the pattern as a regular expression over
row codes, column-wise ONE ROW PER MATCH measures) against the general
thread-list path: equal output, or the same error, on random patterns,
rows and options."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from test_recognize_matcher import _patterns

from sharp_cer.errors import RecognizeError
from sharp_cer.recognize import nodes
from sharp_cer.recognize.clause_parser import parse_clause
from sharp_cer.recognize.run import compile_clause, recognize_table

DEFINE = "DEFINE A AS v > PREV(v), B AS v < PREV(v) OR v IS NULL, C AS v BETWEEN 1 AND 2 AND NOT NEXT(v) = 0"
ONE_ROW = (
    "MEASURES FIRST(v) AS m1, LAST(A.v) AS m2, PREV(LAST(B.id)) AS m3, COUNT(*) AS m4, COUNT(C.*) AS m5, "
    "MATCH_NUMBER() AS m6, B.id AS m7, NEXT(v, 2) AS m8, FIRST(C.id) AS m9 ONE ROW PER MATCH"
)
ALL_ROWS = "MEASURES CLASSIFIER() AS m1, RUNNING COUNT(*) AS m2, FINAL LAST(A.v) AS m3 ALL ROWS PER MATCH"
UNMATCHED = "MEASURES CLASSIFIER() AS m1, MATCH_NUMBER() AS m2 ALL ROWS PER MATCH WITH UNMATCHED ROWS"
SKIPS = [
    "AFTER MATCH SKIP PAST LAST ROW",
    "AFTER MATCH SKIP TO NEXT ROW",
    "AFTER MATCH SKIP TO LAST A",
    "AFTER MATCH SKIP TO FIRST C",
]


def _pattern_text(node: nodes.Pattern) -> str:
    if isinstance(node, nodes.Variable):
        return node.name
    if isinstance(node, nodes.Concatenation):
        return "(" + " ".join(_pattern_text(i) for i in node.items) + ")"
    if isinstance(node, nodes.Alternation):
        return "(" + " | ".join(_pattern_text(i) for i in node.items) + ")"
    if isinstance(node, nodes.Permute):
        return "PERMUTE(" + ", ".join(_pattern_text(i) for i in node.items) + ")"
    if isinstance(node, nodes.Anchor):
        return "^" if node.kind == "start" else "$"
    if isinstance(node, nodes.Exclusion):
        return "{- " + _pattern_text(node.body) + " -}"
    high = "" if node.high is None else str(node.high)
    return f"({_pattern_text(node.body)}){{{node.low},{high}}}" + ("" if node.greedy else "?")


def _run(table: pa.Table, text: str, fast: bool) -> object:
    try:
        clause = parse_clause(text)  # exclusions with WITH UNMATCHED ROWS: the same error both ways
        return recognize_table(table, compile_clause(clause, table.column_names, fast=fast)).to_pylist()
    except RecognizeError as err:
        return str(err)


rows = st.lists(st.tuples(st.sampled_from(["x", "y"]), st.one_of(st.none(), st.integers(0, 3))), max_size=14)


@settings(max_examples=300, deadline=None)
@given(_patterns(), rows, st.sampled_from(SKIPS), st.sampled_from([ONE_ROW, ALL_ROWS, UNMATCHED]))
def test_fast_path_equals_general_path(
    pattern: nodes.Pattern, data: list[tuple[str, int | None]], skip: str, mode: str
) -> None:
    table = pa.table(
        {
            "p": pa.array([p for p, _ in data], pa.string()),
            "id": pa.array(range(len(data)), pa.int64()),
            "v": pa.array([v for _, v in data], pa.int64()),
        }
    )
    variables = " ".join(sorted(set(nodes.pattern_variables(pattern)) | {"A", "B", "C"}))
    # every defined variable must occur in the pattern: add the missing ones in a branch never preferred
    text = (
        f"MATCH_RECOGNIZE (PARTITION BY p ORDER BY id {mode} {skip} "
        f"PATTERN ({_pattern_text(pattern)} | ({variables}) ^ ^ $) {DEFINE})"
    )
    assert _run(table, text, fast=True) == _run(table, text, fast=False)


def test_fast_path_is_taken_for_the_v_shape() -> None:
    clause = parse_clause(
        "MATCH_RECOGNIZE (PARTITION BY s ORDER BY t MEASURES LAST(DOWN.t) AS bottom ONE ROW PER MATCH "
        "AFTER MATCH SKIP TO LAST UP PATTERN (STRT DOWN+ UP+) "
        "DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price))"
    )
    recognizer = compile_clause(clause, ["s", "t", "price"])
    assert recognizer.vectorize and recognizer.automaton is not None and recognizer.plans is not None
