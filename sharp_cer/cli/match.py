"""``sharp-cer match``: the matches of a workload, or of queries over a
schema, over an events file, written chunk by chunk as JSON lines (or to a
file), or counted."""

from __future__ import annotations

import argparse
import io
import itertools
import json
import operator
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import SharpCerError, SurfaceError
from ..events.match import Match
from ..language import Schema, Workload, load_workload
from .arguments import SHEDDER_NAMES, add_latency_arguments, at_least, bound_option
from .exits import EXIT_INVALID, EXIT_OK
from .inputs import event_chunks, events_format, schema_and_queries
from .letters import LetterTally, LetterWriter
from .outputs import atomic_output, check_outputs, file_problem, write_atomic
from .parser import SUMMARIES
from .shed import ShedOptions, judges, reference_latency, shed_stats, summary_table, warn_floors

if TYPE_CHECKING:
    from ..api import Detector


@dataclass(frozen=True)
class MatchOptions:
    """What ``sharp-cer match`` was asked for: a workload, or a schema and
    query files; the events; the engine; where matches go and how many."""

    events: str
    workload: str | None = None
    schema: str | None = None
    queries: tuple[str, ...] = ()
    engine: str = "core"
    limit: int | None = None
    count: bool = False
    out: str | None = None
    allowed_lateness: int | None = None
    #: the output's format when ``out``'s suffix does not say it (None: JSON Lines)
    format: str | None = None
    #: where every dead letter goes, one JSON line each (``letters``)
    dead_letters: str | None = None
    with_events: bool = False

    def problem(self) -> str | None:
        """What is inconsistent, if anything."""
        if self.workload is not None and (self.schema is not None or self.queries):
            return "give a WORKLOAD.toml, or --schema with --query files, not both"
        if self.workload is None and (self.schema is None or not self.queries):
            return "give a WORKLOAD.toml, or --schema FILE.core with --query FILE.ceql (repeatable)"
        if self.workload is not None and self.allowed_lateness is not None:
            return "a workload sets its own allowed_lateness: drop --allowed-lateness, or edit the workload"
        if self.count and self.out is not None:
            return "--count prints counts: drop --out, or drop --count to write the matches"
        if self.with_events and (self.count or self.engine == "reference"):
            return "--with-events writes matches with their events: drop --count and --engine reference"
        return None


def add_parser(sub: Any) -> None:
    """The ``match`` command's flags."""
    run_match = sub.add_parser(
        "match",
        help=SUMMARIES["match"],
        description="Read the events chunk by chunk and write each chunk's matches as they complete, in order "
        "of their end: memory holds one chunk and the engine's live state, not the input.",
    )
    run_match.add_argument(
        "workload", nargs="?", metavar="WORKLOAD", help="a workload (.toml): its queries, tenants and lateness"
    )
    run_match.add_argument("--schema", metavar="FILE", help="without a workload: the .core schema")
    run_match.add_argument(
        "--query", action="append", default=[], metavar="FILE", help="without a workload: a .ceql file (repeatable)"
    )
    run_match.add_argument("--events", required=True, metavar="FILE", help=".csv, .jsonl or .parquet events")
    run_match.add_argument(
        "--engine", choices=["core", "reference"], default="core", help="the reference oracle reads the whole file"
    )
    run_match.add_argument(
        "--limit",
        type=at_least(1),
        default=None,
        metavar="N",
        help="stop once N matches are out, within one event's enumeration if need be (true matches; with one "
        "query group and no strategy or LIMIT, every match ending before the last one printed is printed)",
    )
    run_match.add_argument(
        "--out",
        metavar="FILE",
        help="write matches to FILE.jsonl, FILE.csv or FILE.parquet (default: stdout, JSON lines); "
        "a path without one of those suffixes (/dev/null, a pipe) takes --format",
    )
    run_match.add_argument(
        "--format",
        choices=["jsonl", "csv", "parquet"],
        help="the format of --out when its suffix does not say it (default: jsonl)",
    )
    run_match.add_argument(
        "--allowed-lateness",
        type=at_least(0),
        metavar="NS",
        help="without a workload: how far (ns) an event's time may fall behind the latest before it is late",
    )
    run_match.add_argument(
        "--count",
        action="store_true",
        help="print the number of matches per query, counted without enumerating them: per event in about the "
        "update's time (sums over the window), except queries with a NEXT/LAST/MAX strategy, CONSUME BY with "
        "STRICT, cross-event conditions or a trailing ABSENT (enumerated to be counted), and partitions whose "
        "window values went back (late events) or restored from a snapshot (counted by walking the tECS)",
    )
    run_match.add_argument(
        "--with-events",
        action="store_true",
        help="write each match with its events' attributes grouped by variable, each event once "
        "(JSON lines: an 'attributes' object; CSV and Parquet: one row per event)",
    )
    add_latency_arguments(run_match)
    run_match.add_argument(
        "--shedder",
        choices=sorted(SHEDDER_NAMES),
        default=None,
        help="enforce the bound by shedding load (default: none, the bound is only judged). What each cuts: "
        "truncate: enumerations past the budget; sharp, sharp-instance: partial matches (by view / by instance) "
        "and enumerations; random-state, selectivity: partial matches and enumerations; random-input, darling: "
        "input events and enumerations; hybrid: input events, partial matches and enumerations; value: partial "
        "matches at creation, valued by expected matches per expected cost, and enumerations. Each also sheds "
        "input events when an event's wait and update alone pass the bound, where no query reads an absence",
    )
    run_match.add_argument("--seed", type=int, default=0, help="seed of the shedder's random choices")
    run_match.add_argument(
        "--sketch-attribute", action="append", default=[], metavar="NAME", help="attribute the sketch buckets"
    )
    run_match.add_argument("--stats", metavar="FILE", help="write per-query matches, shedding and latency as JSON")
    run_match.add_argument(
        "--dead-letters",
        metavar="FILE",
        help="write every rejected row as a JSON line: file, line, column, kind, reason and raw text",
    )


