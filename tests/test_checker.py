"""The checker on valid queries: what it learns, and what it accepts."""

from __future__ import annotations

import pytest

from sharp_cer.language import Schema, parse_and_check, parse_query
from sharp_cer.language.checker import bound_variables, referenced_variables
from sharp_cer.language.diagnostics import NotWellFormedError, QueryError, UnsafeFormulaError

SCHEMA = Schema.parse(
    """CREATE STREAM S {
         EVENT A { x:int, y:double, name:string, t:primary_time },
         EVENT B { x:int, y:double, name:string, t:primary_time },
         EVENT C { x:int, flag:bool, t:primary_time }
       }"""
)


def check(text: str):  # type: ignore[no-untyped-def]
    return parse_and_check(text, SCHEMA)


def test_variables_and_multiplicity() -> None:
    checked = check("SELECT * WHERE A AS a ; (B OR C)+ AS run ; A AS z FILTER sum(run.x) < z.x WITHIN 5 EVENTS")
    info = {n: (sorted(e.name for e in v.event_types), v.many, v.implicit) for n, v in checked.variables.items()}
    assert info == {
        "A": (["A"], True, True),  # A occurs twice in the sequence
        "a": (["A"], False, False),
        "B": (["B"], True, True),
        "C": (["C"], True, True),
        "run": (["B", "C"], True, False),
        "z": (["A"], False, False),
    }


def test_or_keeps_one_event_per_branch() -> None:
    checked = check("SELECT * WHERE (A AS v OR B AS v) ; C AS c FILTER v.x < c.x WITHIN 5 EVENTS")
    assert not checked.variables["v"].many
    assert {e.name for e in checked.variables["v"].event_types} == {"A", "B"}


def test_bound_variables_follow_cel() -> None:
    pattern = parse_query("SELECT * WHERE A AS a ; (B AS b OR C AS b) ; (A AS q OR C) ; NOT(B) ; C").pattern
    # OR binds only what both branches bind; NOT binds nothing.
    assert bound_variables(pattern) == {"A", "a", "b", "C"}


def test_referenced_variables() -> None:
    q = parse_query("SELECT * WHERE A FILTER a[x > b.x] AND count(run) > 1 AND c.y = 2")
    assert referenced_variables(q.pattern.condition) == {"a", "b", "run", "c"}


@pytest.mark.parametrize(
    "text",
    [
        # Kleene variables filtered per event (for all) inside and outside the +
        "SELECT * WHERE A ; (B AS b FILTER b[x > 1])+ ; C WITHIN 5 EVENTS",
        "SELECT * WHERE A ; B+ AS b ; C FILTER b[x > 1] WITHIN 5 EVENTS",
        "SELECT * WHERE A ; B+ AS b ; C FILTER b.x > 1 WITHIN 5 EVENTS",
        # a cross-event condition naming the Kleene variable inside its brackets
        "SELECT * WHERE A AS a ; B+ AS b FILTER b[x > a.x] WITHIN 5 EVENTS",
        # the same variable in two iterations is safe (it re-binds per iteration)
        "SELECT * WHERE (A AS v)+ ; (A AS v)+ WITHIN 5 EVENTS",
        # a filter on a variable defined in a wider scope (CEL §5.1)
        "SELECT * WHERE (A AS a ; B AS b) FILTER a.x < b.x WITHIN 5 EVENTS",
        "SELECT * WHERE A AS a ; NOT(C FILTER C[flag = TRUE]) ; B WITHIN 5 EVENTS",
        "SELECT * WHERE A ; ABSENT(C FILTER C[x IN {1..3}]) ; B WITHIN 10 SECONDS",
        "SELECT * WHERE AND(A AS a, B AS b) FILTER abs(a.y - b.y) < sqrt(2) WITHIN 3 [x]",
        "SELECT STRICT a[x, y] WHERE A AS a : B PARTITION BY [x] WITHIN 2 EVENTS CONSUME BY PARTITION",
        "SELECT * WHERE A AS a ; B AS b FILTER a[name LIKE '^MS'] AND b[name NOT IN {'x', 'y'}] WITHIN 1 MINUTES",
        "SELECT * WHERE A+ AS r ; C FILTER first(r.name) = last(r.name) AND avg(r.y) > 1 WITHIN 5 EVENTS",
    ],
)
def test_accepts(text: str) -> None:
    check(text)


def test_warns_without_within() -> None:
    checked = check("SELECT * WHERE A ; B")
    assert len(checked.warnings) == 1
    assert "no WITHIN" in str(checked.warnings[0]) and "^" in str(checked.warnings[0])


def test_unsafe_inside_or_branches_is_fine_but_not_across_sequence() -> None:
    check("SELECT * WHERE (A AS v ; B) OR (B ; A AS v) WITHIN 5 EVENTS")
    with pytest.raises(UnsafeFormulaError):
        check("SELECT * WHERE (A AS v ; B) ; (B ; A AS v) WITHIN 5 EVENTS")


def test_filter_outside_the_or_that_binds_it() -> None:
    with pytest.raises(NotWellFormedError):
        check("SELECT * WHERE ((A AS v) OR B) ; C FILTER v[x > 1] WITHIN 5 EVENTS")


def test_every_error_is_a_query_error_with_location() -> None:
    with pytest.raises(QueryError) as info:
        check("SELECT * WHERE A ;\n  B AS b FILTER b[nope > 1] WITHIN 5 EVENTS")
    assert (info.value.line, info.value.column) == (2, 19)
