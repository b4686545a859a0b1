"""The engine's part-3 machinery, against independent expectations.

- Vectorized predicates: random typed conditions over random rows (zeros,
  NaN, infinities, 64-bit edges, nulls in every column) give, row for row, the
  truth value (three-valued: SQL's nulls) and the out-of-domain errors of the
  scalar evaluator.
- Bulk skipping: hand cases where events must be skipped, and ones where
  NOT, ABSENT, STRICT and ``:`` must see them; each against the reference
  evaluator and the engine without skipping. (Every generated case of
  ``test_engine_differential`` also runs with and without skipping.)
- Symbols: packing more than 64 atoms keeps events apart.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine
from sharp_cer.engine.column_conditions import Rows, compile_vector, holds
from sharp_cer.engine.predicate_bits import OutOfDomain, compile_condition
from sharp_cer.engine.symbols import SymbolTable
from sharp_cer.events.batch import Column
from sharp_cer.language import ast, parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, to_batch

# ---------------------------------------------------------------- vectorized against scalar

INTS = [0, 1, -1, 2, 3, -7, 2**40, 2**62, -(2**62)]
FLOATS = [0.0, -0.0, 0.5, -2.5, 1.0, math.nan, math.inf, -math.inf, 1e300]
NAMES = ["", "a", "ab", "ba", "abc"]
PATTERNS = ["^a", "b$", "a.c", "b+", ""]


def _number(value: int | float) -> ast.Expr:
    return ast.NumberLiteral(value) if value >= 0 else ast.Negate(ast.NumberLiteral(-value))


def numeric() -> st.SearchStrategy[ast.Expr]:
    leaves = st.one_of(
        st.sampled_from([ast.AttributeRef(None, "x"), ast.AttributeRef(None, "y"), ast.AttributeRef(None, "z")]),
        st.sampled_from([0, 1, 2, 3, 0.5, 2.5, 7]).map(_number),
    )

    def grow(inner: st.SearchStrategy[ast.Expr]) -> st.SearchStrategy[ast.Expr]:
        return st.one_of(
            st.builds(ast.Arithmetic, st.sampled_from(["+", "-", "*", "/", "%"]), inner, inner),
            st.builds(ast.Negate, inner),
            st.builds(
                lambda f, e: ast.Call(f, (e,)), st.sampled_from(["abs", "sqrt", "sin", "cos", "asin", "acos"]), inner
            ),
        )

    return st.recursive(leaves, grow, max_leaves=5)


def boolean() -> st.SearchStrategy[ast.Expr]:
    compare = st.builds(ast.Comparison, st.sampled_from(["<", "<=", ">", ">=", "=", "!="]), numeric(), numeric())
    literal = st.sampled_from([0, 1, 2, 0.5]).map(_number)
    bound = st.none() | literal
    leaves = st.one_of(
        compare,
        st.builds(
            lambda e, vs, neg: ast.InSet(e, tuple(vs), neg),
            numeric(),
            st.lists(literal, min_size=1, max_size=3),
            st.booleans(),
        ),
        st.builds(ast.InInterval, numeric(), bound, bound, st.booleans()),
        st.builds(ast.Between, numeric(), numeric(), numeric()),
        st.builds(lambda p: ast.Like(ast.AttributeRef(None, "name"), p), st.sampled_from(PATTERNS)),
        st.builds(
            lambda op, s: ast.Comparison(op, ast.AttributeRef(None, "name"), ast.StringLiteral(s)),
            st.sampled_from(["=", "!="]),
            st.sampled_from(NAMES),
        ),
        st.builds(lambda v: ast.Comparison("=", ast.AttributeRef(None, "flag"), ast.BoolLiteral(v)), st.booleans()),
    )

    def grow(inner: st.SearchStrategy[ast.Expr]) -> st.SearchStrategy[ast.Expr]:
        return st.one_of(st.builds(ast.And, inner, inner), st.builds(ast.Or, inner, inner), st.builds(ast.Not, inner))

    return st.recursive(leaves, grow, max_leaves=4)


@st.composite
def row_data(draw: st.DrawFn) -> dict[str, list[Any]]:
    m = draw(st.integers(0, 12))
    return {
        "x": draw(st.lists(st.sampled_from(INTS), min_size=m, max_size=m)),
        "y": draw(st.lists(st.sampled_from(FLOATS), min_size=m, max_size=m)),
        "z": [0] * m,  # never valid: null everywhere
        "name": draw(st.lists(st.sampled_from(NAMES), min_size=m, max_size=m)),
        "flag": draw(st.lists(st.booleans(), min_size=m, max_size=m)),
        "valid": draw(st.lists(st.booleans(), min_size=m, max_size=m)),
        # which rows hold a value of x, name and flag (the others hold null), mostly all
        **{
            f"{name}_valid": draw(st.lists(st.booleans(), min_size=m, max_size=m) | st.just([True] * m))
            for name in ("x", "name", "flag")
        },
    }


def _valid(data: dict[str, list[Any]], name: str) -> list[bool]:
    m = len(data["x"])
    if name in ("y", "z"):
        return data["valid"] if name == "y" else [False] * m
    valid: list[bool] = data[f"{name}_valid"]
    return valid


def _scalar(expr: ast.Expr, data: dict[str, list[Any]]) -> tuple[list[bool], list[bool]]:
    evaluate_one = compile_condition(expr)
    found, errors = [], []
    for i in range(len(data["x"])):

        def get(name: str, i: int = i) -> Any:
            return data[name][i] if _valid(data, name)[i] else None

        try:
            found.append(bool(evaluate_one(get)))
            errors.append(False)
        except OutOfDomain:
            found.append(False)
            errors.append(True)
    return found, errors


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(boolean(), row_data())
def test_vectorized_conditions_agree_with_the_scalar_evaluator(expr: ast.Expr, data: dict[str, list[Any]]) -> None:
    m = len(data["x"])
    kinds = {"x": ("int", np.int64), "y": ("double", np.float64), "z": ("int", np.int64)}
    kinds.update(name=("string", object), flag=("bool", bool))
    columns = {}
    for name, (kind, dtype) in kinds.items():
        valid = np.array(_valid(data, name), dtype=bool)
        values = np.array(data[name], dtype=dtype)
        if kind == "string":  # as the loaders fill them
            values[~valid] = None
        columns[name] = Column(kind, values, valid)
    values, errors, nulls = compile_vector(expr)(Rows(m, columns))
    errors = np.broadcast_to(np.asarray(errors, dtype=bool), (m,))
    want_found, want_errors = _scalar(expr, data)
    assert errors.tolist() == want_errors
    assert holds(values, errors, m, nulls).tolist() == want_found


def test_integer_arithmetic_does_not_wrap_around() -> None:
    # 2**62 * 4 overflows int64; Python integers do not
    cond = ast.Comparison(
        ">", ast.Arithmetic("*", ast.AttributeRef(None, "x"), ast.NumberLiteral(4)), ast.NumberLiteral(0)
    )
    rows = Rows(1, {"x": Column("int", np.array([2**62]), np.ones(1, dtype=bool))})
    values, errors, nulls = compile_vector(cond)(rows)
    assert holds(values, errors, 1, nulls).tolist() == [True]


def test_the_engine_evaluates_predicates_without_the_scalar_fallback() -> None:
    text = "SELECT * WHERE A ; B FILTER A[x % 2 = 1 AND sqrt(x) < 2] AND B[x IN {0, 3}] WITHIN 5 EVENTS"
    spec = "A1 B0 A3 B3 A2 B1 A9 B0"
    found, engine = _run(text, spec)
    assert engine.stats()["scalar_rows"] == 0
    # one atom per conjunct of A's bracket (guards are split into their conjuncts, to be shared), one per B
    assert engine.clock.condition_checks == 4 * 2 + 4
    assert sorted(m.events for m in found) == [(0, 1), (0, 3), (2, 3), (2, 7)]


def test_like_runs_through_re2_and_rejects_what_re2_cannot_run() -> None:
    schema_text = "CREATE STREAM S { EVENT A { name:string } }"
    from sharp_cer.language import Schema
    from sharp_cer.language.diagnostics import QueryError

    schema = Schema.parse(schema_text)
    with pytest.raises(QueryError, match="RE2 cannot run"):
        parse_and_check("SELECT * WHERE A FILTER A[name LIKE '(a)\\1']", schema)
    rows = Rows(3, {"name": Column("string", np.array(["xab", "ba", "a"], dtype=object), np.ones(3, dtype=bool))})
    values, errors, nulls = compile_vector(ast.Like(ast.AttributeRef(None, "name"), "a+b"))(rows)
    assert holds(values, errors, 3, nulls).tolist() == [True, False, False]


# ---------------------------------------------------------------- bulk skipping


def rows_of(spec: str) -> list[dict[str, Any]]:
    """'A1 B2 C0' -> events with type and x (k = 0, t = position seconds)."""
    return [{"type": w[0], "x": int(w[1:] or 0), "k": 0, "t": i * 10**9} for i, w in enumerate(spec.split())]


def _run(text: str, spec: str) -> tuple[list[Any], Engine]:
    checked = parse_and_check(text, SCHEMA)
    batch = to_batch(rows_of(spec))
    engine = Engine(compile_plan([("q", checked)]), debug=True)
    found = engine.process(batch)
    plain = Engine(compile_plan([("q", checked)]), debug=True, skip=False).process(batch)
    expected = evaluate([("q", checked)], batch).matches
    assert sorted(m.key() for m in found) == sorted(m.key() for m in expected), "engine and reference differ"
    assert found == plain, "skipping changed the output"
    return found, engine


def test_events_no_run_can_use_are_skipped() -> None:
    found, engine = _run("SELECT * WHERE A ; B WITHIN 9 EVENTS", "C0 A0 C0 C0 C0 B0 C0 C0")
    assert [m.events for m in found] == [(1, 5)]
    # processed: A (starts a run) and B (moves it); the Cs change nothing
    assert (engine.stats()["events_processed"], engine.stats()["events_skipped"]) == (2, 6)


def test_events_failing_every_filter_are_skipped() -> None:
    found, engine = _run("SELECT * WHERE A ; B FILTER A[x = 1] AND B[x = 2] WITHIN 9 EVENTS", "A0 A1 B0 B3 A0 B2 B0")
    assert [m.events for m in found] == [(1, 5)]
    assert engine.stats()["events_processed"] == 2


@pytest.mark.parametrize(
    ("text", "spec", "expected"),  # (start, end) of each match
    [
        # ABSENT: the C kills the runs of the A before it, so it must be seen
        ("SELECT * WHERE A ; ABSENT(C) ; B WITHIN 9 EVENTS", "A0 C0 B0 A0 B0", [(3, 4)]),
        # NOT at the start: the interval opens on a non-C event before the A,
        # so the C at 0 leaves the A at 1 without a start
        ("SELECT * WHERE NOT(C) ; A ; B WITHIN 9 EVENTS", "C0 A0 B0 B0 A0 B0", [(1, 5), (2, 5), (3, 5)]),
        # STRICT: any event in between breaks contiguity
        ("SELECT STRICT * WHERE A ; B WITHIN 9 EVENTS", "A0 C0 B0 A0 B0", [(3, 4)]),
        # ':' needs the very next event of the partition
        ("SELECT * WHERE A : B WITHIN 9 EVENTS", "A0 C0 B0 A0 B0", [(3, 4)]),
    ],
)
def test_events_a_run_must_see_are_not_skipped(text: str, spec: str, expected: list[tuple[int, ...]]) -> None:
    found, _ = _run(text, spec)
    assert sorted((m.start, m.end) for m in found) == expected


def test_a_final_state_without_moves_does_not_stop_skipping() -> None:
    spec = "A0 B0 " + "C0 " * 20 + "A0 B0"
    found, engine = _run("SELECT * WHERE A ; B WITHIN 40 EVENTS", spec)
    assert sorted(m.events for m in found) == [(0, 1), (0, 23), (22, 23)]
    assert engine.stats()["events_skipped"] == 20


# ---------------------------------------------------------------- symbols


def test_symbols_pack_more_than_64_atoms() -> None:
    atoms = list(range(0, 200, 2))
    table = SymbolTable(atoms)
    n = 4
    columns = {a: np.zeros(n, dtype=bool) for a in atoms}
    columns[198][1] = True  # only the last atom (word 2) differs
    columns[0][2] = columns[198][2] = True
    symbols = table.encode(columns, np.ones(n, dtype=bool)).tolist()
    assert symbols[0] == symbols[3] and len(set(symbols)) == 3
    assert table.bits[symbols[1]] == 1 << 198 and table.bits[symbols[2]] == 1 | 1 << 198


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 20), st.lists(st.integers(0, 2**20 - 1), min_size=0, max_size=40), st.data())
def test_each_event_gets_the_symbol_of_its_atoms(width: int, words: list[int], data: st.DataObject) -> None:
    # up to 16 atoms take the table; more take np.unique: both give each
    # event the bit vector of the atoms that hold for it, and -1 if unseen
    atoms = sorted(data.draw(st.sets(st.integers(0, 40), min_size=width, max_size=width)))
    table = SymbolTable(atoms)
    visible = np.array(data.draw(st.lists(st.booleans(), min_size=len(words), max_size=len(words))), dtype=bool)
    columns = {a: np.array([w >> j & 1 == 1 for w in words], dtype=bool) for j, a in enumerate(atoms)}
    for _ in range(2):  # a second batch reuses the symbols of the first
        symbols = table.encode(columns, visible).tolist()
        for i, w in enumerate(words):
            expected = sum(1 << a for j, a in enumerate(atoms) if w >> j & 1)
            assert (table.bits[symbols[i]] if symbols[i] >= 0 else None) == (expected if visible[i] else None)


def test_a_state_left_after_one_event_stops_skipping_for_that_event_only() -> None:
    # after a B is marked, the run's state moves on at the next event
    # whatever it is (into B+'s loop), so that one event is processed; the
    # other fillers are idle for the loop and skipped
    spec = "A0 B0 " + "A1 " * 20 + "C0"
    found, engine = _run("SELECT * WHERE A ; B+ ; C FILTER A[x = 0] WITHIN 40 EVENTS", spec)
    assert [(m.start, m.events) for m in found] == [(0, (0, 1, 22))]
    assert (engine.stats()["events_processed"], engine.stats()["events_skipped"]) == (4, 19)