@dataclass(frozen=True)
class MatchCommand:
    """A parsed ``match`` command line: what to match, and the shedding asked for."""

    match: MatchOptions
    shed: ShedOptions
    #: what the command line asked for that this run ignores, one note line each
    notes: tuple[str, ...] = ()


def options(args: argparse.Namespace) -> MatchCommand:
    """The options of a parsed ``match`` command line (``UsageError`` on a bad fraction)."""
    shed = ShedOptions(
        bound=bound_option(args),
        shedder=args.shedder,
        seed=args.seed,
        sketch_attributes=tuple(args.sketch_attribute),
        stats=args.stats,
        rate=args.rate,
        speed=args.replay_speed,
        capacity=args.capacity,
    )
    asked = MatchOptions(
        args.events,
        workload=args.workload,
        schema=args.schema,
        queries=tuple(args.query),
        engine=args.engine,
        limit=args.limit,
        count=args.count,
        out=args.out,
        allowed_lateness=args.allowed_lateness,
        format=args.format,
        dead_letters=args.dead_letters,
        with_events=args.with_events,
    )
    notes = []
    if args.count and args.limit is not None:
        notes.append(f"note: --count counts every match: --limit {args.limit} is ignored")
    if args.shedder is not None and shed.bound is None:
        notes.append(
            f"note: --shedder {args.shedder} sheds to a latency bound, and none is given: nothing is shed "
            "(give --latency-bound)"
        )
    if args.format is not None and args.out is None:
        notes.append(f"note: --format {args.format} is the format of --out: stdout takes JSON Lines")
    return MatchCommand(asked, shed, tuple(notes))


def execute(options: MatchCommand, out: TextIO, err: TextIO) -> int:
    """Run ``match`` (a closed pipe, ``| head``, ends in ``main``)."""
    for note in options.notes:
        print(note, file=err)
    return match(options.match, out, err, options.shed)


@dataclass(frozen=True)
class _Inputs:
    """The queries to run and what comes with them: a workload's, or a schema's and query files'."""

    schema: Schema
    queries: list[tuple[str, Any]]
    lateness: int
    workload: Workload | None

    def to_write(self, found: list[Any], left: int | None, *, ordered: bool) -> list[Any]:
        """The matches to write, in order (by end, then by query as given,
        start and events: the reference's order within an end; ``ordered``:
        they are already), and at most ``left`` of them (None: all)."""
        if not ordered:
            order = {name: i for i, (name, _) in enumerate(self.queries)}
            found = sorted(found, key=lambda m: (m.end, order[m.query], m.start, m.events))
        return found if left is None else found[:left]


@dataclass(frozen=True)
class _Outcome:
    """What a run reports on stderr: matches per query, the footer's figures, the run summary."""

    per_query: dict[str, int]
    footer: str
    summary: str = ""


