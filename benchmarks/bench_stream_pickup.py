"""How soon a running Spark stream takes a changed workload file (issue 39's
target: within 2 trigger intervals of the file's change, nothing lost or
doubled), with the change taken inside the running query (no restart).

A stream (``run_stream(..., workload_source=...)``, local[2]) reads a
small CSV file the feeder writes every trigger interval; the workload file
changes ``--changes`` times (a query added, then removed, by turns: each
taken inside the query), each once the last change's micro-batch has
committed and a random part of a trigger interval later. Per change: the
file's modification time to (a) the start of the first micro-batch run
under the new version (the micro-batch whose control file asks for it:
its offsets file's modification time, written as it starts) and (b) that
micro-batch's commit; in seconds and in trigger intervals; and the
duration of the micro-batches around it (a change waits for the running
one to end), and how many micro-batches started between the change and
the one under it (0: it landed at the next boundary). The machine may be
shared: the load average is recorded.

    cd benchmarks && PYTHONPATH=.. ../.venv/bin/python -u bench_stream_pickup.py --triggers 0.5 2 --changes 6

Writes ``results/stream_pickup.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from sharp_cer.language import parse_workload
from sharp_cer.spark.session import spark_session
from sharp_cer.spark.stream import StreamSettings, checkpoint_history, run_stream, stream_conf
from sharp_cer.spark.watch import StopRequest

ROOT = Path(__file__).resolve().parent
HEAD = """[workload]
name = "pickup"
schema = "CREATE STREAM S { EVENT A { k:int, t:primary_time }, EVENT B { k:int, t:primary_time } }"
[[query]]
name = "a_then_b"
tenant = "acme"
text = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 20 EVENTS"
"""
ADDED = """[[query]]
name = "b_then_a"
tenant = "globex"
text = "SELECT * WHERE B ; A PARTITION BY [k] WITHIN 20 EVENTS"
"""


def control_batches(query: Path) -> dict[str, int]:
    """Each control file the query read, with the micro-batch that read it."""
    by_offset: dict[int, list[str]] = {}
    for log in (query / "sources" / "1").glob("[0-9]*"):
        for line in log.read_text().splitlines()[1:]:
            entry = json.loads(line)
            by_offset.setdefault(int(entry["batchId"]), []).append(Path(urlparse(entry["path"]).path).name)
    found, before = {}, -1
    for batch in sorted(int(p.name) for p in (query / "offsets").glob("[0-9]*")):
        lines = (query / "offsets" / str(batch)).read_text().splitlines()
        if len(lines) < 4 or lines[3] == "-":
            continue
        offset = int(json.loads(lines[3])["logOffset"])
        for o in range(before + 1, offset + 1):
            found.update({name: batch for name in by_offset.get(o, [])})
        before = offset
    return found


def run(trigger: float, changes: int, events_per_file: int, spark: Any, folder: Path) -> dict[str, Any]:
    source, checkpoint, out, spec = folder / "source", folder / "ck", folder / "out", folder / "w.toml"
    source.mkdir()
    spec.write_text(HEAD)
    stop = StopRequest()
    done = threading.Event()
    clock = [0]

    def feed() -> None:
        n = 0
        while not done.is_set():
            rows = []
            for _ in range(events_per_file):
                clock[0] += 1_000_000
                rows.append(f"{'AB'[n % 2]},{n % 7},{clock[0]}")
                n += 1
            name = f"part-{n:09d}.csv"
            (source / f".{name}").write_text("\n".join(rows) + "\n")
            (source / f".{name}").rename(source / name)
            done.wait(trigger)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    settings = StreamSettings(trigger=trigger)
    result: dict[str, Any] = {}

    def stream() -> None:
        workload = parse_workload(HEAD)
        result["summary"] = run_stream(
            workload, str(source), str(checkpoint), str(out), settings, spark, stop=stop, workload_source=spec
        )

    runner = threading.Thread(target=stream)
    runner.start()
    query = checkpoint / "query"
    commits = query / "commits"

    def committed() -> set[int]:
        return {int(p.name) for p in commits.glob("[0-9]*")} if commits.is_dir() else set()

    rng = random.Random(7)
    rows = []
    try:
        while len(committed()) < 3:  # the stream started and warmed up
            time.sleep(0.1)
        for change in range(changes):
            time.sleep(rng.uniform(0, trigger))
            spec.write_text(HEAD + (ADDED if change % 2 == 0 else ""))
            changed = os.stat(spec).st_mtime
            number = change + 1
            batch = None
            while batch is None or batch not in committed():
                read = control_batches(query)
                batch = next((b for name, b in read.items() if name.startswith(f"version-{number}-")), None)
                time.sleep(0.05)
            started = os.stat(query / "offsets" / str(batch)).st_mtime
            finished = os.stat(commits / str(batch)).st_mtime
            before = os.stat(commits / str(batch - 1)).st_mtime - os.stat(query / "offsets" / str(batch - 1)).st_mtime
            # micro-batches that started after the change but before the one under it (0: the next boundary)
            missed = sum(changed < os.stat(query / "offsets" / str(b)).st_mtime < started for b in range(batch))
            began = os.stat(query / "offsets" / str(batch - 1)).st_mtime
            running = began < changed < os.stat(commits / str(batch - 1)).st_mtime  # a batch ran at the change
            rows.append(
                {
                    "version": number,
                    "micro_batch": batch,
                    "to_start_s": round(started - changed, 3),
                    "to_commit_s": round(finished - changed, 3),
                    "to_start_triggers": round((started - changed) / trigger, 2),
                    "its_duration_s": round(finished - started, 3),
                    "duration_before_s": round(before, 3),
                    "batches_started_before_it": missed,
                    "a_batch_ran_at_the_change": running,
                }
            )
            print(trigger, rows[-1], flush=True)
    finally:
        done.set()  # the feeder first: micro-batches longer than the trigger leave no boundary to stop at
        stop.set()
        runner.join()
    versions, _ = checkpoint_history(str(checkpoint))
    starts = [r["to_start_s"] for r in rows]
    return {
        "trigger_s": trigger,
        "changes": rows,
        "to_start_s_p50": statistics.median(starts),
        "to_start_s_max": max(starts),
        "within_2_triggers": sum(s <= 2 * trigger for s in starts),
        "at_the_next_boundary": sum(r.get("batches_started_before_it", 0) == 0 for r in rows),
        "versions": len(versions),
        "restarts": len(result["summary"].pauses_s),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--triggers", type=float, nargs="+", default=[0.5, 2.0])
    parser.add_argument("--changes", type=int, default=6)
    parser.add_argument("--events-per-file", type=int, default=50)
    parser.add_argument("--out", default=str(ROOT / "results" / "stream_pickup.json"))
    args = parser.parse_args()
    load_before = os.getloadavg()
    spark = spark_session("local[2]", **{**stream_conf(), "spark.sql.shuffle.partitions": "2"})
    figures = []
    for trigger in args.triggers:
        with tempfile.TemporaryDirectory() as folder:
            figures.append(run(trigger, args.changes, args.events_per_file, spark, Path(folder)))
    report = {"load_before": load_before, "load_after": os.getloadavg(), "runs": figures}
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "runs"}))
    for f in figures:
        print({k: v for k, v in f.items() if k != "changes"})


if __name__ == "__main__":
    main()
