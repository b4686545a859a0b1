"""The same rows give the same result however they are split into feeds
(issue 33 item 8): lateness is judged against the latest time of every
feed so far, as within one call."""

from __future__ import annotations

import itertools

import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.api import Detector
from sharp_cer.language import Schema

SCHEMA = "CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { x:int, t:primary_time } }"
QUERY = "SELECT * WHERE A ; B WITHIN 10 [t]"


def test_a_late_row_in_a_later_feed_is_dead_lettered() -> None:
    schema = Schema.parse(SCHEMA)
    detector = Detector.from_queries([("q", QUERY)], schema, allowed_lateness=0)
    assert detector.feed(pd.DataFrame({"type": ["A"], "x": [1], "t": [5]})) == []
    assert detector.feed(pd.DataFrame({"type": ["B"], "x": [1], "t": [2]})) == []
    assert [d.kind for d in detector.reports[-1].dead_letters] == ["late"]
    # an Arrow table is judged the same way
    assert detector.feed(pa.table({"type": ["B"], "x": [1], "t": [3]})) == []
    assert [d.kind for d in detector.reports[-1].dead_letters] == ["late"]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 12)), max_size=25),
    st.lists(st.integers(0, 25), max_size=4),
    st.sampled_from([0, 2]),
    st.booleans(),
)
def test_any_split_into_feeds_equals_one_call(
    rows: list[tuple[str, int]], cuts: list[int], lateness: int, arrow: bool
) -> None:
    schema = Schema.parse(SCHEMA)
    frame = pd.DataFrame({"type": [k for k, _ in rows], "x": range(len(rows)), "t": [t for _, t in rows]})
    whole = Detector.from_queries([("q", QUERY)], schema, allowed_lateness=lateness, history=True)
    expected = whole.feed(frame)
    expected_letters = [d.kind for r in whole.reports for d in r.dead_letters]
    split = Detector.from_queries([("q", QUERY)], schema, allowed_lateness=lateness, history=True)
    bounds = [0, *sorted(c for c in cuts if c <= len(rows)), len(rows)]
    got = []
    for lo, hi in itertools.pairwise(bounds):
        part = frame.iloc[lo:hi]
        got += split.feed(pa.Table.from_pandas(part, preserve_index=False) if arrow else part)
    assert [m.key() for m in got] == [m.key() for m in expected]
    assert [d.kind for r in split.reports for d in r.dead_letters] == expected_letters
