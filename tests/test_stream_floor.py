"""Issue 36, Deliver 5: a live stream (``sharp-cer stream``) says a bound
below the update floor on its driver before it starts, as ``run`` does:
measured on the first events of the files in the source folder, or, when
the folder is empty, at its first micro-batch with events (no Spark here:
the driver's side, ``spark.stream_floor``)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd

from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import parse_workload
from sharp_cer.spark.stream_floor import LATER, LiveFloor, folder_sample, live_floor
from sharp_cer.spark.worker import Job, floor_warnings_before
from tests.test_spark import HAND_MADE, hand_made_events

PARTITIONED = ("near_by_position", "contiguous_by_key", "next_by_key")
FIRST = 'tenant = "t1"\ntext = "SELECT * WHERE A ; B PARTITION'
BOUND_3 = HAND_MADE.replace(FIRST, FIRST.replace("\n", "\nlatency_bound = 3\n", 1), 1)
WORKLOAD = parse_workload(BOUND_3)


def _write(path: Path, frame: pd.DataFrame, mtime: int) -> None:
    """``frame``'s events as JSON lines (each type's attributes only), modified at ``mtime``."""
    kinds = {e.name: list(e.attributes) for e in WORKLOAD.schema.event_types()}
    lines = []
    for row in frame.to_dict("records"):
        record = {"type": row["type"]}
        for name in kinds[row["type"]]:
            value = row.get(name)
            record[name] = None if value is None or pd.isna(value) else int(value)
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    os.utime(path, (mtime, mtime))


def _units(lines: list[str]) -> list[str]:
    """The lines without their figures in ms (the units' ms are a timed calibration)."""
    return [re.sub(r" = [0-9.]+ ms", "", line) for line in lines]


def _judge(folder: Path, shedder: str | None = "truncate") -> tuple[LiveFloor, list[str], list[str]]:
    said: list[str] = []
    noted: list[str] = []
    job = Job(WORKLOAD, (PARTITIONED,), 50, shedder=shedder)
    return live_floor(WORKLOAD, str(folder), "jsonl", job, said.append, noted.append), said, noted


def test_the_driver_judges_the_floor_on_the_first_2000_events_of_the_folder(tmp_path: Path) -> None:
    """Two files, the older named last: the sample is the older file's 1,500
    events then the newer's first 500 (Spark takes files by time), and the
    warning is the one ``floor_warnings_before`` gives on exactly those
    events; a bound of 3 units is below a partitioned A ; B step (3 units)."""
    frame = hand_made_events(2600, 7)
    _write(tmp_path / "b.jsonl", frame.iloc[:1500], 1_700_000_000)
    _write(tmp_path / "a.jsonl", frame.iloc[1500:], 1_700_000_100)
    (tmp_path / "_hidden.jsonl").write_text("not an event\n")  # not the stream's: never read
    floor, said, noted = _judge(tmp_path)
    floor.before()
    sample, _ = load_pandas(frame.iloc[:2000].reset_index(drop=True), WORKLOAD.schema)
    expected = floor_warnings_before(Job(WORKLOAD, (PARTITIONED,), 50, shedder="truncate"), sample)
    taken = folder_sample(str(tmp_path), floor.spec)
    assert list(taken.times().values) == list(sample.times().values) and len(taken) == 2000
    (line,) = expected
    assert line.startswith("query near_by_position: its bound (3 units) is below the update floor")
    assert said == floor.warnings and _units(said) == _units(expected) and noted == [] and floor.judged
    floor.poll(str(tmp_path / "checkpoint"), now=True)
    assert len(said) == 1  # once


def test_an_empty_folder_is_judged_at_the_first_micro_batch_with_events(tmp_path: Path) -> None:
    """Empty at the start: said once that the floor is judged later; judged
    when the stream's sources log names a file with events (the first
    micro-batch's), once; a file arriving but not yet read is not used."""
    source, checkpoint = tmp_path / "source", tmp_path / "checkpoint"
    source.mkdir()
    floor, said, noted = _judge(source)
    floor.before()
    assert noted == [LATER] and said == [] and not floor.judged
    frame = hand_made_events(300, 3)
    _write(source / "first.jsonl", frame, 1_700_000_000)
    floor.poll(str(checkpoint), now=True)
    assert said == [] and not floor.judged  # not read by the stream yet
    log = checkpoint / "query" / "sources" / "0" / "0"
    log.parent.mkdir(parents=True)
    entry = {"path": (source / "first.jsonl").resolve().as_uri(), "timestamp": 1_700_000_000_000, "batchId": 0}
    log.write_text("v1\n" + json.dumps(entry) + "\n")
    floor.poll(str(checkpoint), now=True)
    sample, _ = load_pandas(frame, WORKLOAD.schema)
    expected = floor_warnings_before(Job(WORKLOAD, (PARTITIONED,), 50, shedder="truncate"), sample)
    assert len(expected) == 1 and said == floor.warnings and _units(said) == _units(expected) and floor.judged
    _write(source / "second.jsonl", frame, 1_700_000_100)
    floor.poll(str(checkpoint), now=True)
    assert len(said) == 1 and noted == [LATER]  # once each


def test_without_a_shedder_nothing_is_said(tmp_path: Path) -> None:
    """Without a shedder a bound is judged after the run, never enforced: no floor, no note."""
    floor, said, noted = _judge(tmp_path, shedder=None)
    floor.before()
    assert said == noted == [] and floor.judged
