"""The MATCH_RECOGNIZE clause as frozen dataclasses; spans are kept for
error messages and left out of equality.

>>> Quantified(Variable("A"), 1, None, greedy=True) == Quantified(Variable("A"), 1, None, greedy=True)
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sharp_cer.language.source import Source, Span


def _span() -> Any:
    return field(default=None, compare=False, repr=False)


# --- row patterns -------------------------------------------------------------


@dataclass(frozen=True)
class Variable:
    """A primary pattern variable: matches one row its DEFINE condition accepts."""

    name: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Concatenation:
    """Items matched one after the other; no items is the empty pattern ``()``."""

    items: tuple[Pattern, ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class Alternation:
    """Alternatives, preferred left to right."""

    items: tuple[Pattern, ...]
    span: Span | None = _span()


@dataclass(frozen=True)
class Quantified:
    """``body{low,high}`` (``high`` None: unbounded); greedy prefers more iterations."""

    body: Pattern
    low: int
    high: int | None
    greedy: bool = True
    span: Span | None = _span()


@dataclass(frozen=True)
class Anchor:
    """``^`` (``start``: the partition's first row) or ``$`` (``end``: after its last)."""

    kind: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Exclusion:
    """``{- body -}``: matched as usual, its rows left out of ALL ROWS PER MATCH."""

    body: Pattern
    span: Span | None = _span()


@dataclass(frozen=True)
class Permute:
    """``PERMUTE(a, b, ...)``: every order, preferred in lexicographic order of positions."""

    items: tuple[Pattern, ...]
    span: Span | None = _span()


Pattern = Variable | Concatenation | Alternation | Quantified | Anchor | Exclusion | Permute


# --- expressions --------------------------------------------------------------


@dataclass(frozen=True)
class Literal:
    """A constant: number, string, boolean or NULL (None)."""

    value: Any
    span: Span | None = _span()


@dataclass(frozen=True)
class Column:
    """``var.name`` or a bare ``name`` (the universal variable: every row of the match)."""

    variable: str | None
    name: str
    span: Span | None = _span()


@dataclass(frozen=True)
class Star:
    """``*`` or ``var.*``: an argument of COUNT."""

    variable: str | None
    span: Span | None = _span()


@dataclass(frozen=True)
class Call:
    """A function, navigation or aggregate call; ``semantics`` is RUNNING, FINAL or None."""

    name: str
    args: tuple[Expr, ...]
    semantics: str | None = None
    span: Span | None = _span()


@dataclass(frozen=True)
class Unary:
    """``-x`` or ``NOT x``."""

    op: str
    operand: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Binary:
    """Arithmetic (``+ - * / %``), comparison (``= <> < <= > >=``), ``AND`` or ``OR``."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class IsNull:
    """``x IS [NOT] NULL``."""

    operand: Expr
    negated: bool
    span: Span | None = _span()


@dataclass(frozen=True)
class Between:
    """``x [NOT] BETWEEN low AND high`` (inclusive)."""

    operand: Expr
    low: Expr
    high: Expr
    negated: bool
    span: Span | None = _span()


@dataclass(frozen=True)
class InList:
    """``x [NOT] IN (a, b, ...)``."""

    operand: Expr
    items: tuple[Expr, ...]
    negated: bool
    span: Span | None = _span()


@dataclass(frozen=True)
class Case:
    """``CASE WHEN c THEN v ... [ELSE e] END``."""

    whens: tuple[tuple[Expr, Expr], ...]
    otherwise: Expr | None
    span: Span | None = _span()


Expr = Literal | Column | Star | Call | Unary | Binary | IsNull | Between | InList | Case


# --- the clause ---------------------------------------------------------------


@dataclass(frozen=True)
class SortKey:
    """One ORDER BY key; NULLs sort last unless ``nulls_first``."""

    column: str
    descending: bool = False
    nulls_first: bool = False
    span: Span | None = _span()


@dataclass(frozen=True)
class Measure:
    """``expr AS name`` in MEASURES."""

    name: str
    expr: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Definition:
    """``var AS condition`` in DEFINE."""

    variable: str
    condition: Expr
    span: Span | None = _span()


@dataclass(frozen=True)
class Skip:
    """AFTER MATCH SKIP: ``past_last``, ``next_row``, ``to_first`` or ``to_last`` (with a variable)."""

    kind: str = "past_last"
    variable: str | None = None
    span: Span | None = _span()


@dataclass(frozen=True)
class Clause:
    """A parsed MATCH_RECOGNIZE clause.

    ``rows`` is ``one`` or ``all``; ``empty`` (ALL ROWS PER MATCH) is ``show``,
    ``omit`` or ``unmatched``.
    """

    partition: tuple[str, ...]
    order: tuple[SortKey, ...]
    measures: tuple[Measure, ...]
    rows: str
    empty: str
    skip: Skip
    pattern: Pattern
    subsets: tuple[tuple[str, tuple[str, ...]], ...]
    definitions: tuple[Definition, ...]
    source: Source | None = field(default=None, compare=False, repr=False)
    pattern_span: Span | None = _span()
    column_spans: tuple[tuple[str, Span], ...] = field(default=(), compare=False, repr=False)


def pattern_variables(pattern: Pattern) -> list[str]:
    """Primary variables in order of first appearance.

    >>> pattern_variables(Concatenation((Variable("B"), Quantified(Variable("A"), 0, None), Variable("B"))))
    ['B', 'A']
    """
    seen: dict[str, None] = {}

    def walk(node: Pattern) -> None:
        if isinstance(node, Variable):
            seen.setdefault(node.name, None)
        elif isinstance(node, Concatenation | Alternation | Permute):
            for item in node.items:
                walk(item)
        elif isinstance(node, Quantified | Exclusion):
            walk(node.body)

    walk(pattern)
    return list(seen)


def permutations_in_order(items: tuple[Pattern, ...], span: Span | None = None) -> Alternation:
    """PERMUTE as the alternation of every order, lexicographic in the items' positions.

    >>> [tuple(v.name for v in c.items) for c in permutations_in_order((Variable("A"), Variable("B"))).items]
    [('A', 'B'), ('B', 'A')]
    """
    import itertools

    orders = itertools.permutations(range(len(items)))
    return Alternation(tuple(Concatenation(tuple(items[i] for i in order)) for order in orders), span)
