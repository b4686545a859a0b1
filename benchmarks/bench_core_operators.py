"""CORE §5, other operators (Figure 9), and the engine's worst case.

SELL ; BUY ; BUY ; SELL within T = 100 time units on the stock tape, with
name filters (CORE's Q2), price filters, OR in the middle steps (Q5),
PARTITION BY [volume] (Q3, no filters: every event can start a run), and
Kleene over the middle step; and a query where every event fires a
transition and no match ever completes (a condition no price meets). Every
match is materialized. The targets: at least 250,000 events/s on the
name filters, at least 30,000 on the every-event query (end to end: Parquet
read, load and engine).

    python benchmarks/bench_core_operators.py [--events 1000000] [--quick]

Writes benchmarks/results/core_operators.json and core_operators.png.
"""

from __future__ import annotations

import json

from core_tape import RESULTS, measure, tape_from_arguments  # the script's folder is on the path

NAMES = "a[name = 'MSFT'] AND b[name = 'ORCL'] AND c[name = 'CSCO'] AND d[name = 'AMAT']"
QUERIES = {
    "names": f"SELECT * WHERE SELL AS a ; BUY AS b ; BUY AS c ; SELL AS d FILTER {NAMES} WITHIN 100 [t]",
    "prices": "SELECT * WHERE SELL AS a ; BUY AS b ; BUY AS c ; SELL AS d "
    "FILTER a[price > 39.5] AND b[price < 5.5] AND c[price > 39.5] AND d[price < 5.5] WITHIN 100 [t]",
    "or": f"SELECT * WHERE SELL AS a ; (BUY OR SELL) AS b ; (BUY OR SELL) AS c ; SELL AS d FILTER {NAMES} "
    "WITHIN 100 [t]",
    "partition": "SELECT * WHERE SELL ; BUY ; BUY ; SELL PARTITION BY [volume] WITHIN 100 [t]",
    "kleene": "SELECT * WHERE SELL AS a ; BUY+ AS b ; SELL AS d "
    "FILTER a[name = 'MSFT'] AND b[name = 'ORCL'] AND d[name = 'AMAT'] WITHIN 100 [t]",
    "every_event_no_match": "SELECT * WHERE (SELL OR BUY) AS a ; (SELL OR BUY) AS b ; SELL AS c "
    "FILTER c[price > 100] WITHIN 100 [t]",
}
TARGETS = {"names": 250_000, "every_event_no_match": 30_000}


def main() -> None:
    n_events, path = tape_from_arguments(__doc__.splitlines()[0])
    rows = []
    print(f"{n_events} stock events from {path.name}")
    print(f"{'query':<22} {'matches':>8} {'events/s':>10} {'engine ev/s':>12} {'relevant':>9} {'target':>8}")
    for name, text in QUERIES.items():
        row = {"query": name, "text": text, **measure([(name, text)], path)}
        target = TARGETS.get(name)
        row["target_events_per_second"] = target
        row["meets_target"] = None if target is None else row["events_per_second"] >= target
        rows.append(row)
        print(
            f"{name:<22} {row['matches']:>8} {row['events_per_second']:>10.0f} "
            f"{row['engine_events_per_second']:>12.0f} {row['relevant_events']:>9} {target or '':>8}"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "core_operators.json").write_text(json.dumps({"events": n_events, "runs": rows}, indent=2) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.bar([r["query"] for r in rows], [r["events_per_second"] for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("events per second (end to end)")
    ax.set_title(f"CORE §5 operators on {n_events:,} stock events (T = 100 [t])")
    ax.tick_params(axis="x", rotation=30)
    fig.tight_layout()
    fig.savefig(RESULTS / "core_operators.png", dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
