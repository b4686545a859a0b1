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
restart would pay, before its state is lost).

Many small updates (``--rounds``, default 10): a second detector of the
same queries takes ``--changed`` new queries per round, each round followed
by ``--after`` events; after rounds 4 and 10 the next 3 x ``--after`` events
are timed in it and in a fresh detector of the same final workload fed the same
stream from the start (so both hold live partial matches): an updated
detector should cost what a fresh one does, not more per update. The workloads are parsed and
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
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    n, k = args.queries, args.changed
    texts = tenant_templates.workload(n + (2 + args.rounds) * k, seed=1)
    (named, cpu_check, wall_check) = _timed(
        lambda: [(name, parse_and_check(t, tenant_templates.SCHEMA)) for name, t in texts]
    )
    running, extra, more = named[:n], named[n : n + k], named[n + 2 * k :]
    # replacements: the last k running queries under their names with another tenant's text of their template
    swaps = {name: checked for (name, _), (_, checked) in zip(running[-k:], named[n + k : n + 2 * k], strict=True)}
    stream = tenant_templates.stream(args.events + (6 + args.rounds + 12) * args.after, seed=2)
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
    rounds = _rounds(args, running, more, stream)
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
        "rounds": rounds,
        "load": os.getloadavg(),
    }
    print(f"{n} queries, {args.events} events fed first; load {os.getloadavg()[0]:.1f}")
    print(f"parse+check of all {len(texts)} texts: {cpu_check:.2f} CPU s; full compile of {n}: {cpu_full:.3f} CPU s")
    print(f"{'step':<26} {'update CPU ms':>14} {'wall ms':>9} {'groups':>7} {'next feed CPU s':>16}")
    for row in rows:
        cpu = f"{1000 * row['update_cpu_s']:.1f}" if "update_cpu_s" in row else "-"
        wall = f"{1000 * row['update_wall_s']:.1f}" if "update_wall_s" in row else "-"
        print(f"{row['step']:<26} {cpu:>14} {wall:>9} {row.get('runners', '-'):>7} {row['feed_cpu_s']:>16.3f}")
    print(f"after rounds of {k} added queries: the next 3 x {args.after} events, CPU s (updated vs fresh detector)")
    for row in rounds:
        print(
            f"  round {row['round']:>2}: updated {row['updated_feed_cpu_s']:.3f} ({row['updated_groups']} groups), "
            f"fresh {row['fresh_feed_cpu_s']:.3f} ({row['fresh_groups']} groups), "
            f"ratio {row['updated_feed_cpu_s'] / row['fresh_feed_cpu_s']:.2f}; "
            f"update {1000 * row['update_cpu_s']:.1f} ms; same matches after: {row['same_matches']}"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "update.json").write_text(json.dumps(report, indent=2, default=str))


def _rounds(args: Any, running: list[Any], more: list[Any], stream: Any) -> list[dict[str, Any]]:
    """Many small updates against one fresh detector of the final workload
    (see the module docstring); rows for rounds 4 and 10 (and the last)."""
    k, after = args.changed, args.after
    updated = Detector.from_workload(_workload(running))
    updated.feed(stream.take(range(args.events)))
    at = args.events
    rows = []
    for r in range(1, args.rounds + 1):
        workload = _workload(running + more[: r * k])
        _, update_cpu, _ = _timed(lambda workload=workload: updated.update(workload))
        updated.feed(stream.take(range(at, at + after)))  # the round's events
        at += after
        if r not in (4, 10, args.rounds):
            continue
        fresh = Detector.from_workload(workload)
        fresh.feed(stream.take(range(at)))
        fresh_cpu = updated_cpu = 0.0
        for turn in range(3):  # three batches, each fed to both, in turns: the machine is shared
            timed = stream.take(range(at, at + after))
            first, second = (fresh, updated) if turn % 2 == 0 else (updated, fresh)
            _, one, _ = _timed(lambda first=first, timed=timed: first.feed(timed))
            _, two, _ = _timed(lambda second=second, timed=timed: second.feed(timed))
            fresh_cpu += one if first is fresh else two
            updated_cpu += two if first is fresh else one
            at += after
        # the same matches, once the added queries' windows are past their additions
        later = stream.take(range(at, at + after))
        same = sorted(m.key() for m in fresh.feed(later)) == sorted(m.key() for m in updated.feed(later))
        at += after
        rows.append(
            {
                "round": r,
                "queries": len(workload.queries),
                "update_cpu_s": update_cpu,
                "updated_feed_cpu_s": updated_cpu,
                "fresh_feed_cpu_s": fresh_cpu,
                "updated_groups": len(updated.engine.runners),
                "fresh_groups": len(fresh.engine.runners),
                "same_matches": same,
            }
        )
    return rows


if __name__ == "__main__":
    main()
