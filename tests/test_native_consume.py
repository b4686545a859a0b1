"""CONSUME BY, the selection strategies (NEXT, LAST, MAX, STRICT), and LIMIT in
the compiled core (``engine._core``; issue 37): random queries with those
clauses over random streams, in one batch and in several, with a snapshot
taken and restored mid-stream, against the reference evaluator (exact
equality of the matches) and the pure-Python engine (the same matches in
the same order, and the same figures of ``Engine.stats``). The core must
take every such group (asserted): only a query without WITHIN stays on the
Python path. Hand-worked cases check the ghost runs of CONSUME BY (a run
completing outside its window still consumes) on the core."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine, native
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, queries, streams, to_batch
from tests.test_native_core import FIGURES, SETTINGS, _check, _pure, _reasons

compiled_only = pytest.mark.skipif(not native.available(), reason="the compiled core is not built (or SHARP_CER_PURE)")
#: what may keep a drawn group out of the core: no window (never its clauses)
ALLOWED = {None, "a window by none"}


def _chooses(text: str) -> bool:
    """Whether a drawn query holds a clause of this file's (else the draw adds nothing here)."""
    return any(word in text for word in ("CONSUME BY ANY", "CONSUME BY PARTITION", "LIMIT", "NEXT", "LAST", "MAX"))


@compiled_only
@settings(max_examples=100, **SETTINGS)  # type: ignore[arg-type]
@given(
    st.lists(queries(strategies=True, consume=True, limit=True, negation=True), min_size=1, max_size=2),
    streams(max_size=12),
    st.sampled_from([None, 1, 4]),
)
def test_strategies_consume_and_limit_run_in_the_core_exactly(
    texts: list[str], rows: list[dict[str, Any]], size: Any
) -> None:
    assert set(_reasons(texts)) <= ALLOWED
    _check(texts, rows, size)


@compiled_only
@settings(max_examples=50, **SETTINGS)  # type: ignore[arg-type]
@given(
    st.lists(queries(strategies=True, consume=True, limit=True, cross=True), min_size=1, max_size=2),
    streams(max_size=12, nulls=True),
    st.sampled_from([None, 1, 4]),
)
def test_with_cross_event_conditions_a_walk_decides_what_is_consumed(
    texts: list[str], rows: list[dict[str, Any]], size: Any
) -> None:
    # a consuming query with cross-event conditions walks its final nodes (without window) to see
    # whether a run completed with every condition; its steps are booked on the clock alone
    assert set(_reasons(texts)) <= ALLOWED
    _check(texts, rows, size)


@compiled_only
@settings(max_examples=30, **SETTINGS)  # type: ignore[arg-type]
@given(
    st.lists(queries(strategies=True, consume=True, limit=True), min_size=1, max_size=2).filter(
        lambda texts: any(map(_chooses, texts))
    ),
    streams(max_size=14),
)
def test_a_snapshot_mid_stream_carries_ghost_runs_to_python_and_back(
    texts: list[str], rows: list[dict[str, Any]]
) -> None:
    # the state goes to Python objects (``Partition.ghosts`` included), is pickled and restored,
    # and the core loads it back at the next batch
    _check(texts, rows, 3, snapshot_at=1)


# ---------------------------------------------------------------- by hand


def _run(text: str, stream: str, size: int = 1, reference: bool = True) -> tuple[list[tuple[int, ...]], Engine]:
    """The matches' events of ``text`` over ``stream`` ("A0 B1": type and k) in batches of ``size``, on
    the core (asserted), with the pure engine's matches and figures equal, and (with ``reference``) the
    reference evaluator's matches."""
    rows = [{"type": e[0], "x": 0, "k": int(e[1]), "t": i * 10**9} for i, e in enumerate(stream.split())]
    rows = [row if row["type"] == "D" else {**row, "j": 0} for row in rows]
    batch = to_batch(rows)
    plan = compile_plan([("q", parse_and_check(text, SCHEMA))])
    fast, slow = Engine(plan), _pure(Engine(plan))
    assert fast.runners[0].core is not None, native.ineligible(fast.runners[0])
    found: list[list[Any]] = [[], []]
    for engine, out in zip((fast, slow), found, strict=True):
        for lo in range(0, len(batch), size):
            out.extend(engine.process(batch.take(list(range(lo, min(lo + size, len(batch)))))))
    assert found[0] == found[1]
    assert {k: fast.stats()[k] for k in FIGURES} == {k: slow.stats()[k] for k in FIGURES}
    if reference:
        named = [("q", parse_and_check(text, SCHEMA))]
        assert sorted(m.key() for m in found[0]) == sorted(m.key() for m in evaluate(named, batch).per_query["q"])
    return [m.events for m in found[0]], fast


