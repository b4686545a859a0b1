"""Loading a large workload is linear in its text (issue 33 item 11): each
query's keys are located without rescanning the TOML from the top. Counted
in lines looked at, not timed (benchmarks/bench_check.py times 10,000)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, SupportsIndex

import pytest

from sharp_cer.language import parse_workload, workload
from sharp_cer.language.source import lines_of


class _Counted(list[str]):
    """The workload's lines, counting every line read."""

    reads = 0

    def __iter__(self) -> Iterator[str]:
        for line in super().__iter__():
            _Counted.reads += 1
            yield line

    def __getitem__(self, index: SupportsIndex | slice) -> Any:
        found = super().__getitem__(index)
        _Counted.reads += len(found) if isinstance(index, slice) else 1
        return found


def _text(n: int) -> str:
    head = '[workload]\nname = "w"\nschema = """\nCREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }\n"""\n'
    queries = "".join(
        f'\n[[query]]\nname = "q{i}"\ntenant = "t{i % 3}"\n'
        f'text = """\nSELECT * WHERE A ; B WITHIN {i + 2} EVENTS\n"""\n'
        for i in range(n)
    )
    return head + queries


def _reads(n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    text = _text(n)
    monkeypatch.setattr(workload, "lines_of", lambda t: _Counted(lines_of(t)))
    _Counted.reads = 0
    assert len(parse_workload(text).queries) == n
    return _Counted.reads, len(lines_of(text))


def test_lines_read_grow_linearly_with_the_queries(monkeypatch: pytest.MonkeyPatch) -> None:
    small, small_lines = _reads(50, monkeypatch)
    large, large_lines = _reads(400, monkeypatch)
    # a few reads per line, whatever the size (rescanning from the top per query: ~queries/2 per line)
    assert large / large_lines <= 2 * small / small_lines
    assert large <= 20 * large_lines


def test_errors_are_still_located_in_a_large_workload() -> None:
    text = _text(300).replace('name = "q250"\ntenant = "t1"', 'name = "q250"\ntenant = 5')
    with pytest.raises(Exception) as caught:
        parse_workload(text)
    line = text[: text.index("tenant = 5")].count("\n") + 1
    assert f":{line}:" in str(caught.value) and "tenant must be a string" in str(caught.value)
