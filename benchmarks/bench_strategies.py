"""What each selection strategy, consumption policy and LIMIT costs.

One Kleene query over the seeded stock tape, ``SELL ; BUY+ ; SELL`` on one
ticker pair within W events, run with every strategy (ALL, STRICT, NEXT,
LAST, MAX), with CONSUME BY ANY and with LIMIT 1. STRICT is compiled into
the automaton (its non-marking moves dropped), so it enumerates only strict
runs; NEXT, LAST and MAX choose among every match enumerated for an end
event, so they cost what ALL costs to enumerate plus the choice; counting
(``--count``) is also shown, by dynamic programming over the tECS.

    python benchmarks/bench_strategies.py [--events 20000] [--quick]

Prints a table and writes benchmarks/results/strategies.json.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from bench_engine import SCHEMA  # the script's folder is on the path

from sharp_cer.engine import Engine
from sharp_cer.events.generators import stocks
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan

QUERY = (
    "SELECT {strategy} * WHERE SELL AS a ; BUY+ ; SELL AS d FILTER a[name = 'MSFT'] AND d[name = 'AMAT'] "
    "WITHIN {w} EVENTS{tail}"
)
VARIANTS = {
    "ALL": ("", ""),
    "STRICT": ("STRICT", ""),
    "NEXT": ("NEXT", ""),
    "LAST": ("LAST", ""),
    "MAX": ("MAX", ""),
    "CONSUME BY ANY": ("", " CONSUME BY ANY"),
    "LIMIT 1": ("", " LIMIT 1"),
}
RESULTS = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--window", type=int, default=12)
    parser.add_argument("--quick", action="store_true", help="5,000 events")
    args = parser.parse_args()
    n = 5_000 if args.quick else args.events
    batch, _ = load_pandas(stocks(n, seed=7), SCHEMA)
    rows = []
    print(f"{n} stock events, W = {args.window}: {QUERY.format(strategy='<strategy>', w=args.window, tail='')}")
    print(f"{'variant':<16} {'matches':>9} {'steps/event':>12} {'events/s':>10}")
    for name, (strategy, tail) in [*VARIANTS.items(), ("ALL, counted", ("", ""))]:
        checked = parse_and_check(QUERY.format(strategy=strategy, w=args.window, tail=tail), SCHEMA)
        counting = name.endswith("counted")
        engine = Engine(compile_plan([("q", checked)], counting=counting), count_only=counting)
        began = time.perf_counter()
        engine.process(batch)
        seconds = time.perf_counter() - began
        matches = engine.stats()["matches"].get("q", 0)
        row = {
            "variant": name,
            "matches": matches,
            "enumeration_steps_per_event": engine.clock.enumeration_steps / n,
            "events_per_second": n / seconds,
        }
        rows.append(row)
        print(f"{name:<16} {matches:>9} {row['enumeration_steps_per_event']:>12.2f} {row['events_per_second']:>10.0f}")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "strategies.json").write_text(json.dumps({"events": n, "window": args.window, "runs": rows}, indent=2))


if __name__ == "__main__":
    main()
