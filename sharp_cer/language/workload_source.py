"""A workload that may change while a stream runs: one TOML file, or a
folder of TOML files (one per tenant, say), read again when its contents
change (``Detector.watch``, ``detect_stream(..., workload_source=PATH)``).

A folder's files are read in name order; each is a whole workload file
(``[workload]`` with the schema, then its ``[[query]]`` tables) and they are
merged into one: every file must declare the same schema, allowed lateness
and capacity, and query names must be unique across the files. An error in
any file is raised located in that file (file, line, column, caret), as
``load_workload`` raises it.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> head = '[workload]\\nname = "w"\\nschema = "CREATE STREAM S { EVENT A { x:int } }"\\n'
>>> acme = '[[query]]\\nname = "a"\\ntenant = "acme"\\ntext = "SELECT * WHERE A"\\n'
>>> _ = (folder / "acme.toml").write_text(head + acme)
>>> source = WorkloadSource(folder)
>>> [q.name for q in source.poll().queries], source.poll()  # the second poll: nothing changed
(['a'], None)
>>> _ = (folder / "globex.toml").write_text(head + '[[query]]\\nname = "g"\\ntext = "SELECT * WHERE A ; A"\\n')
>>> [(q.name, q.tenant) for q in source.poll().queries]
[('a', 'acme'), ('g', 'default')]
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import replace
from pathlib import Path

from sharp_cer.errors import LanguageError

from .diagnostics import WorkloadError
from .source import Source, Span
from .workload import Workload, load_workload


class WorkloadSource:
    """A workload file or folder (see the module docstring); ``poll``
    returns the workload when its contents changed since the last poll."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._seen: str | None = None  # the digest of the contents last polled
        # each file's workload as last read, with the digests it was read from
        self._parts: dict[Path, tuple[dict[Path, str], Workload]] = {}

    def files(self) -> list[Path]:
        """The TOML files that make the workload, in name order."""
        if self.path.is_dir():
            return sorted(p for p in self.path.iterdir() if p.suffix == ".toml" and p.is_file())
        return [self.path]

    def digest(self) -> str:
        """A digest of the files' names and contents (a file that cannot be read counts as missing)."""
        h = hashlib.sha256()
        for path in self.files():
            h.update(path.name.encode() + b"\0")
            try:
                h.update(path.read_bytes())
            except OSError:
                h.update(b"\1missing")
        return h.hexdigest()

    def poll(self) -> Workload | None:
        """The workload, read again, when the contents changed since the
        last poll (the first poll always reads); None when they did not.
        Raises the located error of a bad file; that contents then count as
        seen, so the error is raised once, and a fixed file is read. A file
        that changed while it was read (an editor that empties it, then
        writes it) is not refused: it is read again at the next poll."""
        digest = self.digest()
        if digest == self._seen:
            return None
        try:
            workload = self.load()
        except LanguageError:
            if self.digest() != digest:
                return None
            self._seen = digest
            raise
        self._seen = digest
        return workload

    def load(self) -> Workload:
        """The workload the file or folder holds now."""
        files = self.files()
        if not files:
            raise WorkloadError(
                f"no workload in {self.path}: expected a TOML file, or a folder of them",
                Source("", str(self.path)),
                Span(1, 1, 1, 1),
                hint="put one .toml file per tenant in the folder",
            )
        parts = [self._part(path) for path in files]
        self._parts = {path: self._parts[path] for path in files if path in self._parts}
        first = parts[0]
        if len(parts) == 1:
            return first
        owner: dict[str, Path] = {}
        for path, part in zip(files, parts, strict=True):
            for field in ("schema", "allowed_lateness", "capacity"):
                if _setting(part, field) != _setting(first, field):
                    raise _located(
                        path,
                        field if field != "allowed_lateness" else "allowed_lateness",
                        f"{path.name} declares another {field.replace('_', ' ')} than {files[0].name}",
                        "every file of a workload folder declares the same schema, lateness and capacity",
                    )
            for q in part.queries:
                if q.name in owner:
                    raise _located(
                        path,
                        "name",
                        f'query "{q.name}" is also in {owner[q.name].name}',
                        "give each query a name of its own across the folder's files",
                        value=q.name,
                    )
                owner[q.name] = path
        queries = tuple(q for part in parts for q in part.queries)
        return replace(first, queries=queries, path=self.path)

    def _part(self, path: Path) -> Workload:
        """The workload of one file: read again only when it, or a file it
        names (``schema_file``, a query's ``file``), changed since it was
        last read, so an update re-checks only the tenants that changed."""
        known = self._parts.get(path)
        if known is not None and all(_file_digest(p) == d for p, d in known[0].items()):
            return known[1]
        self._parts.pop(path, None)
        # the digests are taken before the files are read: a file that changes
        # in between is read again next time
        read_from = {path: _file_digest(path)}
        try:
            named = _named_files(path)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return load_workload(path)  # which says what is wrong; nothing is kept
        read_from.update((p, _file_digest(p)) for p in named)
        workload = load_workload(path)
        self._parts[path] = (read_from, workload)
        return workload


def _file_digest(path: Path) -> str:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return "missing"


def _named_files(path: Path) -> list[Path]:
    """The files a workload file names, relative to it (its schema file,
    its queries' files)."""
    data = tomllib.loads(path.read_text(encoding="utf-8-sig"))
    queries = data.get("query")
    tables = [data.get("workload"), *(queries if isinstance(queries, list) else [])]
    return [
        path.parent / table[key]
        for table in tables
        if isinstance(table, dict)
        for key in ("schema_file", "file")
        if isinstance(table.get(key), str)
    ]


def _setting(workload: Workload, field: str) -> object:
    if field == "schema":
        from .printer import stream_declarations

        return stream_declarations(workload.schema.declarations)
    return getattr(workload, field)


def _located(path: Path, key: str, message: str, hint: str, *, value: str | None = None) -> WorkloadError:
    """An error at the line of ``key`` (with ``value``, the line that sets it to that) in ``path``."""
    text = path.read_text()
    pattern = rf"^\s*{re.escape(key)}\s*=" + (rf'\s*"{re.escape(value)}"' if value is not None else "")
    line, column = 1, 1
    for number, row in enumerate(text.splitlines(), start=1):
        if re.match(pattern, row):
            line, column = number, len(row) - len(row.lstrip()) + 1
            break
    end = column + len(key)
    return WorkloadError(message, Source(text, str(path)), Span(line, column, line, end), hint=hint)
