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
['query', 'tenant', 'start', 'end', 'events', 'vars', 'deadline', 'version']
"""

from __future__ import annotations

import datetime
import logging
import numbers
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from sharp_cer.builder import DetectorBuilder, DetectorConfig, WorkloadChange
from sharp_cer.engine import Engine
from sharp_cer.engine.queueing import Pace
from sharp_cer.engine.shedder_protocol import Shedder
from sharp_cer.errors import SharpCerError, SurfaceError, kind_of
from sharp_cer.events.batch import EventBatch, LoadReport
from sharp_cer.events.loaders import StreamProgress, load_arrow, load_pandas
from sharp_cer.events.match import Match
from sharp_cer.language import CheckedQuery, Schema, Workload, parse_and_check
from sharp_cer.language.collector import collector_paused
from sharp_cer.language.workload_source import WorkloadSource
from sharp_cer.planner import Plan, compile_plan

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from sharp_cer.latency_summary import Summary
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
        with_events: bool = False,
        check_floor: bool = True,
    ) -> None:
        self.plan = plan
        self.with_events = with_events
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
        if tenants is not None and not isinstance(tenants, Mapping):
            raise SurfaceError(f"Detector: tenants name each query's tenant: expected a dict, found {kind_of(tenants)}")
        self.tenants = dict(tenants or {})
        self.matches: list[Match] = []
        self.reports: list[LoadReport] = []
        self._batches: list[EventBatch] = []
        self._next_position = 0  # the position of the next loaded row
        self._latest_time = StreamProgress().latest  # the latest primary time loaded (lateness across feeds)
        self._last_position = -1
        #: the builder of a detector made from a workload (``update`` moves it on)
        self.builder: DetectorBuilder | None = None
        #: the workload version matches are produced under (0: the first; ``update``)
        self.version = 0
        #: every version since the first (``update``), oldest first
        self.versions: list[WorkloadVersion] = []
        #: per query, the positions it ran from and (once removed) to: [first, last] pairs
        self.intervals: dict[str, list[list[int | None]]] = {q.name: [[0, None]] for q in plan.queries}
        #: changes refused (``watch``): when, at which position, and the located error
        self.refusals: list[dict[str, Any]] = []
        self._source: WorkloadSource | None = None
        # the unshedded latencies fraction bounds were taken of (``from_builder``), for ``update``
        self._reference_ms: dict[str, float] | None = None

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
            (name, q if isinstance(q, CheckedQuery) else parse_and_check(q, schema, name))
            for name, q in _named_queries(queries, schema)
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
        if not isinstance(workload, Workload):
            raise SurfaceError(
                f"Detector.from_workload takes a Workload, found {kind_of(workload)}\n"
                "  hint: load_workload(path) or parse_workload(text) makes one"
            )
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
        detector = cls(
            builder.plan, builder.schema, **{**builder.detector_options(reference_ms, shed_config), **options}
        )
        detector.builder = builder
        detector._reference_ms = dict(reference_ms) if reference_ms is not None else None
        return detector

    def watch(self, path: str | Path) -> None:
        """Take the workload from ``path`` (a TOML file, or a folder of one
        file per tenant: ``language.workload_source``) from now on: before
        each feed the detector reads it again if it changed and moves to it
        (``update``). A change that cannot apply (a syntax or type error in
        any file, another schema) is refused: its located error is logged
        (logger ``sharp_cer``), kept in ``refusals`` and in the summary, and
        every query runs on as before; the next change of the files is
        tried again. The file as it is now is taken at once."""
        self._source = WorkloadSource(path)
        self.poll_workload()

    def poll_workload(self) -> WorkloadVersion | None:
        """Move to the watched workload if its files changed (``watch``):
        the new version, or None (no change, or a change refused)."""
        if self._source is None:
            return None
        try:
            workload = self._source.poll()
            if workload is None:
                return None
            running = self.builder.workload if self.builder is not None else None
            if running is not None and workload.fingerprint() == running.fingerprint():
                return None  # the same rules written another way
            return self.update(workload)
        except SharpCerError as error:
            stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            self.refusals.append({"time": stamp, "position": self._next_position, "error": str(error)})
            logging.getLogger("sharp_cer").error(
                "workload change refused, every query runs on as before (version %d):\n%s", self.version, error
            )
            return None

    @classmethod
    def from_versions(cls, workloads: Sequence[Workload], **options: Any) -> Detector:
        """A detector of the first workload moved through each later one
        (``update``), with no event fed: the same plans and query groups as
        the detector that went through them live, so that its snapshot
        (``Engine.snapshot``) restores here; a stream's checkpoint keeps its
        versions for that."""
        if not workloads:
            raise SurfaceError("Detector.from_versions needs at least one workload")
        detector = cls.from_workload(workloads[0], **options)
        for later in workloads[1:]:
            detector.update(later)
        return detector

    def update(self, workload: Workload) -> WorkloadVersion:
        """Change the running queries to ``workload``'s between two feeds,
        keeping every unchanged query's partial matches (``engine.update``
        states the rule): a query added now matches only events from the
        next feed's first position on, a removed one puts out nothing more,
        a replaced one (same name, another text) is both, and a tenant,
        weight or bound changes in place. Only the added and replaced
        queries are compiled. Returns the new version (also last in
        ``versions``); later matches carry its number (``Match.version``).
        With a shedder, added queries are shed to their own bounds and
        running ones take their new bounds and weights in place; whether a
        running query is shed (a bound or ``shed`` added or removed) and its
        sketch attributes change only with its text (a replaced query).
        A change that cannot apply (another schema, lateness or capacity,
        or that) raises a ``SharpCerError`` and leaves everything as it was.

        >>> from sharp_cer.language import parse_workload
        >>> head = '[workload]\\nname = "w"\\nschema = "CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }"\\n'
        >>> def query(name, text):
        ...     return f'[[query]]\\nname = "{name}"\\ntext = "{text}"\\n'
        >>> seq = "SELECT * WHERE A ; B WITHIN 9 EVENTS"
        >>> d = Detector.from_workload(parse_workload(head + query("p", seq)))
        >>> import pandas as pd
        >>> _ = d.feed(pd.DataFrame({"type": ["A", "A"], "x": [1, 2]}))
        >>> d.update(parse_workload(head + query("p", seq) + query("q", seq))).describe()
        'version 1 at position 2: added q'
        >>> [(m.query, m.start, m.end, m.version) for m in d.feed(pd.DataFrame({"type": ["A", "B"], "x": [3, 4]}))]
        [('p', 0, 3, 1), ('p', 1, 3, 1), ('p', 2, 3, 1), ('q', 2, 3, 1)]
        """
        if self.builder is None or self.builder.workload is None:
            raise SurfaceError(
                "Detector.update needs a detector built from a workload\n"
                "  hint: make it with Detector.from_workload(workload)"
            )
        if not isinstance(workload, Workload):
            raise SurfaceError(
                f"Detector.update takes a Workload, found {kind_of(workload)}\n"
                "  hint: load_workload(path) or parse_workload(text) makes one"
            )
        builder = self.builder
        before = builder.workload
        assert before is not None  # checked above
        with collector_paused():  # it would walk every live node, for no cycle
            return self._update(builder, before, workload)

    def _update(self, builder: DetectorBuilder, before: Workload, workload: Workload) -> WorkloadVersion:
        change = builder.update(workload)  # raises before anything changed
        try:
            # with a shedder: the new bounds, weights and sketch attributes (a fraction of the
            # unshedded latency only for the queries the detector was given it for); a change of
            # tenants, weights or bounds alone then still reaches the shedder
            shed = builder.shed_config(self._reference_ms) if self.shedder is not None else None
            if change.queries or change.removed or shed is not None:
                self.engine.update(
                    change.queries, (*change.removed, *change.replaced), shed, position=self._next_position
                )
        except Exception:
            builder.workload, builder.queries = before, [(q.name, q.checked) for q in before.queries]
            builder.tenants, _ = dict(self.tenants), builder.changes.pop()
            raise
        position = self._next_position
        for name in (*change.removed, *change.replaced):
            self.intervals[name][-1][1] = position - 1
        for name in (*change.added, *change.replaced):
            self.intervals.setdefault(name, []).append([position, None])
        self.tenants = dict(builder.tenants)
        queue = self.engine.queue
        if queue is not None and self.shedder is None:  # bounds judged in place
            judged = builder.judged_bounds()
            if judged is not None:
                queue.bounds_ms, queue.bounds_units = dict(judged[0]), dict(judged[1])
        self.version += 1
        stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        version = WorkloadVersion(self.version, stamp, position, change)
        self.versions.append(version)
        return version

    def feed(
        self,
        events: EventBatch | pd.DataFrame | pa.Table,
        *,
        arrivals: Any = None,
        quota: int | None = None,
        emit: Callable[[list[Match]], Any] | None = None,
    ) -> list[Match]:
        """Process a batch (or a pandas / Arrow table, loaded by the schema)
        and return the matches it completes, in order of their end; they
        are also in ``matches`` (see the class example). ``arrivals`` are
        the events' arrivals in seconds (a float array, one per event: the
        rows loaded), for events replayed on a timeline of the caller's
        (default: the pace's, or now). ``quota``: how many matches are
        still wanted (None: all; ``Engine.process``).

        With ``emit``, the matches go to it as they are enumerated, in
        lists in end order, and are neither returned nor kept: memory holds
        the live state and a fixed buffer, however many matches the batch
        completes (``Engine.process``).

        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
        >>> d = Detector.from_queries([("q", "SELECT * WHERE A ; A WITHIN 2 EVENTS")], s, tenants={"q": "t"})
        >>> import pandas as pd
        >>> got = []
        >>> d.feed(pd.DataFrame({"type": ["A"] * 3, "x": [1, 2, 3]}), emit=got.extend), d.matches
        ([], [])
        >>> [(m.start, m.end, m.tenant) for m in got]
        [(0, 1, 't'), (0, 2, 't'), (1, 2, 't')]
        """
        if self._source is not None:
            self.poll_workload()  # a feed's boundary is where a watched workload may change
        if emit is not None:
            self._process(events, arrivals, quota, None, self._with_tenants(emit))
            return []
        found: list[Match] = self._process(events, arrivals, quota, None)
        if self.tenants or self.version:
            found = self._tenanted(found)
        if not self.engine.count_only:
            self.matches.extend(found)
        return found

    def advance(self, time: int) -> list[Match]:
        """Move event time to ``time`` (a primary time, ns) without an event
        and return the trailing absences' alerts whose deadline it passes
        (``Engine.advance``), with their tenants, as ``feed`` does."""
        found = self.engine.advance(time)
        if self.tenants or self.version:
            found = self._tenanted(found)
        if not self.engine.count_only:
            self.matches.extend(found)
        return found

    def _tenanted(self, found: list[Match]) -> list[Match]:
        """The matches with their queries' tenants (and, once updated, the workload version)."""
        tenants = self.tenants
        version = self.version or None
        return [
            Match(m.query, m.start, m.end, m.events, m.vars, tenants.get(m.query), m.deadline, version) for m in found
        ]

    def _with_tenants(self, emit: Callable[[list[Match]], Any]) -> Callable[[list[Match]], Any]:
        """``emit``, given the matches with their tenants."""
        if not self.tenants and not self.version:
            return emit
        return lambda found: emit(self._tenanted(found))

    def feed_lines(
        self,
        events: EventBatch | pd.DataFrame | pa.Table,
        *,
        arrivals: Any = None,
        quota: int | None = None,
        emit: Callable[[list[str]], Any] | None = None,
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
        if self._source is not None:
            self.poll_workload()  # before the choice of path: an update may add queries
        if len(self.plan.queries) != 1 or self.history or self.version:
            # several queries' matches are ordered by the caller (see ``feed``)
            if emit is not None:
                lined = emit

                def as_lines(found: list[Match]) -> None:
                    lined([m.to_json() for m in found])

                self.feed(events, arrivals=arrivals, quota=quota, emit=as_lines)
                return []
            return [m.to_json() for m in self.feed(events, arrivals=arrivals, quota=quota)]
        tenants = {q.name: self.tenants.get(q.name) for q in self.plan.queries}
        lines: list[str] = self._process(events, arrivals, quota, tenants, emit)
        return lines

    def feed_ranked_lines(
        self,
        events: EventBatch | pd.DataFrame | pa.Table,
        ranks: Mapping[str, int],
        *,
        arrivals: Any = None,
        quota: int | None = None,
        emit: Callable[[list[tuple[int, int, str]]], Any] | None = None,
    ) -> list[tuple[int, int, str]]:
        """``feed_lines`` for a writer of several queries' lines (``sharp-cer match``): each line as
        ``(end, rank, line)``, ``rank`` being its query's in ``ranks``, in end order, those of one end
        and query by start and events; the writer orders one end's by (end, rank). The lines are made
        without Match objects wherever ``feed_lines`` makes them so, several query groups included.

        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
        >>> d = Detector.from_queries([("p", "SELECT * WHERE B"), ("q", "SELECT * WHERE A ; B")], s)
        >>> import pandas as pd
        >>> [(end, rank) for end, rank, _ in d.feed_ranked_lines(pd.DataFrame({"type": ["A", "B"], "x": [1, 2]}),
        ...                                                       {"p": 0, "q": 1})]
        [(1, 0), (1, 1)]
        """
        if self._source is not None:
            self.poll_workload()
        if self.history or self.version:  # matches kept, or stamped with the version: as Match objects
            if emit is not None:
                ranked = emit

                def as_lines(found: list[Match]) -> None:
                    ranked([(m.end, ranks[m.query], m.to_json()) for m in found])

                self.feed(events, arrivals=arrivals, quota=quota, emit=as_lines)
                return []
            return [(m.end, ranks[m.query], m.to_json()) for m in self.feed(events, arrivals=arrivals, quota=quota)]
        tenants = {q.name: self.tenants.get(q.name) for q in self.plan.queries}
        lines: list[tuple[int, int, str]] = self._process(events, arrivals, quota, tenants, emit, ranks)
        return lines

    def _process(
        self,
        events: EventBatch | pd.DataFrame | pa.Table,
        arrivals: Any,
        quota: int | None,
        tenants: Mapping[str, str | None] | None,
        emit: Callable[[list[Any]], Any] | None = None,
        ranks: Mapping[str, int] | None = None,
    ) -> list[Any]:
        """Load, check the order and run the engine (``feed``; with
        ``tenants``, ``feed_lines``): matches, or their lines (none with
        ``emit``: they went to it)."""
        events = _events_given(events)
        if quota is not None and (isinstance(quota, bool) or not isinstance(quota, numbers.Integral) or quota < 0):
            raise SurfaceError(
                f"feed: quota is how many matches are still wanted: expected None or an int >= 0, found {quota!r}"
            )
        if emit is not None and not callable(emit):
            raise SurfaceError(f"feed: emit takes each list of matches: expected a function, found {kind_of(emit)}")
        if not self.history:
            self.reports.clear()
        batch = events if isinstance(events, EventBatch) else self._load(events)
        if arrivals is not None:
            arrivals = _arrivals_given(arrivals, len(batch))
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
            self._forget()
            self.matches = []
        self._batches.append(batch)
        parts = [(batch, arrivals)] if arrivals is not None else self._arrivals(batch)
        if self._check_floor and len(batch):
            self._check_floor = False
            self._warn_floors(parts)
        engine = self.engine
        found: list[Any] = []
        emitted = [0]
        if emit is not None:
            given = emit

            def emit(out: list[Any]) -> None:
                emitted[0] += len(out)
                given(out)

        for part, at in parts:
            left = None if quota is None else quota - len(found) - emitted[0]  # the quota runs over the parts
            if tenants is None:
                found.extend(engine.process(part, at, quota=left, emit=emit))
            else:
                found.extend(engine.process_lines(part, tenants, at, quota=left, emit=emit, ranks=ranks))
        return found

    def _forget(self) -> None:
        """Drop the feeds no later match can read: all of them, or with
        ``with_events`` those before the oldest event a live partial match
        (or a pending trailing absence) holds, so that ``alerts`` and
        ``events_of`` find every event of the next feed's matches."""
        if not self.with_events:
            self._batches.clear()
            return
        oldest = self.engine.oldest_position()
        while self._batches and (not len(self._batches[0]) or int(self._batches[0].positions[-1]) < oldest):
            self._batches.pop(0)

    def alerts(self, matches: Sequence[Match]) -> list[dict[str, Any]]:
        """The matches with their events' attributes grouped by variable,
        each event once (``events.alerts.record``), for matches of the latest
        feed (a detector made with ``with_events=True`` keeps the earlier
        events they need).

        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
        >>> d = Detector.from_queries([("q", "SELECT * WHERE A AS a ; B WITHIN 5 EVENTS")], s, with_events=True)
        >>> import pandas as pd
        >>> _ = d.feed(pd.DataFrame({"type": ["A"], "x": [1]}))
        >>> d.alerts(d.feed(pd.DataFrame({"type": ["B"], "x": [2]})))[0]["attributes"]
        {'B': [{'type': 'B', 'position': 1, 'x': 2}], 'a': [{'type': 'A', 'position': 0, 'x': 1}]}
        """
        from sharp_cer.events.alerts import by_variable, record

        types = {e.name for e in self.schema.event_types()}
        return [record(m, by_variable(m, self._rows(m), types)) for m in matches]

    def flat_alerts(self, matches: Sequence[Match]) -> list[dict[str, Any]]:
        """``alerts`` in the flat form: one row per event (``events.alerts.flat``;
        one column per attribute of the schema)."""
        from sharp_cer.events.alerts import by_variable, flat

        types = {e.name for e in self.schema.event_types()}
        names = self.attribute_names()
        return [row for m in matches for row in flat(m, by_variable(m, self._rows(m), types), names)]

    def attribute_names(self) -> tuple[str, ...]:
        """Every attribute name of the schema, each once, in declaration order."""
        return tuple(dict.fromkeys(a for e in self.schema.event_types() for a in e.attributes))

    def _rows(self, match: Match) -> dict[int, dict[str, Any]]:
        """The events of a match by position, from the feeds kept."""
        wanted = sorted({p for positions in match.vars.values() for p in positions})
        rows: dict[int, dict[str, Any]] = {}
        for batch in self._batches:
            if not len(batch) or not wanted or wanted[-1] < batch.positions[0] or wanted[0] > batch.positions[-1]:
                continue
            for i in np.flatnonzero(np.isin(batch.positions, wanted)).tolist():
                row = batch.row(i)
                rows[row["position"]] = {"type": row["type"], "position": row["position"], **row["attributes"]}
        missing = [p for p in wanted if p not in rows]
        if missing:
            raise SurfaceError(
                f"the match of {match.query} ending at {match.end} has events from an earlier feed "
                f"(position {missing[0]}) that this detector no longer keeps\n"
                "  hint: create the Detector with with_events=True (it keeps the events live matches may need) "
                "and ask for the alerts of each feed's matches before the next feed"
            )
        return rows

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

    def summary(self) -> Summary:
        """Per query: tenant, matches, cuts by lever and latency against
        the bound (``sharp_cer.latency_summary``; latency needs
        ``record_latency=True``), as a ``Summary`` record: a mapping of
        query names to their rows, printed as a table.

        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
        >>> d = Detector.from_queries([("q", "SELECT * WHERE A WITHIN 1 EVENTS")], s)
        >>> import pandas as pd
        >>> _ = d.feed(pd.DataFrame({"type": ["A"], "x": [1]}))
        >>> summary = d.summary()
        >>> summary["q"]["matches"], str(summary).splitlines()[1].split()[:2]
        (1, ['q', '1'])
        """
        from .latency_summary import Summary, query_summaries

        return Summary(query_summaries(self.engine, self.shedder, self.tenants), self.version_report())

    def version_report(self) -> list[dict[str, Any]]:
        """The workload versions (``update``), oldest first, as plain data:
        number, time, first position, what changed; and each query's
        intervals as [first, last] positions (last None: still running).
        Empty while the detector runs its first workload."""
        if not self.versions and not self.refusals:
            return []
        first: dict[str, Any] = {"version": 0, "time": None, "position": 0, "change": "the first workload"}
        rows = [first] + [
            {"version": v.number, "time": v.time, "position": v.position, "change": v.change.describe()}
            for v in self.versions
        ]
        rows += [{"refused": r["error"], "time": r["time"], "position": r["position"]} for r in self.refusals]
        rows.append({"intervals": {name: [list(pair) for pair in pairs] for name, pairs in self.intervals.items()}})
        return rows

    def _load(self, table: Any) -> EventBatch:
        loader = load_arrow if isinstance(table, pa.Table) else load_pandas
        # lateness is judged against the latest time of every feed so far, as in one call
        progress = StreamProgress(0, self._latest_time)
        batch, report = loader(
            table, self.schema, strict=self.strict, allowed_lateness=self.allowed_lateness, progress=progress
        )
        self._latest_time = progress.latest
        offset = self._next_position
        self._next_position += report.read
        self.reports.append(report)
        if offset:
            batch = EventBatch(batch.event_types, batch.positions + offset, batch.codes, batch.columns)
        return batch

    def events_of(self, match: Match) -> dict[str, list[dict[str, Any]]]:
        """Each variable of a match with its events' attributes, from the
        latest feed (every feed with ``history=True``); see the module example."""
        if not isinstance(match, Match):
            raise SurfaceError(f"events_of takes a Match (one of feed's or of matches), found {kind_of(match)}")
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
        names = dict.fromkeys(q.name for plan in self.engine.plans for q in plan.queries)
        return {name: per_query[name].matches if name in per_query else 0 for name in names}

    def stats(self) -> dict[str, Any]:
        """The engine's figures: cost clock, caches, live nodes, partitions.

        >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
        >>> Detector.from_queries([("q", "SELECT * WHERE A WITHIN 1 EVENTS")], s).stats()["events"]
        0
        """
        found = self.engine.stats()
        if self.versions or self.refusals:  # a workload that changed, or was refused a change
            found["workload_version"] = self.version
            found["workload_refusals"] = len(self.refusals)
        return found


class WorkloadVersion:
    """One version of a detector's workload (``Detector.update``): its
    number, when it was applied (UTC, ISO 8601), the first stream position
    it applies to, and the change from the version before."""

    __slots__ = ("change", "number", "position", "time")

    def __init__(self, number: int, time: str, position: int, change: WorkloadChange) -> None:
        self.number, self.time, self.position, self.change = number, time, position, change

    def describe(self) -> str:
        """One line: the version, its position and its change."""
        return f"version {self.number} at position {self.position}: {self.change.describe()}"


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
        # a trailing absence's alert: the event time it fired at (ns); null for every other match
        ("deadline", pa.int64()),
        # the workload version the match was produced under (Detector.update); null: the first
        ("version", pa.int64()),
    ]
)


