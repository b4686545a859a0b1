"""Per-query latency bounds: milliseconds, cost units, or a fraction of
the latency measured without shedding.

A fraction is taken of a query's *mean* latency, queueing included, in an
unshedded run under the same arrivals and the same service (Sharp's
definition; ``unshedded_latency``): it needs the events replayed, a file
read twice in-process, or a Spark key group's events held and run twice,
and a fraction below 1 always asks for cuts, so it is the experiments'
setting. A live stream has no unshedded run, so it is not shed to one.

>>> resolve_bounds({"q": LatencyBound(fraction=0.5), "r": LatencyBound(milliseconds=250)}, {"q": 12.0})
({}, {'q': 6.0, 'r': 250})
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from sharp_cer.engine import Engine
from sharp_cer.errors import SheddingError
from sharp_cer.events.batch import EventBatch
from sharp_cer.language.workload import LatencyBound, Workload
from sharp_cer.planner.plan import Plan

from .base import ShedConfig


def unshedded_latency(
    plan: Plan, batches: Iterable[EventBatch], arrivals: Iterable[Any], capacity: float | None = None, **options: Any
) -> dict[str, float]:
    """Each query's mean latency in milliseconds, queueing included, in an
    unshedded run over ``batches`` arriving at ``arrivals`` (one array of
    seconds per batch), at ``capacity`` units per second (None: wall time).

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.planner import compile_plan
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
    >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 9 EVENTS", s))])
    >>> batch = load_csv("A,1\\nB,1\\n", s)[0]
    >>> # both arrive at once; A takes 3 units (3 ms), B waits 3 ms, then 3 units of update and 3 of enumeration
    >>> unshedded_latency(plan, [batch], [np.zeros(2)], capacity=1000)  # (3 + 9) / 2
    {'q': 6.0}
    """
    engine = Engine(plan, record_latency=True, capacity=capacity, **options)
    for batch, at in zip(batches, arrivals, strict=True):
        engine.process(batch, at)
    assert engine.queue is not None
    out = {}
    for query in plan.queries:
        latency = engine.queue.summary(query.name)
        out[query.name] = latency["ms"]["mean"] if latency["events"] else 0.0  # type: ignore[index]
    return out


def resolve_bounds(
    bounds: Mapping[str, LatencyBound], reference_ms: Mapping[str, float] | None = None
) -> tuple[dict[str, float], dict[str, float]]:
    """Bounds in cost units and in milliseconds; fractions are taken of
    ``reference_ms`` (``unshedded_latency``) into milliseconds."""
    units: dict[str, float] = {}
    ms: dict[str, float] = {}
    for name, bound in bounds.items():
        if bound.cost_units is not None:
            units[name] = bound.cost_units
        elif bound.milliseconds is not None:
            ms[name] = bound.milliseconds
        elif bound.fraction is not None:
            if reference_ms is not None and name in reference_ms:
                ms[name] = max(1e-3, bound.fraction * reference_ms[name])
            else:
                raise SheddingError(
                    f"query {name}: a bound of {bound.fraction:.0%} needs the latency measured without shedding\n"
                    "  hint: replay the input from a file (--rate or --replay-speed), or give the bound in ms"
                )
    return units, ms


def judged_bounds(
    workload: Workload, reference_ms: Mapping[str, float] | None = None
) -> tuple[dict[str, float], dict[str, float]]:
    """The bounds a run without a shedder is judged against (its latency
    summary counts the events over them): every query's, in milliseconds
    and in cost units; a fraction only given ``reference_ms`` (without an
    unshedded run there is nothing to take it of).

    >>> from sharp_cer.language import parse_workload
    >>> w = parse_workload('''
    ... [workload]
    ... name = "w"
    ... schema = "CREATE STREAM S { EVENT A { x:int } }"
    ... [[query]]
    ... name = "fast"
    ... latency_bound = "250ms"
    ... text = "SELECT * WHERE A WITHIN 1 EVENTS"
    ... [[query]]
    ... name = "share"
    ... shed = false
    ... latency_bound = "50%"
    ... text = "SELECT * WHERE A WITHIN 1 EVENTS"
    ... ''')
    >>> judged_bounds(w), judged_bounds(w, {"share": 8.0})
    (({'fast': 250.0}, {}), ({'fast': 250.0, 'share': 4.0}, {}))
    """
    given = {
        q.name: q.latency_bound
        for q in workload.queries
        if q.latency_bound is not None and (q.latency_bound.fraction is None or reference_ms is not None)
    }
    units, ms = resolve_bounds(given, reference_ms)
    return ms, units


def workload_config(workload: Workload, seed: int = 0, reference_ms: Mapping[str, float] | None = None) -> ShedConfig:
    """A workload's shedding configuration: the bounds of its queries that
    may be shed (``shed``), their weights and sketch attributes (fractions:
    see ``resolve_bounds``).

    >>> from sharp_cer.language import parse_workload
    >>> w = parse_workload('''
    ... [workload]
    ... name = "w"
    ... schema = "CREATE STREAM S { EVENT A { x:int } }"
    ... [[query]]
    ... name = "q"
    ... weight = 3
    ... latency_bound = "50%"
    ... sketch_attributes = ["x"]
    ... text = "SELECT * WHERE A WITHIN 1 EVENTS"
    ... ''')
    >>> c = workload_config(w, reference_ms={"q": 120.0})
    >>> c.bounds_ms, c.weights, c.sketch_attributes
    ({'q': 60.0}, {'q': 3.0}, {'q': ('x',)})
    """
    given = {q.name: q.latency_bound for q in workload.queries if q.shed and q.latency_bound is not None}
    units, ms = resolve_bounds(given, reference_ms)
    return ShedConfig(
        bounds=units,
        bounds_ms=ms,
        weights={q.name: q.weight for q in workload.queries},
        sketch_attributes={q.name: q.sketch_attributes for q in workload.queries},
        seed=seed,
    )


def floor_warnings(
    plan: Plan,
    config: ShedConfig,
    sample: EventBatch,
    capacity: float | None = None,
    arrivals: Any = None,
    **options: Any,
) -> list[str]:
    """The bounds below the update floor, measured before the run over
    ``sample`` (the first events, arriving at ``arrivals``), with the
    figures, one line each: where an event's update alone passes a bound,
    and where, at the sample's input rate, the updates alone need more
    than the capacity (the queue then grows whatever is cut, and only
    input shedding can meet a bound).

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.planner import compile_plan
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
    >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B WITHIN 9 EVENTS", s))])
    >>> sample = load_csv("A,1\\nB,1\\n" * 50, s)[0]
    >>> tight = ShedConfig(bounds={}, bounds_ms={"q": 2})
    >>> print(*floor_warnings(plan, tight, sample, capacity=1000))  # doctest: +NORMALIZE_WHITESPACE
    query q: its bound (2 ms = 2 units at 1,000 units/s) is below the update floor (p99 5 units = 5 ms):
    only input shedding can meet it
    >>> loose = ShedConfig(bounds={}, bounds_ms={"q": 6})
    >>> floor_warnings(plan, loose, sample, capacity=1000, arrivals=np.arange(100) / 100)  # 100 events a second
    []
    >>> print(*floor_warnings(plan, loose, sample, capacity=1000, arrivals=np.arange(100) / 1000))
    ... # doctest: +NORMALIZE_WHITESPACE
    the updates alone need 4,460 units/s at this input rate (1,000 events/s), over the capacity of 1,000 units/s:
    the queue grows whatever is cut, and only input shedding can meet a bound
    """
    engine = Engine(plan, record_latency=True, capacity=capacity, **options)
    began = time.perf_counter()
    engine.process(sample, arrivals)
    assert engine.latency is not None
    rate = capacity or engine.clock.total_units / max(time.perf_counter() - began, 1e-9)
    out = []
    for g, group in enumerate(plan.groups):
        floors = engine.latency.floor_units(g)
        if not len(floors):
            continue
        floor = float(np.percentile(floors, 99))
        for qid in group.queries:
            name = plan.queries[qid].name
            ms = config.bounds_ms.get(name)
            units = ms / 1000 * rate if ms is not None else config.bound(name)
            if units is None or units >= floor:
                continue
            given = f"{ms:g} ms = {units:,.0f} units at {rate:,.0f} units/s" if ms is not None else f"{units:g} units"
            out.append(
                f"query {name}: its bound ({given}) is below the update floor "
                f"(p99 {floor:,.0f} units = {floor / rate * 1000:,.3g} ms): only input shedding can meet it"
            )
    if arrivals is not None and len(sample) > 1 and arrivals[-1] > arrivals[0]:
        span = float(arrivals[-1] - arrivals[0]) * len(sample) / (len(sample) - 1)
        needed, events = engine.clock.update_units / span, len(sample) / span
        if needed > rate:
            out.append(
                f"the updates alone need {needed:,.0f} units/s at this input rate ({events:,.0f} events/s), "
                f"over the capacity of {rate:,.0f} units/s: the queue grows whatever is cut, "
                "and only input shedding can meet a bound"
            )
    return out
