"""The ``sharp-cer`` command line, one module per command.

``sharp-cer check FILE...`` validates query files (``.ceql``), schema files
(``.core``) and workloads (``.toml``): exit 0 when all are valid (warnings on
stderr), exit 2 with located errors otherwise (``check``).

``sharp-cer match`` writes the matches of a workload (or of queries) over an
events file, chunk by chunk, optionally shedding load to a latency bound
(``match``, ``shed``).

``sharp-cer explain`` compiles a workload (or queries) and prints what the
plan shares: query groups, PSD clusters, states, transitions and predicates
with and without sharing (``--json``, ``--dot``, ``--png``; ``explain``).

``sharp-cer run WORKLOAD --events PATH`` runs a workload on Spark (batch):
matches to files, a summary per query and tenant, a plot over time (``run``);
``sharp-cer stream`` runs one over files arriving in a folder (``stream``).

``sharp-cer demo`` is the main job: it checks the example workloads of
``configs/``, prints what they contain, generates their data and runs them
on local Spark (``demo``).

Shared: argument types and flags (``arguments``), input files (``inputs``),
exit codes and how a command ends (``exits``), the parser (``parser``) and
``main`` (``entry``). A command's function lives in its module
(``sharp_cer.cli.match.match``): the package's names ``match``, ``run``,
``stream`` and ``demo`` are the modules, imported on first use. Importing this package imports
no engine, Spark or pandas, and no command module: a process imports the command it runs, and
each command imports what it runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .arguments import SHEDDER_NAMES, latency_bound
from .entry import main
from .exits import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_PIPE_CLOSED

if TYPE_CHECKING:
    from .check import check_files
    from .explain import explain_plan
    from .match import MatchOptions
    from .run import RunOptions
    from .shed import ShedOptions
    from .stream import StreamOptions

#: names of the command modules, imported when first asked for: a process
#: imports only the command it runs (``parser``)
_LAZY = {
    "check_files": "check",
    "explain_plan": "explain",
    "MatchOptions": "match",
    "RunOptions": "run",
    "ShedOptions": "shed",
    "StreamOptions": "stream",
}


#: the command modules, which ``import sharp_cer.cli`` made attributes of the package before
_MODULES = frozenset({"check", "demo", "explain", "match", "run", "shed", "stream"})


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    if name in _MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the old name of ``SHEDDER_NAMES`` (tests compare it with ``shedding.SHEDDERS``)
_SHEDDER_NAMES = SHEDDER_NAMES

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_PIPE_CLOSED",
    "SHEDDER_NAMES",
    "MatchOptions",
    "RunOptions",
    "ShedOptions",
    "StreamOptions",
    "check_files",
    "explain_plan",
    "latency_bound",
    "main",
]
