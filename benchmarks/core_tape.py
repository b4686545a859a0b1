"""The stock tape of CORE §5's experiments, and one way to run queries on it.

The tape is the seeded generator ``sharp_cer.events.generators.stocks``
(BUY or SELL with equal odds, 20 tickers uniformly, volumes 100..1000,
prices uniform in [5, 40), 0-3 time units between trades), written to
Parquet in chunks of a million rows with ``t`` as a plain integer, so
``WITHIN 100 [t]`` is a window of 100 time units (about 67 events). Files
are cached in ``benchmarks/data/`` (not committed).

``measure`` streams the Parquet file in row batches through a
``Detector`` (the public API: load, check, process), materializes every
match, and reports throughput end to end (reading and loading included)
and in the engine alone, with the engine's cost figures.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sharp_cer.api import Detector
from sharp_cer.events.generators import stocks
from sharp_cer.language import Schema

SCHEMA = Schema.parse(
    """CREATE STREAM Stock {
         EVENT BUY { id:int, name:string, volume:int, price:double, t:int },
         EVENT SELL { id:int, name:string, volume:int, price:double, t:int }
       }"""
)
#: Tickers in the order the sequence queries use them (all 20 occur).
TICKERS = [
    *["MSFT", "ORCL", "CSCO", "AMAT", "INTC", "RIMM", "QQQ", "IPIX", "YHOO", "DELL"],
    *["AAPL", "AMZN", "GOOG", "IBM", "NVDA", "QCOM", "SUNW", "TXN", "EBAY", "JNPR"],
]
DATA = Path(__file__).parent / "data"
RESULTS = Path(__file__).parent / "results"
CHUNK = 1_000_000
BATCH_ROWS = 100_000


def installed_env(cache: Path, **extra: str) -> dict[str, str]:
    """This process's environment for a ``sharp-cer`` child that starts as an
    installed package does: from cached bytecode (pip compiles a package when
    it installs it), kept in ``cache`` rather than in the source tree. With
    ``PYTHONDONTWRITEBYTECODE`` set, as some sandboxes and CI images do, a
    child run from a source tree would compile every module it imports at
    each start (about 0.1 s); the first run fills the cache."""
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(cache), **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def tape(n: int, seed: int = 7) -> Path:
    """The Parquet file of the first ``n`` events of the seeded tape
    (written on first use)."""
    path = DATA / f"stocks-{n}-{seed}.parquet"
    if path.exists():
        return path
    DATA.mkdir(exist_ok=True)
    partial = path.with_suffix(".partial")
    writer: pq.ParquetWriter | None = None
    t0 = 0
    for k, lo in enumerate(range(0, n, CHUNK)):
        frame = stocks(min(CHUNK, n - lo), seed=seed * 1000 + k)
        seconds = (frame["t"].to_numpy(dtype=np.int64) - int(frame["t"].iloc[0])) // 1_000_000_000
        frame["t"] = t0 + seconds
        frame["id"] = frame["id"].to_numpy() + lo
        t0 = int(frame["t"].iloc[-1]) + 1
        table = pa.Table.from_pandas(frame[["type", "id", "name", "volume", "price", "t"]], preserve_index=False)
        if writer is None:
            writer = pq.ParquetWriter(partial, table.schema)
        writer.write_table(table, row_group_size=BATCH_ROWS)
    assert writer is not None
    writer.close()
    partial.rename(path)
    return path


def tape_from_arguments(description: str, default: int = 1_000_000, quick: int = 100_000) -> tuple[int, Path]:
    """The ``--events N`` and ``--quick`` options of a benchmark script:
    how many events to run, and the tape that holds them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--events", type=int, default=default)
    parser.add_argument("--quick", action="store_true", help=f"{quick:,} events")
    args = parser.parse_args()
    n_events = quick if args.quick else args.events
    return n_events, tape(n_events)


def measure(
    queries: list[tuple[str, str]],
    path: Path,
    *,
    batch_rows: int = BATCH_ROWS,
    on_batch: Any = None,
    **options: Any,
) -> dict[str, Any]:
    """Run named queries over the tape at ``path``, ``batch_rows`` events a
    batch; after each batch call ``on_batch(events, detector)``."""
    detector = Detector.from_queries(queries, SCHEMA, history=False, **options)
    matches = 0
    events = 0
    began = time.perf_counter()
    for record_batch in pq.ParquetFile(path).iter_batches(batch_size=batch_rows):
        matches += len(detector.feed(pa.Table.from_batches([record_batch])))
        events += record_batch.num_rows
        if on_batch is not None:
            on_batch(events, detector)
    seconds = time.perf_counter() - began
    stats = detector.engine.stats()
    relevant = stats["events_processed"]
    update = detector.engine.clock.update_units - stats["condition_checks"]
    return {
        "events": events,
        "matches": matches,
        "seconds": seconds,
        "events_per_second": events / seconds,
        "engine_events_per_second": events / stats["wall_seconds"],
        "relevant_events": relevant,
        "update_units_per_relevant_event": update / relevant if relevant else 0.0,
        "enumeration_steps": stats["enumeration_steps"],
        "enumeration_steps_per_match": stats["enumeration_steps"] / matches if matches else None,
        "live_nodes": stats["live_nodes"],
        "cache_hit_rate": stats["cache_hit_rate"],
    }


def plot(path: Path, title: str, xlabel: str, series: dict[str, tuple[list[Any], list[float]]], ylabel: str) -> None:
    """A log-scale line plot of named (x, y) series."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, (xs, ys) in series.items():
        ax.plot(xs, ys, marker="o", label=label)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
