"""Trailing absence on event time (issue 35): its cost per event, and memory.

The stream: heartbeats ``HB { dev, t }`` of ``--devices`` devices, one event
every 100 microseconds of event time from a device drawn at random, so each
device beats about every 10 s (one in twenty gaps is over 30 s). Events are
made batch by batch (100,000 per batch) and never held together.

- cost: ``SELECT * WHERE HB AS h ; ABSENT(HB) PARTITION BY [dev] WITHIN 30
  SECONDS`` against the same pattern without the absence (``SELECT * WHERE
  HB AS h PARTITION BY [dev] WITHIN 30 SECONDS``), over the same events, in
  one run: seconds per million events, and the ratio (target: at most 1.10).
- memory: the trailing-absence query alone in a fresh process per length,
  peak RSS (``ru_maxrss``) at each length (target: the longest at most 1.3x
  the shortest).

    python benchmarks/bench_trailing_absence.py [--events 1000000] [--devices 100000]
        [--memory 1000000,3000000] [--step-us 100] [--skip-cost]

Writes benchmarks/results/trailing_absence.json.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from sharp_cer.engine import Engine
from sharp_cer.events.batch import Column, EventBatch
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan

RESULTS = Path(__file__).parent / "results"
SCHEMA = Schema.parse("CREATE STREAM S { EVENT HB { dev:int, t:primary_time } }")
ABSENCE = "SELECT * WHERE HB AS h ; ABSENT(HB) PARTITION BY [dev] WITHIN 30 SECONDS"
PLAIN = "SELECT * WHERE HB AS h PARTITION BY [dev] WITHIN 30 SECONDS"
STEP = 100_000  # nanoseconds of event time between two events (``--step-us`` changes it)
BATCH = 100_000


def batches(n_events: int, devices: int, seed: int = 7, step: int = STEP) -> Any:
    """The heartbeat stream, batch by batch (``step`` ns between events)."""
    rng = np.random.default_rng(seed)
    event = SCHEMA.event("HB")
    for lo in range(0, n_events, BATCH):
        n = min(BATCH, n_events - lo)
        positions = np.arange(lo, lo + n, dtype=np.int64)
        valid = np.ones(n, dtype=np.bool_)
        columns = {
            "dev": Column("int", rng.integers(0, devices, n, dtype=np.int64), valid),
            "t": Column("primary_time", positions * step, valid),
        }
        yield EventBatch((event,), positions, np.zeros(n, dtype=np.int32), columns)


def run(text: str, n_events: int, devices: int, step: int = STEP) -> tuple[float, int]:
    """Seconds of engine time and matches (alerts) over the stream."""
    engine = Engine(compile_plan([("q", parse_and_check(text, SCHEMA))]))
    spent, found = 0.0, 0
    for batch in batches(n_events, devices, step=step):
        began = time.perf_counter()
        found += len(engine.process(batch))
        spent += time.perf_counter() - began
    return spent, found


def memory(n_events: int, devices: int, step: int = STEP) -> dict[str, Any]:
    """The absence query alone over n events in this process: peak RSS."""
    spent, found = run(ABSENCE, n_events, devices, step)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"events": n_events, "seconds": spent, "alerts": found, "peak_rss_mib": peak_kib / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--devices", type=int, default=100_000)
    parser.add_argument("--memory", default="1000000,3000000", help="stream lengths for peak RSS, comma-separated")
    parser.add_argument("--step-us", type=int, default=STEP // 1000, help="event time between two events (us)")
    parser.add_argument("--skip-cost", action="store_true", help="measure memory only")
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    step = args.step_us * 1000
    if args.memory_child:
        print(json.dumps(memory(args.memory_child, args.devices, step)))
        return
    if args.skip_cost:
        cost: dict[str, Any] = {}
    else:
        cost = measure_cost(args.events, args.devices, step)
    lengths = [int(x) for x in args.memory.split(",") if x]
    rss = []
    for n in lengths:
        child = [sys.executable, __file__, "--memory-child", str(n), "--devices", str(args.devices)]
        child += ["--step-us", str(args.step_us)]
        rss.append(json.loads(subprocess.run(child, check=True, capture_output=True, text=True).stdout))
        print(json.dumps(rss[-1]))
    result: dict[str, Any] = {"cost": cost, "memory": rss, "step_us": args.step_us}
    if len(rss) > 1:
        result["rss_ratio"] = rss[-1]["peak_rss_mib"] / rss[0]["peak_rss_mib"]
        print(f"peak RSS ratio {lengths[-1]:,} / {lengths[0]:,} events: {result['rss_ratio']:.2f}")
    RESULTS.mkdir(exist_ok=True)
    name = "trailing_absence.json" if not args.skip_cost else "trailing_absence_memory.json"
    (RESULTS / name).write_text(json.dumps(result, indent=2))


def measure_cost(n_events: int, devices: int, step: int) -> dict[str, Any]:
    """Both queries over the same events, in one run."""
    with_absence, alerts = run(ABSENCE, n_events, devices, step)
    plain, matches = run(PLAIN, n_events, devices, step)
    per_million = 1e6 / n_events
    cost = {
        "events": n_events,
        "devices": devices,
        "absence_seconds_per_million": with_absence * per_million,
        "plain_seconds_per_million": plain * per_million,
        "ratio": with_absence / plain,
        "alerts": alerts,
        "plain_matches": matches,
    }
    print(json.dumps(cost, indent=2))
    return cost


if __name__ == "__main__":
    main()
