"""How fast a workload of many queries loads (issue 33 item 11).

For each size N (500, 2,000, 10,000 and 20,000 by default), bench_check.py's
N varied queries are written as one workload's TOML and

- checked by a whole ``sharp-cer check FILE`` process, several times: CPU
  seconds of the process tree (user + sys, children included, start-up
  included), the figure the target is about;
- loaded with ``parse_workload`` in this process (TOML, every query
  located, parsed and checked), several times: CPU seconds
  (``time.process_time``) and wall seconds, then the parse alone and the
  check alone on the same texts.

Then tenant_templates.py's N template queries (bench_sharing's tenants) are
loaded the same way.

    python benchmarks/bench_workload_load.py [--sizes 500,2000,10000,20000] [--runs 3]

Target: 10,000 queries checked in 5 CPU seconds, whole process. CPU seconds
grow with the machine's load (other processes share the cores and their
caches), so the load average is recorded with each figure.
Prints one JSON line per size, then a table (queries, CPU s, ms per query),
and writes benchmarks/results/workload_load.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tenant_templates
from bench_check import SCHEMA, make_query, workload_text

from sharp_cer.language import check_query, parse_query, parse_workload
from sharp_cer.language.printer import stream_declarations
from sharp_cer.language.source import Source


def _timed(run: Callable[[], Any]) -> tuple[Any, float, float]:
    gc.collect()  # the previous run's garbage is not this one's cost
    cpu, wall = time.process_time(), time.perf_counter()
    result = run()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def tenants_toml(n: int) -> str:
    """tenant_templates' ``n`` template queries as one workload's TOML."""
    lines = ["[workload]", 'name = "tenants"', 'schema = """']
    lines += [stream_declarations(tenant_templates.SCHEMA.declarations), '"""', ""]
    for name, text in tenant_templates.workload(n, seed=1):
        lines += ["[[query]]", f'name = "{name}"', f'tenant = "{name[:5]}"', "text = '''", text, "'''", ""]
    return "\n".join(lines)


def check_process_cpu(toml: str) -> float:
    """CPU seconds (user + sys) of one ``sharp-cer check`` process over
    ``toml``, children included, from its start to its exit."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "workload.toml"
        path.write_text(toml)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(
            [sys.executable, "-m", "sharp_cer.cli", "check", str(path)], capture_output=True, text=True, check=False
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0 and done.stdout.startswith("ok "), done.stderr[-2000:]
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def measure(n: int, runs: int) -> dict[str, Any]:
    rng = random.Random(7)  # bench_check's seed: the same queries as its workload figure
    texts = [make_query(rng, i) for i in range(n)]
    assert len(set(texts)) > 0.9 * n
    toml = workload_text(texts)
    process = []
    for _ in range(runs):
        process.append({"cpu": round(check_process_cpu(toml), 3), "load_average": round(os.getloadavg()[0], 2)})
    loads = []
    for _ in range(runs):
        loaded, cpu, wall = _timed(lambda: parse_workload(toml))
        assert len(loaded.queries) == n
        del loaded
        loads.append({"cpu": round(cpu, 3), "wall": round(wall, 3), "load_average": round(os.getloadavg()[0], 2)})
    asts, parse_cpu, _ = _timed(lambda: [parse_query(t) for t in texts])
    sources = [Source(t) for t in texts]
    _, check_cpu, _ = _timed(lambda: [check_query(a, SCHEMA, s) for a, s in zip(asts, sources, strict=True)])
    tenants = tenants_toml(n)
    _, tenants_cpu, _ = _timed(lambda: parse_workload(tenants))
    best = min(run["cpu"] for run in loads)
    process_best = min(run["cpu"] for run in process)
    return {
        "queries": n,
        "check_process_cpu_seconds_runs": process,
        "check_process_cpu_seconds_best": process_best,
        "check_process_ms_per_query_best": round(1000 * process_best / n, 3),
        "load_cpu_seconds_runs": loads,
        "load_cpu_seconds_best": best,
        "load_ms_per_query_cpu_best": round(1000 * best / n, 3),
        "parse_cpu_seconds": round(parse_cpu, 3),
        "check_cpu_seconds": round(check_cpu, 3),
        "tenants_load_cpu_seconds": round(tenants_cpu, 3),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],
    }


def table(rows: list[dict[str, Any]]) -> str:
    """The figures as a Markdown table: best of the runs, CPU seconds."""
    lines = [
        "| queries | `sharp-cer check` CPU s | ms per query | `parse_workload` CPU s | ms per query | load |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['queries']:,} | {row['check_process_cpu_seconds_best']:.2f} "
            f"| {row['check_process_ms_per_query_best']:.3f} | {row['load_cpu_seconds_best']:.2f} "
            f"| {row['load_ms_per_query_cpu_best']:.3f} | {row['load_average_1_5_15'][0]:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,2000,10000,20000", help="comma-separated numbers of queries")
    parser.add_argument("--runs", type=int, default=3, help="loads of each workload (the best is reported too)")
    args = parser.parse_args()
    parse_query(make_query(random.Random(0), 0))  # the parser built outside the timing
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        row = measure(n, args.runs)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(table(rows))
    result = {"target_cpu_seconds_for_10000": 5.0, "cores": os.cpu_count(), "rows": rows}
    out = Path(__file__).parent / "results" / "workload_load.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
