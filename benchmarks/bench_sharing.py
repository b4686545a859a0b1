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
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from core_tape import RESULTS, SCHEMA, tape
from tenant_workloads import workload

from sharp_cer.engine import Engine
from sharp_cer.events.batch import EventBatch
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 queries planned, 10,000 events run")
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--plan-queries", type=int, default=10_000)
    args = parser.parse_args()
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
