"""Golden MATCH_RECOGNIZE cases from tests/fixtures/match_recognize/*.json.

A file names its ``source`` and holds ``groups`` of cases (or, for a single
group, the group's keys at the top). A group gives the input (``columns``,
``rows``), the output columns it checks (``select``) and may give a clause
``template`` whose ``%s`` each case's ``fill`` (a string or a list) replaces;
a case gives its ``clause`` or ``fill`` and either the ``expected`` rows
(compared as a multiset, as the sources' own assertions do) or an ``error``
(a fragment of the message); ``layout`` lists the output's columns in order.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

FIXTURES = Path(__file__).parent / "fixtures" / "match_recognize"


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    columns: list[str]
    rows: list[list[Any]]
    clause: str
    select: list[str]
    expected: list[list[Any]] | None
    error: str | None
    layout: list[str] | None

    def table(self) -> pa.Table:
        """The input; a column of an empty input is typed int64 (the sources' inputs are typed)."""
        return pa.table(
            {
                name: pa.array([row[i] for row in self.rows], type=None if self.rows else pa.int64())
                for i, name in enumerate(self.columns)
            }
        )


def _clause(group: dict[str, Any], raw: dict[str, Any]) -> str:
    if "clause" in raw:
        return str(raw["clause"])
    fill = raw["fill"] if isinstance(raw["fill"], list) else [raw["fill"]]
    text = str(group["template"])
    for part in fill:
        text = text.replace("%s", part, 1)
    return text


def load_cases() -> list[Case]:
    cases = []
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text())
        for group in data.get("groups", [data]):
            prefix = f"{path.stem}:{group['name']}:" if "name" in group else f"{path.stem}:"
            for raw in group["cases"]:
                cases.append(
                    Case(
                        prefix + raw["name"],
                        data["source"],
                        raw.get("columns", group.get("columns")),
                        raw.get("rows", group.get("rows")),
                        _clause(group, raw),
                        raw.get("select", group.get("select", [])),
                        raw.get("expected"),
                        raw.get("error"),
                        raw.get("layout"),
                    )
                )
    return cases


def as_multiset(rows: list[list[Any]]) -> Counter[tuple[Any, ...]]:
    """Rows as a multiset; floats rounded so 2.5 from AVG equals 2.5 written in the fixture."""
    return Counter(tuple(_hashable(v) for v in row) for row in rows)


def _hashable(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value
