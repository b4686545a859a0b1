"""AST to CEQL text. ``parse_query(to_ceql(q)) == q`` for every query.

Parentheses are added only where precedence needs them.

>>> from sharp_cer.language.parser import parse_query
>>> to_ceql(parse_query("select  any * from S where (a ; b) or c ; (d or e) filter e[p>1]"))
'SELECT ANY * FROM S WHERE a ; b OR c ; (d OR e) FILTER e[p > 1]'
"""

from __future__ import annotations

import re

from . import ast

# Words the lexer may read as keywords; names spelled like them get backquotes.
_KEYWORDS = frozenset(
    """ABSENT ALL AND ANY AS BY CONSUME CREATE DECLARE EVENT EVENTS FALSE FILTER FROM HOUR HOURS IN LAST
    LIKE LIMIT MAX MILLISECOND MILLISECONDS MINUTE MINUTES MS NEXT NONE NOT OR PARTITION RANGE SECOND SECONDS
    SELECT STREAM STRICT TRUE WHERE WITHIN""".split()  # noqa: SIM905
)
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*\Z")


def name(text: str) -> str:
    """A name, backquoted when it is not a plain identifier or is a keyword.

    >>> name("price"), name("select"), name("a b")
    ('price', '`select`', '`a b`')
    """
    if _PLAIN_NAME.match(text) and text.upper() not in _KEYWORDS:
        return text
    return "`" + text.replace("`", "``") + "`"


def string(text: str) -> str:
    """A single-quoted string literal.

    >>> string("it's")
    "'it''s'"
    """
    return "'" + text.replace("'", "''") + "'"


def number(value: int | float) -> str:
    """A numeric literal that parses back to the same value."""
    return repr(value) if isinstance(value, float) else str(value)


# Formula precedence, loosest first.
_F_FILTER, _F_OR, _F_SEQ, _F_POSTFIX, _F_PRIMARY = range(5)
# Expression precedence, loosest first.
_E_OR, _E_AND, _E_NOT, _E_CMP, _E_SUM, _E_PRODUCT, _E_UNARY, _E_ATOM = range(1, 9)


def _wrap(text: str, level: int, needed: int) -> str:
    return f"({text})" if level < needed else text


def formula(node: ast.Formula, needed: int = _F_FILTER) -> str:
    """A formula as text, parenthesized if it binds looser than ``needed``."""
    text, level = _formula(node)
    return _wrap(text, level, needed)


def _formula(node: ast.Formula) -> tuple[str, int]:
    if isinstance(node, ast.EventType):
        prefix = f"{name(node.stream)}>" if node.stream else ""
        return prefix + name(node.name), _F_PRIMARY
    if isinstance(node, ast.Bind):
        return f"{formula(node.formula, _F_POSTFIX)} AS {name(node.variable)}", _F_POSTFIX
    if isinstance(node, ast.Iteration):
        return formula(node.formula, _F_POSTFIX) + (":+" if node.contiguous else "+"), _F_POSTFIX
    if isinstance(node, ast.Sequence):
        text = formula(node.parts[0], _F_POSTFIX)
        for link, part in zip(node.links, node.parts[1:], strict=True):
            text += f" {link} {formula(part, _F_POSTFIX)}"
        return text, _F_SEQ
    if isinstance(node, ast.Disjunction):
        return f"{formula(node.left, _F_OR)} OR {formula(node.right, _F_SEQ)}", _F_OR
    if isinstance(node, ast.Conjunction):
        return "AND(" + ", ".join(formula(p) for p in node.parts) + ")", _F_PRIMARY
    if isinstance(node, ast.Negation):
        return f"NOT({formula(node.formula)})", _F_PRIMARY
    if isinstance(node, ast.Absence):
        return f"ABSENT({formula(node.formula)})", _F_PRIMARY
    if isinstance(node, ast.Filter):
        return f"{formula(node.formula)} FILTER {expr(node.condition)}", _F_FILTER
    raise TypeError(f"not a formula node: {node!r}")


def expr(node: ast.Expr, needed: int = _E_OR) -> str:
    """An expression as text, parenthesized if it binds looser than ``needed``."""
    text, level = _expr(node)
    return _wrap(text, level, needed)


def _literal(node: ast.Expr) -> str:
    return expr(node, _E_UNARY)


