"""What runs on Spark's workers: one engine per lane and key group, fed
the group's events in stream order, writing match rows and telemetry rows
(``telemetry``) as Arrow rows of one fixed schema (``columns.OUTPUT``).
Nothing here imports PySpark, so it runs (and is tested) in-process as well.

A *lane* is the set of queries that share one way of partitioning the
stream (``sharp_cer.spark.lanes``); a *key group* is the set of partition
keys that hash to one bucket. The engine partitions its events by key
itself, exactly as in-process, so a group of keys costs one engine rather
than one per key (engines are cheap to run, not to build), and every key
still sees all of its events, in order. Each lane's plan is compiled once
per worker process and reused for every key group the worker runs.

>>> from sharp_cer.language import parse_workload
>>> w = parse_workload('''
... [workload]
... name = "w"
... schema = "CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }"
... [[query]]
... name = "ab"
... tenant = "t"
... text = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 5 EVENTS"
... ''')
>>> job = Job(w, lanes=(("ab",),), bin_width=100)
>>> run = KeyGroupRun(job, lane=0)
>>> rows = pa.table({LANE: [0, 0], KEY_GROUP: [5, 5], SEQ: [3, 7], "type": ["A", "B"], "k": [1, 1]})
>>> run.feed(rows).select(["kind", "query", "tenant", "start", "end", "events"]).to_pylist()
[{'kind': 'match', 'query': 'ab', 'tenant': 't', 'start': 3, 'end': 7, 'events': [3, 7]}]
>>> counters = [r for r in run.finish().to_pylist() if r["kind"] == COUNTER and r["query"] == "ab"]
>>> {r["name"]: r["value"] for r in counters}["matches"]
1.0
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from sharp_cer._moved import old_names
from sharp_cer.api import Detector, matches_to_arrow
from sharp_cer.builder import DetectorBuilder, DetectorConfig
from sharp_cer.events.batch import EventBatch
from sharp_cer.events.checked import checked_arrow
from sharp_cer.events.match import Match
from sharp_cer.language import Workload
from sharp_cer.latency_summary import query_summaries
from sharp_cer.planner import Plan, compile_plan

from .columns import BIN, COUNTER, KEY_GROUP, LANE, LATENCY, LATENCY_MS, MATCH, OUTPUT, SEQ, rows_of
from .match_lines import of_lines
from .telemetry import ms_bin_rows, telemetry_table

#: a key group's held events are replayed in slices of this many: in wall mode
#: a slice's events share its timing, and the speed measured over the slices
#: served so far turns bounds in ms into cost units (the first slice has none yet)
REPLAY_SLICE = 500
#: the events arrive validated and in order: the loader must not judge lateness again
_NO_LATENESS = 2**63 - 1


@dataclass(frozen=True)
class Job:
    """What every worker needs: the workload, the queries of each lane,
    the width of the time bins (in positions), the shedder (None: no
    shedding) with its seed, and how many key groups a partitioned lane
    has (``key_groups``). Picklable; shipped inside the task."""

    workload: Workload
    lanes: tuple[tuple[str, ...], ...]
    bin_width: int
    shedder: str | None = None
    seed: int = 0
    key_groups: int = 1
    #: the input's largest primary time: at a key group's end, event time
    #: moves there, so trailing absences fire as in-process (None: not needed)
    final_time: int | None = None
    #: the workload's version in the stream's history (``stream.check_checkpoint``): matches carry it
    version: int = 0
    #: whether each event's latency is recorded (cost units and ms, the over-bound counts): a shedder needs it
    latency: bool = True

    @functools.cached_property
    def fingerprint(self) -> str:
        """The workload's fingerprint (the key of the plan cache)."""
        return self.workload.fingerprint()

    def lane_workload(self, lane: int) -> Workload:
        """The workload restricted to one lane's queries."""
        names = set(self.lanes[lane])
        return dataclasses.replace(self.workload, queries=tuple(q for q in self.workload.queries if q.name in names))


