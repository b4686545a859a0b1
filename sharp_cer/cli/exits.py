"""Exit codes, and how a command ends when its reader or its user stops it.

>>> EXIT_OK, EXIT_INVALID, EXIT_INTERRUPTED, EXIT_PIPE_CLOSED
(0, 2, 130, 141)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from ..errors import SharpCerError

EXIT_OK = 0
EXIT_INVALID = 2
#: the exit code of a command whose reader closed the pipe (``| head``): 128 + SIGPIPE, as a Unix tool's
EXIT_PIPE_CLOSED = 141
#: the exit code of a command stopped by Ctrl-C: 128 + SIGINT, as a Unix tool's
EXIT_INTERRUPTED = 130


def stopped_cleanly(command: Callable[[], int]) -> int:
    """Run ``command`` and flush stdout; a reader that closed the pipe
    (``| head``) or a Ctrl-C ends it with its Unix exit code, without a
    traceback."""
    try:
        code = command()
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader stopped reading: what it did not read goes nowhere, without a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_PIPE_CLOSED
    except SharpCerError as exc:  # raised before a command's own handling: an extra not installed
        print(exc, file=sys.stderr)
        code = EXIT_INVALID
    except KeyboardInterrupt:
        # Ctrl-C, without a traceback: output files were closed by their
        # ``with`` blocks on the way out
        print("sharp-cer: stopped by Ctrl-C; the matches written so far stand", file=sys.stderr)
        code = EXIT_INTERRUPTED
    return code


def lost_worker(exc: OSError, log: Path, err: TextIO) -> int:
    """PySpark's connection to a Python worker broke: one line that says where Spark's own account is."""
    print(f"error: Spark lost a worker's connection ({exc})\n  hint: see {log}", file=err)
    return EXIT_INVALID
