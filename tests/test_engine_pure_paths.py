"""The pure-Python engine's hot paths rewritten for speed (issue 37's cheap
fixes), each against the plain definition it replaces: a union node's
summary is the termwise ``min`` of its children's lows and ``max`` of their
highs; a term's range over two parts joins as ``join_sequence`` always did
(sums add, ``min``/``max`` take the lower/higher ends, envelopes widen),
NaN and infinities included; a sweep evicts the partitions a sweep of
every partition evicts; a block of output lines is each match's JSON. The engine's matches are covered end to end by
the differential tests against the reference evaluator
(``tests/test_engine_differential.py``)."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.engine import runtime, selection
from sharp_cer.engine import state as state_module
from sharp_cer.engine.conditions import IDENTITY, FilterCheck, Summaries, join_sequence
from sharp_cer.engine.runtime import Engine, QueryGroupRunner
from sharp_cer.engine.selection import Projection
from sharp_cer.engine.tecs import bottom, extend, merge
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, ast, parse_and_check, parse_query
from sharp_cer.planner import compile_plan
from sharp_cer.planner.plan import CrossFilter

ENDS = st.one_of(
    st.integers(-5, 5).map(float),
    st.sampled_from([math.inf, -math.inf, math.nan]),
)
SUMMARY = st.integers(1, 4).flatmap(lambda k: st.tuples(*[st.tuples(ENDS, ENDS)] * k))
KINDS = ("sum", "count", "min", "max", "env")


def _same(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b, strict=True))


def _min(a: float, b: float) -> float:
    """``min``, but NaN if either side is NaN (a NaN end is unknown and must not be dropped)."""
    return math.nan if a != a or b != b else min(a, b)


def _max(a: float, b: float) -> float:
    """``max``, but NaN if either side is NaN."""
    return math.nan if a != a or b != b else max(a, b)


def _plain_join(kind: str, a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    """join_sequence as it was written before (min and max builtins), NaN kept."""
    if kind in ("sum", "count"):
        return a[0] + b[0], a[1] + b[1]
    if kind == "min":
        return _min(a[0], b[0]), _min(a[1], b[1])
    if kind == "max":
        return _max(a[0], b[0]), _max(a[1], b[1])
    return _min(a[0], b[0]), _max(a[1], b[1])


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_union_summary_is_the_termwise_min_and_max(data: st.DataObject) -> None:
    k = data.draw(st.integers(1, 4))
    pairs = st.tuples(*[st.tuples(ENDS, ENDS)] * k)
    left_terms, right_terms = data.draw(pairs), data.draw(pairs)
    left, right = extend(bottom(5, 5, 5), 6, 0), extend(bottom(2, 2, 2), 6, 0)
    left.summary = (tuple(t[0] for t in left_terms), tuple(t[1] for t in left_terms))
    right.summary = (tuple(t[0] for t in right_terms), tuple(t[1] for t in right_terms))
    union = merge([left, right])
    lows, highs = union.summary
    assert _same(lows, tuple(map(_min, left.summary[0], right.summary[0])))
    assert _same(highs, tuple(map(_max, left.summary[1], right.summary[1])))


def test_a_union_of_two_nodes_sharing_their_summary_keeps_it() -> None:
    left, right = extend(bottom(5, 5, 5), 6, 0), extend(bottom(2, 2, 2), 6, 0)
    left.summary = right.summary = ((1.0, math.nan), (3.0, math.nan))
    assert merge([left, right]).summary is left.summary


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(KINDS), st.tuples(ENDS, ENDS), st.tuples(ENDS, ENDS))
def test_join_sequence_is_the_plain_join(kind: str, a: tuple[float, float], b: tuple[float, float]) -> None:
    assert _same(join_sequence(kind, a, b), _plain_join(kind, a, b))


def _check(condition: str) -> tuple[Summaries, FilterCheck]:
    pattern = parse_query(f"SELECT * WHERE A FILTER {condition}").pattern
    assert isinstance(pattern, ast.Filter)
    cross = CrossFilter("#0", "#0^", (pattern.condition,))
    summaries = Summaries([cross], [frozenset({"#0", "#0^", "a"}), frozenset({"#0", "b"})], {"x", "y"})
    return summaries, summaries.checks[0]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_possible_is_the_bound_test_on_the_plainly_joined_ranges(data: st.DataObject) -> None:
    # every term kind: sum, count, min, max and an envelope (avg)
    summaries, check = _check("sum(b.x) + count(b) < min(b.y) + max(b.x) + avg(b.y) + a.x")
    terms = len(summaries.keys)
    seen, below = (data.draw(st.tuples(*[st.tuples(ENDS, ENDS)] * terms)) for _ in range(2))
    seen_summary = (tuple(t[0] for t in seen), tuple(t[1] for t in seen))
    below_summary = (tuple(t[0] for t in below), tuple(t[1] for t in below))
    intervals = [
        _plain_join(kind, (seen_summary[0][t], seen_summary[1][t]), (below_summary[0][t], below_summary[1][t]))
        for kind, t in zip(check.kinds, check.terms, strict=True)
    ]
    expected = all(test(intervals) is not False for test in check.bounds)
    assert check.possible(seen_summary, below_summary) is expected


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_an_output_summary_joins_the_event_to_the_range_below(data: st.DataObject) -> None:
    summaries, _ = _check("sum(b.x) + count(b) < min(b.y) + max(b.x) + avg(b.y) + a.x")
    terms = len(summaries.keys)
    below = data.draw(st.tuples(*[st.tuples(ENDS, ENDS)] * terms))
    below_summary = (tuple(t[0] for t in below), tuple(t[1] for t in below))
    label = data.draw(st.sampled_from([0, 1]))
    values = (data.draw(st.one_of(st.none(), ENDS)), data.draw(st.one_of(st.none(), ENDS)))
    reset = data.draw(st.booleans())
    got = summaries.output(label, values, below_summary, reset=reset)
    names = summaries.labels[label]
    lows, highs = list(below_summary[0]), list(below_summary[1])
    for i, (_, kind, var, attribute) in enumerate(summaries.keys):
        starts = "#0^" in names
        base = IDENTITY[kind] if starts and reset else (lows[i], highs[i])
        if var not in names:
            if starts:
                lows[i], highs[i] = base
            continue
        mine: tuple[float, float]
        if kind == "count":
            mine = (1, 1)
        else:
            value = values[summaries.attributes.index(attribute)]
            mine = (value, value) if value is not None else IDENTITY[kind] if kind != "env" else (-math.inf, math.inf)
        lows[i], highs[i] = _plain_join(kind, mine, base)
    assert _same(got[0], tuple(lows)) and _same(got[1], tuple(highs))


# ---------------------------------------------------------------- sweeps

SCHEMA_AB = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
SWEEP_SCHEMA = Schema.parse("CREATE STREAM S { EVENT A { k:int, t:primary_time }, EVENT B { k:int, t:primary_time } }")
SWEEP_QUERIES = [
    "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 3 EVENTS",
    "SELECT * WHERE A ; B+ ; A PARTITION BY [k] WITHIN 4 SECONDS",
    "SELECT * WHERE B ; A PARTITION BY [k] WITHIN 2 EVENTS",
]
ROWS = st.lists(st.tuples(st.sampled_from("AB"), st.integers(0, 6), st.integers(0, 3)), min_size=1, max_size=120)


def _every_partition_swept(runner: QueryGroupRunner, position: int) -> None:
    """The sweep as it was: every partition whose every run's key is below the horizon goes."""
    if not runner.sweeps:
        return
    horizon = runner.compiled.horizon(position, runner.state.latest_time)
    partitions = runner.state.partitions
    for key in [k for k, p in partitions.items() if all(ul[0].maxkey < horizon for ul in p.active.values())]:
        runner._drop(key)


