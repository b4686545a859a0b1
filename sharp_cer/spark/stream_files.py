"""The files of a stream's source folder the stream will never read, and why.

Spark's file source reads each file of the folder once, by its name: a file
replaced under the same name after it was read (a newer one renamed over
it) is never read again, and a folder inside the source folder is never
looked into. Both are reported, never read: a stream's input is append-only,
one new file per new data (README's write-then-rename recipe, under a new
name each time). The source's log in the checkpoint
(``query/sources/N``: one JSON line per file read, with the modification
time it had, in ms) says which files were read.

Hidden files (``.name``, ``_name``: a file being written, before its
rename) are left out, as Spark leaves them.

>>> import os, tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> (d / "src" / "sub").mkdir(parents=True)
>>> (d / "src" / "a.csv").write_text("A,1,1\\n")
6
>>> log = d / "ck" / "query" / "sources" / "0"
>>> log.mkdir(parents=True)
>>> line = json.dumps({"path": (d / "src" / "a.csv").as_uri(), "timestamp": 1000, "batchId": 0})
>>> _ = (log / "0").write_text("v1\\n" + line)
>>> [(pathlib.Path(f).name, r.split(":")[0]) for f, r in skipped_files(str(d / "src"), str(d / "ck"))]
[('a.csv', 'replaced after it was read'), ('sub', 'a folder')]
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import unquote, urlparse


def read_files(checkpoint: str) -> dict[str, int]:
    """The files the stream's sources have read (resolved path -> modification time in ms when read)."""
    seen: dict[str, int] = {}
    sources = Path(checkpoint, "query", "sources")
    if not sources.is_dir():
        return seen
    for log in sorted(sources.glob("*/*")):
        if log.name.startswith(".") or log.name.endswith((".crc", ".tmp")) or not log.is_file():
            continue
        for line in log.read_text(errors="replace").splitlines()[1:]:  # the first line is the log's version
            try:
                entry = json.loads(line)
                path = str(Path(unquote(urlparse(entry["path"]).path)).resolve())
                seen[path] = max(seen.get(path, 0), int(entry["timestamp"]))
            except (ValueError, KeyError, TypeError):
                continue  # a line being written: the next look reads it whole
    return seen


def skipped_files(source: str, checkpoint: str, own: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """The entries of ``source`` the stream will not read, with the reason
    (see the module docstring), in name order; ``own``: the stream's own
    folders (its checkpoint and output may sit inside the source folder)."""
    seen = read_files(checkpoint)
    mine = {str(Path(p).resolve()) for p in (checkpoint, *own)}
    skipped = []
    for entry in sorted(os.scandir(source), key=lambda e: e.name):
        if entry.name.startswith((".", "_")) or str(Path(entry.path).resolve()) in mine:
            continue
        if entry.is_dir():
            skipped.append((entry.path, "a folder: the stream reads the files of --source itself, not its sub-folders"))
            continue
        read_at = seen.get(str(Path(entry.path).resolve()))
        modified = int(entry.stat().st_mtime * 1000)
        if read_at is not None and modified > read_at:
            skipped.append(
                (
                    entry.path,
                    "replaced after it was read: a stream reads a file name once; write new data under a new name",
                )
            )
    return skipped
