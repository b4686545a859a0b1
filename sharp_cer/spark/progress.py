"""A progress bar for long Spark jobs: the share of the running stages'
tasks done, and the events per second that share stands for.

Spark reports progress per task, so the events done are estimated as the
events of the job times the share of tasks done. The bar appears after
``after`` seconds (short jobs print nothing); on a terminal it redraws one
line, elsewhere it prints a line every ``every`` seconds.

>>> bar_text(0.5, 10_000, 2.0, width=10)
'[#####.....]  50%  5,000 events in 2s, 2,500 events/s'
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any, TextIO


def bar_text(done: float, events: int, seconds: float, width: int = 30) -> str:
    """One line of the bar (see the module example)."""
    filled = round(done * width)
    through = int(done * events)
    rate = through / seconds if seconds > 0 else 0.0
    bar = "#" * filled + "." * (width - filled)
    return f"[{bar}] {done:4.0%}  {through:,} events in {seconds:.0f}s, {rate:,.0f} events/s"


class Progress:
    """A context manager that draws the bar while Spark runs (see the module docstring)."""

    def __init__(
        self, spark: Any, events: int, out: TextIO, *, after: float = 2.0, every: float = 10.0, poll: float = 0.5
    ) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.events = events
        self.out = out
        self.after, self.every, self.poll = after, every, poll
        self.began = time.perf_counter()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._draw, daemon=True)
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self.shown = False
        self._stages: dict[int, tuple[int, int]] = {}
        self._shown = 0.0

    def __enter__(self) -> Progress:
        self.thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop.set()
        self.thread.join()
        if self.shown and self.tty:
            self.out.write("\n")
            self.out.flush()

    def _share(self) -> float:
        """Tasks done over tasks seen, counting every stage seen so far, and
        never below what was shown before (a new stage adds tasks to the
        total: the share would fall, though no work was undone)."""
        for stage in self.tracker.getActiveStageIds():
            info = self.tracker.getStageInfo(stage)
            if info is not None:
                self._stages[stage] = (info.numTasks, info.numCompletedTasks)
        total = sum(n for n, _ in self._stages.values())
        done = sum(d for _, d in self._stages.values())
        self._shown = max(self._shown, done / total if total else 0.0)
        return self._shown

    def _draw(self) -> None:
        last = 0.0
        while not self.stop.wait(self.poll):
            seconds = time.perf_counter() - self.began
            if seconds < self.after:
                continue
            line = bar_text(self._share(), self.events, seconds)
            if self.tty:
                self.out.write("\r" + line)
                self.out.flush()
                self.shown = True
            elif seconds - last >= self.every:
                self.out.write(line + "\n")
                self.out.flush()
                last, self.shown = seconds, True
