"""``sharp-cer stream WORKLOAD``: run a workload over files arriving in a
folder, on Spark structured streaming."""

from __future__ import annotations

import argparse
import importlib.util
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .._extras import check as check_extras
from ..errors import SharpCerError, SurfaceError
from ..language.workload_source import WorkloadSource
from .arguments import SHEDDER_NAMES, at_least, seconds_problem
from .exits import EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, lost_worker
from .outputs import atomic_output, file_problem, folder_problem, make_folder, overlap_problem, same_path, write_atomic
from .parser import SUMMARIES
from .signals import SignalGuard, guarded, starting


@dataclass(frozen=True)
class StreamOptions:
    """What ``sharp-cer stream`` was asked for: the workload, the folder
    files arrive in, the checkpoint and output folders, the micro-batches'
    trigger, size and watermark, the files' format, the shedder and the
    Spark master."""

    workload: str
    source: str
    checkpoint: str
    out: str
    trigger: float | None = None
    timeout: float | None = None
    max_files: int | None = None
    watermark_ms: int | None = None
    format: str | None = None
    shedder: str | None = None
    seed: int = 0
    master: str | None = None
    #: where every dead letter committed so far goes, one JSON line each (``letters``)
    dead_letters: str | None = None
    #: read the workload again when it changes (a file, or a folder of one .toml per tenant)
    watch: bool = False


def add_parser(sub: Any) -> None:
    """The ``stream`` command's flags."""
    run_stream = sub.add_parser("stream", help=SUMMARIES["stream"])
    run_stream.add_argument(
        "workload", metavar="WORKLOAD", help="the workload (.toml), or a folder of them (one per tenant)"
    )
    run_stream.add_argument("--source", required=True, metavar="DIR", help="the folder .csv or .jsonl files arrive in")
    run_stream.add_argument("--checkpoint", required=True, metavar="DIR", help="state and progress (restart from it)")
    run_stream.add_argument("--out", required=True, metavar="DIR", help="where matches, dead letters and figures go")
    run_stream.add_argument(
        "--trigger", type=float, metavar="SECONDS", help="a micro-batch every SECONDS (default: all files, then stop)"
    )
    run_stream.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop after SECONDS, at a micro-batch boundary"
    )
    run_stream.add_argument("--max-files", type=at_least(1), metavar="N", help="at most N new files per micro-batch")
    run_stream.add_argument(
        "--watermark-ms", type=at_least(0), metavar="MS", help="watermark delay (default lateness + 2 ms)"
    )
    run_stream.add_argument("--format", choices=["csv", "jsonl"], help="the files' format (default: by their suffix)")
    run_stream.add_argument(
        "--shedder",
        choices=sorted(SHEDDER_NAMES),
        help="shed load to the workload's bounds, in ms or cost units (a live stream has no unshedded run to take "
        "a fraction bound of: refused)",
    )
    run_stream.add_argument("--seed", type=int, default=0, help="seed of the shedder")
    run_stream.add_argument(
        "--watch",
        action="store_true",
        help="read WORKLOAD again when it changes (a file, or a folder of one .toml per tenant) and move the "
        "stream to it at the next micro-batch boundary; a bad change is refused and every query runs on",
    )
    run_stream.add_argument("--master", metavar="URL", help="Spark master (default local[*])")
    run_stream.add_argument(
        "--dead-letters",
        metavar="FILE",
        help="at the end, write every rejected row committed so far to FILE as a JSON line: file, line, column, "
        "kind, reason and raw text",
    )


def options(args: argparse.Namespace) -> StreamOptions:
    """The options of a parsed ``stream`` command line."""
    return StreamOptions(
        args.workload,
        args.source,
        args.checkpoint,
        args.out,
        trigger=args.trigger,
        timeout=args.timeout,
        max_files=args.max_files,
        watermark_ms=args.watermark_ms,
        format=args.format,
        shedder=args.shedder,
        seed=args.seed,
        master=args.master,
        dead_letters=args.dead_letters,
        watch=getattr(args, "watch", False),
    )


def execute(options: StreamOptions, out: TextIO, err: TextIO) -> int:
    """Run ``stream``."""
    return stream(options, out, err)


def stream(options: StreamOptions, out: TextIO, err: TextIO) -> int:
    """Run a workload over a folder of arriving files on Spark streaming;
    print the summary (engine latency in cost units, end-to-end latency in
    ms) and write it to OUT/summary.json beside the output's Parquet files,
    with OUT/latency.png (matches and latency per time bin, each query's
    bound in ms drawn) when matplotlib is installed.
    SIGINT or SIGTERM stops it at a micro-batch boundary, the summary
    printed: exit 130 after SIGINT, 0 after SIGTERM (see ``signals``)."""
    check_extras(["pyspark"], "sharp-cer stream")  # main prints it
    return guarded(lambda guard: _stream(options, out, err, guard), err, "before the stream started", sigterm_code=0)


