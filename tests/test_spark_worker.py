"""The Spark pipeline's pieces that run without Spark: the workers' engine
runs (one key group, several groups in one sorted stream, shedding per
group), pass 2's offsets, and percentiles from histograms."""

from __future__ import annotations

import dataclasses
import itertools
from collections import Counter

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.api import Detector
from sharp_cer.engine.histogram import LogHistogram, weighted_percentile
from sharp_cer.language import parse_workload
from sharp_cer.spark.columns import COUNTER, KEY_GROUP, LANE, LATENCY_MS, MATCH, SEQ
from sharp_cer.spark.prepare import offsets
from sharp_cer.spark.worker import Job, run_sorted
from tests.test_spark import HAND_MADE, hand_made_events

WORKLOAD = parse_workload(HAND_MADE)
PARTITIONED = ("near_by_position", "contiguous_by_key", "next_by_key")
#: the lane whose key has two attributes, k and j
BY_K_AND_J = ("contiguous_by_key_and_j",)
#: near_by_position within 20% of its unshedded latency
BOUNDED = HAND_MADE.replace(
    'tenant = "t1"\ntext = "SELECT * WHERE A ; B PARTITION',
    'tenant = "t1"\nlatency_bound = "20%"\ntext = "SELECT * WHERE A ; B PARTITION',
    1,
)


def _stream(n: int, seed: int, groups: int, key: tuple[str, ...] = ("k",)) -> pa.RecordBatch:
    """A partitioned lane's events, as the driver routes them: key groups
    by a hash of the ``key`` attributes' values, sorted by group and position."""
    frame = hand_made_events(n, seed)
    frame[SEQ] = np.arange(n)
    frame = frame[frame["type"] != "C"].copy()
    frame[LANE] = 0
    frame[KEY_GROUP] = sum(frame[a].astype(int) * 7**i for i, a in enumerate(key, 1)) % groups
    frame = frame.sort_values([KEY_GROUP, SEQ], kind="stable")
    return pa.RecordBatch.from_pandas(frame, preserve_index=False)


def _matches(tables: list[pa.RecordBatch]) -> Counter[tuple[object, ...]]:
    out = pa.Table.from_batches(tables).to_pylist()
    return Counter((r["query"], r["start"], r["end"], tuple(r["events"])) for r in out if r["kind"] == MATCH)


def _in_process(n: int, seed: int, queries: tuple[str, ...]) -> Counter[tuple[object, ...]]:
    named = [(q.name, q.checked) for q in WORKLOAD.queries if q.name in queries]
    found = Detector.from_queries(named, WORKLOAD.schema, history=False).feed(hand_made_events(n, seed))
    return Counter((m.query, m.start, m.end, m.events) for m in found)


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 5), st.integers(0, 10_000))
def test_key_groups_in_one_sorted_stream_give_the_in_process_matches(groups: int, seed: int) -> None:
    job = Job(WORKLOAD, (PARTITIONED,), bin_width=50, key_groups=groups)
    assert _matches(list(run_sorted(job, [_stream(400, seed, groups)]))) == _in_process(400, seed, PARTITIONED)


@settings(max_examples=5, deadline=None)
@given(st.integers(2, 5), st.integers(0, 10_000))
def test_key_groups_of_a_two_attribute_key_give_the_in_process_matches(groups: int, seed: int) -> None:
    job = Job(WORKLOAD, (BY_K_AND_J,), bin_width=50, key_groups=groups)
    found = _matches(list(run_sorted(job, [_stream(400, seed, groups, key=("k", "j"))])))
    assert found == _in_process(400, seed, BY_K_AND_J) and sum(found.values()) > 0


