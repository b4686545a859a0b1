"""The printer and the parser agree: ``parse_query(to_ceql(q)) == q``.

Property tests over random syntax trees (see ``strategies.py``), plus
hand-written cases that pin down the grammar's precedence.
"""

from __future__ import annotations

import pytest
import strategies as cs
from hypothesis import example, given, settings

from sharp_cer.language import ast
from sharp_cer.language.parser import parse_query, parse_stream_declarations
from sharp_cer.language.printer import stream_declarations, to_ceql

A, B, C = ast.EventType("A"), ast.EventType("B"), ast.EventType("C")


def attr(name: str, variable: str | None = None) -> ast.AttributeRef:
    return ast.AttributeRef(variable, name)


def num(value: int | float) -> ast.NumberLiteral:
    return ast.NumberLiteral(value)


def q(pattern: ast.Formula, **kwargs: object) -> ast.Query:
    return ast.Query(ast.SelectAll(), pattern, **kwargs)  # type: ignore[arg-type]


def where(condition: ast.Expr) -> ast.Query:
    return q(ast.Filter(A, condition))


# ---------------------------------------------------------------- properties


@settings(max_examples=300, deadline=None)
@given(cs.queries())
def test_query_roundtrip(query: ast.Query) -> None:
    text = to_ceql(query)
    assert parse_query(text) == query, text


@settings(max_examples=300, deadline=None)
@given(cs.queries())
def test_printing_is_idempotent(query: ast.Query) -> None:
    text = to_ceql(query)
    assert to_ceql(parse_query(text)) == text


@settings(max_examples=300, deadline=None)
@given(cs.conditions())
def test_condition_roundtrip(condition: ast.Expr) -> None:
    query = where(condition)
    text = to_ceql(query)
    assert parse_query(text) == query, text


@settings(max_examples=300, deadline=None)
@given(cs.schemas())
def test_stream_declarations_roundtrip(decls: tuple[ast.StreamDecl, ...]) -> None:
    text = stream_declarations(decls)
    assert parse_stream_declarations(text) == decls, text


@settings(max_examples=300, deadline=None)
@given(cs.schemas())
def test_stream_declarations_printing_is_idempotent(decls: tuple[ast.StreamDecl, ...]) -> None:
    text = stream_declarations(decls)
    assert stream_declarations(parse_stream_declarations(text)) == text


@settings(max_examples=300, deadline=None)
@given(cs.names())
@example("`")
@example("a`")
@example("``b")
@example("select")
@example("Hours")
@example("a b")
@example("1a")
@example("--x")
@example("/*")
@example("日本")
@example("not")
@example("True")
@example("FALSE")
@example("max")
def test_any_name_roundtrips_everywhere(name: str) -> None:
    query = ast.Query(
        (ast.Projection(name, name, (name,)),),
        ast.Filter(
            ast.Bind(ast.EventType(name, name), name),
            ast.VariableFilter(name, ast.Call(name, (ast.AttributeRef(name, name),))),
        ),
        streams=(name,),
        partition_by=((name,),),
        within=ast.AttributeWindow(1, name),
    )
    text = to_ceql(query)
    assert parse_query(text) == query, text


@pytest.mark.parametrize(
    "function", ["max", "last", "count", "not", "NOT", "true", "False", "select", "and", "in", "a b"]
)
def test_calls_with_keyword_names_roundtrip(function: str) -> None:
    # Where a call stands, TRUE, FALSE and NOT are keywords: `not(x)` is Not(x).
    query = where(ast.Call(function, (attr("x"), num(1))))
    text = to_ceql(query)
    assert parse_query(text) == query, text


# ---------------------------------------------------------------- precedence