def match(options: MatchOptions, out: TextIO, err: TextIO, shed: ShedOptions | None = None) -> int:
    """Run queries over an events file, chunk by chunk: write each chunk's
    matches, in order of their end, as JSON lines on ``out`` (or to
    ``options.out``), or with ``count`` one line per query with its number
    of matches. Memory holds one chunk and the engine's live state.

    ``engine`` is ``core`` (the engine) or ``reference`` (the brute-force
    oracle, for small inputs: it reads the whole file); summaries go to
    ``err``. ``shed`` bounds every query's latency and writes statistics
    (see ``ShedOptions``); a fraction bound reads the events twice.
    """
    from ..events.batch import LoadTally
    from ..sinks import check_out

    shed = shed or ShedOptions()
    problem = options.problem() or shed.problem(options.count, options.engine)
    if problem is not None:
        print(f"error: {problem}", file=err)
        return EXIT_INVALID
    try:
        check_out(options.out, options.format)
        given = [options.events, options.workload, options.schema, *options.queries]
        letters_problem = _letters_problem(options)
        if letters_problem is not None:
            raise SurfaceError(letters_problem)
        check_outputs(
            given, [("--out", options.out), ("--stats", shed.stats), ("--dead-letters", options.dead_letters)]
        )
        events_format(options.events)  # a wrong --events path fails before the queries are parsed
        inputs = _inputs(options)
        sketch = shed.sketch_problem(inputs.schema)
        if sketch is not None:
            raise SurfaceError(sketch)
        chunks = event_chunks(options.events, inputs.schema, inputs.lateness)
        with _letters_file(options.dead_letters) as letters, _sink(options, inputs, out) as sink:
            tally = LetterTally(LoadTally(options.events), letters, options.dead_letters)
            if options.engine == "reference":
                outcome = _by_reference(options, inputs, chunks, tally, sink)
            else:
                outcome = _by_engine(options, shed, inputs, chunks, (tally, sink), err)
    except BrokenPipeError:
        raise  # the reader went away (``| head``): see main
    except OSError as exc:
        print(f"error: {exc.filename}: {exc.strerror}", file=err)
        return EXIT_INVALID
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    if options.count:
        for name, n in outcome.per_query.items():
            print(json.dumps({"query": name, "count": n}), file=out)
    print(tally.summary(), file=err)
    counts = ", ".join(f"{name}={n}" for name, n in outcome.per_query.items())
    print(f"matches: {counts}; {outcome.footer}", file=err)
    if outcome.summary:
        print(outcome.summary, file=err)  # the run summary per query, after the totals
    return EXIT_OK


def _inputs(options: MatchOptions) -> _Inputs:
    """The workload's queries, schema and lateness, or the query files' over the schema."""
    if options.workload is not None:
        workload = load_workload(options.workload)
        queries: list[tuple[str, Any]] = [(q.name, q.checked) for q in workload.queries]
        return _Inputs(workload.schema, queries, workload.allowed_lateness, workload)
    assert options.schema is not None
    schema, queries = schema_and_queries(options.schema, options.queries)
    return _Inputs(schema, queries, options.allowed_lateness or 0, None)


def _by_reference(options: MatchOptions, inputs: _Inputs, chunks: Iterator[Any], tally: Any, sink: Any) -> _Outcome:
    """The reference oracle's matches over the whole file."""
    from ..builder import tenants_of
    from ..events.loaders import collect
    from ..reference import evaluate

    batch, report = collect(chunks, options.events)
    tally.add(report)
    result = evaluate(inputs.queries, batch, allowed_lateness=inputs.lateness)
    tenants = tenants_of(inputs.workload)
    found = [Match(m.query, m.start, m.end, m.events, m.vars, tenants.get(m.query), m.deadline) for m in result.matches]
    if not options.count:
        sink.write(inputs.to_write(found, options.limit, ordered=False))
    footer = f"conditions out of their math domain: {result.domain_errors}"
    if result.pending:
        footer += f"; trailing absences still pending at the end of the input: {_pending(result.pending)}"
    return _Outcome({name: len(result.per_query[name]) for name, _ in inputs.queries}, footer)