def test_shedding_per_group_keeps_true_matches_and_reports_its_bounds() -> None:
    workload = parse_workload(BOUNDED)
    job = Job(workload, (PARTITIONED,), bin_width=50, shedder="truncate", key_groups=2)
    tables = list(run_sorted(job, [_stream(1500, 4, 2)]))
    shed = _matches(tables)
    truth = _in_process(1500, 4, PARTITIONED)
    assert not shed - truth  # nothing invented
    near = lambda c: Counter({k: v for k, v in c.items() if k[0] == "near_by_position"})  # noqa: E731
    assert sum(near(shed).values()) < sum(near(truth).values())  # the bound bit
    others = lambda c: Counter({k: v for k, v in c.items() if k[0] != "near_by_position"})  # noqa: E731
    assert others(shed) == others(truth)  # queries without a bound lose nothing
    rows = pa.Table.from_batches(tables).to_pylist()
    bounds = [r["value"] for r in rows if r["kind"] == COUNTER and r["name"] == "bound_ms"]
    assert len(bounds) == 2 and all(b > 0 for b in bounds)  # one bound per key group, its own, in ms


def test_a_key_group_sheds_to_a_fraction_of_its_unshedded_mean_as_the_in_process_detector_does() -> None:
    """One key group holding the lane's whole stream, in capacity mode: its
    events all arrive when the group runs them, so the in-process detector
    fed the same events at once (arrivals 0), with the bound resolved by
    ``unshedded_latency`` under those arrivals, is the same definition:
    same bound in ms, same cuts by lever, same matches, same events over."""
    from sharp_cer.events.batch import EventBatch
    from sharp_cer.events.loaders import load_pandas
    from sharp_cer.shedding.bounds import unshedded_latency

    text = BOUNDED.replace('name = "hand-made"', 'name = "hand-made"\ncapacity = 20000', 1)
    workload = parse_workload(text)
    job = Job(workload, (PARTITIONED,), bin_width=50, shedder="truncate", key_groups=1)
    stream = _stream(1500, 4, 1)
    rows = pa.Table.from_batches(list(run_sorted(job, [stream]))).to_pylist()
    counters = {(r["query"], r["name"]): r["value"] for r in rows if r["kind"] == COUNTER}
    lane = dataclasses.replace(workload, queries=tuple(q for q in workload.queries if q.name in PARTITIONED))
    frame = stream.to_pandas()
    loaded, _ = load_pandas(frame.drop(columns=[LANE, KEY_GROUP, SEQ]), workload.schema)
    batch = EventBatch(loaded.event_types, frame[SEQ].to_numpy()[loaded.positions], loaded.codes, loaded.columns)
    at = np.zeros(len(batch))
    plan = Detector.from_workload(lane).plan
    reference = unshedded_latency(plan, [batch], [at], workload.capacity)
    detector = Detector.from_workload(lane, shedder="truncate", reference_ms=reference, record_latency=True)
    detector.feed(batch, arrivals=at)
    report, summary = detector.shedder.report(), detector.summary()  # type: ignore[union-attr]
    assert report["near_by_position"]["bound_ms"] == pytest.approx(0.2 * reference["near_by_position"])
    for name, row in summary.items():
        assert counters[name, "matches"] == row["matches"], name
        assert {k: counters[name, f"cut_{k}"] for k in row["cuts"]} == row["cuts"], name
    assert counters["near_by_position", "bound_ms"] == report["near_by_position"]["bound_ms"]
    assert counters["near_by_position", "over_bound"] == summary["near_by_position"]["latency"]["over_bound"]
    assert counters["near_by_position", "cut_enumerations_cut_short"] > 0  # the bound bit


