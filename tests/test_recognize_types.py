"""Input types and integer ranges (issue 33 items 4 and 5): sort keys SQL
sorts (NULLs, categoricals) are sorted, others are a located error; a frame
with two columns of one name is an error; integer arithmetic beyond int64
is a located error on the fast path and the general path alike, never a
silent wrap-around or a traceback."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from sharp_cer.errors import RecognizeError
from sharp_cer.recognize import match_recognize, parse_clause
from sharp_cer.recognize.run import compile_clause, recognize_table

MAX = 2**63 - 1
ROWS = pa.table(
    {
        "id": [1, 2, 3],
        "d": pa.array([MAX, MAX, -MAX - 1], pa.int64()),
        "u": pa.array([2**64 - 1, 5, 6], pa.uint64()),
    }
)


def _both(table: pa.Table, text: str) -> list[object]:
    """The outcome on the fast path and on the general path: rows or the error's text."""
    out: list[object] = []
    for fast in (True, False):
        try:
            out.append(
                recognize_table(table, compile_clause(parse_clause(text), table.column_names, fast=fast)).to_pylist()
            )
        except RecognizeError as err:
            out.append(str(err))
    return out


def _underlined(error: str) -> str:
    source, caret = error.splitlines()[1:3]
    found = re.search(r"\^+", caret)
    assert found is not None
    return source[found.start() : found.end()]


@pytest.mark.parametrize(
    ("measure", "underlined"),
    [
        ("SUM(d)", "SUM(d)"),  # two int64 maxima
        ("A.d + 1", "A.d + 1"),
        ("-LAST(C.d)", "-LAST(C.d)"),  # int64's minimum negated
        ("ABS(LAST(C.d))", "ABS(LAST(C.d))"),
        ("SUM(u)", "SUM(u)"),  # uint64 beyond int64
        ("A.d * 2", "A.d * 2"),
    ],
)
def test_overflow_in_measures_is_a_located_error(measure: str, underlined: str) -> None:
    text = f"MATCH_RECOGNIZE (ORDER BY id MEASURES {measure} AS m PATTERN (A B C))"
    fast, general = _both(ROWS, text)
    assert fast == general
    assert isinstance(fast, str) and "integer overflow" in fast
    assert _underlined(fast) == underlined


@pytest.mark.parametrize(
    "clause",
    [
        "MATCH_RECOGNIZE (ORDER BY id MEASURES 99999999999999999999 AS m PATTERN (A))",
        "MATCH_RECOGNIZE (ORDER BY id MEASURES PREV(A.d, 99999999999999999999) AS m PATTERN (A))",
        "MATCH_RECOGNIZE (ORDER BY id PATTERN (A) DEFINE A AS d < 99999999999999999999)",
    ],
)
def test_integer_literals_beyond_int64_are_located_errors(clause: str) -> None:
    with pytest.raises(RecognizeError, match="99999999999999999999 is beyond the 64-bit range") as caught:
        match_recognize(ROWS, clause)
    assert _underlined(str(caught.value)) == "99999999999999999999"


def test_overflow_in_define_is_an_error_on_both_paths() -> None:
    # issue 33 item 5: numpy wrapped d + 1 around to int64's minimum, so d + 1 > d was false on the fast path
    fast, general = _both(ROWS, "MATCH_RECOGNIZE (ORDER BY id MEASURES A.id AS i PATTERN (A) DEFINE A AS d + 1 > d)")
    assert fast == general
    assert isinstance(fast, str) and "integer overflow" in fast and _underlined(fast) == "d + 1"


def test_large_integers_against_floats_compare_exactly_on_both_paths() -> None:
    # 2**63 - 1 as a float is 2**63: numpy's comparison said d >= 9223372036854775808.0
    text = "MATCH_RECOGNIZE (ORDER BY id MEASURES A.id AS i PATTERN (A) DEFINE A AS d >= 9223372036854775808.0)"
    assert _both(ROWS, text) == [[], []]


def test_arithmetic_within_range_is_unchanged() -> None:
    text = "MATCH_RECOGNIZE (ORDER BY id MEASURES A.id AS i PATTERN (A) DEFINE A AS d - 1 < d)"
    assert _both(ROWS.slice(0, 2), text) == [[{"i": 1}, {"i": 2}], [{"i": 1}, {"i": 2}]]


def test_sorting_nulls_and_categoricals() -> None:
    frame = pd.DataFrame(
        {
            "k": pd.Categorical(["b", "a", "b", "a"], categories=["b", "a"]),
            "n": [None, None, None, None],
            "t": [4, 3, 2, 1],
        }
    )
    out = match_recognize(
        frame,
        "MATCH_RECOGNIZE (PARTITION BY k, n ORDER BY n, t MEASURES FIRST(t) AS first_t, COUNT(*) AS rows "
        "ONE ROW PER MATCH PATTERN (A+))",
    )
    # the partitions sorted by the categories' values (a before b), rows by t within each
    assert out[["k", "first_t", "rows"]].astype(object).values.tolist() == [["a", 1, 2], ["b", 2, 2]]


@pytest.mark.parametrize(
    ("column", "kind"),
    [
        (pa.array(np.array([1, 2, 3], np.float16)), "halffloat"),
        (pa.array([{"x": 1}, {"x": 2}, {"x": 3}]), "struct"),
        (pa.array([[1], [2], [3]]), "list"),
    ],
)
@pytest.mark.parametrize("where", ["ORDER BY", "PARTITION BY"])
def test_unsortable_keys_are_located_errors(column: pa.Array, kind: str, where: str) -> None:
    table = pa.table({"id": [1, 2, 3], "key": column})
    clause = f"MATCH_RECOGNIZE ({where} key PATTERN (A))"
    with pytest.raises(RecognizeError, match=f"{where} cannot sort column 'key' of type {kind}") as caught:
        match_recognize(table, clause)
    assert _underlined(str(caught.value)) == "key"


def test_duplicate_column_names_are_an_error() -> None:
    frame = pd.DataFrame([[1, 2, 3]], columns=["id", "v", "v"])
    with pytest.raises(RecognizeError, match="more than one column named v"):
        match_recognize(frame, "MATCH_RECOGNIZE (ORDER BY id PATTERN (A))")
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2]), pa.array([3])], names=["id", "v", "v"])
    with pytest.raises(RecognizeError, match="more than one column named v"):
        match_recognize(table, "MATCH_RECOGNIZE (ORDER BY id PATTERN (A))")
