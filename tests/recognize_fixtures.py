"""Golden MATCH_RECOGNIZE cases from tests/fixtures/match_recognize/*.json.

A file names its source and may give shared ``columns``/``rows``; each case
has a ``clause``, the output columns it checks (``select``) and either the
``expected`` rows (compared as a multiset, as the sources' own assertions
do) or an ``error`` (a fragment of the message).
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

    def table(self) -> pa.Table:
        return pa.table({name: pa.array([row[i] for row in self.rows]) for i, name in enumerate(self.columns)})


def load_cases() -> list[Case]:
    cases = []
    for path in sorted(FIXTURES.glob("*.json")):
        data = json.loads(path.read_text())
        for raw in data["cases"]:
            cases.append(Case(
                f"{path.stem}:{raw['name']}", data["source"], raw.get("columns", data.get("columns")),
                raw.get("rows", data.get("rows")), raw["clause"], raw.get("select", []),
                raw.get("expected"), raw.get("error"),
            ))
    return cases


def as_multiset(rows: list[list[Any]]) -> Counter[tuple[Any, ...]]:
    """Rows as a multiset; floats rounded so 2.5 from AVG equals 2.5 written in the fixture."""
    return Counter(tuple(round(v, 9) if isinstance(v, float) else v for v in row) for row in rows)