def matches_to_arrow(matches: Sequence[Match]) -> pa.Table:
    """Matches as an Arrow table with :data:`MATCH_SCHEMA`.

    >>> row = matches_to_arrow([Match("q", 1, 3, (2, 3), {"b": (2,)}, version=2)]).to_pylist()[0]
    >>> row["events"], row["vars"], row["deadline"], row["version"]
    ([2, 3], [('b', [2])], None, 2)
    """
    if isinstance(matches, Match) or not isinstance(matches, Sequence | Iterable) or isinstance(matches, str):
        raise SurfaceError(f"matches_to_arrow takes a list of Match, found {kind_of(matches)}")
    matches = list(matches)
    wrong = next((m for m in matches if not isinstance(m, Match)), None)
    if wrong is not None:
        raise SurfaceError(
            f"matches_to_arrow takes a list of Match, found a list holding {kind_of(wrong)}\n"
            "  hint: pass Detector.feed's matches (or Detector.matches)"
        )
    return pa.table(
        {
            "query": [m.query for m in matches],
            "tenant": [m.tenant for m in matches],
            "start": [m.start for m in matches],
            "end": [m.end for m in matches],
            "events": [list(m.events) for m in matches],
            "vars": [[(k, list(v)) for k, v in sorted(m.vars.items())] for m in matches],
            "deadline": [m.deadline for m in matches],
            "version": [m.version for m in matches],
        },
        schema=MATCH_SCHEMA,
    )