def _live(engine: Engine) -> list[tuple[list[str], int]]:
    return [(sorted(map(repr, r.state.partitions)), r.state.evicted) for r in engine.runners]


def _side_by_side(
    text: str, rows: list[tuple[str, int, int]], size: int, every: int, cut_at: int, restore_at: int
) -> None:
    """The engine and one whose sweeps look at every partition, batch by batch: the same
    matches, partitions and evictions. After batch ``cut_at`` a shedder's cut takes the newest
    run of the first partition's first list out of both; after batch ``restore_at`` the engine
    continues from its snapshot (each makes its next sweep look at every partition)."""
    t, lines = 0, []
    for kind, k, gap in rows:
        t += gap * 1_000_000_000
        lines.append(f"{kind},{k},{t}")
    events = load_csv("\n".join(lines) + "\n", SWEEP_SCHEMA)[0]
    plan = compile_plan([("q", parse_and_check(text, SWEEP_SCHEMA))])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "SWEEP_EVERY", every)
        patch.setattr(state_module, "SWEEP_EVERY", every)
        engine, brute = Engine(plan), Engine(plan)
        patch.setattr(brute.runners[0], "sweep", partial(_every_partition_swept, brute.runners[0]))
        for b, lo in enumerate(range(0, len(events), size)):
            batch = events.take(list(range(lo, min(lo + size, len(events)))))
            found = [(m.start, m.end, m.events) for m in engine.process(batch)]
            assert found == [(m.start, m.end, m.events) for m in brute.process(batch)]
            assert _live(engine) == _live(brute)
            mine, theirs = engine.runners[0], brute.runners[0]
            if b == cut_at and mine.state.partitions:
                partition, other = (
                    next(iter(mine.state.partitions.values())),
                    next(iter(theirs.state.partitions.values())),
                )
                state = next(iter(partition.active))
                keep = [False] + [True] * (len(partition.active[state]) - 1)
                assert mine.take_out(partition, state, keep) == theirs.take_out(other, state, keep)
            if b == restore_at:
                engine = Engine(plan)
                engine.restore(mine.engine.snapshot())


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SWEEP_QUERIES), ROWS, st.integers(1, 9), st.integers(1, 5), st.integers(-1, 8))
def test_a_sweep_evicts_what_a_sweep_of_every_partition_evicts(
    text: str, rows: list[tuple[str, int, int]], size: int, every: int, cut_at: int
) -> None:
    _side_by_side(text, rows, size, every, cut_at, cut_at + 2)


