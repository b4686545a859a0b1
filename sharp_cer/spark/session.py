"""The Spark session sharp-cer runs on.

Workers run Python: ``PYSPARK_PYTHON`` (and the driver's) is set to the
running interpreter unless the user set it, so executors import the same
sharp-cer. The default master is ``local[*]``; a cluster URL works
unchanged when executors can import sharp-cer (README: running on a cluster).

Spark's fixed cost of a job is mostly its JVM warming up (C2 compiling
Spark's own code, G1's threads, the web UI), paid on every run, so a driver
JVM started here starts lean (``LEAN_START``): on ``local`` masters, where
the executors run in that JVM, it is most of a short job's CPU. A setting
the caller gives (``spark_session(**conf)``, ``--conf`` on the command
line) replaces ours; ``SPARK_LAUNCHER_OPTS`` set in the environment, too.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"

#: the driver JVM's options: its JIT stops at C1 (the client compiler) and
#: it collects garbage on one thread. Most of a short job's CPU is the JVM
#: compiling Spark's own code with C2 and running G1's threads, once per
#: run: on ``local`` masters, where the executors run in the driver's JVM,
#: these halve the JVM's CPU of a 20k-event ``run`` (about 29 to 16 CPU s)
#: and the per-event work stays in the Python workers, so long jobs lose
#: nothing measurable (README: Spark's start-up; the figures in
#: ``benchmarks/bench_spark.py --whole-job``). Executors on a cluster keep
#: their own (``spark.executor.extraJavaOptions``, untouched).
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: what ``spark_session`` sets unless the caller's ``conf`` does: the JVM
#: options above, and no web UI (a Jetty server and the listeners that feed
#: it, per job and task; ``spark.ui.enabled=true`` brings it back)
LEAN_START = {"spark.driver.extraJavaOptions": DRIVER_JAVA_OPTIONS, "spark.ui.enabled": "false"}
#: the same for the short-lived JVM that ``spark-submit`` runs first to
#: build the driver's command line (``SPARK_LAUNCHER_OPTS``, unless set)
LAUNCHER_JAVA_OPTIONS = DRIVER_JAVA_OPTIONS


def spark_session(
    master: str | None = None, app: str = "sharp-cer", *, log: str | None = None, **conf: str
) -> SparkSession:
    """A Spark session on ``master`` (default ``local[*]``), reusing a running one.

    Shuffle partitions default to four per core (not Spark's 200, which
    costs more than it brings on one machine); Spark's console progress bar
    and INFO logs are off (sharp-cer prints its own). A driver JVM started
    here gets ``LEAN_START``: C1-only JIT, serial GC, no web UI (Spark's
    fixed cost of a job halved on local masters); any of those keys in
    ``conf`` replaces ours (``spark.driver.extraJavaOptions`` whole, so
    ``-XX:+UseG1GC`` alone gives the JVM's defaults back). With ``log``, a JVM
    started here writes its output, and its Python workers', to that file
    instead of the terminal (the streaming workers print a few lines per
    micro-batch). A JVM started here without the caller's JVM options
    also gets the class archive (``class_archive``: Spark's classes mapped
    from one file instead of looked up in its jars, written by the first
    JVM as it exits).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from .class_archive import archive_option, note_jvm

    builder = SparkSession.builder.appName(app).master(master or DEFAULT_MASTER)
    settings = session_settings(conf)
    options = settings["spark.driver.extraJavaOptions"]
    if "spark.driver.extraJavaOptions" not in conf and SparkContext._gateway is None:
        # the JVM this starts maps Spark's classes from the archive, or writes it as it exits (``class_archive``)
        options = settings["spark.driver.extraJavaOptions"] = f"{options} {archive_option(options)}".strip()
    os.environ.setdefault("SPARK_LAUNCHER_OPTS", LAUNCHER_JAVA_OPTIONS)
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _jvm_ignores_signals(log):
        session = builder.getOrCreate()
    note_jvm(options, session)
    session.sparkContext.setLogLevel("ERROR")
    if "spark.sql.shuffle.partitions" not in conf:
        cores = session.sparkContext.defaultParallelism
        session.conf.set("spark.sql.shuffle.partitions", str(max(4, 4 * cores)))
    return session


def session_settings(conf: dict[str, str]) -> dict[str, str]:
    """The settings ``spark_session`` gives the builder: ours, then the
    caller's ``conf``, which wins key by key.

    >>> lean = session_settings({})
    >>> lean["spark.driver.extraJavaOptions"], lean["spark.ui.enabled"]
    ('-XX:TieredStopAtLevel=1 -XX:+UseSerialGC', 'false')
    >>> mine = session_settings({"spark.driver.extraJavaOptions": "-XX:+UseG1GC", "spark.ui.enabled": "true"})
    >>> mine["spark.driver.extraJavaOptions"], mine["spark.ui.enabled"], mine["spark.python.worker.reuse"]
    ('-XX:+UseG1GC', 'true', 'true')
    """
    return {
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # coalescing would put every key of a small job in one task: no parallelism
        "spark.sql.adaptive.coalescePartitions.enabled": "false",
        "spark.python.worker.reuse": "true",
        **LEAN_START,
        **conf,
    }


@contextmanager
def _jvm_ignores_signals(log: str | None = None) -> Iterator[None]:
    """A JVM launched meanwhile starts with SIGINT and SIGTERM ignored (as
    PySpark already does for SIGINT), so a signal to the whole process
    group (Ctrl-C, ``timeout``, systemd, a container stop) leaves Spark
    running until the driver stops it: the JVM's shutdown hook would stop
    the context under the driver's feet. The JVM installs no handler for a
    signal ignored when it starts; it still ends when the driver does (its
    stdin closes) and on SIGKILL. Spark's Python workers put themselves in a
    process group of their own. With ``log``, the JVM's stdout and stderr
    (and so its Python workers') go to that file: this process's own stay
    the terminal's throughout, so a line printed while the JVM starts (a
    stop) reaches the user."""
    from pyspark import java_gateway

    module: Any = java_gateway  # its Popen, imported from subprocess, is what launch_gateway calls
    launch = module.Popen

    def popen(*args: Any, **kwargs: Any) -> Any:
        inner = kwargs.get("preexec_fn")

        def preexec() -> None:
            if inner is not None:
                inner()
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)

        kwargs["preexec_fn"] = preexec
        if log is None:
            return launch(*args, **kwargs)
        with open(log, "ab") as target:  # the child has its own descriptors once started
            kwargs.setdefault("stdout", target)
            kwargs.setdefault("stderr", target)
            return launch(*args, **kwargs)

    module.Popen = popen
    try:
        yield
    finally:
        module.Popen = launch
