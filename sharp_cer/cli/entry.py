"""``main``, the ``sharp-cer`` console script: parse the command line,
build the command's options, run it, and end as a Unix tool does."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence

from .arguments import UsageError
from .exits import stopped_cleanly
from .generated_code import cache_path, generated_code
from .parser import COMMANDS, build_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sharp-cer`` console script: ``argv`` None reads
    the process's own arguments, and the process ends after the call."""
    if argv is None:
        # numpy starts OpenBLAS's thread pool as it is imported (here, later,
        # by the command), and sharp-cer does no linear algebra: one thread
        # saves ~40-80 ms of CPU per process, ~6 ms of a 3,000-row match's
        # wall time on a quiet machine, ~45 ms on a busy one. A value the
        # user set stays.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
        # the command's modules are imported below: their dataclasses' methods
        # from the user's compiled-code cache (``generated_code``)
        with generated_code(cache_path()):
            code = stopped_cleanly(lambda: _command(argv))
    else:
        code = stopped_cleanly(lambda: _command(argv))
    if argv is None:
        # The process ends next, and Python's teardown runs full cycle
        # collections over every object still alive (after a match, ~60k:
        # numpy's, pyarrow's, the modules'), ~20 ms of a 0.2 s run. Frozen
        # objects are left to the teardown itself: streams are flushed and
        # closed, atexit handlers and thread joins run, as before; the
        # outputs were closed by their ``with`` blocks already.
        gc.freeze()
    return code


def _command(argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run its command on the process's stdout and stderr."""
    given = sys.argv[1:] if argv is None else list(argv)
    # Importing the command's modules (numpy, pyarrow, the engine) makes ~10^5 objects that live as long
    # as the process: the cycle collector would walk them all, again and again, for nothing (~10 ms of a
    # match's start); it is paused until the command runs, and left as it was (the engine and the loaders
    # pause it themselves where they build much).
    collecting = gc.isenabled()
    gc.disable()
    try:
        # the command named first gets its flags; none named (``--help``, a typo): every command's
        parser = build_parser(given[0] if given and given[0] in COMMANDS else None)
        args = parser.parse_args(argv)
        command = COMMANDS[args.command]
        try:
            options = command.options(args)
        except UsageError as exc:
            parser.error(str(exc))  # exits 2 with the usage, as argparse does
    finally:
        if collecting:
            gc.enable()
    code: int = command.execute(options, sys.stdout, sys.stderr)
    return code
