"""The ``sharp-cer`` argument parser: one sub-command per command module,
in the order ``--help`` lists them."""

from __future__ import annotations

import argparse
from types import ModuleType
from typing import Any

from sharp_cer import __version__

from . import check, demo, explain, match, run, stream

#: the command modules by name: each has ``add_parser(sub)``, ``options(args)`` and ``execute(options, out, err)``
COMMANDS: dict[str, ModuleType] = {
    "check": check,
    "match": match,
    "explain": explain,
    "run": run,
    "stream": stream,
    "demo": demo,
}


class _Version(argparse.Action):
    """``--version``: the release, then one line saying which engine runs (the compiled core, or
    pure Python and why)."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        from sharp_cer.engine.native import engine_line  # numpy loads after main() set its threads

        print(f"sharp-cer {__version__}\n{engine_line()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command's flags."""
    parser = argparse.ArgumentParser(prog="sharp-cer", description="Complex event recognition for many tenants.")
    # the second line says which engine runs: the compiled core, or pure Python and why
    parser.add_argument("--version", action=_Version, nargs=0, help="show the version and which engine runs, and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS.values():
        command.add_parser(sub)
    return parser
