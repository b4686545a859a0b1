"""``--count`` against the update (issue 33 item 7): CPU seconds per event of
``SELECT * FROM S WHERE A ; B+ ; C WITHIN 1000 EVENTS`` over uniformly
random A/B/C events (seeded), three ways in one process, same engine:

- ``update``: the tECS update alone (the query's count is not taken: the
  engine's per-query enumeration step is replaced by nothing);
- ``counter``: counting as ``--count`` does now (``engine.counting``:
  sliding-window sums of per-start run vectors, no walk);
- ``walk``: counting on the tECS (``enumeration.count_matches``, each node
  keeping its count across events), as ``--count`` did before and still
  does where the counter does not apply.

The target: ``counter`` costs about what ``update`` costs, per event,
whatever the number of matches (here each C completes up to 2^300 matches).
Counts must agree between ``counter`` and ``walk``.

    python benchmarks/bench_count.py [--events 10000 --events 100000] [--no-walk-above 20000]

Writes benchmarks/results/count.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from sharp_cer.engine import Engine
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan

SCHEMA = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }")
QUERY = "SELECT * FROM S WHERE A ; B+ ; C WITHIN 1000 EVENTS"
RESULTS = Path(__file__).parent / "results"


def events(n: int, seed: int = 7) -> Any:
    """``n`` uniformly random A/B/C events, as one batch."""
    types = np.random.default_rng(seed).choice(["A", "B", "C"], n)
    return load_csv("".join(f"{t},{i}\n" for i, t in enumerate(types)), SCHEMA)[0]


def run(batch: Any, mode: str) -> dict[str, Any]:
    """CPU seconds of one engine over ``batch`` counting the ``mode`` way."""
    engine = Engine(compile_plan([("q", parse_and_check(QUERY, SCHEMA))], counting=True), count_only=True)
    (runner,) = engine.runners
    if mode != "counter":
        runner.counting = None  # no counter: every partition counts on the tECS
    if mode == "update":
        runner._enumerate = lambda *args, **kwargs: None  # type: ignore[method-assign]
    began = time.process_time()
    engine.process(batch)
    seconds = time.process_time() - began
    stats = engine.stats()
    return {
        "mode": mode,
        "cpu_seconds": round(seconds, 3),
        "us_per_event": round(1e6 * seconds / len(batch), 1),
        "count": str(stats["matches"].get("q", 0)),
        "enumeration_steps": stats["enumeration_steps"],
        "nodes_created": stats["nodes_created"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, action="append")
    parser.add_argument("--no-walk-above", type=int, default=20000, help="skip the walk above this many events")
    args = parser.parse_args()
    rows = []
    for n in args.events or [10000, 100000]:
        batch = events(n)
        modes = ["update", "counter"] + (["walk"] if n <= args.no_walk_above else [])
        found = {mode: run(batch, mode) for mode in modes}
        if "walk" in found and found["walk"]["count"] != found["counter"]["count"]:
            raise SystemExit(f"counts differ at {n} events: {found['walk']['count']} != {found['counter']['count']}")
        for result in found.values():
            rows.append({"events": n, **result})
            print(
                f"{n:>8} events  {result['mode']:<8} {result['cpu_seconds']:>8.2f} s CPU  "
                f"{result['us_per_event']:>8.1f} us/event  steps {result['enumeration_steps']}"
            )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "count.json").write_text(json.dumps({"query": QUERY, "runs": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
