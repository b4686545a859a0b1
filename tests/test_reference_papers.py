"""The reference evaluator on the worked examples of the papers behind it.

CEL (Grez, Riveros, Ugarte; ``../shared/papers/cel-foundations.txt``) §2 and §4
run φ1–φ3 and the four selection strategies over the farm stream of its
Figure 1. The shared text copy lost the figure's row of event types; it is
restored here as ``H T H H T T T H H``: the outputs the paper states pin
events 1 to 8 down (event 0, at sensor 2, is in no output whichever its type): STRICT(φ1) = {1, 2} forces event 2 to
be H, φ3 forces 4 and 6 to be T and 3 and 7 to be H, φ2's single extra match
{2, 5} forces 5 to be T, and NEXT/LAST on φ1 need 8 to be H.

The SASE+ guide (``sase-plus-pattern-guide.txt``) gives skip-till-any-match
(our ALL, with every subset of a Kleene capture) and strict contiguity. Its
skip-till-next-match is not our NEXT and is left out on purpose.

The expected outputs are the papers' own, copied into each test as sets of
positions.
"""

from __future__ import annotations

from typing import Any

import pytest

from sharp_cer.language import Schema, parse_and_check
from sharp_cer.reference import evaluate

FARM = Schema.parse(
    """CREATE STREAM Farm {
         EVENT T { id:int, value:double },
         EVENT H { id:int, value:double }
       }"""
)
FIGURE_1 = [
    {"type": kind, "id": sensor, "value": value}
    for kind, sensor, value in zip(
        ["H", "T", "H", "H", "T", "T", "T", "H", "H"],
        [2, 0, 0, 1, 1, 0, 1, 1, 0],
        [25, 45, 20, 25, 40, 42, 25, 70, 18],
        strict=True,
    )
]

# CEL has no windows; a window longer than the stream changes nothing.
UNBOUNDED = " WITHIN 100 EVENTS"

# A temperature above 40 followed by a humidity of at most 25%, both at sensor 0.
PHI_1 = "(T AS x ; H AS y) FILTER x.value > 40 AND y.value <= 25 AND x.id = 0 AND y.id = 0"
# The same in either order.
PHI_2 = "((T AS x ; H AS y) OR (H AS y ; T AS x)) FILTER x.value > 40 AND y.value <= 25 AND x.id = 0 AND y.id = 0"
# Every temperature at sensor 1 while its humidity rises from below 30% to above 60%.
PHI_3 = "(H AS x ; (T AS t FILTER t.id = 1)+ ; H AS y) FILTER x.value < 30 AND y.value > 60 AND x.id = 1 AND y.id = 1"


def cel(strategy: str, formula: str) -> set[frozenset[int]]:
    query = f"SELECT {strategy} * FROM Farm WHERE {formula}{UNBOUNDED}"
    result = evaluate([("q", parse_and_check(query, FARM))], FIGURE_1)
    return {frozenset(m.events) for m in result.matches}


def ce(*positions: int) -> frozenset[int]:
    return frozenset(positions)


def test_phi_1_pairs() -> None:
    # §2: "the pairs satisfying these conditions are (1, 2), (1, 8) and (5, 8)"
    assert cel("", PHI_1) == {ce(1, 2), ce(1, 8), ce(5, 8)}


def test_phi_2_adds_the_reverse_order() -> None:
    # §2: φ2 is φ1 plus the complex event {2, 5}
    assert cel("", PHI_2) == cel("", PHI_1) | {ce(2, 5)}


def test_phi_3_every_subset_of_the_temperatures() -> None:
    # §2: humidities 3 and 7, temperatures 4 and 6 between them
    assert cel("", PHI_3) == {ce(3, 4, 6, 7), ce(3, 4, 7), ce(3, 6, 7)}


