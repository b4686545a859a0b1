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
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .errors import SharpCerError
from .language import LatencyBound, Schema, Workload, load_workload, parse_and_check
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


def _read(path: Path, err: TextIO) -> str | None:
    try:
        return path.read_text()
    except OSError as exc:
        print(f"{path}: error: cannot read file: {exc.strerror}", file=err)
        return None


def check_files(files: Sequence[str], schema_file: str | None, out: TextIO, err: TextIO) -> int:
    """Check each file; print ``ok`` lines to ``out`` and problems to ``err``.

    Returns the exit code: 0 when every file is valid, 2 otherwise.
    """
    paths = [Path(f) for f in files]
    failed = False
    schema: Schema | None = None
    schema_paths = [Path(schema_file)] if schema_file else [p for p in paths if p.suffix == ".core"][:1]
    if schema_paths:
        text = _read(schema_paths[0], err)
        if text is None:
            return EXIT_INVALID
        try:
            schema = Schema.parse(text, str(schema_paths[0]))
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
                text = _read(path, err)
                if text is None:
                    failed = True
                    continue
                parsed = Schema.parse(text, str(path))
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
                text = _read(path, err)
                if text is None:
                    failed = True
                    continue
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
        _demo_on_spark(generated, out_dir, master, out)
    print(
        "\nEvery workload is valid and ran on Spark, one engine per lane and key group, with the"
        "\nin-process engine as the yardstick. `sharp-cer run WORKLOAD --events FILE` runs your own;"
        "\n`sharp-cer explain WORKLOAD` shows the shared plan; `--shedder NAME` sheds to the bounds.",
        file=out,
    )
    return EXIT_OK


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
    spark = spark_session(master)
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
    """A .core schema and the .ceql queries checked against it, each named by its file's stem."""
    schema = Schema.parse(Path(schema_file).read_text(), schema_file)
    queries = []
    for q in query_files:
        text = Path(q).read_text()
        queries.append((Path(q).stem, parse_and_check(text, schema, source=Source(text, q))))
    return schema, queries


def _load_events(events_file: str, schema: Schema, err: TextIO) -> tuple[Any, Any] | None:
    """The batch and load report of an events file, or None (said on ``err``) for an unknown format."""
    from .events.loaders import load_csv, load_jsonl, load_parquet

    loaders = {".csv": load_csv, ".jsonl": load_jsonl, ".json": load_jsonl, ".parquet": load_parquet}
    loader = loaders.get(Path(events_file).suffix)
    if loader is None:
        print(f"{events_file}: error: unknown events format\n  expected: .csv, .jsonl or .parquet", file=err)
        return None
    return loader(events_file, schema)


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
            if value is not None and not value > 0:
                return f"{flag} must be a positive number, not {value:g}"
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


def _shedder(options: ShedOptions, plan: Any, batch: Any, err: TextIO) -> Any:
    """The shedder the options ask for, with every query bounded; a bound
    below the update floor is said on ``err`` before the run."""
    from shedding import ShedConfig, make_shedder
    from shedding.bounds import floor_warnings, resolve_bounds, unshedded_latency

    names = [q.name for q in plan.queries]
    bound = options.bound
    assert bound is not None
    reference_ms = None
    if bound.fraction is not None:
        reference_ms = unshedded_latency(plan, [batch], [options.pace.arrivals(batch)], options.capacity)
    units, ms = resolve_bounds(dict.fromkeys(names, bound), reference_ms=reference_ms)
    attributes = dict.fromkeys(names, options.sketch_attributes)
    config = ShedConfig(bounds=units, bounds_ms=ms, sketch_attributes=attributes, seed=options.seed)
    sample = batch.take(list(range(min(len(batch), 2000))))
    at = options.pace.arrivals(sample) if options.pace is not None else None
    for line in floor_warnings(plan, config, sample, options.capacity, at):
        print(f"warning: {line}", file=err)
    return make_shedder(options.shedder, config)


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


def match(
    schema_file: str,
    query_files: Sequence[str],
    events_file: str,
    engine: str,
    limit: int | None,
    out: TextIO,
    err: TextIO,
    count: bool = False,
    shedding: ShedOptions | None = None,
) -> int:
    """Run queries over an events file; print one JSON match per line on
    ``out``, or with ``count`` one line per query with its number of matches.

    ``engine`` is ``core`` (the engine) or ``reference`` (the brute-force
    oracle, for small inputs); summaries go to ``err``. ``shedding`` bounds
    every query's latency and writes statistics (see ``ShedOptions``).
    """
    shedding = shedding or ShedOptions()
    problem = shedding.problem(count, engine)
    if problem is not None:
        print(f"error: {problem}", file=err)
        return EXIT_INVALID
    try:
        schema, queries = _schema_and_queries(schema_file, query_files)
        loaded = _load_events(events_file, schema, err)
        if loaded is None:
            return EXIT_INVALID
        batch, report = loaded
        if engine == "reference":
            from .reference import evaluate

            result = evaluate(queries, batch)
            matches, footer = result.matches, f"conditions out of their math domain: {result.domain_errors}"
            per_query = {name: len(result.per_query[name]) for name, _ in queries}
        else:
            from planner import compile_plan

            from .api import Detector

            plan = compile_plan(queries, counting=count)
            shedder = _shedder(shedding, plan, batch, err) if shedding.bounded else None
            detector = Detector(
                plan,
                schema,
                count_only=count,
                shedder=shedder,
                record_latency=shedding.stats is not None or shedding.bounded,
                capacity=shedding.capacity,
                pace=shedding.pace,
            )
            order = {name: i for i, (name, _) in enumerate(queries)}
            # the reference's order: by query as given, then by end, start and events
            matches = sorted(detector.feed(batch), key=lambda m: (order[m.query], m.end, m.start, m.events))
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
                footer += "\n" + _summary_table(detector)
            if shedding.stats is not None:
                Path(shedding.stats).write_text(json.dumps(_shed_stats(detector, shedding), indent=2))
    except OSError as exc:
        print(f"error: cannot read {exc.filename}: {exc.strerror}", file=err)
        return EXIT_INVALID
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    if count:
        for name, n in per_query.items():
            print(json.dumps({"query": name, "count": n}), file=out)
    else:
        for m in matches[:limit]:
            print(m.to_json(), file=out)
    print(report.summary(), file=err)
    counts = ", ".join(f"{name}={n}" for name, n in per_query.items())
    print(f"matches: {counts}; {footer}", file=err)
    return EXIT_OK


