"""Shared plans at scale: planning many tenants' queries, and running them
shared against each query alone (issue 7).

1. Planning: 10,000 queries of ``tenant_workloads.workload`` parsed, checked,
   compiled into one plan, with every group's PSD and the sharing figures
   (``sharp_cer.planner.explain``). Target: under 10 seconds.
2. Throughput: 1, 10, 100 and 1,000 queries over the stock tape, once in one
   shared plan, once each query in an engine of its own, on the same loaded
   batches (loading is not timed, so the comparison is the engines'); every
   query's matches must be identical. Target at 1,000 queries: a speedup of
   at least min(5, states_separate / states_shared / 2).

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python bench_sharing.py [--quick] [--events N]

Prints the tables; writes ``results/sharing.json`` and ``results/sharing.png``.

With ``--tenants`` (issue 34), tenants as they write rules instead
(``tenant_templates``: twenty fraud, security and IoT templates, each tenant
with its own variable names, thresholds from menus, windows and SELECT
lists) at 100, 1,000 and 10,000 tenants: planning time (parse, check and
compile; wall and CPU) and the plan's memory (resident growth while
planning, the plan kept), prefix states shared against alone, and events
per second shared against the queries run one after another on the same
events (up to ``--runs`` tenants; 10,000 is planned only). Running 1,000
queries alone over the whole stream takes long, so the alone side runs an
evenly spaced sample of ``--sample`` queries and extrapolates (the mean per
query times the number of queries); the sampled queries' matches are
compared with the shared plan's. Targets: 1,000 tenants planned in 5 s,
states shared at most 1/20 of alone, shared at least 20x faster, identical
matches; 10,000 planned in 30 s within 1 GB.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python bench_sharing.py --tenants [--events N] [--sample K]

writes ``results/sharing_tenants.json`` and ``results/sharing_tenants.png``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import tenant_templates
from core_tape import RESULTS, SCHEMA, tape
from tenant_workloads import workload

from sharp_cer.engine import Engine
from sharp_cer.events.batch import Column, EventBatch
from sharp_cer.events.loaders import load_arrow
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.planner.explain import explain

SIZES = (1, 10, 100, 1000)
BATCH_ROWS = 10_000


def planning(n: int) -> dict[str, Any]:
    """Parse, check and compile ``n`` queries, with PSD and figures."""
    texts = workload(n, seed=1)
    parse_and_check(texts[0][1], SCHEMA)  # build the parser once, outside the timing
    gc.collect()
    began = time.perf_counter()
    named = [(name, parse_and_check(text, SCHEMA)) for name, text in texts]
    checked = time.perf_counter()
    plan = compile_plan(named)
    compiled = time.perf_counter()
    figures = explain(plan)  # builds every group's prefix graph and PSD
    done = time.perf_counter()
    return {
        "queries": n,
        "parse_and_check_seconds": checked - began,
        "compile_seconds": compiled - checked,
        "psd_and_figures_seconds": done - compiled,
        "total_seconds": done - began,
        "target_seconds": 10.0,
        "groups": figures["groups"],
        "states_shared": figures["states_shared"],
        "states_separate": figures["states_separate"],
        "psd_clusters": sum(len(g["clusters"]) for g in figures["group_details"]),
        "predicate_atoms": figures["predicates"]["atoms"],
    }


def batches(n_events: int) -> list[EventBatch]:
    """The tape's first ``n_events`` events, loaded once, numbered across batches."""
    loaded: list[EventBatch] = []
    offset = 0
    for record_batch in pq.ParquetFile(tape(max(n_events, 100_000))).iter_batches(batch_size=BATCH_ROWS):
        if offset >= n_events:
            break
        batch, _ = load_arrow(pa.Table.from_batches([record_batch]), SCHEMA)
        loaded.append(EventBatch(batch.event_types, batch.positions + offset, batch.codes, batch.columns))
        offset += len(batch)
    return loaded


def run(plan: Any, loaded: list[EventBatch]) -> tuple[float, dict[str, list[Any]]]:
    engine = Engine(plan)
    found: dict[str, list[Any]] = {}
    gc.collect()
    began = time.perf_counter()
    for batch in loaded:
        for m in engine.process(batch):
            found.setdefault(m.query, []).append(m.key())
    return time.perf_counter() - began, found


