"""MATCH_RECOGNIZE errors: located with a caret like the language's, each
saying what was expected, what was found and how to fix it.

>>> from sharp_cer.language.source import Source, Span
>>> print(ClauseError("unknown pattern variable 'C'", Source("PATTERN (A B)"),
...                   Span(1, 12, 1, 13), hint="define it in PATTERN"))
<query>:1:12: error: unknown pattern variable 'C'
  1 | PATTERN (A B)
    |            ^
  hint: define it in PATTERN
"""

from __future__ import annotations

from sharp_cer.errors import RecognizeError
from sharp_cer.language.source import Source, Span, render_location


class ClauseError(RecognizeError):
    """A located error in a MATCH_RECOGNIZE clause; ``str()`` shows a caret."""

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

    def __str__(self) -> str:
        if self.source is not None and self.span is not None:
            where, snippet = render_location(self.source, self.span)
            lines = [f"{where}: error: {self.message}", snippet]
        else:
            lines = [f"error: {self.message}"]
        for label, text in (("expected", self.expected), ("found", self.found), ("hint", self.hint)):
            if text:
                lines.append(f"  {label}: {text}")
        return "\n".join(lines)


class ClauseSyntaxError(ClauseError):
    """The text is not a MATCH_RECOGNIZE clause."""


class NotSupportedError(ClauseError):
    """Something the standard allows that this implementation does not run."""


class MatchError(ClauseError):
    """Matching failed on the rows: a skip that would not advance, too many live threads."""