def _by_engine(
    options: MatchOptions, shed: ShedOptions, inputs: _Inputs, chunks: Iterator[Any], to: tuple[Any, Any], err: TextIO
) -> _Outcome:
    """The engine's matches, chunk by chunk, shedding to the bound if one is given; ``to``: the tally and the sink."""
    from ..api import Detector
    from ..builder import DetectorBuilder, DetectorConfig

    lateness = inputs.lateness
    first, chunks = _first_rows(chunks) if shed.bounded else (None, chunks)  # no rows: nothing to shed
    if shed.bounded and shed.shedder is None:
        print(f"note: no --shedder: the bound of {shed.bound} is judged, not enforced (nothing is shed)", file=err)
    settings = DetectorConfig(
        shedder=shed.shedder if first is not None else None, seed=shed.seed, bound=shed.bound,
        sketch_attributes=shed.sketch_attributes, capacity=shed.capacity, count_only=options.count,
    )  # fmt: skip
    builder = DetectorBuilder(
        inputs.schema, inputs.queries, settings, workload=inputs.workload, allowed_lateness=lateness
    )
    shed = replace(shed, capacity=builder.capacity)  # the workload's, unless --capacity
    reference_ms, config = None, None
    if first is not None:

        def reread() -> Iterator[Any]:
            return (b for b, _ in event_chunks(options.events, inputs.schema, lateness))

        if builder.needs_reference:
            reference_ms = reference_latency(shed, builder.plan, first[0], reread, lateness)
        config = builder.shed_config(reference_ms)
        warn_floors(shed, builder.plan, config, first[0], err, lateness)
    judged = builder.judged_bounds(reference_ms)
    detector = Detector.from_builder(
        builder,
        with_events=options.with_events,
        reference_ms=reference_ms,
        shed_config=config,
        record_latency=shed.stats is not None or shed.bounded or judges(judged, shed),
        record_service=False,  # the summary reads the queue log, whose memory does not grow
        pace=shed.pace,
        check_floor=False,  # said above (warn_floors)
    )
    left = _write(options, inputs, detector, chunks, *to, err)
    return _engine_outcome(options, shed, detector, judged, left)


def _write(
    options: MatchOptions, inputs: _Inputs, detector: Detector, chunks: Any, tally: Any, sink: Any, err: TextIO
) -> int | None:
    """Feed the chunks and write their matches as the engine enumerates
    them, in order, up to the limit; the matches the limit has left."""
    # matches go to JSON Lines without Match objects (Detector.feed_lines), several queries' with each
    # query's rank to order one end's lines by (Detector.feed_ranked_lines)
    as_lines = not options.with_events and sink.lines and not options.count
    alerts = detector if options.with_events else None
    writer = _Writer(inputs, sink, options.limit, as_lines, _Crowding(detector, err), alerts)
    ranks = writer.order if as_lines and len(inputs.queries) > 1 else None

    def feed(batch: Any, quota: int | None, emit: Any) -> Any:
        if ranks is not None:
            return detector.feed_ranked_lines(batch, ranks, quota=quota, emit=emit)
        return (detector.feed_lines if as_lines else detector.feed)(batch, quota=quota, emit=emit)

    for batch, report in chunks:
        if writer.left is not None and writer.left <= 0 and not options.count:
            break
        tally.add(report)
        quota = writer.left if not options.count else None  # matches still wanted: the engine stops at them
        feed(batch, quota=quota, emit=writer.take)
        writer.end_chunk()
    return writer.left


class _Crowding:
    """Warns, once, when an event completes more matches of one query than
    the engine enumerates at once (``engine.runtime.EVENT_BLOCK``)."""

    def __init__(self, detector: Detector, err: TextIO) -> None:
        self.engine = detector.engine
        self.err = err
        self.warned = False

    def check(self) -> None:
        """Warn if an event has been crowded since the run began."""
        if self.warned or not self.engine.crowded_events:
            return
        from ..engine.runtime import EVENT_BLOCK

        self.warned = True
        print(
            f"warning: the event at position {self.engine.crowded_at} completes more than {EVENT_BLOCK:,} "
            f"matches of one query: they are written as they are enumerated, {EVENT_BLOCK:,} at a time, each "
            "block in order of start (not the whole event's)\n"
            "  hint: --limit N stops after N matches; --count counts them without writing them",
            file=self.err,
        )


