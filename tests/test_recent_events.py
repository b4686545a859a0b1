"""A stream key group's released events (``spark.recent_events``) against the
dict it replaced (position -> (time, event)): the same events, times and
forgetting, through any sequence of releases and forgets, and a state of
data format 1 read back."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.spark.recent_events import RecentEvents

_EVENT = st.tuples(st.none() | st.integers(0, 10**18), st.sampled_from("ABC"), st.none() | st.integers(-5, 5))
_STEP = st.one_of(
    st.tuples(st.just("release"), st.integers(1, 3), st.lists(_EVENT, max_size=5)),
    st.tuples(st.just("forget"), st.integers(0, 6), st.just([])),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(_STEP, max_size=12))
def test_recent_events_equal_a_dict_of_them(steps: list[tuple[str, int, list[Any]]]) -> None:
    model: dict[int, tuple[int | None, dict[str, Any]]] = {}
    recent = RecentEvents()
    position = 0
    for kind, gap, events in steps:
        if kind == "release":
            positions = [position + gap * (i + 1) for i in range(len(events))]
            position = positions[-1] if positions else position
            rows = [{"type": t, "x": x} for _, t, x in events]
            times = [time for time, _, _ in events]
            recent.add(
                np.array(positions, dtype=np.int64),
                np.array([t or 0 for t in times], dtype=np.int64),
                np.array([t is not None for t in times]),
                pa.Table.from_pylist(rows, schema=pa.schema([("type", pa.string()), ("x", pa.int64())])),
            )
            model.update(zip(positions, zip(times, rows, strict=True), strict=True))
        else:
            oldest = position - gap
            recent.forget(oldest)
            model = {p: v for p, v in model.items() if p >= oldest}
        assert list(recent) == sorted(model) and len(recent) == len(model)
        assert recent.rows(model) == {p: row for p, (_, row) in model.items()}
        assert {p: recent.time(p) for p in model} == {p: t for p, (t, _) in model.items()}
    assert sorted(RecentEvents.from_dict(model)) == sorted(model)
    assert RecentEvents.from_dict(model).rows(model) == {p: row for p, (_, row) in model.items()}