def test_a_sweep_after_a_cut_judges_the_partition_by_its_runs_left() -> None:
    # partition 1 holds runs from positions 0 and 1; the cut takes the newer out after the
    # first sweep saw it, so the partition is out of every window a position earlier
    rows = [("A", 1, 0), ("A", 1, 0), *[("A", 2, 0)] * 6]
    _side_by_side(SWEEP_QUERIES[0], rows, 1, 1, 1, -1)


# ---------------------------------------------------------------- output lines


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, "acme", "beta"]),
            st.integers(0, 5),
            st.lists(st.sampled_from([0, 1]), min_size=1, max_size=4),
        ),
        min_size=1,
        max_size=12,
    ),
    st.integers(1, 3),
)
def test_lines_are_the_matches_json(rows: list[tuple[str | None, int, list[int]]], bound: int) -> None:
    # a bound of a few templates clears them often, in the middle of a block too
    plan = compile_plan([("q", parse_and_check("SELECT * WHERE A AS x ; B+ AS y WITHIN 9 EVENTS", SCHEMA_AB))])
    projection = Projection(plan.queries[0], [("A", "x"), ("B", "y")])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(selection, "_TEMPLATES", bound)
        for tenant, start, labels in rows:
            at = tuple(range(start, start + len(labels)))
            block = [(start, at, tuple(labels))] * 2
            expected = replace(projection.match(start, 9, tuple(zip(at, labels, strict=True))), tenant=tenant).to_json()
            assert projection.lines(tenant, 9, block) == [expected, expected]
            assert projection.line(tenant, start, 9, at, tuple(labels)) == expected
