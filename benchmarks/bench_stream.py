"""Spark streaming latency on this machine (local[2], trigger 1 s): the
stock-trading workload's generated tape fed into a folder as JSONL files.

Two experiments:

- ``batch``: one file of ``--batch-events`` events at a time into an idle
  stream (``--repeats`` files, each after the last one's matches are out):
  the duration of the micro-batch that reads it and of the one after it
  that releases it to the engines (the watermark moves at the end of a
  micro-batch), p50 over the files.
- ``sustained``: for each of ``--rates`` events per second, one file a
  second for ``--seconds`` seconds. Per rate: the input rate against the
  processed rate, micro-batch durations p50/p99, arrival-to-match latency
  p50/p99 (from each file's modification time, stamped when the feeder
  writes it, to the match's emission on a worker) and whether the matches
  are exactly the in-process detector's over the same events.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python -u bench_stream.py [--only batch|sustained]

Writes ``results/stream.json`` and ``results/stream.png``. The machine may
be shared: the figures are of one run, with whatever else ran beside it.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sharp_cer.api import Detector
from sharp_cer.events.generators import generate
from sharp_cer.language import Workload, load_workload
from sharp_cer.spark.session import spark_session
from sharp_cer.spark.stream import StreamSettings, read_output, run_stream, start_stream, stream_conf
from sharp_cer.spark.stream_processors import RESTORED

ROOT = Path(__file__).resolve().parent
GROUPS: int | None = None  # key groups per lane (None: the stream's default)


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


def progress(query: Any) -> list[dict[str, Any]]:
    return list(query.recentProgress)


def _ran(runs: list[dict[str, Any]]) -> list[int]:
    """The durations of the micro-batches that ran (not idle triggers)."""
    return [p["durationMs"]["triggerExecution"] for p in runs if "addBatch" in p["durationMs"]]


def one_batch(spark: Any, workload: Workload, events: int, repeats: int, trigger: float) -> dict[str, Any]:
    """Durations of the micro-batches that read and release one file of ``events``."""
    frame = tape(workload, events * (repeats + 1))
    reads, releases = [], []
    with tempfile.TemporaryDirectory() as tmp:
        source, checkpoint, out = Path(tmp, "source"), str(Path(tmp, "ck")), str(Path(tmp, "out"))
        source.mkdir()
        settings = StreamSettings(trigger=trigger, format="jsonl", groups=GROUPS)
        query = start_stream(workload, str(source), checkpoint, out, settings, spark)
        wait_for(lambda: query.lastProgress is not None, 120)
        for k in range(repeats + 1):  # the first warms the Python workers up
            ran = _ran(progress(query))
            write_file(source, f"part-{k:04d}.jsonl", frame.iloc[k * events : (k + 1) * events])
            # the file's micro-batch, then the no-data one its new watermark runs
            wait_for(lambda: len(_ran(progress(query))) >= len(ran) + 2, 300)  # noqa: B023 (called at once)
            time.sleep(trigger)
            read, release = _ran(progress(query))[len(ran) : len(ran) + 2]
            print(f"  file {k}: read {read} ms, release {release} ms", flush=True)
            if k:
                reads.append(read)
                releases.append(release)
        query.stop()
        restored = restores(spark, out)
    both = [a + b for a, b in zip(reads, releases, strict=True)]
    return {
        "events": events,
        "read_ms": reads,
        "release_ms": releases,
        "p50_read_ms": float(np.median(reads)),
        "p50_release_ms": float(np.median(releases)),
        "p50_both_ms": float(np.median(both)),
        "engines_restored": restored,
    }


def sustained(
    spark: Any, workload: Workload, rate: int, seconds: int, trigger: float, catch_up: float
) -> dict[str, Any]:
    """One file of ``rate`` events a second for ``seconds`` seconds; then
    at most ``catch_up`` seconds for the stream to read every file (if it
    does not, the rate is not held and the matches are not compared)."""
    frame = tape(workload, rate * seconds)
    with tempfile.TemporaryDirectory() as tmp:
        source, checkpoint, out = Path(tmp, "source"), str(Path(tmp, "ck")), str(Path(tmp, "out"))
        source.mkdir()
        settings = StreamSettings(trigger=trigger, format="jsonl", groups=GROUPS)
        query = start_stream(workload, str(source), checkpoint, out, settings, spark)
        wait_for(lambda: query.lastProgress is not None, 120)
        first = query.lastProgress["batchId"]
        written: list[float] = []

        def feed() -> None:
            began = time.time()
            for k in range(seconds):
                time.sleep(max(0.0, began + k - time.time()))
                write_file(source, f"part-{k:04d}.jsonl", frame.iloc[k * rate : (k + 1) * rate])
                written.append(time.time())

        feeder = threading.Thread(target=feed)
        feeder.start()
        feeder.join()
        read_all = wait_for(lambda: sum(p["numInputRows"] for p in progress(query)) >= seconds, catch_up)
        caught_up = time.time()
        files_read = sum(p["numInputRows"] for p in progress(query))
        time.sleep(3 * trigger)  # the release after the last read
        runs = [p for p in progress(query) if p["batchId"] > first]
        query.stop()
        latency = arrival_to_match(spark, out)  # the live run's matches (not those the final flush releases)
        got: Counter[tuple[str, tuple[int, ...]]] = Counter()
        if read_all:  # the rest, flushed, against the in-process detector
            run_stream(workload, str(source), checkpoint, out, StreamSettings(format="jsonl", groups=GROUPS), spark)
            got = streamed(spark, out)
    expected = truth(workload, frame) if read_all else Counter()
    durations = _ran(runs)
    span = caught_up - (written[0] if written else caught_up)
    return {
        "rate": rate,
        "seconds": seconds,
        "events": len(frame),
        "input_rate": len(frame) / (written[-1] - written[0] + 1) if written else 0.0,
        "processed_rate": min(files_read, seconds) * rate / span if span > 0 else 0.0,
        "read_all": read_all,
        "micro_batches": len(durations),
        "batch_p50_ms": float(np.percentile(durations, 50)) if durations else 0.0,
        "batch_p99_ms": float(np.percentile(durations, 99)) if durations else 0.0,
        **latency,
        "same_matches": got == expected if read_all else None,  # not compared when the stream fell behind
        # kept up (processed as fast as fed) with p99 within the target
        "held": read_all
        and len(frame) / span >= 0.95 * rate
        and latency["arrival_to_match_p99_ms"] <= (trigger + 3) * 1000,
        "matches": sum(expected.values()) if read_all else None,
    }


def arrival_to_match(spark: Any, out: str) -> dict[str, float]:
    """p50/p99/max of every match's arrival-to-match latency (ms, in 10 ms bins), all queries together."""
    from sharp_cer.spark.stream_group import E2E

    rows = read_output(spark, out).where(f"kind = '{E2E}'").groupBy("bin").sum("value").collect()
    if not rows:
        return {"arrival_to_match_p50_ms": 0.0, "arrival_to_match_p99_ms": 0.0, "arrival_to_match_max_ms": 0.0}
    values = np.repeat([float(r[0]) for r in rows], [int(r[1]) for r in rows])
    return {
        "arrival_to_match_p50_ms": float(np.percentile(values, 50)),
        "arrival_to_match_p99_ms": float(np.percentile(values, 99)),
        "arrival_to_match_max_ms": float(values.max()),
    }


