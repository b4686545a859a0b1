"""Spark streaming latency on this machine (local[2], trigger 1 s): the
stock-trading workload's generated tape fed into a folder as JSONL files.

Two experiments:

- ``batch``: one file of ``--batch-events`` events at a time into an idle
  stream (``--repeats`` files, each after the last one's matches are out;
  one more first, not counted, warms the Python workers up): the duration
  of the micro-batch that reads the file (and releases to the engines
  every event the watermark it sets passes: with allowed lateness 0, all
  but the last second of event time) and of the no-data micro-batch after
  it (its new watermark fires the timers of the events still held), p50
  over the files.
- ``sustained``: for each of ``--rates`` events per second, one file a
  second: ``--warm-up`` seconds first (the stream's start: JVM tasks,
  Python workers), a wait until the stream has read them, then
  ``--seconds`` seconds measured. Per rate, for the measured window (the
  micro-batches after the warm-up's): the input rate against the processed
  rate, micro-batch durations p50/p99, arrival-to-match latency p50/p99
  (from each event's arrival in the stream: the start of the micro-batch
  that reads its file, to the match's emission on a worker; before issue
  38 it was the file's modification time, which also counted the file's
  wait for the next trigger, up to one interval); the same for the whole run
  (``whole_run_*``: the warm-up and the stream's start counted); whether
  the matches are exactly the in-process detector's over the same events;
  whether the rate is held (processed >= 95% of input and measured p99 <=
  trigger + 3 s, and flat: the measured window's second half's p99 at
  most its first half's plus one trigger interval, so no backlog builds
  up). ``highest_rate_held`` is the largest rate held.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python -u bench_stream.py [--only batch|sustained]

Writes ``results/stream.json`` and ``results/stream.png`` (``--out``). The
machine may be shared: the figures are of one run, with whatever else ran
beside it (the JSON records the load average before and after).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from sharp_cer.api import Detector
from sharp_cer.events.generators import generate
from sharp_cer.language import Workload, load_workload
from sharp_cer.spark.session import spark_session
from sharp_cer.spark.stream import StreamSettings, read_output, run_stream, start_stream, stream_conf
from sharp_cer.spark.stream_output import committed_files
from sharp_cer.spark.stream_processors import RESTORED
from sharp_cer.spark.watch import Reports

ROOT = Path(__file__).resolve().parent
KEY_GROUPS: int | None = None  # key groups per lane (None: the stream's default)
PARTITIONS: int | None = None  # the stream's shuffle partitions (None: the stream's default)


def write_file(folder: Path, name: str, part: pd.DataFrame) -> None:
    """A file that appears whole (written under a dot-name, then renamed)."""
    hidden = folder / f".{name}"
    hidden.write_text(part.to_json(orient="records", lines=True))
    hidden.rename(folder / name)


def tape(workload: Workload, n: int) -> pd.DataFrame:
    """``n`` generated trades with ids and times continuing one tape."""
    return generate(workload.generator or "", n, seed=5)


def truth(workload: Workload, frame: pd.DataFrame) -> Counter[tuple[str, tuple[int, ...]]]:
    found = Detector.from_workload(workload, history=False).feed(frame)
    return Counter((m.query, tuple(sorted(m.events))) for m in found)


def streamed(spark: Any, out: str) -> Counter[tuple[str, tuple[int, ...]]]:
    rows = read_output(spark, out).where("kind = 'match'").select("query", "events").collect()
    return Counter((r["query"], tuple(sorted(r["events"]))) for r in rows)


def restores(spark: Any, out: str) -> int:
    """How often a key group's engine was restored from the state, not reused from the worker's memory."""
    rows = read_output(spark, out).where(f"kind = 'counter' AND name = '{RESTORED}'").count()
    return int(rows)


def wait_for(condition: Any, limit: float) -> bool:
    deadline = time.time() + limit
    while not condition():
        if time.time() > deadline:
            return False
        time.sleep(0.05)
    return True


def tree_cpu() -> float:
    """CPU seconds (user + sys) of this process and every live descendant
    (the JVM, its Python workers), from /proc: ``time`` misses children not
    yet reaped. A worker that exits between two readings takes its CPU
    with it (Spark keeps its Python workers between micro-batches)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    used: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry.name)] = int(fields[1])
        used[int(entry.name)] = int(fields[11]) + int(fields[12])
    mine, grew = {os.getpid()}, True
    while grew:
        found = {pid for pid, parent in parents.items() if parent in mine} - mine
        grew = bool(found)
        mine |= found
    return sum(used.get(pid, 0) for pid in mine) / ticks


