"""RUNNING semantics in ALL ROWS PER MATCH (issue 33 item 6): a measure sees
the match up to the current row unless FINAL is written, FIRST included
(Trino's documentation, "RUNNING and FINAL semantics": only the preceding
part of the match plus the current row is visible; Trino's own test
``first_offset`` shows the final value from the first row, and our fixture
of it notes the deviation). Hand-computed over five rows matched as
A A B A B (v = 10, 20, 30, 40, 50)."""

from __future__ import annotations

import pyarrow as pa

from sharp_cer.recognize import match_recognize

ROWS = pa.table({"id": [1, 2, 3, 4, 5], "v": [10, 20, 30, 40, 50]})
MEASURES = {
    # measure: its value on each of the five rows, by hand
    "CLASSIFIER()": ["A", "A", "B", "A", "B"],
    "SUM(A.v)": [10, 30, 30, 70, 70],
    "COUNT(*)": [1, 2, 3, 4, 5],
    "COUNT(B.*)": [0, 0, 1, 1, 2],
    "LAST(A.v, 1)": [None, 10, 10, 20, 20],  # the A before the last A so far
    "LAST(B.v)": [None, None, 30, 30, 50],
    "B.v": [None, None, 30, 30, 50],
    "PREV(LAST(B.v))": [None, None, 20, 20, 40],
    "NEXT(LAST(A.v))": [20, 30, 30, 50, 50],  # physical: may read past the current row
    "NEXT(v)": [20, 30, 40, 50, None],
    "AVG(v)": [10.0, 15.0, 20.0, 25.0, 30.0],
    "MIN(B.v)": [None, None, 30, 30, 30],
    "MAX(A.v)": [10, 20, 20, 40, 40],
    "ARRAY_AGG(A.v)": [[10], [10, 20], [10, 20], [10, 20, 40], [10, 20, 40]],
    "CLASSIFIER(B)": [None, None, "B", "B", "B"],
    "RUNNING LAST(v)": [10, 20, 30, 40, 50],
    "FIRST(v, 1)": [None, 20, 20, 20, 20],  # no second row yet on the first
    "FIRST(B.v)": [None, None, 30, 30, 30],  # no B row yet on the first two
    "FIRST(A.v, 2)": [None, None, None, 40, 40],
    "RUNNING FIRST(v, 4)": [None, None, None, None, 50],
    "PREV(FIRST(B.v), 1)": [None, None, 20, 20, 20],
    "FINAL FIRST(v, 1)": [20] * 5,
    "FINAL FIRST(B.v)": [30] * 5,
    "FINAL LAST(B.v)": [50] * 5,
    "FINAL COUNT(*)": [5] * 5,
    "FINAL SUM(A.v)": [70] * 5,
    "FINAL LAST(A.v, 1)": [20] * 5,
    "MATCH_NUMBER()": [1] * 5,
}


def test_running_measures_by_hand() -> None:
    names = [f"m{i}" for i in range(len(MEASURES))]
    measures = ", ".join(f"{text} AS {name}" for text, name in zip(MEASURES, names, strict=True))
    out = match_recognize(
        ROWS, f"MATCH_RECOGNIZE (ORDER BY id MEASURES {measures} ALL ROWS PER MATCH PATTERN (A A B A B))"
    )
    for (text, expected), name in zip(MEASURES.items(), names, strict=True):
        assert out.column(name).to_pylist() == expected, text


def test_one_row_per_match_is_final() -> None:
    out = match_recognize(
        ROWS,
        "MATCH_RECOGNIZE (ORDER BY id MEASURES LAST(A.v, 1) AS a, RUNNING COUNT(*) AS n, CLASSIFIER() AS c, "
        "FIRST(v, 4) AS f ONE ROW PER MATCH PATTERN (A A B A B))",
    )
    assert out.to_pylist() == [{"a": 20, "n": 5, "c": "B", "f": 50}]
