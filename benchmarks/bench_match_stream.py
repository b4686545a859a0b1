"""``sharp-cer match`` as a stream: loading speed, flat memory, an early --limit.

Three measurements on this machine, each in one run of this script:

- Loading: ``iter_csv`` (every block validated into an ``EventBatch``)
  against ``pyarrow.csv.read_csv`` of the same CORE-style CSV file (the
  stock tape of ``core_tape.py``, type first, no header), interleaved in one
  process, the median of ``--runs`` runs each. The target: sharp-cer at
  least 0.5x pyarrow's speed.
- Memory: the whole ``sharp-cer match --schema S --query Q --events F --out
  M.jsonl`` process on 1M and 10M stock rows for the four shapes of
  ``bench_core_operators.py`` (names, PARTITION BY [volume], Kleene, OR):
  wall seconds, matches, peak RSS (``wait4``). The targets: peak at 10M
  within 1.3x of the peak at 1M, and under 400 MB for the selective shapes
  (names, Kleene, OR: PARTITION BY [volume] lets every event start a run).
- An early stop: ``A ; B+ ; C WITHIN 1000 EVENTS`` over 200,000 seeded
  events of types A, B, C with ``--limit 5`` (one C can complete 2^k
  matches): wall seconds of the process and the lines it printed.

    python benchmarks/bench_match_stream.py [--events 1000000 --events 10000000] [--runs 5] [--quick]

Writes benchmarks/results/match_stream.json and match_stream.md (with
--quick: 100,000 and 300,000 events, match_stream_quick.*).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from bench_core_operators import QUERIES  # the script's folder is on the path
from core_tape import DATA, RESULTS, SCHEMA, tape

from sharp_cer.events.loaders import iter_csv

SHAPES = ("names", "partition", "kleene", "or")
SELECTIVE = ("names", "kleene", "or")
STOCK_SCHEMA = """CREATE STREAM Stock {
  EVENT BUY { id:int, name:string, volume:int, price:double, t:int },
  EVENT SELL { id:int, name:string, volume:int, price:double, t:int }
}
"""
ABC_SCHEMA = "CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }\n"
KLEENE = "SELECT * WHERE A ; B+ ; C WITHIN 1000 EVENTS\n"
SHARP_CER = str(Path(sys.executable).with_name("sharp-cer"))
#: runs a command and writes its peak RSS (KB) and exit code to a file. A
#: child's peak counts the memory of the process it was forked from (the
#: kernel keeps it across exec), so it is forked from this small launcher,
#: not from the benchmark with its tables in memory.
LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}")
"""


def csv_tape(n: int) -> Path:
    """The stock tape of ``n`` rows as CORE-style CSV (written on first use)."""
    path = DATA / f"stocks-{n}-7.csv"
    if not path.exists():
        partial = path.with_suffix(".partial")
        options = pa_csv.WriteOptions(include_header=False, quoting_style="none")
        with pa_csv.CSVWriter(partial, pq.read_schema(tape(n)), write_options=options) as writer:
            for batch in pq.ParquetFile(tape(n)).iter_batches(batch_size=1_000_000):
                writer.write_batch(batch)
        partial.rename(path)
    return path


def abc_file(n: int, seed: int = 11) -> Path:
    """``n`` seeded events of types A, B, C with equal odds."""
    path = DATA / f"abc-{n}-{seed}.csv"
    if not path.exists():
        kinds = np.random.default_rng(seed).choice(np.array(["A", "B", "C"]), n)
        path.write_text("".join(f"{k},{i}\n" for i, k in enumerate(kinds.tolist())))
    return path


def loading(path: Path, runs: int) -> dict[str, Any]:
    """pyarrow's plain read and iter_csv, interleaved: median seconds each."""
    plain: list[float] = []
    ours: list[float] = []
    rows = 0
    for _ in range(runs):
        began = time.perf_counter()
        table = pa_csv.read_csv(path, read_options=pa_csv.ReadOptions(autogenerate_column_names=True))
        plain.append(time.perf_counter() - began)
        began = time.perf_counter()
        rows = sum(len(batch) for batch, _ in iter_csv(path, SCHEMA))
        ours.append(time.perf_counter() - began)
        assert rows == table.num_rows, (rows, table.num_rows)
        del table
    pyarrow_s, sharp_s = statistics.median(plain), statistics.median(ours)
    return {
        "file": path.name,
        "rows": rows,
        "runs": runs,
        "pyarrow_read_csv_seconds": pyarrow_s,
        "iter_csv_seconds": sharp_s,
        "speed_vs_pyarrow": pyarrow_s / sharp_s,
        "meets_target": pyarrow_s / sharp_s >= 0.5,
    }