def progress(query: Any) -> list[dict[str, Any]]:
    return list(query.recentProgress)


def _runs(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The progress of the micro-batches that ran (not idle triggers)."""
    return [p for p in runs if "addBatch" in p["durationMs"]]


def _ran(runs: list[dict[str, Any]]) -> list[int]:
    """The durations of the micro-batches that ran."""
    return [p["durationMs"]["triggerExecution"] for p in _runs(runs)]


def one_batch(spark: Any, workload: Workload, events: int, repeats: int, trigger: float) -> dict[str, Any]:
    """Durations of the micro-batch that reads one file of ``events`` and of
    the no-data one after it (if Spark runs one), with the read one's
    profile: Spark's phases (``durationMs``) and each stateful operator's
    state-store times, p50 over the files."""
    frame = tape(workload, events * (repeats + 1))
    reads: list[dict[str, Any]] = []
    releases: list[int] = []
    cpu: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        source, checkpoint, out = Path(tmp, "source"), str(Path(tmp, "ck")), str(Path(tmp, "out"))
        source.mkdir()
        settings = StreamSettings(trigger=trigger, format="jsonl", key_groups=KEY_GROUPS, partitions=PARTITIONS)
        query = start_stream(workload, str(source), checkpoint, out, settings, spark)
        wait_for(lambda: query.lastProgress is not None, 120)
        for k in range(repeats + 1):  # the first warms the Python workers up
            reports = Reports(query)  # polled cheaply: ``recentProgress`` at every poll took a core's share
            before = reports.poll()  # the id of the last micro-batch that ran
            began = tree_cpu()
            write_file(source, f"part-{k:04d}.jsonl", frame.iloc[k * events : (k + 1) * events])
            wait_for(lambda: reports.poll() > before, 300)  # noqa: B023 (called at once)
            spent = tree_cpu() - began  # the file's micro-batch (and the idle triggers before it)
            # the no-data micro-batch the file's new watermark runs, if any
            if wait_for(lambda: reports.poll() > before + 1, 3 * trigger + 5):  # noqa: B023
                spent = tree_cpu() - began
            time.sleep(trigger)
            read, *after = [p for p in _runs(progress(query)) if p["batchId"] > before][:2]
            release = after[0]["durationMs"]["triggerExecution"] if after and not after[0]["numInputRows"] else 0
            print(
                f"  file {k}: read {read['durationMs']['triggerExecution']} ms, then {release} ms, CPU {spent:.2f} s",
                flush=True,
            )
            if k:
                reads.append(read)
                releases.append(release)
                cpu.append(spent)
        query.stop()
        restored = restores(spark, out)
    read_ms = [r["durationMs"]["triggerExecution"] for r in reads]
    phases = {key: float(np.median([r["durationMs"].get(key, 0) for r in reads])) for key in reads[0]["durationMs"]}
    operators = [
        {
            "operator": op["operatorName"],
            **{key: float(np.median([r["stateOperators"][i][key] for r in reads])) for key in STATE_TIMES},
        }
        for i, op in enumerate(reads[0]["stateOperators"])
    ]
    both = [a + b for a, b in zip(read_ms, releases, strict=True)]
    return {
        "events": events,
        "read_ms": read_ms,
        "release_ms": releases,
        "p50_read_ms": float(np.median(read_ms)),
        "p50_release_ms": float(np.median(releases)),
        "p50_both_ms": float(np.median(both)),
        # CPU of the process tree from writing the file to the end of its last micro-batch (polled: +50 ms)
        "cpu_s": cpu,
        "p50_cpu_s": float(np.median(cpu)),
        "read_phases_p50_ms": phases,
        "read_state_operators_p50_ms": operators,
        "engines_restored": restored,
    }


#: a stateful operator's times in a micro-batch's progress
STATE_TIMES = ("allUpdatesTimeMs", "allRemovalsTimeMs", "commitTimeMs")


def sustained(
    spark: Any, workload: Workload, rate: int, seconds: int, warm_up: int, trigger: float, catch_up: float
) -> dict[str, Any]:
    """``warm_up`` seconds of one file of ``rate`` events a second, a wait
    until the stream has read them all and run a few idle triggers, then
    ``seconds`` seconds of it measured; then at most ``catch_up`` seconds
    for the stream to read every file (if it does not, the rate is not held
    and the matches are not compared). The measured window is the
    micro-batches after the warm-up's (their durations, the matches they
    emit, the files written in it); the whole run counts everything from
    the stream's start."""
    frame = tape(workload, rate * (warm_up + seconds))
    with tempfile.TemporaryDirectory() as tmp:
        source, checkpoint, out = Path(tmp, "source"), str(Path(tmp, "ck")), str(Path(tmp, "out"))
        source.mkdir()
        settings = StreamSettings(trigger=trigger, format="jsonl", key_groups=KEY_GROUPS, partitions=PARTITIONS)
        query = start_stream(workload, str(source), checkpoint, out, settings, spark)
        written: list[float] = []

        def feed(first: int, files: int) -> None:
            began = time.time()
            for k in range(first, first + files):
                time.sleep(max(0.0, began + k - first - time.time()))
                write_file(source, f"part-{k:04d}.jsonl", frame.iloc[k * rate : (k + 1) * rate])
                written.append(time.time())

        feed(0, warm_up)
        warmed = wait_for(lambda: files_read_of(progress(query)) >= warm_up, catch_up)
        time.sleep(3 * trigger)  # the warm-up's last releases
        boundary = max((p["batchId"] for p in progress(query)), default=-1)
        feed(warm_up, seconds)
        read_all = warmed and wait_for(lambda: files_read_of(progress(query)) >= warm_up + seconds, catch_up)
        caught_up = time.time()
        time.sleep(3 * trigger)  # the release after the last read
        wait_for(lambda: not query.status["isTriggerActive"], 60)  # stopped between micro-batches
        runs = progress(query)
        query.stop()
        committed = set(committed_files(out))
        warm = set(committed_files(out, through=boundary))
        whole = arrival_to_match(sorted(committed))  # the live run's matches (not those the final flush releases)
        measured = arrival_to_match(sorted(committed - warm))
        # flat: the measured window's second half no slower than its first (no backlog building up)
        last = max((p["batchId"] for p in runs), default=boundary)
        middle = boundary + (last - boundary) // 2
        early = set(committed_files(out, through=middle)) - warm
        halves = [arrival_to_match(sorted(early)), arrival_to_match(sorted(committed - warm - early))]
        got: Counter[tuple[str, tuple[int, ...]]] = Counter()
        if read_all:  # the rest, flushed, against the in-process detector
            run_stream(
                workload,
                str(source),
                checkpoint,
                out,
                StreamSettings(format="jsonl", key_groups=KEY_GROUPS, partitions=PARTITIONS),
                spark,
            )
            got = streamed(spark, out)
    expected = truth(workload, frame) if read_all else Counter()
    durations = _ran([p for p in runs if p["batchId"] > boundary])
    span = caught_up - written[warm_up] if len(written) > warm_up else 0.0
    fed = written[-1] - written[warm_up] + 1 if len(written) > warm_up else 0.0
    read_in_window = max(0, min(files_read_of(runs) - warm_up, seconds))
    return {
        "rate": rate,
        "seconds": seconds,
        "warm_up_seconds": warm_up,
        "events": len(frame),
        "input_rate": seconds * rate / fed if fed else 0.0,
        "processed_rate": read_in_window * rate / span if span > 0 else 0.0,
        "read_all": read_all,
        "micro_batches": len(durations),
        "batch_p50_ms": float(np.percentile(durations, 50)) if durations else 0.0,
        "batch_p99_ms": float(np.percentile(durations, 99)) if durations else 0.0,
        "whole_run_micro_batches": len(_ran(runs)),
        "whole_run_batch_p99_ms": float(np.percentile(_ran(runs), 99)) if _ran(runs) else 0.0,
        **measured,
        **{f"whole_run_{k}": v for k, v in whole.items()},
        "same_matches": got == expected if read_all else None,  # not compared when the stream fell behind
        "p99_first_half_ms": halves[0]["arrival_to_match_p99_ms"],
        "p99_second_half_ms": halves[1]["arrival_to_match_p99_ms"],
        "flat_p99": flat(halves[0]["arrival_to_match_p99_ms"], halves[1]["arrival_to_match_p99_ms"], trigger),
        # kept up (processed as fast as fed) with p99 within the target and flat, in the measured window
        "held": read_all
        and read_in_window * rate / span >= 0.95 * rate
        and measured["arrival_to_match_p99_ms"] <= (trigger + 3) * 1000
        and flat(halves[0]["arrival_to_match_p99_ms"], halves[1]["arrival_to_match_p99_ms"], trigger),
        "matches": sum(expected.values()) if read_all else None,
    }


