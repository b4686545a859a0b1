"""``--dead-letters FILE`` (``match``, ``run``, ``stream``): every rejected
row as one line of JSON, located: its file, line and column, the kind and
reason, and its raw text.

>>> import io, json
>>> from sharp_cer.events.batch import DeadLetter
>>> out = io.StringIO()
>>> letters = LetterWriter(out)
>>> letters.write_letter("e.csv", DeadLetter(1, 2, "mistyped_attribute", "x: expected an int", "x", "an int",
...                                          "'a'", "", "A,a,2"))
>>> json.loads(out.getvalue())
{'file': 'e.csv', 'line': 2, 'column': 'x', 'kind': 'mistyped_attribute', 'reason': 'x: expected an int', \
'raw': 'A,a,2'}
>>> letters.written
1
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

#: the fields of a line of ``--dead-letters``, in order
FIELDS = ("file", "line", "column", "kind", "reason", "raw")


class LetterWriter:
    """Dead letters as JSON lines on ``stream``; ``written`` counts them."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.written = 0

    def write_record(self, record: Mapping[str, Any]) -> None:
        """One letter, from a mapping with ``FIELDS`` (raw text that is not
        UTF-8 shows its bytes as ``\\xff``)."""
        row = {f: _text(record.get(f)) if f in ("raw", "reason") else record.get(f) for f in FIELDS}
        self.stream.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.written += 1

    def write_letter(self, file: str, letter: Any) -> None:
        """One ``events.batch.DeadLetter`` of ``file``."""
        self.write_record(
            {
                "file": file,
                "line": letter.line,
                "column": letter.column,
                "kind": letter.kind,
                "reason": letter.reason,
                "raw": letter.raw,
            }
        )

    def write_letters(self, file: str, letters: Iterable[Any]) -> None:
        """Every letter of a chunk's report."""
        for letter in letters:
            self.write_letter(file, letter)


def _text(value: Any) -> Any:
    """Text JSON can carry whole: bytes kept by ``surrogateescape`` become ``\\xff``; a table row stays a dict."""
    if not isinstance(value, str):
        return value
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        try:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")


class LetterTally:
    """A load tally (``events.batch.LoadTally``) that also writes each
    chunk's dead letters to ``--dead-letters`` (``writer``) and names the
    file in its summary."""

    def __init__(self, tally: Any, writer: LetterWriter | None, path: str | None) -> None:
        self.tally, self.writer, self.path = tally, writer, path

    def add(self, report: Any) -> None:
        """Count one chunk's report and write its letters."""
        self.tally.add(report)
        if self.writer is not None:
            self.writer.write_letters(report.source, report.dead_letters)

    def summary(self) -> str:
        """The tally's line, naming the dead letters' file."""
        line: str = self.tally.summary()
        if self.writer is not None:
            line += f"; dead letters -> {self.path} ({self.writer.written})"
        return line
