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
from pathlib import Path
from urllib.parse import unquote, urlparse

import pandas as pd
import pyarrow.parquet as pq

from sharp_cer.errors import SurfaceError

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