def flat(first_ms: float, second_ms: float, trigger: float) -> bool:
    """Whether a p99 stayed flat over the measured window: its second half's
    at most its first half's plus one trigger interval (a stream falling
    behind queues more every micro-batch, so its p99 climbs).

    >>> flat(1200.0, 1900.0, 1.0), flat(1200.0, 2300.0, 1.0)
    (True, False)
    """
    return second_ms <= first_ms + trigger * 1000


def files_read_of(runs: list[dict[str, Any]]) -> int:
    """Files the stream read (one input row each: a file is read whole)."""
    return sum(p["numInputRows"] for p in runs)


def arrival_to_match(files: list[Path]) -> dict[str, float]:
    """p50/p99/max of the arrival-to-match latency (ms, in 10 ms bins) of
    the matches these output files hold, all queries together."""
    from sharp_cer.spark.columns import E2E

    tables = [pq.read_table(f, columns=["kind", "bin", "value"]) for f in files]
    rows = pd.concat([t.to_pandas() for t in tables], ignore_index=True) if tables else pd.DataFrame()
    rows = rows[rows["kind"] == E2E] if len(rows) else rows
    if not len(rows):
        return {"arrival_to_match_p50_ms": 0.0, "arrival_to_match_p99_ms": 0.0, "arrival_to_match_max_ms": 0.0}
    values = np.repeat(rows["bin"].to_numpy(float), rows["value"].to_numpy(int))
    return {
        "arrival_to_match_p50_ms": float(np.percentile(values, 50)),
        "arrival_to_match_p99_ms": float(np.percentile(values, 99)),
        "arrival_to_match_max_ms": float(values.max()),
    }


