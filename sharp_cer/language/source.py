"""Source text, spans, and the caret rendering every language error uses."""

from __future__ import annotations

from dataclasses import dataclass

from .frozen import quick_init


@quick_init
@dataclass(frozen=True, slots=True)
class Span:
    """A region of source text: 1-based line and column, end exclusive.

    >>> Span(2, 5, 2, 9).width
    4
    """

    line: int
    column: int
    end_line: int
    end_column: int

    @property
    def width(self) -> int:
        """Columns covered on the first line (at least 1)."""
        if self.end_line != self.line:
            return 1
        return max(1, self.end_column - self.column)

    def shifted(self, lines: int, first_line_columns: int) -> Span:
        """The same span seen from an enclosing text (e.g. a TOML file).

        ``lines`` is added to both lines; ``first_line_columns`` is added to
        the columns of positions on the text's first line.
        """

        def col(line: int, column: int) -> int:
            return column + first_line_columns if line == 1 else column

        return Span(
            self.line + lines,
            col(self.line, self.column),
            self.end_line + lines,
            col(self.end_line, self.end_column),
        )


@dataclass(frozen=True, slots=True)
class Source:
    """Text with the name of the place it came from (a file path or a label).

    ``line_offset`` and ``column_offset`` place the text inside a larger file,
    so that a query embedded in a TOML workload reports the workload's lines.
    """

    text: str
    name: str = "<query>"
    line_offset: int = 0
    column_offset: int = 0

    def locate(self, span: Span) -> Span:
        """The span in the coordinates of the enclosing file."""
        return span.shifted(self.line_offset, self.column_offset)

    def line_text(self, line: int) -> str:
        """Line ``line`` (1-based, in this text's own coordinates)."""
        lines = lines_of(self.text)
        return lines[line - 1] if 0 < line <= len(lines) else ""


def lines_of(text: str) -> list[str]:
    """The lines of a text as the parsers count them: split at ``\\n`` only
    (``str.splitlines`` also splits at form feeds, ``\\x1e``, ``\\u2028``, ...,
    which would put carets on the wrong line), without their ``\\r``.

    >>> lines_of("a\\x1eb\\r\\nc\\n")
    ['a\\x1eb', 'c']
    """
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    return lines[:-1] if len(lines) > 1 and lines[-1] == "" else lines


def render_location(source: Source, span: Span) -> tuple[str, str]:
    """The ``file:line:column`` prefix and the snippet with a caret under ``span``.

    >>> where, snippet = render_location(Source("SELECT * WHERE BUY", "q.ceql"), Span(1, 16, 1, 19))
    >>> where
    'q.ceql:1:16'
    >>> print(snippet)
      1 | SELECT * WHERE BUY
        |                ^^^
    """
    outer = source.locate(span)
    text = source.line_text(span.line).replace("\t", " ")  # one column per character, as the caret counts
    column = outer.column
    if span.line == 1 and source.column_offset:
        text = " " * source.column_offset + text
    number = str(outer.line)
    gutter = " " * len(number)
    width = min(span.width, max(1, len(text) - column + 1))
    caret = " " * (column - 1) + "^" * width
    snippet = f"  {number} | {text}\n  {gutter} | {caret}"
    return f"{source.name}:{outer.line}:{outer.column}", snippet