_PLANS: dict[tuple[str, tuple[str, ...]], Plan] = {}


def lane_plan(job: Job, lane: int) -> Plan:
    """The lane's plan, compiled on the first key group a worker process runs and
    reused for every later one (plans are immutable; engines are not). Keyed
    by the lane's queries, not its number: two jobs over one workload may
    number their lanes differently."""
    key = (job.fingerprint, job.lanes[lane])
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = compile_plan([(q.name, q.checked) for q in job.lane_workload(lane).queries])
    return plan


def floor_warnings_before(job: Job, sample: EventBatch) -> list[str]:
    """Each bound of the job's workload below the update floor, measured on
    the driver before the run over ``sample`` (the first events), lane by
    lane, the events arriving at once as a key group's do; a fraction bound
    is taken of the sample's unshedded mean latency (``shedding.bounds``)."""
    from sharp_cer.shedding.bounds import floor_warnings, unshedded_latency

    out: list[str] = []
    if job.shedder is None or not len(sample):
        return out
    at = np.zeros(len(sample))
    for lane in range(len(job.lanes)):
        workload = job.lane_workload(lane)
        config = DetectorConfig(shedder=job.shedder, seed=job.seed)
        builder = DetectorBuilder.for_workload(workload, config, plan=lane_plan(job, lane))
        lateness, capacity = workload.allowed_lateness, workload.capacity
        reference = None
        if builder.needs_reference:
            reference = unshedded_latency(builder.plan, [sample], [at], capacity, allowed_lateness=lateness)
        shed = builder.shed_config(reference)
        out += floor_warnings(builder.plan, shed, sample, capacity, allowed_lateness=lateness)
    return out


