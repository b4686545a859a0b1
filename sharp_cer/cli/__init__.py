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
``stream`` and ``demo`` are the modules. Importing this package imports no engine, Spark or
pandas: each command imports what it runs.
"""

from __future__ import annotations

from .arguments import SHEDDER_NAMES, latency_bound
from .check import check_files
from .entry import main
from .exits import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_PIPE_CLOSED
from .explain import explain_plan
from .match import MatchOptions
from .run import RunOptions
from .shed import ShedOptions
from .stream import StreamOptions

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
