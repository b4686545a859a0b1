"""Every query file of CORE's stock, smart-home and taxi experiments parses,
prints back to the same tree, and passes the checks against its schema.

The fixtures are CORE's own files (see fixtures/core_experiments/SOURCES.md).
Some older ones are templates whose window reads ``WITHIN TIMESTAMP [attr]``;
CORE's experiment scripts replace TIMESTAMP by a number before running them,
and so does this test.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sharp_cer.language import Schema, check_query, parse_query, to_ceql
from sharp_cer.language.diagnostics import UndeclaredAttributeError
from sharp_cer.language.source import Source

ROOT = Path(__file__).parent / "fixtures" / "core_experiments"
QUERIES = sorted(ROOT.glob("*/*.ceql"))
SCHEMAS = {"stocks": "schema.core", "smart_homes": "schema.core", "taxis": "schema_sharp.core"}
# CORE's own file filters on 'names' where its schema declares 'name'.
KNOWN_TYPO = {"other-q1_any_v391d8a2.ceql"}


def _text(path: Path) -> str:
    return path.read_text().replace("TIMESTAMP", "100")


def test_all_three_datasets_are_present() -> None:
    counts = {d: len(list((ROOT / d).glob("*.ceql"))) for d in SCHEMAS}
    assert all(n >= 40 for n in counts.values()), counts


@pytest.mark.parametrize("path", QUERIES, ids=[f"{p.parent.name}/{p.stem}" for p in QUERIES])
def test_parses_and_round_trips(path: Path) -> None:
    query = parse_query(_text(path), str(path))
    assert parse_query(to_ceql(query)) == query


@pytest.mark.parametrize("path", QUERIES, ids=[f"{p.parent.name}/{p.stem}" for p in QUERIES])
def test_checks_against_its_schema(path: Path) -> None:
    schema_path = ROOT / path.parent.name / SCHEMAS[path.parent.name]
    schema = Schema.parse(schema_path.read_text(), str(schema_path))
    text = _text(path)
    query = parse_query(text, str(path))
    if path.name in KNOWN_TYPO:
        with pytest.raises(UndeclaredAttributeError, match="no attribute 'names'"):
            check_query(query, schema, Source(text, path.name))
    else:
        check_query(query, schema, Source(text, path.name))


@pytest.mark.parametrize("name", ["schema.core", "schema_unordered.core"])
def test_stock_declarations_parse(name: str) -> None:
    schema = Schema.parse((ROOT / "stocks" / name).read_text(), name)
    assert {e.name for e in schema.event_types()} == {"BUY", "SELL"}
