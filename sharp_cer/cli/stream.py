"""``sharp-cer stream WORKLOAD``: run a workload over files arriving in a
folder, on Spark structured streaming."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .._extras import check as check_extras
from ..errors import SharpCerError, SurfaceError
from ..language import load_workload
from .arguments import SHEDDER_NAMES
from .exits import EXIT_INVALID, EXIT_OK, lost_worker
from .outputs import write_atomic


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


def add_parser(sub: Any) -> None:
    """The ``stream`` command's flags."""
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
        choices=sorted(SHEDDER_NAMES),
        help="shed load to the workload's bounds, in ms or cost units (a live stream has no unshedded run to take "
        "a fraction bound of: refused)",
    )
    run_stream.add_argument("--seed", type=int, default=0, help="seed of the shedder")
    run_stream.add_argument("--master", metavar="URL", help="Spark master (default local[*])")


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
    )


def execute(options: StreamOptions, out: TextIO, err: TextIO) -> int:
    """Run ``stream``."""
    return stream(options, out, err)


def stream(options: StreamOptions, out: TextIO, err: TextIO) -> int:
    """Run a workload over a folder of arriving files on Spark streaming;
    print the summary (engine latency in cost units, end-to-end latency in
    ms) and write it to OUT/summary.json beside the output's Parquet files."""
    check_extras(["pyspark"], "sharp-cer stream")  # main prints it
    from ..spark.session import spark_session
    from ..spark.stream import StreamSettings, run_stream, stream_conf
    from ..spark.stream_key_group import check_live_bounds

    try:
        workload = load_workload(options.workload)
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
        if not Path(options.source).is_dir():
            raise SurfaceError(
                f"{options.source}: error: no such folder\n  hint: --source is the folder files arrive in"
            )
        Path(options.out).mkdir(parents=True, exist_ok=True)
        spark = spark_session(options.master, log=str(Path(options.out, "spark.log")), **stream_conf())
        summary = run_stream(
            workload, options.source, options.checkpoint, options.out, settings, spark, options.timeout, progress=err
        )
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    except (BrokenPipeError, ConnectionResetError) as exc:  # PySpark's connection to a worker broke
        return lost_worker(exc, Path(options.out, "spark.log"), err)
    print(summary.render(), file=out)
    write_atomic(str(Path(options.out, "summary.json")), json.dumps(summary.to_json(), indent=2))
    return EXIT_OK
