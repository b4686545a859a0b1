"""The ``sharp-cer`` argument parser: one sub-command per command module,
in the order ``--help`` lists them.

A process runs one command, so only that command's module is imported
(``run``, ``stream`` and ``demo`` alone cost ~10 % of a small match's
start-up). The others are registered by name and one-line help, which is
all the top-level ``--help`` and usage lines show of them.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any

from sharp_cer import __version__

#: each command's one-line help, as the top-level ``--help`` lists it (the modules' ``add_parser`` use it too)
SUMMARIES: dict[str, str] = {
    "check": "validate query, schema and workload files",
    "match": "write the matches of a workload or of queries over an events file (JSON lines)",
    "explain": "show what a plan shares: query groups, prefix graph, PSD, figures",
    "run": "run a workload over events on Spark (batch)",
    "stream": "run a workload over files arriving in a folder (Spark streaming)",
    "demo": "check the example workloads and generate their data",
}


class _Commands(Mapping[str, ModuleType]):
    """The command modules by name, each imported when first looked up."""

    def __getitem__(self, name: str) -> ModuleType:
        if name not in SUMMARIES:
            raise KeyError(name)
        return importlib.import_module(f"{__package__}.{name}")

    def __iter__(self) -> Iterator[str]:
        return iter(SUMMARIES)

    def __len__(self) -> int:
        return len(SUMMARIES)


#: the command modules by name: each has ``add_parser(sub)``, ``options(args)`` and ``execute(options, out, err)``
COMMANDS: Mapping[str, ModuleType] = _Commands()


class _Version(argparse.Action):
    """``--version``: the release, then one line saying which engine runs (the compiled core, or
    pure Python and why)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from sharp_cer.engine.native import engine_line  # numpy loads after main() set its threads

        print(f"sharp-cer {__version__}\n{engine_line()}")
        parser.exit()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command's flags; given ``command``, of that
    command's flags only (the others are known by name and help, enough
    for every usage line and for the top-level ``--help``)."""
    parser = argparse.ArgumentParser(prog="sharp-cer", description="Complex event recognition for many tenants.")
    # the second line says which engine runs: the compiled core, or pure Python and why
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and which engine runs, and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, summary in SUMMARIES.items():
        if command is None or name == command:
            COMMANDS[name].add_parser(sub)
        else:
            sub.add_parser(name, help=summary)
    return parser
