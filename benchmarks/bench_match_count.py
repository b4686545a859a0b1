"""``sharp-cer match --count`` against ``match --out`` in CPU seconds (issue 37).

For each example workload (``stock_trading``, ``card_fraud``,
``iot_sensors``) over its generated events (``bench_dense.py``'s files,
made on first use), the CPU time (user + system, from the kernel's
accounting of the finished child) of a whole ``sharp-cer match`` process
counting (``--count``) and writing the matches (``--out M.jsonl``), on the
compiled core and on the pure-Python engine (``SHARP_CER_PURE=1``), median
of ``--repeat`` runs taking turns. Checks that ``--count`` prints, per
query, the number of lines ``--out`` writes, on each engine.

    python benchmarks/bench_match_count.py [--events 200000] [--repeat 3] [--workloads stock_trading,card_fraud]

Prints a markdown table; writes benchmarks/results/match_count.json (or ``--name``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from bench_dense import _MAIN, child_env, workload_runs  # the script's folder is on the path
from bench_workloads import WORKLOADS
from core_tape import RESULTS

MODES = ("count", "out")


def run(row: dict[str, Any], engine: str, mode: str, work: Path) -> tuple[float, dict[str, int]]:
    """One ``match`` child: its CPU seconds and matches per query (printed counts, or lines written)."""
    out = work / "m.jsonl"
    command = [sys.executable, "-c", _MAIN, "match", str(row["workload"]), "--events", str(row["events"])]
    command += ["--count"] if mode == "count" else ["--out", str(out)]
    with (work / "stdout.txt").open("wb") as stdout, (work / "stderr.txt").open("wb") as stderr:
        child = subprocess.Popen(command, env=child_env(engine, work), cwd=work, stdout=stdout, stderr=stderr)
        _, status, usage = os.wait4(child.pid, 0)
    if status != 0:
        raise SystemExit(f"{row['name']} {engine} {mode}: exit {status}: {(work / 'stderr.txt').read_text()[-500:]}")
    if mode == "count":
        found = {r["query"]: r["count"] for r in map(json.loads, (work / "stdout.txt").read_text().splitlines())}
    else:
        found = dict(Counter(json.loads(line)["query"] for line in out.read_text().splitlines()))
    return usage.ru_utime + usage.ru_stime, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--engines", default="compiled,pure", help="compiled, pure or both (comma-separated)")
    parser.add_argument("--name", default="match_count")
    args = parser.parse_args()
    engines = args.engines.split(",")
    load_before = os.getloadavg()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        for row in workload_runs(args.workloads.split(","), False, args.events, work):
            figures: dict[str, Any] = {"name": row["name"], "events": args.events}
            for engine in engines:
                seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
                found: dict[str, dict[str, int]] = {}
                for _ in range(args.repeat):
                    for mode in MODES:
                        cpu, found[mode] = run(row, engine, mode, work)
                        seconds[mode].append(cpu)
                queries = set(found["count"]) | set(found["out"])
                equal = all(found["count"].get(q, 0) == found["out"].get(q, 0) for q in queries)
                figures[engine] = {
                    **{f"{mode}_cpu_seconds": statistics.median(seconds[mode]) for mode in MODES},
                    **{f"{mode}_runs": seconds[mode] for mode in MODES},
                    "matches": sum(found["out"].values()),
                    "count_equals_out": equal,
                }
            rows.append(figures)
            print(json.dumps(figures), flush=True)
    document = {"load_before": load_before, "load_after": os.getloadavg(), "repeat": args.repeat, "rows": rows}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(document, indent=2) + "\n")
    print(f"\n# match --count and --out, CPU s of the whole process, median of {args.repeat}, {args.events:,} events")
    print(f"load average before / after: {load_before} / {document['load_after']}\n")
    head = [f"{e} {m} CPU s" for e in engines for m in MODES]
    print("| workload | matches | " + " | ".join(head) + " | count / out | --count = --out lines |")
    print("|---|---:|" + "---:|" * len(head) + "---:|---|")
    for r in rows:
        first = r[engines[0]]
        cells = [f"{r[e][f'{m}_cpu_seconds']:.2f}" for e in engines for m in MODES]
        ratio = first["count_cpu_seconds"] / first["out_cpu_seconds"]
        same = "yes" if all(r[e]["count_equals_out"] for e in engines) else "NO"
        print(f"| {r['name']} | {first['matches']:,} | " + " | ".join(cells) + f" | {ratio:.2f}x | {same} |")


if __name__ == "__main__":
    main()
