"""Milliseconds in CEQL windows (issue 35): ``MILLISECONDS``, ``MILLISECOND`` and
``MS``, alone or after larger units, and a hint that lists the units."""

from __future__ import annotations

import pytest

from sharp_cer.language import ast, parse_query
from sharp_cer.language.diagnostics import CeqlSyntaxError
from sharp_cer.language.printer import to_ceql


@pytest.mark.parametrize(
    ("text", "window", "nanoseconds"),
    [
        ("WITHIN 500 MILLISECONDS", ast.TimeWindow(milliseconds=500), 500 * 10**6),
        ("WITHIN 1 millisecond", ast.TimeWindow(milliseconds=1), 10**6),
        ("WITHIN 250 ms", ast.TimeWindow(milliseconds=250), 250 * 10**6),
        ("WITHIN 1 SECONDS 500 MS", ast.TimeWindow(seconds=1, milliseconds=500), 1_500 * 10**6),
        ("WITHIN 2 MINUTES 3 MS", ast.TimeWindow(minutes=2, milliseconds=3), 120_003 * 10**6),
        ("WITHIN 0.5 MS", ast.TimeWindow(milliseconds=0.5), 500_000),
    ],
)
def test_millisecond_windows(text: str, window: ast.TimeWindow, nanoseconds: int) -> None:
    query = parse_query(f"SELECT * WHERE A ; B {text}")
    assert query.within == window
    assert window.nanoseconds == nanoseconds
    assert parse_query(to_ceql(query)) == query


def test_ms_is_still_a_name_elsewhere() -> None:
    query = parse_query("SELECT * WHERE ms AS x FILTER x[ms > 1] WITHIN 5 ms")
    assert query.within == ast.TimeWindow(milliseconds=5)
    assert parse_query(to_ceql(query)) == query


@pytest.mark.parametrize("unit", ["msec", "millis", "seconde"])
def test_unknown_unit_hint_lists_the_units(unit: str) -> None:
    with pytest.raises(CeqlSyntaxError) as caught:
        parse_query(f"SELECT * WHERE A ; B WITHIN 500 {unit}")
    error = caught.value
    assert "MILLISECONDS (or MS)" in (error.expected or "")
    for name in ("HOURS", "MINUTES", "SECONDS", "MILLISECONDS (or MS)"):
        assert name in (error.hint or "")


def test_units_go_largest_first() -> None:
    with pytest.raises(CeqlSyntaxError) as caught:
        parse_query("SELECT * WHERE A ; B WITHIN 5 SECONDS 3 HOURS")
    assert "largest first" in (caught.value.hint or "")