class KeyGroupRun:
    """The engine of one lane and key group: ``feed`` it the key group's events
    in stream order (Arrow batches with ``__seq`` and the schema's
    attributes), then ``finish``. An event arrives when its batch reaches
    the engine (wall clock), and is served at the workload's ``capacity``
    (else in wall time).

    With a shedder and bounds given as fractions, the events are kept until
    ``finish``: they all arrive then, at once, and run twice under those
    arrivals and the same service, first unshedded, to measure each query's
    mean latency, then shedding to that fraction of it (the in-process
    definition: ``sharp_cer.shedding.bounds.unshedded_latency``)."""

    def __init__(self, job: Job, lane: int) -> None:
        self.job = job
        self.lane = lane
        self.plan = lane_plan(job, lane)
        self.workload = job.lane_workload(lane)
        config = DetectorConfig(shedder=job.shedder or None, seed=job.seed)
        self.builder = DetectorBuilder.for_workload(self.workload, config, plan=self.plan)
        self.match_bins: Counter[tuple[str, int]] = Counter()
        self.fed = 0  # the events fed: what each query saw, when no latency log counts them
        self.held: list[EventBatch] | None = [] if self.builder.needs_reference else None
        self.shedder: Any = None
        self.detector: Detector | None = None
        if self.held is None:
            self.detector = self._detector(None)
        # without a shedder nothing needs the Match objects: the matches come as the lines the core writes
        # (``Detector.feed_ranked_lines``), read into columns by Arrow (``match_lines``)
        self.ranks = None if job.shedder else dict.fromkeys((q.name for q in self.workload.queries), 0)

    def _detector(self, reference_ms: dict[str, float] | None) -> Detector:
        # a shedder's log counts events over its bounds; without one, the workload's are still judged
        builder = self.builder
        record = self.job.latency or self.job.shedder is not None
        detector = Detector.from_builder(builder, reference_ms=reference_ms, history=False, record_latency=record)
        if detector.engine.queue is not None:  # ms per time bin, for the plot against bounds in ms
            detector.engine.queue.bin_by(self.job.bin_width)
        self.shedder = detector.shedder
        return detector

    def feed(self, rows: pa.RecordBatch | pa.Table) -> pa.Table:
        """Process the key group's next events; return their matches."""
        batch = self._batch(rows)
        self.fed += len(batch)
        if self.held is not None:
            self.held.append(batch)
            return _empty()
        assert self.detector is not None
        if self.ranks is not None:
            return self._found(of_lines([line for _, _, line in self.detector.feed_ranked_lines(batch, self.ranks)]))
        return self._matches(self.detector.feed(batch))

    def finish(self) -> pa.Table:
        """The matches still held back (shedding with fraction bounds) and
        the key group's telemetry: latency histograms, time bins and counters."""
        out = []
        if self.held is not None:
            from sharp_cer.shedding.bounds import unshedded_latency

            held = [b.take(np.arange(lo, min(lo + REPLAY_SLICE, len(b)))) for b in self.held
                    for lo in range(0, len(b), REPLAY_SLICE)]  # fmt: skip
            self.held = None
            at = [np.zeros(len(b)) for b in held]  # all at once: when the group's engine gets them
            lateness, capacity = self.workload.allowed_lateness, self.workload.capacity
            self.detector = self._detector(unshedded_latency(self.plan, held, at, capacity, allowed_lateness=lateness))
            for batch, arrivals in zip(held, at, strict=True):
                out.append(self._matches(self.detector.feed(batch, arrivals=arrivals)))
        assert self.detector is not None
        if self.job.final_time is not None:
            # the whole input's event time: alerts other key groups' events would have fired in-process
            out.append(self._matches(self.detector.advance(self.job.final_time)))
        out.append(self._statistics(self.detector))
        return pa.concat_tables(out)

    # ------------------------------------------------------------ helpers
    def _batch(self, rows: pa.RecordBatch | pa.Table) -> EventBatch:
        # every row was validated once, where it was read (``prepare``): taken column by column, not judged again
        table = pa.Table.from_batches([rows]) if isinstance(rows, pa.RecordBatch) else rows
        seq = np.asarray(table.column(SEQ).to_numpy(), dtype=np.int64)
        return checked_arrow(table, self.workload.schema, seq)

    def _matches(self, matches: list[Match]) -> pa.Table:
        return self._found(matches_to_arrow(matches))

    def _found(self, found: pa.Table) -> pa.Table:
        """Match rows of the matches ``found`` (``api.MATCH_SCHEMA``), counted in their time bins."""
        ends = np.asarray(found.column("end").to_numpy(), dtype=np.int64) // self.job.bin_width
        self.match_bins.update(zip(found.column("query").to_pylist(), ends.tolist(), strict=True))
        columns = {name: found.column(name) for name in found.column_names}
        return rows_of([MATCH] * found.num_rows, **columns)

    def _statistics(self, detector: Detector) -> pa.Table:
        engine, width = detector.engine, self.job.bin_width
        log, queue = engine.observers.latency, engine.observers.queue
        report = self.shedder.report() if self.shedder is not None else {}
        counts = detector.counts
        summaries = query_summaries(engine, self.shedder)
        out: list[tuple[str, str, int | None, str | None, float]] = []  # kind, query, bin, name, value
        for runner in engine.runners:  # the query groups running now (``Detector.update`` adds and drops some)
            g = runner.number
            if log is not None:
                bins, inverse = np.unique(log.positions(g) // width, return_inverse=True)
            for query in runner.queries:
                if query.id in runner.dropped:
                    continue
                name = query.name
                if log is not None:
                    units = log.units(g, name)
                    values, times = np.unique(units, return_counts=True)
                    out += [(LATENCY, name, int(v), None, float(c)) for v, c in zip(values, times, strict=True)]
                    for what, per_bin in (
                        ("events", np.bincount(inverse)),
                        ("units_sum", np.bincount(inverse, weights=units)),
                        ("units_max", _max_by(inverse, units, len(bins))),
                    ):
                        out += [(BIN, name, int(b), what, float(v)) for b, v in zip(bins, per_bin, strict=True)]
                shed = report.get(name, {})
                counters = {
                    "matches": counts[name],
                    "events": len(units) if log is not None else self.fed,
                    **{k: v for k, v in shed.items() if isinstance(v, (int, float)) and not isinstance(v, bool)},
                }
                if shed:  # the summary says why a bound was missed (``summary.Summary``)
                    counters["input_shedding_forbidden"] = int(shed.get("input_shedding", "allowed") != "allowed")
                counters.update({f"cut_{k}": v for k, v in summaries[name]["cuts"].items()})
                histogram = queue.histogram(name) if queue is not None else None
                if histogram is not None:
                    # engine-side latency: from an event's arrival at the worker to its matches
                    index, times = histogram.bins()
                    out += [(LATENCY_MS, name, int(i), None, float(c)) for i, c in zip(index, times, strict=True)]
                    counters.update(ms_sum=histogram.total, ms_min=histogram.min, ms_max=histogram.max)
                    out += ms_bin_rows(name, queue.bins(name) if queue is not None else [])
                if queue is not None and "over_bound" in (judged := queue.summary(name)):
                    counters["over_bound"] = int(judged["over_bound"])  # type: ignore[call-overload]
                out += [(COUNTER, name, None, k, float(v)) for k, v in counters.items()]
        out += [(BIN, query, b, "matches", float(n)) for (query, b), n in sorted(self.match_bins.items())]
        stats = engine.stats()
        out += [(COUNTER, "", None, "events_shed", float(stats["events_shed"])), (COUNTER, "", None, "engines", 1.0)]
        return telemetry_table(out)


def _max_by(groups: np.ndarray[Any, Any], values: np.ndarray[Any, Any], n: int) -> np.ndarray[Any, Any]:
    out = np.zeros(n, dtype=np.float64)
    np.maximum.at(out, groups, values)
    return out


def _empty() -> pa.Table:
    return OUTPUT.empty_table()


def run_sorted(job: Job, tables: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The fallback's worker (``mapInArrow``): batches sorted by lane, key
    group and seq, holding several key groups; one ``KeyGroupRun`` at a time.

    >>> from sharp_cer.language import parse_workload
    >>> w = parse_workload('''
    ... [workload]
    ... name = "w"
    ... schema = "CREATE STREAM S { EVENT A { k:int } }"
    ... [[query]]
    ... name = "aa"
    ... text = "SELECT * WHERE A ; A PARTITION BY [k] WITHIN 9 EVENTS"
    ... ''')
    >>> rows = pa.record_batch({LANE: [0] * 4, KEY_GROUP: [0] * 4, SEQ: [0, 1, 2, 3],
    ...                         "type": ["A"] * 4, "k": [1, 2, 1, 2]})
    >>> out = pa.Table.from_batches(run_sorted(Job(w, (("aa",),), 10), [rows]))
    >>> out.filter(pa.compute.equal(out["kind"], "match")).select(["start", "end"]).to_pylist()
    [{'start': 0, 'end': 2}, {'start': 1, 'end': 3}]
    """
    run: KeyGroupRun | None = None
    current: tuple[int, str] | None = None
    for batch in tables:
        lanes, key_groups = batch.column(LANE).to_pylist(), batch.column(KEY_GROUP).to_pylist()
        begin = 0
        for i in range(1, len(key_groups) + 1):
            if i < len(key_groups) and (lanes[i], key_groups[i]) == (lanes[begin], key_groups[begin]):
                continue
            if (lanes[begin], key_groups[begin]) != current:
                if run is not None:
                    yield from run.finish().to_batches()
                current = (lanes[begin], key_groups[begin])
                run = KeyGroupRun(job, lanes[begin])
            assert run is not None
            yield from run.feed(batch.slice(begin, i - begin)).to_batches()
            begin = i
    if run is not None:
        yield from run.finish().to_batches()


if not TYPE_CHECKING:  # old names warn; type checkers see only the new ones
    __getattr__ = old_names(__name__, {"GroupRun": "KeyGroupRun"}, globals())
