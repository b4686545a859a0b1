"""Workload files: structure, defaults, options, and located errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharp_cer.language import LatencyBound, load_workload, parse_workload
from sharp_cer.language.diagnostics import (
    ContradictoryOptionsError,
    TypeMismatchError,
    UndeclaredAttributeError,
    WorkloadError,
)

HEAD = '''[workload]
name = "w"
schema = """
CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { x:int, t:primary_time } }
"""
'''


def test_defaults_apply_and_queries_override() -> None:
    w = parse_workload(
        HEAD
        + """
[defaults]
tenant = "acme"
latency_bound = "40%"

[[query]]
name = "q1"
text = "SELECT * WHERE A ; B WITHIN 3 EVENTS"

[[query]]
name = "q2"
tenant = "globex"
weight = 3
latency_bound = 1200
sketch_attributes = ["x"]
text = "SELECT NEXT * WHERE A ; B WITHIN 3 EVENTS"
"""
    )
    q1, q2 = w.queries
    assert (q1.tenant, q1.weight, q1.latency_bound, q1.shed) == ("acme", 1.0, LatencyBound(fraction=0.4), True)
    assert (q2.tenant, q2.weight, q2.latency_bound, q2.shed) == ("globex", 3.0, LatencyBound(cost_units=1200.0), False)
    assert q2.sketch_attributes == ("x",)
    assert w.tenants == ["acme", "globex"]


def test_error_in_embedded_query_points_into_the_toml_file() -> None:
    text = (
        HEAD
        + '''
[[query]]
name = "bad"
text = """
SELECT * WHERE A AS a ; B AS b
FILTER a.x < 'text'
WITHIN 3 EVENTS
"""
'''
    )
    with pytest.raises(TypeMismatchError) as info:
        parse_workload(text, "w.toml")
    lines = text.splitlines()
    assert lines[info.value.line - 1] == "FILTER a.x < 'text'"
    assert str(info.value).startswith(f"w.toml:{info.value.line}:8: error: cannot compare an int with a string")


def test_error_in_embedded_schema_points_into_the_toml_file() -> None:
    text = '[workload]\nname = "w"\nschema = """\nCREATE STREAM S { EVENT A { x:intt } }\n"""\n'
    with pytest.raises(Exception) as info:
        parse_workload(text, "w.toml")
    assert str(info.value).startswith("w.toml:4:29: error: unknown type 'intt'")


@pytest.mark.parametrize(
    ("extra", "error", "message", "line_text"),
    [
        (
            '[[query]]\nname = "q"\ntenat = "x"\ntext = "SELECT * WHERE A WITHIN 1 EVENTS"\n',
            WorkloadError,
            "unknown key 'tenat' in query 1",
            'tenat = "x"',
        ),
        (
            '[[query]]\nname = "q"\nweight = -1\ntext = "SELECT * WHERE A WITHIN 1 EVENTS"\n',
            WorkloadError,
            "weight must be a positive number",
            "weight = -1",
        ),
        (
            '[[query]]\nname = "q"\nlatency_bound = "150%"\ntext = "SELECT * WHERE A WITHIN 1 EVENTS"\n',
            WorkloadError,
            "invalid latency_bound",
            'latency_bound = "150%"',
        ),
        (
            '[[query]]\nname = "q"\nshed = true\ntext = "SELECT * WHERE A WITHIN 1 EVENTS LIMIT 3"\n',
            ContradictoryOptionsError,
            "asks for shedding",
            "shed = true",
        ),
        (
            '[[query]]\nname = "q"\nsketch_attributes = ["price"]\ntext = "SELECT * WHERE A WITHIN 1 EVENTS"\n',
            UndeclaredAttributeError,
            "sketch attribute 'price'",
            'sketch_attributes = ["price"]',
        ),
        (
            '[[query]]\nname = "q"\ntext = "SELECT * WHERE A WITHIN 1 EVENTS"\n[[query]]\nname = "q"\n'
            'text = "SELECT * WHERE B WITHIN 1 EVENTS"\n',
            WorkloadError,
            "two queries are named q",
            None,
        ),
        ('[[query]]\nname = "q"\n', WorkloadError, "needs exactly one of text and file", 'name = "q"'),
        ("[[query]]\nname = q\n", WorkloadError, "not valid TOML", "name = q"),
    ],
)
def test_bad_workloads(extra: str, error: type, message: str, line_text: str | None) -> None:
    text = HEAD + extra
    with pytest.raises(error, match=message) as info:
        parse_workload(text, "w.toml")
    err = info.value
    rendered = str(err)
    assert rendered.startswith("w.toml:") and "^" in rendered
    if line_text is not None:
        assert text.splitlines()[err.line - 1] == line_text  # type: ignore[attr-defined]


def test_missing_tables() -> None:
    with pytest.raises(WorkloadError, match=r"needs a \[workload\] table"):
        parse_workload('[[query]]\nname = "q"\ntext = "x"\n')
    with pytest.raises(WorkloadError, match="at least one"):
        parse_workload(HEAD)


def test_files_relative_to_the_workload(tmp_path: Path) -> None:
    (tmp_path / "s.core").write_text("CREATE STREAM S { EVENT A { x:int } }")
    (tmp_path / "q.ceql").write_text("SELECT * WHERE A FILTER A[x > 1] WITHIN 2 EVENTS")
    (tmp_path / "w.toml").write_text(
        '[workload]\nname = "w"\nschema_file = "s.core"\n[[query]]\nname = "q"\nfile = "q.ceql"\n'
    )
    w = load_workload(tmp_path / "w.toml")
    assert w.queries[0].checked.query.within is not None


CONFIGS = sorted((Path(__file__).parent.parent / "configs").glob("*.toml"))


def test_there_are_three_example_workloads() -> None:
    assert {p.stem for p in CONFIGS} >= {"stock_trading", "card_fraud", "iot_sensors"}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_example_workloads_are_valid_without_warnings(path: Path) -> None:
    w = load_workload(path)
    assert len(w.queries) >= 6 and len(w.tenants) >= 3
    assert w.warnings() == []
    assert w.generator is not None


def test_errors_in_defaults_point_at_the_defaults_line() -> None:
    text = HEAD + (
        "[defaults]\n"
        "weight = -1\n"
        "# a comment with ''' in it must not confuse the locator\n"
        "[[query]]\n"
        'name = "q"\n'
        'text = "SELECT * WHERE A WITHIN 1 EVENTS"\n'
    )
    with pytest.raises(WorkloadError, match="weight must be a positive number") as info:
        parse_workload(text, "w.toml")
    assert text.splitlines()[info.value.line - 1] == "weight = -1"
