"""A stream's rows packed per key group (``spark.stream_packing``): every row
reaches its own lane and key group once, in its order, with its values, and
the packed row's time is the largest of its rows' (the watermark's input)."""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.spark.columns import KEY_GROUP, LANE, TIME
from sharp_cer.spark.routing import BLOB
from sharp_cer.spark.stream_packing import pack_key_groups, unpack_rows

_ROW = st.tuples(
    st.integers(-2, 2),  # lane (TICKS and the letters' lane included)
    st.integers(0, 2),  # key group
    st.none() | st.integers(0, 10**6),  # time (µs), mostly null as in the stream
    st.integers(-(2**63), 2**63 - 1),  # ints ride without nulls (a flag column marks them)
    st.none() | st.text(max_size=5),
)


def _batch(rows: list[tuple[Any, ...]]) -> pa.RecordBatch:
    lane, group, time, x, s = (list(c) for c in zip(*rows, strict=True))
    epoch = datetime.datetime(1970, 1, 1)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(lane, pa.int64()),
            pa.array(group, pa.int64()),
            pa.array(
                [None if t is None else epoch + datetime.timedelta(microseconds=t) for t in time], pa.timestamp("us")
            ),
            pa.array(x, pa.int64()),
            pa.array(s, pa.string()),
        ],
        names=[LANE, KEY_GROUP, TIME, "x", "s"],
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_ROW, min_size=0, max_size=12), min_size=1, max_size=3))
def test_each_key_group_gets_its_rows_in_order(batches: list[list[tuple[Any, ...]]]) -> None:
    inputs = [_batch(rows) for rows in batches if rows]
    packed = pa.Table.from_batches(list(pack_key_groups(iter(inputs))), schema=None) if inputs else None
    keys = sorted({(r[0], r[1]) for rows in batches for r in rows})
    for lane, group in keys:
        expected = [(r[3], r[4]) for rows in batches for r in rows if (r[0], r[1]) == (lane, group)]
        mine = packed.filter((packed.column(LANE).to_numpy() == lane) & (packed.column(KEY_GROUP).to_numpy() == group))
        # one packed row per input batch the key group has rows in
        assert mine.num_rows == sum(1 for rows in batches if any((r[0], r[1]) == (lane, group) for r in rows))
        frame = unpack_rows(iter([mine.to_pandas()]))
        got = list(zip(frame["x"].tolist(), frame["s"].tolist(), strict=True))
        assert got == expected
        assert list(frame.columns) == ["x", "s"]
        # the watermark sees the largest time of each packed row's rows, null where none has one
        for rows, when in zip(
            [rows for rows in batches if any((r[0], r[1]) == (lane, group) for r in rows)],
            mine.column(TIME).to_pylist(),
            strict=True,
        ):
            times = [r[2] for r in rows if (r[0], r[1]) == (lane, group) and r[2] is not None]
            micros = (
                None if when is None else (when - datetime.datetime(1970, 1, 1)) // datetime.timedelta(microseconds=1)
            )
            assert micros == (max(times) if times else None)
    assert packed is None or packed.schema.names == [LANE, KEY_GROUP, TIME, BLOB]
