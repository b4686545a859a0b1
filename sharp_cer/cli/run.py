"""``sharp-cer run WORKLOAD --events PATH``: run a workload on Spark
(batch): matches to files, a summary per query and tenant, a plot over
time."""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .._extras import check as check_extras
from ..errors import SharpCerError
from ..language import Workload, load_workload
from .arguments import SHEDDER_NAMES, at_least
from .exits import EXIT_INVALID, EXIT_OK, lost_worker
from .inputs import events_problem
from .outputs import atomic_output, check_outputs, write_atomic


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


def add_parser(sub: Any) -> None:
    """The ``run`` command's flags."""
    run_spark = sub.add_parser("run", help="run a workload over events on Spark (batch)")
    run_spark.add_argument("workload", metavar="WORKLOAD", help="the workload (.toml)")
    run_spark.add_argument("--events", metavar="PATH", help=".csv, .jsonl or .parquet events (a file or a folder)")
    run_spark.add_argument(
        "--generate",
        type=at_least(0),
        default=0,
        metavar="N",
        help="instead of --events: N events of the workload's generator",
    )
    run_spark.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    run_spark.add_argument("--out", default="out/run", metavar="DIR", help="where matches and the summary go")
    run_spark.add_argument("--format", choices=["parquet", "jsonl", "console"], default="parquet")
    run_spark.add_argument(
        "--shedder",
        choices=sorted(SHEDDER_NAMES),
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


def options(args: argparse.Namespace) -> RunOptions:
    """The options of a parsed ``run`` command line."""
    return RunOptions(
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


def execute(options: RunOptions, out: TextIO, err: TextIO) -> int:
    """Run ``run``."""
    return run(options, out, err)


def run(options: RunOptions, out: TextIO, err: TextIO) -> int:
    """Run a workload over events on Spark: write the matches (and the dead
    letters) to ``options.out`` as Parquet or JSON lines, or show them on
    the console; print the summary (matches per query and tenant, shedding,
    latency against the bounds) and write it as JSON, with a PNG of matches
    and latency over the stream."""
    try:
        check_extras(["pyspark", "matplotlib"], "sharp-cer run")
        workload = load_workload(options.workload)
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    problem = _problem(options, workload)
    if problem is not None:
        print(problem, file=err)
        return EXIT_INVALID
    from ..spark.session import spark_session

    settings = dict(item.partition("=")[::2] for item in options.conf)
    if any(not key or not value for key, value in settings.items()):
        print("error: --conf takes KEY=VALUE, such as spark.executor.memory=4g", file=err)
        return EXIT_INVALID
    target = Path(options.out)
    plot = Path(options.plot) if options.plot else target / "latency.png"
    try:
        outputs = [("--plot", str(plot)), ("the summary", str(target / "summary.json"))]
        check_outputs([options.workload, options.events], outputs)
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    target.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    spark = spark_session(options.master, log=str(target / "spark.log"), **settings)
    started = time.perf_counter()
    try:
        summary = _detect(options, workload, spark, target, err)
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    except (BrokenPipeError, ConnectionResetError) as exc:  # PySpark's connection to a worker broke
        return lost_worker(exc, target / "spark.log", err)
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
    write_atomic(str(target / "summary.json"), json.dumps(summary.to_json(), indent=2))
    if plot.suffix:
        with atomic_output(str(plot)) as temporary:
            summary.plot(str(temporary))
    else:
        summary.plot(str(plot))
    where = "" if options.format == "console" else f"matches -> {target / 'matches'} ({options.format}); "
    print(f"  {where}summary -> {target / 'summary.json'}; plot -> {plot}", file=out)
    return EXIT_OK


def _problem(options: RunOptions, workload: Workload) -> str | None:
    """What is wrong with the input, checked before Spark starts: a mistyped path costs no JVM."""
    if (options.events is None) == (options.generate <= 0):
        return "error: give --events PATH, or --generate N to run over the workload's generated events"
    if options.generate and not workload.generator:
        return f"error: workload {workload.name} names no generator\n  hint: give --events PATH"
    from ..spark.prepare import format_of

    problem = None if options.events is None else events_problem(options.events, folder=True)
    if problem is None and options.events is not None:
        try:
            format_of(options.events)
        except SharpCerError as exc:
            problem = str(exc)
    return problem


def _detect(options: RunOptions, workload: Workload, spark: Any, target: Path, err: TextIO) -> Any:
    """Run the detection on Spark with a progress bar on ``err``; its summary."""
    from ..spark.pipeline import run_detection
    from ..spark.progress import Progress

    if options.events is not None:
        events: Any = options.events
    else:
        from ..events.generators import generate

        events = spark.createDataFrame(generate(workload.generator or "", options.generate, seed=options.seed))
    detection = run_detection(
        events, workload, spark=spark, shedder=options.shedder, seed=options.seed, method=options.method
    )
    with Progress(spark, detection.prepared.rows, err):
        return complete(detection, target, "", options.format)


def as_jsonl(folder: Path) -> None:
    """Name the JSON lines files Spark wrote into a local ``folder``
    ``.jsonl`` (Spark names them ``.json``), as ``--format jsonl`` says.

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "part-00000-x.json").write_text("{}\\n"), (folder / "_SUCCESS").write_text("")
    >>> as_jsonl(folder); sorted(p.name for p in folder.iterdir())
    ['_SUCCESS', 'part-00000-x.jsonl']
    """
    if not folder.is_dir():
        return  # not a local folder (a cluster's file system): left as Spark named them
    for part in folder.glob("part-*.json"):
        part.rename(part.with_suffix(".jsonl"))


def complete(detection: Any, target: Path, prefix: str, format: str) -> Any:
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
        if format == "jsonl":
            as_jsonl(target / f"{prefix}matches")
        letters = detection.dead_letters
        if letters.limit(1).count():
            letters.write.mode("overwrite").json(str(target / f"{prefix}dead_letters"))
            if format == "jsonl":
                as_jsonl(target / f"{prefix}dead_letters")
        return detection.summary()
    finally:
        detection.close()
