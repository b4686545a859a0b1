"""A batch run's read-number-route pass (``sharp_cer.spark.routing``), in
process (no Spark): every event reaches each lane that reads it once, at
its in-process position; the dead letters are the in-process loader's, an
event late against an earlier partition included; a key's key group is the
same in every process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pyarrow as pa
import pytest

from sharp_cer.events.loaders import load_csv
from sharp_cer.language import parse_workload
from sharp_cer.spark.columns import LANE, LINE, SEQ, TYPE
from sharp_cer.spark.lanes import lanes
from sharp_cer.spark.pipeline import batch_lanes
from sharp_cer.spark.prepare import LoadSpec, offsets
from sharp_cer.spark.routing import (
    LETTERS,
    PACKED,
    SUMMARIES,
    Numbering,
    Routing,
    late_across,
    route_partition,
    summaries,
    unpack,
)

WORKLOAD = parse_workload(
    """
[workload]
name = "routing"
allowed_lateness = 2
schema = "CREATE STREAM S { EVENT A { k:int, j:int, t:primary_time }, EVENT B { k:int, t:primary_time } }"
[[query]]
name = "by_k"
text = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 5 EVENTS"
[[query]]
name = "by_k_j"
text = "SELECT * WHERE A ; A PARTITION BY [k], [j] WITHIN 5 EVENTS"
[[query]]
name = "all"
text = "SELECT * WHERE B ; B WITHIN 5 EVENTS"
"""
)

# two partitions of CSV lines: a bad row, a blank line, a row late within its partition (t=3 after 9), and the
# second partition's first row late against the first partition (t=4 against 12)
PARTS = [
    ["A,1,0,1", "B,1,2", "A,oops,0,3", "", "A,2,1,9", "B,2,3"],
    ["B,1,4", "A,1,1,13", "B,2,14", "A,2,,15", "B,,16"],
]


def _route(parts: list[list[str]], read_again: bool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What ``run_detection`` does with the partitions: read and route each
    once, learn where each starts from their summaries, read again (judged
    against the partitions before) only where an event may be late across
    them (``read_again`` says which is expected), number in the workers."""
    spec = LoadSpec(WORKLOAD.schema, "csv", WORKLOAD.allowed_lateness)
    batches = [pa.record_batch({"value": lines}) for lines in parts]
    plan = Routing(spec, batch_lanes(lanes(WORKLOAD)), 3)

    def read(plan: Routing) -> list[pa.RecordBatch]:
        return [b for part, batch in enumerate(batches) for b in route_partition(plan, iter([batch]), part)]

    blobs = read(plan)
    found = summaries(r for b in blobs for r in b.to_pylist())
    assert sorted(s[0] for s in found) == list(range(len(parts)))
    assert late_across(found, WORKLOAD.allowed_lateness) == read_again
    at = offsets([s[:4] for s in found])
    if read_again:
        blobs = read(Routing(spec, plan.lanes, plan.key_groups, at.latest))
    routed = []
    for batch in blobs:
        kept = batch.filter(pa.compute.not_equal(batch[LANE], SUMMARIES))
        for table in unpack(kept, Numbering(at, text=True)):
            routed += table.to_pylist()
    events = [r for r in routed if r[LANE] != LETTERS]
    letters = [{"position": r[SEQ], "line": r[LINE], **json.loads(r[PACKED])} for r in routed if r[LANE] == LETTERS]
    return events, letters


# the same with the second partition's first row in time (t=14 after 12): nothing late across partitions
IN_TIME = [PARTS[0], ["B,1,14", *PARTS[1][1:]]]


@pytest.mark.parametrize("parts", [PARTS, IN_TIME], ids=["late-across", "in-time"])
def test_each_event_once_per_lane_at_its_position_and_the_loaders_letters(parts: list[list[str]]) -> None:
    events, letters = _route(parts, read_again=parts is PARTS)
    text = "\n".join(line for part in parts for line in part) + "\n"
    batch, report = load_csv(text, WORKLOAD.schema, allowed_lateness=WORKLOAD.allowed_lateness)
    truth = [
        {"position": d.position, "line": d.line, "kind": d.kind, "reason": d.reason, "raw": d.raw}
        for d in report.dead_letters
    ]
    assert {"late", "mistyped_attribute"} <= {d["kind"] for d in truth}
    assert any(d["raw"] == "B,1,4" for d in truth) == (parts is PARTS)  # late against the first partition
    assert sorted(({k: d[k] for k in truth[0]} for d in letters), key=lambda d: d["position"]) == truth
    # two lanes: by k (by_k and by_k_j merged: an event without j goes there too, its engine skips it for
    # by_k_j as in-process) and the one without a key; an event goes to each that reads it
    accepted = {int(p): batch.row(i)["type"] for i, p in enumerate(batch.positions.tolist())}
    keyed = {
        p
        for p, r in zip(batch.positions.tolist(), range(len(batch)), strict=True)
        if batch.row(r)["attributes"]["k"] is not None
    }
    by_lane: dict[int, list[int]] = {}
    for r in events:
        by_lane.setdefault(r[LANE], []).append(r[SEQ])
        assert accepted[r[SEQ]] == r[TYPE]
    assert sorted(by_lane[0]) == sorted(p for p in accepted if p in keyed)
    assert sorted(by_lane[1]) == sorted(accepted)  # its engine reads every event of the stream (contiguity, NOT)


@pytest.mark.parametrize("seed", ["0", "1", "random"])
def test_a_keys_key_group_is_the_same_in_every_process(seed: str) -> None:
    """Python's own ``hash`` of a str differs between processes: the key
    groups must not, or a key's events would meet two engines."""
    code = (
        "import pyarrow as pa; from sharp_cer.spark.routing import _key_groups;"
        "b = pa.record_batch({'name': ['MSFT', 'IBM', None, 'ORCL'] * 3, 'v': [1.0, -0.0, 2.5, 0.0] * 3});"
        "print(_key_groups(b, ('name', 'v'), 7)[1].tolist())"
    )
    env = {**os.environ, "PYTHONHASHSEED": seed}
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout]
    runs.append(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert runs[0] == runs[1] and runs[0].strip()
