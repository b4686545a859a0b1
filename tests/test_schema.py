"""Schemas: declarations, types, duplicates."""

from __future__ import annotations

import pytest

from sharp_cer.language import Schema
from sharp_cer.language.diagnostics import CeqlSyntaxError, SchemaError


def test_types_and_primary_time() -> None:
    schema = Schema.parse(
        "CREATE STREAM S { EVENT A { i:int, d:double, s:string, b:bool, t:primary_time } }\n"
        "DECLARE STREAM T { EVENT A { k:int }, EVENT Z {} }"
    )
    assert schema.event("A", "S").attributes == {
        "i": "int",
        "d": "double",
        "s": "string",
        "b": "bool",
        "t": "primary_time",
    }
    assert schema.event("A", "S").primary_time == "t"
    assert schema.event("Z").attributes == {}
    with pytest.raises(KeyError):
        schema.event("A")  # declared in two streams
    assert [e.name for e in schema.event_types(("T",))] == ["A", "Z"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("CREATE STREAM S { EVENT A { x:integr } }", "unknown type 'integr'"),
        ("CREATE STREAM S { EVENT A { x:int, x:double } }", "attribute x is declared twice"),
        ("CREATE STREAM S { EVENT A { x:int }, EVENT A { y:int } }", "event type A is declared twice"),
        ("CREATE STREAM S { EVENT A { x:int } } CREATE STREAM S { EVENT B { y:int } }", "stream S is declared twice"),
        ("CREATE STREAM S { EVENT A { t:primary_time, u:primary_time } }", "two primary_time attributes"),
    ],
)
def test_bad_schemas(text: str, message: str) -> None:
    with pytest.raises(SchemaError, match=message) as info:
        Schema.parse(text, "s.core")
    assert str(info.value).startswith("s.core:1:")


def test_syntax_error_in_schema() -> None:
    with pytest.raises(CeqlSyntaxError) as info:
        Schema.parse("CREATE STREAM S { EVENT A { x int } }", "s.core")
    assert "s.core:1:31" in str(info.value) and "expected: ':'" in str(info.value)
