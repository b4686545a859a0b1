"""Reading a command's inputs: query files against a schema, and events
files, checked before anything reads them."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import SurfaceError
from ..language import Schema, parse_and_check
from ..language.files import read_source
from ..language.source import Source

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}


def schema_and_queries(schema_file: str, query_files: Sequence[str]) -> tuple[Schema, list[tuple[str, Any]]]:
    """A .core schema and the .ceql queries checked against it, each named
    by its file's stem (two files of one stem are refused: their matches
    would merge under one name)."""
    stems: dict[str, str] = {}
    for q in query_files:
        stem = Path(q).stem
        other = stems.get(stem)
        stems[stem] = q
        if other is not None:
            twice = os.path.abspath(other) == os.path.abspath(q)
            found = f"{other} twice" if twice else f"{other} and {q}"
            hint = "give each query file once" if twice else "rename one of them"
            raise SurfaceError(
                f"{q}: error: two query files named {stem!r}\n"
                f"  expected: one query file per name (a query is named by its file's stem)\n"
                f"  found: {found}\n  hint: {hint}"
            )
    schema = Schema.parse(read_source(Path(schema_file), "schema"), schema_file)
    queries = []
    for q in query_files:
        text = read_source(Path(q), "query")
        queries.append((Path(q).stem, parse_and_check(text, schema, source=Source(text, q))))
    return schema, queries


def event_chunks(events_file: str, schema: Schema, allowed_lateness: int = 0) -> Iterator[tuple[Any, Any]]:
    """The batches and load reports of an events file, chunk by chunk."""
    from ..events.loaders import iter_csv, iter_jsonl, iter_parquet

    kind = events_format(events_file)
    if kind == "csv":
        return iter_csv(events_file, schema, allowed_lateness=allowed_lateness)
    if kind == "jsonl":
        return iter_jsonl(events_file, schema, allowed_lateness=allowed_lateness)
    return iter_parquet(events_file, schema, allowed_lateness=allowed_lateness)


def events_format(events_file: str) -> str:
    """The format of an events file (``csv``, ``jsonl`` or ``parquet``), or
    a SurfaceError if the file is missing, a folder or of no known format:
    a command asks before its workload is parsed, so a wrong path fails at
    once rather than after the queries' checks."""
    problem = events_problem(events_file, folder=False)
    if problem is not None:
        raise SurfaceError(problem)
    kind = FORMATS.get(Path(events_file).suffix)
    if kind is None:
        raise SurfaceError(f"{events_file}: error: unknown events format\n  expected: .csv, .jsonl or .parquet")
    return kind


def load_events(events_file: str, schema: Schema) -> Any:
    """The whole batch of an events file."""
    from ..events.loaders import collect

    return collect(event_chunks(events_file, schema), events_file)[0]


def events_problem(path: str, *, folder: bool) -> str | None:
    """What is wrong with an ``--events`` path before anything reads it: a
    missing file, or a folder where one file is needed."""
    p = Path(path)
    if not p.exists():
        return f"{path}: error: no such events file{' or folder' if folder else ''}\n  hint: check the --events path"
    if p.is_dir() and not folder:
        return f"{path}: error: a folder, not an events file\n  hint: give one .csv, .jsonl or .parquet file"
    return None