def test_strict() -> None:
    # §4: STRICT(φ1) only produces {1, 2}; φ3's outputs all skip event 5
    assert cel("STRICT", PHI_1) == {ce(1, 2)}
    assert cel("STRICT", PHI_3) == set()


def test_next() -> None:
    # §4: NXT(φ1) keeps {1, 8} and not {5, 8}; NXT(φ3) keeps only {3, 4, 6, 7}
    assert cel("NEXT", PHI_1) == {ce(1, 2), ce(1, 8)}
    assert cel("NEXT", PHI_3) == {ce(3, 4, 6, 7)}


def test_last() -> None:
    # §4: LAST(φ1) selects the most recent explanation {5, 8}; LAST(φ3) is {3, 4, 6, 7}
    assert cel("LAST", PHI_1) == {ce(1, 2), ce(5, 8)}
    assert cel("LAST", PHI_3) == {ce(3, 4, 6, 7)}


def test_max() -> None:
    # §4: both {1, 8} and {5, 8} are maximal; MAX(φ3) keeps only the largest
    assert cel("MAX", PHI_1) == cel("", PHI_1)
    assert cel("MAX", PHI_3) == {ce(3, 4, 6, 7)}


# The SASE+ guide, with events named by their letter and a running number.
SASE = Schema.parse(
    """CREATE STREAM S {
         EVENT A { n:int }, EVENT B { n:int }, EVENT C { n:int },
         EVENT X { n:int }, EVENT Start { n:int }, EVENT End { n:int },
         EVENT Login { user:int }, EVENT Transaction { amount:int }
       }"""
)


def sase(query: str, events: list[dict[str, Any]]) -> set[tuple[int, ...]]:
    result = evaluate([("q", parse_and_check(query + UNBOUNDED, SASE))], events)
    return {m.events for m in result.matches}


def letters(spec: str) -> list[dict[str, Any]]:
    return [{"type": kind, "n": i} for i, kind in enumerate(spec.split())]


def test_skip_till_any_match_pairs() -> None:
    # A1, B1, A2, B2 with A -> B: (A1, B1), (A1, B2), (A2, B2)
    assert sase("SELECT * FROM S WHERE A ; B", letters("A B A B")) == {(0, 1), (0, 3), (2, 3)}


def test_skip_till_any_match_overlapping_runs() -> None:
    # Login1, Login2, Transaction1 (amount > 5000): two matches sharing the transaction
    events = [
        {"type": "Login", "user": 1},
        {"type": "Login", "user": 2},
        {"type": "Transaction", "amount": 6000},
    ]
    query = "SELECT * FROM S WHERE (Login AS l ; Transaction AS t) FILTER t.amount > 5000"
    assert sase(query, events) == {(0, 2), (1, 2)}


@pytest.mark.parametrize(("kleene_events", "expected"), [(3, 7), (9, 511)])
def test_skip_till_any_match_takes_every_subset(kleene_events: int, expected: int) -> None:
    # SEQ(A, B+, C) over A, B1..Bn, C gives one match per non-empty subset: 2^n - 1
    events = letters("Start " + "B " * kleene_events + "End")
    found = sase("SELECT * FROM S WHERE Start ; B+ ; End", events)
    assert len(found) == expected
    assert all(m[0] == 0 and m[-1] == kleene_events + 1 for m in found)


def test_strict_contiguity() -> None:
    # A, X, B: the X breaks contiguity; A1, C1, B1 likewise
    assert sase("SELECT STRICT * FROM S WHERE A ; B", letters("A X B")) == set()
    assert sase("SELECT STRICT * FROM S WHERE A ; B", letters("A C B")) == set()
    assert sase("SELECT * FROM S WHERE A : B", letters("A C B")) == set()
    # and without the intruder both spellings match
    assert sase("SELECT STRICT * FROM S WHERE A ; B", letters("A B")) == {(0, 1)}
    assert sase("SELECT * FROM S WHERE A : B", letters("A B")) == {(0, 1)}