def throughput(n: int, loaded: list[EventBatch]) -> dict[str, Any]:
    named = [(name, parse_and_check(text, SCHEMA)) for name, text in workload(n, seed=1)]
    plan = compile_plan(named)
    figures = explain(plan)
    events = sum(len(b) for b in loaded)
    shared_seconds, shared = run(plan, loaded)
    alone_seconds = 0.0
    identical = True
    for name, checked in named:
        seconds, alone = run(compile_plan([(name, checked)]), loaded)
        alone_seconds += seconds
        identical = identical and sorted(alone.get(name, [])) == sorted(shared.get(name, []))
    ratio = figures["states_separate"] / figures["states_shared"]
    return {
        "queries": n,
        "events": events,
        "groups": figures["groups"],
        "states_shared": figures["states_shared"],
        "states_separate": figures["states_separate"],
        "state_ratio": ratio,
        "predicates_per_event_shared": figures["predicates"]["per_event_shared"],
        "predicates_per_event_separate": figures["predicates"]["per_event_separate"],
        "matches": sum(len(v) for v in shared.values()),
        "shared_seconds": shared_seconds,
        "alone_seconds": alone_seconds,
        "shared_events_per_second": events / shared_seconds,
        "alone_events_per_second": events / alone_seconds,
        "speedup": alone_seconds / shared_seconds,
        "target_speedup": min(5.0, ratio / 2),
        "identical_matches": identical,
    }


