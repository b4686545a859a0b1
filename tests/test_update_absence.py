"""Queries with a trailing ABSENT(...) added to a running detector (issue
39): each has exactly the alerts of its pattern over the events from the
position it was added at, as if it ran alone from there (the reference
evaluator's rule 15, ``evaluate_interval``), event time included: its
deadlines pass by the times of those events only. Hypothesis draws streams
whose times go back within the allowed lateness, so the event time the
running queries have read before the change and the one the added query
has read differ."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.api import Detector
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import parse_and_check
from sharp_cer.reference import evaluate_interval
from tests.engine_cases import SCHEMA, SECOND
from tests.test_update import workload

LATENESS = SECOND
PLAIN = "SELECT * WHERE A AS a ; B AS b PARTITION BY [k] WITHIN 3 SECONDS"
SILENT_BY_K = "SELECT * WHERE A AS a ; ABSENT(B) PARTITION BY [k] WITHIN 2 SECONDS"
SILENT_SAME_X = "SELECT a WHERE A AS a ; ABSENT(C[x = a.x]) WITHIN 3 SECONDS"


@st.composite
def late_streams(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Events whose times go forward by up to 2 s or back by up to 1 s, never
    more than the allowed lateness behind the latest (none is a dead letter)."""
    rows, t, latest = [], 5 * SECOND, 5 * SECOND
    for _ in range(draw(st.integers(0, 14))):
        t = max(
            t + draw(st.sampled_from([-SECOND, -SECOND // 2, 0, SECOND // 2, SECOND, 2 * SECOND])), latest - LATENESS
        )
        latest = max(latest, t)
        kind = draw(st.sampled_from(["A", "A", "B", "C"]))
        rows.append({"type": kind, "x": draw(st.integers(0, 1)), "k": draw(st.integers(0, 1)), "j": 0, "t": t})
    return rows


def to_batch(rows: list[dict[str, Any]]) -> Any:
    """The rows loaded with the allowed lateness (none is late by more)."""
    frame = pd.DataFrame(rows, columns=["type", "x", "k", "j", "t"]).astype(np.int64, errors="ignore")
    batch, report = load_pandas(frame, SCHEMA, allowed_lateness=LATENESS)
    assert report.accepted == len(rows), report.summary()
    return batch


def _added_at(before: dict[str, str], after: dict[str, str], rows: list[dict[str, Any]], cut: int) -> dict[str, Any]:
    """Each query's alerts: ``before`` fed the events before ``cut``, then ``after``."""
    batch = to_batch(rows)
    detector = Detector.from_workload(workload(before), allowed_lateness=LATENESS)
    found = detector.feed(batch.take(np.arange(0, cut)))
    detector.update(workload(after))
    found += detector.feed(batch.take(np.arange(cut, len(rows))))
    by_query: dict[str, list[Any]] = {}
    for m in found:
        by_query.setdefault(m.query, []).append(m.key())
    return by_query


def _expected(name: str, text: str, rows: list[dict[str, Any]], first: int, removed: int | None = None) -> list[Any]:
    checked = parse_and_check(text, SCHEMA, name)
    batch = to_batch(rows)
    return sorted(m.key() for m in evaluate_interval(name, checked, batch, first, removed, allowed_lateness=LATENESS))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(late_streams(), st.data())
def test_a_trailing_absence_added_at_p_has_the_alerts_of_its_pattern_over_the_events_from_p(
    rows: list[dict[str, Any]], data: st.DataObject
) -> None:
    cut = data.draw(st.integers(0, len(rows)))
    # to an engine with no trailing absence, then to one that has one (its event time read from 0 on)
    for before in ({"plain": PLAIN}, {"plain": PLAIN, "silent_by_k": SILENT_BY_K}):
        after = {**before, "silent_same_x": SILENT_SAME_X}
        got = _added_at(before, after, rows, cut)
        assert sorted(got.get("silent_same_x", [])) == _expected("silent_same_x", SILENT_SAME_X, rows, cut)
        for name, text in before.items():  # untouched
            assert sorted(got.get(name, [])) == _expected(name, text, rows, 0)


def test_a_trailing_absence_replaced_by_another_window_drops_its_pending_alerts_and_starts_again() -> None:
    s = SECOND
    rows = [{"type": t, "x": 0, "k": 0, "j": 0, "t": at * s} for t, at in
            [("A", 0), ("A", 1), ("C", 2), ("A", 3), ("C", 9), ("C", 12)]]  # fmt: skip
    longer = SILENT_BY_K.replace("2 SECONDS", "4 SECONDS")
    got = _added_at({"silent_by_k": SILENT_BY_K}, {"silent_by_k": longer}, rows, 2)
    # by hand: A@0 and A@1 were pending (deadlines 2 s, 3 s) when replaced at position 2: they never come
    # out; the new text's only A is the one at position 3 (3 s, no B by 7 s: out once C@9 passes it)
    assert sorted(got["silent_by_k"]) == [("silent_by_k", 3, 3, (3,), (("A", (3,)), ("a", (3,))))]
    assert sorted(got["silent_by_k"]) == _expected("silent_by_k", longer, rows, 2)


def test_a_replaced_trailing_absence_still_waits_for_its_absence() -> None:
    # by hand: replaced at position 2 by a 4 s window; A@3 (k 0) sees no B of k 0 by 7 s: an alert; A@4 (k 1)
    # is followed by B@5 of k 1: no alert (a merge once dropped the new text's absence, and A@4 came out)
    s = SECOND
    events = [("A", 0, 0), ("A", 0, 1), ("C", 0, 2), ("A", 0, 3), ("A", 1, 4), ("B", 1, 5), ("C", 0, 9), ("C", 0, 12)]
    rows = [{"type": t, "x": 0, "k": k, "j": 0, "t": at * s} for t, k, at in events]
    longer = SILENT_BY_K.replace("2 SECONDS", "4 SECONDS")
    got = _added_at({"silent_by_k": SILENT_BY_K}, {"silent_by_k": longer}, rows, 2)
    assert [key[3] for key in sorted(got["silent_by_k"])] == [(3,)]
    assert sorted(got["silent_by_k"]) == _expected("silent_by_k", longer, rows, 2)
