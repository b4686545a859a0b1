"""Rules that change while the stream runs (issue 39): how long
``Detector.update`` takes with 1,000 tenants' queries running.

The detector runs ``tenant_templates.workload`` (1,000 tenants' rules, the
ones of ``bench_sharing.py --tenants``) over ``--events`` generated events,
so its partial matches are live; then, each timed in CPU seconds of this
process (``time.process_time``; the machine is shared) and in wall seconds:

- add 10 queries (new tenants' rules),
- remove 10 running queries,
- replace 10 running queries (same names, other thresholds),
- change 10 tenants in place,

and, for comparison, compiling the whole 1,000-query plan again (what a
restart would pay, before its state is lost). The workloads are parsed and
checked before the timing (the loader's part, reported apart: a watcher
reads the whole file). After each update the detector is fed the next
``--after`` events, reported as the update's first-batch cost and events per
CPU second, against the same events before any update. Target: adding or
removing 10 queries takes at most 100 ms.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python bench_update.py [--queries 1000] [--events 20000]

Prints a table and writes ``results/update.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

import tenant_templates
from core_tape import RESULTS

from sharp_cer.api import Detector
from sharp_cer.language import Workload, WorkloadQuery, parse_and_check
from sharp_cer.planner import compile_plan


def _workload(named: list[tuple[str, Any]], tenants: dict[str, str] | None = None) -> Workload:
    queries = tuple(
        WorkloadQuery(name, (tenants or {}).get(name, name.split("_")[0]), 1.0, None, True, (), checked)
        for name, checked in named
    )
    return Workload("tenants", "", tenant_templates.SCHEMA, queries)


def _timed(action: Any) -> tuple[Any, float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = action()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--after", type=int, default=2000)
    parser.add_argument("--changed", type=int, default=10)
    args = parser.parse_args()
    n, k = args.queries, args.changed
    texts = tenant_templates.workload(n + 2 * k, seed=1)
    (named, cpu_check, wall_check) = _timed(
        lambda: [(name, parse_and_check(t, tenant_templates.SCHEMA)) for name, t in texts]
    )
    running, extra = named[:n], named[n : n + k]
    # replacements: the last k running queries under their names with another tenant's text of their template
    swaps = {name: checked for (name, _), (_, checked) in zip(running[-k:], named[n + k :], strict=True)}
    stream = tenant_templates.stream(args.events + 5 * args.after, seed=2)
    first = Detector.from_workload(_workload(running))
    _, cpu_feed, _ = _timed(lambda: first.feed(stream.take(range(args.events))))
    at = args.events

    def feed_after() -> tuple[float, float]:
        nonlocal at
        _, cpu, wall = _timed(lambda: first.feed(stream.take(range(at, at + args.after))))
        at += args.after
        return cpu, wall

    rows: list[dict[str, Any]] = [{"step": "no change (baseline feed)", "feed_cpu_s": feed_after()[0]}]
    plans: list[tuple[str, Workload]] = [
        ("add 10", _workload(running + extra)),
        ("remove 10", _workload(running[k:] + extra)),
        ("replace 10", _workload([(name, swaps.get(name, c)) for name, c in running[k:] + extra])),
    ]
    last = plans[-1][1]
    moved = {q.name: "moved" for q in last.queries[:k]}
    plans.append(("tenants of 10 in place", _workload([(q.name, q.checked) for q in last.queries], moved)))
    for step, target in plans:
        version, cpu, wall = _timed(lambda target=target: first.update(target))
        feed_cpu, _ = feed_after()
        rows.append(
            {
                "step": step,
                "update_cpu_s": cpu,
                "update_wall_s": wall,
                "change": version.change.describe()[:60],
                "runners": len(first.engine.runners),
                "feed_cpu_s": feed_cpu,
            }
        )
    _, cpu_full, wall_full = _timed(lambda: compile_plan(running))
    report = {
        "queries": n,
        "changed": k,
        "events_before": args.events,
        "events_per_feed_after": args.after,
        "parse_check_cpu_s_all": cpu_check,
        "parse_check_wall_s_all": wall_check,
        "first_feed_cpu_s": cpu_feed,
        "full_compile_cpu_s": cpu_full,
        "full_compile_wall_s": wall_full,
        "steps": rows,
        "load": os.getloadavg(),
    }
    print(f"{n} queries, {args.events} events fed first; load {os.getloadavg()[0]:.1f}")
    print(f"parse+check of all {n + 2 * k} texts: {cpu_check:.2f} CPU s; full compile of {n}: {cpu_full:.3f} CPU s")
    print(f"{'step':<26} {'update CPU ms':>14} {'wall ms':>9} {'groups':>7} {'next feed CPU s':>16}")
    for row in rows:
        cpu = f"{1000 * row['update_cpu_s']:.1f}" if "update_cpu_s" in row else "-"
        wall = f"{1000 * row['update_wall_s']:.1f}" if "update_wall_s" in row else "-"
        print(f"{row['step']:<26} {cpu:>14} {wall:>9} {row.get('runners', '-'):>7} {row['feed_cpu_s']:>16.3f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "update.json").write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
