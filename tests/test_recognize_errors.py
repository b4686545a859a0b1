"""MATCH_RECOGNIZE errors: each is located with a caret and says what to do;
none is a Python traceback from inside the library."""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pytest

from sharp_cer.errors import RecognizeError
from sharp_cer.recognize import match_recognize
from sharp_cer.recognize.clause_errors import ClauseSyntaxError, MatchError, NotSupportedError

ROWS = pa.table({"id": [1, 2, 3, 4], "price": [3, 2, 1, 4], "name": ["a", "b", "c", "d"]})


def _error(clause: str) -> RecognizeError:
    with pytest.raises(RecognizeError) as caught:
        match_recognize(ROWS, clause)
    return caught.value


@pytest.mark.parametrize(
    ("clause", "kind", "message", "underlined"),
    [
        (
            "MATCH_RECOGNIZE (ORDER BY id PATTERN (A B) DEFINE B AS B.price < )",
            ClauseSyntaxError,
            "unexpected ')'",
            ")",
        ),
        (
            "MATCH_RECOGNIZE (ORDER BY id PATTERN (A B) DEFINE C AS true)",
            RecognizeError,
            "DEFINE names 'C', which the pattern does not use",
            "C AS true",
        ),
        (
            "MATCH_RECOGNIZE (ORDER BY id PATTERN (A B) DEFINE B AS B.prise < 3)",
            RecognizeError,
            "no column 'prise'",
            "B.prise",
        ),
        ("MATCH_RECOGNIZE (ORDER BY idd PATTERN (A))", RecognizeError, "no column 'idd'", "idd"),
        (
            "MATCH_RECOGNIZE (ORDER BY id PATTERN (A B) DEFINE B AS FINAL LAST(B.price) > 1)",
            RecognizeError,
            "FINAL cannot be used in DEFINE",
            "FINAL LAST(B.price)",
        ),
        (
            "MATCH_RECOGNIZE (ORDER BY id MEASURES PREV(A.price + B.price) AS x PATTERN (A B))",
            RecognizeError,
            "refers to several pattern variables",
            "PREV(A.price + B.price)",
        ),
        (
            "MATCH_RECOGNIZE (ORDER BY id MEASURES sqrt(price) AS x PATTERN (A))",
            NotSupportedError,
            "function 'sqrt' is not supported",
            "sqrt(price)",
        ),
        ("MATCH_RECOGNIZE (ORDER BY id SEEK PATTERN (A))", NotSupportedError, "SEEK is not supported", "SEEK"),
        (
            "MATCH_RECOGNIZE (ORDER BY id PATTERN (A{3,2}))",
            RecognizeError,
            "upper bound below its lower bound",
            "{3,2}",
        ),
        (
            "MATCH_RECOGNIZE (ORDER BY id ALL ROWS PER MATCH WITH UNMATCHED ROWS PATTERN (A {- B -}))",
            RecognizeError,
            "cannot be used with ALL ROWS PER MATCH WITH UNMATCHED ROWS",
            "{- B -}",
        ),
        (
            "MATCH_RECOGNIZE (ORDER BY id PATTERN (A B) SUBSET U = (A, C))",
            RecognizeError,
            "subset 'U' names 'C', which is not a pattern variable",
            "U = (A, C)",
        ),
        (
            "MATCH_RECOGNIZE (ORDER BY id MEASURES A.price AS price ALL ROWS PER MATCH PATTERN (A))",
            RecognizeError,
            "measure 'price' has the name of an input column",
            "A.price AS price",
        ),
        (
            "MATCH_RECOGNIZE (ORDER BY id AFTER MATCH SKIP TO FIRST X PATTERN (A))",
            RecognizeError,
            "AFTER MATCH SKIP names 'X'",
            "AFTER MATCH SKIP TO FIRST X",
        ),
        (
            "MATCH_RECOGNIZE (ORDER BY id MEASURES Z.price AS p PATTERN (A))",
            RecognizeError,
            "'Z' is not a pattern variable or subset",
            "Z.price",
        ),
        (
            "MATCH_RECOGNIZE (ORDER BY id PATTERN (A) DEFINE A AS name < 3)",
            MatchError,
            "operands of incompatible types",
            "name < 3",
        ),
        (  # issue 33 item 2: PERMUTE grew factorially with no guard
            "MATCH_RECOGNIZE (ORDER BY id PATTERN (A PERMUTE(B, C, D, E, F, G, H, I, J, K, L, M)))",
            RecognizeError,
            "PERMUTE of 12 items stands for 479,001,600 orders; at most 7 items are allowed",
            "PERMUTE(B, C, D, E, F, G, H, I, J, K, L, M)",
        ),
        (
            "MATCH_RECOGNIZE (ORDER BY id AFTER MATCH SKIP TO A PATTERN (A B))",
            MatchError,
            "cannot skip to first row of match",
            "AFTER MATCH SKIP TO A",
        ),
    ],
)
def test_located_errors(clause: str, kind: type[Exception], message: str, underlined: str) -> None:
    error = _error(clause)
    assert isinstance(error, kind)
    text = str(error)
    assert message in text
    # the caret line underlines the offending text
    source_line, caret_line = text.splitlines()[1:3]
    match = re.search(r"\^+", caret_line)
    assert match is not None
    assert source_line[match.start() : match.end()] == underlined[: match.end() - match.start()]
    assert text.splitlines()[0].startswith("<clause>:1:")


