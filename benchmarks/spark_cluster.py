"""A Spark standalone cluster on this machine (issue 38.6): a master and
workers started with the scripts pyspark ships (``bin/spark-class
org.apache.spark.deploy.master.Master`` / ``...deploy.worker.Worker``),
all on loopback, every port chosen by the system (the master's URL read
from its log), their logs and work folders under one folder, and all of
them stopped on the way out, whatever happened (each daemon in a process
group of its own, so the executors a worker started go with it). The
daemons live in process groups of their own, so a signal to the caller's
group does not reach them: if the caller ends without leaving the
``with`` (``sys.exit`` elsewhere, an uncaught error in a thread's end),
an ``atexit`` hook stops them, and if it is killed (SIGTERM, SIGKILL:
a test run stopped by ``timeout`` or CI), Linux sends each daemon
SIGTERM as its parent dies (``PR_SET_PDEATHSIG``), and a worker stops
its executors as it goes.

    with standalone(tmp, workers=2, cores=1) as cluster:
        ... sharp-cer run WORKLOAD --events FILE --master {cluster.url} ...

Used by ``tests/test_spark_cluster.py`` and ``bench_spark.py --whole-job``.
Executors get the worker's memory (``memory``); their Python workers run
the driver's interpreter (``PYSPARK_PYTHON``, which sharp-cer sets to the
running one): on one machine, the same venv, so they import sharp-cer.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"
#: settings of the daemons: no REST submission server (its port is fixed: 6066), no cleanup thread
DAEMON_CONF = {"spark.master.rest.enabled": "false", "spark.worker.cleanup.enabled": "false"}


class ClusterError(RuntimeError):
    """The cluster did not come up: what was awaited, and the tail of the log that should have said it."""


@dataclass
class Cluster:
    """A running standalone cluster: its master's URL, its folder (logs,
    ``work-N`` of each worker) and its daemons."""

    url: str
    root: Path
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def executor_logs(self) -> list[Path]:
        """The stderr of every executor the workers started (``work-N/APP/ID/stderr``)."""
        return sorted(self.root.glob("work-*/app-*/*/stderr"))

    def workers_used(self) -> int:
        """How many workers started an executor."""
        return len({p.parents[2] for p in self.executor_logs()})


def spark_class() -> Path:
    """pyspark's ``bin/spark-class``."""
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _await(path: Path, pattern: str, limit: float, process: subprocess.Popen[bytes]) -> re.Match[str]:
    """The first match of ``pattern`` in the log at ``path``, waited for."""
    deadline = time.monotonic() + limit
    while True:
        text = path.read_text(errors="replace") if path.exists() else ""
        found = re.search(pattern, text)
        if found:
            return found
        if process.poll() is not None:
            raise ClusterError(
                f"{path.name}: the daemon ended ({process.returncode}) before {pattern!r}:\n{_tail(path)}"
            )
        if time.monotonic() > deadline:
            raise ClusterError(f"{path.name}: no {pattern!r} within {limit:.0f} s:\n{_tail(path)}")
        time.sleep(0.1)


#: prctl's option: the signal a process gets when the thread that started it ends (Linux)
_PR_SET_PDEATHSIG = 1


def _detached_but_tied() -> None:
    """In the child before it runs: a session (and process group) of its
    own, so it is stopped whole, executors included, and a signal to the
    caller's group does not reach it; and SIGTERM when its parent dies, so
    a killed caller leaves no daemon behind (Linux; elsewhere only the
    ``atexit`` hook and the ``with`` stop it). The parent is the thread
    that started it: ``standalone`` runs in the thread that uses the cluster."""
    os.setsid()
    if sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _spawn(argv: list[str], log_path: Path, env: dict[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    """A daemon running ``argv``, its output in ``log_path`` (see ``_detached_but_tied``)."""
    with open(log_path, "wb") as log:  # the child keeps its own descriptor
        return subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=cwd,
            preexec_fn=_detached_but_tied,  # the daemon is a shell script: nothing of ours runs in it
        )


def _start(root: Path, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return _spawn([str(spark_class()), *args], root / f"{name}.log", env, root)


def _stop(processes: list[subprocess.Popen[bytes]], grace: float = 10.0) -> None:
    """SIGTERM to each daemon's process group (workers first: they stop
    their executors), then SIGKILL to whatever is left after ``grace``."""
    for process in processes:
        if process.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for process in processes:
        with suppress(subprocess.TimeoutExpired):
            process.wait(max(0.1, deadline - time.monotonic()))
    for process in processes:  # the group too: an executor may outlive its worker's JVM
        with suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextmanager
def standalone(
    root: Path, workers: int = 2, cores: int = 1, memory: str = "1g", limit: float = 180
) -> Iterator[Cluster]:
    """A master and ``workers`` workers of ``cores`` cores and ``memory``
    each, up (every worker registered) within ``limit`` seconds, under
    ``root``; stopped on the way out."""
    root = Path(root).resolve()
    conf = root / "conf"  # its own, empty but for DAEMON_CONF: no spark-env.sh of the machine's
    conf.mkdir(parents=True, exist_ok=True)
    defaults = conf / "spark-defaults.conf"
    defaults.write_text("".join(f"{k} {v}\n" for k, v in DAEMON_CONF.items()))
    env = {
        **os.environ,
        "SPARK_CONF_DIR": str(conf),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(root / "scratch"),
        "SPARK_LOG_DIR": str(root),
        "SPARK_DAEMON_MEMORY": "256m",
    }
    env.pop("SPARK_HOME", None)  # spark-class finds pyspark's own
    common = ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0", "--properties-file", str(defaults)]
    processes: list[subprocess.Popen[bytes]] = []
    hook = functools.partial(_stop, processes)
    atexit.register(hook)  # the caller ends without leaving the ``with``
    try:
        master = _start(root, "master", [MASTER, *common], env)
        processes.append(master)
        url = _await(root / "master.log", r"Starting Spark master at (spark://[0-9.]+:\d+)", limit, master).group(1)
        started = time.monotonic()
        for k in range(workers):
            work = root / f"work-{k}"
            work.mkdir(exist_ok=True)
            args = [WORKER, *common, "--cores", str(cores), "--memory", memory, "--work-dir", str(work), url]
            processes.insert(0, _start(root, f"worker-{k}", args, env))  # stopped before the master
        for k, process in enumerate(reversed(processes[:-1])):
            left = limit - (time.monotonic() - started)
            _await(root / f"worker-{k}.log", r"Successfully registered with master", left, process)
        yield Cluster(url, root, processes)
    finally:
        _stop(processes)
        atexit.unregister(hook)
