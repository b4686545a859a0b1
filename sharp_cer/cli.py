"""The ``sharp-cer`` command line.

``sharp-cer check FILE...`` validates query files (``.ceql``), schema files
(``.core``) and workloads (``.toml``): exit 0 when all are valid (warnings on
stderr), exit 2 with located errors otherwise.

``sharp-cer explain`` compiles a workload (or queries) and prints what the
plan shares: groups, PSD clusters, states, transitions and predicates with
and without sharing (``--json``, ``--dot``, ``--png``).

``sharp-cer run WORKLOAD --events PATH`` runs a workload on Spark (batch):
matches to files, a summary per query and tenant, a plot over time.

``sharp-cer demo`` is the main job: it checks the example workloads of
``configs/``, prints what they contain, generates their data and runs them
on local Spark.
"""

from __future__ import annotations

import argparse
import gc
import io
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from .errors import SharpCerError, SurfaceError
from .events.match import Match
from .language import LatencyBound, Schema, Workload, load_workload, parse_and_check
from .language.files import read_source
from .language.printer import window as window_text
from .language.source import Source

EXIT_OK = 0
#: the shedders of ``shedding.SHEDDERS``, named here so that the CLI starts
#: without importing the engine (a test keeps the two lists equal)
_SHEDDER_NAMES = (
    "sharp",
    "sharp-instance",
    "random-input",
    "random-state",
    "selectivity",
    "darling",
    "hybrid",
    "truncate",
)
EXIT_INVALID = 2


def check_files(files: Sequence[str], schema_file: str | None, out: TextIO, err: TextIO) -> int:
    """Check each file; print ``ok`` lines to ``out`` and problems to ``err``.

    Returns the exit code: 0 when every file is valid, 2 otherwise.
    """
    paths = [Path(f) for f in files]
    failed = False
    schema: Schema | None = None
    schema_paths = [Path(schema_file)] if schema_file else [p for p in paths if p.suffix == ".core"][:1]
    if schema_paths:
        try:
            schema = Schema.parse(read_source(schema_paths[0], "schema"), str(schema_paths[0]))
        except SharpCerError as exc:
            print(exc, file=err)
            return EXIT_INVALID
    for path in paths:
        try:
            if path.suffix == ".toml":
                workload = load_workload(path)
                for warning in workload.warnings():
                    print(warning, file=err)
                print(
                    f"ok {path}: workload {workload.name}, {len(workload.queries)} queries, "
                    f"{len(workload.tenants)} tenants",
                    file=out,
                )
            elif path.suffix == ".core":
                parsed = Schema.parse(read_source(path, "schema"), str(path))
                print(f"ok {path}: {len(parsed.event_types())} event types", file=out)
            elif path.suffix == ".ceql":
                if schema is None:
                    print(
                        f"{path}: error: no schema to check the query against\n"
                        "  hint: pass --schema FILE.core, or name a .core file among the files",
                        file=err,
                    )
                    failed = True
                    continue
                text = read_source(path, "query")
                checked = parse_and_check(text, schema, source=Source(text, str(path)))
                for query_warning in checked.warnings:
                    print(query_warning, file=err)
                print(f"ok {path}", file=out)
            else:
                print(
                    f"{path}: error: unknown kind of file '{path.suffix or path.name}'\n"
                    "  expected: .ceql (one query), .core (CREATE STREAM declarations) or .toml (a workload)",
                    file=err,
                )
                failed = True
        except SharpCerError as exc:
            print(exc, file=err)
            failed = True
    return EXIT_INVALID if failed else EXIT_OK


