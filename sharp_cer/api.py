"""The public API: compile a workload once, feed events, get matches.

>>> from sharp_cer.api import Detector
>>> from sharp_cer.language import Schema, parse_and_check
>>> import pandas as pd
>>> schema = Schema.parse("CREATE STREAM S { EVENT BUY { id:int }, EVENT SELL { id:int } }")
>>> detector = Detector.from_queries([("flip", "SELECT * WHERE BUY ; SELL WITHIN 3 EVENTS")], schema)
>>> frame = pd.DataFrame({"type": ["BUY", "SELL", "SELL"], "id": [1, 2, 3]})
>>> [(m.query, m.start, m.end, m.events) for m in detector.feed(frame)]
[('flip', 0, 1, (0, 1)), ('flip', 0, 2, (0, 2))]
>>> detector.events_of(detector.matches[0])
{'BUY': [{'type': 'BUY', 'position': 0, 'id': 1}], 'SELL': [{'type': 'SELL', 'position': 1, 'id': 2}]}
>>> matches_to_arrow(detector.matches).column_names
['query', 'tenant', 'start', 'end', 'events', 'vars']
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from sharp_cer.builder import DetectorBuilder, DetectorConfig
from sharp_cer.engine import Engine
from sharp_cer.engine.queueing import Pace
from sharp_cer.engine.shedder_protocol import Shedder
from sharp_cer.errors import SurfaceError
from sharp_cer.events.batch import EventBatch, LoadReport
from sharp_cer.events.loaders import load_arrow, load_pandas
from sharp_cer.events.match import Match
from sharp_cer.language import CheckedQuery, Schema, Workload, parse_and_check
from sharp_cer.planner import Plan, compile_plan

if TYPE_CHECKING:
    import pandas as pd

    from sharp_cer.shedding import ShedConfig


#: In wall mode, replayed events are served in slices of this many seconds of arrivals.
SLICE_SECONDS = 0.005


class Detector:
    """A compiled workload and its engine: ``feed`` events, read ``matches``.

    Events are numbered across feeds: the first row of a later feed follows
    the last row of the one before, dead-lettered rows included, so windows
    of ``n EVENTS`` run across feeds. Rows that do not fit the schema are
    dead-lettered (see ``reports``, the latest feed's), or raise with ``strict=True``.
    A detector keeps only the latest feed: its matches in ``matches`` and
    its events for ``events_of``, so a long-running one stays bounded; with
    ``history=True`` it keeps every match, batch and report since it began.
    ``tenants`` names each query's tenant, carried by its matches
    (``from_workload`` sets it). With ``count_only=True`` it only counts matches (``counts``), without
    enumerating them where the query allows (see ``Engine``). A ``shedder``
    (see the ``shedding`` package) keeps queries within their latency bounds;
    ``record_latency`` summarizes each query's latency per event
    (``engine.queue``: from arrival, queueing included, in fixed memory per
    query; ``summary()``; ``record_service=False`` leaves out the per-event
    service log ``engine.latency``, which grows with the stream). An event arrives when it
    is fed (live), or, with a ``pace``, at a time derived from an input rate
    or from its primary time at a replay speed (``engine.queueing.Pace``).
    ``capacity`` (cost units per second) makes service deterministic; without
    it service is wall time, and events fed together share their batch's
    timing (replayed with a pace, a batch is served in slices of
    ``SLICE_SECONDS`` of arrivals). ``bounds`` (per query, in milliseconds
    and in cost units) are judged by the latency summary when no shedder
    runs (a shedder's own bounds are judged when one does); without a
    shedder a bound is only judged, never enforced. With a shedder, the
    first feed first measures the update floor on its first events
    (``check_floor``): each bound below it is said before the run, as a
    ``RuntimeWarning`` and in ``floor_warnings`` (only input shedding can
    meet such a bound).

    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    >>> d = Detector.from_queries([("q", "SELECT * WHERE A : A WITHIN 1 EVENTS")], s)
    >>> import pandas as pd
    >>> first, second = pd.DataFrame({"type": ["A", "A"], "x": [1, 2]}), pd.DataFrame({"type": ["A"], "x": [3]})
    >>> len(d.feed(first)), len(d.feed(second))
    (1, 1)
    >>> [m.events for m in d.matches]  # the latest feed's; positions continue across feeds
    [(1, 2)]
    """

    def __init__(
        self,
        plan: Plan,
        schema: Schema,
        *,
        allowed_lateness: int = 0,
        strict: bool = False,
        debug: bool = False,
        cache_capacity: int = 65536,
        history: bool = False,
        count_only: bool = False,
        shedder: Shedder | None = None,
        record_latency: bool = False,
        record_service: bool | None = None,
        capacity: float | None = None,
        pace: Pace | None = None,
        tenants: Mapping[str, str] | None = None,
        bounds: tuple[Mapping[str, float], Mapping[str, float]] | None = None,
        check_floor: bool = True,
    ) -> None:
        self.plan = plan
        #: the bounds below the update floor, said at the first feed (``check_floor``)
        self.floor_warnings: list[str] = []
        self._check_floor = check_floor and shedder is not None and hasattr(shedder, "config")
        self.schema = schema
        self.strict = strict
        self.allowed_lateness = allowed_lateness
        self.shedder = shedder
        self.pace = pace
        self._origin: float | None = None  # the first event's primary time (replay speed)
        self.engine = Engine(
            plan,
            debug=debug,
            cache_capacity=cache_capacity,
            allowed_lateness=allowed_lateness,
            count_only=count_only,
            shedder=shedder,
            record_latency=record_latency,
            record_service=record_service,
            capacity=capacity,
            bounds=bounds,
        )
        self.history = history and not count_only
        self.tenants = dict(tenants or {})
        self.matches: list[Match] = []
        self.reports: list[LoadReport] = []
        self._batches: list[EventBatch] = []
        self._next_position = 0  # the position of the next loaded row
        self._last_position = -1

    @classmethod
    def from_queries(
        cls, queries: Sequence[tuple[str, str | CheckedQuery]], schema: Schema, **options: Any
    ) -> Detector:
        """A detector for named queries, given as text or already checked.

        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
        >>> Detector.from_queries([("q", "SELECT * WHERE A WITHIN 1 EVENTS")], s).plan.queries[0].name
        'q'
        """
        checked = [
            (name, q if isinstance(q, CheckedQuery) else parse_and_check(q, schema, name)) for name, q in queries
        ]
        return cls(compile_plan(checked, counting=options.get("count_only", False)), schema, **options)

    @classmethod
    def from_workload(
        cls,
        workload: Workload,
        *,
        shedder: str | None = None,
        seed: int = 0,
        reference_ms: dict[str, float] | None = None,
        **options: Any,
    ) -> Detector:
        """A detector for every query of a workload, with its allowed
        lateness, capacity and tenants, and with ``shedder`` (a name of
        ``shedding.SHEDDERS``) its bounds and weights, as on Spark. Bounds
        given as fractions need each query's mean latency in an unshedded
        run (``reference_ms``, from ``sharp_cer.shedding.bounds.unshedded_latency``).
        Without a shedder, the latency summary still judges every query's
        bound (``sharp_cer.shedding.bounds.judged_bounds``; a fraction only with
        ``reference_ms``).

        >>> from sharp_cer.language import parse_workload
        >>> w = parse_workload('''
        ... [workload]
        ... name = "w"
        ... schema = "CREATE STREAM S { EVENT A { x:int } }"
        ... allowed_lateness = 5
        ... [[query]]
        ... name = "q"
        ... tenant = "t"
        ... text = "SELECT * WHERE A WITHIN 1 EVENTS"
        ... ''')
        >>> d = Detector.from_workload(w, shedder="truncate")
        >>> d.allowed_lateness, d.tenants, d.shedder.config.bounds
        (5, {'q': 't'}, {})
        """
        config = DetectorConfig(shedder=shedder, seed=seed, count_only=options.get("count_only", False))
        return cls.from_builder(DetectorBuilder.for_workload(workload, config), reference_ms=reference_ms, **options)

    @classmethod
    def from_builder(
        cls,
        builder: DetectorBuilder,
        *,
        reference_ms: Mapping[str, float] | None = None,
        shed_config: ShedConfig | None = None,
        **options: Any,
    ) -> Detector:
        """A detector of the builder's plan and schema, with the tenants,
        lateness, capacity, shedder and judged bounds it builds (bounds given
        as fractions taken of ``reference_ms``, see ``sharp_cer.builder``;
        the shedder's configuration ``shed_config``, when the caller built it
        already); ``options`` add to them or override them.

        >>> from sharp_cer.builder import DetectorConfig
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
        >>> b = DetectorBuilder(s, [("q", parse_and_check("SELECT * WHERE A WITHIN 1 EVENTS", s))], DetectorConfig())
        >>> Detector.from_builder(b, history=True).history
        True
        """
        return cls(builder.plan, builder.schema, **{**builder.detector_options(reference_ms, shed_config), **options})

    def feed(
        self, events: EventBatch | pd.DataFrame | pa.Table, *, arrivals: Any = None, quota: int | None = None
    ) -> list[Match]:
        """Process a batch (or a pandas / Arrow table, loaded by the schema)
        and return the matches it completes, in order of their end; they
        are also in ``matches`` (see the class example). ``arrivals`` are
        the events' arrivals in seconds (a float array, one per event: the
        rows loaded), for events replayed on a timeline of the caller's
        (default: the pace's, or now). ``quota``: how many matches are
        still wanted (None: all; ``Engine.process``)."""
        found: list[Match] = self._process(events, arrivals, quota, None)
        if self.tenants:
            tenants = self.tenants
            found = [Match(m.query, m.start, m.end, m.events, m.vars, tenants.get(m.query)) for m in found]
        if not self.engine.count_only:
            self.matches.extend(found)
        return found

    def feed_lines(
        self, events: EventBatch | pd.DataFrame | pa.Table, *, arrivals: Any = None, quota: int | None = None
    ) -> list[str]:
        """``feed``, returning the matches' output lines (``Match.to_json``,
        tenants included) instead of the matches. A detector of one query
        without ``history`` builds them without Match objects where nothing
        chooses among its matches (what ``sharp-cer match`` writes), so
        ``matches`` stays empty and ``events_of`` has nothing to look up.

        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
        >>> d = Detector.from_queries([("q", "SELECT * WHERE A ; A WITHIN 1 EVENTS")], s, tenants={"q": "acme"})
        >>> import pandas as pd
        >>> d.feed_lines(pd.DataFrame({"type": ["A", "A"], "x": [1, 2]}))
        ['{"query": "q", "tenant": "acme", "start": 0, "end": 1, "events": [0, 1], "vars": {"A": [0, 1]}}']
        """
        if len(self.plan.queries) != 1 or self.history:
            # several queries' matches are ordered by the caller (see ``feed``)
            return [m.to_json() for m in self.feed(events, arrivals=arrivals, quota=quota)]
        tenants = {q.name: self.tenants.get(q.name) for q in self.plan.queries}
        lines: list[str] = self._process(events, arrivals, quota, tenants)
        return lines

    def _process(
        self,
        events: EventBatch | pd.DataFrame | pa.Table,
        arrivals: Any,
        quota: int | None,
        tenants: Mapping[str, str | None] | None,
    ) -> list[Any]:
        """Load, check the order and run the engine (``feed``; with
        ``tenants``, ``feed_lines``): matches, or their lines."""
        if not self.history:
            self.reports.clear()
        batch = events if isinstance(events, EventBatch) else self._load(events)
        if len(batch):
            if int(batch.positions[0]) <= self._last_position:
                raise SurfaceError(
                    f"events must come in order: this batch starts at position {int(batch.positions[0])}, "
                    f"but position {self._last_position} was already processed\n"
                    "  hint: feed each event once, in stream order"
                )
            self._last_position = int(batch.positions[-1])
            self._next_position = max(self._next_position, self._last_position + 1)
        if not self.history:
            self._batches.clear()
            self.matches = []
        self._batches.append(batch)
        parts = [(batch, np.asarray(arrivals, dtype=np.float64))] if arrivals is not None else self._arrivals(batch)
        if self._check_floor and len(batch):
            self._check_floor = False
            self._warn_floors(parts)
        engine = self.engine
        found: list[Any] = []
        for part, at in parts:
            left = None if quota is None else quota - len(found)  # the quota runs over the parts
            if tenants is None:
                found.extend(engine.process(part, at, quota=left))
            else:
                found.extend(engine.process_lines(part, tenants, at, quota=left))
        return found

    def _warn_floors(self, parts: list[tuple[EventBatch, Any]]) -> None:
        """Measure the update floor on the first events (an unshedded run of
        at most 2,000) and say each bound below it (``floor_warnings``)."""
        from sharp_cer.shedding.bounds import floor_warnings

        first, at = parts[0]
        n = min(len(first), 2000)
        sample = first.take(list(range(n)))
        arrivals = at[:n] if at is not None else None
        capacity = self.engine.server.capacity
        config = self.shedder.config  # type: ignore[union-attr]
        lines = floor_warnings(self.plan, config, sample, capacity, arrivals, allowed_lateness=self.allowed_lateness)
        self.floor_warnings = lines
        for line in lines:
            warnings.warn(line, RuntimeWarning, stacklevel=4)

    def _arrivals(self, batch: EventBatch) -> list[tuple[EventBatch, Any]]:
        """The batch with its events' arrivals (None: now, live), in the
        slices it is served in (see the class docstring)."""
        if self.pace is None or not len(batch):
            return [(batch, None)]
        if self._origin is None:
            self._origin = self.pace.origin(batch)
        arrivals = self.pace.arrivals(batch, self._origin)
        if self.engine.server.capacity is not None:
            return [(batch, arrivals)]
        # wall mode: a slice is served once its last event has arrived
        cuts = np.flatnonzero(np.diff(np.floor(arrivals / SLICE_SECONDS))) + 1
        return [
            (batch.take(np.arange(lo, hi)), arrivals[lo:hi])
            for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(batch)], strict=True)
        ]

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per query: tenant, matches, cuts by lever and latency against
        the bound (``sharp_cer.latency_summary``; latency needs
        ``record_latency=True``)."""
        from .latency_summary import query_summaries

        return query_summaries(self.engine, self.shedder, self.tenants)

    def _load(self, table: Any) -> EventBatch:
        loader = load_arrow if isinstance(table, pa.Table) else load_pandas
        batch, report = loader(table, self.schema, strict=self.strict, allowed_lateness=self.allowed_lateness)
        offset = self._next_position
        self._next_position += report.read
        self.reports.append(report)
        if offset:
            batch = EventBatch(batch.event_types, batch.positions + offset, batch.codes, batch.columns)
        return batch

    def events_of(self, match: Match) -> dict[str, list[dict[str, Any]]]:
        """Each variable of a match with its events' attributes, from the
        latest feed (every feed with ``history=True``); see the module example."""
        rows: dict[int, dict[str, Any]] = {}
        wanted = {p for positions in match.vars.values() for p in positions}
        kept = self._batches[0].positions[:1] if self._batches and len(self._batches[0]) else None
        if wanted and not self.history and (kept is None or min(wanted) < int(kept[0])):
            raise SurfaceError(
                f"events_of: the match of {match.query} ending at {match.end} has events from an earlier feed, "
                "and this detector keeps only the latest feed's events\n"
                "  hint: create the Detector with history=True to keep every feed's events (memory grows with "
                "the stream), or call events_of on the matches of the latest feed"
            )
        for batch in self._batches:
            for i in np.flatnonzero(np.isin(batch.positions, list(wanted))).tolist():
                row = batch.row(i)
                rows[row["position"]] = {"type": row["type"], "position": row["position"], **row["attributes"]}
        return {var: [rows[p] for p in positions] for var, positions in match.vars.items()}

    @property
    def counts(self) -> dict[str, int]:
        """Matches found so far per query (kept even with ``history=False``).

        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
        >>> d = Detector.from_queries([("q", "SELECT * WHERE A ; B+ WITHIN 30 EVENTS")], s, count_only=True)
        >>> import pandas as pd
        >>> d.feed(pd.DataFrame({"type": ["A"] + ["B"] * 20, "x": range(21)}))
        []
        >>> d.counts  # every non-empty subset of the 20 B events
        {'q': 1048575}
        """
        per_query = self.engine.clock.per_query
        return {q.name: per_query[q.name].matches if q.name in per_query else 0 for q in self.plan.queries}

    def stats(self) -> dict[str, Any]:
        """The engine's figures: cost clock, caches, live nodes, partitions.

        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
        >>> Detector.from_queries([("q", "SELECT * WHERE A WITHIN 1 EVENTS")], s).stats()["events"]
        0
        """
        return self.engine.stats()


def detect(
    queries: Sequence[tuple[str, str | CheckedQuery]], schema: Schema, events: EventBatch | pd.DataFrame | pa.Table
) -> list[Match]:
    """Every match of named queries over one batch of events.

    >>> from sharp_cer.language import Schema
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
    >>> import pyarrow as pa
    >>> table = pa.table({"type": ["A"] * 3, "x": [1, 2, 3]})
    >>> [m.events for m in detect([("q", "SELECT * WHERE A:A WITHIN 1 EVENTS")], s, table)]
    [(0, 1), (1, 2)]
    """
    return Detector.from_queries(queries, schema).feed(events)


MATCH_SCHEMA = pa.schema(
    [
        ("query", pa.string()),
        ("tenant", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("events", pa.list_(pa.int64())),
        ("vars", pa.map_(pa.string(), pa.list_(pa.int64()))),
    ]
)


def matches_to_arrow(matches: Sequence[Match]) -> pa.Table:
    """Matches as an Arrow table with :data:`MATCH_SCHEMA`.

    >>> matches_to_arrow([Match("q", 1, 3, (2, 3), {"b": (2,)})]).to_pylist()
    [{'query': 'q', 'tenant': None, 'start': 1, 'end': 3, 'events': [2, 3], 'vars': [('b', [2])]}]
    """
    return pa.table(
        {
            "query": [m.query for m in matches],
            "tenant": [m.tenant for m in matches],
            "start": [m.start for m in matches],
            "end": [m.end for m in matches],
            "events": [list(m.events) for m in matches],
            "vars": [[(k, list(v)) for k, v in sorted(m.vars.items())] for m in matches],
        },
        schema=MATCH_SCHEMA,
    )
