"""``sharp-cer match``: the matches of a workload, or of queries over a
schema, over an events file, written chunk by chunk as JSON lines (or to a
file), or counted."""

from __future__ import annotations

import argparse
import io
import itertools
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..errors import SharpCerError
from ..events.match import Match
from ..language import Schema, Workload, load_workload
from .arguments import SHEDDER_NAMES, add_latency_arguments, at_least, bound_option
from .exits import EXIT_INVALID, EXIT_OK
from .inputs import event_chunks, schema_and_queries
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
        return None


def add_parser(sub: Any) -> None:
    """The ``match`` command's flags."""
    run_match = sub.add_parser(
        "match",
        help="write the matches of a workload or of queries over an events file (JSON lines)",
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
        help="write matches to FILE.jsonl, FILE.csv or FILE.parquet (default: stdout, JSON lines)",
    )
    run_match.add_argument(
        "--allowed-lateness",
        type=at_least(0),
        metavar="NS",
        help="without a workload: how far (ns) an event's time may fall behind the latest before it is late",
    )
    run_match.add_argument(
        "--count", action="store_true", help="print the number of matches per query, counted without enumerating"
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


@dataclass(frozen=True)
class MatchCommand:
    """A parsed ``match`` command line: what to match, and the shedding asked for."""

    match: MatchOptions
    shed: ShedOptions


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
    )
    return MatchCommand(asked, shed)


def execute(options: MatchCommand, out: TextIO, err: TextIO) -> int:
    """Run ``match`` (a closed pipe, ``| head``, ends in ``main``)."""
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
    from ..sinks import check_out, open_sink

    shed = shed or ShedOptions()
    problem = options.problem() or shed.problem(options.count, options.engine)
    if problem is not None:
        print(f"error: {problem}", file=err)
        return EXIT_INVALID
    try:
        check_out(options.out)
        inputs = _inputs(options)
        chunks = event_chunks(options.events, inputs.schema, inputs.lateness)
        tally = LoadTally(options.events)
        with open_sink(options.out, out) if not options.count else _no_sink() as sink:
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
    result = evaluate(inputs.queries, batch)
    tenants = tenants_of(inputs.workload)
    found = [Match(m.query, m.start, m.end, m.events, m.vars, tenants.get(m.query)) for m in result.matches]
    if not options.count:
        sink.write(inputs.to_write(found, options.limit, ordered=False))
    footer = f"conditions out of their math domain: {result.domain_errors}"
    return _Outcome({name: len(result.per_query[name]) for name, _ in inputs.queries}, footer)


def _by_engine(
    options: MatchOptions, shed: ShedOptions, inputs: _Inputs, chunks: Iterator[Any], to: tuple[Any, Any], err: TextIO
) -> _Outcome:
    """The engine's matches, chunk by chunk, shedding to the bound if one is given; ``to``: the tally and the sink."""
    from ..api import Detector
    from ..builder import DetectorBuilder, DetectorConfig

    lateness = inputs.lateness
    first = next(chunks, None) if shed.bounded else None  # an empty file sheds nothing
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
        chunks = itertools.chain([first], chunks)

        def reread() -> Iterator[Any]:
            return (b for b, _ in event_chunks(options.events, inputs.schema, lateness))

        if builder.needs_reference:
            reference_ms = reference_latency(shed, builder.plan, first[0], reread, lateness)
        config = builder.shed_config(reference_ms)
        warn_floors(shed, builder.plan, config, first[0], err, lateness)
    judged = builder.judged_bounds(reference_ms)
    detector = Detector.from_builder(
        builder,
        reference_ms=reference_ms,
        shed_config=config,
        record_latency=shed.stats is not None or shed.bounded or judges(judged, shed),
        record_service=False,  # the summary reads the queue log, whose memory does not grow
        pace=shed.pace,
        check_floor=False,  # said above (warn_floors)
    )
    left = _write(options, inputs, detector, chunks, *to)
    return _engine_outcome(options, shed, detector, judged, left)


def _write(
    options: MatchOptions, inputs: _Inputs, detector: Detector, chunks: Any, tally: Any, sink: Any
) -> int | None:
    """Feed the chunks and write their matches in order, up to the limit; the matches the limit has left."""
    left = options.limit
    # one query's matches go to JSON Lines without Match objects (Detector.feed_lines)
    as_lines = sink.lines and len(inputs.queries) == 1 and not options.count
    for batch, report in chunks:
        if left is not None and left <= 0 and not options.count:
            break
        tally.add(report)
        quota = left if not options.count else None  # matches still wanted: the engine stops at them
        chunk: list[Any] = (detector.feed_lines if as_lines else detector.feed)(batch, quota=quota)
        # one query's come in order (Engine.process)
        chunk = inputs.to_write(chunk, left, ordered=len(inputs.queries) == 1)
        if left is not None:
            left -= len(chunk)
        (sink.write_lines if as_lines else sink.write)(chunk)
    return left


def _engine_outcome(options: MatchOptions, shed: ShedOptions, detector: Any, judged: Any, left: int | None) -> _Outcome:
    """The engine's figures for the footer, the run summary and the ``--stats`` file."""
    stats = detector.stats()
    footer = (
        f"conditions out of their math domain: {stats['domain_errors']}; "
        f"cost units per event: {stats['units_per_event']:.1f}; "
        f"determinization cache hit rate: {stats['cache_hit_rate']:.1%}; "
        f"events skipped in bulk: {stats['events_skipped']} of "
        f"{stats['events_skipped'] + stats['events_processed']} (per query group)"
    )
    shedder = detector.shedder
    if shedder is not None:
        footer += "; " + shed_footer(shed.shedder, detector.summary())
    summary = summary_table(detector) if shedder is not None or judges(judged, shed) else ""
    if shed.stats is not None:
        Path(shed.stats).write_text(json.dumps(shed_stats(detector, shed), indent=2))
    if left == 0 and options.limit:
        footer += f"; stopped after --limit {options.limit} matches"
    return _Outcome(detector.counts, footer, summary)


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
