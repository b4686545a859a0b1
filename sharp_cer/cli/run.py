"""``sharp-cer run WORKLOAD --events PATH``: run a workload on Spark
(batch): matches to files, a summary per query and tenant, a plot over
time."""

from __future__ import annotations

import argparse
import json
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .._extras import check as check_extras
from ..errors import SharpCerError
from ..language import Workload, load_workload
from .arguments import SHEDDER_NAMES, at_least
from .exits import EXIT_INVALID, EXIT_OK, lost_worker
from .inputs import events_problem
from .outputs import (
    atomic_output,
    check_outputs,
    file_problem,
    folder_problem,
    make_folder,
    output_problem,
    overlap_problem,
    same_path,
    write_atomic,
)
from .parser import SUMMARIES
from .signals import SignalGuard, guarded, starting


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
    #: where every dead letter goes, one JSON line each (``letters``), besides OUT/dead_letters
    dead_letters: str | None = None
    #: record each event's latency for the summary and the plot (a shedder records it anyway)
    latency: bool = False


def add_parser(sub: Any) -> None:
    """The ``run`` command's flags."""
    run_spark = sub.add_parser("run", help=SUMMARIES["run"])
    run_spark.add_argument("workload", metavar="WORKLOAD", help="the workload (.toml)")
    run_spark.add_argument("--events", metavar="PATH", help=".csv, .jsonl or .parquet events (a file or a folder)")
    run_spark.add_argument(
        "--generate",
        type=at_least(1),
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
    run_spark.add_argument(
        "--dead-letters",
        metavar="FILE",
        help="also write every rejected row to FILE as a JSON line: file, line, column, kind, reason and raw text",
    )
    run_spark.add_argument(
        "--latency",
        action="store_true",
        help="record each event's latency (cost units and ms) for the summary and the plot, and count the events "
        "over each bound: more work per event (a --shedder records it anyway)",
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
        args.dead_letters,
        args.latency,
    )


def execute(options: RunOptions, out: TextIO, err: TextIO) -> int:
    """Run ``run``."""
    return run(options, out, err)


def run(options: RunOptions, out: TextIO, err: TextIO) -> int:
    """Run a workload over events on Spark: write the matches (and the dead
    letters) to ``options.out`` as Parquet or JSON lines, or show them on
    the console; print the summary (matches per query and tenant, shedding,
    latency against the bounds) and write it as JSON, with a PNG of matches
    and latency over the stream. SIGINT or SIGTERM stops it with one line
    (exit 130 or 143, see ``signals``)."""
    try:
        check_extras(["pyspark", "matplotlib"], "sharp-cer run")
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    return guarded(lambda guard: _run(options, out, err, guard), err, "before the run finished")


def _run(options: RunOptions, out: TextIO, err: TextIO, guard: SignalGuard) -> int:
    problem = flags_problem(options)
    if problem is not None:
        print(problem, file=err)
        return EXIT_INVALID
    try:
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
    try:
        target = make_folder(options.out, "--out")
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    plot = Path(options.plot) if options.plot else target / "latency.png"
    try:
        outputs = [("--plot", str(plot)), ("the summary", str(target / "summary.json"))]
        check_outputs([options.workload, options.events], [*outputs, ("--dead-letters", options.dead_letters)])
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    began = time.perf_counter()
    starting("run", options.master, str(target / "spark.log"), err)
    spark = guard.start(lambda: spark_session(options.master, log=str(target / "spark.log"), **settings))
    started = time.perf_counter()
    source = options.events if options.events is not None else f"{options.generate:,} generated events"
    print(f"Spark up in {started - began:.1f} s; running {workload.name} over {source}", file=err, flush=True)
    try:
        with guard.spark_calls(cancel=lambda: spark.sparkContext.cancelAllJobs()):
            summary = _detect(options, workload, spark, target, err)
            master = spark.sparkContext.master
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
        f"  {summary.rows:,} events in {seconds:.1f} s on {master} "
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
    letters = f"; dead letters -> {options.dead_letters}" if options.dead_letters is not None else ""
    print(f"  {where}summary -> {target / 'summary.json'}; plot -> {plot}{letters}", file=out)
    return EXIT_OK


def flags_problem(options: RunOptions) -> str | None:
    """What is wrong with the flags alone, checked before anything is read:
    ``--conf``'s shape, the output folder and the plot's file, none of them
    an input."""
    settings = dict(item.partition("=")[::2] for item in options.conf)
    if any(not key or not value for key, value in settings.items()):
        return "error: --conf takes KEY=VALUE, such as spark.executor.memory=4g"
    inputs = {} if options.events is None else {"--events": options.events}
    problem = folder_problem(options.out, "--out") or overlap_problem(options.out, "--out", inputs)
    if problem is None and options.events is not None:
        written = [Path(options.out, name) for name in ("matches", "dead_letters", "summary.json", "latency.png")]
        if any(same_path(options.events, str(w)) or w.resolve() in _resolved(options.events).parents for w in written):
            problem = (
                f"{options.events}: error: --events is where this run writes its output (--out {options.out})\n"
                "  expected: outputs apart from the inputs\n  hint: give another --out"
            )
    for path, flag in ((options.dead_letters, "--dead-letters"), (options.plot, "--plot")):
        if problem is None and path is not None:
            problem = file_problem(path, flag)
    if problem is None:  # the workload and the summary are compared once --out is made (``check_outputs``)
        problem = output_problem([options.events], [("--dead-letters", options.dead_letters), ("--plot", options.plot)])
    return problem


def _resolved(path: str) -> Path:
    return Path(path).resolve()


def _problem(options: RunOptions, workload: Workload) -> str | None:
    """What is wrong with the input, checked before Spark starts: a mistyped path costs no JVM."""
    if options.events is not None and options.generate:
        return "error: give --events PATH or --generate N, not both"
    if options.events is None and not options.generate:
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the floor's, said below
        detection = run_detection(
            events,
            workload,
            spark=spark,
            shedder=options.shedder,
            seed=options.seed,
            method=options.method,
            latency=options.latency,
        )
    for line in detection.floor_warnings:
        print(f"warning: {line}", file=err)
    source = options.events if options.events is not None else f"generated ({workload.generator})"
    with Progress(spark, detection.prepared.rows, err):
        return complete(detection, target, "", options.format, (options.dead_letters, source))


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


def complete(
    detection: Any, target: Path, prefix: str, format: str, letters: tuple[str | None, str] = (None, "")
) -> Any:
    """Run a Spark detection once: write its matches to ``target/PREFIXmatches``
    as Parquet or JSON lines (or show some on the console) and its dead
    letters, if any, to ``target/PREFIXdead_letters`` (and, ``letters``'
    file given, to it as JSON lines, of the second's events); return its
    summary and release what it kept."""
    # the matches, the dead letters and the summary come from one run of the engines (and of the
    # input's numbering): the first action keeps the output, which carries the dead letters too
    detection.persist()
    try:
        if format == "console":
            detection.matches.orderBy("end", "query", "start").show(20, truncate=False)
            if letters[0] is not None:
                _write_letters(detection.dead_letters, letters[0], letters[1])
            return detection.summary()
        writer = detection.matches.write.mode("overwrite")
        (writer.parquet if format == "parquet" else writer.json)(str(target / f"{prefix}matches"))
        if format == "jsonl":
            as_jsonl(target / f"{prefix}matches")
        summary = detection.summary()  # counts the dead letters too: no job of their own to learn if there are any
        rejected = detection.dead_letters
        if sum(summary.dead_letters.values()):
            rejected.write.mode("overwrite").json(str(target / f"{prefix}dead_letters"))
            if format == "jsonl":
                as_jsonl(target / f"{prefix}dead_letters")
        if letters[0] is not None:
            _write_letters(rejected, letters[0], letters[1])
        return summary
    finally:
        detection.close()


def _write_letters(rejected: Any, path: str, source: str) -> None:
    """The dead letters of a run to ``path``, one JSON line each, in the order of their lines."""
    from .letters import LetterWriter

    with open(path, "w", encoding="utf-8") as stream:
        writer = LetterWriter(stream)
        for row in rejected.orderBy("position").toLocalIterator():
            writer.write_record({**row.asDict(), "file": source})
