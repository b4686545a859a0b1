"""``--count`` costs like the update (issue 33 item 7): counting on the tECS
reuses each node's count while the window's edge crosses none of its starts
(``enumeration.count_matches``), so an event does not walk every live node
again. Measured in nodes walked, not time; exactness against enumeration."""

from __future__ import annotations

import itertools

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.api import Detector
from sharp_cer.language import Schema

SCHEMA = Schema.parse(
    "CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { x:int, t:primary_time }, "
    "EVENT C { x:int, t:primary_time } }"
)


def test_counting_walks_about_the_nodes_created_not_the_live_ones_per_event() -> None:
    # one start, then 300 B C pairs: each C completes 2^k - 1 matches; before, each C walked
    # every live node again (225,450 nodes for 2,693 created); now each node about once
    types = ["A"] + ["B", "C"] * 300
    detector = Detector.from_queries([("q", "SELECT * WHERE A ; B+ ; C WITHIN 1000 EVENTS")], SCHEMA, count_only=True)
    detector.feed(pd.DataFrame({"type": types, "x": range(len(types)), "t": range(len(types))}))
    stats = detector.stats()
    assert detector.counts["q"] == sum(2**k - 1 for k in range(1, 301))
    assert stats["enumeration_steps"] <= 2 * stats["nodes_created"]


QUERIES = [
    "SELECT * WHERE A ; B+ ; C WITHIN 6 EVENTS",
    "SELECT * WHERE A ; B+ ; C WITHIN 5 [t]",
    "SELECT * WHERE (A OR B) ; C+ WITHIN 4 EVENTS",
    "SELECT * WHERE A ; B+ ; C PARTITION BY [x] WITHIN 7 [t]",
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 1), st.integers(0, 3)), max_size=40),
    st.lists(st.integers(0, 40), max_size=3),
    st.sampled_from([0, 3]),
)
def test_counts_equal_the_matches_enumerated_across_feeds(
    rows: list[tuple[str, int, int]], cuts: list[int], lateness: int
) -> None:
    # times go back now and then (within the lateness: the window's edge moves back too)
    t, times = 0, []
    for _, _, step in rows:
        t += step - 1
        times.append(t)
    frame = pd.DataFrame({"type": [k for k, _, _ in rows], "x": [x for _, x, _ in rows], "t": times})
    queries = [(f"q{i}", q) for i, q in enumerate(QUERIES)]
    counter = Detector.from_queries(queries, SCHEMA, count_only=True, allowed_lateness=lateness)
    lister = Detector.from_queries(queries, SCHEMA, allowed_lateness=lateness)
    found: list[str] = []
    bounds = [0, *sorted(c for c in cuts if c <= len(rows)), len(rows)]
    for lo, hi in itertools.pairwise(bounds):
        counter.feed(frame.iloc[lo:hi])
        found += [m.query for m in lister.feed(frame.iloc[lo:hi])]
    assert counter.counts == {name: found.count(name) for name, _ in queries}
