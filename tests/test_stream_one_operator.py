"""The stream's one-operator plan (issue 38, item 3): no stage 1; each key
group numbers its own rows from the micro-batch's file summaries
(``stream_input.number_key_group``). Checked against independent
expectations: stage 1's numbering (``number_rows``) over the same rows, by
hypothesis; and, with Spark, the in-process detector's matches and the
loaders' dead letters over the whole input, for a workload without event
windows and for one with ``WITHIN n EVENTS`` (whose windows count
positions), stopped and restarted mid-stream."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, Workload, parse_workload
from sharp_cer.spark.columns import (
    ARRIVED,
    DEAD,
    EVENT,
    FILE,
    LETTER_COLUMNS,
    LINE,
    LOCAL,
    PREV,
    ROUTE,
    ROW_KIND,
    SEQ,
    SUMMARY,
    TEXT,
    TS,
    TYPE,
)
from sharp_cer.spark.stream_input import NONE, Cursor, no_event, number_key_group, number_rows
from tests.test_spark import HAND_MADE, expected

SCHEMA = Schema.parse("CREATE STREAM S { EVENT A { t:primary_time } }")

#: HAND_MADE's queries with time windows instead of event windows (and allowed lateness, so some events are late)
TIMED = re.sub(
    r"WITHIN (\d+) EVENTS",
    lambda m: f"WITHIN {int(m.group(1)) // 2} SECONDS",  # an event every 0.5 s on average (``hand_made_events``)
    HAND_MADE.replace('name = "hand-made"', 'name = "timed"\nallowed_lateness = 2000000000'),
)
EVENT_WINDOWS = HAND_MADE.replace('name = "hand-made"', 'name = "windows"\nallowed_lateness = 2000000000')


def _files(draw: Any) -> list[list[int | None]]:
    """Files of rows: each an event's time, or None for a bad row."""
    return draw(
        st.lists(st.lists(st.one_of(st.none(), st.integers(0, 60)), min_size=0, max_size=6), min_size=1, max_size=4)
    )


def _rows(files: list[list[int | None]], groups: int, seed: int) -> pd.DataFrame:
    """Stage 0's rows of ``files`` (named f0, f1, ... in reverse of their
    arrival, to test the name order), each event given to one of ``groups``
    key groups, each file's summary (rows, largest time)."""
    rng = np.random.default_rng(seed)
    out = []
    for i, times in enumerate(files):
        name, latest = f"f{len(files) - i}", NONE
        for local, t in enumerate(times):
            kind = DEAD if t is None else EVENT
            event = {TYPE: "A", "t": t, "__null0": False} if t is not None else no_event({"t": "primary_time"})
            out.append({ROW_KIND: kind, FILE: name, LOCAL: local, LINE: local + 1, TS: NONE if t is None else t,
                        PREV: latest, ARRIVED: 0, TEXT: None, ROUTE: [int(rng.integers(0, groups))]}
                       | dict.fromkeys(LETTER_COLUMNS) | event)  # fmt: skip
            latest = latest if t is None else max(latest, t)
        summary = {ROW_KIND: SUMMARY, FILE: name, LOCAL: len(times), LINE: -1, TS: latest, PREV: NONE}
        out.append(
            summary
            | {ARRIVED: 0, TEXT: None, ROUTE: []}
            | dict.fromkeys(LETTER_COLUMNS)
            | no_event({"t": "primary_time"})
        )
    return pd.DataFrame(out)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), groups=st.integers(1, 4), lateness=st.integers(0, 20), start=st.integers(0, 50))
def test_each_key_group_numbers_its_rows_as_stage_one_does(data: Any, groups: int, lateness: int, start: int) -> None:
    """Positions, lateness and the cursor from the summaries alone, key
    group by key group, are exactly stage 1's over all the rows at once."""
    files = _files(data.draw)
    latest = data.draw(st.one_of(st.just(NONE), st.integers(0, 60)))
    frame = _rows(files, groups, data.draw(st.integers(0, 1000)))
    cursor = Cursor(start, latest, "{}")
    whole, after = number_rows(frame, cursor, SCHEMA, lateness, [0])
    whole = whole[whole[ROW_KIND].isin([EVENT, DEAD])]
    truth = sorted(zip(whole[SEQ], whole[ROW_KIND], whole[TS], whole[LETTER_COLUMNS[1]].fillna(""), strict=True))
    summaries = frame[frame[ROW_KIND] == SUMMARY]
    found = []
    for g in range(groups):
        mine = frame[[r == [g] for r in frame[ROUTE]]]
        rows, moved = number_key_group(pd.concat([mine, summaries]), cursor, SCHEMA, lateness)
        assert (moved.position, moved.latest) == (after.position, after.latest)
        found += zip(rows[SEQ], rows[ROW_KIND], rows[TS], rows[LETTER_COLUMNS[1]].fillna(""), strict=True)
    assert sorted(found) == truth
    assert after.position == start + sum(len(f) for f in files)