#: a query's name, as the workload loader takes it
_NAME = "a name of its own (a non-empty str)"


def _named_queries(queries: Any, schema: Any) -> list[tuple[str, Any]]:
    """The (name, query) pairs of ``from_queries``, checked: a schema, a
    list of pairs, each name a distinct non-empty str (the workload
    loader's rule), each query a text or a CheckedQuery."""
    if not isinstance(schema, Schema):
        raise SurfaceError(
            f"Detector.from_queries takes a Schema, found {kind_of(schema)}\n"
            '  hint: Schema.parse("CREATE STREAM ...") makes one of its text'
        )
    if isinstance(queries, str | bytes | Mapping) or not isinstance(queries, Sequence | Iterable):
        raise SurfaceError(
            f"Detector.from_queries takes a list of (name, query) pairs, found {kind_of(queries)}\n"
            '  hint: [("q", "SELECT * WHERE ...")]'
            + ("; for a dict, list(d.items())" if isinstance(queries, Mapping) else "")
        )
    pairs: list[tuple[str, Any]] = []
    seen: dict[str, int] = {}
    for i, pair in enumerate(queries):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise SurfaceError(
                f"query {i + 1}: expected a (name, query) pair, found {kind_of(pair)}"
                + (f" of length {len(pair)}" if isinstance(pair, tuple | list) else "")
            )
        name, query = pair
        if not isinstance(name, str) or not name:
            raise SurfaceError(f"query {i + 1} needs a name\n  expected: {_NAME}\n  found: {name!r}")
        if name in seen:
            raise SurfaceError(
                f"two queries are named {name}\n  expected: a distinct name per query\n"
                f"  found: '{name}' (also query {seen[name] + 1})\n"
                "  hint: names identify queries in outputs; rename one"
            )
        seen[name] = i
        if not isinstance(query, str | CheckedQuery):
            raise SurfaceError(
                f"query {name}: expected the query's text (SELECT ...) or a CheckedQuery, found {kind_of(query)}"
            )
        pairs.append((name, query))
    return pairs