def test_a_key_group_reports_the_in_process_cuts_and_its_ms_histogram() -> None:
    # one key group sees the lane's whole stream, so its cuts are the in-process detector's
    workload = parse_workload(BOUNDED.replace('latency_bound = "20%"', "latency_bound = 3"))
    job = Job(workload, (PARTITIONED,), bin_width=50, shedder="truncate", key_groups=1)
    rows = pa.Table.from_batches(list(run_sorted(job, [_stream(1500, 4, 1)]))).to_pylist()
    lane = dataclasses.replace(workload, queries=tuple(q for q in workload.queries if q.name in PARTITIONED))
    detector = Detector.from_workload(lane, shedder="truncate", history=False, record_latency=True)
    detector.feed(hand_made_events(1500, 4))
    counters = {(r["query"], r["name"]): r["value"] for r in rows if r["kind"] == COUNTER}
    for name, row in detector.summary().items():
        assert {k: counters[name, f"cut_{k}"] for k in row["cuts"]} == row["cuts"], name
        in_ms = [r["value"] for r in rows if r["kind"] == LATENCY_MS and r["query"] == name]
        # every event of the lane reached the engine and has a latency in ms
        assert sum(in_ms) == _stream(1500, 4, 1).num_rows and counters[name, "ms_min"] <= counters[name, "ms_max"]
    assert (
        counters["near_by_position", "cut_events"] > 0
        and counters["near_by_position", "cut_enumerations_cut_short"] > 0
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1e6), max_size=20), min_size=1, max_size=5), st.floats(0, 100))
def test_histograms_added_bin_by_bin_are_the_histogram_of_all_values(parts: list[list[float]], q: float) -> None:
    # what the driver does with the key groups' latency in ms
    merged, whole = LogHistogram(), LogHistogram()
    for part in parts:
        one = LogHistogram()
        one.add(np.array(part))
        merged.add_bins(*one.bins(), total=one.total, least=one.min, most=one.max)
        whole.add(np.array(part))
    assert (merged.count, merged.min, merged.max) == (whole.count, whole.min, whole.max)
    assert merged.total == pytest.approx(whole.total) and merged.quantiles([q]) == whole.quantiles([q])


def test_offsets_follow_partition_order() -> None:
    at = offsets([(2, 4, 5, None), (0, 3, 3, 50), (1, 0, 0, None), (3, 1, 1, 20)])
    assert at.rows == {0: 0, 1: 3, 2: 3, 3: 7} and at.lines == {0: 0, 1: 3, 2: 3, 3: 8}
    assert at.latest == {0: None, 1: 50, 2: 50, 3: 50} and at.total_rows == 8


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.integers(0, 10**6), st.integers(1, 50), min_size=1, max_size=30), st.floats(0, 100))
def test_percentile_of_a_histogram_is_numpys(histogram: dict[int, int], q: float) -> None:
    values = sorted(histogram)
    counts = [float(histogram[v]) for v in values]
    expanded = np.repeat(values, [histogram[v] for v in values])
    assert abs(weighted_percentile(values, counts, q) - float(np.percentile(expanded, q))) <= 1e-6 * max(
        1, expanded.max()
    )


def _released(
    n: int, seed: int, cuts: list[int], shedder: str | None = None, text: str = HAND_MADE
) -> tuple[list[pa.Table], int]:
    """The partitioned lane's events through one ``KeyGroupStream`` in releases
    cut at ``cuts``, snapshotted and restored between releases as a
    restart would; also how many engines were built."""
    import json

    from sharp_cer.spark.stream_key_group import KeyGroupStream, restore, snapshot

    frame = hand_made_events(n, seed)
    frame[SEQ] = np.arange(n)
    frame = frame[frame["type"] != "C"]
    texts = [json.dumps({k: (None if v is pd.NA else v) for k, v in r.items() if k != SEQ}, default=int)
             for r in frame.to_dict("records")]  # fmt: skip
    seqs = frame[SEQ].tolist()
    group = KeyGroupStream(Job(parse_workload(text), (PARTITIONED,), bin_width=50, shedder=shedder), lane=0)
    out, bounds = [], sorted({0, len(texts), *(c % (len(texts) + 1) for c in cuts)})
    for a, b in itertools.pairwise(bounds):
        out.append(group.release(texts[a:b], seqs[a:b], [0] * (b - a), now_ms=5))
        group = restore(snapshot(group))
    return out, sum(r["value"] for t in out for r in t.to_pylist() if r["kind"] == COUNTER and r["name"] == "engines")


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.integers(0, 10_000), max_size=6))
def test_a_stream_group_restored_between_releases_gives_the_in_process_matches(seed: int, cuts: list[int]) -> None:
    tables, engines = _released(300, seed, cuts)
    assert _matches([b for t in tables for b in t.to_batches()]) == _in_process(300, seed, PARTITIONED)
    assert engines == 1  # counters go out as increments: the engine is counted once