def plot(result: dict[str, Any], path: Path) -> None:
    """Latency against the input rate: arrival-to-match and micro-batch
    durations, p50 and p99, with the target (trigger + 3 s)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = result["sustained"]
    rates = [r["rate"] for r in runs]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, label, style in (
        ("arrival_to_match_p50_ms", "arrival to match p50", "o-"),
        ("arrival_to_match_p99_ms", "arrival to match p99", "o--"),
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
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--trigger", type=float, default=1.0)
    parser.add_argument("--catch-up", type=float, default=600, help="seconds the stream may take to read every file")
    parser.add_argument("--batch-events", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--groups", type=int, help="key groups per lane (default: the stream's)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting")
    parser.add_argument("--out", default=str(ROOT / "results" / "stream.json"))
    args = parser.parse_args()
    workload = load_workload(ROOT.parent / "configs" / "stock_trading.toml")
    global GROUPS
    GROUPS = args.groups
    # every micro-batch's progress is kept (Spark keeps 100 by default)
    conf = {"spark.sql.streaming.numRecentProgressUpdates": "100000", **dict(c.split("=", 1) for c in args.conf)}
    spark = spark_session("local[2]", **{**stream_conf(), **conf})
    result: dict[str, Any] = {"trigger_s": args.trigger, "master": "local[2]", "conf": conf}
    if args.only in (None, "batch"):
        print(f"micro-batch of {args.batch_events} events:", flush=True)
        result["batch"] = one_batch(spark, workload, args.batch_events, args.repeats, args.trigger)
        print(json.dumps(result["batch"]), flush=True)
    if args.only in (None, "sustained"):
        result["sustained"] = []
        for rate in [int(r) for r in args.rates.split(",")]:
            print(f"sustained {rate} events/s for {args.seconds} s:", flush=True)
            result["sustained"].append(sustained(spark, workload, rate, args.seconds, args.trigger, args.catch_up))
            print(json.dumps(result["sustained"][-1]), flush=True)
    Path(args.out).parent.mkdir(exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    if result.get("sustained"):
        held = [r["rate"] for r in result["sustained"] if r["held"]]
        result["highest_rate_held"] = max(held) if held else None
        Path(args.out).write_text(json.dumps(result, indent=2))
        plot(result, Path(args.out).with_suffix(".png"))


if __name__ == "__main__":
    main()