def plot(result: dict[str, Any], path: Path) -> None:
    """Latency against the input rate: arrival-to-match and micro-batch
    durations, p50 and p99 in the measured window (and the whole run's
    arrival-to-match p99), with the target (trigger + 3 s)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = result["sustained"]
    rates = [r["rate"] for r in runs]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label, style in (
        ("arrival_to_match_p50_ms", "arrival to match p50", "o-"),
        ("arrival_to_match_p99_ms", "arrival to match p99", "o--"),
        ("whole_run_arrival_to_match_p99_ms", "arrival to match p99, whole run (start and warm-up in)", "x:"),
        ("batch_p50_ms", "micro-batch p50", "s-"),
        ("batch_p99_ms", "micro-batch p99", "s--"),
    ):
        ax.plot(rates, [r[key] / 1000 for r in runs], style, label=label)
    ax.axhline(result["trigger_s"] + 3, color="grey", linestyle=":", label="target p99: trigger + 3 s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("input rate, events/s (stock_trading, one JSONL file a second)")
    ax.set_ylabel("seconds")
    ax.set_title(f"Spark streaming on {result['master']}, trigger {result['trigger_s']:g} s")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["batch", "sustained"])
    parser.add_argument("--rates", default="500,2000,5000,10000")
    parser.add_argument("--seconds", type=int, default=60, help="seconds measured per rate")
    parser.add_argument("--warm-up", type=int, default=10, help="seconds fed per rate before the measured ones")
    parser.add_argument("--trigger", type=float, default=1.0)
    parser.add_argument("--catch-up", type=float, default=600, help="seconds the stream may take to read every file")
    parser.add_argument("--batch-events", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--key-groups", type=int, help="key groups per lane (default: the stream's)")
    parser.add_argument("--partitions", type=int, help="the stream's shuffle partitions (default: the stream's)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    parser.add_argument("--out", default=str(ROOT / "results" / "stream.json"))
    args = parser.parse_args()
    workload = load_workload(ROOT.parent / "configs" / "stock_trading.toml")
    global KEY_GROUPS
    KEY_GROUPS = args.key_groups
    global PARTITIONS
    PARTITIONS = args.partitions
    # every micro-batch's progress is kept (Spark keeps 100 by default)
    conf = {"spark.sql.streaming.numRecentProgressUpdates": "100000", **dict(c.split("=", 1) for c in args.conf)}
    spark = spark_session("local[2]", **{**stream_conf(), **conf})
    result: dict[str, Any] = {
        "trigger_s": args.trigger,
        "master": "local[2]",
        "conf": conf,
        "command": " ".join(["bench_stream.py", *sys.argv[1:]]),
        "load_average_before": os.getloadavg(),
    }
    if args.only in (None, "batch"):
        print(f"micro-batch of {args.batch_events} events:", flush=True)
        result["batch"] = one_batch(spark, workload, args.batch_events, args.repeats, args.trigger)
        print(json.dumps(result["batch"]), flush=True)
    if args.only in (None, "sustained"):
        result["sustained"] = []
        for rate in [int(r) for r in args.rates.split(",")]:
            print(f"sustained {rate} events/s for {args.seconds} s:", flush=True)
            run = sustained(spark, workload, rate, args.seconds, args.warm_up, args.trigger, args.catch_up)
            result["sustained"].append(run)
            print(json.dumps(result["sustained"][-1]), flush=True)
    result["load_average_after"] = os.getloadavg()
    Path(args.out).parent.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    if result.get("sustained"):
        held = [r["rate"] for r in result["sustained"] if r["held"]]
        result["highest_rate_held"] = max(held) if held else None
        Path(args.out).write_text(json.dumps(result, indent=2))
        print("| rate | processed ev/s | p99 ms | p99 1st half | p99 2nd half | flat | held | same matches |")
        print("|---:|---:|---:|---:|---:|---|---|---|")
        for r in result["sustained"]:
            print(
                f"| {r['rate']:,} | {r['processed_rate']:,.0f} | {r['arrival_to_match_p99_ms']:,.0f} | "
                f"{r['p99_first_half_ms']:,.0f} | {r['p99_second_half_ms']:,.0f} | {r['flat_p99']} | {r['held']} | "
                f"{r['same_matches']} |"
            )
        print(f"highest rate held with a flat p99: {result['highest_rate_held']}; load {result['load_average_after']}")
        plot(result, Path(args.out).with_suffix(".png"))


if __name__ == "__main__":
    main()
