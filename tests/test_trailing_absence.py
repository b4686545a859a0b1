"""Trailing absence ``p ; ABSENT(F) WITHIN d`` (issue 35): the engine against
the reference evaluator's rule 14 (hypothesis: random p, F with conditions
reading p's variables, seconds and milliseconds, batches of any size,
lateness), and worked examples computed by hand."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine
from sharp_cer.events.batch import EventBatch
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.language.diagnostics import QueryError
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, SECOND, late_streams, streams, to_batch, to_late_batch, trailing_queries

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def _run(engine: Engine, batch: EventBatch, size: int | None) -> list[Any]:
    if not size or not len(batch):
        return engine.process(batch)
    found = []
    for lo in range(0, len(batch), size):
        found.extend(engine.process(batch.take(list(range(lo, min(lo + size, len(batch)))))))
    return found


def check(texts: list[str], batch: EventBatch, size: int | None = None, lateness: int = 0) -> None:
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    expected = evaluate(named, batch, allowed_lateness=lateness)
    runs = []
    for skip in (True, False):
        engine = Engine(compile_plan(named), debug=True, allowed_lateness=lateness, skip=skip)
        runs.append(_run(engine, batch, size))
        assert engine.stats()["pending_absences"] == {n: expected.pending[n] for n, _ in named if n in expected.pending}
    assert runs[0] == runs[1], "skipping events in bulk changed the output"
    found = runs[0]
    for name, _ in named:
        want = [(*m.key(), m.deadline) for m in expected.per_query[name]]
        got = [(*m.key(), m.deadline) for m in found if m.query == name]
        assert got == want, f"{name}: {dict(named)[name].source.text}"


@pytest.mark.slow
@settings(max_examples=150, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(trailing_queries(), min_size=1, max_size=3), streams(max_size=12))
def test_trailing_absence_against_the_reference(texts: list[str], rows: list[dict[str, Any]]) -> None:
    check(texts, to_batch(rows))


@pytest.mark.slow
@settings(max_examples=100, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(trailing_queries(full=True), min_size=1, max_size=2), streams(max_size=10), st.integers(1, 4))
def test_trailing_absence_every_feature_in_batches(texts: list[str], rows: list[dict[str, Any]], size: int) -> None:
    check(texts, to_batch(rows), size=size)


@settings(max_examples=20, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(trailing_queries(full=True), min_size=1, max_size=2), streams(max_size=10, nulls=True))
def test_trailing_absence_with_nulls(texts: list[str], rows: list[dict[str, Any]]) -> None:
    # null x, k and j (issue 33.14): ABSENT(B[x = a.x]) is not broken by a B whose x is null
    check(texts, to_batch(rows))


@pytest.mark.slow
@settings(max_examples=80, **SETTINGS)  # type: ignore[arg-type]
@given(
    st.lists(trailing_queries(), min_size=1, max_size=2),
    late_streams(),
    st.sampled_from([0, SECOND // 2, SECOND, 2 * SECOND]),
    st.integers(1, 3),
)
def test_trailing_absence_with_lateness(texts: list[str], rows: list[dict[str, Any]], lateness: int, size: int) -> None:
    check(texts, to_late_batch(rows, lateness), size=size, lateness=lateness)


HEARTBEATS = Schema.parse(
    """CREATE STREAM S { EVENT HB { dev:int, t:primary_time },
                         EVENT LOGIN { user:string, t:primary_time },
                         EVENT LOGOUT { user:string, t:primary_time },
                         EVENT NOTE { text:string } }"""
)


def _batch(rows: list[dict[str, Any]], lateness: int = 0) -> EventBatch:
    import pandas as pd

    from sharp_cer.events.loaders import load_pandas

    return load_pandas(pd.DataFrame(rows), HEARTBEATS, allowed_lateness=lateness)[0]


def test_heartbeat_silence_fires_on_another_devices_event() -> None:
    # by hand: dev 1 beats at 0 s and 5 s, dev 2 at 1 s; window 10 s. dev 1's
    # beat at 0 s is followed by its own at 5 s (cancelled); dev 2's deadline
    # is 11 s, dev 1's second 15 s. Event time reaches 20 s with dev 3's beat
    # (row 3): both fire there, though neither device sent anything since.
    q = parse_and_check("SELECT * WHERE HB AS h ; ABSENT(HB) PARTITION BY [dev] WITHIN 10 SECONDS", HEARTBEATS)
    engine = Engine(compile_plan([("silent", q)]))
    rows = [{"type": "HB", "dev": d, "t": t * SECOND} for d, t in [(1, 0), (2, 1), (1, 5), (3, 20)]]
    first = engine.process(_batch(rows[:3]))
    assert first == []  # no time has passed yet
    alerts = engine.process(EventBatch(*_shifted(_batch(rows[3:]), 3)))
    assert [(m.start, m.end, m.deadline, m.vars["h"]) for m in alerts] == [
        (1, 1, 11 * SECOND, (1,)),
        (2, 2, 15 * SECOND, (2,)),
    ]
    assert engine.stats()["pending_absences"] == {"silent": 1}  # dev 3's, due at 30 s


def _shifted(batch: EventBatch, offset: int) -> tuple[Any, ...]:
    return (batch.event_types, batch.positions + offset, batch.codes, batch.columns)


def test_login_without_logout_reads_the_login_variable_and_waits_for_lateness() -> None:
    # no PARTITION BY: the condition ties LOGOUT to the login's user. Window
    # 1 s, lateness 200 ms. ann logs in at 0 and out at 0.5 s (cancelled);
    # bob logs in at 0.3 s, deadline 1.3 s; eve's logout at 0.9 s is not
    # bob's. Event time is 1.3 s at the note-free LOGIN at 1.5 s (1.5 - 0.2 =
    # 1.3, not past), and passes at 1.6 s: bob's alert comes out at row 5.
    q = parse_and_check("SELECT l WHERE LOGIN AS l ; ABSENT(LOGOUT[user = l.user]) WITHIN 1000 MS", HEARTBEATS)
    rows = [
        {"type": "LOGIN", "user": "ann", "t": 0},
        {"type": "LOGIN", "user": "bob", "t": 300_000_000},
        {"type": "LOGOUT", "user": "ann", "t": 500_000_000},
        {"type": "LOGOUT", "user": "eve", "t": 900_000_000},
        {"type": "LOGIN", "user": "cy", "t": 1_500_000_000},
        {"type": "LOGIN", "user": "dee", "t": 1_600_000_000},
    ]
    batch = _batch(rows, lateness=200_000_000)
    engine = Engine(compile_plan([("open", q)]), allowed_lateness=200_000_000)
    found = engine.process(batch)
    assert [(m.start, m.end, m.events, m.deadline) for m in found] == [(1, 1, (1,), 1_300_000_000)]
    assert engine.stats()["pending_absences"] == {"open": 2}  # cy and dee
    reference = evaluate([("open", q)], batch, allowed_lateness=200_000_000)
    assert reference.matches == found and reference.pending == {"open": 2}


def test_an_event_without_time_moves_nothing() -> None:
    q = parse_and_check("SELECT * WHERE HB ; ABSENT(HB) PARTITION BY [dev] WITHIN 1 SECONDS", HEARTBEATS)
    rows = [{"type": "HB", "dev": 1, "t": 0}, {"type": "NOTE", "text": "x"}]
    engine = Engine(compile_plan([("q", q)]))
    assert engine.process(_batch(rows)) == []
    assert engine.stats()["pending_absences"] == {"q": 1}


def test_snapshot_keeps_pending_absences() -> None:
    q = parse_and_check("SELECT * WHERE HB ; ABSENT(HB) PARTITION BY [dev] WITHIN 1 SECONDS", HEARTBEATS)
    plan = compile_plan([("q", q)])
    engine = Engine(plan)
    engine.process(_batch([{"type": "HB", "dev": 1, "t": 0}]))
    restored = Engine(plan)
    restored.restore(pickle.loads(pickle.dumps(engine.snapshot())))
    later = _batch([{"type": "HB", "dev": 2, "t": 5 * SECOND}])
    later = EventBatch(*_shifted(later, 1))
    assert [(m.start, m.deadline) for m in restored.process(later)] == [(0, SECOND)]


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("SELECT * WHERE HB ; ABSENT(HB)", "no WITHIN"),
        ("SELECT * WHERE HB ; ABSENT(HB) WITHIN 5 EVENTS", "WITHIN 5 EVENTS"),
        ("SELECT * WHERE HB ; ABSENT(HB) WITHIN 5 [t]", "WITHIN 5 [t]"),
    ],
)
def test_trailing_absence_needs_a_time_window(text: str, found: str) -> None:
    with pytest.raises(QueryError) as caught:
        parse_and_check(text, HEARTBEATS)
    error = caught.value
    assert "needs a time window" in str(error) and error.found == found
    assert error.span is not None and error.span.column == text.index("ABSENT") + 1
    assert "^^^" in str(error)


def test_a_detector_moves_event_time_without_an_event_and_keeps_tenants() -> None:
    # how a part of the stream run alone (Spark's key group) learns the stream's time at its end
    import pandas as pd

    from sharp_cer.api import Detector

    detector = Detector.from_queries(
        [("silent", "SELECT * WHERE HB ; ABSENT(HB) PARTITION BY [dev] WITHIN 1 SECONDS")],
        HEARTBEATS,
        tenants={"silent": "acme"},
    )
    assert detector.feed(pd.DataFrame({"type": ["HB"], "dev": [1], "t": [0]})) == []
    assert detector.advance(SECOND) == []  # not past the deadline (1 s) yet
    (alert,) = detector.advance(SECOND + 1)
    assert (alert.tenant, alert.start, alert.deadline) == ("acme", 0, SECOND)
    assert detector.stats()["pending_absences"] == {"silent": 0}