def test_thread_cap_is_an_error_not_a_runaway() -> None:
    many = pa.table({"id": list(range(30))})
    # the last 100 A rows keep every choice of A/B rows apart: 2^k threads
    clause = "MATCH_RECOGNIZE (ORDER BY id PATTERN ((A | B)+ X) DEFINE X AS LAST(A.id, 99) = 0, A AS true, B AS true)"
    with pytest.raises(MatchError, match="more than 1000 live threads"):
        match_recognize(many, clause, max_threads=1000)


def test_running_count_merges_threads_under_the_cap() -> None:
    # a running COUNT is kept per thread: threads with equal counts merge (at
    # most one per count and state), so this no longer hits the cap; no
    # match exists (at most 29 A rows)
    many = pa.table({"id": list(range(30))})
    clause = "MATCH_RECOGNIZE (ORDER BY id PATTERN ((A | B)+ X) DEFINE X AS COUNT(A.*) = 100, A AS true, B AS true)"
    assert len(match_recognize(many, clause, max_threads=1000)) == 0


def test_nested_permutes_are_limited_by_their_expansion() -> None:
    six = "PERMUTE(A, B, C, D, E, F)"
    error = _error(f"MATCH_RECOGNIZE (ORDER BY id PATTERN (PERMUTE({six}, {six}, {six})))")
    assert "the pattern expands to about" in str(error) and error.span is not None  # type: ignore[attr-defined]


def test_permute_of_seven_runs() -> None:
    clause = "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (PERMUTE(A, B, C, D, E, F, G)))"
    assert match_recognize(ROWS, clause).num_rows == 0  # seven rows needed, four given


def test_readme_example_runs() -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    section = readme.split("### MATCH_RECOGNIZE", 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    exec(compile(code, "README.md", "exec"), {})


@pytest.mark.parametrize(
    "clause",
    [
        "MATCH_RECOGNIZE (PATTERN (" + "(" * 3000 + "A" + ")" * 3000 + "))",
        "MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS " + " + ".join(["price"] * 5000) + " > 1)",
        "MATCH_RECOGNIZE (PATTERN (A) DEFINE A AS " + "NOT " * 400 + "price > 1)",
    ],
)
def test_deep_nesting_is_a_located_error(clause: str) -> None:
    error = _error(clause)
    assert "nested more than 200 deep" in str(error) and error.span is not None  # type: ignore[attr-defined]


def test_bound_beyond_what_re_repeats_takes_the_general_matcher() -> None:
    clause = "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (A{99999999999999999999}))"
    out = match_recognize(ROWS, clause)
    assert out.num_rows == 0


def test_case_expression() -> None:
    out = match_recognize(
        ROWS,
        "MATCH_RECOGNIZE (ORDER BY id MEASURES CASE WHEN price > 2 THEN 'high' ELSE 'low' END "
        "AS level ALL ROWS PER MATCH PATTERN (A))",
    )
    assert out.column("level").to_pylist() == ["high", "low", "low", "high"]


def test_wrong_inputs_are_errors_not_tracebacks() -> None:
    import pandas as pd

    with pytest.raises(RecognizeError, match="pandas DataFrame or an Arrow table, found list"):
        match_recognize([1, 2], "MATCH_RECOGNIZE (PATTERN (A))")
    with pytest.raises(RecognizeError, match="clause as text, found int"):
        match_recognize(ROWS, 5)  # type: ignore[arg-type]
    with pytest.raises(RecognizeError, match="cannot be read as typed columns"):
        match_recognize(pd.DataFrame({"x": [1, "a"]}), "MATCH_RECOGNIZE (PATTERN (A))")
