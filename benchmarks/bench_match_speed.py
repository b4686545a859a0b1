"""The whole ``sharp-cer match`` process per query shape, before and after a change.

For each of the four shapes of ``bench_core_operators.py`` (name filters,
PARTITION BY [volume], Kleene, OR) over the CORE-style CSV stock tape of
``bench_match_stream.py``, the median wall seconds of ``--runs`` runs of
``sharp-cer match --schema S --query Q --events F --out M.jsonl`` (imports,
loading, engine and output: what a user waits for, started from cached
bytecode as an installed package is) and its match count, for
each source tree given with ``--code`` (runs interleaved, so a change in the
machine's load hits every tree alike). With ``--pycer-python`` and
``--pycer-worker`` (the worker of ``bench_vs_core.py``), pycer's engine
seconds (``send_events`` and ``get_output``) for the same query in the same
run, and each tree's ratio to it.

    python benchmarks/bench_match_speed.py [--events 1000000] [--runs 3]
        [--code main=/path/to/main --code branch=.] [--shapes names,or]
        [--pycer-python P --pycer-worker W --pycer-schema SCHEMA.core]

Prints a markdown table of wall seconds and one of CPU seconds (user + system,
steadier on a shared machine); writes benchmarks/results/match_speed.json.
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

from bench_core_operators import QUERIES  # the script's folder is on the path
from bench_match_stream import SHAPES, STOCK_SCHEMA, csv_tape
from core_tape import RESULTS, installed_env

HERE = Path(__file__).resolve().parent
#: CPU seconds (user + system) of each tree's runs per shape: steadier than wall time on a shared machine
CPU: dict[Path, dict[str, list[float]]] = {}


def sharp_cer(code: Path, shape: str, events: Path, work: Path) -> tuple[float, int]:
    """One ``sharp-cer match`` process with ``code`` first on the path: seconds, matches."""
    schema, query, out = work / "schema.ceql", work / f"{shape}.ceql", work / f"{shape}.jsonl"
    schema.write_text(STOCK_SCHEMA)
    query.write_text(QUERIES[shape] + "\n")
    # ``-m sharp_cer.cli`` needs the CLI to be a module or a package with ``__main__``: calling main fits both
    main = "import sys; from sharp_cer.cli import main; sys.exit(main())"
    command = [sys.executable, "-c", main, "match", "--schema", str(schema), "--query", str(query)]
    env = installed_env(work / "bytecode", PYTHONPATH=str(code))
    began = time.perf_counter()
    # run from the work folder: a source tree in the current folder would come before ``code``
    run = [*command, "--events", str(events), "--out", str(out)]
    child = subprocess.Popen(run, env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status) != 0:
        assert child.stderr is not None
        raise SystemExit(f"{code} failed on {shape}:\n{child.stderr.read().decode()}")
    CPU.setdefault(code, {}).setdefault(shape, []).append(usage.ru_utime + usage.ru_stime)
    with out.open() as f:
        return seconds, sum(1 for _ in f)


def pycer(python: str, worker: str, schema: str, shape: str, events: Path, work: Path) -> tuple[float, int]:
    """pycer's engine seconds and matches (its query needs a stream and CORE's time attribute)."""
    query = work / f"{shape}-pycer.ceql"
    text = QUERIES[shape].replace("SELECT * WHERE", "SELECT * FROM S WHERE").replace("[t]", "[stock_time]")
    query.write_text(text + "\n")
    for _ in range(120):  # pycer's server has a fixed port: wait while another run holds it
        run = [python, worker, schema, str(query), str(events)]
        done = subprocess.run(run, capture_output=True, text=True, cwd=work)  # pycer writes logs/ where it runs
        if "Address already in use" not in done.stderr:
            break
        time.sleep(5)
    if done.returncode != 0:
        raise SystemExit(f"pycer failed on {shape}:\n{done.stderr}")
    figures = json.loads(done.stdout)
    return figures["send_seconds"] + figures["output_seconds"], figures["matches"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--code", action="append", default=[], help="NAME=SOURCE_TREE (default: this tree)")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--pycer-python")
    parser.add_argument("--pycer-worker")
    parser.add_argument("--pycer-schema")
    args = parser.parse_args()
    trees = dict(c.split("=", 1) for c in args.code) or {"this": str(HERE.parent)}
    codes = {name: Path(path).resolve() for name, path in trees.items()}
    shapes = args.shapes.split(",")
    events = csv_tape(args.events)
    seconds: dict[str, dict[str, list[float]]] = {s: {n: [] for n in [*codes, "pycer"]} for s in shapes}
    matches: dict[str, dict[str, int]] = {s: {} for s in shapes}
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        warm_up = work / "warm-up.csv"  # one untimed run per tree fills its bytecode cache
        warm_up.write_text("BUY,0,MSFT,100,10.0,0\n")
        for code in codes.values():
            sharp_cer(code, shapes[0], warm_up, work)
        for _ in range(args.runs):
            for shape in shapes:
                for name, code in codes.items():
                    took, found = sharp_cer(code, shape, events, work)
                    seconds[shape][name].append(took)
                    matches[shape][name] = found
                if args.pycer_python:
                    took, found = pycer(args.pycer_python, args.pycer_worker, args.pycer_schema, shape, events, work)
                    seconds[shape]["pycer"].append(took)
                    matches[shape]["pycer"] = found
    rows: list[dict[str, Any]] = []
    columns = [*codes, *(["pycer"] if args.pycer_python else [])]
    print(f"{args.events:,} rows, median of {args.runs} runs (seconds)\n")
    ratio_heads = "".join(f" {c}/pycer |" for c in codes) if args.pycer_python else ""
    print("| shape | " + " | ".join(columns) + " | matches |" + ratio_heads)
    print("|---" * (len(columns) + 2 + (len(codes) if args.pycer_python else 0)) + "|")
    for shape in shapes:
        medians = {n: statistics.median(seconds[shape][n]) for n in columns}
        ratios = {n: medians[n] / medians["pycer"] for n in codes} if args.pycer_python else {}
        counts = sorted(set(matches[shape].values()))
        row = {"shape": shape, "seconds": medians, "runs": seconds[shape], "matches": matches[shape], "ratio": ratios}
        rows.append(row)
        cells = " | ".join(f"{medians[n]:.2f}" for n in columns)
        count = str(counts[0]) if len(counts) == 1 else f"DIFFER {matches[shape]}"
        print(f"| {shape} | {cells} | {count} |" + "".join(f" {r:.2f} |" for r in ratios.values()))
        row["cpu"] = {n: CPU[code][shape] for n, code in codes.items()}
    first = next(iter(codes))
    print(f"\nCPU seconds of the whole process (median); load average {os.getloadavg()[0]:.2f}\n")
    print("| shape | " + " | ".join(codes) + " | " + " | ".join(f"{n}/{first}" for n in codes if n != first) + " |")
    print("|---" * (2 * len(codes)) + "|")
    for row in rows:
        cpu = {n: statistics.median(row["cpu"][n]) for n in codes}
        cells = " | ".join(f"{cpu[n]:.2f}" for n in codes)
        ratios = " | ".join(f"{cpu[n] / cpu[first]:.3f}" for n in codes if n != first)
        print(f"| {row['shape']} | {cells} | {ratios} |")
    RESULTS.mkdir(exist_ok=True)
    result = {"events": args.events, "runs": args.runs, "code": trees, "shapes": rows}
    (RESULTS / "match_speed.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