class _Writer:
    """Writes the matches the engine emits as it goes (``Detector.feed``
    with ``emit``): in end order, and at one end by query as given, then
    start and events (the reference's order; one query's come so), at most
    ``left`` of them (None: all). Only the matches of the latest end are
    held back, as another query group may still add to it. With
    ``as_lines`` and several queries, they come as (end, rank, line)
    (``Detector.feed_ranked_lines``), one end's and one query's already by
    start and events: ordered by (end, rank), kept in their order within."""

    def __init__(
        self,
        inputs: _Inputs,
        sink: Any,
        left: int | None,
        as_lines: bool,
        crowding: _Crowding,
        alerts: Detector | None = None,
    ) -> None:
        self.sink = sink
        self.alerts = alerts
        self.crowding = crowding
        self.left = left
        self.as_lines = as_lines
        self.ordered = len(inputs.queries) == 1
        self.order = {name: i for i, (name, _) in enumerate(inputs.queries)}
        self.held: list[Any] = []
        from ..engine.runtime import EVENT_BLOCK

        # the most matches of one end held back to be ordered by query: more
        # only when some query's are crowded (warned), and they are then written as they come
        self.most = EVENT_BLOCK * len(inputs.queries)

    def take(self, found: list[Any]) -> None:
        """Write what the engine emitted (matches, or their lines), holding back the latest end's."""
        self.crowding.check()
        if self.ordered:
            self._put(found)
            return
        if not found:
            return
        pending = self.held + found if self.held else found
        end_of = _RANKED_END if self.as_lines else _MATCH_END
        last, cut = end_of(pending[-1]), len(pending)
        while cut and end_of(pending[cut - 1]) == last:
            cut -= 1
        self.held = pending[cut:]
        if cut:
            self._put(self._sorted(pending[:cut]))
        if len(self.held) > self.most:
            self._flush()

    def end_chunk(self) -> None:
        """A chunk is done: no later match ends where its matches do."""
        self._flush()

    def _flush(self) -> None:
        held, self.held = self.held, []
        if held:
            self._put(self._sorted(held))

    def _sorted(self, found: list[Any]) -> list[Any]:
        """Matches by end, query as given, start and events; ranked lines by (end, rank), as they came within."""
        if self.as_lines:
            return sorted(found, key=_RANK)
        return _sorted(found, self.order)

    def _put(self, found: list[Any]) -> None:
        if self.left is not None:
            found = found[: max(self.left, 0)]
            self.left -= len(found)
        if not found:
            return
        if self.alerts is not None:  # --with-events: the feed's events are at hand while it runs
            self.sink.write(self.alerts.alerts(found), self.alerts.flat_alerts(found))
        elif self.as_lines and not self.ordered:
            self.sink.write_lines([line for _, _, line in found])
        else:
            (self.sink.write_lines if self.as_lines else self.sink.write)(found)


_RANKED_END = operator.itemgetter(0)
_RANK = operator.itemgetter(0, 1)
_MATCH_END = operator.attrgetter("end")


def _sorted(found: list[Any], order: dict[str, int]) -> list[Any]:
    """Matches by end, then by query as given, start and events (the reference's order within an end)."""
    return sorted(found, key=lambda m: (m.end, order[m.query], m.start, m.events))


def engine_summary(engine: Any) -> str:
    """Which engine ran the query groups: ``engine.native.engine_line``, with how many ran compiled."""
    from ..engine.native import available, engine_line  # numpy loads after main() set its threads

    line = engine_line()
    if not available():
        return line
    compiled = sum(r.core is not None for r in engine.runners)
    groups = len(engine.runners)
    return f"engine: compiled core (Cython C++) for {compiled} of {groups} query groups, pure Python for the rest"


def _engine_outcome(options: MatchOptions, shed: ShedOptions, detector: Any, judged: Any, left: int | None) -> _Outcome:
    """The engine's figures for the footer, the run summary and the ``--stats`` file."""
    stats = detector.stats()
    footer = (
        f"conditions out of their math domain: {stats['domain_errors']}; "
        f"cost units per event: {stats['units_per_event']:.1f}; "
        f"determinization cache hit rate: {stats['cache_hit_rate']:.1%}; "
        f"events skipped in bulk: {stats['events_skipped']} of "
        f"{stats['events_skipped'] + stats['events_processed']} (per query group); "
        f"{engine_summary(detector.engine)}"
    )
    shedder = detector.shedder
    if shedder is not None:
        footer += "; " + shed_footer(shed.shedder, detector.summary())
    summary = summary_table(detector) if shedder is not None or judges(judged, shed) else ""
    if shed.stats is not None:
        write_atomic(shed.stats, json.dumps(shed_stats(detector, shed), indent=2))
    if detector.engine.crowded_events:
        from ..engine.runtime import EVENT_BLOCK

        footer += f"; events with more than {EVENT_BLOCK:,} matches of one query: {detector.engine.crowded_events}"
    if left == 0 and options.limit:
        footer += f"; stopped after --limit {options.limit} matches"
    if stats["pending_absences"]:
        footer += f"; trailing absences still pending at the end of the input: {_pending(stats['pending_absences'])}"
    return _Outcome(detector.counts, footer, summary)


