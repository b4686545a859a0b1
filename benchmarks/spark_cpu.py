"""The whole CPU of a Spark job, every process of it counted (issue 38.7):
the driver, its JVM, the JVM's Python daemon and workers, read from
``/proc`` (``time`` and ``getrusage`` miss the processes nobody waited
for: the JVM outlives its driver by a moment, and its Python workers are
the JVM's children, not the driver's).

``ProcessTree(pid)`` samples, every ``every`` seconds, the user and system
CPU of ``pid`` and of every process descended from it (found through
``/proc/*/stat``'s parent field), keeping each process's last figure;
``cpu_s`` is their sum. A process's CPU in its last ``every`` seconds is
missed: Spark's are long-lived (the JVM, the reused Python workers).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[int, float] | None:
    """A process's parent and its user + system CPU seconds (None: gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after the command's name, which may hold spaces
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK


class ProcessTree:
    """The CPU seconds of a process and its descendants, sampled from ``/proc``."""

    def __init__(self, pid: int, every: float = 0.1) -> None:
        self.root, self.every = pid, every
        self.seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProcessTree:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> None:
        """Read every process of the tree once."""
        found: dict[int, tuple[int, float]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and (stat := _stat(int(entry))) is not None:
                found[int(entry)] = stat
        mine = {self.root} | {p for p in self.seen if p in found}
        grew = True
        while grew:  # descendants: a child of one already in the tree
            more = {p for p, (parent, _) in found.items() if parent in mine and p not in mine}
            mine |= more
            grew = bool(more)
        for pid in mine:
            if pid in found:
                self.seen[pid] = max(self.seen.get(pid, 0.0), found[pid][1])

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    @property
    def cpu_s(self) -> float:
        """CPU seconds of every process seen in the tree."""
        return sum(self.seen.values())
