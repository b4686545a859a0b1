"""Watching a stream that runs micro-batches on a trigger, from the command
line: one line per micro-batch (events in, matches out, its duration), and a
stop at a micro-batch boundary when the user asks (Ctrl-C: SIGINT, or
SIGTERM), so the checkpoint holds a committed batch and a restart resumes it.

The figures come from the query's progress reports: its duration, and the
counts the stream observes on its rows (``observe``, named ``EVENTS_IN`` and
``MATCHES_OUT``, each a count ``n``).

>>> batch_line({"batchId": 3, "durationMs": {"addBatch": 700, "triggerExecution": 812},
...             "observedMetrics": {EVENTS_IN: {"n": 120}, MATCHES_OUT: {"n": 4}}})
'micro-batch 3: 120 events in, 4 matches out, 812 ms'
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any, TextIO

#: how often a watched workload is asked whether it changed (seconds)
CHANGE_TICK = 0.05
#: the names of the stream's observed counts: events read, matches written
EVENTS_IN, MATCHES_OUT = "sharp_cer_events_in", "sharp_cer_matches_out"


def batch_line(progress: Any) -> str:
    """One line for a micro-batch's progress report (see the module example)."""
    observed = progress["observedMetrics"] or {}

    def count(name: str) -> int:
        metric = observed.get(name)
        return int(metric["n"] or 0) if metric is not None else 0

    duration = (progress["durationMs"] or {}).get("triggerExecution", 0)
    return (
        f"micro-batch {progress['batchId']}: {count(EVENTS_IN):,} events in, "
        f"{count(MATCHES_OUT):,} matches out, {duration:,} ms"
    )


def committed_line(progress: Any, rows: int, dead_letters: int, matches: int) -> str:
    """One line for a micro-batch: its duration from its progress report,
    and what it committed (``stream_output.CommittedCounts``): the lines of
    a run add up to its summary.

    >>> committed_line({"batchId": 3, "durationMs": {"triggerExecution": 812}}, 1000, 2, 4)
    'micro-batch 3: 1,000 rows read (2 dead-lettered), 4 matches committed, 812 ms'
    """
    duration = (progress["durationMs"] or {}).get("triggerExecution", 0)
    return (
        f"micro-batch {progress['batchId']}: {rows:,} rows read ({dead_letters:,} dead-lettered), "
        f"{matches:,} matches committed, {duration:,} ms"
    )


class StopRequest(threading.Event):
    """Set when the user asks the stream to stop; ``signal`` names how."""

    signal: str | None = None