def problem(options: StreamOptions) -> str | None:
    """What is wrong with the flags, checked before the workload is read
    and Spark starts: numbers in range, the folders' paths, then the files'
    format (a flag error comes first)."""
    from ..spark.prepare import TEXT_FORMATS, format_of

    for value, flag, zero in ((options.trigger, "--trigger", True), (options.timeout, "--timeout", False)):
        found = seconds_problem(value, flag, zero=zero)
        if found is not None:
            return found
    if not Path(options.source).is_dir():
        return f"{options.source}: error: no such folder\n  hint: --source is the folder files arrive in"
    for path, flag in ((options.checkpoint, "--checkpoint"), (options.out, "--out")):
        found = folder_problem(path, flag) or overlap_problem(path, flag, {"--source": options.source}, inside=False)
        if found is not None:
            return found
    if options.dead_letters is not None:
        found = file_problem(options.dead_letters, "--dead-letters")
        if found is None and same_path(str(Path(options.dead_letters).parent), options.source):
            found = f"{options.dead_letters}: error: --dead-letters is in --source: the stream would read it"
        if found is not None:
            return found
    if same_path(options.out, options.checkpoint):
        return f"{options.out}: error: --out is the --checkpoint folder\n  expected: two folders"
    if options.format is None and any(f.is_file() for f in Path(options.source).iterdir()):
        # (an empty folder, whose files have not arrived yet, is the stream's to refuse, as it was)
        try:
            fmt = format_of(options.source)
        except SharpCerError as exc:
            return str(exc)
        if fmt not in TEXT_FORMATS:
            return f"{options.source}: error: a stream reads .csv or .jsonl files\n  found: {fmt}"
    return None


def write_letters(spark: Any, out: str, path: str) -> int:
    """The stream's committed dead letters to ``path``, one JSON line each,
    by file and line; how many."""
    from pyspark.sql import functions as F

    from ..spark.columns import DEAD_LETTER, OUTPUT_KIND
    from ..spark.stream import read_output
    from .letters import LetterWriter

    rows = read_output(spark, out).where(F.col(OUTPUT_KIND) == DEAD_LETTER).orderBy("file", "line")
    with open(path, "w", encoding="utf-8") as stream:
        writer = LetterWriter(stream)
        for row in rows.toLocalIterator():
            writer.write_record({**row.asDict(), "kind": row["name"]})
    return writer.written


def _stream(options: StreamOptions, out: TextIO, err: TextIO, guard: SignalGuard) -> int:
    began = time.monotonic()
    from ..spark.session import spark_session
    from ..spark.stream import StreamSettings, run_stream, stream_conf
    from ..spark.stream_key_group import check_live_bounds

    try:
        found = problem(options)
        if found is not None:
            raise SurfaceError(found)
        workload = WorkloadSource(options.workload).load()  # a file, or a folder of one file per tenant
        settings = StreamSettings(
            options.trigger,
            options.max_files,
            options.watermark_ms,
            options.shedder,
            options.seed,
            format=options.format,
        )
        settings.delay_ms(workload)  # refuse a delay under the lateness before starting Spark
        check_live_bounds(workload, settings.shedder)  # and a fraction bound to shed to
        make_folder(options.out, "--out")
        make_folder(options.checkpoint, "--checkpoint")
        log = str(Path(options.out, "spark.log"))
        starting("stream", options.master, log, err)
        spark = guard.start(lambda: spark_session(options.master, log=log, **stream_conf()))
        with guard.spark_calls() as asked:
            summary = run_stream(
                workload,
                options.source,
                options.checkpoint,
                options.out,
                settings,
                spark,
                options.timeout,
                progress=err,
                stop=asked,
                workload_source=options.workload if options.watch else None,
                # the floor's, said before the stream starts (or at its first micro-batch), as `run` says them
                warn=lambda line: print(f"warning: {line}", file=err, flush=True),
                note=lambda line: print(f"note: {line}", file=err, flush=True),
                began=began,
            )
            if options.dead_letters is not None:
                write_letters(spark, options.out, options.dead_letters)
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    except (BrokenPipeError, ConnectionResetError) as exc:  # PySpark's connection to a worker broke
        return lost_worker(exc, Path(options.out, "spark.log"), err)
    print(summary.render(), file=out)
    if options.dead_letters is not None:
        print(f"  dead letters -> {options.dead_letters}", file=out)
    write_atomic(str(Path(options.out, "summary.json")), json.dumps(summary.to_json(), indent=2))
    if importlib.util.find_spec("matplotlib") is not None:  # the plot extra: a stream runs without it
        plot = Path(options.out, "latency.png")
        with atomic_output(str(plot)) as temporary:
            summary.summary.plot(str(temporary))
        print(f"  plot -> {plot} (matches and latency over the stream, bounds in ms drawn)", file=out)
    if guard.asked.signal == "SIGINT":
        return EXIT_INTERRUPTED
    return EXIT_OK
