"""The least a micro-batch costs on this machine with the pieces a
``sharp-cer stream`` is built of, none of sharp-cer's work in it: the floor
under issue 38's "a 1,000-event micro-batch <= 0.5 s".

The same session as the stream's (``spark_session("local[2]")`` with
``stream_conf()``: RocksDB state, ``--partitions`` shuffle partitions, two as the stream's), a folder of
JSONL files read as text, trigger 1 s, one file of ``--events`` lines at a
time into an idle query (``--repeats`` files after one that warms the
workers up), and two queries:

- ``sink``: the lines straight to a Parquet file sink (no shuffle, no
  state): the file source, the offsets and commit logs, the sink;
- ``state``: each line's key (``--keys`` of them) and time, a watermark,
  ``groupBy(key).transformWithStateInPandas`` in event-time mode whose
  processor does the least a stateful processor does (per key: one value
  state read and written, one row out), to the same sink: what pyspark's
  stateful operator adds (planning, a shuffle, a Python worker per
  partition, its state server, the state store's commit).

The figure is the micro-batch's ``triggerExecution`` (Spark's own, from
its progress report), p50 over the files, with Spark's phases.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python -u bench_stream_floor.py [--events 1000] [--repeats 7]

Writes ``results/stream_floor.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from bench_stream import _runs, wait_for  # the script's folder is on the path
from pyspark.sql.streaming.stateful_processor import StatefulProcessor, StatefulProcessorHandle, TimerValues

from sharp_cer.spark.session import spark_session
from sharp_cer.spark.stream import stream_conf
from sharp_cer.spark.watch import Reports

ROOT = Path(__file__).resolve().parent


class Least(StatefulProcessor):
    """Per key: one value state read and written, one row out."""

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.seen = handle.getValueState("seen", "n bigint")

    def handleInputRows(
        self, key: Any, rows: Iterator[pd.DataFrame], timerValues: TimerValues
    ) -> Iterator[pd.DataFrame]:
        n = sum(len(frame) for frame in rows)
        stored = self.seen.get()
        total = n + (int(stored[0]) if stored is not None else 0)
        self.seen.update((total,))
        yield pd.DataFrame({"key": [int(key[0])], "n": [total]})

    def close(self) -> None:
        pass


def query(spark: Any, plan: str, source: str, checkpoint: str, out: str, keys: int) -> Any:
    from pyspark.sql import functions as F

    lines = spark.readStream.format("text").option("maxFilesPerTrigger", 1).load(source)
    if plan == "state":
        keyed = lines.select(
            F.pmod(F.hash("value"), F.lit(keys)).cast("bigint").alias("key"),
            F.current_timestamp().alias("time"),
        ).withWatermark("time", "10 milliseconds")
        lines = keyed.groupBy("key").transformWithStateInPandas(Least(), "key bigint, n bigint", "Append", "EventTime")
    writer = lines.writeStream.format("parquet").option("checkpointLocation", checkpoint).option("path", out)
    return writer.trigger(processingTime="1 second").start()


def one_plan(spark: Any, plan: str, events: int, repeats: int, keys: int) -> dict[str, Any]:
    line = json.dumps({"type": "BUY", "id": 0, "symbol": "S", "price": 1.0, "volume": 1, "ts": 0})
    with tempfile.TemporaryDirectory() as tmp:
        source, checkpoint, out = Path(tmp, "source"), str(Path(tmp, "ck")), str(Path(tmp, "out"))
        source.mkdir()
        running = query(spark, plan, str(source), checkpoint, out, keys)
        wait_for(lambda: running.lastProgress is not None, 120)
        reads = []
        for k in range(repeats + 1):
            reports = Reports(running)
            before = reports.poll()  # the id of the last micro-batch that ran
            hidden = source / f".part-{k:04d}.jsonl"
            hidden.write_text("\n".join(line.replace('"id": 0', f'"id": {i}') for i in range(events)) + "\n")
            hidden.rename(source / f"part-{k:04d}.jsonl")
            wait_for(lambda: reports.poll() > before, 300)  # noqa: B023 (called at once)
            time.sleep(1.5)  # a no-data micro-batch the watermark may run
            read = next(p for p in _runs(list(running.recentProgress)) if p["batchId"] > before)
            print(f"  {plan} file {k}: {read['durationMs']['triggerExecution']} ms", flush=True)
            if k:
                reads.append(read)
        running.stop()
    took = [r["durationMs"]["triggerExecution"] for r in reads]
    phases = {key: float(np.median([r["durationMs"].get(key, 0) for r in reads])) for key in reads[0]["durationMs"]}
    return {"plan": plan, "events": events, "ms": took, "p50_ms": float(np.median(took)), "phases_p50_ms": phases}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--keys", type=int, default=5, help="keys of the stateful query (stock_trading's stream has 5)")
    parser.add_argument("--partitions", type=int, default=2, help="shuffle partitions (the stream's: one per core)")
    parser.add_argument("--out", default=str(ROOT / "results" / "stream_floor.json"))
    args = parser.parse_args()
    spark = spark_session("local[2]", **stream_conf(), **{"spark.sql.shuffle.partitions": str(args.partitions)})
    result: dict[str, Any] = {"command": " ".join(["bench_stream_floor.py", *sys.argv[1:]])}
    result["load_average_before"] = os.getloadavg()
    result["plans"] = [one_plan(spark, plan, args.events, args.repeats, args.keys) for plan in ("sink", "state")]
    result["load_average_after"] = os.getloadavg()
    for run in result["plans"]:
        print(f"{run['plan']}: p50 {run['p50_ms']:.0f} ms {run['phases_p50_ms']}")
    Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
