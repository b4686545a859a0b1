"""``sharp-cer explain``: compile a workload (or queries) and print what
the plan shares: query groups, PSD clusters, states, transitions and
predicates with and without sharing (``--json``, ``--dot``, ``--png``)."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ..errors import SharpCerError
from ..language import Schema, load_workload
from .arguments import at_least
from .exits import EXIT_INVALID, EXIT_OK
from .inputs import load_events, schema_and_queries
from .outputs import atomic_output, check_outputs, file_problem, write_atomic
from .parser import SUMMARIES


@dataclass(frozen=True)
class ExplainOptions:
    """What ``sharp-cer explain`` was asked for: one workload or query files
    over a schema; the output's form; the events to run once over."""

    files: tuple[str, ...]
    schema: str | None = None
    as_json: bool = False
    dot_file: str | None = None
    png_file: str | None = None
    events_file: str | None = None
    generate: int | None = None


def add_parser(sub: Any) -> None:
    """The ``explain`` command's flags."""
    run_explain = sub.add_parser("explain", help=SUMMARIES["explain"])
    run_explain.add_argument("files", nargs="+", metavar="FILE", help="one WORKLOAD.toml, or QUERY.ceql files")
    run_explain.add_argument("--schema", metavar="FILE", help="the .core schema for .ceql files")
    run_explain.add_argument("--json", action="store_true", help="print one JSON object")
    run_explain.add_argument("--dot", metavar="FILE", help="write the shared-prefix graphs as Graphviz DOT")
    run_explain.add_argument("--png", metavar="FILE", help="draw the shared-prefix graphs into a PNG")
    run_explain.add_argument("--events", metavar="FILE", help="run once over these events (.csv, .jsonl, .parquet)")
    run_explain.add_argument(
        "--generate",
        type=at_least(0),
        metavar="N",
        help="without --events, run over N events of the workload's generator (default 20,000; 0: no run)",
    )


def options(args: argparse.Namespace) -> ExplainOptions:
    """The options of a parsed ``explain`` command line."""
    return ExplainOptions(
        tuple(args.files),
        args.schema,
        as_json=args.json,
        dot_file=args.dot,
        png_file=args.png,
        events_file=args.events,
        generate=args.generate,
    )


def execute(options: ExplainOptions, out: TextIO, err: TextIO) -> int:
    """Run ``explain``."""
    return explain_plan(
        options.files,
        options.schema,
        as_json=options.as_json,
        dot_file=options.dot_file,
        png_file=options.png_file,
        events_file=options.events_file,
        generate=options.generate,
        out=out,
        err=err,
    )


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
    from ..planner import compile_plan
    from ..planner.explain import draw, explain, render, to_dot

    if events_file is not None and generate is not None:
        print("error: give --events FILE or --generate N, not both", file=err)
        return EXIT_INVALID
    for path, flag in ((dot_file, "--dot"), (png_file, "--png")):
        problem = None if path is None else file_problem(path, flag)
        if problem is not None:
            print(problem, file=err)
            return EXIT_INVALID
    generate = 20_000 if generate is None else generate
    try:
        check_outputs([*files, schema_file, events_file], [("--dot", dot_file), ("--png", png_file)])
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
            schema, queries = schema_and_queries(schema_file, files)
        began = time.perf_counter()
        plan = compile_plan(queries)
        planned = time.perf_counter() - began
        figures = explain(plan, _run_once(plan, schema, events_file, generator, generate))
        figures["planning_seconds"] = planned
        if dot_file is not None:
            write_atomic(dot_file, to_dot(plan))
        if png_file is not None and Path(png_file).suffix:
            with atomic_output(png_file) as temporary:
                draw(plan, temporary)
        elif png_file is not None:
            draw(plan, png_file)
    except OSError as exc:  # reading the inputs or writing --dot / --png
        print(f"error: {exc.filename}: {exc.strerror}", file=err)
        return EXIT_INVALID
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    print(json.dumps(figures) if as_json else render(figures), file=out)
    return EXIT_OK


def _run_once(
    plan: Any, schema: Schema, events_file: str | None, generator: str | None, generate: int
) -> dict[str, Any] | None:
    """The figures of one run over the events file or ``generate`` events
    of the generator (None: no events to run over)."""
    import numpy as np

    from ..events.loaders import load_pandas

    batch = None
    if events_file:
        batch = load_events(events_file, schema)
    elif generator and generate > 0:
        from ..events.generators import generate as generate_events

        batch, _ = load_pandas(generate_events(generator, generate, seed=0), schema)
    if batch is None:
        return None
    from ..api import Detector

    detector = Detector(plan, schema, history=False)
    detector.feed(batch)
    stats = detector.stats()
    counts = np.bincount(batch.codes, minlength=len(batch.event_types))
    return {
        "events": len(batch),
        "matches": sum(stats["matches"].values()),
        "deterministic_states": stats["deterministic_states"],
        "cache_hit_rate": stats["cache_hit_rate"],
        "prefix_states": stats["prefix_states"],
        "events_per_type": {f"{e.stream}.{e.name}": int(n) for e, n in zip(batch.event_types, counts, strict=True)},
    }
