"""Cross-event conditions with and without node summaries: Sharp's Q1.

Q1 (Sharp Table 2) over its synthetic dataset DS2 (§6.1: types A..F, id in
1..25, x in 1..100): ``A ; B+ ; C ; D`` with SAME[id] and
``SUM(b.x) < c.x``, here ``PARTITION BY [id]`` and a window of W events.
The condition spans events, so the engine checks it during enumeration.
With summaries (min and max of SUM(b.x) and c.x over each tECS branch) a
branch whose best case already fails is not entered; without them every
candidate is walked to the end and then rejected. Both runs must give the
same matches; the table compares the enumeration work per match.

    python benchmarks/bench_pruning.py [--events 20000] [--quick]

Prints a table and writes benchmarks/results/pruning.json and pruning.png.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from sharp_cer.engine import Engine
from sharp_cer.events.generators import sharp_ds2
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan

SCHEMA = Schema.parse(
    "CREATE STREAM DS2 { " + ", ".join(f"EVENT {k} {{ id:int, x:int, t:primary_time }}" for k in "ABCDEF") + " }"
)
Q1 = "SELECT * WHERE (A ; B+ AS b ; C AS c ; D) FILTER sum(b.x) < c.x PARTITION BY [id] WITHIN {w} EVENTS"
RESULTS = Path(__file__).parent / "results"


def measure(n: int, window: int, prune: bool) -> dict[str, float]:
    """One run of Q1: matches, enumeration steps and candidates, seconds."""
    batch, _ = load_pandas(sharp_ds2(n, seed=11), SCHEMA)
    engine = Engine(compile_plan([("Q1", parse_and_check(Q1.format(w=window), SCHEMA))]), prune=prune)
    began = time.perf_counter()
    matches = engine.process(batch)
    seconds = time.perf_counter() - began
    cost = engine.clock.per_query.get("Q1")
    steps = cost.enumeration_steps if cost else 0
    candidates = cost.candidates if cost else 0
    return {
        "window": window,
        "summaries": prune,
        "matches": len(matches),
        "keys": hash(tuple(sorted(m.key() for m in matches))),
        "enumeration_steps": steps,
        "candidates": candidates,
        "steps_per_match": steps / max(1, len(matches)),
        "candidates_per_match": candidates / max(1, len(matches)),
        "seconds": seconds,
        "events_per_second": n / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="4,000 events, two windows")
    args = parser.parse_args()
    n = 4_000 if args.quick else args.events
    windows = [250, 500] if args.quick else [250, 500, 1000, 1500]
    rows = []
    print(f"Q1 on DS2, {n} events: {Q1.format(w='W')}")
    header = f"{'W':>6} {'summaries':>9} {'matches':>8} {'steps/match':>12} {'cand./match':>12} {'ev/s':>9}"
    print(header)
    for window in windows:
        pair = [measure(n, window, prune) for prune in (False, True)]
        if pair[0]["keys"] != pair[1]["keys"]:
            raise SystemExit(f"W={window}: the runs with and without summaries found different matches")
        for r in pair:
            r.pop("keys")
            rows.append(r)
            print(
                f"{window:>6} {'on' if r['summaries'] else 'off':>9} {r['matches']:>8} "
                f"{r['steps_per_match']:>12.1f} {r['candidates_per_match']:>12.2f} {r['events_per_second']:>9.0f}"
            )
        off, on = pair
        print(
            f"{'':>6} {'ratio':>9} {'':>8} {off['steps_per_match'] / max(on['steps_per_match'], 1e-9):>11.1f}x "
            f"{off['candidates_per_match'] / max(on['candidates_per_match'], 1e-9):>11.1f}x "
            f"{on['events_per_second'] / off['events_per_second']:>8.2f}x"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "pruning.json").write_text(json.dumps({"events": n, "query": Q1, "runs": rows}, indent=2) + "\n")
    _plot(rows, RESULTS / "pruning.png")


def _plot(rows: list[dict[str, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    for prune, label in ((False, "without summaries"), (True, "with summaries")):
        mine = [r for r in rows if r["summaries"] == prune]
        ax.plot([r["window"] for r in mine], [r["candidates_per_match"] for r in mine], marker="o", label=label)
    ax.set_xlabel("window (events)")
    ax.set_ylabel("candidates visited per match")
    ax.set_yscale("log")
    ax.set_title("Sharp Q1 (SUM(b.x) < c.x) on DS2")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
