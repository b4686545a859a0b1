"""A first measure of the engine: throughput and cost units on the stock tape.

Runs a few of CORE §5's query shapes over the seeded stock generator, every
match materialized, and reports events per second, cost units per event,
matches, live tECS nodes at the end and the determinization cache hit rate.
The full CORE benchmark suite (1M events from Parquet, sequence lengths,
window multiples, plots) is issue 6's; this is the baseline it starts from.

    python benchmarks/bench_engine.py [--events 100000] [--quick]

Prints a table and writes benchmarks/results/engine_baseline.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from sharp_cer.engine import Engine
from sharp_cer.events.generators import stocks
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan

SCHEMA = Schema.parse(
    """CREATE STREAM Stock {
         EVENT BUY { id:int, name:string, volume:int, price:double, t:primary_time },
         EVENT SELL { id:int, name:string, volume:int, price:double, t:primary_time }
       }"""
)
QUERIES = {
    "names": "SELECT * WHERE SELL AS a ; BUY AS b ; BUY AS c ; SELL AS d "
    "FILTER a[name = 'MSFT'] AND b[name = 'ORCL'] AND c[name = 'CSCO'] AND d[name = 'AMAT'] WITHIN 100 SECONDS",
    "prices": "SELECT * WHERE SELL AS a ; BUY AS b ; BUY AS c ; SELL AS d "
    "FILTER a[price > 39.5] AND b[price < 5.5] AND c[price > 39.5] AND d[price < 5.5] WITHIN 100 SECONDS",
    "every_event_moves": "SELECT * WHERE (SELL OR BUY) ; (SELL OR BUY) ; SELL FILTER SELL[price > 100] "
    "WITHIN 100 EVENTS",
    "kleene": "SELECT * WHERE SELL AS a ; BUY+ ; SELL AS d FILTER a[name = 'MSFT'] AND d[name = 'AMAT'] "
    "WITHIN 10 EVENTS",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true", help="10,000 events")
    args = parser.parse_args()
    n = 10_000 if args.quick else args.events
    batch, _ = load_pandas(stocks(n, seed=7), SCHEMA)
    rows = []
    for name, text in QUERIES.items():
        engine = Engine(compile_plan([(name, parse_and_check(text, SCHEMA))]))
        began = time.perf_counter()
        found = 0
        for lo in range(0, n, 10_000):
            found += len(engine.process(batch.take(np.arange(lo, min(lo + 10_000, n)))))
        seconds = time.perf_counter() - began
        stats = engine.stats()
        rows.append(
            {
                "query": name,
                "events": n,
                "matches": found,
                "events_per_second": round(n / seconds),
                "units_per_event": round(stats["units_per_event"], 2),
                "live_nodes": stats["live_nodes"],
                "cache_hit_rate": round(stats["cache_hit_rate"], 4),
            }
        )
    print(f"{'query':<18} {'events/s':>10} {'units/event':>12} {'matches':>8} {'live':>6} {'hit rate':>9}")
    for r in rows:
        print(
            f"{r['query']:<18} {r['events_per_second']:>10} {r['units_per_event']:>12} {r['matches']:>8} "
            f"{r['live_nodes']:>6} {r['cache_hit_rate']:>9.2%}"
        )
    out = Path(__file__).parent / "results" / "engine_baseline.json"
    out.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
