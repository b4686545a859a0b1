"""Spark against Spark partitions and partition keys, with the in-process
engine as the yardstick (issue 9).

A stock-like stream (BUY and SELL of K names, a price random walk per
name) is written to one Parquet file; three queries partitioned by name
run over it (one per tenant). For K = 1, 4, 16, 64 keys:

- in-process: ``load_parquet`` and one ``Detector.feed`` (one core);
- Spark on ``local[1]`` and ``local[2]``: ``run_detection`` on the file and
  every match computed (written to Spark's ``noop`` sink, so nothing is
  collected), after a warm-up run with the session up (the JVM and Python
  workers started), so the timing is the job's, not Spark's start.

Every run's number of matches must equal the in-process one. Targets:
local[2] at least 1.3x local[1] with 16 or more keys; Spark at most 5x the
in-process time.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python bench_spark.py [--quick] [--events N]

Prints the table; writes ``results/spark.json`` and ``results/spark.png``.

``--whole-job`` (issue 38.7) measures instead what a user pays: the CPU of
every process of ``sharp-cer run WORKLOAD --events FILE --master M``
(driver, JVM, Python daemon and workers, from ``/proc``: ``spark_cpu``;
on the standalone cluster also its executors and their Python workers,
which are the cluster's workers' children, and what the daemons spent
meanwhile), Spark's start included, against ``sharp-cer match WORKLOAD
--events FILE --out FILE`` (one process, the same events, its matches
written; not ``--count``, which keeps every query group in the pure-Python
engine while Spark's workers run the compiled core), per event; and the
wall time of each, for ``local[1]``, ``local[2]`` and a standalone cluster
of two 1-core workers on this machine (``spark_cluster``, started once
before the runs). The events are the workload's generator's
(``--workload``, default configs/stock_trading.toml) as CSV. With
``--small N``, every run again at N events: the marginal CPU per event
between the two sizes (their difference over the difference in events)
is the per-event cost with Spark's fixed start-up cancelled out, and the
intercept ("fixed CPU s") that start-up. Writes
``results/spark_whole_job.json`` and ``.png`` (``--name``) with the load
average before and after (the machine may be shared), and prints the
table.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python bench_spark.py --whole-job --events 200000 --small 50000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from core_tape import RESULTS

from sharp_cer.api import Detector
from sharp_cer.events.loaders import load_parquet
from sharp_cer.language import Workload, parse_workload

ROOT = Path(__file__).resolve().parent
KEYS = (1, 4, 16, 64)
MASTERS = ("local[1]", "local[2]")
WORKLOAD = r'''
[workload]
name = "spark-scale"
schema = """CREATE STREAM Stock { EVENT BUY { name:string, kseq:int, price:double, volume:int, t:primary_time },
                                  EVENT SELL { name:string, kseq:int, price:double, volume:int, t:primary_time } }"""
[[query]]
name = "rally"
tenant = "desk-a"
text = """SELECT * FROM Stock WHERE SELL AS s ; BUY AS b ; SELL AS e
          FILTER b[volume >= 900] AND e.price > s.price * 1.004 PARTITION BY [name] WITHIN 20 [kseq]"""
[[query]]
name = "dip"
tenant = "desk-b"
text = """SELECT * FROM Stock WHERE BUY AS a ; SELL AS b ; BUY AS c
          FILTER b.price < a.price * 0.997 AND c.price > a.price * 1.003 PARTITION BY [name] WITHIN 12 [kseq]"""
[[query]]
name = "block"
tenant = "compliance"
text = """SELECT * FROM Stock WHERE BUY AS big ; SELL AS back FILTER big[volume > 900] AND back.volume > 900
          PARTITION BY [name] WITHIN 30 [kseq]"""
'''


def stream(n: int, keys: int, seed: int = 0) -> pd.DataFrame:
    """``n`` events of ``keys`` names, one every 10 ms; each name's price
    walks on its own and ``kseq`` counts the name's events, so the windows
    (``WITHIN n [kseq]``: a name's next n - 1 events) hold as many events
    whatever the number of keys, and the work per event stays the same."""
    rng = np.random.default_rng(seed)
    names = rng.integers(0, keys, size=n)
    steps = rng.normal(0, 0.01, size=n)
    prices = np.empty(n)
    kseq = np.empty(n, dtype=np.int64)
    level = np.full(keys, 100.0)
    seen = np.zeros(keys, dtype=np.int64)
    for i, (k, s) in enumerate(zip(names.tolist(), steps.tolist(), strict=True)):
        level[k] *= 1 + s
        prices[i] = level[k]
        seen[k] += 1
        kseq[i] = seen[k]
    return pd.DataFrame(
        {
            "type": rng.choice(["BUY", "SELL"], size=n),
            "name": [f"N{k:03d}" for k in names.tolist()],
            "kseq": kseq,
            "price": prices.round(2),
            "volume": rng.integers(1, 1000, size=n),
            "t": np.arange(n, dtype=np.int64) * 10_000_000,
        }
    )


def in_process(workload: Workload, path: str) -> tuple[float, int]:
    began = time.perf_counter()
    batch, _ = load_parquet(path, workload.schema)
    detector = Detector.from_workload(workload, history=False)
    detector.feed(batch)
    return time.perf_counter() - began, sum(detector.counts.values())


def on_spark(spark: Any, workload: Workload, path: str) -> tuple[float, int]:
    from pyspark.sql import functions as F

    from sharp_cer.spark.pipeline import run_detection

    began = time.perf_counter()
    detection = run_detection(path, workload, spark=spark)
    counted = detection.matches.groupBy().agg(F.count("*").alias("n"))
    # every match computed on the executors; only the count reaches the driver
    found = int(counted.collect()[0]["n"])
    seconds = time.perf_counter() - began
    detection.close()
    return seconds, found


def timed_command(
    argv: list[str], cwd: Path, also: tuple[int, ...] = (), env: dict[str, str] | None = None
) -> dict[str, float]:
    """``sharp-cer ARGV`` in its own process: wall seconds and the CPU
    seconds of its whole process tree, plus what the process trees of
    ``also`` (a standalone cluster's daemons: their executors are the
    workers' children, not the driver's) spent meanwhile."""
    from spark_cpu import ProcessTree

    code = "import sys; from sharp_cer.cli import main; sys.exit(main(sys.argv[1:]))"
    daemons = [ProcessTree(pid) for pid in also]
    for tree in daemons:
        tree.sample()
    before = sum(tree.cpu_s for tree in daemons)
    began = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-c", code, *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    with ExitStack() as trees:
        tree = trees.enter_context(ProcessTree(child.pid))
        for daemon in daemons:
            trees.enter_context(daemon)
        _, err = child.communicate()
        tree.sample()
        wall = time.perf_counter() - began
        time.sleep(1.0)  # the JVM outlives the driver by a moment (and a cluster's executors): their last CPU
        for each in (tree, *daemons):
            each.sample()
    if child.returncode != 0:
        raise SystemExit(f"sharp-cer {' '.join(argv)} failed ({child.returncode}):\n{err.decode()[-2000:]}")
    cpu = tree.cpu_s + sum(d.cpu_s for d in daemons) - before
    processes = len(tree.seen) + sum(len(d.seen) for d in daemons)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "processes": processes}


#: the masters of ``--whole-job``: two local ones and a standalone cluster of two 1-core workers
STANDALONE = "standalone (2 workers x 1 core)"
WHOLE_JOB_MASTERS = (*MASTERS, STANDALONE)


def whole_job(
    sizes: list[int], workload_path: str, masters: tuple[str, ...] = WHOLE_JOB_MASTERS, conf: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The ``--whole-job`` experiment (see the module docstring), at each
    size in ``sizes``; with two sizes or more, the marginal CPU per event
    between the smallest and the largest (Spark's fixed start-up cancels out).
    ``conf``: ``KEY=VALUE`` Spark settings given to every ``run`` (``--conf``)."""
    from spark_cluster import standalone

    from sharp_cer.events.generators import generate, write_core_csv
    from sharp_cer.language import load_workload

    workload = load_workload(workload_path)
    assert workload.generator, f"{workload_path} names no generator"
    result: dict[str, Any] = {
        "workload": workload_path,
        "sizes": sizes,
        "command": " ".join(["bench_spark.py", *sys.argv[1:]]),
        "conf": list(conf),
        "load_before": os.getloadavg(),
        "runs": [],
    }
    types = {e.name: list(e.attributes) for e in workload.schema.event_types()}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        cluster = stack.enter_context(standalone(Path(tmp) / "cluster")) if STANDALONE in masters else None
        # the driver on loopback too (else Spark picks the machine's first interface)
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
        daemons = tuple(p.pid for p in cluster.processes) if cluster is not None else ()
        for events in sizes:
            path = Path(tmp) / f"events_{events}.csv"
            write_core_csv(generate(workload.generator, events, seed=0), types, path)
            written = Path(tmp) / f"in_process_{events}.jsonl"
            found = timed_command(["match", workload_path, "--events", str(path), "--out", str(written)], Path.cwd())
            result["runs"].append({"master": "in-process (match)", "events": events, **found})
            print(f"{events:,} events, in-process (match): {found}; load {os.getloadavg()[0]:.1f}", flush=True)
            for master in masters:
                url = cluster.url if master == STANDALONE and cluster is not None else master
                out = Path(tmp) / f"{master.split()[0]}_{events}"
                argv = ["run", workload_path, "--events", str(path), "--out", str(out), "--master", url]
                argv += [f"--conf={setting}" for setting in conf]
                figures = timed_command(argv, Path.cwd(), daemons if master == STANDALONE else (), env)
                result["runs"].append({"master": master, "events": events, **figures})
                print(f"{events:,} events, {master}: {figures}; load {os.getloadavg()[0]:.1f}", flush=True)
    result["load_after"] = os.getloadavg()
    result["table"] = whole_job_table(result["runs"], sizes)
    return result


def whole_job_table(runs: list[dict[str, Any]], sizes: list[int]) -> list[dict[str, Any]]:
    """Per master: at each size, wall, CPU and CPU per event (and against
    in-process); and the marginal CPU per event, smallest to largest size."""
    by = {(r["master"], r["events"]): r for r in runs}
    masters = list(dict.fromkeys(r["master"] for r in runs))
    base = masters[0]
    rows = []
    for master in masters:
        row: dict[str, Any] = {"master": master}
        for n in sizes:
            r, ref = by[(master, n)], by[(base, n)]
            row[f"wall_s@{n}"] = r["wall_s"]
            row[f"cpu_s@{n}"] = r["cpu_s"]
            row[f"cpu_us_per_event@{n}"] = round(1e6 * r["cpu_s"] / n, 1)
            row[f"cpu_vs_in_process@{n}"] = round(r["cpu_s"] / ref["cpu_s"], 2)
        if len(sizes) > 1:
            lo, hi = min(sizes), max(sizes)
            marginal = (by[(master, hi)]["cpu_s"] - by[(master, lo)]["cpu_s"]) / (hi - lo)
            ref = (by[(base, hi)]["cpu_s"] - by[(base, lo)]["cpu_s"]) / (hi - lo)
            row["marginal_cpu_us_per_event"] = round(1e6 * marginal, 1)
            row["marginal_vs_in_process"] = round(marginal / ref, 2) if ref > 0 else None
            row["fixed_cpu_s"] = round(by[(master, lo)]["cpu_s"] - marginal * lo, 1)  # the intercept: start-up
        rows.append(row)
    return rows


def print_whole_job(result: dict[str, Any]) -> None:
    """The table, in Markdown."""
    sizes = result["sizes"]
    head = ["master"]
    for n in sizes:
        head += [f"wall s @{n:,}", f"CPU s @{n:,}", f"CPU us/event @{n:,}", f"CPU / in-process @{n:,}"]
    if len(sizes) > 1:
        head += ["marginal CPU us/event", "marginal / in-process", "fixed CPU s"]
    print("| " + " | ".join(head) + " |")
    print("|---" + "|---:" * (len(head) - 1) + "|")
    for row in result["table"]:
        cells = [row["master"]]
        for n in sizes:
            cells += [f"{row[f'{k}@{n}']:g}" for k in ("wall_s", "cpu_s", "cpu_us_per_event", "cpu_vs_in_process")]
        if len(sizes) > 1:
            cells += [f"{row[k]}" for k in ("marginal_cpu_us_per_event", "marginal_vs_in_process", "fixed_cpu_s")]
        print("| " + " | ".join(cells) + " |")
    print(f"load average before {result['load_before']}, after {result['load_after']}")


def plot_whole_job(result: dict[str, Any], path: Path) -> None:
    """CPU per event and wall time per master, one bar per size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes, rows = result["sizes"], result["table"]
    fig, (cpu, wall) = plt.subplots(1, 2, figsize=(12, 4.5))
    width = 0.8 / len(sizes)
    for k, n in enumerate(sizes):
        xs = [i + k * width for i in range(len(rows))]
        cpu.bar(xs, [r[f"cpu_us_per_event@{n}"] for r in rows], width, label=f"{n:,} events")
        wall.bar(xs, [r[f"wall_s@{n}"] for r in rows], width, label=f"{n:,} events")
    if len(sizes) > 1:
        xs = [i + width * (len(sizes) - 1) / 2 for i in range(len(rows))]
        cpu.plot(xs, [r["marginal_cpu_us_per_event"] for r in rows], "kD", label="marginal (start-up cancelled)")
    for ax, label in ((cpu, "CPU us per event, every process"), (wall, "wall seconds")):
        ax.set_xticks([i + width * (len(sizes) - 1) / 2 for i in range(len(rows))])
        ax.set_xticklabels([r["master"].replace(" (", "\n(") for r in rows], fontsize=7)
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
    load = result["load_before"][0]
    fig.suptitle(f"sharp-cer run on Spark against match in-process ({Path(result['workload']).stem}; load {load:.1f})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30,000 events")
    parser.add_argument("--events", type=int, help="events per stream (default 150,000)")
    parser.add_argument("--whole-job", action="store_true", help="CPU of every process of `run` against `match`")
    parser.add_argument("--workload", default=str(ROOT.parent / "configs" / "stock_trading.toml"))
    parser.add_argument("--small", type=int, help="--whole-job: a second, smaller size (marginal CPU per event)")
    parser.add_argument("--name", default="spark_whole_job", help="--whole-job: results/NAME.json and .png")
    parser.add_argument("--masters", help="--whole-job: some of local[1],local[2],standalone (default: all three)")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="--whole-job: a Spark setting for every run, e.g. spark.driver.extraJavaOptions=-XX:+UseG1GC "
        "(the JVM's defaults instead of sharp-cer's lean start)",
    )
    args = parser.parse_args()
    if args.whole_job:
        sizes = sorted({args.events or 200_000, *([args.small] if args.small else [])})
        masters = tuple(args.masters.split(",")) if args.masters else WHOLE_JOB_MASTERS
        chosen = tuple(STANDALONE if m == "standalone" else m for m in masters)
        result = whole_job(sizes, args.workload, chosen, tuple(args.conf))
        RESULTS.mkdir(exist_ok=True)
        stem = RESULTS / args.name
        stem.with_suffix(".json").write_text(json.dumps(result, indent=1))
        plot_whole_job(result, stem.with_suffix(".png"))
        print_whole_job(result)
        print(f"wrote {stem}.json and .png")
        return
    n = args.events or (30_000 if args.quick else 150_000)
    workload = parse_workload(WORKLOAD)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for keys in KEYS:
            paths[keys] = str(Path(tmp) / f"events_{keys}.parquet")
            stream(n, keys).to_parquet(paths[keys], index=False, row_group_size=max(1, n // 8))
            seconds, matches = in_process(workload, paths[keys])
            rows.append({"keys": keys, "in_process_seconds": seconds, "matches": matches})
            print(f"in-process, {keys:>3} keys: {seconds:6.2f} s, {n / seconds:9,.0f} events/s, {matches:,} matches")
        from sharp_cer.spark.session import spark_session

        for master in MASTERS:
            spark = spark_session(master, **{"spark.sql.files.maxPartitionBytes": str(256 * 1024)})
            on_spark(spark, workload, paths[KEYS[-1]])  # warm-up: JVM, Python workers, plan cache
            for row in rows:
                seconds, matches = on_spark(spark, workload, paths[row["keys"]])
                if matches != row["matches"]:
                    raise SystemExit(f"{master}, {row['keys']} keys: {matches} matches, in-process {row['matches']}")
                row[f"{master}_seconds"] = seconds
                print(f"{master}, {row['keys']:>3} keys: {seconds:6.2f} s, {n / seconds:9,.0f} events/s")
            spark.stop()
    for row in rows:
        one, two = row["local[1]_seconds"], row["local[2]_seconds"]
        row["speedup_2_over_1"] = one / two
        row["spark_over_in_process"] = two / row["in_process_seconds"]
        row["targets"] = {
            "speedup_2_over_1 >= 1.3 (16+ keys)": None if row["keys"] < 16 else row["speedup_2_over_1"] >= 1.3,
            "spark_over_in_process <= 5": row["spark_over_in_process"] <= 5,
        }
    print(f"\n{n:,} events; events/s (time ratio)")
    header = ["keys", "matches", "in-process ev/s", "local[1] ev/s", "local[2] ev/s", "local[2] / local[1]"]
    print("| " + " | ".join([*header, "local[2] time / in-process"]) + " |")
    print("|---" * (len(header) + 1) + "|")
    for r in rows:
        rates = [n / r[c] for c in ("in_process_seconds", "local[1]_seconds", "local[2]_seconds")]
        cells = [str(r["keys"]), f"{r['matches']:,}", *[f"{x:,.0f}" for x in rates]]
        cells += [f"{r['speedup_2_over_1']:.2f}", f"{r['spark_over_in_process']:.2f}"]
        print("| " + " | ".join(cells) + " |")
    RESULTS.mkdir(exist_ok=True)
    stem = "spark_quick" if args.quick else "spark"
    (RESULTS / f"{stem}.json").write_text(json.dumps({"events": n, "rows": rows}, indent=2))
    plot(rows, n, RESULTS / f"{stem}.png")
    print(f"wrote {RESULTS / stem}.json and .png")


def plot(rows: list[dict[str, Any]], n: int, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [r["keys"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, column in (("in-process", "in_process_seconds"), ("Spark local[1]", "local[1]_seconds")):
        ax.plot(keys, [n / r[column] for r in rows], marker="o", label=label)
    ax.plot(keys, [n / r["local[2]_seconds"] for r in rows], marker="o", label="Spark local[2]")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("partition keys")
    ax.set_ylabel("events per second")
    ax.set_title(f"Spark against partitions and keys ({n:,} events)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