def run_match(args: list[str], out: Path) -> dict[str, Any]:
    """One ``sharp-cer match`` process: seconds, stdout lines, peak RSS."""
    usage = out.with_suffix(".usage")
    began = time.perf_counter()
    with out.open("w") as stdout:
        done = subprocess.run(
            [sys.executable, "-c", LAUNCHER, str(usage), SHARP_CER, "match", *args],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    seconds = time.perf_counter() - began
    peak_kb, code = (int(v) for v in usage.read_text().split())
    if code != 0 or done.returncode != 0:
        raise SystemExit(f"sharp-cer match {' '.join(args)} failed:\n{done.stderr}")
    return {"seconds": seconds, "peak_rss_mb": peak_kb / 1024, "stderr": done.stderr.strip().splitlines()}


def memory(sizes: list[int], scratch: Path) -> list[dict[str, Any]]:
    (scratch / "stock.core").write_text(STOCK_SCHEMA)
    rows = []
    for shape in SHAPES:
        (scratch / f"{shape}.ceql").write_text(QUERIES[shape] + "\n")
        for n in sizes:
            target = scratch / f"{shape}.jsonl"
            args = ["--schema", str(scratch / "stock.core"), "--query", str(scratch / f"{shape}.ceql")]
            run = run_match([*args, "--events", str(csv_tape(n)), "--out", str(target)], scratch / "stdout")
            matches = sum(1 for _ in target.open())
            target.unlink()
            rows.append({"shape": shape, "events": n, "matches": matches, **run})
            seconds, peak = run["seconds"], run["peak_rss_mb"]
            print(f"  {shape:<10} {n:>11,} events {matches:>9,} matches {seconds:>7.1f} s {peak:>6.0f} MB")
    return rows


def early_stop(n: int, scratch: Path) -> dict[str, Any]:
    (scratch / "abc.core").write_text(ABC_SCHEMA)
    (scratch / "kleene.ceql").write_text(KLEENE)
    out = scratch / "limit.jsonl"
    args = ["--schema", str(scratch / "abc.core"), "--query", str(scratch / "kleene.ceql")]
    run = run_match([*args, "--events", str(abc_file(n)), "--limit", "5"], out)
    lines = out.read_text().splitlines()
    return {"events": n, "query": KLEENE.strip(), "limit": 5, "lines": len(lines), **run}


def table(result: dict[str, Any]) -> str:
    load = result["loading"]
    lines = [
        f"Command: `{result['command']}`",
        "",
        f"| loading (median of {load['runs']}) | seconds |",
        "|---|---:|",
        f"| pyarrow.csv.read_csv, {load['rows']:,} rows | {load['pyarrow_read_csv_seconds']:.3f} |",
        f"| sharp-cer iter_csv (validated batches) | {load['iter_csv_seconds']:.3f} |",
        f"| speed vs pyarrow (target >= 0.5) | {load['speed_vs_pyarrow']:.2f} |",
        "",
        "| shape | events | matches | seconds | peak RSS MB | RSS vs smallest |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for shape in SHAPES:
        runs = [r for r in result["memory"] if r["shape"] == shape]
        for r in runs:
            lines.append(
                f"| {shape} | {r['events']:,} | {r['matches']:,} | {r['seconds']:.1f} | {r['peak_rss_mb']:.0f} | "
                f"{r['peak_rss_mb'] / runs[0]['peak_rss_mb']:.2f}x |"
            )
    stop = result["early_stop"]
    lines += [
        "",
        f"`{stop['query']}` over {stop['events']:,} events, `--limit 5`: {stop['lines']} lines in "
        f"{stop['seconds']:.1f} s (whole process), peak RSS {stop['peak_rss_mb']:.0f} MB",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, action="append", help="tape sizes (default 1M and 10M)")
    parser.add_argument("--runs", type=int, default=5, help="loading runs (median)")
    parser.add_argument("--quick", action="store_true", help="100,000 and 300,000 events")
    args = parser.parse_args()
    sizes = [100_000, 300_000] if args.quick else (args.events or [1_000_000, 10_000_000])
    scratch = DATA / "match-stream"
    scratch.mkdir(parents=True, exist_ok=True)
    print(f"loading {sizes[0]:,} rows, median of {args.runs}")
    result: dict[str, Any] = {"command": "python benchmarks/" + " ".join([Path(__file__).name, *sys.argv[1:]])}
    result["loading"] = loading(csv_tape(sizes[0]), args.runs)
    print(f"  speed vs pyarrow {result['loading']['speed_vs_pyarrow']:.2f}")
    print("sharp-cer match, whole process")
    result["memory"] = memory(sizes, scratch)
    result["early_stop"] = early_stop(200_000, scratch)
    biggest, smallest = max(sizes), min(sizes)
    peaks = {(r["shape"], r["events"]): r["peak_rss_mb"] for r in result["memory"]}
    result["targets"] = {
        "loading_at_least_half_of_pyarrow": result["loading"]["meets_target"],
        "rss_growth_within_1_3": {s: peaks[s, biggest] / peaks[s, smallest] <= 1.3 for s in SHAPES},
        "selective_under_400_mb": {s: peaks[s, biggest] < 400 for s in SELECTIVE},
        "limit_5_lines": result["early_stop"]["lines"] == 5,
    }
    name = "match_stream_quick" if args.quick else "match_stream"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (RESULTS / f"{name}.md").write_text(table(result))
    print(table(result))


if __name__ == "__main__":
    main()