def test_a_stream_group_sheds_to_a_bound_in_units_and_refuses_a_fraction() -> None:
    from sharp_cer.errors import SurfaceError

    tables, _ = _released(1500, 4, [400, 900], shedder="truncate", text=BOUNDED.replace('"20%"', "3"))
    rows = [r for t in tables for r in t.to_pylist()]
    shed = _matches([b for t in tables for b in t.to_batches()])
    assert not shed - _in_process(1500, 4, PARTITIONED)  # nothing invented
    assert [r for r in rows if r["kind"] == COUNTER and r["name"] == "bound_units" and r["value"] == 3]
    near = sum(v for k, v in shed.items() if k[0] == "near_by_position")
    assert near < sum(v for k, v in _in_process(1500, 4, PARTITIONED).items() if k[0] == "near_by_position")
    with pytest.raises(SurfaceError, match=r'query near_by_position: latency_bound = "20%" .* no unshedded run'):
        _released(10, 4, [], shedder="truncate", text=BOUNDED)


def test_a_stream_groups_alerts_carry_their_events_whole_and_its_memory_stays_within_the_windows() -> None:
    import json

    from sharp_cer.spark.stream_key_group import KeyGroupStream

    frame = hand_made_events(6000, 3)
    rows = {p: r for p, r in enumerate(frame.to_dict("records")) if r["type"] != "C"}
    texts = {p: json.dumps({k: v for k, v in r.items()}, default=int) for p, r in rows.items()}
    group = KeyGroupStream(Job(WORKLOAD, (PARTITIONED,), bin_width=50), lane=0)
    positions, alerts, sizes = sorted(texts), [], []
    for a in range(0, len(positions), 100):
        some = positions[a : a + 100]
        out = group.release([texts[p] for p in some], some, [0] * len(some), now_ms=0).to_pylist()
        alerts += [r for r in out if r["kind"] == MATCH]
        sizes.append(len(group.recent))
    assert len(alerts) == sum(_in_process(6000, 3, PARTITIONED).values()) > 100
    for alert in alerts:  # each event whole, in `events` order, and the time of the last one
        assert [json.loads(e) for e in alert["attributes"]] == [json.loads(texts[p]) for p in alert["events"]]
        assert alert["end_time"] == rows[alert["end"]]["t"]
    assert max(sizes) < 100 < len(positions)  # the windows hold a few events per key: not the stream


