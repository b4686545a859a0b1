"""``sharp-cer demo``: the main job. It checks the example workloads of
``configs/``, prints what they contain, generates their data and runs them
on local Spark, with the in-process engine beside it."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .._extras import check as check_extras
from ..errors import SharpCerError
from ..language import Workload, load_workload
from ..language.diagnostics import counted
from ..language.printer import window as window_text
from .arguments import at_least
from .exits import EXIT_INVALID, EXIT_OK, lost_worker
from .outputs import folder_problem, make_folder, overlap_problem
from .parser import SUMMARIES
from .run import complete
from .signals import SignalGuard, guarded, starting

#: a generated workload: its file, the workload, its events file, the
#: in-process engine's matches per query and its events per second
Generated = tuple[Path, Workload, Path, dict[str, int], float]


@dataclass(frozen=True)
class DemoOptions:
    """What ``sharp-cer demo`` was asked for."""

    configs: Path = Path("configs")
    out: Path = Path("out/demo")
    events: int = 20_000
    master: str | None = None


def add_parser(sub: Any) -> None:
    """The ``demo`` command's flags."""
    run_demo = sub.add_parser("demo", help=SUMMARIES["demo"])
    run_demo.add_argument("--configs", type=Path, default=Path("configs"), help="folder of workloads")
    run_demo.add_argument("--out", type=Path, default=Path("out/demo"), help="where data goes")
    run_demo.add_argument("--events", type=at_least(1), default=20_000, help="events per workload")
    run_demo.add_argument("--master", metavar="URL", help="Spark master (default local[*])")


def options(args: argparse.Namespace) -> DemoOptions:
    """The options of a parsed ``demo`` command line."""
    return DemoOptions(args.configs, args.out, args.events, args.master)


def execute(options: DemoOptions, out: TextIO, err: TextIO) -> int:
    """Run ``demo``."""
    return demo(options.configs, options.out, options.events, out, err, options.master)


def demo(configs: Path, out_dir: Path, events: int, out: TextIO, err: TextIO, master: str | None = None) -> int:
    """Check every workload in ``configs``, generate its data into
    ``out_dir``, and run it on local Spark: print each summary (and the
    in-process engine's figures beside it) and draw matches and latency
    over the stream into ``out_dir/NAME.png``. SIGINT or SIGTERM stops it
    with one line (exit 130 or 143, see ``signals``)."""
    check_extras(["pyspark", "matplotlib"], "sharp-cer demo")  # before any work; main prints it
    return guarded(
        lambda guard: _demo(configs, out_dir, events, (out, err), master, guard), err, "before the demo finished"
    )


def _demo(
    configs: Path, out_dir: Path, events: int, to: tuple[TextIO, TextIO], master: str | None, guard: SignalGuard
) -> int:
    out, err = to
    if events < 1:
        print(f"error: --events must be at least 1, not {events}", file=err)
        return EXIT_INVALID
    if not configs.is_dir():
        print(f"{configs}: error: --configs is not a folder\n  hint: pass --configs DIR", file=err)
        return EXIT_INVALID
    files = sorted(configs.glob("*.toml"))
    if not files:
        print(
            f"{configs}: error: no workloads (*.toml) found\n  hint: run from the repository root "
            "or pass --configs DIR",
            file=err,
        )
        return EXIT_INVALID
    problem = folder_problem(str(out_dir), "--out") or overlap_problem(
        str(out_dir), "--out", {"--configs": str(configs)}
    )
    if problem is not None:
        print(problem, file=err)
        return EXIT_INVALID
    try:
        make_folder(str(out_dir), "--out")
    except SharpCerError as exc:
        print(exc, file=err)
        return EXIT_INVALID
    generated: list[Generated] = []
    for path in files:
        start = time.perf_counter()
        try:
            workload = load_workload(path)
        except SharpCerError as exc:
            print(exc, file=err)
            return EXIT_INVALID
        _show(path, workload, 1000 * (time.perf_counter() - start), out, err)
        if workload.generator:
            generated.append(_generate(path, workload, out_dir, events, out))
    if generated:
        try:
            _demo_on_spark(generated, out_dir, master, (out, err), guard)
        except (BrokenPipeError, ConnectionResetError) as exc:
            return lost_worker(exc, out_dir / "spark.log", err)
    print(
        "\nEvery workload is valid and ran on Spark, one engine per lane and key group, with the"
        "\nin-process engine as the yardstick. `sharp-cer run WORKLOAD --events FILE` runs your own;"
        "\n`sharp-cer explain WORKLOAD` shows the shared plan; `--shedder NAME` sheds to the bounds.",
        file=out,
    )
    return EXIT_OK