@pytest.mark.parametrize(
    ("text", "pattern"),
    [
        # ';' binds tighter than OR.
        ("SELECT * WHERE A ; B OR C", ast.Disjunction(ast.Sequence((A, B), (";",)), C)),
        ("SELECT * WHERE A OR B ; C", ast.Disjunction(A, ast.Sequence((B, C), (";",)))),
        # OR is left-associative.
        ("SELECT * WHERE A OR B OR C", ast.Disjunction(ast.Disjunction(A, B), C)),
        # AS binds tighter than OR and ';'.
        ("SELECT * WHERE A OR B AS x", ast.Disjunction(A, ast.Bind(B, "x"))),
        ("SELECT * WHERE A ; B+ AS x", ast.Sequence((A, ast.Bind(ast.Iteration(B), "x")), (";",))),
        ("SELECT * WHERE (A ; B) AS x", ast.Bind(ast.Sequence((A, B), (";",)), "x")),
        # Postfix operators apply left to right.
        ("SELECT * WHERE A AS x+", ast.Iteration(ast.Bind(A, "x"))),
        ("SELECT * WHERE A+:+", ast.Iteration(ast.Iteration(A), contiguous=True)),
        # Sequences are flat, with ';' and ':' links mixed.
        ("SELECT * WHERE A : B ; C", ast.Sequence((A, B, C), (":", ";"))),
        ("SELECT * WHERE A:B:+", ast.Sequence((A, ast.Iteration(B, contiguous=True)), (":",))),
        ("SELECT * WHERE (A ; B) ; C", ast.Sequence((ast.Sequence((A, B), (";",)), C), (";",))),
        # FILTER is loosest: it applies to the whole disjunction.
        (
            "SELECT * WHERE A OR B FILTER x > 1",
            ast.Filter(ast.Disjunction(A, B), ast.Comparison(">", attr("x"), num(1))),
        ),
        (
            "SELECT * WHERE A FILTER A[x > 1] OR A[y < 2]",
            ast.Filter(
                A,
                ast.Or(
                    ast.VariableFilter("A", ast.Comparison(">", attr("x"), num(1))),
                    ast.VariableFilter("A", ast.Comparison("<", attr("y"), num(2))),
                ),
            ),
        ),
        (
            "SELECT * WHERE A FILTER x = 1 FILTER y = 2",
            ast.Filter(
                ast.Filter(A, ast.Comparison("=", attr("x"), num(1))),
                ast.Comparison("=", attr("y"), num(2)),
            ),
        ),
        # Stream-qualified event types; NOT/ABSENT/AND formulas.
        ("SELECT * WHERE S>A ; NOT(B) ; C", ast.Sequence((ast.EventType("A", "S"), ast.Negation(B), C), (";", ";"))),
        (
            "SELECT * WHERE A ; ABSENT(B FILTER x > 1) ; C",
            ast.Sequence((A, ast.Absence(ast.Filter(B, ast.Comparison(">", attr("x"), num(1)))), C), (";", ";")),
        ),
        ("SELECT * WHERE AND(A, B ; C)", ast.Conjunction((A, ast.Sequence((B, C), (";",))))),
        # Backquoted names.
        (
            "SELECT * WHERE `select` ; `a b`>`x``y`",
            ast.Sequence((ast.EventType("select"), ast.EventType("x`y", "a b")), (";",)),
        ),
    ],
)
def test_formula_precedence(text: str, pattern: ast.Formula) -> None:
    assert parse_query(text).pattern == pattern
    assert parse_query(to_ceql(q(pattern))).pattern == pattern


