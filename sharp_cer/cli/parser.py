"""The ``sharp-cer`` argument parser: one sub-command per command module,
in the order ``--help`` lists them."""

from __future__ import annotations

import argparse
from types import ModuleType

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


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command's flags."""
    parser = argparse.ArgumentParser(prog="sharp-cer", description="Complex event recognition for many tenants.")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS.values():
        command.add_parser(sub)
    return parser
