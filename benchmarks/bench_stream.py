"""The demo stream's latency (issue 10): the stock-trading workload over
files arriving one per second, on local Spark streaming.

A feeder writes ``--files`` JSONL files of generated trades (in time
order, ``--events`` in all) into a source folder, one per
``--interval`` seconds, while ``sharp-cer``'s stream runs with a
processing-time trigger of ``--trigger`` seconds. The feeder starts once the
stream has run its first (empty) micro-batch; when every file has been
read, the stream is stopped, then run once more
without a trigger, which flushes what the watermark still held (the end of
the input). The matches are checked against the in-process detector over
the same events; the summary gives each query's engine latency (cost
units per event) and end-to-end latency (ms from a file's arrival to the
emission of each match it completes) beside the micro-batches' durations.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python -u bench_stream.py [--files N] [--events N]

Writes ``results/stream.json``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from sharp_cer.api import Detector
from sharp_cer.events.generators import generate
from sharp_cer.language import load_workload
from sharp_cer.spark.session import spark_session
from sharp_cer.spark.stream import StreamSettings, read_output, run_stream, start_stream, stream_conf

ROOT = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--trigger", type=float, default=1.0)
    args = parser.parse_args()
    workload = load_workload(ROOT.parent / "configs" / "stock_trading.toml")
    frame = generate(workload.generator or "", args.events, seed=5)
    truth = Counter(m.query for m in Detector.from_workload(workload, history=False).feed(frame))
    spark = spark_session("local[2]", **stream_conf())
    with tempfile.TemporaryDirectory() as tmp:
        source, checkpoint, out = Path(tmp, "source"), str(Path(tmp, "checkpoint")), str(Path(tmp, "out"))
        source.mkdir()

        def feed() -> None:
            step = -(-len(frame) // args.files)
            for k in range(args.files):
                part = frame.iloc[k * step : (k + 1) * step]
                hidden = source / f".part-{k:04d}.jsonl"
                hidden.write_text(part.to_json(orient="records", lines=True))
                hidden.rename(source / f"part-{k:04d}.jsonl")  # appears whole
                time.sleep(args.interval)

        settings = StreamSettings(trigger=args.trigger, format="jsonl")
        query = start_stream(workload, str(source), checkpoint, out, settings, spark)
        while query.lastProgress is None:  # warm: the first (empty) micro-batch is done
            time.sleep(0.2)
        began = time.time()
        feeder = threading.Thread(target=feed)
        feeder.start()
        feeder.join()
        while sum(p["numInputRows"] for p in query.recentProgress) < args.files:  # caught up: a file is a row
            time.sleep(0.2)
        query.stop()
        durations = [p["durationMs"]["triggerExecution"] for p in query.recentProgress if p["numInputRows"]]
        summary = run_stream(workload, str(source), checkpoint, out, StreamSettings(format="jsonl"), spark)
        seconds = time.time() - began
        matches = Counter(r["query"] for r in read_output(spark, out).where("kind = 'match'").collect())
    print(summary.render())
    same = matches == truth
    print(f"same matches per query as in-process: {'yes' if same else 'NO'}; {seconds:.1f} s in all")
    print(f"micro-batches with input: {len(durations)}, duration ms p50 {sorted(durations)[len(durations) // 2]} "
          f"max {max(durations)}")  # fmt: skip
    result = {
        "events": args.events, "files": args.files, "interval_s": args.interval, "trigger_s": args.trigger,
        "same_matches": same, "batch_ms": durations, "summary": summary.to_json(),
    }  # fmt: skip
    (ROOT / "results").mkdir(exist_ok=True)
    (ROOT / "results" / "stream.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