def test_a_late_event_of_a_later_file_is_judged_by_the_file_before_it() -> None:
    """By hand: f1 holds times 10, 50 (rows 0, 1); f2 holds 20 (row 0). With
    lateness 5 the 20 is 30 behind f1's 50: late, at position 7 + 2."""
    frame = _rows([[10, 50], [20]], 1, 0)
    frame[FILE] = frame[FILE].map({"f2": "f1", "f1": "f2"})  # f1 first
    rows, cursor = number_key_group(frame, Cursor(7, NONE, "{}"), SCHEMA, 5)
    assert rows[[SEQ, ROW_KIND, TS]].values.tolist() == [[7, EVENT, 10], [8, EVENT, 50], [9, DEAD, 20]]
    assert (cursor.position, cursor.latest) == (10, 50)
    assert str(rows[LETTER_COLUMNS[1]].iloc[2]).startswith("late event A: expected t >= 45")


# ------------------------------------------------------------------ with Spark


@pytest.fixture(scope="module")
def spark() -> Any:
    from sharp_cer.spark.session import spark_session
    from sharp_cer.spark.stream import stream_conf

    return spark_session("local[2]", **{**stream_conf(), "spark.sql.shuffle.partitions": "4"})


def _stream(spark: Any, root: Path, workload: Workload, operators: int | None) -> dict[str, Any]:
    """``workload`` over the faulty stream (``test_stream``) in six files, one
    per micro-batch, stopped after two micro-batches (their progress kept)
    and restarted to the end, flushed."""
    from sharp_cer.spark.stream import StreamSettings, checkpoint_operators, read_output, run_stream, start_stream
    from tests.test_stream import FILES, events_with_faults

    lines = events_with_faults(workload, root / "all.csv")
    source, checkpoint, out = root / "source", str(root / "checkpoint"), str(root / "out")
    source.mkdir()
    step = -(-len(lines) // FILES)
    for k in range(FILES):
        part = source / f"part-{k:02d}.csv"
        part.write_text("\n".join(lines[k * step : (k + 1) * step]) + "\n")
        os.utime(part, (1_700_000_000 + k, 1_700_000_000 + k))
    how = StreamSettings(max_files=1)
    query = start_stream(workload, str(source), checkpoint, out, how, spark, operators)
    deadline = time.time() + 300
    while (query.lastProgress is None or query.lastProgress["batchId"] < 1) and time.time() < deadline:
        time.sleep(0.2)
    query.stop()
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    first = read_output(spark, out).where("kind = 'match'").count() if Path(out).exists() else 0
    run_stream(workload, str(source), checkpoint, out, how, spark)
    batch, report = load_csv(str(root / "all.csv"), workload.schema, allowed_lateness=workload.allowed_lateness)
    return {
        "operators": [len(p["stateOperators"]) for p in progress],
        "recorded": checkpoint_operators(checkpoint),
        "first": first,
        "output": read_output(spark, out),
        "truth": expected(workload, batch, allowed_lateness=workload.allowed_lateness),
        "dead_letters": sorted((d.position, d.kind, d.reason) for d in report.dead_letters),
    }


def _check(found: dict[str, Any]) -> None:
    from tests.test_stream import stream_matches

    assert 0 <= found["first"] < sum(found["truth"].values())  # the first run stopped mid-stream
    assert stream_matches(found["output"]) == found["truth"]  # nothing lost, nothing doubled, same positions
    letters = found["output"].where("kind = 'dead_letter'").collect()
    assert sorted((r["start"], r["name"], r["reason"]) for r in letters) == found["dead_letters"]
    assert "late" in {r["name"] for r in letters}


@pytest.mark.spark
@pytest.mark.slow
def test_the_one_operator_plan_without_event_windows_equals_the_in_process_detector(spark: Any, tmp_path: Path) -> None:
    workload = parse_workload(TIMED)
    assert "EVENTS" not in TIMED
    found = _stream(spark, tmp_path, workload, None)
    assert found["operators"] and set(found["operators"]) == {1}  # one stateful operator in every micro-batch
    assert found["recorded"] == 1
    _check(found)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("operators", [None, 2], ids=["one-operator", "two-operators"])
def test_event_windows_count_the_stream_s_positions_in_either_plan(
    spark: Any, operators: int | None, tmp_path: Path
) -> None:
    workload = parse_workload(EVENT_WINDOWS)
    assert "EVENTS" in EVENT_WINDOWS
    found = _stream(spark, tmp_path, workload, operators)
    assert set(found["operators"]) == {operators or 1}
    _check(found)


def test_a_one_operator_checkpoint_refuses_a_new_lane_saying_what_to_do(tmp_path: Path) -> None:
    from sharp_cer.errors import SurfaceError
    from sharp_cer.spark.stream import check_checkpoint

    before = parse_workload(TIMED)
    check_checkpoint(str(tmp_path), before, default=2, operators=1)
    changed = TIMED.replace("PARTITION BY [k] WITHIN 3 SECONDS", "PARTITION BY [x] WITHIN 3 SECONDS", 1)
    assert changed != TIMED
    with pytest.raises(SurfaceError, match="adds a lane") as caught:
        check_checkpoint(str(tmp_path), parse_workload(changed), default=2)
    assert "--checkpoint" in str(caught.value) and "--watch" in str(caught.value)
    fewer = TIMED.replace("WITHIN 4 SECONDS", "WITHIN 5 SECONDS")  # the same lanes: taken
    assert fewer != TIMED
    assert check_checkpoint(str(tmp_path), parse_workload(fewer), default=2) == 2