@contextmanager
def stop_requests() -> Iterator[StopRequest]:
    """While inside: SIGINT and SIGTERM set the event instead of raising
    ``KeyboardInterrupt`` in the middle of a call into the JVM (whose broken
    connection then prints pages of Java and py4j traces). Outside the main
    thread, where handlers cannot be set, the event is only set by the caller.

    >>> import os
    >>> with stop_requests() as asked:
    ...     os.kill(os.getpid(), signal.SIGTERM)
    ...     _ = asked.wait(5)
    >>> asked.is_set(), asked.signal
    (True, 'SIGTERM')
    """
    asked = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield asked
        return

    def handle(number: int, frame: Any) -> None:
        asked.signal = signal.Signals(number).name
        asked.set()

    previous = {s: signal.signal(s, handle) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield asked
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def watch(
    query: Any,
    out: TextIO,
    timeout: float | None,
    *,
    poll: float = 0.5,
    asked: StopRequest | None = None,
    quiet: bool = False,
    changed: Callable[[], bool] | None = None,
    line: Callable[[Any], str] = lambda progress: batch_line(progress),
    first: Callable[[], str] | None = None,
) -> str:
    """Wait for ``query``: print a line per finished micro-batch on ``out``
    (``quiet``: none); on a stop request (or after ``timeout`` seconds) let
    the running micro-batch finish, stop the query and say so in one line.
    The requests come from SIGINT and SIGTERM, or from ``asked`` if given
    (its owner handles the signals, and it may be set already). Returns why
    it stopped: ``"SIGINT"`` or ``"SIGTERM"``, ``"timeout"``, or ``"ended"``
    (the query stopped by itself; its error, if any, is the caller's), or
    ``"workload"`` when ``changed`` (asked after each poll) says the
    workload changed: the query then stops at a micro-batch boundary too,
    for the caller to start it again with the new one. ``line`` makes a
    micro-batch's line from its progress report (default ``batch_line``);
    ``first``, if given, makes the line said once, when the first
    micro-batch with data starts."""
    reports = Reports(query)
    begun = first is None

    def report() -> None:
        nonlocal begun
        reports.poll()
        if not begun and not quiet:
            status = query.status
            if reports.last >= 0 or (status.get("isTriggerActive") and status.get("isDataAvailable")):
                assert first is not None
                print(first(), file=out, flush=True)
                begun = True
        for progress in reports.take():
            if not quiet:
                print(line(progress), file=out, flush=True)

    deadline = None if timeout is None else time.monotonic() + timeout
    # ``changed`` is asked more often than the progress is read: a change seen just before a
    # micro-batch starts goes into that one, not the next (it costs a stat of the files)
    tick = min(poll, CHANGE_TICK) if changed is not None else poll
    reported = time.monotonic()
    with stop_requests() if asked is None else nullcontext(asked) as asked:
        moved = False
        while query.isActive and not asked.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                break
            asked.wait(tick)
            if time.monotonic() - reported >= poll:
                report()
                reported = time.monotonic()
            if changed is not None and changed():
                moved = True
                break
        why = (asked.signal or "a request") if asked.is_set() else "ended" if not query.isActive else "timeout"
        why = "workload" if moved and why == "timeout" else why
        # a boundary: no trigger running, so the last batch is committed or not begun; for a new
        # workload the running micro-batch is not waited for (back-to-back micro-batches leave no
        # gap): stopped now, it is not committed, and the restart redoes it from the checkpoint
        # micro-batches longer than the trigger run back to back and may leave no idle moment: once
        # two have committed since the request without one, the third is stopped unfinished (it is
        # redone from the checkpoint on restart)
        running = reports.poll()
        while not moved and query.isActive and query.status["isTriggerActive"] and reports.poll() <= running + 1:
            time.sleep(poll / 5)
        query.stop()
        report()
    if why not in ("ended", "workload"):
        last = f"after micro-batch {reports.last}" if reports.last >= 0 else "before the first micro-batch"
        print(
            f"stopped ({why}) {last}; events not yet released stay in the checkpoint: "
            "run again with the same --checkpoint to resume",
            file=out,
            flush=True,
        )
    return why


class Reports:
    """The progress reports of the micro-batches a query ran, as they come.
    A poll reads the query's last report (``lastProgress``: one report
    through py4j), and every report the query keeps (``recentProgress``:
    each one a py4j call and a JSON parse, ~20 ms of the driver's and the
    JVM's time at 20 reports) only when the last one shows that a
    micro-batch ran which the poll before did not see.

    >>> class Query:
    ...     lastProgress = {"batchId": 1, "durationMs": {"addBatch": 5, "triggerExecution": 9}}
    ...     recentProgress = [{"batchId": 0, "durationMs": {"addBatch": 4, "triggerExecution": 8}}, lastProgress]
    >>> reports = Reports(Query())
    >>> reports.poll(), [p["batchId"] for p in reports.take()]  # two ran since the start: both read
    (1, [0, 1])
    >>> reports.poll(), reports.take()  # nothing new
    (1, [])
    """

    def __init__(self, query: Any) -> None:
        self.query = query
        #: the id of the last micro-batch seen to have run (-1: none yet)
        self.last = -1
        # the last micro-batch a report said had run, read or not (a restarted query's first reports,
        # idle, say so of one the checkpoint committed before it: that read is not repeated each poll)
        self._seen = -1
        self._new: list[Any] = []

    def poll(self) -> int:
        """Read the reports of micro-batches that ran since the last poll; the id of the last one that ran."""
        report = self.query.lastProgress
        if report is None:
            return self.last
        ran = _ran(report)
        # a trigger that found no data reports under the id the next micro-batch will have
        seen = int(report["batchId"]) if ran else int(report["batchId"]) - 1
        if seen <= self._seen:
            return self.last
        self._seen = seen
        if ran and seen == self.last + 1:
            found = [report]
        else:  # one or more micro-batches ran between two polls
            found = [p for p in self.query.recentProgress if _ran(p) and p["batchId"] > self.last]
        if found:
            self._new += found
            self.last = int(found[-1]["batchId"])
        return self.last

    def take(self) -> list[Any]:
        """The reports read since the last ``take``, oldest first."""
        new, self._new = self._new, []
        return new


def _ran(progress: Any) -> bool:
    """Whether a progress report is of a micro-batch that ran: a trigger
    that found no new data reports too (every ``noDataProgressEventInterval``),
    under the id the next micro-batch will have, and without ``addBatch``.

    >>> _ran({"batchId": 1, "durationMs": {"latestOffset": 2, "triggerExecution": 4}})
    False
    """
    return "addBatch" in (progress["durationMs"] or {})