def _events_given(events: Any) -> Any:
    """What ``feed`` takes, checked: an EventBatch, a pandas DataFrame or an
    Arrow table (an Arrow record batch is taken as a table)."""
    if isinstance(events, pa.RecordBatch):
        return pa.Table.from_batches([events])
    if isinstance(events, EventBatch | pa.Table):
        return events
    import pandas as pd

    if isinstance(events, pd.DataFrame):
        return events
    hint = "pd.DataFrame(rows) makes a frame of a list of dicts or a dict of lists"
    if isinstance(events, str | bytes):
        hint = "load a file with sharp_cer.events.loaders (load_csv, load_jsonl, load_parquet) and feed the batch"
    raise SurfaceError(
        f"feed takes an EventBatch, a pandas DataFrame or an Arrow table, found {kind_of(events)}\n  hint: {hint}"
    )


def _arrivals_given(arrivals: Any, events: int) -> npt.NDArray[np.float64]:
    """``feed``'s arrivals, checked: one finite number of seconds per event loaded."""
    try:
        given = np.asarray(arrivals, dtype=np.float64)
    except (TypeError, ValueError):
        given = None
    if given is None or given.ndim != 1 or not np.isfinite(given).all():
        raise SurfaceError(
            f"feed: arrivals are the events' arrival times: expected a 1-d array of finite seconds, found "
            f"{arrivals!r:.80}"
        )
    if len(given) != events:
        raise SurfaceError(
            f"feed: arrivals are one per event loaded: expected {events}, found {len(given)}\n"
            "  hint: rows that are dead-lettered have no arrival; give one per row of the batch loaded"
        )
    return given
