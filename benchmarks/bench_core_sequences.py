"""CORE §5, sequence queries with and without output (Figure 7).

P_n = A1 ; A2 ; ... ; An over the stock tape, Ai a SELL for odd i and a BUY
for even i, with the filter ``Ai[name = TICKERS[i mod 20]]``, within T = 100
time units (``WITHIN 100 [t]``, about 67 events). P'_n adds one more event,
a SELL of a ticker the tape never holds, so it never outputs: it measures
the update work alone. n = 3, 6, 9, 12, 24; every match is materialized.

Reported per query: matches, events/s end to end (Parquet read, load and
engine) and in the engine alone, the *relevant* events (the ones not
skipped in bulk), and update units (transitions and nodes) per relevant
event. The targets: P'_24 keeps at least 0.15x the throughput of P'_3, and
at most 1.2 x 8 x its units per relevant event.

    python benchmarks/bench_core_sequences.py [--events 1000000] [--quick]

Writes benchmarks/results/core_sequences.json and core_sequences.png.
"""

from __future__ import annotations

import json

from core_tape import RESULTS, TICKERS, measure, plot, tape_from_arguments  # the script's folder is on the path

LENGTHS = (3, 6, 9, 12, 24)
WINDOW = 100


def sequence(n: int, *, output: bool, window: int = WINDOW) -> str:
    """P_n, or P'_n (``output=False``)."""
    steps = [("SELL" if i % 2 else "BUY", TICKERS[i % len(TICKERS)]) for i in range(1, n + 1)]
    if not output:
        steps.append(("SELL", "NONE"))
    pattern = " ; ".join(f"{kind} AS e{i}" for i, (kind, _) in enumerate(steps))
    filters = " AND ".join(f"e{i}[name = '{name}']" for i, (_, name) in enumerate(steps))
    return f"SELECT * WHERE {pattern} FILTER {filters} WITHIN {window} [t]"


def main() -> None:
    n_events, path = tape_from_arguments(__doc__.splitlines()[0])
    rows = []
    print(f"{n_events} stock events from {path.name}, T = {WINDOW} [t]")
    print(f"{'query':<6} {'matches':>8} {'events/s':>10} {'engine ev/s':>12} {'relevant':>9} {'units/relevant':>15}")
    for output in (True, False):
        for n in LENGTHS:
            name = f"P{n}" if output else f"P'{n}"
            row = {"query": name, "n": n, "output": output, **measure([(name, sequence(n, output=output))], path)}
            rows.append(row)
            print(
                f"{name:<6} {row['matches']:>8} {row['events_per_second']:>10.0f} "
                f"{row['engine_events_per_second']:>12.0f} {row['relevant_events']:>9} "
                f"{row['update_units_per_relevant_event']:>15.2f}"
            )
    quiet = {r["n"]: r for r in rows if not r["output"]}
    throughput = quiet[24]["events_per_second"] / quiet[3]["events_per_second"]
    units = quiet[24]["update_units_per_relevant_event"] / quiet[3]["update_units_per_relevant_event"]
    print(f"P'24 / P'3: throughput {throughput:.2f}x (target >= 0.15), units per relevant event {units:.2f}x (<= 9.6)")
    RESULTS.mkdir(exist_ok=True)
    summary = {"throughput_24_over_3": throughput, "units_per_relevant_24_over_3": units}
    (RESULTS / "core_sequences.json").write_text(
        json.dumps({"events": n_events, "window": WINDOW, "runs": rows, **summary}, indent=2) + "\n"
    )
    plot(
        RESULTS / "core_sequences.png",
        f"CORE §5 sequences on {n_events:,} stock events (T = {WINDOW} [t])",
        "sequence length n",
        {
            label: (
                [r["n"] for r in rows if r["output"] is out],
                [r["events_per_second"] for r in rows if r["output"] is out],
            )
            for label, out in (("P_n (with output)", True), ("P'_n (no output)", False))
        },
        "events per second (end to end)",
    )


if __name__ == "__main__":
    main()
