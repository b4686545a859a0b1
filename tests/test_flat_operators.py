"""The grammar's flat operator lists fold into the trees one rule per
precedence level gives (issue 33 item 11).

``ceql.lark`` writes OR/AND/NOT, the signs and + - * / %, and OR/';'/':' in
patterns each as one flat list, which the parser folds by precedence, and
lets a lone atom or primary stand where a sum or a postfix may (fewer LALR
reductions per operand). The reference here is lark itself over the same
grammar with those rules written the classic way, one rule per level (the
grammar before the change): both must give the same AST, spans included,
and refuse the same texts at the same place.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Lark
from lark.exceptions import UnexpectedInput

from sharp_cer.language import parse_query
from sharp_cer.language import parser as ceql_parser
from sharp_cer.language.ast import And, Arithmetic, AttributeRef, Comparison, Negate, Not, NumberLiteral, Or
from sharp_cer.language.lexer import CeqlLexer

sys.path.insert(0, str(Path(__file__).parent / "fixtures" / "parse_golden"))
from make_corpus import dump

sys.path.pop(0)

# The rules the flat lists replaced, as they were written before.
_LEVELS = {
    "formula": """?formula: disjunction
        | formula _FILTER condition               -> filter
?disjunction: sequence
            | disjunction _OR sequence            -> disjunction
?sequence: postfix
         | postfix ((SEMICOLON | COLON) postfix)+ -> sequence
""",
    "condition": """?condition: or_expr
?or_expr: and_expr | or_expr _OR and_expr         -> or_
?and_expr: not_expr | and_expr _AND not_expr      -> and_
?not_expr: comparison | _NOT not_expr             -> not_
""",
    "postfix": """?postfix: primary
        | postfix _AS name                        -> bind
        | postfix "+"                             -> iteration
        | postfix ":+"                            -> contiguous_iteration
""",
    "comparison": """?comparison: sum
           | sum compare_op sum                   -> compare
           | sum _IN value_set                    -> in_set
           | sum _NOT _IN value_set               -> not_in_set
           | sum _IN _RANGE "(" sum "," sum ")"   -> in_range
           | sum _LIKE STRING                     -> like
""",
    "sum": """?sum: product | sum add_op product                -> arith
?product: unary | product mul_op unary            -> arith
?unary: atom | add_op unary                       -> negate
""",
}


def _replace_rule(grammar: str, name: str, text: str) -> str:
    """``grammar`` with rule ``name`` (its first line and its ``|`` lines) replaced."""
    pattern = re.compile(rf"^\??{name}:.*\n(?:[ \t]+\|.*\n)*", re.MULTILINE)
    assert len(pattern.findall(grammar)) == 1, name
    return pattern.sub(lambda _: text, grammar)


def _leveled_lark() -> Lark:
    grammar = ceql_parser._grammar()
    for name, text in _LEVELS.items():
        grammar = _replace_rule(grammar, name, text)
    # literals reached atoms through `number`
    grammar = grammar.replace("?atom: INT                                        -> integer\n", "?atom: number\n")
    grammar = re.sub(r"^     \| DOUBLE\s+-> decimal\n", "", grammar, count=1, flags=re.MULTILINE)
    assert "arith_chain" not in grammar and "logic_chain" not in grammar and "pattern_chain" not in grammar
    return Lark(
        grammar,
        parser="lalr",
        lexer=CeqlLexer,
        start=["query", "schema"],
        keep_all_tokens=True,
        maybe_placeholders=True,
        transformer=ceql_parser._reducers(),
    )


LEVELED = _leveled_lark()


def _outcome(lark: Lark, text: str) -> Any:
    """The AST with its spans, or where and how the text is refused."""
    try:
        return ("ast", dump(ceql_parser._finish(lark.parse(text, start="query"))))
    except UnexpectedInput as exc:
        return (type(exc).__name__, exc.line, exc.column)
    except ceql_parser._Problem as problem:
        return (problem.kind.__name__, problem.message, problem.span)


OPERANDS = ["x", "a.y", "1", "2.5", "'s'", "TRUE", "f(x, 2)", "avg(b.p)", "b[x > 1]", "99999999999999999999"]
BINARY = ["+", "-", "*", "/", "%", "=", "<", ">=", "!=", "AND", "OR", "IN {1, 2}", "IN {1..}", "LIKE 'a%'"]
PREFIX = ["-", "+", "NOT"]


@st.composite
def conditions(draw: st.DrawFn, depth: int = 0) -> str:
    """A condition, mostly well-formed (operators of every level mixed, with
    prefixes and parentheses), sometimes with a token too many or missing."""
    parts = []
    for i in range(draw(st.integers(1, 4))):
        if i:
            parts.append(draw(st.sampled_from(BINARY)))
        prefixes = draw(st.lists(st.sampled_from(PREFIX), max_size=2))
        if depth < 2 and draw(st.booleans()) and draw(st.booleans()):
            operand = f"({draw(conditions(depth + 1))})"
        else:
            operand = draw(st.sampled_from(OPERANDS))
        parts += [*prefixes, operand]
    if draw(st.integers(0, 5)) == 0:
        at = draw(st.integers(0, len(parts) - 1))
        if draw(st.booleans()):
            del parts[at]
        else:
            parts.insert(at, draw(st.sampled_from(BINARY + PREFIX + OPERANDS)))
    return " ".join(parts)


PATTERNS = st.lists(st.sampled_from(["A", "B AS b", "(C OR D)", "E+", "F :+"]), min_size=1, max_size=5)
LINKS = st.lists(st.sampled_from([" ; ", " : ", " OR "]), min_size=4, max_size=4)


@settings(max_examples=150, deadline=None)
@given(conditions(), PATTERNS, LINKS)
def test_flat_lists_give_the_trees_of_one_rule_per_level(condition: str, items: list[str], links: list[str]) -> None:
    pattern = items[0] + "".join(link + item for link, item in zip(links, items[1:], strict=False))
    text = f"SELECT * WHERE {pattern} FILTER a[{condition}] AND {condition}"
    assert _outcome(ceql_parser._lark(), text) == _outcome(LEVELED, text)


def test_precedence_and_associativity_worked_by_hand() -> None:
    def where(condition: str) -> Any:
        pattern: Any = parse_query(f"SELECT * WHERE A FILTER {condition}").pattern
        return pattern.condition

    x, y, z = (AttributeRef(None, n) for n in "xyz")
    one, two = NumberLiteral(1), NumberLiteral(2)
    assert where("x - y - z > 1") == Comparison(">", Arithmetic("-", Arithmetic("-", x, y), z), one)
    assert where("x + y * z % 2 = 1") == Comparison(
        "=", Arithmetic("+", x, Arithmetic("%", Arithmetic("*", y, z), two)), one
    )
    assert where("-x * -+y = 1") == Comparison("=", Arithmetic("*", Negate(x), Negate(y)), one)
    a, b, c = (Comparison("=", v, one) for v in (x, y, z))
    assert where("x = 1 OR y = 1 AND NOT NOT z = 1") == Or(a, And(b, Not(Not(c))))
    assert where("NOT x = 1 AND y = 1 OR z = 1") == Or(And(Not(a), b), c)


def test_a_pattern_groups_sequences_between_ors() -> None:
    from sharp_cer.language.ast import Disjunction, EventType, Sequence

    e = {n: EventType(n, None) for n in "ABCDE"}
    pattern = parse_query("SELECT * WHERE A ; B OR C OR D : E").pattern
    assert pattern == Disjunction(
        Disjunction(Sequence((e["A"], e["B"]), (";",)), e["C"]), Sequence((e["D"], e["E"]), (":",))
    )