def _expr(node: ast.Expr) -> tuple[str, int]:
    if isinstance(node, ast.NumberLiteral):
        return number(node.value), _E_ATOM
    if isinstance(node, ast.StringLiteral):
        return string(node.value), _E_ATOM
    if isinstance(node, ast.BoolLiteral):
        return ("TRUE" if node.value else "FALSE"), _E_ATOM
    if isinstance(node, ast.AttributeRef):
        if node.variable is None:
            return name(node.attribute), _E_ATOM
        return f"{name(node.variable)}.{name(node.attribute)}", _E_ATOM
    if isinstance(node, ast.Call):
        # Where a call stands only TRUE, FALSE and NOT act as keywords, so
        # max(...) and last(...) need no quotes.
        plain = _PLAIN_NAME.match(node.function) and node.function.upper() not in ("TRUE", "FALSE", "NOT")
        fn = node.function if plain else name(node.function)
        return f"{fn}(" + ", ".join(expr(a) for a in node.args) + ")", _E_ATOM
    if isinstance(node, ast.VariableFilter):
        return f"{name(node.variable)}[{expr(node.condition)}]", _E_ATOM
    if isinstance(node, ast.Negate):
        inner = expr(node.operand, _E_UNARY)
        # "--" would start a comment.
        return ("- " if inner.startswith(("-", "+")) else "-") + inner, _E_UNARY
    if isinstance(node, ast.Arithmetic):
        level = _E_SUM if node.op in "+-" else _E_PRODUCT
        return f"{expr(node.left, level)} {node.op} {expr(node.right, level + 1)}", level
    if isinstance(node, ast.Comparison):
        return f"{expr(node.left, _E_SUM)} {node.op} {expr(node.right, _E_SUM)}", _E_CMP
    if isinstance(node, ast.InSet):
        values = ", ".join(_literal(v) for v in node.values)
        op = "NOT IN" if node.negated else "IN"
        return f"{expr(node.operand, _E_SUM)} {op} {{{values}}}", _E_CMP
    if isinstance(node, ast.InInterval):
        low = _literal(node.low) if node.low is not None else ""
        high = _literal(node.high) if node.high is not None else ""
        op = "NOT IN" if node.negated else "IN"
        return f"{expr(node.operand, _E_SUM)} {op} {{{low}..{high}}}", _E_CMP
    if isinstance(node, ast.Between):
        low, high = expr(node.low, _E_SUM), expr(node.high, _E_SUM)
        return f"{expr(node.operand, _E_SUM)} IN RANGE({low}, {high})", _E_CMP
    if isinstance(node, ast.Like):
        return f"{expr(node.operand, _E_SUM)} LIKE {string(node.pattern)}", _E_CMP
    if isinstance(node, ast.Not):
        return f"NOT {expr(node.operand, _E_NOT)}", _E_NOT
    if isinstance(node, ast.And):
        return f"{expr(node.left, _E_AND)} AND {expr(node.right, _E_NOT)}", _E_AND
    if isinstance(node, ast.Or):
        return f"{expr(node.left, _E_OR)} OR {expr(node.right, _E_AND)}", _E_OR
    raise TypeError(f"not an expression node: {node!r}")


def window(node: ast.Window) -> str:
    """The text after WITHIN."""
    if isinstance(node, ast.EventWindow):
        return f"{node.count} EVENTS"
    if isinstance(node, ast.AttributeWindow):
        return f"{node.size} [{name(node.attribute)}]"
    parts = []
    for value, unit in (
        (node.hours, "HOURS"),
        (node.minutes, "MINUTES"),
        (node.seconds, "SECONDS"),
        (node.milliseconds, "MILLISECONDS"),
    ):
        if value is not None:
            parts.append(f"{number(value)} {unit}")
    return " ".join(parts)


def _projection(p: ast.Projection) -> str:
    text = (f"{name(p.stream)}>" if p.stream else "") + name(p.variable)
    if p.attributes is not None:
        text += "[" + ", ".join(name(a) for a in p.attributes) + "]"
    return text


def to_ceql(query: ast.Query) -> str:
    """One query as a single line of CEQL."""
    out = ["SELECT"]
    if query.strategy:
        out.append(query.strategy)
    if isinstance(query.selection, ast.SelectAll):
        out.append("*")
    elif isinstance(query.selection, ast.SelectNone):
        out.append("NONE")
    else:
        out.append(", ".join(_projection(p) for p in query.selection))
    if query.streams:
        out.append("FROM " + ", ".join(name(s) for s in query.streams))
    out.append("WHERE " + formula(query.pattern))
    if query.partition_by:
        groups = ", ".join("[" + ", ".join(name(a) for a in g) + "]" for g in query.partition_by)
        out.append("PARTITION BY " + groups)
    if query.within is not None:
        out.append("WITHIN " + window(query.within))
    if query.consume:
        out.append("CONSUME BY " + query.consume)
    if query.limit is not None:
        out.append(f"LIMIT {query.limit}")
    return " ".join(out)


def stream_declarations(streams: tuple[ast.StreamDecl, ...]) -> str:
    """``CREATE STREAM`` text for declarations, one event type per line.

    >>> from sharp_cer.language.parser import parse_stream_declarations
    >>> print(stream_declarations(parse_stream_declarations("CREATE STREAM S {EVENT A {x:int}}")))
    CREATE STREAM S {
      EVENT A { x:int }
    }
    """
    blocks = []
    for stream in streams:
        events = ",\n".join(
            f"  EVENT {name(e.name)} {{ " + ", ".join(f"{name(a.name)}:{a.type}" for a in e.attributes) + " }"
            for e in stream.events
        )
        blocks.append(f"CREATE STREAM {name(stream.name)} {{\n{events}\n}}")
    return "\n".join(blocks)