@pytest.mark.parametrize(
    ("condition_text", "condition"),
    [
        ("-a * 2", ast.Arithmetic("*", ast.Negate(attr("a")), num(2))),
        ("-(a * 2)", ast.Negate(ast.Arithmetic("*", attr("a"), num(2)))),
        ("- -a", ast.Negate(ast.Negate(attr("a")))),
        ("+a", attr("a")),  # unary plus is dropped
        ("-5", ast.Negate(num(5))),
        ("1.5e3", num(1500.0)),
        ("a - b - c", ast.Arithmetic("-", ast.Arithmetic("-", attr("a"), attr("b")), attr("c"))),
        ("a - (b - c)", ast.Arithmetic("-", attr("a"), ast.Arithmetic("-", attr("b"), attr("c")))),
        ("a + b * c", ast.Arithmetic("+", attr("a"), ast.Arithmetic("*", attr("b"), attr("c")))),
        ("a % b / c", ast.Arithmetic("/", ast.Arithmetic("%", attr("a"), attr("b")), attr("c"))),
        (
            "a + 1 < b * 2",
            ast.Comparison("<", ast.Arithmetic("+", attr("a"), num(1)), ast.Arithmetic("*", attr("b"), num(2))),
        ),
        ("a == 1", ast.Comparison("=", attr("a"), num(1))),
        ("a <> 1", ast.Comparison("!=", attr("a"), num(1))),
        ("(a < b) = TRUE", ast.Comparison("=", ast.Comparison("<", attr("a"), attr("b")), ast.BoolLiteral(True))),
        ("a OR b AND c", ast.Or(attr("a"), ast.And(attr("b"), attr("c")))),
        ("(a OR b) AND c", ast.And(ast.Or(attr("a"), attr("b")), attr("c"))),
        ("NOT a AND b", ast.And(ast.Not(attr("a")), attr("b"))),
        ("NOT a = 1", ast.Not(ast.Comparison("=", attr("a"), num(1)))),
        ("NOT NOT a", ast.Not(ast.Not(attr("a")))),
        ("a OR b OR c", ast.Or(ast.Or(attr("a"), attr("b")), attr("c"))),
        ("x.p > y.q", ast.Comparison(">", attr("p", "x"), attr("q", "y"))),
        (
            "x IN {1, -2, 'a''b'}",
            ast.InSet(attr("x"), (num(1), ast.Negate(num(2)), ast.StringLiteral("a'b"))),
        ),
        ("x NOT IN {-1.5..}", ast.InInterval(attr("x"), ast.Negate(num(1.5)), None, negated=True)),
        ("x IN {..3}", ast.InInterval(attr("x"), None, num(3))),
        ("x IN {1..2}", ast.InInterval(attr("x"), num(1), num(2))),
        ("x IN {..}", ast.InInterval(attr("x"), None, None)),
        (
            "x + 1 IN RANGE(-a, b * 2)",
            ast.Between(
                ast.Arithmetic("+", attr("x"), num(1)), ast.Negate(attr("a")), ast.Arithmetic("*", attr("b"), num(2))
            ),
        ),
        ("name LIKE '^a.*'", ast.Like(attr("name"), "^a.*")),
        ("avg(x.p, 2) >= 1", ast.Comparison(">=", ast.Call("avg", (attr("p", "x"), num(2))), num(1))),
        (
            "count(x) > 0 AND f()",
            ast.And(ast.Comparison(">", ast.Call("count", (attr("x"),)), num(0)), ast.Call("f", ())),
        ),
        (
            "x[p > 1 OR q] AND y[NOT r]",
            ast.And(
                ast.VariableFilter("x", ast.Or(ast.Comparison(">", attr("p"), num(1)), attr("q"))),
                ast.VariableFilter("y", ast.Not(attr("r"))),
            ),
        ),
        (
            "'--not a comment' = '/* nor this */'",
            ast.Comparison("=", ast.StringLiteral("--not a comment"), ast.StringLiteral("/* nor this */")),
        ),
    ],
)
def test_condition_precedence(condition_text: str, condition: ast.Expr) -> None:
    assert parse_query(f"SELECT * WHERE A FILTER {condition_text}").pattern.condition == condition  # type: ignore[union-attr]
    assert parse_query(to_ceql(where(condition))) == where(condition)


# ---------------------------------------------------------------- printing


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        (ast.Sequence((ast.Disjunction(A, B), C), (";",)), "(A OR B) ; C"),
        (ast.Disjunction(A, ast.Disjunction(B, C)), "A OR (B OR C)"),
        (ast.Disjunction(ast.Disjunction(A, B), C), "A OR B OR C"),
        (ast.Bind(ast.Sequence((A, B), (":",)), "x"), "(A : B) AS x"),
        (ast.Iteration(ast.Disjunction(A, B), contiguous=True), "(A OR B):+"),
        (ast.Sequence((ast.Filter(A, attr("p")), B), (";",)), "(A FILTER p) ; B"),
        (ast.Disjunction(ast.Filter(A, attr("p")), B), "(A FILTER p) OR B"),
        (ast.Filter(ast.Disjunction(A, B), attr("p")), "A OR B FILTER p"),
        (ast.Negation(ast.Filter(ast.EventType("A", "S"), attr("p"))), "NOT(S>A FILTER p)"),
        (ast.Conjunction((ast.Filter(A, attr("p")), B)), "AND(A FILTER p, B)"),
        (ast.EventType("select", "a b"), "`a b`>`select`"),
    ],
)
def test_printer_parenthesizes_only_where_needed(pattern: ast.Formula, text: str) -> None:
    assert to_ceql(q(pattern)) == f"SELECT * WHERE {text}"


