"""A standalone cluster's daemons (``benchmarks/spark_cluster.py``) do not
outlive the process that started them: not when it ends without leaving
``standalone``'s ``with`` (the ``atexit`` hook), not when it is killed (the
daemons get SIGTERM as their parent dies). No JVM: ``spark-class`` is
replaced by a script that says what the real daemons log, then sleeps."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG is Linux's")

FAKE = """#!/bin/sh
case "$*" in
  *deploy.master.Master*) echo "Starting Spark master at spark://127.0.0.1:7077" ;;
  *) echo "Successfully registered with master" ;;
esac
exec sleep 300
"""

CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, {benchmarks!r})
import spark_cluster
spark_cluster.spark_class = lambda: Path({fake!r})
running = spark_cluster.standalone(Path({root!r}), workers=2)
cluster = running.__enter__()  # never left (``running`` kept: collecting it would leave the ``with``)
print(" ".join(str(p.pid) for p in cluster.processes), flush=True)
sys.stdin.readline()  # then ends normally, unless killed meanwhile
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie is not running: its parent has not reaped it yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _daemons(tmp_path: Path) -> tuple[subprocess.Popen[str], list[int]]:
    fake = tmp_path / "spark-class"
    fake.write_text(FAKE)
    fake.chmod(0o755)
    code = CHILD.format(benchmarks=str(BENCHMARKS), fake=str(fake), root=str(tmp_path / "cluster"))
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    pids = [int(p) for p in child.stdout.readline().split()]
    assert len(pids) == 3 and all(_alive(p) for p in pids)  # a master and two workers, up
    return child, pids


def _gone(pids: list[int], limit: float = 30.0) -> bool:
    deadline = time.monotonic() + limit
    while any(_alive(p) for p in pids):
        if time.monotonic() > deadline:
            for pid in pids:  # leave nothing behind, even when the test fails
                if _alive(pid):
                    os.kill(pid, signal.SIGKILL)
            return False
        time.sleep(0.05)
    return True


def test_daemons_are_stopped_when_the_caller_ends_without_leaving_the_with(tmp_path: Path) -> None:
    child, pids = _daemons(tmp_path)
    child.communicate("end\n", timeout=60)
    assert child.returncode == 0
    assert _gone(pids)


@pytest.mark.parametrize("sent", [signal.SIGKILL, signal.SIGTERM])
def test_daemons_are_stopped_when_the_caller_is_killed(tmp_path: Path, sent: signal.Signals) -> None:
    child, pids = _daemons(tmp_path)
    child.send_signal(sent)
    child.wait(60)
    assert _gone(pids)
