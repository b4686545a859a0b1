"""CORE §5, the time window from T to 4T (Figure 8).

P'_3 (no output: the update work alone) and P_3 (with output) from
``bench_core_sequences`` at windows of T, 2T, 3T and 4T, T = 100 time units
(about 67 events). CORE's claim is that the update cost does not depend on
the window, and that enumeration is output-linear: the enumeration steps
per match stay flat while the matches grow. The target: steps per match of
P_3 within 1.25x across T..4T.

    python benchmarks/bench_core_windows.py [--events 1000000] [--quick]

Writes benchmarks/results/core_windows.json and core_windows.png.
"""

from __future__ import annotations

import json

from bench_core_sequences import WINDOW, sequence  # the script's folder is on the path
from core_tape import RESULTS, measure, plot, tape_from_arguments


def main() -> None:
    n_events, path = tape_from_arguments(__doc__.splitlines()[0])
    rows = []
    print(f"{n_events} stock events from {path.name}, T = {WINDOW} [t]")
    print(f"{'query':<6} {'window':>6} {'matches':>9} {'events/s':>10} {'engine ev/s':>12} {'steps/match':>12}")
    for output in (False, True):
        for k in (1, 2, 3, 4):
            name = "P3" if output else "P'3"
            text = sequence(3, output=output, window=k * WINDOW)
            row = {"query": name, "window": k * WINDOW, "output": output, **measure([(name, text)], path)}
            rows.append(row)
            steps = row["enumeration_steps_per_match"]
            print(
                f"{name:<6} {k}T{'':>4} {row['matches']:>9} {row['events_per_second']:>10.0f} "
                f"{row['engine_events_per_second']:>12.0f} {steps if steps is None else round(steps, 2)!s:>12}"
            )
    per_match = [r["enumeration_steps_per_match"] for r in rows if r["output"]]
    spread = max(per_match) / min(per_match)
    quiet = [r["events_per_second"] for r in rows if not r["output"]]
    print(f"P3 steps per match, max/min over T..4T: {spread:.3f} (target <= 1.25)")
    print(f"P'3 throughput at 4T / at T: {quiet[-1] / quiet[0]:.2f}x")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "core_windows.json").write_text(
        json.dumps({"events": n_events, "T": WINDOW, "runs": rows, "steps_per_match_spread": spread}, indent=2) + "\n"
    )
    plot(
        RESULTS / "core_windows.png",
        f"CORE §5 windows on {n_events:,} stock events (T = {WINDOW} [t])",
        "window (multiples of T)",
        {
            label: (
                [r["window"] // WINDOW for r in rows if r["output"] is out],
                [r["events_per_second"] for r in rows if r["output"] is out],
            )
            for label, out in (("P'_3 (no output)", False), ("P_3 (with output)", True))
        },
        "events per second (end to end)",
    )


if __name__ == "__main__":
    main()