def demo(configs: Path, out_dir: Path, events: int, out: TextIO, err: TextIO, master: str | None = None) -> int:
    """Check every workload in ``configs``, generate its data into
    ``out_dir``, and run it on local Spark: print each summary (and the
    in-process engine's figures beside it) and draw matches and latency
    over the stream into ``out_dir/NAME.png``."""
    from .events.generators import generate, write_core_csv

    files = sorted(configs.glob("*.toml"))
    if not files:
        print(
            f"{configs}: error: no workloads (*.toml) found\n  hint: run from the repository root "
            "or pass --configs DIR",
            file=err,
        )
        return EXIT_INVALID
    out_dir.mkdir(parents=True, exist_ok=True)
    generated: list[tuple[Path, Workload, Path, dict[str, int], float]] = []
    for path in files:
        start = time.perf_counter()
        try:
            workload = load_workload(path)
        except SharpCerError as exc:
            print(exc, file=err)
            return EXIT_INVALID
        checked_at = time.perf_counter()
        print(f"\n== {workload.name} ({path}) — {workload.description}", file=out)
        print(
            f"   {len(workload.queries)} queries, tenants: {', '.join(workload.tenants)}; "
            f"checked in {1000 * (checked_at - start):.1f} ms",
            file=out,
        )
        header = f"   {'query':<22} {'tenant':<18} {'weight':>6} {'strategy':<8} {'window':<22} shed"
        print(header, file=out)
        for q in workload.queries:
            query = q.checked.query
            win = window_text(query.within) if query.within else "-"
            print(
                f"   {q.name:<22} {q.tenant:<18} {q.weight:>6g} {query.effective_strategy:<8} "
                f"{win:<22} {'yes' if q.shed else 'no'}",
                file=out,
            )
        for warning in workload.warnings():
            print(warning, file=err)
        if workload.generator:
            frame = generate(workload.generator, events, seed=0)
            attributes = {e.name: list(e.attributes) for e in workload.schema.event_types()}
            target = out_dir / f"{path.stem}.csv"
            write_core_csv(frame, attributes, target)
            counts = frame["type"].value_counts().sort_index()
            summary = ", ".join(f"{k}={v}" for k, v in counts.items())
            print(f"   generated {len(frame)} events -> {target} ({summary})", file=out)
            found, rate = _detect(workload, frame)
            generated.append((path, workload, target, found, rate))
    if generated:
        try:
            _demo_on_spark(generated, out_dir, master, out)
        except (BrokenPipeError, ConnectionResetError) as exc:
            return _lost_worker(exc, out_dir / "spark.log", err)
    print(
        "\nEvery workload is valid and ran on Spark, one engine per lane and key group, with the"
        "\nin-process engine as the yardstick. `sharp-cer run WORKLOAD --events FILE` runs your own;"
        "\n`sharp-cer explain WORKLOAD` shows the shared plan; `--shedder NAME` sheds to the bounds.",
        file=out,
    )
    return EXIT_OK


def _lost_worker(exc: OSError, log: Path, err: TextIO) -> int:
    """PySpark's connection to a Python worker broke: one line that says where Spark's own account is."""
    print(f"error: Spark lost a worker's connection ({exc})\n  hint: see {log}", file=err)
    return EXIT_INVALID


def _detect(workload: Workload, frame: Any) -> tuple[dict[str, int], float]:
    """The matches per query of a workload over its generated events,
    in-process, and the events per second."""
    from .api import Detector

    detector = Detector.from_workload(workload, history=False)
    began = time.perf_counter()
    detector.feed(frame)
    return detector.counts, len(frame) / (time.perf_counter() - began)


def _demo_on_spark(
    generated: list[tuple[Path, Workload, Path, dict[str, int], float]], out_dir: Path, master: str | None, out: TextIO
) -> None:
    """The demo's Spark part: each generated file through ``run_detection``."""
    from .spark.pipeline import run_detection
    from .spark.session import spark_session

    began = time.perf_counter()
    spark = spark_session(master, log=str(out_dir / "spark.log"))
    print(
        f"\n== Spark {spark.version} on {spark.sparkContext.master} (up in {time.perf_counter() - began:.1f} s)",
        file=out,
    )
    for path, workload, events, in_process, rate in generated:
        started = time.perf_counter()
        summary = _complete(run_detection(str(events), workload, spark=spark), out_dir, f"{path.stem}_", "parquet")
        seconds = time.perf_counter() - started
        plot = out_dir / f"{path.stem}.png"
        summary.plot(str(plot))
        same = {q.name: q.matches for q in summary.queries} == in_process
        print("\n" + summary.render(), file=out)
        print(
            f"  Spark: {summary.rows / seconds:,.0f} events/s ({seconds:.1f} s); "
            f"in-process engine: {rate:,.0f} events/s; same matches per query: {'yes' if same else 'NO'}"
            f"\n  plot -> {plot}",
            file=out,
        )


def _schema_and_queries(schema_file: str, query_files: Sequence[str]) -> tuple[Schema, list[tuple[str, Any]]]:
    """A .core schema and the .ceql queries checked against it, each named
    by its file's stem (two files of one stem are refused: their matches
    would merge under one name)."""
    stems: dict[str, str] = {}
    for q in query_files:
        other = stems.setdefault(Path(q).stem, q)
        if other != q:
            raise SurfaceError(
                f"{q}: error: two query files named {Path(q).stem!r}\n"
                f"  expected: one query file per name (a query is named by its file's stem)\n"
                f"  found: {other} and {q}\n  hint: rename one of them"
            )
    schema = Schema.parse(read_source(Path(schema_file), "schema"), schema_file)
    queries = []
    for q in query_files:
        text = read_source(Path(q), "query")
        queries.append((Path(q).stem, parse_and_check(text, schema, source=Source(text, q))))
    return schema, queries


_FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl", ".parquet": "parquet"}


def _event_chunks(events_file: str, schema: Schema, allowed_lateness: int = 0) -> Iterator[tuple[Any, Any]]:
    """The batches and load reports of an events file, chunk by chunk."""
    from .events.loaders import iter_csv, iter_jsonl, iter_parquet

    problem = _events_problem(events_file, folder=False)
    if problem is not None:
        raise SurfaceError(problem)
    kind = _FORMATS.get(Path(events_file).suffix)
    if kind is None:
        raise SurfaceError(f"{events_file}: error: unknown events format\n  expected: .csv, .jsonl or .parquet")
    if kind == "csv":
        return iter_csv(events_file, schema, allowed_lateness=allowed_lateness)
    if kind == "jsonl":
        return iter_jsonl(events_file, schema, allowed_lateness=allowed_lateness)
    return iter_parquet(events_file, schema, allowed_lateness=allowed_lateness)


def _load_events(events_file: str, schema: Schema) -> Any:
    """The whole batch of an events file."""
    from .events.loaders import collect

    return collect(_event_chunks(events_file, schema), events_file)[0]


def _events_problem(path: str, *, folder: bool) -> str | None:
    """What is wrong with an ``--events`` path before anything reads it: a
    missing file, or a folder where one file is needed."""
    p = Path(path)
    if not p.exists():
        return f"{path}: error: no such events file{' or folder' if folder else ''}\n  hint: check the --events path"
    if p.is_dir() and not folder:
        return f"{path}: error: a folder, not an events file\n  hint: give one .csv, .jsonl or .parquet file"
    return None


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
        from .engine.queueing import Pace

        return Pace(rate=self.rate, speed=self.speed) if self.rate or self.speed else None


def latency_bound(text: str) -> LatencyBound:
    """``--latency-bound``: ``250ms``, ``2s``, a number of cost units or ``40%``.

    >>> latency_bound("250ms").milliseconds, latency_bound("40%").fraction, latency_bound("500").cost_units
    (250.0, 0.4, 500.0)
    """
    try:
        return LatencyBound.parse(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a latency bound: give milliseconds (250ms), cost units (500) or a fraction (40%)"
        ) from None


