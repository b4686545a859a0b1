"""The thread-list matcher against the brute-force reference matcher: the
first match from every start row, for random patterns and conditions."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.recognize import nodes
from sharp_cer.recognize.brute_force import reference_match
from sharp_cer.recognize.clause_parser import parse_clause
from sharp_cer.recognize.matcher import first_match
from sharp_cer.recognize.program import compile_pattern

VARIABLES = ["A", "B", "C"]


def _patterns() -> st.SearchStrategy[nodes.Pattern]:
    """Random patterns over A, B, C: mostly variables, concatenations,
    alternations and quantifiers; anchors, (), exclusions and PERMUTE less often."""
    variables = st.sampled_from([nodes.Variable(v) for v in VARIABLES])
    others = st.sampled_from([nodes.Anchor("start"), nodes.Anchor("end"), nodes.Concatenation(())])
    leaves = st.one_of(variables, variables, variables, others)

    def extend(inner: st.SearchStrategy[nodes.Pattern]) -> st.SearchStrategy[nodes.Pattern]:
        bounds = st.sampled_from([(0, None), (1, None), (0, 1), (2, None), (0, 2), (1, 3), (2, 2), (3, None)])
        several = st.lists(inner, min_size=2, max_size=3)
        concatenation = several.map(lambda xs: nodes.Concatenation(tuple(xs)))
        alternation = several.map(lambda xs: nodes.Alternation(tuple(xs)))
        quantified = st.tuples(inner, bounds, st.booleans()).map(lambda t: nodes.Quantified(t[0], *t[1], t[2]))
        return st.one_of(
            concatenation,
            concatenation,
            alternation,
            alternation,
            quantified,
            quantified,
            inner.map(nodes.Exclusion),
            several.map(lambda xs: nodes.Permute(tuple(xs))),
        )

    return st.recursive(leaves, extend, max_leaves=6)


@settings(max_examples=400, deadline=None)
@given(_patterns(), st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans()), min_size=0, max_size=7))
def test_row_local_conditions_agree(pattern: nodes.Pattern, table: list[tuple[bool, bool, bool]]) -> None:
    variables = VARIABLES
    program = compile_pattern(pattern, variables)

    def condition(var: int, labels: tuple[int, ...], row: int) -> bool:
        return table[row][var]

    for start in range(len(table) + 1):
        expected = reference_match(pattern, variables, start, len(table), condition)
        assert first_match(program, start, len(table), condition, labels_matter=False) == expected
        # the labels-aware state must find the same match
        assert first_match(program, start, len(table), condition, labels_matter=True) == expected


@settings(max_examples=300, deadline=None)
@given(_patterns(), st.integers(0, 6), st.integers(1, 3))
def test_history_conditions_agree(pattern: nodes.Pattern, size: int, limit: int) -> None:
    """Conditions that read the match so far: at most ``limit`` rows per variable,
    and B never right after B."""
    variables = VARIABLES
    program = compile_pattern(pattern, variables)

    def condition(var: int, labels: tuple[int, ...], row: int) -> bool:
        if labels.count(var) > limit:
            return False
        return not (var == 1 and len(labels) > 1 and labels[-2] == 1)

    for start in range(size + 1):
        expected = reference_match(pattern, variables, start, size, condition)
        assert first_match(program, start, size, condition, labels_matter=True) == expected


def test_threads_with_different_labels_do_not_merge() -> None:
    # (A | B) C where C fails after A and holds after B: the match is B C, found only if the
    # B thread is not merged into the preferred A thread at C
    pattern = parse_clause("MATCH_RECOGNIZE (PATTERN ((A | B) C))").pattern
    condition = lambda var, labels, row: labels != (0, 2)  # noqa: E731
    found = first_match(compile_pattern(pattern, VARIABLES), 0, 2, condition, labels_matter=True)
    assert found is not None and found.labels == (1, 2)


def test_greedy_and_reluctant_by_hand() -> None:
    # B+ over three B-rows is all three; B+? is one; B{2,}? is two
    for text, end in (("B+", 3), ("B+?", 1), ("B{2,}?", 2), ("B{,2}", 2), ("B*?", 0), ("(B B?)+", 3)):
        pattern = parse_clause(f"MATCH_RECOGNIZE (PATTERN ({text}))").pattern
        found = first_match(compile_pattern(pattern, ["B"]), 0, 3, lambda v, labels, r: True, labels_matter=False)
        assert found is not None and found.end == end, text


def test_empty_loop_terminates() -> None:
    pattern = parse_clause("MATCH_RECOGNIZE (PATTERN ((A*)* (B?)+ C{0,3}))").pattern
    program = compile_pattern(pattern, ["A", "B", "C"])
    found = first_match(program, 0, 2, lambda v, labels, r: v == 0, labels_matter=False)
    assert found is not None and found.labels == (0, 0)


@settings(max_examples=300, deadline=None)
@given(_patterns(), st.integers(0, 6), st.integers(0, 2**16))
def test_arbitrary_history_conditions_agree(pattern: nodes.Pattern, size: int, seed: int) -> None:
    """A condition that is an arbitrary (seeded, deterministic) function of the
    whole labelling so far: threads with different labels must never merge.
    The pattern starts with (A | B | C), so two threads with different labels
    meet at the same instruction from the second row on."""
    variables = VARIABLES
    pattern = nodes.Concatenation((nodes.Alternation(tuple(nodes.Variable(v) for v in VARIABLES)), pattern))
    program = compile_pattern(pattern, variables)

    def condition(var: int, labels: tuple[int, ...], row: int) -> bool:
        return hash((labels, row, seed)) % 3 != 0

    for start in range(size + 1):
        expected = reference_match(pattern, variables, start, size, condition)
        assert first_match(program, start, size, condition, labels_matter=True) == expected
