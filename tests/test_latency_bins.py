"""The data behind the Spark summaries' plot (issue 38.4), without Spark
and without pixels: latency in ms per time bin, from the engine's queue
log through a key group's telemetry rows to ``Summary.plot_data``, and
each query's bound in ms drawn only where ms are judged."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from sharp_cer.api import Detector
from sharp_cer.engine.queueing import Pace
from sharp_cer.language import Schema, parse_workload
from sharp_cer.spark.columns import BIN, COUNTER, KEY_GROUP, LANE, SEQ
from sharp_cer.spark.summary import MS_NOT_JUDGED_PLOT, QuerySummary, Summary
from sharp_cer.spark.telemetry import MS_BINS
from sharp_cer.spark.worker import Job, run_sorted


def test_bins_of_a_paced_run_are_the_hand_computed_latencies() -> None:
    """latency_summary's worked example: A at 0 s costs 3 units, B at 1 s
    costs 3 more for the match it completes, at 1,000 units a second: 3 ms
    and 6 ms. Bins of one position hold one event each; bins of two, both.
    (One engine only: with a queue log the compiled core stands aside,
    ``native.ineligible``.)"""
    s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
    queries = [("q", "SELECT * WHERE A ; B WITHIN 5 EVENTS")]
    for width, expected in ((1, [(0, 1, 3.0, 3.0), (1, 1, 6.0, 6.0)]), (2, [(0, 2, 9.0, 6.0)])):
        d = Detector.from_queries(queries, s, record_latency=True, capacity=1000, pace=Pace(rate=1))
        assert d.engine.queue is not None
        d.engine.queue.bin_by(width)
        d.feed(pd.DataFrame({"type": ["A", "B"], "x": [1, 2]}))
        found = [(b, n, round(total, 9), round(top, 9)) for b, n, total, top in d.engine.queue.bins("q")]
        assert found == expected


def test_bins_add_up_across_batches_to_the_query_s_histogram() -> None:
    """Fed in several batches (wall mode), the bins count every event once
    at its position, and their sum and largest are the histogram's."""
    s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
    d = Detector.from_queries([("q", "SELECT * WHERE A ; B WITHIN 3 EVENTS")], s, record_latency=True)
    assert d.engine.queue is not None
    d.engine.queue.bin_by(4)
    rng = np.random.default_rng(1)
    for size in (5, 1, 7, 3):
        d.feed(pd.DataFrame({"type": rng.choice(["A", "B"], size=size), "x": rng.integers(0, 9, size=size)}))
    bins = d.engine.queue.bins("q")
    assert [(b, n) for b, n, _, _ in bins] == sorted(Counter(p // 4 for p in range(16)).items())
    histogram = d.engine.queue.histogram("q")
    assert histogram is not None
    assert sum(total for _, _, total, _ in bins) == pytest.approx(histogram.total)
    assert max(top for *_, top in bins) == histogram.max


WORKLOAD = """
[workload]
name = "w"
schema = "CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }"
[[query]]
name = "ab"
latency_bound = "250ms"
text = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 5 EVENTS"
"""


def test_a_key_group_s_telemetry_carries_ms_per_bin_matching_its_counters() -> None:
    """The rows a worker sends: per bin of ``bin_width`` positions, its
    events (counted here by hand) and their ms, adding up to the key
    group's counters (``ms_sum``, ``ms_max``)."""
    job = Job(parse_workload(WORKLOAD), lanes=(("ab",),), bin_width=3)
    seq = [0, 2, 3, 4, 8, 9, 10, 17]
    rows = pa.record_batch(
        {LANE: [0] * 8, KEY_GROUP: [0] * 8, SEQ: seq, "type": list("ABABABAB"), "k": [1, 1, 2, 2, 1, 1, 2, 2]}
    )
    out = pa.Table.from_batches(list(run_sorted(job, [rows]))).to_pylist()
    binned: dict[str, dict[int, float]] = {name: {} for name in MS_BINS}
    counters = {}
    for r in out:
        if r["kind"] == BIN and r["name"] in MS_BINS and r["query"] == "ab":
            binned[r["name"]][r["bin"]] = r["value"]
        elif r["kind"] == COUNTER and r["query"] == "ab":
            counters[r["name"]] = r["value"]
    assert binned["ms_events"] == {b: float(n) for b, n in Counter(p // 3 for p in seq).items()}
    assert sum(binned["ms_sum"].values()) == pytest.approx(counters["ms_sum"])
    assert max(binned["ms_max"].values()) == counters["ms_max"]


def _summary(judged: bool) -> Summary:
    bounded = QuerySummary("a", "t", 1, 4, "250ms", None, 1.0, 2.0, 3.0, 0, bound_ms=250.0)
    in_units = QuerySummary("b", "t", 0, 4, "40", 40.0, 1.0, 2.0, 3.0, 0)
    series = {
        "bin": [0.0, 2.0],
        "matches": [1.0, 0.0],
        "events": [3.0, 1.0],
        "units_max": [9.0, 4.0],
        "units_mean": [5.0, 4.0],
        "ms_events": [3.0, 1.0],
        "ms_max": [12.0, 30.0],
        "ms_mean": [7.0, 30.0],
    }
    return Summary("w", 4, {}, 1, 0, None, (bounded, in_units), 50, {"a": series, "b": series}, judged)


def test_a_stream_s_plot_draws_each_bound_in_ms_and_a_batch_run_s_says_they_are_not_judged() -> None:
    stream = _summary(judged=True).plot_data()
    assert [(line.query, line.x, line.ms_max, line.ms_mean) for line in stream.lines] == [
        ("a", [0.0, 100.0], [12.0, 30.0], [7.0, 30.0]),
        ("b", [0.0, 100.0], [12.0, 30.0], [7.0, 30.0]),
    ]
    assert [(line.bound_ms, line.bound_units) for line in stream.lines] == [(250.0, None), (None, 40.0)]
    assert stream.ms_note is None
    batch = _summary(judged=False).plot_data()
    assert [(line.bound_ms, line.bound_units) for line in batch.lines] == [(None, None), (None, 40.0)]
    assert batch.ms_note == MS_NOT_JUDGED_PLOT
    assert "not judged" in MS_NOT_JUDGED_PLOT and "--rate" in MS_NOT_JUDGED_PLOT


def test_the_plot_is_drawn_from_its_data(tmp_path: pytest.TempPathFactory) -> None:
    path = tmp_path / "latency.png"  # type: ignore[operator]
    _summary(judged=False).plot(str(path))
    assert path.stat().st_size > 10_000
