"""The Spark session sharp-cer runs on.

Workers run Python: ``PYSPARK_PYTHON`` (and the driver's) is set to the
running interpreter unless the user set it, so executors import the same
sharp-cer. The default master is ``local[*]``; a cluster URL works
unchanged when executors can import sharp-cer (README: running on a cluster).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"


def spark_session(
    master: str | None = None, app: str = "sharp-cer", *, log: str | None = None, **conf: str
) -> SparkSession:
    """A Spark session on ``master`` (default ``local[*]``), reusing a running one.

    Shuffle partitions default to four per core (not Spark's 200, which
    costs more than it brings on one machine); Spark's console progress bar
    and INFO logs are off (sharp-cer prints its own). With ``log``, a JVM
    started here writes its output, and its Python workers', to that file
    instead of the terminal (the streaming workers print a few lines per
    micro-batch).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app).master(master or DEFAULT_MASTER)
    settings = {
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # coalescing would put every key of a small job in one task: no parallelism
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
        "spark.python.worker.reuse": "true",
        **conf,
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _output_to(log):
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if "spark.sql.shuffle.partitions" not in conf:
        cores = session.sparkContext.defaultParallelism
        session.conf.set("spark.sql.shuffle.partitions", str(max(4, 4 * cores)))
    return session


@contextmanager
def _output_to(log: str | None) -> Iterator[None]:
    """Point this process's stdout and stderr (the file descriptors, which a
    JVM launched meanwhile inherits) at ``log``, then back."""
    if log is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    saved = os.dup(1), os.dup(2)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (target, *saved):
            os.close(fd)
