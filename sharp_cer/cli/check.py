"""``sharp-cer check FILE...``: validate query files (``.ceql``), schema
files (``.core``) and workloads (``.toml``): exit 0 when all are valid
(warnings on stderr), exit 2 with located errors otherwise."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..errors import SharpCerError
from ..language import Schema, load_workload, parse_and_check
from ..language.diagnostics import counted
from ..language.files import read_source
from ..language.source import Source
from .exits import EXIT_INVALID, EXIT_OK
from .parser import SUMMARIES


@dataclass(frozen=True)
class CheckOptions:
    """What ``sharp-cer check`` was asked for: the files, and the schema of the ``.ceql`` ones."""

    files: tuple[str, ...]
    schema: str | None = None


def add_parser(sub: Any) -> None:
    """The ``check`` command's flags."""
    check = sub.add_parser("check", help=SUMMARIES["check"])
    check.add_argument("files", nargs="+", metavar="FILE", help=".ceql, .core or .toml files")
    check.add_argument("--schema", metavar="FILE", help="the .core schema for .ceql files")


def options(args: argparse.Namespace) -> CheckOptions:
    """The options of a parsed ``check`` command line."""
    return CheckOptions(tuple(args.files), args.schema)


def execute(options: CheckOptions, out: TextIO, err: TextIO) -> int:
    """Run ``check`` (``check_files``)."""
    return check_files(options.files, options.schema, out, err)


def check_files(files: Sequence[str], schema_file: str | None, out: TextIO, err: TextIO) -> int:
    """Check each file; print ``ok`` lines to ``out`` and problems to ``err``.

    Returns the exit code: 0 when every file is valid, 2 otherwise.
    """
    paths = [Path(f) for f in files]
    failed = False
    schema: Schema | None = None
    schema_paths = [Path(schema_file)] if schema_file else [p for p in paths if p.suffix == ".core"][:1]
    if schema_paths:
        try:
            schema = Schema.parse(read_source(schema_paths[0], "schema"), str(schema_paths[0]))
        except SharpCerError as exc:
            print(exc, file=err)
            return EXIT_INVALID
    for path in paths:
        try:
            failed = not _check_one(path, schema, out, err) or failed
        except SharpCerError as exc:
            print(exc, file=err)
            failed = True
    return EXIT_INVALID if failed else EXIT_OK


def _check_one(path: Path, schema: Schema | None, out: TextIO, err: TextIO) -> bool:
    """Check one file by its suffix: whether it is valid (a located error raises)."""
    if path.suffix == ".toml":
        workload = load_workload(path)
        for warning in workload.warnings():
            print(warning, file=err)
        print(
            f"ok {path}: workload {workload.name}, {counted(len(workload.queries), 'query', 'queries')}, "
            f"{counted(len(workload.tenants), 'tenant')}",
            file=out,
        )
    elif path.suffix == ".core":
        parsed = Schema.parse(read_source(path, "schema"), str(path))
        print(f"ok {path}: {len(parsed.event_types())} event types", file=out)
    elif path.suffix == ".ceql":
        if schema is None:
            print(
                f"{path}: error: no schema to check the query against\n"
                "  hint: pass --schema FILE.core, or name a .core file among the files",
                file=err,
            )
            return False
        text = read_source(path, "query")
        checked = parse_and_check(text, schema, source=Source(text, str(path)))
        for query_warning in checked.warnings:
            print(query_warning, file=err)
        print(f"ok {path}", file=out)
    else:
        print(
            f"{path}: error: unknown kind of file '{path.suffix or path.name}'\n"
            "  expected: .ceql (one query), .core (CREATE STREAM declarations) or .toml (a workload)",
            file=err,
        )
        return False
    return True