def _show(path: Path, workload: Workload, checked_ms: float, out: TextIO, err: TextIO) -> None:
    """What a workload holds: its queries, tenants, weights, windows; its warnings on ``err``."""
    print(f"\n== {workload.name} ({path}) — {workload.description}", file=out)
    print(
        f"   {counted(len(workload.queries), 'query', 'queries')}, tenants: {', '.join(workload.tenants)}; "
        f"checked in {checked_ms:.1f} ms",
        file=out,
    )
    print(queries_by_tenant(workload), file=out)
    from ..planner import compile_plan
    from ..planner.explain import explain  # networkx: loaded only where a plan is explained

    figures = explain(compile_plan([(q.name, q.checked) for q in workload.queries]))
    print(
        f"   shared plan: {figures['states_shared']} prefix states, {figures['states_separate']} if each query "
        f"ran alone ({counted(figures['groups'], 'query group', 'query groups')}; "
        f"`sharp-cer explain {path}` shows them)",
        file=out,
    )
    for warning in workload.warnings():
        print(warning, file=err)


def queries_by_tenant(workload: Workload) -> str:
    """A workload's queries grouped by tenant (in the order tenants first
    appear): weight, strategy, window and whether they may be shed; the
    columns as wide as the longest name.

    >>> from sharp_cer.language import parse_workload
    >>> w = parse_workload('''
    ... [workload]
    ... name = "w"
    ... schema = "CREATE STREAM S { EVENT A { x:int } }"
    ... [[query]]
    ... name = "a_rather_long_query_name_indeed"
    ... tenant = "acme"
    ... text = "SELECT * WHERE A WITHIN 3 EVENTS"
    ... [[query]]
    ... name = "b"
    ... tenant = "globex"
    ... text = "SELECT * WHERE A WITHIN 3 EVENTS"
    ... [[query]]
    ... name = "c"
    ... tenant = "acme"
    ... text = "SELECT * WHERE A WITHIN 3 EVENTS"
    ... ''')
    >>> print(queries_by_tenant(w))  # doctest: +NORMALIZE_WHITESPACE
       tenant acme: 2 queries
         query                            weight strategy window                 shed
         a_rather_long_query_name_indeed       1 ALL      3 EVENTS               yes
         c                                     1 ALL      3 EVENTS               yes
       tenant globex: 1 query
         query                            weight strategy window                 shed
         b                                     1 ALL      3 EVENTS               yes
    """
    wide = max([22, *(len(q.name) for q in workload.queries)])
    lines: list[str] = []
    for tenant in workload.tenants:
        mine = [q for q in workload.queries if q.tenant == tenant]
        lines.append(f"   tenant {tenant}: {counted(len(mine), 'query', 'queries')}")
        lines.append(f"     {'query':<{wide}} {'weight':>6} {'strategy':<8} {'window':<22} shed")
        for q in mine:
            query = q.checked.query
            win = window_text(query.within) if query.within else "-"
            lines.append(
                f"     {q.name:<{wide}} {q.weight:>6g} {query.effective_strategy:<8} {win:<22} "
                f"{'yes' if q.shed else 'no'}"
            )
    return "\n".join(lines)


def _generate(path: Path, workload: Workload, out_dir: Path, events: int, out: TextIO) -> Generated:
    """Generate a workload's events into ``out_dir`` and run them in-process."""
    from ..events.generators import generate, write_core_csv

    assert workload.generator is not None
    frame = generate(workload.generator, events, seed=0)
    attributes = {e.name: list(e.attributes) for e in workload.schema.event_types()}
    target = out_dir / f"{path.stem}.csv"
    write_core_csv(frame, attributes, target)
    counts = frame["type"].value_counts().sort_index()
    summary = ", ".join(f"{k}={v}" for k, v in counts.items())
    print(f"   generated {len(frame)} events -> {target} ({summary})", file=out)
    found, rate = _detect(workload, frame)
    return path, workload, target, found, rate


def _detect(workload: Workload, frame: Any) -> tuple[dict[str, int], float]:
    """The matches per query of a workload over its generated events,
    in-process, and the events per second."""
    from ..api import Detector

    detector = Detector.from_workload(workload, history=False)
    began = time.perf_counter()
    detector.feed(frame)
    return detector.counts, len(frame) / (time.perf_counter() - began)


def _demo_on_spark(
    generated: list[Generated], out_dir: Path, master: str | None, to: tuple[TextIO, TextIO], guard: SignalGuard
) -> None:
    """The demo's Spark part: each generated file through ``run_detection``."""
    out, err = to
    from ..spark.pipeline import run_detection
    from ..spark.session import spark_session

    began = time.perf_counter()
    starting("demo", master, str(out_dir / "spark.log"), err)
    spark = guard.start(lambda: spark_session(master, log=str(out_dir / "spark.log")))
    with guard.spark_calls(cancel=lambda: spark.sparkContext.cancelAllJobs()):
        version, where = spark.version, spark.sparkContext.master
    print(f"\n== Spark {version} on {where} (up in {time.perf_counter() - began:.1f} s)", file=out)
    for path, workload, events, in_process, rate in generated:
        started = time.perf_counter()
        with guard.spark_calls(cancel=lambda: spark.sparkContext.cancelAllJobs()):
            detection = run_detection(str(events), workload, spark=spark)
            summary = complete(detection, out_dir, f"{path.stem}_", "parquet")
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
