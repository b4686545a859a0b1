"""Memory stays bounded by the window, not the stream (CORE §4-5).

Two queries at T = 100 [t] over 10,000,000 stock events, with two ways of
watching the memory the engine's own code holds (``tracemalloc``, counting
only blocks allocated in ``sharp_cer/engine/``: nodes, union-lists,
partitions, caches), each taken after a full garbage collection, which
also empties CPython's free lists (otherwise the tuples of the latest
matches linger there, up to 2,000 per size, and count as allocated):

- P_3 from ``bench_core_sequences`` (matches found, materialized, dropped)
  is traced from the first event: every allocation the engine ever made and
  still holds, so a slow leak would show as growth. Its state is small
  (tens of nodes, about 20 KB), so the figures are noisy.
- The every-event query of ``bench_core_operators`` (every event moves
  runs, hundreds of live nodes, no match) allocates so much that tracing
  slows it twelvefold; it is traced in probes, the last 10,000 events of
  every 100,000. A run's nodes live less than a window, so a probe sees
  the whole window's state (not the caches built at the start).

Every 10,000 events the live tECS nodes are sampled too. The figures
fluctuate with the stream, so the first million events and the last
million are compared, on their mean and their peak. The target: within
1.2x.

    python benchmarks/bench_core_memory.py [--events 10000000] [--quick]

Writes benchmarks/results/core_memory.json and core_memory.png.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from statistics import fmean
from typing import Any

from bench_core_operators import QUERIES  # the script's folder is on the path
from bench_core_sequences import WINDOW, sequence
from core_tape import RESULTS, measure, tape_from_arguments

from sharp_cer.api import Detector

SAMPLE_EVERY = 10_000
PROBE_EVERY = 100_000
FIGURES = ("live_nodes", "engine_bytes")
ENGINE_FILES = tracemalloc.Filter(True, "*/sharp_cer/engine/*")


def _engine_bytes() -> int:
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces([ENGINE_FILES])
    return sum(stat.size for stat in snapshot.statistics("filename"))


def main() -> None:
    n_events, path = tape_from_arguments(__doc__.splitlines()[0], default=10_000_000, quick=1_000_000)
    stretch = n_events // 10
    runs = {}
    print(f"{n_events} stock events from {path.name}, T = {WINDOW} [t]; first and last {stretch:,} events")
    print(
        f"{'query':<22} {'figure':<13} {'first mean':>11} {'last mean':>11} {'ratio':>6} {'first peak':>11} "
        f"{'last peak':>11} {'ratio':>6}"
    )
    queries = (
        ("P3", sequence(3, output=True), "traced"),
        ("every_event_no_match", QUERIES["every_event_no_match"], "probes"),
    )
    for name, text, how in queries:
        samples: list[dict[str, Any]] = []

        def sample(events: int, detector: Detector, samples: list[dict[str, Any]] = samples, how: str = how) -> None:
            figures = {"live_nodes": detector.engine.live_nodes()}
            if how == "traced" or events % PROBE_EVERY == 0:
                figures["engine_bytes"] = _engine_bytes()
            # empty the free lists again: a row made from a freed match's
            # dict would keep counting as the engine's
            gc.collect()
            row: dict[str, Any] = {"events": events, **figures}
            if how == "probes":
                if events % PROBE_EVERY == 0:
                    tracemalloc.stop()
                elif events % PROBE_EVERY == PROBE_EVERY - SAMPLE_EVERY:
                    tracemalloc.start()
            samples.append(row)

        if how == "traced":
            tracemalloc.start()
        result = measure([(name, text)], path, batch_rows=SAMPLE_EVERY, on_batch=sample)
        tracemalloc.stop()
        first = [s for s in samples if s["events"] <= stretch]
        last = [s for s in samples if s["events"] > n_events - stretch]
        figures = {}
        for what in FIGURES:
            early = [s[what] for s in first if what in s]
            late = [s[what] for s in last if what in s]
            f = figures[what] = {
                "first_mean": fmean(early),
                "last_mean": fmean(late),
                "mean_ratio": fmean(late) / fmean(early),
                "first_peak": max(early),
                "last_peak": max(late),
                "peak_ratio": max(late) / max(early),
            }
            print(
                f"{name:<22} {what:<13} {f['first_mean']:>11.0f} {f['last_mean']:>11.0f} {f['mean_ratio']:>6.3f} "
                f"{f['first_peak']:>11} {f['last_peak']:>11} {f['peak_ratio']:>6.3f}"
            )
        runs[name] = {"matches": result["matches"], "engine_bytes": how, "figures": figures, "samples": samples}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "core_memory.json").write_text(
        json.dumps({"events": n_events, "stretch": stretch, "window": WINDOW, "runs": runs}, indent=2) + "\n"
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, what, label in zip(axes, FIGURES, ("live tECS nodes", "engine allocations (KiB)"), strict=True):
        for name, run in runs.items():
            scale = 1024 if what == "engine_bytes" else 1
            points = [(s["events"], s[what] / scale) for s in run["samples"] if what in s]
            ax.plot([x for x, _ in points], [y for _, y in points], label=name)
        ax.set_xlabel("events processed")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
        ax.legend()
    fig.suptitle(f"Memory over {n_events:,} stock events at T = {WINDOW} [t]")
    fig.tight_layout()
    fig.savefig(RESULTS / "core_memory.png", dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
