"""Reading a stream's output folder without Spark: only the files its
micro-batches committed.

Spark's file sink writes a micro-batch's Parquet files first and lists them
in its log (``OUT/_spark_metadata/N``, one JSON line per file after a
version line; every tenth batch a ``N.compact`` file lists everything
committed so far) only when the micro-batch commits. Files of a micro-batch
cut short (a crash, a kill) stay in the folder, unlisted, and are written
again by the retry under other names: a reader that globbed ``*.parquet``
would count their rows twice. These helpers follow the log as Spark's
reader does. Nothing here imports PySpark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

import pandas as pd
import pyarrow.parquet as pq

from sharp_cer.errors import SurfaceError

from .columns import COUNTER, DEAD_LETTER, MATCH, OUTPUT_KIND
from .telemetry import ENGINE

LOG = "_spark_metadata"


def committed_files(out: str | Path, through: int | None = None) -> list[Path]:
    """The Parquet files the stream's committed micro-batches wrote to ``out``
    (those up to micro-batch ``through``, if given), in commit order.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as out:
    ...     log = Path(out, LOG)
    ...     log.mkdir()
    ...     _ = log.joinpath("0").write_text('v1\\n{"path":"file://' + out + '/a.parquet","action":"add"}\\n')
    ...     _ = Path(out, "stray.parquet").write_text("of a micro-batch that never committed")
    ...     _ = log.joinpath("1").write_text('v1\\n{"path":"file://' + out + '/b.parquet","action":"add"}\\n')
    ...     [p.name for p in committed_files(out)], [p.name for p in committed_files(out, through=0)]
    (['a.parquet', 'b.parquet'], ['a.parquet'])
    """
    log = Path(out) / LOG
    if not log.is_dir():
        raise SurfaceError(
            f"{out}: error: no stream output here (no {LOG} folder)\n"
            "  expected: the --out folder of sharp-cer stream, or a stream's Parquet file sink"
        )
    batches: dict[int, Path] = {}
    compact = -1
    for entry in log.iterdir():
        stem, _, suffix = entry.name.partition(".")
        if not stem.isdigit() or suffix not in ("", "compact") or (through is not None and int(stem) > through):
            continue  # Spark's temporary files, later micro-batches
        batches[int(stem)] = entry
        if suffix == "compact":
            compact = max(compact, int(stem))
    listed: dict[str, None] = {}  # ordered set
    for batch in sorted(b for b in batches if b >= compact):
        lines = batches[batch].read_text().splitlines()
        for line in lines[1:]:  # the first is the log's version
            entry = json.loads(line)
            path = unquote(urlparse(entry["path"]).path)
            if entry.get("action", "add") == "add":
                listed[path] = None
            else:
                listed.pop(path, None)
    return [Path(p) for p in listed]


def read_committed(out: str | Path, through: int | None = None) -> pd.DataFrame:
    """The stream's committed output (up to micro-batch ``through``, if
    given) as one pandas frame (``STREAM_DDL``'s columns; empty when
    nothing has been committed yet)."""
    files = committed_files(out, through)
    if not files:
        return pd.DataFrame()
    return pd.concat([pq.read_table(f).to_pandas() for f in files], ignore_index=True)


@dataclass(frozen=True)
class Counts:
    """What committed micro-batches hold: the rows they read (events and
    dead letters: stage 1's ``rows`` counter, as the summary counts them),
    the dead letters among them and the matches they wrote."""

    rows: int = 0
    dead_letters: int = 0
    matches: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.rows + other.rows, self.dead_letters + other.dead_letters, self.matches + other.matches)


class CommittedCounts:
    """The counts of a stream's output, micro-batch by micro-batch, as it
    commits them (``of``): each committed file is counted once, in the
    first micro-batch asked about that lists it, so the counts add up to
    the whole output's, which the summary reads. Files committed before
    this object was made are ``before``'s.

    >>> import tempfile, pyarrow as pa
    >>> out = Path(tempfile.mkdtemp())
    >>> def commit(batch, kinds, names, values):
    ...     part = out / f"part-{batch}.parquet"
    ...     pq.write_table(pa.table({"kind": kinds, "name": names, "query": [""] * len(kinds),
    ...                              "value": values}), part)
    ...     (out / LOG).mkdir(exist_ok=True)
    ...     _ = (out / LOG / str(batch)).write_text('v1\\n{"path":"file://' + str(part) + '","action":"add"}\\n')
    >>> commit(0, ["counter", "match"], ["rows", "q"], [3.0, None])
    >>> counts = CommittedCounts(out)
    >>> commit(1, ["counter", "dead_letter", "match", "match"], ["rows", "late", "q", "q"], [5.0, None, None, None])
    >>> counts.before
    Counts(rows=3, dead_letters=0, matches=1)
    >>> counts.of(1), counts.of(1)  # each file counted once
    (Counts(rows=5, dead_letters=1, matches=2), Counts(rows=0, dead_letters=0, matches=0))
    """

    def __init__(self, out: str | Path) -> None:
        self.out = Path(out)
        self._counted: set[Path] = set()
        self.before = self._count(None)

    def of(self, batch: int) -> Counts:
        """What micro-batch ``batch`` committed (and any earlier one not yet counted)."""
        return self._count(batch)

    def _count(self, through: int | None) -> Counts:
        if not (self.out / LOG).is_dir():
            return Counts()
        total = Counts()
        for path in committed_files(self.out, through):
            if path not in self._counted:
                self._counted.add(path)
                total = total + _file_counts(path)
        return total


def _file_counts(path: Path) -> Counts:
    """One committed file's counts (only the columns they need are read)."""
    table = pq.read_table(path, columns=[OUTPUT_KIND, "name", "query", "value"]).to_pandas()
    kind = table[OUTPUT_KIND]
    read = table[(kind == COUNTER) & (table["name"] == "rows") & (table["query"] == ENGINE)]["value"]
    return Counts(int(read.sum()), int((kind == DEAD_LETTER).sum()), int((kind == MATCH).sum()))
