"""The load shedding ``sharp-cer match`` is asked for (``ShedOptions``),
the shedder it builds from them, and the figures it reports."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..language import LatencyBound, Workload


@dataclass(frozen=True)
class ShedOptions:
    """The load shedding asked for on the command line: one bound for every
    query (``LatencyBound``: ms, cost units, or a fraction of the unshedded
    mean latency), the shedder, its seed and sketch attributes, how the
    events arrive (``rate`` events per second, or their primary time at a
    replay ``speed``), the engine's ``capacity`` in cost units per second
    (None: wall time), and where the JSON statistics go."""

    bound: LatencyBound | None = None
    shedder: str = "sharp"
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
        if self.stats is not None and Path(self.stats).is_dir():
            folder = self.stats.rstrip("/")
            return f"--stats takes a file to write, and {folder} is a folder\n  hint: --stats {folder}/stats.json"
        if self.bounded and (count or engine == "reference"):
            return "load shedding needs the core engine enumerating matches\n  hint: drop --count / --engine reference"
        if self.bound is not None and self.bound.cost_units is None and self.pace is None:
            return (
                f"a latency bound of {self.bound} is judged from each event's arrival, and a file has none\n"
                "  hint: give the input rate (--rate EVENTS_PER_S) or replay its times (--replay-speed 1)"
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


def make_shedder(
    options: ShedOptions,
    plan: Any,
    first: Any,
    reread: Callable[[], Iterator[Any]],
    err: TextIO,
    workload: Workload | None = None,
    allowed_lateness: int = 0,
) -> Any:
    """The shedder the options ask for, with every query bounded; a
    workload gives its weights and sketch attributes. A fraction bound runs
    the engine unshedded first over the batches ``reread`` reads again,
    under the same arrivals. A bound below the update floor is said on
    ``err`` before the run, measured on ``first`` (the first batch)."""
    from ..shedding import ShedConfig
    from ..shedding import make_shedder as shedder_named
    from ..shedding.bounds import floor_warnings, resolve_bounds, unshedded_latency

    given = {q.name: q for q in workload.queries} if workload is not None else {}
    names = [q.name for q in plan.queries if q.name not in given or given[q.name].shed]
    bound = options.bound
    pace, capacity = options.pace, options.capacity
    assert bound is not None
    reference_ms = None
    if bound.fraction is not None:
        origin = pace.origin(first)
        batches, again = itertools.tee(reread())  # read in step: tee holds one batch
        arrivals = (pace.arrivals(b, origin) for b in again)
        reference_ms = unshedded_latency(plan, batches, arrivals, capacity, allowed_lateness=allowed_lateness)
    units, ms = resolve_bounds(dict.fromkeys(names, bound), reference_ms=reference_ms)
    attributes = {
        name: tuple(
            dict.fromkeys([*(given[name].sketch_attributes if name in given else ()), *options.sketch_attributes])
        )
        for name in names
    }
    weights = {name: given[name].weight for name in names if name in given}
    config = ShedConfig(bounds=units, bounds_ms=ms, weights=weights, sketch_attributes=attributes, seed=options.seed)
    sample = first.take(list(range(min(len(first), 2000))))
    at = pace.arrivals(sample) if pace is not None else None
    for line in floor_warnings(plan, config, sample, capacity, at, allowed_lateness=allowed_lateness):
        print(f"warning: {line}", file=err)
    return shedder_named(options.shedder, config)


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
        "queries": detector.summary(),
    }
