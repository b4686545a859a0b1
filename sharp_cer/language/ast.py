"""The CEQL abstract syntax tree: frozen dataclasses with source spans.

Spans never take part in equality, so two parses of the same query text
(or of its printed form) compare equal.

>>> EventType("BUY", span=Span(1, 1, 1, 4)) == EventType("BUY")
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .frozen import quick_init
from .source import Span


def _span() -> Span | None:
    return field(default=None, compare=False, repr=False, kw_only=True)  # type: ignore[return-value]


# ---------------------------------------------------------------- expressions


@dataclass(frozen=True, slots=True)
class NumberLiteral:
    """An integer or floating-point constant (never negative: see ``Negate``)."""

    value: int | float
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class StringLiteral:
    """A single-quoted string constant."""

    value: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class BoolLiteral:
    """``TRUE`` or ``FALSE``."""

    value: bool
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class AttributeRef:
    """``attr`` (inside ``x[...]``) or ``x.attr`` (anywhere in a FILTER).

    A bare name used as the argument of ``count`` names a variable instead.
    """

    variable: str | None
    attribute: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Call:
    """A math function or an aggregate over a Kleene variable."""

    function: str
    args: tuple[Expr, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Negate:
    """Unary minus."""

    operand: Expr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Arithmetic:
    """``left op right`` with op one of ``+ - * / %``."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Comparison:
    """``left op right`` with op one of ``< <= > >= = !=``."""

    op: str
    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class InSet:
    """``operand [NOT] IN {v1, v2, ...}``."""

    operand: Expr
    values: tuple[NumberLiteral | StringLiteral | Negate, ...]
    negated: bool = False
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class InInterval:
    """``operand [NOT] IN {low..high}``; either bound may be open (None)."""

    operand: Expr
    low: NumberLiteral | Negate | None
    high: NumberLiteral | Negate | None
    negated: bool = False
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Between:
    """``operand IN RANGE(low, high)``, both bounds inclusive."""

    operand: Expr
    low: Expr
    high: Expr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Like:
    """``operand LIKE 'regex'`` (RE2 syntax, matched anywhere unless anchored)."""

    operand: Expr
    pattern: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class And:
    """Boolean conjunction."""

    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Or:
    """Boolean disjunction."""

    left: Expr
    right: Expr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Not:
    """Boolean negation."""

    operand: Expr
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class VariableFilter:
    """CORE's ``x[predicate]``: every event bound to ``x`` satisfies it.

    Bare attribute names inside refer to ``x``'s events.
    """

    variable: str
    condition: Expr
    span: Span | None = _span()


Expr = (
    NumberLiteral
    | StringLiteral
    | BoolLiteral
    | AttributeRef
    | Call
    | Negate
    | Arithmetic
    | Comparison
    | InSet
    | InInterval
    | Between
    | Like
    | And
    | Or
    | Not
    | VariableFilter
)


# ---------------------------------------------------------------- formulas


