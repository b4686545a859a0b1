"""Trailing absence: ``p ; ABSENT(F) WITHIN d`` at the end of a whole pattern.

The absence is the last part of the pattern's outermost sequence (under any
FILTERs around the whole pattern). The match is p's; it completes when event
time passes the deadline (the time of p's first event plus ``d``) with no
event satisfying F after p in its partition. ``split`` separates the two:

>>> from sharp_cer.language.parser import parse_query
>>> q = parse_query("SELECT * WHERE LOGIN AS l ; ABSENT(LOGOUT FILTER LOGOUT[u = l.u]) WITHIN 8 HOURS")
>>> prefix, absence = split(q.pattern)
>>> prefix
Bind(formula=EventType(name='LOGIN', stream=None), variable='l')
>>> absence.formula.formula
EventType(name='LOGOUT', stream=None)
>>> split(parse_query("SELECT * WHERE A ; ABSENT(B) ; C").pattern)[1] is None
True
"""

from __future__ import annotations

from . import ast


def trailing_absence(pattern: ast.Formula) -> ast.Absence | None:
    """The pattern's trailing ``ABSENT(F)``, if it has one (see the module)."""
    while isinstance(pattern, ast.Filter):
        pattern = pattern.formula
    if isinstance(pattern, ast.Sequence) and isinstance(pattern.parts[-1], ast.Absence):
        return pattern.parts[-1]
    return None


def split(pattern: ast.Formula) -> tuple[ast.Formula, ast.Absence | None]:
    """The pattern without its trailing absence (p, with the FILTERs around
    the whole pattern kept), and the absence (None: the pattern is unchanged)."""
    absence = trailing_absence(pattern)
    if absence is None:
        return pattern, None
    return _strip(pattern), absence


def _strip(node: ast.Formula) -> ast.Formula:
    if isinstance(node, ast.Filter):
        return ast.Filter(_strip(node.formula), node.condition, span=node.span)
    assert isinstance(node, ast.Sequence)
    parts, links = node.parts[:-1], node.links[:-1]
    if len(parts) == 1:
        return parts[0]
    return ast.Sequence(parts, links, span=node.span)


def absent_event(absence: ast.Absence) -> tuple[ast.EventType, tuple[ast.Expr, ...]]:
    """F's event type and its conditions, outermost last (the grammar allows
    one event type under FILTERs inside ABSENT).

    >>> from sharp_cer.language.parser import parse_query
    >>> q = parse_query("SELECT * WHERE A AS a ; ABSENT(B FILTER B[x > 1] FILTER B.y = a.y) WITHIN 1 SECONDS")
    >>> event, conditions = absent_event(split(q.pattern)[1])
    >>> event.name, len(conditions)
    ('B', 2)
    """
    conditions: list[ast.Expr] = []
    node = absence.formula
    while isinstance(node, ast.Filter):
        conditions.append(node.condition)
        node = node.formula
    assert isinstance(node, ast.EventType), node
    return node, tuple(reversed(conditions))