def _shedder(
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
    from sharp_cer.shedding import ShedConfig, make_shedder
    from sharp_cer.shedding.bounds import floor_warnings, resolve_bounds, unshedded_latency

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
    return make_shedder(options.shedder, config)


def _judges(bounds: tuple[dict[str, float], dict[str, float]] | None, options: ShedOptions) -> bool:
    """Whether a run without a shedder judges the workload's ``bounds``:
    when it has some, and the events arrive at a pace or are served at a
    capacity (else the latency is the chunks' reading time)."""
    return bool(bounds and any(bounds)) and (options.pace is not None or options.capacity is not None)


def _summary_table(detector: Any) -> str:
    """The run summary per query (``latency_summary.render``)."""
    from .latency_summary import render

    return render(detector.summary())


def _shed_stats(detector: Any, options: ShedOptions) -> dict[str, Any]:
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


def match(options: MatchOptions, out: TextIO, err: TextIO, shedding: ShedOptions | None = None) -> int:
    """Run queries over an events file, chunk by chunk: write each chunk's
    matches, in order of their end, as JSON lines on ``out`` (or to
    ``options.out``), or with ``count`` one line per query with its number
    of matches. Memory holds one chunk and the engine's live state.

    ``engine`` is ``core`` (the engine) or ``reference`` (the brute-force
    oracle, for small inputs: it reads the whole file); summaries go to
    ``err``. ``shedding`` bounds every query's latency and writes statistics
    (see ``ShedOptions``); a fraction bound reads the events twice.
    """
    from .events.batch import LoadTally
    from .sinks import check_out, open_sink

    shedding = shedding or ShedOptions()
    problem = options.problem() or shedding.problem(options.count, options.engine)
    if problem is not None:
        print(f"error: {problem}", file=err)
        return EXIT_INVALID
    try:
        check_out(options.out)
        if options.workload is not None:
            workload = load_workload(options.workload)
            schema, lateness = workload.schema, workload.allowed_lateness
            queries: list[tuple[str, Any]] = [(q.name, q.checked) for q in workload.queries]
            tenants = {q.name: q.tenant for q in workload.queries}
        else:
            assert options.schema is not None
            schema, queries = _schema_and_queries(options.schema, options.queries)
            lateness, tenants, workload = options.allowed_lateness or 0, {}, None
        chunks = _event_chunks(options.events, schema, lateness)
        tally = LoadTally(options.events)
        summary = ""
        order = {name: i for i, (name, _) in enumerate(queries)}

        def in_order(found: list[Any]) -> list[Any]:
            # by end, then by query as given, start and events (the reference's order within an end)
            return sorted(found, key=lambda m: (m.end, order[m.query], m.start, m.events))

        with open_sink(options.out, out) if not options.count else _no_sink() as sink:
            left = options.limit
            if options.engine == "reference":
                from .events.loaders import collect
                from .reference import evaluate

                batch, report = collect(chunks, options.events)
                tally.add(report)
                result = evaluate(queries, batch)
                found = [Match(m.query, m.start, m.end, m.events, m.vars, tenants.get(m.query)) for m in result.matches]
                if not options.count:
                    sink.write(in_order(found)[:left])
                footer = f"conditions out of their math domain: {result.domain_errors}"
                per_query = {name: len(result.per_query[name]) for name, _ in queries}
            else:
                from sharp_cer.planner import compile_plan

                from .api import Detector

                plan = compile_plan(queries, counting=options.count)
                if shedding.capacity is None and workload is not None and workload.capacity is not None:
                    shedding = replace(shedding, capacity=workload.capacity)
                shedder, judged = None, None
                if workload is not None and not shedding.bounded:
                    from sharp_cer.shedding.bounds import judged_bounds

                    judged = judged_bounds(workload)  # without a shedder, the workload's bounds are still judged
                if shedding.bounded:
                    first = next(chunks, None)
                    if first is not None:
                        chunks = itertools.chain([first], chunks)

                        def reread() -> Iterator[Any]:
                            return (b for b, _ in _event_chunks(options.events, schema, lateness))

                        shedder = _shedder(shedding, plan, first[0], reread, err, workload, lateness)
                detector = Detector(
                    plan,
                    schema,
                    count_only=options.count,
                    shedder=shedder,
                    record_latency=shedding.stats is not None or shedding.bounded or _judges(judged, shedding),
                    record_service=False,  # the summary reads the queue log, whose memory does not grow
                    allowed_lateness=lateness,
                    tenants=tenants,
                    capacity=shedding.capacity,
                    pace=shedding.pace,
                    bounds=judged,
                )
                # one query's matches go to JSON Lines without Match objects (Detector.feed_lines)
                as_lines = sink.lines and len(queries) == 1 and not options.count
                for batch, report in chunks:
                    if left is not None and left <= 0 and not options.count:
                        break
                    tally.add(report)
                    quota = left if not options.count else None  # matches still wanted
                    chunk: list[Any] = (detector.feed_lines if as_lines else detector.feed)(batch, quota=quota)
                    if len(queries) > 1:
                        chunk = in_order(chunk)  # one query's come in that order (Engine.process)
                    if left is not None:
                        chunk = chunk[:left]
                        left -= len(chunk)
                    (sink.write_lines if as_lines else sink.write)(chunk)
                per_query = detector.counts
                stats = detector.stats()
                footer = (
                    f"conditions out of their math domain: {stats['domain_errors']}; "
                    f"cost units per event: {stats['units_per_event']:.1f}; "
                    f"determinization cache hit rate: {stats['cache_hit_rate']:.1%}; "
                    f"events skipped in bulk: {stats['events_skipped']} of "
                    f"{stats['events_skipped'] + stats['events_processed']} (per group)"
                )
                if shedder is not None:
                    footer += f"; shed by {shedding.shedder}: {stats['events_shed']} events (per group)"
                if shedder is not None or _judges(judged, shedding):
                    summary = _summary_table(detector)
                if shedding.stats is not None:
                    Path(shedding.stats).write_text(json.dumps(_shed_stats(detector, shedding), indent=2))
                if left == 0 and options.limit:
                    footer += f"; stopped after --limit {options.limit} matches"
    except BrokenPipeError:
        raise  # the reader went away (``| head``): see main
    except OSError as exc:
        print(f"error: {exc.filename}: {exc.strerror}", file=err)
        return EXIT_INVALID
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    if options.count:
        for name, n in per_query.items():
            print(json.dumps({"query": name, "count": n}), file=out)
    print(tally.summary(), file=err)
    counts = ", ".join(f"{name}={n}" for name, n in per_query.items())
    print(f"matches: {counts}; {footer}", file=err)
    if summary:
        print(summary, file=err)  # the run summary per query, after the totals
    return EXIT_OK


def _no_sink() -> Any:
    """A sink that takes nothing (``--count``)."""
    from .sinks import MatchSink

    return MatchSink(io.StringIO())


def explain_plan(
    files: Sequence[str],
    schema_file: str | None,
    *,
    as_json: bool,
    dot_file: str | None,
    png_file: str | None,
    events_file: str | None,
    generate: int | None,
    out: TextIO,
    err: TextIO,
) -> int:
    """Compile a workload (or .ceql queries over a schema), run it once over
    events when there are any (an events file, or the workload's generator),
    and print what the plan shares (``sharp_cer.planner.explain``); optionally write
    its graphs as DOT and PNG."""
    import numpy as np

    from sharp_cer.planner import compile_plan
    from sharp_cer.planner.explain import draw, explain, render, to_dot

    from .events.loaders import load_pandas

    if events_file is not None and generate is not None:
        print("error: give --events FILE or --generate N, not both", file=err)
        return EXIT_INVALID
    generate = 20_000 if generate is None else generate
    try:
        generator: str | None = None
        if len(files) == 1 and files[0].endswith(".toml") and schema_file is None:
            workload = load_workload(files[0])
            schema, generator = workload.schema, workload.generator
            queries = [(q.name, q.checked) for q in workload.queries]
        else:
            if schema_file is None or not all(f.endswith(".ceql") for f in files):
                print(
                    "error: explain takes one WORKLOAD.toml, or --schema FILE.core with QUERY.ceql files\n"
                    f"  got: {' '.join(files)}" + ("" if schema_file else " (and no --schema)"),
                    file=err,
                )
                return EXIT_INVALID
            schema, queries = _schema_and_queries(schema_file, files)
        began = time.perf_counter()
        plan = compile_plan(queries)
        planned = time.perf_counter() - began
        batch = None
        if events_file:
            batch = _load_events(events_file, schema)
        elif generator and generate > 0:
            from .events.generators import generate as generate_events

            batch, _ = load_pandas(generate_events(generator, generate, seed=0), schema)
        run = None
        if batch is not None:
            from .api import Detector

            detector = Detector(plan, schema, history=False)
            detector.feed(batch)
            stats = detector.stats()
            counts = np.bincount(batch.codes, minlength=len(batch.event_types))
            run = {
                "events": len(batch),
                "matches": sum(stats["matches"].values()),
                "deterministic_states": stats["deterministic_states"],
                "cache_hit_rate": stats["cache_hit_rate"],
                "prefix_states": stats["prefix_states"],
                "events_per_type": {
                    f"{e.stream}.{e.name}": int(n) for e, n in zip(batch.event_types, counts, strict=True)
                },
            }
        figures = explain(plan, run)
        figures["planning_seconds"] = planned
        if dot_file:
            Path(dot_file).write_text(to_dot(plan))
        if png_file:
            draw(plan, png_file)
    except OSError as exc:  # reading the inputs or writing --dot / --png
        print(f"error: {exc.filename}: {exc.strerror}", file=err)
        return EXIT_INVALID
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    print(json.dumps(figures) if as_json else render(figures), file=out)
    return EXIT_OK


@dataclass(frozen=True)
class RunOptions:
    """What ``sharp-cer run`` was asked for."""

    workload: str
    events: str | None
    generate: int = 0
    master: str | None = None
    out: str = "out/run"
    format: str = "parquet"
    shedder: str | None = None
    seed: int = 0
    method: str = "udtf"
    plot: str | None = None
    conf: tuple[str, ...] = ()


def stream(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Run a workload over a folder of arriving files on Spark streaming;
    print the summary (engine latency in cost units, end-to-end latency in
    ms) and write it to OUT/summary.json beside the output's Parquet files."""
    from .spark.session import spark_session
    from .spark.stream import StreamSettings, run_stream, stream_conf
    from .spark.stream_group import check_live_bounds

    try:
        workload = load_workload(args.workload)
        settings = StreamSettings(
            args.trigger, args.max_files, args.watermark_ms, args.shedder, args.seed, format=args.format
        )
        settings.delay_ms(workload)  # refuse a delay under the lateness before starting Spark
        check_live_bounds(workload, settings.shedder)  # and a fraction bound to shed to
        if not Path(args.source).is_dir():
            raise SurfaceError(f"{args.source}: error: no such folder\n  hint: --source is the folder files arrive in")
        Path(args.out).mkdir(parents=True, exist_ok=True)
        spark = spark_session(args.master, log=str(Path(args.out, "spark.log")), **stream_conf())
        summary = run_stream(
            workload, args.source, args.checkpoint, args.out, settings, spark, args.timeout, progress=err
        )
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    except (BrokenPipeError, ConnectionResetError) as exc:  # PySpark's connection to a worker broke
        return _lost_worker(exc, Path(args.out, "spark.log"), err)
    print(summary.render(), file=out)
    Path(args.out, "summary.json").write_text(json.dumps(summary.to_json(), indent=2))
    return EXIT_OK


def run(options: RunOptions, out: TextIO, err: TextIO) -> int:
    """Run a workload over events on Spark: write the matches (and the dead
    letters) to ``options.out`` as Parquet or JSON lines, or show them on
    the console; print the summary (matches per query and tenant, shedding,
    latency against the bounds) and write it as JSON, with a PNG of matches
    and latency over the stream."""
    try:
        workload = load_workload(options.workload)
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    if (options.events is None) == (options.generate <= 0):
        print("error: give --events PATH, or --generate N to run over the workload's generated events", file=err)
        return EXIT_INVALID
    if options.generate and not workload.generator:
        print(f"error: workload {workload.name} names no generator\n  hint: give --events PATH", file=err)
        return EXIT_INVALID
    from .spark.prepare import format_of

    # the input is checked before Spark starts: a mistyped path costs no JVM
    problem = None if options.events is None else _events_problem(options.events, folder=True)
    if problem is None and options.events is not None:
        try:
            format_of(options.events)
        except SharpCerError as exc:
            problem = str(exc)
    if problem is not None:
        print(problem, file=err)
        return EXIT_INVALID
    from .spark.pipeline import run_detection
    from .spark.progress import Progress
    from .spark.session import spark_session

    settings = dict(item.partition("=")[::2] for item in options.conf)
    if any(not key or not value for key, value in settings.items()):
        print("error: --conf takes KEY=VALUE, such as spark.executor.memory=4g", file=err)
        return EXIT_INVALID
    target = Path(options.out)
    target.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    spark = spark_session(options.master, log=str(target / "spark.log"), **settings)
    started = time.perf_counter()
    try:
        if options.events is not None:
            events: Any = options.events
        else:
            from .events.generators import generate

            events = spark.createDataFrame(generate(workload.generator or "", options.generate, seed=options.seed))
        detection = run_detection(
            events, workload, spark=spark, shedder=options.shedder, seed=options.seed, method=options.method
        )
        with Progress(spark, detection.prepared.rows, err):
            summary = _complete(detection, target, "", options.format)
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    except (BrokenPipeError, ConnectionResetError) as exc:  # PySpark's connection to a worker broke
        return _lost_worker(exc, target / "spark.log", err)
    except OSError as exc:
        print(f"error: {exc.filename}: {exc.strerror}", file=err)
        return EXIT_INVALID
    seconds = time.perf_counter() - started
    print(summary.render(), file=out)
    print(
        f"  {summary.rows:,} events in {seconds:.1f} s on {spark.sparkContext.master} "
        f"({summary.rows / seconds:,.0f} events/s; Spark started in {started - began:.1f} s)",
        file=out,
    )
    (target / "summary.json").write_text(json.dumps(summary.to_json(), indent=2))
    plot = Path(options.plot) if options.plot else target / "latency.png"
    summary.plot(str(plot))
    where = "" if options.format == "console" else f"matches -> {target / 'matches'} ({options.format}); "
    print(f"  {where}summary -> {target / 'summary.json'}; plot -> {plot}", file=out)
    return EXIT_OK


def _complete(detection: Any, target: Path, prefix: str, format: str) -> Any:
    """Run a Spark detection once: write its matches to ``target/PREFIXmatches``
    as Parquet or JSON lines (or show some on the console) and its dead
    letters, if any, to ``target/PREFIXdead_letters``; return its summary and
    release what it kept."""
    detection.persist()  # the matches and the summary come from one run of the engines
    try:
        if format == "console":
            detection.matches.orderBy("end", "query", "start").show(20, truncate=False)
            return detection.summary()
        writer = detection.matches.write.mode("overwrite")
        (writer.parquet if format == "parquet" else writer.json)(str(target / f"{prefix}matches"))
        letters = detection.dead_letters
        if letters.limit(1).count():
            letters.write.mode("overwrite").json(str(target / f"{prefix}dead_letters"))
        return detection.summary()
    finally:
        detection.close()


def _at_least(lowest: int) -> Callable[[str], int]:
    """An argparse type: an integer no smaller than ``lowest``.

    >>> _at_least(1)("3"), _at_least(0)("0")
    (3, 0)
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
        if value < lowest:
            raise argparse.ArgumentTypeError(f"expected an integer of at least {lowest}, found {value}")
        return value

    return parse


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sharp-cer", description="Complex event recognition for many tenants.")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate query, schema and workload files")
    check.add_argument("files", nargs="+", metavar="FILE", help=".ceql, .core or .toml files")
    check.add_argument("--schema", metavar="FILE", help="the .core schema for .ceql files")
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
        type=_at_least(1),
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
        type=_at_least(0),
        metavar="NS",
        help="without a workload: how far (ns) an event's time may fall behind the latest before it is late",
    )
    run_match.add_argument(
        "--count", action="store_true", help="print the number of matches per query, counted without enumerating"
    )
    _latency_arguments(run_match)
    run_match.add_argument(
        "--shedder", choices=sorted(_SHEDDER_NAMES), default="sharp", help="how to shed load (default: sharp)"
    )
    run_match.add_argument("--seed", type=int, default=0, help="seed of the shedder's random choices")
    run_match.add_argument(
        "--sketch-attribute", action="append", default=[], metavar="NAME", help="attribute the sketch buckets"
    )
    run_match.add_argument("--stats", metavar="FILE", help="write per-query matches, shedding and latency as JSON")
    run_explain = sub.add_parser("explain", help="show what a plan shares: groups, prefix graph, PSD, figures")
    run_explain.add_argument("files", nargs="+", metavar="FILE", help="one WORKLOAD.toml, or QUERY.ceql files")
    run_explain.add_argument("--schema", metavar="FILE", help="the .core schema for .ceql files")
    run_explain.add_argument("--json", action="store_true", help="print one JSON object")
    run_explain.add_argument("--dot", metavar="FILE", help="write the shared-prefix graphs as Graphviz DOT")
    run_explain.add_argument("--png", metavar="FILE", help="draw the shared-prefix graphs into a PNG")
    run_explain.add_argument("--events", metavar="FILE", help="run once over these events (.csv, .jsonl, .parquet)")
    run_explain.add_argument(
        "--generate",
        type=_at_least(0),
        metavar="N",
        help="without --events, run over N events of the workload's generator (default 20,000; 0: no run)",
    )
    run_spark = sub.add_parser("run", help="run a workload over events on Spark (batch)")
    run_spark.add_argument("workload", metavar="WORKLOAD", help="the workload (.toml)")
    run_spark.add_argument("--events", metavar="PATH", help=".csv, .jsonl or .parquet events (a file or a folder)")
    run_spark.add_argument(
        "--generate",
        type=_at_least(0),
        default=0,
        metavar="N",
        help="instead of --events: N events of the workload's generator",
    )
    run_spark.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    run_spark.add_argument("--out", default="out/run", metavar="DIR", help="where matches and the summary go")
    run_spark.add_argument("--format", choices=["parquet", "jsonl", "console"], default="parquet")
    run_spark.add_argument(
        "--shedder",
        choices=sorted(_SHEDDER_NAMES),
        help="shed load per key group to the workload's bounds; a fraction bound (40%%) is of the key group's mean "
        "latency in an unshedded run: its events are held, then run twice, unshedded and shedding, as arriving at once",
    )
    run_spark.add_argument("--seed", type=int, default=0, help="seed of the shedder (and of --generate)")
    run_spark.add_argument(
        "--method", choices=["udtf", "map"], default="udtf", help="Arrow UDTF per key, or the mapInArrow fallback"
    )
    run_spark.add_argument("--plot", metavar="FILE", help="the PNG of matches and latency (default DIR/latency.png)")
    run_spark.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting (repeatable)"
    )
    run_stream = sub.add_parser("stream", help="run a workload over files arriving in a folder (Spark streaming)")
    run_stream.add_argument("workload", metavar="WORKLOAD", help="the workload (.toml)")
    run_stream.add_argument("--source", required=True, metavar="DIR", help="the folder .csv or .jsonl files arrive in")
    run_stream.add_argument("--checkpoint", required=True, metavar="DIR", help="state and progress (restart from it)")
    run_stream.add_argument("--out", required=True, metavar="DIR", help="where matches, dead letters and figures go")
    run_stream.add_argument(
        "--trigger", type=float, metavar="SECONDS", help="a micro-batch every SECONDS (default: all files, then stop)"
    )
    run_stream.add_argument("--timeout", type=float, metavar="SECONDS", help="with --trigger: stop after SECONDS")
    run_stream.add_argument("--max-files", type=int, metavar="N", help="at most N new files per micro-batch")
    run_stream.add_argument("--watermark-ms", type=int, metavar="MS", help="watermark delay (default lateness + 2 ms)")
    run_stream.add_argument("--format", choices=["csv", "jsonl"], help="the files' format (default: by their suffix)")
    run_stream.add_argument(
        "--shedder",
        choices=sorted(_SHEDDER_NAMES),
        help="shed load to the workload's bounds, in ms or cost units (a live stream has no unshedded run to take "
        "a fraction bound of: refused)",
    )
    run_stream.add_argument("--seed", type=int, default=0, help="seed of the shedder")
    run_stream.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    run_demo = sub.add_parser("demo", help="check the example workloads and generate their data")
    run_demo.add_argument("--configs", type=Path, default=Path("configs"), help="folder of workloads")
    run_demo.add_argument("--out", type=Path, default=Path("out/demo"), help="where data goes")
    run_demo.add_argument("--events", type=int, default=20_000, help="events per workload")
    run_demo.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    return parser


def _latency_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of latency as users feel it: the bound, how events arrive, the engine's capacity."""
    bound = parser.add_mutually_exclusive_group()
    bound.add_argument(
        "--latency-bound",
        type=latency_bound,
        metavar="BOUND",
        help="every query's bound from an event's arrival to its matches, queueing included: "
        "250ms, cost units (500), or 40%% of the unshedded mean latency (a fraction reads the events file twice)",
    )
    bound.add_argument(
        "--latency-bound-fraction",
        type=float,
        metavar="F",
        help="every query's bound as a fraction of its mean latency in an unshedded run (--latency-bound F*100%%; "
        "reads the events file twice: once unshedded, once shedding)",
    )
    pace = parser.add_mutually_exclusive_group()
    pace.add_argument("--rate", type=float, metavar="EVENTS_PER_S", help="the events arrive at this fixed rate")
    pace.add_argument(
        "--replay-speed", type=float, metavar="X", help="the events arrive at their primary time, X times as fast"
    )
    parser.add_argument(
        "--capacity",
        type=float,
        metavar="UNITS_PER_S",
        help="serve this many cost units per second (deterministic, reproducible); default: the workload's "
        "capacity, else wall time",
    )


def _bound_option(args: argparse.Namespace) -> LatencyBound | None:
    """The bound of ``--latency-bound`` or ``--latency-bound-fraction`` (exit 2 on a bad fraction)."""
    if args.latency_bound_fraction is None:
        given: LatencyBound | None = args.latency_bound
        return given
    fraction = args.latency_bound_fraction
    if not 0 < fraction <= 1:
        _parser().error(f"--latency-bound-fraction must be in (0, 1], not {fraction:g}")
    return LatencyBound(fraction=fraction)


#: the exit code of a command whose reader closed the pipe (``| head``): 128 + SIGPIPE, as a Unix tool's
EXIT_PIPE_CLOSED = 141
#: the exit code of a command stopped by Ctrl-C: 128 + SIGINT, as a Unix tool's
EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sharp-cer`` console script: ``argv`` None reads
    the process's own arguments, and the process ends after the call."""
    if argv is None:
        # numpy starts OpenBLAS's thread pool as it is imported (here, later,
        # by the command), and sharp-cer does no linear algebra: one thread
        # saves ~40-80 ms of CPU per process, ~6 ms of a 3,000-row match's
        # wall time on a quiet machine, ~45 ms on a busy one. A value the
        # user set stays.
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        code = _command(argv)
        sys.stdout.flush()
    except BrokenPipeError:
        # the reader stopped reading: what it did not read goes nowhere, without a traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = EXIT_PIPE_CLOSED
    except KeyboardInterrupt:
        # Ctrl-C, without a traceback: output files were closed by their
        # ``with`` blocks on the way out
        print("sharp-cer: stopped by Ctrl-C; the matches written so far stand", file=sys.stderr)
        code = EXIT_INTERRUPTED
    if argv is None:
        # The process ends next, and Python's teardown runs full cycle
        # collections over every object still alive (after a match, ~60k:
        # numpy's, pyarrow's, the modules'), ~20 ms of a 0.2 s run. Frozen
        # objects are left to the teardown itself: streams are flushed and
        # closed, atexit handlers and thread joins run, as before; the
        # outputs were closed by their ``with`` blocks already.
        gc.freeze()
    return code


def _command(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "check":
        return check_files(args.files, args.schema, sys.stdout, sys.stderr)
    if args.command == "match":
        shedding = ShedOptions(
            bound=_bound_option(args),
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
        return match(asked, sys.stdout, sys.stderr, shedding)  # a closed pipe (``| head``) ends in main
    if args.command == "explain":
        return explain_plan(
            args.files,
            args.schema,
            as_json=args.json,
            dot_file=args.dot,
            png_file=args.png,
            events_file=args.events,
            generate=args.generate,
            out=sys.stdout,
            err=sys.stderr,
        )
    if args.command == "run":
        options = RunOptions(
            args.workload,
            args.events,
            args.generate,
            args.master,
            args.out,
            args.format,
            args.shedder,
            args.seed,
            args.method,
            args.plot,
            tuple(args.conf),
        )
        return run(options, sys.stdout, sys.stderr)
    if args.command == "stream":
        return stream(args, sys.stdout, sys.stderr)
    if args.command == "demo":
        return demo(args.configs, args.out, args.events, sys.stdout, sys.stderr, args.master)
    return EXIT_INVALID  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