def test_a_stream_group_restored_across_a_clock_jump_keeps_its_backlog_not_the_old_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A snapshot restored where the clock reads 10,000 s less (another
    host, a new process): the next release's latencies are the ones a
    restore on the same clock gives, not 10,000 s of queueing behind the
    old clock's reading. Capacity mode, so the latencies are exact; at 10^9
    units a second the server is idle again long before the snapshot."""
    import json
    import time

    from sharp_cer.spark.stream_key_group import KeyGroupStream, restore, snapshot

    text = HAND_MADE.replace('name = "hand-made"', 'name = "hand-made"\ncapacity = 1e9', 1)
    frame = hand_made_events(400, 5)
    frame = frame[frame["type"] != "C"]
    texts = [json.dumps(r, default=int) for r in frame.to_dict("records")]
    seqs = frame.index.tolist()
    half = len(texts) // 2
    real = time.perf_counter

    def second_release(jump: float) -> dict[str, object]:
        group = KeyGroupStream(Job(parse_workload(text), (PARTITIONED,), bin_width=50), lane=0)
        group.release(texts[:half], seqs[:half], [0] * half, now_ms=0)
        data = snapshot(group)
        monkeypatch.setattr(time, "perf_counter", lambda: real() - jump)
        group = restore(data)
        assert group.detector is not None
        queue = group.detector.engine.queue  # the release's log (a release starts the next one afresh)
        assert queue is not None
        group.release(texts[half:], seqs[half:], [0] * (len(texts) - half), now_ms=0)
        monkeypatch.setattr(time, "perf_counter", real)
        return queue.summary("near_by_position")

    same, jumped = second_release(0.0), second_release(10_000.0)
    assert jumped["events"] == same["events"] > 0
    for figure in ("mean", "max"):
        # within 1 unit (1 ns at 10^9 units a second): the clocks' readings are floats near 10^4 s
        assert jumped["units"][figure] == pytest.approx(same["units"][figure], abs=1.0)  # type: ignore[index]
    assert jumped["units"]["max"] < 10_000  # type: ignore[index]  # no wait behind the old clock (10^13 units)


def test_the_driver_says_a_bound_below_the_update_floor_before_the_run() -> None:
    """Issue 36: a bound below the update floor is said before the run on
    Spark too: the driver measures each lane's floor on the input's first
    events (``floor_warnings_before``, what ``run_detection`` warns and the
    CLI prints). A bound of 3 units is below the update of a partitioned
    A ; B step (3 units a step: the per-event floor); 10,000 units is not;
    without a shedder nothing is said (the bound is judged)."""
    from sharp_cer.events.loaders import load_pandas
    from sharp_cer.spark.worker import floor_warnings_before

    sample, _ = load_pandas(hand_made_events(400, 4), WORKLOAD.schema)
    said = {}
    for bound, shedder in (("3", "truncate"), ("10000", "truncate"), ("3", None)):
        workload = parse_workload(BOUNDED.replace('"20%"', bound))
        said[bound, shedder] = floor_warnings_before(Job(workload, (PARTITIONED,), 50, shedder=shedder), sample)
    (line,) = said["3", "truncate"]
    assert line.startswith("query near_by_position: its bound (3 units) is below the update floor")
    assert said["10000", "truncate"] == [] and said["3", None] == []
    fraction = Job(parse_workload(BOUNDED), (PARTITIONED,), 50, shedder="truncate")
    assert floor_warnings_before(fraction, sample) == []  # 20 % of a mean over a queue of the whole sample


def test_a_stream_groups_snapshot_is_its_state_as_data_and_nothing_compiled() -> None:
    """Issue 38.2: the state a key group writes each release holds its
    engine's state, not its plan, compiled conditions or detector; a group
    with a shedder (whose statistics no engine snapshot holds) goes whole."""
    import io
    import json
    import pickle

    from sharp_cer.spark.stream_key_group import KeyGroupStream, snapshot

    loaded: set[tuple[str, str]] = set()

    class Recording(pickle.Unpickler):
        def find_class(self, module: str, name: str) -> object:
            loaded.add((module, name))
            return super().find_class(module, name)

    frame = hand_made_events(300, 2)
    frame = frame[frame["type"] != "C"]
    texts = [json.dumps(r, default=int) for r in frame.to_dict("records")]
    group = KeyGroupStream(Job(WORKLOAD, (PARTITIONED,), bin_width=50), lane=0)
    group.release(texts, frame.index.tolist(), [0] * len(texts), now_ms=0)
    data = snapshot(group)
    assert data[:1] == b"D"
    state = Recording(io.BytesIO(data[1:])).load()
    assert state["engine"].groups and state["recent"]  # live partial matches and the events they reach
    assert loaded, "the snapshot names its classes"
    for module, name in loaded:
        assert not module.startswith(("sharp_cer.planner", "sharp_cer.api", "sharp_cer.engine.runtime")), name
        assert "cloudpickle" not in module and name not in ("Plan", "Engine", "Detector", "NativeGroup"), name
    shedding = KeyGroupStream(Job(WORKLOAD, (PARTITIONED,), bin_width=50, shedder="truncate"), lane=0)
    assert snapshot(shedding)[:1] == b"W"
