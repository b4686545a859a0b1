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
from sharp_cer.language.diagnostics import QueryError


class ClauseError(QueryError, RecognizeError):
    """A located error in a MATCH_RECOGNIZE clause; ``str()`` shows a caret.

    It renders like the language's errors (it is one of them) and belongs to
    this package's own ``RecognizeError``.
    """


class ClauseSyntaxError(ClauseError):
    """The text is not a MATCH_RECOGNIZE clause."""


class NotSupportedError(ClauseError):
    """Something the standard allows that this implementation does not run."""


class MatchError(ClauseError):
    """Matching failed on the rows: a skip that would not advance, too many live threads."""
