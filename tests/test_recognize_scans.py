"""MATCH_RECOGNIZE scans that used to backtrack or rescan (issue 33 items 1
and 3, issue 40 item 7): each case counts the matcher's work, or, for the
fast path whose old regex had no hook, runs under a generous per-case time
limit (seconds where the old code took minutes); each result equals the
general matcher's. Their times at several sizes are in
``benchmarks/bench_match_recognize.py --scans``."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from sharp_cer.events.generators import stocks
from sharp_cer.recognize import expressions, matcher, parse_clause
from sharp_cer.recognize.run import compile_clause, recognize_table


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def expire(*_: Any) -> None:
        raise TimeoutError(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _run(table: pa.Table, text: str, fast: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = recognize_table(
        table, compile_clause(parse_clause(text), table.column_names, fast=fast)
    ).to_pylist()
    return out


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Calls of the thread-list matcher's closure step and of the aggregates' row lists."""
    counts = {"close": 0, "rows": 0}
    close, rows = matcher._close, expressions._rows

    def counting_close(*args: Any, **kw: Any) -> Any:
        counts["close"] += 1
        return close(*args, **kw)

    def counting_rows(*args: Any, **kw: Any) -> Any:
        counts["rows"] += 1
        return rows(*args, **kw)

    monkeypatch.setattr(matcher, "_close", counting_close)
    monkeypatch.setattr(expressions, "_rows", counting_rows)
    return counts


def _ones(rows: int) -> pa.Table:
    return pa.table({"id": np.arange(rows), "v": np.ones(rows, np.int64)})


def test_ambiguous_stars_do_not_backtrack() -> None:
    # issue 33 item 1: 55 s on 100 rows with the regex; the general matcher 0.5 s
    text = (
        "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (A* A* A* A* A* F) DEFINE A AS v = 1, F AS v = 2)"
    )
    with time_limit(20):
        assert _run(_ones(100), text, fast=True) == [] == _run(_ones(100), text, fast=False)


def test_a_plus_b_without_b_on_the_fast_path() -> None:
    # issue 40 item 7: 100k rows took 57.8 s (each start rescanned the A run)
    text = "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+ B) DEFINE A AS v = 1, B AS v = 2)"
    with time_limit(30):
        assert _run(_ones(200_000), text, fast=True) == []


def test_a_plus_b_without_b_on_the_general_path(counted: dict[str, int]) -> None:
    text = "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+ B) DEFINE A AS v = 1, B AS v = 2)"
    assert _run(_ones(2_000), text, fast=False) == []
    assert counted["close"] <= 4 * 2_000


def test_aggregate_in_define_is_not_rescanned_per_start(counted: dict[str, int]) -> None:
    # issue 40 item 7: SUM(A.v) >= 0 recomputed per row and start, cubic (1,200 rows 42 s)
    text = "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n PATTERN (A+ B) DEFINE A AS SUM(A.v) >= 0, B AS v = 2)"
    assert _run(_ones(1_200), text, fast=False) == []
    assert counted["rows"] <= 4 * 1_200


def test_counted_optional_with_skip_to_next_row(counted: dict[str, int]) -> None:
    # issue 40 item 7: (A?){1000} with SKIP TO NEXT ROW, 14.7 s on 100 rows
    text = (
        "MATCH_RECOGNIZE (ORDER BY id MEASURES COUNT(*) AS n ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW "
        "PATTERN ((A?){1000}) DEFINE A AS v = 1)"
    )
    out = _run(_ones(100), text, fast=False)
    assert [r["n"] for r in out] == list(range(100, 0, -1))
    assert counted["close"] <= 4 * 100


STOCK_DEFINE = (
    "S AS type = 'SELL' AND name = 'MSFT', B AS type = 'BUY' AND name = 'ORCL', S2 AS type = 'SELL' AND name = 'AMAT'"
)


@pytest.mark.parametrize(
    "pattern, skip, bound",
    [
        ("S X1*? B+? X2*? S2", "", ""),
        ("S X1*? B+ X2*? S2", "", ""),
        ("S X1*? B+? X2*? S2", "AFTER MATCH SKIP TO NEXT ROW", ""),
        ("S X1*? B+? X2*? S2", "AFTER MATCH SKIP TO NEXT ROW", " AND S2.t - S.t <= 60000000000"),
    ],
)
def test_reluctant_ceql_style_patterns(pattern: str, skip: str, bound: str, counted: dict[str, int]) -> None:
    # issue 33 item 3: 20,000 stock rows did not finish in 150 s
    rows = 2_000
    table = pa.Table.from_pandas(stocks(rows)[["id", "type", "name", "t"]], preserve_index=False)
    text = (
        f"MATCH_RECOGNIZE (ORDER BY t, id MEASURES S.id AS s, LAST(B.id) AS b, S2.id AS s2 ONE ROW PER MATCH "
        f"{skip} PATTERN ({pattern}) DEFINE {STOCK_DEFINE}{bound})"
    )
    fast = _run(table, text, fast=True)
    assert fast and fast == _run(table, text, fast=False)
    assert counted["close"] <= 50 * rows
