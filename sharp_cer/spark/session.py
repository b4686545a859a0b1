"""The Spark session sharp-cer runs on.

Workers run Python: ``PYSPARK_PYTHON`` (and the driver's) is set to the
running interpreter unless the user set it, so executors import the same
sharp-cer. The default master is ``local[*]``; a cluster URL works
unchanged when executors can import sharp-cer (README: running on a cluster).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"


def spark_session(master: str | None = None, app: str = "sharp-cer", **conf: str) -> SparkSession:
    """A Spark session on ``master`` (default ``local[*]``), reusing a running one.

    Shuffle partitions default to four per core (not Spark's 200, which
    costs more than it brings on one machine); Spark's console progress bar
    and INFO logs are off (sharp-cer prints its own).
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
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if "spark.sql.shuffle.partitions" not in conf:
        cores = session.sparkContext.defaultParallelism
        session.conf.set("spark.sql.shuffle.partitions", str(max(4, 4 * cores)))
    return session
