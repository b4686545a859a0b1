"""Where ``sharp-cer match`` writes its matches: JSON Lines (a stream or a
``.jsonl`` file), CSV or Parquet, chosen by the file's suffix (else by ``--format``). Each takes the
matches chunk by chunk, so nothing is held but the chunk.

>>> import io
>>> from sharp_cer.events.match import Match
>>> out = io.StringIO()
>>> with open_sink(None, out) as sink:
...     sink.write([Match("q", 0, 2, (0, 2), {"a": (0,), "b": (2,)}, tenant="acme")])
>>> out.getvalue()
'{"query": "q", "tenant": "acme", "start": 0, "end": 2, "events": [0, 2], "vars": {"a": [0], "b": [2]}}\\n'
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from .errors import SurfaceError
from .events.alerts import FLAT_HEAD
from .events.match import Match

#: the suffixes ``--out`` takes
SUFFIXES = (".jsonl", ".csv", ".parquet")


class MatchSink:
    """Matches to JSON Lines on a text stream (the base of every sink).
    ``lines`` tells whether it takes matches as their lines too (``write_lines``)."""

    lines = True

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.written = 0

    def write(self, matches: Sequence[Match]) -> None:
        """Write a chunk of matches."""
        self.write_lines([m.to_json() for m in matches])

    def write_lines(self, lines: Sequence[str]) -> None:
        """Write a chunk of matches given as their lines (``Match.to_json``)."""
        if lines:
            self.stream.write("\n".join(lines) + "\n")
            self.written += len(lines)

    def close(self) -> None:
        """Finish the output (flush what is buffered)."""
        self.stream.flush()

    def __enter__(self) -> MatchSink:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


class _FileSink(MatchSink):
    def __init__(self, path: Path) -> None:
        super().__init__(path.open("w", newline=""))

    def close(self) -> None:
        self.stream.close()


class _CsvSink(_FileSink):
    """One row per match; events and variables as JSON text."""

    lines = False

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.rows = csv.writer(self.stream)
        self.rows.writerow(["query", "tenant", "start", "end", "events", "vars", "deadline", "version"])

    def write(self, matches: Sequence[Match]) -> None:
        self.rows.writerows(
            [
                m.query,
                m.tenant if m.tenant is not None else "",
                m.start,
                m.end,
                json.dumps(list(m.events)),
                json.dumps({k: list(v) for k, v in sorted(m.vars.items())}),
                m.deadline if m.deadline is not None else "",
                m.version if m.version is not None else "",
            ]
            for m in matches
        )
        self.written += len(matches)


class _ParquetSink(MatchSink):
    """Row groups of ``MATCH_SCHEMA``, one per chunk."""

    lines = False

    def __init__(self, path: Path) -> None:
        import pyarrow.parquet as pq

        from .api import MATCH_SCHEMA

        self.written = 0
        self.file: Any = pq.ParquetWriter(path, MATCH_SCHEMA)

    def write(self, matches: Sequence[Match]) -> None:
        from .api import matches_to_arrow

        if matches:
            self.file.write_table(matches_to_arrow(matches))
            self.written += len(matches)

    def close(self) -> None:
        self.file.close()


class AlertSink:
    """Alerts (``events.alerts``): JSON Lines of ``record``s on a stream or a
    ``.jsonl`` file; CSV and Parquet take the flat form, one row per event
    (``FLAT_HEAD``, then one column per attribute of the schema: in CSV
    as text, in Parquet typed when every event type declaring the attribute
    gives it one type, else as text).

    >>> import io
    >>> out = io.StringIO()
    >>> with AlertSink(None, out, {"x": "int"}) as sink:
    ...     sink.write([{"query": "q", "start": 0, "attributes": {"a": [{"type": "A", "position": 0, "x": 1}]}}], [])
    >>> out.getvalue()
    '{"query": "q", "start": 0, "attributes": {"a": [{"type": "A", "position": 0, "x": 1}]}}\\n'
    """

    def __init__(self, path: str | None, stream: TextIO, attributes: dict[str, str], format: str | None = None) -> None:
        self.attributes = attributes
        self.kind = "." + out_format(path, format)
        self.written = 0
        self.file: Any = None
        if self.kind == ".parquet":
            import pyarrow.parquet as pq

            self.file = pq.ParquetWriter(path, flat_schema(attributes))
        elif path is not None:
            self.file = Path(path).open("w", newline="")  # noqa: SIM115 - closed by close()
        self.stream = self.file if self.file is not None and self.kind != ".parquet" else stream
        if self.kind == ".csv":
            self.rows = csv.writer(self.stream)
            self.rows.writerow([*FLAT_HEAD, *attributes])

    def write(self, records: Sequence[dict[str, Any]], flat_rows: Sequence[dict[str, Any]]) -> None:
        """A chunk of alerts: their records (JSON Lines) and their flat rows (CSV, Parquet)."""
        if self.kind == ".jsonl":
            if records:
                self.stream.write("".join(json.dumps(r) + "\n" for r in records))
        elif self.kind == ".csv":
            self.rows.writerows(
                [("" if r[c] is None else r[c]) for c in (*FLAT_HEAD, *self.attributes)] for r in flat_rows
            )
        elif flat_rows:
            import pyarrow as pa

            mixed = [name for name, kind in self.attributes.items() if kind not in _TYPED]
            rows = [{**r, **{a: None if r[a] is None else str(r[a]) for a in mixed}} for r in flat_rows]
            self.file.write_table(pa.Table.from_pylist(rows, schema=flat_schema(self.attributes)))
        self.written += len(records)

    def close(self) -> None:
        """Finish the output."""
        if self.file is not None:
            self.file.close()
        else:
            self.stream.flush()

    def __enter__(self) -> AlertSink:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


_TYPED = ("int", "double", "bool", "primary_time")


def flat_schema(attributes: dict[str, str]) -> Any:
    """The Arrow schema of the flat form (see ``AlertSink``); ``attributes``
    maps each name to its declared type ("" when event types disagree)."""
    import pyarrow as pa

    types = {"int": pa.int64(), "double": pa.float64(), "bool": pa.bool_(), "primary_time": pa.int64()}
    head = [
        ("query", pa.string()),
        ("tenant", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("deadline", pa.int64()),
        ("variable", pa.string()),
        ("position", pa.int64()),
        ("type", pa.string()),
    ]
    return pa.schema(head + [(name, types.get(kind, pa.string())) for name, kind in attributes.items()])


#: the formats ``--format`` names, by the suffix that says each
FORMATS = {".jsonl": "jsonl", ".csv": "csv", ".parquet": "parquet"}


def out_format(path: str | None, format: str | None = None) -> str:
    """The format of an output: the path's suffix says it (``.jsonl``,
    ``.csv``, ``.parquet``); a path without one of those (``/dev/null``, a
    pipe) takes ``format``, by default JSON Lines, as on stdout. A suffix
    and a ``format`` that disagree are refused, before anything runs.

    >>> out_format("m.csv"), out_format("/dev/null"), out_format("/dev/null", "csv"), out_format(None)
    ('csv', 'jsonl', 'csv', 'jsonl')
    >>> out_format("m.csv", "parquet")
    Traceback (most recent call last):
    ...
    sharp_cer.errors.SurfaceError: m.csv: error: the suffix says csv, --format says parquet
      hint: drop --format, or give a path ending in .parquet
    """
    said = None if path is None else FORMATS.get(Path(path).suffix)
    if said is not None and format is not None and said != format:
        raise SurfaceError(
            f"{path}: error: the suffix says {said}, --format says {format}\n"
            f"  hint: drop --format, or give a path ending in .{format}"
        )
    return said or format or "jsonl"


def check_out(path: str | None, format: str | None = None) -> None:
    """Refuse an output whose suffix and ``format`` disagree, before anything runs (see ``out_format``)."""
    out_format(path, format)


def open_sink(path: str | None, stream: TextIO, format: str | None = None) -> MatchSink:
    """The sink for ``--out PATH`` (in ``out_format``'s format), or JSON Lines on ``stream``."""
    kind = out_format(path, format)
    if path is None:
        return MatchSink(stream)
    target = Path(path)
    if kind == "csv":
        return _CsvSink(target)
    if kind == "parquet":
        return _ParquetSink(target)
    return _FileSink(target)
