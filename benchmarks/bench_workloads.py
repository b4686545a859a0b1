"""Dense workloads as whole ``sharp-cer match`` processes, in CPU seconds, for several source trees.

For each example workload of ``configs/`` (stock trading, card fraud, IoT
sensors: several tenants' rules over one generated stream), the median CPU
seconds (user + system of the whole process tree, read from the kernel's
accounting of the finished child) and wall seconds of ``--runs`` runs of
``sharp-cer match WORKLOAD.toml --events E.csv --out M.jsonl``, for each
source tree given with ``--code``, runs interleaved so a change in the
machine's load hits every tree alike. The match counts of every tree are
printed side by side: a change that moves or speeds up code must keep them.

    python benchmarks/bench_workloads.py [--events 200000] [--runs 3]
        [--code before=/path/to/old/tree --code after=.] [--workloads stock_trading,card_fraud]

Prints a markdown table (events per CPU second, and each tree's CPU
against the first tree's); writes benchmarks/results/workloads.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from core_tape import RESULTS, installed_env  # the script's folder is on the path

from sharp_cer.events.generators import generate, write_core_csv
from sharp_cer.language import load_workload

HERE = Path(__file__).resolve().parent
CONFIGS = HERE.parent / "configs"
WORKLOADS = ("stock_trading", "card_fraud", "iot_sensors")
# ``python -m sharp_cer.cli`` needs the CLI to be a module or a package with
# ``__main__``; calling ``main`` works for either layout
_MAIN = "import sys; from sharp_cer.cli import main; sys.exit(main())"


def events_file(workload: str, n: int, folder: Path) -> Path:
    """The workload's generated events as CORE-style CSV (seed 0, as ``demo``)."""
    spec = load_workload(CONFIGS / f"{workload}.toml")
    assert spec.generator is not None
    target = folder / f"{workload}-{n}.csv"
    attributes = {e.name: list(e.attributes) for e in spec.schema.event_types()}
    write_core_csv(generate(spec.generator, n, seed=0), attributes, target)
    return target


def match(code: Path, workload: str, events: Path, work: Path) -> tuple[float, float, int]:
    """One ``sharp-cer match`` process with ``code`` first on the path: CPU and wall seconds, matches."""
    out = work / f"{workload}.jsonl"
    command = [sys.executable, "-c", _MAIN, "match", str(CONFIGS / f"{workload}.toml")]
    command += ["--events", str(events), "--out", str(out)]
    env = installed_env(work / "bytecode", PYTHONPATH=str(code))
    began = time.perf_counter()
    # run from the work folder: a source tree in the current folder would come before ``code``
    child = subprocess.Popen(command, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - began
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        assert child.stderr is not None
        raise SystemExit(f"{code} failed on {workload}:\n{child.stderr.read().decode()}")
    with out.open() as f:
        return usage.ru_utime + usage.ru_stime, wall, sum(1 for _ in f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--code", action="append", default=[], help="NAME=SOURCE_TREE (default: this tree)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    args = parser.parse_args()
    trees = dict(c.split("=", 1) for c in args.code) or {"this": str(HERE.parent)}
    codes = {name: Path(path).resolve() for name, path in trees.items()}
    workloads = args.workloads.split(",")
    cpu: dict[str, dict[str, list[float]]] = {w: {n: [] for n in codes} for w in workloads}
    wall: dict[str, dict[str, list[float]]] = {w: {n: [] for n in codes} for w in workloads}
    matches: dict[str, dict[str, int]] = {w: {} for w in workloads}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        events = {w: events_file(w, args.events, work) for w in workloads}
        for code in codes.values():  # one untimed run per tree fills its bytecode cache
            match(code, workloads[0], events[workloads[0]], work)
        for _ in range(args.runs):
            for w in workloads:
                for name, code in codes.items():
                    seconds, took, found = match(code, w, events[w], work)
                    cpu[w][name].append(seconds)
                    wall[w][name].append(took)
                    matches[w][name] = found
    first = next(iter(codes))
    load = os.getloadavg()
    print(f"{args.events:,} events, median of {args.runs} runs; load average {load[0]:.2f} {load[1]:.2f}\n")
    print(
        "| workload | "
        + " | ".join(f"{n} CPU s" for n in codes)
        + " | "
        + " | ".join(f"{n}/{first}" for n in codes if n != first)
        + " | events per CPU s | matches |"
    )
    print("|---" * (2 * len(codes) + 2) + "|")
    rows: list[dict[str, Any]] = []
    for w in workloads:
        medians = {n: statistics.median(cpu[w][n]) for n in codes}
        ratios = {n: medians[n] / medians[first] for n in codes if n != first}
        counts = sorted(set(matches[w].values()))
        count = f"{counts[0]:,}" if len(counts) == 1 else f"DIFFER {matches[w]}"
        rate = " / ".join(f"{args.events / medians[n]:,.0f}" for n in codes)
        cells = " | ".join(f"{medians[n]:.2f}" for n in codes)
        ratio_cells = " | ".join(f"{r:.3f}" for r in ratios.values())
        print(f"| {w} | {cells} | {ratio_cells} | {rate} | {count} |")
        rows.append({"workload": w, "cpu": cpu[w], "wall": wall[w], "medians": medians, "matches": matches[w]})
    RESULTS.mkdir(exist_ok=True)
    result = {"events": args.events, "runs": args.runs, "code": trees, "load": load, "workloads": rows}
    (RESULTS / "workloads.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
