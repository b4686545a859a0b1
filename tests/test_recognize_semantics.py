"""Hand-computed MATCH_RECOGNIZE cases for what the golden files do not
cover: NULL ordering and NULL partition keys, PERMUTE of three, running
against final aggregates in ALL ROWS PER MATCH."""

from __future__ import annotations

import pyarrow as pa

from sharp_cer.recognize import match_recognize


def test_nulls_first_and_last_in_order_by() -> None:
    rows = pa.table({"id": [2, None, 1, 3], "v": ["b", "n", "a", "c"]})
    clause = "MATCH_RECOGNIZE (ORDER BY id {} MEASURES ARRAY_AGG(v) AS seen ONE ROW PER MATCH PATTERN (A+))"
    assert match_recognize(rows, clause.format("NULLS FIRST")).column("seen").to_pylist() == [["n", "a", "b", "c"]]
    assert match_recognize(rows, clause.format("")).column("seen").to_pylist() == [["a", "b", "c", "n"]]
    assert match_recognize(rows, clause.format("DESC NULLS LAST")).column("seen").to_pylist() == [["c", "b", "a", "n"]]


def test_null_partition_key_is_one_partition() -> None:
    rows = pa.table({"k": ["x", None, "x", None], "id": [1, 2, 3, 4]})
    out = match_recognize(
        rows, "MATCH_RECOGNIZE (PARTITION BY k ORDER BY id MEASURES COUNT(*) AS n ONE ROW PER MATCH PATTERN (A+))"
    )
    assert sorted(out.to_pylist(), key=lambda r: str(r["k"])) == [{"k": None, "n": 2}, {"k": "x", "n": 2}]


def test_permute_of_three_prefers_lexicographic_order() -> None:
    # row 1 fits B and C, row 2 A and C, row 3 A and B. In lexicographic order: A B C and A C B fail
    # (row 1 is no A), B A C fails (row 3 is no C), B C A fits; C A B would fit too but comes later.
    rows = pa.table({"id": [1, 2, 3], "a": [False, True, True], "b": [True, False, True], "c": [True, True, False]})
    out = match_recognize(
        rows,
        "MATCH_RECOGNIZE (ORDER BY id MEASURES CLASSIFIER() AS label ALL ROWS PER MATCH "
        "PATTERN (PERMUTE(A, B, C)) DEFINE A AS a, B AS b, C AS c)",
    )
    assert out.column("label").to_pylist() == ["B", "C", "A"]


def test_running_and_final_sum_in_all_rows() -> None:
    rows = pa.table({"id": [1, 2, 3], "v": [10, None, 5]})
    out = match_recognize(
        rows,
        "MATCH_RECOGNIZE (ORDER BY id MEASURES RUNNING SUM(v) AS r, FINAL SUM(v) AS f, "
        "RUNNING AVG(v) AS a, COUNT(v) AS n ALL ROWS PER MATCH PATTERN (A+))",
    )
    assert out.select(["r", "f", "a", "n"]).to_pylist() == [
        {"r": 10, "f": 15, "a": 10.0, "n": 1},
        {"r": 10, "f": 15, "a": 10.0, "n": 1},
        {"r": 15, "f": 15, "a": 7.5, "n": 2},
    ]
