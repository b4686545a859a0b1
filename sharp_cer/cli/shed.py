"""The load shedding ``sharp-cer match`` is asked for (``ShedOptions``),
the shedder it builds from them, and the figures it reports."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..language import LatencyBound, Schema
from .outputs import file_problem

#: the smallest --capacity (cost units per second): one unit then takes 1e6 ms, an event of a million
#: units 1e12 ms, the top of the latency histograms' range
MIN_CAPACITY = 1e-3


@dataclass(frozen=True)
class ShedOptions:
    """The load shedding asked for on the command line: one bound for every
    query (``LatencyBound``: ms, cost units, or a fraction of the unshedded
    mean latency), the shedder, its seed and sketch attributes, how the
    events arrive (``rate`` events per second, or their primary time at a
    replay ``speed``), the engine's ``capacity`` in cost units per second
    (None: wall time), and where the JSON statistics go. Without a
    ``shedder`` the bound is judged (the run summary counts the events over
    it), never enforced."""

    bound: LatencyBound | None = None
    shedder: str | None = None
    seed: int = 0
    sketch_attributes: tuple[str, ...] = ()
    stats: str | None = None
    rate: float | None = None
    speed: float | None = None
    capacity: float | None = None

    def problem(self, count: bool, engine: str) -> str | None:
        """What is inconsistent, if anything."""
        if self.rate is not None and self.speed is not None:
            return "give --rate or --replay-speed, not both"
        for flag, value in (("--rate", self.rate), ("--replay-speed", self.speed), ("--capacity", self.capacity)):
            if value is not None and not 0 < value < math.inf:  # nan fails too
                return f"{flag} must be a positive, finite number, not {value:g}"
        if self.capacity is not None and self.capacity < MIN_CAPACITY:
            return (
                f"--capacity must be at least {MIN_CAPACITY:g} cost units per second, not {self.capacity:g}\n"
                f"  expected: a capacity in [{MIN_CAPACITY:g}, inf): below it one cost unit takes over "
                f"{1000 / MIN_CAPACITY:g} ms, and latencies leave the range they are measured in (up to 1e12 ms)"
            )
        if self.stats is not None and self.stats and Path(self.stats).is_dir():
            folder = self.stats.rstrip("/")
            return f"--stats takes a file to write, and {folder} is a folder\n  hint: --stats {folder}/stats.json"
        if self.stats is not None:
            problem = file_problem(self.stats, "--stats")
            if problem is not None:  # match prints "error: " before it
                return problem.removeprefix("error: ").replace(": error: ", ": ", 1)
        if self.bounded and (count or engine == "reference"):
            return "load shedding needs the core engine enumerating matches\n  hint: drop --count / --engine reference"
        if self.bound is not None and self.bound.cost_units is None and self.pace is None:
            return (
                f"a latency bound of {self.bound} is judged from each event's arrival, and a file has none\n"
                "  hint: give the input rate (--rate EVENTS_PER_S) or replay its times (--replay-speed 1)"
            )
        return None

    def sketch_problem(self, schema: Schema) -> str | None:
        """A ``--sketch-attribute`` that no event type of ``schema`` has (refused:
        the sketch would bucket nothing by it)."""
        every = sorted({a for e in schema.event_types() for a in e.attributes})
        for name in self.sketch_attributes:
            if name not in every:
                return (
                    f"error: --sketch-attribute {name!r} is no event type's attribute\n"
                    f"  expected: one of {', '.join(every)}\n  hint: check its spelling against the schema"
                )
        return None

    @property
    def bounded(self) -> bool:
        """Whether a bound was given."""
        return self.bound is not None

    @property
    def pace(self) -> Any:
        """How the events arrive (``engine.queueing.Pace``), or None (all at once)."""
        from ..engine.queueing import Pace

        return Pace(rate=self.rate, speed=self.speed) if self.rate or self.speed else None


def reference_latency(
    options: ShedOptions, plan: Any, first: Any, reread: Callable[[], Iterator[Any]], allowed_lateness: int = 0
) -> dict[str, float]:
    """Each query's mean latency in an unshedded run over the batches
    ``reread`` reads again, under the arrivals of the options' pace from
    ``first`` (the first batch) on: what a fraction bound is a fraction of."""
    from ..shedding.bounds import unshedded_latency

    pace = options.pace
    origin = pace.origin(first)
    batches, again = itertools.tee(reread())  # read in step: tee holds one batch
    arrivals = (pace.arrivals(b, origin) for b in again)
    return unshedded_latency(plan, batches, arrivals, options.capacity, allowed_lateness=allowed_lateness)


def warn_floors(options: ShedOptions, plan: Any, config: Any, first: Any, err: TextIO, allowed_lateness: int) -> None:
    """Say on ``err``, before the run, each bound below the update floor,
    measured on ``first`` (the first batch) under the options' pace."""
    from ..shedding.bounds import floor_warnings

    pace, capacity = options.pace, options.capacity
    sample = first.take(list(range(min(len(first), 2000))))
    at = pace.arrivals(sample) if pace is not None else None
    for line in floor_warnings(plan, config, sample, capacity, at, allowed_lateness=allowed_lateness):
        print(f"warning: {line}", file=err)


def judges(bounds: tuple[dict[str, float], dict[str, float]] | None, options: ShedOptions) -> bool:
    """Whether a run without a shedder judges the workload's ``bounds``:
    when it has some, and the events arrive at a pace or are served at a
    capacity (else the latency is the chunks' reading time)."""
    return bool(bounds and any(bounds)) and (options.pace is not None or options.capacity is not None)


def summary_table(detector: Any) -> str:
    """The run summary per query (``latency_summary.render``)."""
    from ..latency_summary import render

    return render(detector.summary())


def shed_stats(detector: Any, options: ShedOptions) -> dict[str, Any]:
    """The ``--stats`` JSON: the run's settings and, per query, matches,
    cuts by lever and latency against the bound."""
    stats = detector.stats()
    return {
        "shedder": options.shedder if detector.shedder is not None else None,
        "seed": options.seed,
        "rate": options.rate,
        "replay_speed": options.speed,
        "capacity": options.capacity,
        "events": stats["events"],
        "events_shed": stats["events_shed"],
        "wall_seconds": stats["wall_seconds"],
        "queries": detector.summary().to_json(),
    }
