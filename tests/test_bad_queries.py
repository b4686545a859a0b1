"""Golden fixtures: each bad query and the exact error it must produce.

``tests/fixtures/bad_queries/NN_name.ceql`` holds a query; ``NN_name.expected``
holds the exception class on its first line and the exact rendered message
after it. Every file is checked against ``schema.core`` beside them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sharp_cer.errors import LanguageError, SharpCerError
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.language.diagnostics import QueryError
from sharp_cer.language.source import Source

FIXTURES = Path(__file__).parent / "fixtures" / "bad_queries"
CASES = sorted(FIXTURES.glob("*.ceql"))


@pytest.fixture(scope="module")
def schema() -> Schema:
    return Schema.parse((FIXTURES / "schema.core").read_text(), "schema.core")


def test_there_are_at_least_thirty_cases() -> None:
    assert len(CASES) >= 30
    assert all(case.with_suffix(".expected").exists() for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_bad_query_message(case: Path, schema: Schema) -> None:
    text = case.read_text()
    expected_class, expected_message = case.with_suffix(".expected").read_text().rstrip("\n").split("\n", 1)
    with pytest.raises(QueryError) as info:
        parse_and_check(text, schema, source=Source(text, case.name))
    err = info.value
    assert isinstance(err, LanguageError) and isinstance(err, SharpCerError)
    assert type(err).__name__ == expected_class
    assert str(err) == expected_message
    # Every message names the place, shows it, and says what was expected.
    first = expected_message.splitlines()[0]
    assert first.startswith(f"{case.name}:{err.line}:{err.column}: error: ")
    assert "^" in expected_message and "expected:" in expected_message
