"""Language errors: each names the place, shows it with a caret, and says
what was expected, what was found, and how to fix it.

>>> from sharp_cer.language.source import Source, Span
>>> err = UndeclaredAttributeError(
...     "event type BUY has no attribute 'prize'",
...     Source("SELECT * WHERE BUY FILTER BUY[prize > 3]", "q.ceql"), Span(1, 31, 1, 36),
...     expected="an attribute of BUY: price, volume", found="'prize'",
...     hint="did you mean 'price'?")
>>> print(err)
q.ceql:1:31: error: event type BUY has no attribute 'prize'
  1 | SELECT * WHERE BUY FILTER BUY[prize > 3]
    |                               ^^^^^
  expected: an attribute of BUY: price, volume
  found: 'prize'
  hint: did you mean 'price'?
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from sharp_cer.errors import LanguageError

from .source import Source, Span, render_location


def _render(
    kind: str,
    message: str,
    source: Source | None,
    span: Span | None,
    expected: str | None,
    found: str | None,
    hint: str | None,
) -> str:
    if source is not None and span is not None:
        where, snippet = render_location(source, span)
        lines = [f"{where}: {kind}: {message}", snippet]
    elif source is not None:
        lines = [f"{source.name}: {kind}: {message}"]
    else:
        lines = [f"{kind}: {message}"]
    if expected:
        lines.append(f"  expected: {expected}")
    if found:
        lines.append(f"  found: {found}")
    if hint:
        lines.append(f"  hint: {hint}")
    return "\n".join(lines)


class QueryError(LanguageError):
    """A located language error; ``str()`` renders it with a caret."""

    def __init__(
        self,
        message: str,
        source: Source | None = None,
        span: Span | None = None,
        *,
        expected: str | None = None,
        found: str | None = None,
        hint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.source = source
        self.span = span
        self.expected = expected
        self.found = found
        self.hint = hint

    @property
    def line(self) -> int | None:
        """Line in the enclosing file, when known."""
        if self.source is None or self.span is None:
            return None
        return self.source.locate(self.span).line

    @property
    def column(self) -> int | None:
        """Column in the enclosing file, when known."""
        if self.source is None or self.span is None:
            return None
        return self.source.locate(self.span).column

    def __str__(self) -> str:
        return _render("error", self.message, self.source, self.span, self.expected, self.found, self.hint)


class CeqlSyntaxError(QueryError):
    """The text is not CEQL: an unexpected token or character."""


class SchemaError(QueryError):
    """A stream declaration is inconsistent (unknown type, duplicate name)."""


class UndeclaredStreamError(QueryError):
    """A FROM clause or ``S>EVENT`` names a stream the schema does not declare."""


class UndeclaredEventTypeError(QueryError):
    """The pattern names an event type no stream in scope declares."""


class AmbiguousEventTypeError(QueryError):
    """An event type name is declared by several streams in scope."""


class UndeclaredAttributeError(QueryError):
    """A condition, projection, partition or window names a missing attribute."""


class UnknownVariableError(QueryError):
    """A condition or projection names a variable bound nowhere in the pattern."""


class TypeMismatchError(QueryError):
    """Operands of incompatible types (a string compared with a number, ...)."""


class UnknownFunctionError(QueryError):
    """A call to a function the language does not have."""


class AggregateOverSingleEventError(QueryError):
    """An aggregate (sum, count, ...) over a variable that binds one event."""


class KleeneReferenceError(QueryError):
    """A plain ``x.attr`` on a variable that binds many events (Kleene)."""


class NotWellFormedError(QueryError):
    """A FILTER on a variable that no enclosing sub-pattern binds."""


class UnsafeFormulaError(QueryError):
    """A variable defined on both sides of a sequence or a conjunction."""


class MisplacedOperatorError(QueryError):
    """An operator used where it has no meaning (ABSENT outside a sequence, ...)."""


class WindowError(QueryError):
    """A WITHIN clause that cannot be evaluated on the declared events."""


class ContradictoryOptionsError(QueryError):
    """Options that cannot hold together (CONSUME BY PARTITION without PARTITION BY, ...)."""


class InvalidLiteralError(QueryError):
    """A literal that cannot be used (an invalid regular expression, ...)."""


class NestingLimitError(QueryError):
    """Operators nested deeper than :data:`MAX_NESTING` (the checker, the
    compiler and the printer walk formulas recursively)."""


#: How deeply operators (``+``, AS, NOT, AND, OR, arithmetic, function calls,
#: ...) may nest inside one another; parentheses alone do not count.
MAX_NESTING = 100


class SourceFileError(QueryError):
    """A query, schema or workload file that cannot be read, or is not UTF-8."""


class WorkloadError(QueryError):
    """A workload file is malformed: bad TOML, unknown keys, wrong types."""


class LanguageErrors(LanguageError):
    """Several located errors of one file (a workload: one per query or schema
    at fault); ``str()`` renders them all, ``errors`` lists them."""

    def __init__(self, errors: list[QueryError]) -> None:
        super().__init__(errors[0].message)
        self.errors = errors

    def __str__(self) -> str:
        return "\n".join(str(e) for e in self.errors)


@dataclass(frozen=True)
class QueryWarning:
    """A located warning: the query is valid but probably not what was meant."""

    message: str
    source: Source | None = None
    span: Span | None = None
    hint: str | None = None

    def __str__(self) -> str:
        return _render("warning", self.message, self.source, self.span, None, None, self.hint)


def did_you_mean(found: str, choices: Iterable[str]) -> str | None:
    """A 'did you mean' hint naming the closest choice, if one is close.

    >>> did_you_mean("prize", ["price", "volume"])
    "did you mean 'price'?"
    >>> did_you_mean("zzz", ["price"]) is None
    True
    """
    options = list(choices)
    folded = {c.lower(): c for c in options}
    if found.lower() in folded and folded[found.lower()] != found:
        return f"did you mean '{folded[found.lower()]}'? (names are case-sensitive)"
    close = difflib.get_close_matches(found, options, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


def listing(names: Iterable[str], limit: int = 12) -> str:
    """A short, sorted, comma-separated list of names.

    >>> listing(["b", "a"])
    'a, b'
    """
    items = sorted(set(names))
    text = ", ".join(items[:limit])
    return text + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``n`` and the noun, plural unless ``n`` is one.

    >>> counted(1, "query", "queries"), counted(3, "PSD cluster"), counted(0, "tenant")
    ('1 query', '3 PSD clusters', '0 tenants')
    """
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def text_kind(text: str) -> str | None:
    """What a text looks like: a ``workload`` (TOML), a ``schema`` or a
    ``query``, judged by its first statement; None when it is none of these.

    >>> text_kind("[workload]\\nname = 'w'"), text_kind("-- q\\nselect * WHERE A"), text_kind("x = 1")
    ('workload', 'query', None)
    """
    if re.search(r"^\s*\[\[?\s*(workload|query|defaults)\s*\]", text, re.MULTILINE):
        return "workload"
    body = re.sub(r"--[^\n]*|/\*.*?(\*/|$)", " ", text, flags=re.DOTALL).lstrip().upper()
    if re.match(r"(CREATE|DECLARE)\s+STREAM\b", body):
        return "schema"
    if re.match(r"SELECT\b", body):
        return "query"
    return None