def explain_plan(
    files: Sequence[str],
    schema_file: str | None,
    *,
    as_json: bool,
    dot_file: str | None,
    png_file: str | None,
    events_file: str | None,
    generate: int,
    out: TextIO,
    err: TextIO,
) -> int:
    """Compile a workload (or .ceql queries over a schema), run it once over
    events when there are any (an events file, or the workload's generator),
    and print what the plan shares (``planner.explain``); optionally write
    its graphs as DOT and PNG."""
    import numpy as np

    from planner import compile_plan
    from planner.explain import draw, explain, render, to_dot

    from .events.loaders import load_pandas

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
            loaded = _load_events(events_file, schema, err)
            if loaded is None:
                return EXIT_INVALID
            batch = loaded[0]
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

    try:
        workload = load_workload(args.workload)
        settings = StreamSettings(
            args.trigger, args.max_files, args.watermark_ms, args.shedder, args.seed, format=args.format
        )
        settings.delay_ms(workload)  # refuse a delay under the lateness before starting Spark
        spark = spark_session(args.master, **stream_conf())
        summary = run_stream(workload, args.source, args.checkpoint, args.out, settings, spark, args.timeout)
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
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
    spark = spark_session(options.master, **settings)
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sharp-cer", description="Complex event recognition for many tenants.")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate query, schema and workload files")
    check.add_argument("files", nargs="+", metavar="FILE", help=".ceql, .core or .toml files")
    check.add_argument("--schema", metavar="FILE", help="the .core schema for .ceql files")
    run_match = sub.add_parser("match", help="print the matches of queries over an events file (JSON lines)")
    run_match.add_argument("--schema", required=True, metavar="FILE", help="the .core schema")
    run_match.add_argument("--query", required=True, action="append", metavar="FILE", help=".ceql file (repeatable)")
    run_match.add_argument("--events", required=True, metavar="FILE", help=".csv, .jsonl or .parquet events")
    run_match.add_argument("--engine", choices=["core", "reference"], default="core")
    run_match.add_argument("--limit", type=int, default=None, metavar="N", help="print at most N matches")
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
        type=int,
        default=20_000,
        metavar="N",
        help="without --events, run over N events of the workload's generator (0: no run)",
    )
    run_spark = sub.add_parser("run", help="run a workload over events on Spark (batch)")
    run_spark.add_argument("workload", metavar="WORKLOAD", help="the workload (.toml)")
    run_spark.add_argument("--events", metavar="PATH", help=".csv, .jsonl or .parquet events (a file or a folder)")
    run_spark.add_argument(
        "--generate", type=int, default=0, metavar="N", help="instead of --events: N events of the workload's generator"
    )
    run_spark.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    run_spark.add_argument("--out", default="out/run", metavar="DIR", help="where matches and the summary go")
    run_spark.add_argument("--format", choices=["parquet", "jsonl", "console"], default="parquet")
    run_spark.add_argument("--shedder", choices=sorted(_SHEDDER_NAMES), help="shed load to the workload's bounds")
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
    run_stream.add_argument("--watermark-ms", type=int, metavar="MS", help="watermark delay (default lateness + 1 s)")
    run_stream.add_argument("--format", choices=["csv", "jsonl"], help="the files' format (default: by their suffix)")
    run_stream.add_argument("--shedder", choices=sorted(_SHEDDER_NAMES), help="shed load to the workload's bounds")
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
        "250ms, cost units (500), or 40%% of the unshedded mean latency",
    )
    bound.add_argument(
        "--latency-bound-fraction",
        type=float,
        metavar="F",
        help="every query's bound as a fraction of its mean latency in an unshedded run (--latency-bound F*100%%)",
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
        help="serve this many cost units per second (deterministic, reproducible); default: wall time",
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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sharp-cer`` console script."""
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
        return match(
            args.schema,
            args.query,
            args.events,
            args.engine,
            args.limit,
            sys.stdout,
            sys.stderr,
            count=args.count,
            shedding=shedding,
        )
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