@compiled_only
def test_a_run_completing_outside_its_window_still_consumes_in_the_core() -> None:
    # By hand (as tests/test_engine_features.py's Python case): C at 2 starts C ; B ; B, A at 0
    # starts A ; B. At 3, A0 ; B3 completes outside the 2-event window (a ghost run: its nodes are
    # gone, its state is not) and still consumes C's run, so B at 4 completes nothing.
    text = "SELECT * WHERE (A ; B) OR (C ; B ; B) WITHIN 2 EVENTS CONSUME BY ANY"
    consumed, _ = _run(text, "A0 D0 C0 B0 B0")
    assert consumed == []
    kept, _ = _run(text.replace(" CONSUME BY ANY", ""), "A0 D0 C0 B0 B0")
    assert kept == [(2, 3, 4)]


@compiled_only
@pytest.mark.parametrize("size", [1, 2, 6])
def test_consume_by_partition_keeps_the_other_partitions_in_the_core(size: int) -> None:
    # By hand: k=0 completes A ; B at 2 (from 0) and forgets its A at 1; k=1's A at 3 is kept and
    # completes at 5; the B at 4 (k=0) finds no A of k=0 left.
    text = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 9 EVENTS CONSUME BY PARTITION"
    found, _ = _run(text, "A0 A0 B0 A1 B0 B1", size)
    assert found == [(0, 2), (1, 2), (3, 5)]


@compiled_only
def test_limit_keeps_the_latest_starts_in_the_core() -> None:
    # By hand: four As then a B; LIMIT 2 keeps the two latest starts (2 and 3) of the four matches.
    found, engine = _run("SELECT * WHERE A ; B WITHIN 9 EVENTS LIMIT 2", "A0 A0 A0 A0 B0")
    assert found == [(2, 4), (3, 4)]
    assert engine.stats()["matches"] == {"q": 2}


@compiled_only
def test_limit_compares_the_latest_events_from_the_last_back_in_the_core() -> None:
    # By hand (as tests/test_engine_features.py's Python case): at 3 the latest start is 1; of
    # {1, 2, 3} and {1, 3}, compared from the last position back (3 = 3, then 2 against 1), {1, 2, 3}
    # is later, and LIMIT 1 keeps it.
    found, _ = _run("SELECT * WHERE A ; B+ WITHIN 9 EVENTS LIMIT 1", "A0 A0 B0 B0")
    assert found == [(1, 2), (1, 2, 3)]


@compiled_only
def test_strict_with_consumption_checks_each_match_in_the_core() -> None:
    # By hand: STRICT keeps matches whose interval holds only their own events; the completion at 4
    # consumes the run that started at 3, so B at 5 completes nothing (C at 2 breaks A0's run).
    found, _ = _run("SELECT STRICT * WHERE A ; B+ WITHIN 9 EVENTS CONSUME BY ANY", "A0 B0 C0 A0 B0 B0")
    assert sorted(found) == [(0, 1), (3, 4)]


@compiled_only
def test_a_long_stream_with_ghosts_keeps_skipping_and_figures_equal() -> None:
    # The skip index counts ghost states as live ones: an idle symbol for every live and ghost
    # state is skipped in bulk, the same events as on the Python path (figures compared in _run). The
    # brute-force reference would take minutes on 1,500 events: the pure engine is the oracle here,
    # and the random cases above hold both against the reference.
    rng = random.Random(7)
    stream = " ".join(f"{rng.choice('AABCCD')}{rng.randrange(3)}" for _ in range(1_500))
    text = "SELECT LAST * WHERE A ; B ; C PARTITION BY [k] WITHIN 5 EVENTS CONSUME BY PARTITION"
    found, engine = _run(text, stream, 200, reference=False)
    assert found and engine.stats()["events_skipped"] > 0


@compiled_only
def test_an_update_mid_stream_leaves_a_consuming_group_in_the_core() -> None:
    # Engine.update adds a query (a group of its own: it cannot share with a consuming one) and
    # removes none: the consuming group's state, ghosts included, runs on in the core, with the
    # same matches and figures as the pure engine given the same update.
    rng = random.Random(11)
    rows = [
        {"type": rng.choice("ABCC"), "x": rng.randrange(4), "k": rng.randrange(2), "j": 0, "t": i} for i in range(600)
    ]
    batch = to_batch(rows)
    text = "SELECT NEXT * WHERE A ; B+ ; C PARTITION BY [k] WITHIN 4 EVENTS CONSUME BY PARTITION"
    plan = compile_plan([("q", parse_and_check(text, SCHEMA))])
    added = [("r", parse_and_check("SELECT * WHERE B ; C WITHIN 3 EVENTS LIMIT 1", SCHEMA))]
    engines = Engine(plan), _pure(Engine(plan))
    found: list[list[Any]] = [[], []]
    for engine, out in zip(engines, found, strict=True):
        out.extend(engine.process(batch.take(list(range(300)))))
        engine.update(added)
        if engine is engines[1]:
            _pure(engine)
        out.extend(engine.process(batch.take(list(range(300, 600)))))
    assert engines[0].runners[0].core is not None and engines[0].runners[0].core.owns
    assert found[0] == found[1] and any(m.query == "r" for m in found[0])
    assert {k: engines[0].stats()[k] for k in FIGURES} == {k: engines[1].stats()[k] for k in FIGURES}