def _resident() -> int:
    """This process's resident memory in bytes (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def tenant_planning(n: int) -> tuple[dict[str, Any], list[tuple[str, Any]], Any]:
    """Plan ``n`` template tenants: times, memory and sharing figures."""
    texts = tenant_templates.workload(n, seed=1)
    parse_and_check(texts[0][1], tenant_templates.SCHEMA)  # the parser built outside the timing
    gc.collect()
    resident = _resident()
    wall, cpu = time.perf_counter(), time.process_time()
    named = [(name, parse_and_check(text, tenant_templates.SCHEMA)) for name, text in texts]
    checked_wall, checked_cpu = time.perf_counter(), time.process_time()
    plan = compile_plan(named)
    done_wall, done_cpu = time.perf_counter(), time.process_time()
    grown = _resident() - resident
    figures = explain(plan)
    row = {
        "tenants": n,
        "parse_and_check_seconds": checked_wall - wall,
        "compile_seconds": done_wall - checked_wall,
        "plan_seconds": done_wall - wall,
        "plan_cpu_seconds": done_cpu - cpu,
        "parse_and_check_cpu_seconds": checked_cpu - cpu,
        "plan_memory_bytes": grown,
        "groups": figures["groups"],
        "states_shared": figures["states_shared"],
        "states_separate": figures["states_separate"],
        "state_ratio": figures["states_separate"] / figures["states_shared"],
        "predicate_atoms": figures["predicates"]["atoms"],
    }
    return row, named, plan


def _timed(plan: Any, loaded: list[EventBatch]) -> tuple[float, float, dict[str, list[Any]]]:
    """``run`` with its CPU time too (the machine is shared: CPU time is what compares)."""
    engine = Engine(plan)
    found: dict[str, list[Any]] = {}
    gc.collect()
    began, cpu = time.perf_counter(), time.process_time()
    for batch in loaded:
        for m in engine.process(batch):
            found.setdefault(m.query, []).append(m.key())
    return time.perf_counter() - began, time.process_time() - cpu, found


def tenant_throughput(named: list[tuple[str, Any]], plan: Any, loaded: list[EventBatch], sample: int) -> dict[str, Any]:
    """The shared plan against the queries one after another (a sample when
    there are more than ``sample``, extrapolated)."""
    events = sum(len(b) for b in loaded)
    shared_seconds, shared_cpu, shared = _timed(plan, loaded)
    step = max(1, len(named) // sample)
    chosen = named[::step][:sample]
    alone_seconds = alone_cpu = 0.0
    identical = True
    for name, checked in chosen:
        seconds, cpu, alone = _timed(compile_plan([(name, checked)]), loaded)
        alone_seconds += seconds
        alone_cpu += cpu
        identical = identical and sorted(alone.get(name, [])) == sorted(shared.get(name, []))
    estimated = alone_seconds / len(chosen) * len(named)
    estimated_cpu = alone_cpu / len(chosen) * len(named)
    return {
        "events": events,
        "matches": sum(len(v) for v in shared.values()),
        "shared_seconds": shared_seconds,
        "shared_cpu_seconds": shared_cpu,
        "shared_events_per_second": events / shared_seconds,
        "shared_events_per_cpu_second": events / shared_cpu,
        "alone_queries_run": len(chosen),
        "alone_seconds_run": alone_seconds,
        "alone_seconds_estimated": estimated,
        "alone_cpu_seconds_estimated": estimated_cpu,
        "alone_events_per_second": events / estimated,
        "alone_events_per_cpu_second": events / estimated_cpu,
        "speedup_wall": estimated / shared_seconds,
        "speedup": estimated_cpu / shared_cpu,
        "identical_matches": identical,
        "matches_compared": sum(len(shared.get(name, [])) for name, _ in chosen),
    }


def tenants_main(args: argparse.Namespace) -> None:
    """``--tenants``: the template tenants at each size (see the module docstring)."""
    stream = tenant_templates.stream(args.events, seed=2)
    cut = [slice(i, i + BATCH_ROWS) for i in range(0, len(stream), BATCH_ROWS)]
    loaded = [
        EventBatch(
            stream.event_types,
            stream.positions[part],
            stream.codes[part],
            {k: Column(c.kind, c.values[part], c.valid[part]) for k, c in stream.columns.items()},
        )
        for part in cut
    ]
    rows = []
    print(f"template tenants over {args.events:,} events of the Ops stream; load {os.getloadavg()}")
    print(
        f"{'tenants':>7} {'plan s':>7} {'(cpu)':>6} {'MB':>6} {'groups':>6} {'states sh/alone':>16} {'ratio':>6} "
        f"{'matches':>8} {'shared ev/s':>11} {'alone ev/s':>10} {'speedup':>8} identical  (ev/s per CPU second)"
    )
    for n in args.tenant_sizes:
        row, named, plan = tenant_planning(n)
        if n <= args.runs:
            row.update(tenant_throughput(named, plan, loaded, args.sample))
        rows.append(row)
        print(
            f"{n:>7,} {row['plan_seconds']:>7.2f} {row['plan_cpu_seconds']:>6.2f} "
            f"{row['plan_memory_bytes'] / 2**20:>6.0f} {row['groups']:>6} "
            f"{row['states_shared']:>7,}/{row['states_separate']:<8,} {row['state_ratio']:>6.1f} "
            + (
                f"{row['matches']:>8,} {row['shared_events_per_cpu_second']:>11,.0f} "
                f"{row['alone_events_per_cpu_second']:>10,.0f} "
                f"{row['speedup']:>8.1f} {row['identical_matches']} ({row['alone_queries_run']} alone)"
                if "speedup" in row
                else "(planned only)"
            )
        )
        del named, plan
        gc.collect()
    RESULTS.mkdir(exist_ok=True)
    out = {"load_average": os.getloadavg(), "events": args.events, "sample": args.sample, "rows": rows}
    (RESULTS / "sharing_tenants.json").write_text(json.dumps(out, indent=2))
    _plot_tenants(rows)


def _plot_tenants(rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4))
    sizes = [r["tenants"] for r in rows]
    left.plot(sizes, [r["states_separate"] for r in rows], marker="o", label="prefix states alone")
    left.plot(sizes, [r["states_shared"] for r in rows], marker="o", label="prefix states shared")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("tenants")
    left.set_title("states")
    left.legend()
    middle.plot(sizes, [r["plan_seconds"] for r in rows], marker="o", label="plan, wall s")
    middle.plot(sizes, [r["plan_cpu_seconds"] for r in rows], marker="s", label="plan, CPU s")
    middle.plot(sizes, [r["plan_memory_bytes"] / 2**20 / 100 for r in rows], marker="^", label="plan memory, 100 MB")
    middle.set_xscale("log")
    middle.set_xlabel("tenants")
    middle.set_title("planning")
    middle.legend()
    ran = [r for r in rows if "speedup" in r]
    counts = [r["tenants"] for r in ran]
    right.plot(counts, [r["shared_events_per_cpu_second"] for r in ran], marker="o", label="shared")
    right.plot(counts, [r["alone_events_per_cpu_second"] for r in ran], marker="o", label="one after another")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("tenants")
    right.set_ylabel("events per CPU second (all queries)")
    right.set_title("throughput")
    right.legend()
    for axes in (left, middle, right):
        axes.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(RESULTS / "sharing_tenants.png", dpi=120)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 queries planned, 10,000 events run")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--plan-queries", type=int, default=10_000)
    parser.add_argument("--tenants", action="store_true", help="the template tenants of issue 34 instead")
    parser.add_argument("--tenant-sizes", type=int, nargs="+", default=[100, 1_000, 10_000])
    parser.add_argument("--runs", type=int, default=1_000, help="largest tenant count whose throughput is measured")
    parser.add_argument("--sample", type=int, default=100, help="queries run alone, at most")
    parser.add_argument("--replot", action="store_true", help="with --tenants: redraw the PNG from the JSON")
    args = parser.parse_args()
    if args.tenants and args.replot:
        _plot_tenants(json.loads((RESULTS / "sharing_tenants.json").read_text())["rows"])
        return
    if args.tenants:
        tenants_main(args)
        return
    n_plan = 1_000 if args.quick else args.plan_queries
    n_events = 10_000 if args.quick else args.events

    plan_figures = planning(n_plan)
    print(f"planning {n_plan:,} queries (parse + check + compile + PSD and figures)")
    print(
        f"  {plan_figures['total_seconds']:.2f} s (parse+check {plan_figures['parse_and_check_seconds']:.2f}, "
        f"compile {plan_figures['compile_seconds']:.2f}, PSD+figures {plan_figures['psd_and_figures_seconds']:.2f}); "
        f"target < 10 s; {plan_figures['groups']} groups, prefix states {plan_figures['states_shared']:,} shared / "
        f"{plan_figures['states_separate']:,} alone, {plan_figures['psd_clusters']:,} PSD clusters, "
        f"{plan_figures['predicate_atoms']:,} predicate atoms"
    )

    loaded = batches(n_events)
    rows = []
    print(f"\nthroughput over {n_events:,} events of the stock tape (engine only, loading not timed)")
    header = (
        f"{'queries':>7} {'groups':>6} {'states sh/alone':>16} {'ratio':>6} {'matches':>9} "
        f"{'shared ev/s':>12} {'alone ev/s':>11} {'speedup':>8} {'target':>7} identical"
    )
    print(header)
    for n in SIZES:
        row = throughput(n, loaded)
        rows.append(row)
        print(
            f"{n:>7} {row['groups']:>6} {row['states_shared']:>7,}/{row['states_separate']:<8,} "
            f"{row['state_ratio']:>6.2f} {row['matches']:>9,} {row['shared_events_per_second']:>12,.0f} "
            f"{row['alone_events_per_second']:>11,.0f} {row['speedup']:>8.2f} "
            f"{row['target_speedup'] if n == SIZES[-1] else float('nan'):>7.2f} {row['identical_matches']}"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "sharing.json").write_text(json.dumps({"planning": plan_figures, "throughput": rows}, indent=2))
    _plot(rows)


def _plot(rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [r["queries"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    left.plot(sizes, [r["shared_events_per_second"] for r in rows], marker="o", label="one shared plan")
    left.plot(sizes, [r["alone_events_per_second"] for r in rows], marker="o", label="each query alone")
    left.set_xscale("log")
    left.set_yscale("log")
    left.set_xlabel("queries")
    left.set_ylabel("events per second (all queries)")
    left.set_title("throughput")
    left.legend()
    left.grid(True, which="both", alpha=0.3)
    right.plot(sizes, [r["speedup"] for r in rows], marker="o", label="speedup (alone / shared time)")
    right.plot(sizes, [r["state_ratio"] for r in rows], marker="s", label="prefix states alone / shared")
    right.set_xscale("log")
    right.set_xlabel("queries")
    right.set_title("what sharing buys")
    right.legend()
    right.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(RESULTS / "sharing.png", dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
