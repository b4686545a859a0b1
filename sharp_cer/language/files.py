"""Reading query, schema and workload files: UTF-8 text or a located error.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "q.ceql"
>>> _ = path.write_bytes(b"SELECT * WHERE A\\n-- caf\\xe9")
>>> try:
...     read_source(path, "query")
... except SourceFileError as err:
...     print(err.message, err.line, err.column, err.found)
the query file is not UTF-8 text 2 7 the byte 0xe9
"""

from __future__ import annotations

from pathlib import Path

from .diagnostics import SourceFileError
from .source import Source, Span


def read_source(path: Path, what: str) -> str:
    """The text of a ``what`` file (``query``, ``schema``, ``workload``):
    UTF-8, a byte-order mark dropped. A missing, unreadable or non-UTF-8
    file raises :class:`SourceFileError` naming the file (and the line and
    column of the first byte that is not UTF-8)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        hint = "give the path of a file" if path.is_dir() else "check the path (relative paths start where you run)"
        message = f"cannot read the {what} file: {exc.strerror}"
        raise SourceFileError(message, Source("", str(path)), hint=hint) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = data[: exc.start].decode("utf-8-sig")
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        raise SourceFileError(
            f"the {what} file is not UTF-8 text",
            Source(data.decode("utf-8-sig", errors="replace"), str(path)),
            Span(line, column, line, column + 1),
            expected="UTF-8 text",
            found=f"the byte 0x{data[exc.start]:02x}",
            hint="save the file as UTF-8 (for example: iconv -f latin1 -t utf-8)",
        ) from None