@dataclass(frozen=True, slots=True)
class EventType:
    """An event type, optionally qualified by its stream (``S>BUY``).

    It also binds the implicit variable of the same name.
    """

    name: str
    stream: str | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Bind:
    """``formula AS variable``: the variable holds all events of ``formula``."""

    formula: Formula
    variable: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Iteration:
    """``formula+`` (skipping allowed) or ``formula:+`` (contiguous)."""

    formula: Formula
    contiguous: bool = False
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Sequence:
    """``p1 l1 p2 l2 ... pn``; each link is ``;`` (skipping) or ``:`` (contiguous)."""

    parts: tuple[Formula, ...]
    links: tuple[str, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Disjunction:
    """``left OR right``."""

    left: Formula
    right: Formula
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Conjunction:
    """``AND(p1, p2, ...)``: all parts, on disjoint events, in any order."""

    parts: tuple[Formula, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Negation:
    """CORE's ``NOT(F)``: one event that does not satisfy F; it opens the
    interval but is not an output event."""

    formula: Formula
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Absence:
    """``p ; ABSENT(F) ; q``: no event satisfying F strictly between p and q."""

    formula: Formula
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class Filter:
    """``formula FILTER condition``."""

    formula: Formula
    condition: Expr
    span: Span | None = _span()


Formula = EventType | Bind | Iteration | Sequence | Disjunction | Conjunction | Negation | Absence | Filter


# ---------------------------------------------------------------- queries


@dataclass(frozen=True, slots=True)
class Projection:
    """``x`` or ``x[attr, ...]`` in the SELECT list."""

    variable: str
    stream: str | None = None
    attributes: tuple[str, ...] | None = None
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class SelectAll:
    """``SELECT *``: every event of the match."""

    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class SelectNone:
    """``SELECT NONE``: only the interval of the match."""

    span: Span | None = _span()


Selection = SelectAll | SelectNone | tuple[Projection, ...]


@dataclass(frozen=True, slots=True)
class EventWindow:
    """``WITHIN n EVENTS``: end position minus start position at most n."""

    count: int
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """``WITHIN h HOURS m MINUTES s SECONDS ms MILLISECONDS`` on the primary
    time (``MS`` is short for ``MILLISECONDS``)."""

    hours: int | float | None = None
    minutes: int | float | None = None
    seconds: int | float | None = None
    span: Span | None = _span()
    milliseconds: int | float | None = None

    @property
    def nanoseconds(self) -> int:
        """The duration in nanoseconds.

        >>> TimeWindow(minutes=1, seconds=0.5).nanoseconds
        60500000000
        >>> TimeWindow(milliseconds=250).nanoseconds
        250000000
        """
        total = (self.hours or 0) * 3600 + (self.minutes or 0) * 60 + (self.seconds or 0)
        return round(total * 1_000_000_000 + (self.milliseconds or 0) * 1_000_000)


@dataclass(frozen=True, slots=True)
class AttributeWindow:
    """``WITHIN n [attr]``: end value minus start value below n."""

    size: int
    attribute: str
    span: Span | None = _span()


Window = EventWindow | TimeWindow | AttributeWindow

STRATEGIES = ("ALL", "ANY", "NEXT", "LAST", "MAX", "STRICT")
CONSUMPTION_POLICIES = ("ANY", "PARTITION", "NONE")


@dataclass(frozen=True, slots=True)
class Query:
    """One CEQL query, exactly as written (defaults are not filled in)."""

    selection: Selection
    pattern: Formula
    strategy: str | None = None
    streams: tuple[str, ...] = ()
    partition_by: tuple[tuple[str, ...], ...] = ()
    within: Window | None = None
    consume: str | None = None
    limit: int | None = None
    span: Span | None = _span()

    @property
    def effective_strategy(self) -> str:
        """The strategy that applies: ANY and no strategy both mean ALL."""
        return "ALL" if self.strategy in (None, "ANY") else self.strategy

    @property
    def partition_attributes(self) -> tuple[str, ...]:
        """The attributes of the partition key: every attribute PARTITION BY
        names, whatever the brackets, each once and sorted (so ``[a], [b]``,
        ``[a, b]`` and ``[b], [a]`` give the same key). Every event of a
        match has the same non-null value of each (CORE's substreams).

        >>> Query(SelectAll(), EventType("A"), partition_by=(("name",), ("volume", "name"))).partition_attributes
        ('name', 'volume')
        """
        return tuple(sorted({a for names in self.partition_by for a in names}))


# ---------------------------------------------------------------- schemas

ATTRIBUTE_TYPES = ("int", "double", "string", "bool", "primary_time")


@dataclass(frozen=True, slots=True)
class AttributeDecl:
    """``name:type`` inside an EVENT declaration."""

    name: str
    type: str
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class EventDecl:
    """``EVENT NAME { attr:type, ... }``."""

    name: str
    attributes: tuple[AttributeDecl, ...]
    span: Span | None = _span()


@dataclass(frozen=True, slots=True)
class StreamDecl:
    """``CREATE STREAM S { EVENT ..., ... }``."""

    name: str
    events: tuple[EventDecl, ...]
    span: Span | None = _span()


Node = Expr | Formula | Projection | SelectAll | SelectNone | Window | Query


# Every node class gets the quicker constructor (same signature): parsing
# builds about a hundred nodes and spans per query.
for _node_class in [v for v in list(globals().values()) if isinstance(v, type) and v.__module__ == __name__]:
    quick_init(_node_class)
del _node_class