def _letters_problem(options: MatchOptions) -> str | None:
    """What is wrong with ``--dead-letters``'s path: a file to write, not an
    input (``check_outputs`` then compares it with every input)."""
    if options.dead_letters is None:
        return None
    return file_problem(options.dead_letters, "--dead-letters")


@contextmanager
def _letters_file(path: str | None) -> Iterator[LetterWriter | None]:
    """The ``--dead-letters`` writer (None without the flag)."""
    if path is None:
        yield None
        return
    with atomic_output(path) as temporary, open(temporary, "w", encoding="utf-8") as stream:
        yield LetterWriter(stream)


def _first_rows(chunks: Iterator[Any]) -> tuple[Any, Iterator[Any]]:
    """The first chunk with rows (None if none: an empty file, a header
    alone, only bad rows), and every chunk, those read to find it included
    (their reports count)."""
    head = []
    for chunk in chunks:
        head.append(chunk)
        if len(chunk[0]):
            return chunk, itertools.chain(head, chunks)
    return None, iter(head)


@contextmanager
def _sink(options: MatchOptions, inputs: _Inputs, out: TextIO) -> Iterator[Any]:
    """Where the matches go: nowhere (``--count``), ``out``, or ``--out``
    through a temporary file renamed onto it at the end (``outputs``); as
    alerts with their events with ``--with-events``."""
    from ..sinks import AlertSink, open_sink, out_format

    if options.count:
        yield _no_sink()
        return
    kind = out_format(options.out, options.format)

    def opened(path: str | None) -> Any:
        if not options.with_events:
            return open_sink(path, out, kind)
        kinds: dict[str, str] = {}  # each attribute's type; "" where event types disagree
        for event in inputs.schema.event_types():
            for name, given in event.attributes.items():
                kinds[name] = given if kinds.get(name, given) == given else ""
        return AlertSink(path, out, kinds, kind)

    if options.out is None:
        with opened(None) as sink:
            yield sink
    else:
        with atomic_output(options.out) as temporary, opened(str(temporary)) as sink:
            yield sink


def _pending(pending: dict[str, int]) -> str:
    """``q1: 3, q2: 0``: alerts whose deadline event time had not passed."""
    return ", ".join(f"{name}: {n}" for name, n in pending.items())


def shed_footer(name: str | None, summaries: dict[str, dict[str, Any]]) -> str:
    """What the shedder cut, by lever: input events (for the floor: while an
    event's wait and update alone passed a bound; by the policy: its own
    input shedding), partial matches and enumerations cut short.

    >>> shed = {"events_shed_for_floor": 3, "events_shed_by_group": 0}
    >>> rows = {"q": {"cuts": {"partial_matches": 0, "enumerations_cut_short": 7}, "shedder": shed}}
    >>> shed_footer("truncate", rows)  # doctest: +NORMALIZE_WHITESPACE
    'cut by truncate: 3 input events while the wait and update alone passed a bound, 0 by its policy
    (per query group); 0 partial matches; 7 enumerations cut short'
    """
    reports = [row.get("shedder", {}) for row in summaries.values()]
    # input is shed per query group: its queries report the same events (one group here, the most otherwise)
    floor = max((r.get("events_shed_for_floor", 0) for r in reports), default=0)
    policy = max((r.get("events_shed_by_group", 0) for r in reports), default=0)
    pms = sum(row["cuts"]["partial_matches"] for row in summaries.values())
    walks = sum(row["cuts"]["enumerations_cut_short"] for row in summaries.values())
    return (
        f"cut by {name}: {floor} input events while the wait and update alone passed a bound, {policy} by its "
        f"policy (per query group); {pms} partial matches; {walks} enumerations cut short"
    )


def _no_sink() -> Any:
    """A sink that takes nothing (``--count``)."""
    from ..sinks import MatchSink

    return MatchSink(io.StringIO())
