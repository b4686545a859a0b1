"""What watches an engine serve its events, apart from what it computes:
the service log (``engine.latency``), the queue log (``engine.queueing``),
the server's clock and, while a batch is in process, the backlog a
shedder sees. Surfaces read and renew them here, never through the
engine's fields.

>>> observers = Observers(LatencyLog(), QueueLog({"q": 5.0}), Server(100.0))
>>> observers.fresh()  # each report starts new logs, against the same bounds
>>> observers.queue is not None and observers.queue.bounds_ms
{'q': 5.0}
>>> observers.resume(observers.ahead())  # the server's backlog, carried over
"""

from __future__ import annotations

import time

from .latency import LatencyLog
from .queueing import Backlog, QueueLog, Server


class Observers:
    """The logs and the server one engine reports to (see the module docstring)."""

    def __init__(self, latency: LatencyLog | None, queue: QueueLog | None, server: Server) -> None:
        self.latency = latency  # each event's service per query (None: not kept)
        self.queue = queue  # each query's latency from arrival (None: not kept)
        self.server = server
        self.backlog: Backlog | None = None  # the queue a shedder sees, while a batch is in process
        # (row, query, service units until its matches are out) of the batch in process
        self.outs: list[tuple[int, str, int]] = []

    def fresh(self) -> None:
        """Start a new service log and a new queue log (against the queue
        log's bounds): what was logged so far is the caller's to report."""
        self.latency = LatencyLog()
        self.queue = self.queue.fresh() if self.queue is not None else QueueLog()

    def ahead(self) -> float:
        """How many seconds the server's work reaches past now (negative: idle)."""
        return self.server.free - time.perf_counter()

    def resume(self, ahead: float) -> None:
        """Carry a server's backlog over (``ahead``, from ``ahead``) to this
        process's clock, whose origin another process does not share."""
        self.server.free = time.perf_counter() + ahead
