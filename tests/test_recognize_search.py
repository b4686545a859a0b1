"""The backward completion sets and the walk (``sharp_cer.recognize.search``)
against the brute-force reference matcher: the same preferred match from
every start, the same starts where a match can begin, for random patterns
and rows; and the thread-list matcher, pruned by the sets, likewise."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_recognize_matcher import VARIABLES, _patterns

from sharp_cer.recognize import nodes
from sharp_cer.recognize.brute_force import reference_match
from sharp_cer.recognize.clause_parser import parse_clause
from sharp_cer.recognize.matcher import Found, first_match
from sharp_cer.recognize.program import compile_pattern
from sharp_cer.recognize.search import Automaton, build_automaton

rows = st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), min_size=0, max_size=8)


def _codes(table: list[tuple[bool, bool, bool]]) -> list[int]:
    return [sum(1 << i for i, holds in enumerate(row) if holds) for row in table]


@settings(max_examples=400, deadline=None)
@given(_patterns(), rows)
def test_walk_equals_reference(pattern: nodes.Pattern, table: list[tuple[bool, bool, bool]]) -> None:
    program = compile_pattern(pattern, VARIABLES)
    automaton = build_automaton(program)
    assert automaton is not None
    sets = automaton.completable(_codes(table))

    def condition(var: int, labels: tuple[int, ...], row: int) -> bool:
        return table[row][var]

    size = len(table)
    for start in range(size + 1):
        expected = reference_match(pattern, VARIABLES, start, size, condition)
        assert automaton.viable(sets, start) == (expected is not None)
        assert automaton.walk(sets, start, size) == expected
        pruned = first_match(program, start, size, condition, labels_matter=True, alive=automaton.alive(sets))
        assert pruned == expected


@settings(max_examples=200, deadline=None)
@given(_patterns(), st.integers(0, 6), st.integers(1, 3))
def test_over_approximate_sets_keep_history_matches(pattern: nodes.Pattern, size: int, limit: int) -> None:
    """Conditions that read the match so far, taken as "may hold" in the sets:
    the pruned thread-list matcher finds what the reference finds."""
    program = compile_pattern(pattern, VARIABLES)
    automaton = build_automaton(program)
    assert automaton is not None
    sets = automaton.completable([0b111] * size)

    def condition(var: int, labels: tuple[int, ...], row: int) -> bool:
        return labels.count(var) <= limit and not (var == 1 and len(labels) > 1 and labels[-2] == 1)

    for start in range(size + 1):
        expected = reference_match(pattern, VARIABLES, start, size, condition)
        assert first_match(program, start, size, condition, labels_matter=True, alive=automaton.alive(sets)) == expected


def test_a_plus_b_without_b_has_no_viable_start() -> None:
    # issue 40 item 7: PATTERN (A+ B) where B never holds; one backward pass says no start can match
    program = compile_pattern(parse_clause("MATCH_RECOGNIZE (PATTERN (A+ B))").pattern, ["A", "B"])
    automaton = Automaton.build(program)
    sets = automaton.completable([0b01] * 1000)
    assert not any(automaton.viable(sets, s) for s in range(1000))
    assert len(automaton.sets) <= 3  # the sets repeat: one look-up per row


def test_too_many_states_give_a_counter_free_automaton() -> None:
    pattern = parse_clause("MATCH_RECOGNIZE (PATTERN (((A{0,60}){0,60}){0,60} F))").pattern
    program = compile_pattern(pattern, ["A", "F"])
    automaton = build_automaton(program)
    assert not automaton.exact and len(automaton.ids) < len(program.code) + 1
    sets = automaton.completable([0b01] * 50)  # F never holds: no start can match
    assert not any(automaton.viable(sets, s) for s in range(50))


@settings(max_examples=200, deadline=None)
@given(_patterns(), rows)
def test_counter_free_sets_keep_every_match(pattern: nodes.Pattern, table: list[tuple[bool, bool, bool]]) -> None:
    program = compile_pattern(pattern, VARIABLES)
    automaton = Automaton.build(program, abstract=True)
    sets = automaton.completable(_codes(table))

    def condition(var: int, labels: tuple[int, ...], row: int) -> bool:
        return table[row][var]

    for start in range(len(table) + 1):
        expected = reference_match(pattern, VARIABLES, start, len(table), condition)
        pruned = first_match(program, start, len(table), condition, labels_matter=False, alive=automaton.alive(sets))
        assert pruned == expected


def test_empty_iteration_of_an_outer_star_is_no_iteration() -> None:
    """Hand-computed: in ``(A*?)*`` an outer iteration past the minimum must
    match a row, so over two A rows the preferred way is one A per outer
    iteration (the inner lazy star would rather match nothing, which is no
    iteration). Taking the inner loop's state for a new outer iteration's,
    as the matchers once did, stopped after one row."""
    pattern = parse_clause("MATCH_RECOGNIZE (PATTERN ((A*?)*))").pattern
    program = compile_pattern(pattern, ["A"])
    automaton = build_automaton(program)
    sets = automaton.completable([0b1, 0b1])

    def condition(var: int, labels: tuple[int, ...], row: int) -> bool:
        return True

    expected = Found(end=2, labels=(0, 0), excluded=())
    assert reference_match(pattern, ["A"], 0, 2, condition) == expected
    assert first_match(program, 0, 2, condition, labels_matter=True) == expected
    assert automaton.walk(sets, 0, 2) == expected


NULLABLE_BODIES = ["(A*?)*", "(A*)*", "(A*?)+", "(A?)*", "(A*?|B)*", "((A*?) B?)*", "(A*?){2,}", "(A*?)*?"]
NULLABLE_BODIES += ["((A*?)*)*", "(A*? B*?)*", "(A|())*", "(()|A)*", "(A?? B??)+", "(^ A*?)*", "(A*? $)+"]


@pytest.mark.parametrize("text", NULLABLE_BODIES)
def test_nullable_loop_bodies_agree_with_the_reference_on_every_small_table(text: str) -> None:
    """Every table of up to three rows over A/B: the three matchers find the
    reference's preferred match (random patterns rarely nest a nullable body)."""
    pattern = parse_clause(f"MATCH_RECOGNIZE (PATTERN ({text}))").pattern
    program = compile_pattern(pattern, ["A", "B"])
    automaton = build_automaton(program)
    for size in range(4):
        for table in itertools.product([(True, False), (False, True), (True, True)], repeat=size):

            def condition(
                var: int, labels: tuple[int, ...], row: int, table: tuple[tuple[bool, bool], ...] = table
            ) -> bool:
                return table[row][var]

            sets = automaton.completable([sum(1 << i for i, holds in enumerate(row) if holds) for row in table])
            for start in range(size + 1):
                expected = reference_match(pattern, ["A", "B"], start, size, condition)
                assert first_match(program, start, size, condition, labels_matter=True) == expected
                assert automaton.walk(sets, start, size) == expected