@pytest.mark.parametrize(
    ("condition", "text"),
    [
        (ast.Arithmetic("*", ast.Negate(attr("a")), num(2)), "-a * 2"),
        (ast.Negate(ast.Arithmetic("*", attr("a"), num(2))), "-(a * 2)"),
        (ast.Negate(ast.Negate(attr("a"))), "- -a"),
        (ast.Arithmetic("-", attr("a"), ast.Negate(num(1))), "a - -1"),
        (ast.Arithmetic("-", attr("a"), ast.Arithmetic("-", attr("b"), attr("c"))), "a - (b - c)"),
        (ast.Not(ast.And(attr("a"), attr("b"))), "NOT (a AND b)"),
        (ast.And(attr("a"), ast.Or(attr("b"), attr("c"))), "a AND (b OR c)"),
        (ast.StringLiteral("it's"), "'it''s'"),
        (num(0.1), "0.1"),
        (num(1e-7), "1e-07"),
    ],
)
def test_printer_expression_text(condition: ast.Expr, text: str) -> None:
    assert to_ceql(where(condition)) == f"SELECT * WHERE A FILTER {text}"


def test_clauses_roundtrip_and_normalize_case() -> None:
    text = (
        "select next S>x[a, b], y from S, T where A as x ; B as y "
        "partition by [a], [b, c] within 1 hour 30 minutes 0.5 second consume by partition limit 7"
    )
    expected = ast.Query(
        (ast.Projection("x", "S", ("a", "b")), ast.Projection("y")),
        ast.Sequence((ast.Bind(A, "x"), ast.Bind(B, "y")), (";",)),
        strategy="NEXT",
        streams=("S", "T"),
        partition_by=(("a",), ("b", "c")),
        within=ast.TimeWindow(hours=1, minutes=30, seconds=0.5),
        consume="PARTITION",
        limit=7,
    )
    assert parse_query(text) == expected
    assert to_ceql(expected) == (
        "SELECT NEXT S>x[a, b], y FROM S, T WHERE A AS x ; B AS y "
        "PARTITION BY [a], [b, c] WITHIN 1 HOURS 30 MINUTES 0.5 SECONDS CONSUME BY PARTITION LIMIT 7"
    )
    assert parse_query(to_ceql(expected)) == expected


@pytest.mark.parametrize(
    ("text", "window"),
    [
        ("WITHIN 10 EVENTS", ast.EventWindow(10)),
        ("WITHIN 5 [ts]", ast.AttributeWindow(5, "ts")),
        ("WITHIN 2 minutes", ast.TimeWindow(minutes=2)),
        ("WITHIN 1.5 HOURS 3 SECONDS", ast.TimeWindow(hours=1.5, seconds=3)),
    ],
)
def test_windows(text: str, window: ast.Window) -> None:
    query = parse_query(f"SELECT NONE WHERE A {text}")
    assert query.within == window
    assert parse_query(to_ceql(query)) == query


def test_stream_declarations_example() -> None:
    decls = (
        ast.StreamDecl(
            "S",
            (
                ast.EventDecl("A", (ast.AttributeDecl("x", "int"), ast.AttributeDecl("select", "string"))),
                ast.EventDecl("B C", ()),
            ),
        ),
    )
    text = stream_declarations(decls)
    assert text == "CREATE STREAM S {\n  EVENT A { x:int, `select`:string },\n  EVENT `B C` {  }\n}"
    assert parse_stream_declarations(text) == decls
    assert parse_stream_declarations("DECLARE STREAM S { EVENT A { x:int, `select`:string }, EVENT `B C` {} }") == decls
