"""The compiled core (``engine.native``, ``engine._core``) against the
reference evaluator and the pure-Python engine: random queries of every
operator it takes (sequence, ``:``, OR, Kleene, NOT, unary conditions,
projections, partitions, windows by events, time and attribute) over random
streams, in one batch and in several (the state crossing batches), as
matches and as output lines (``process_lines``), with a
snapshot taken and restored in the middle (the state handed to Python's
objects and back); exact equality with the reference, and identical output
and figures with the pure engine. Query groups the core does not take
(a shedder, debug, no window) run on the Python path with the same matches;
strategies, LIMIT and CONSUME BY in the core: ``test_native_consume.py``. The arena's live nodes stay
bounded as the stream grows (memory follows the window, not the stream).
The engine line of ``sharp-cer --version`` says which engine runs; with
``SHARP_CER_PURE=1`` it is the Python one."""

from __future__ import annotations

import dataclasses
import math
import os
import pickle
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine, native
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, SECOND, full_queries, queries, streams, to_batch

compiled_only = pytest.mark.skipif(not native.available(), reason="the compiled core is not built (or SHARP_CER_PURE)")
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
#: the figures both engines must agree on
FIGURES = (
    "events",
    "transitions",
    "nodes_created",
    "enumeration_steps",
    "cache_hits",
    "cache_misses",
    "live_nodes",
    "partitions",
    "partitions_evicted",
    "matches",
    "events_processed",
    "events_skipped",
    "late_window_values",
)


def _pure(engine: Engine) -> Engine:
    """The engine with every query group on the Python path (as SHARP_CER_PURE=1 makes it)."""
    for runner in engine.runners:
        runner.core = None
    return engine


def _run(engine: Engine, batch: Any, size: int | None, snapshot_at: int | None = None) -> list[Any]:
    found: list[Any] = []
    if not size or not len(batch):
        return engine.process(batch)
    for lo in range(0, len(batch), size):
        found.extend(engine.process(batch.take(list(range(lo, min(lo + size, len(batch)))))))
        if snapshot_at is not None and lo // size == snapshot_at:
            engine.restore(pickle.loads(pickle.dumps(engine.snapshot())))
    return found


def _check(texts: list[str], rows: list[dict[str, Any]], size: int | None, snapshot_at: int | None = None) -> None:
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    batch = to_batch(rows)
    plan = compile_plan(named)
    fast = Engine(plan, allowed_lateness=4)
    slow = _pure(Engine(plan, allowed_lateness=4))
    got = _run(fast, batch, size, snapshot_at)
    assert got == _run(slow, batch, size), "the compiled core and the Python engine differ"
    fast_stats, slow_stats = fast.stats(), slow.stats()
    assert {k: fast_stats[k] for k in FIGURES} == {k: slow_stats[k] for k in FIGURES}
    if len(named) == 1 and not snapshot_at:  # lines without Match objects (Engine.process_lines)
        tenants = {"q0": "acme"}
        lines = Engine(plan, allowed_lateness=4).process_lines(batch, tenants)
        assert lines == _pure(Engine(plan, allowed_lateness=4)).process_lines(batch, tenants)
        assert lines == [m.to_json() for m in (dataclasses.replace(m, tenant="acme") for m in got)]
    if len(plan.groups) > 1 and not snapshot_at:  # groups in lockstep: matches out as they come (emit)
        emitted: list[Any] = []
        reference: list[Any] = []
        assert Engine(plan, allowed_lateness=4).process(batch, emit=emitted.extend) == []
        _pure(Engine(plan, allowed_lateness=4)).process(batch, emit=reference.extend)
        assert emitted == reference
    expected = evaluate(named, batch)
    for name, _ in named:
        want = sorted(m.key() for m in expected.per_query[name])
        assert sorted(m.key() for m in got if m.query == name) == want, f"{name}: {dict(named)[name].source.text}"


@compiled_only
@settings(max_examples=150, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(negation=True), min_size=1, max_size=3), streams(), st.sampled_from([None, 1, 3]))
def test_compiled_core_equals_reference_and_python(texts: list[str], rows: list[dict[str, Any]], size: Any) -> None:
    _check(texts, rows, size)


@compiled_only
@settings(max_examples=40, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(negation=True), min_size=1, max_size=2), streams(max_size=12))
def test_a_snapshot_hands_the_state_to_python_and_back(texts: list[str], rows: list[dict[str, Any]]) -> None:
    _check(texts, rows, 3, snapshot_at=1)


@compiled_only
@settings(max_examples=40, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(full_queries(), min_size=1, max_size=2), streams(max_size=8))
def test_groups_the_core_does_not_take_run_on_python(texts: list[str], rows: list[dict[str, Any]]) -> None:
    _check(texts, rows, None)


@compiled_only
def test_eligibility_names_what_runs_where() -> None:
    def runner(text: str, **options: Any) -> Any:
        return Engine(compile_plan([("q", parse_and_check(text, SCHEMA))]), **options).runners[0]

    plain = "SELECT * WHERE A ; B+ ; C PARTITION BY [k] WITHIN 5 EVENTS"
    assert runner(plain).core is not None
    assert native.ineligible(runner(plain)) is None
    assert native.ineligible(runner(plain, debug=True)) == "debug or an enumeration order"
    # strategies, LIMIT and CONSUME BY run in the core too (issue 37, tests/test_native_consume.py)
    assert runner("SELECT MAX * WHERE A ; B WITHIN 5 EVENTS").core is not None
    assert runner("SELECT * WHERE A ; B WITHIN 5 EVENTS LIMIT 1").core is not None
    assert runner("SELECT * WHERE A ; B PARTITION BY [k] WITHIN 5 EVENTS CONSUME BY PARTITION").core is not None
    conditioned = "SELECT * WHERE (A AS a ; B AS b) FILTER a.x < b.x WITHIN 5 EVENTS"
    assert native.ineligible(runner(conditioned)) is None  # compiled (condition_code)
    in_set = "SELECT * WHERE (A AS a ; B AS b) FILTER a.x + b.x IN {1, 2} WITHIN 5 EVENTS"
    reason = "a cross-event condition the core does not compile (InSet in a cross-event condition)"
    assert native.ineligible(runner(in_set)) == reason


@compiled_only
def test_memory_follows_the_window_not_the_stream() -> None:
    plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B ; C PARTITION BY [k] WITHIN 20 EVENTS", SCHEMA))])
    engine = Engine(plan)
    rows = [{"type": "ABC"[i % 3], "x": i % 4, "k": i % 2, "t": i} for i in range(600)]
    batch = to_batch(rows)
    live, arena = [], []
    for k in range(30):  # 18,000 events, positions going on
        engine.process(dataclasses.replace(batch, positions=batch.positions + k * len(batch)))
        core = engine.runners[0].core
        assert core is not None and core.owns
        live.append(engine.live_nodes())
        arena.append(core.arena_size())
    # live nodes grow until the next cut of out-of-window branches, then fall: a sawtooth whose top
    # does not rise with the stream
    assert max(live[15:]) <= max(live[:15]) < 1000
    assert max(arena) <= 4 * max(live) + (1 << 16)  # garbage is compacted away


def _engine_line(env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "sharp_cer.cli", "--version"], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.splitlines()[1]


def test_the_version_says_which_engine_runs() -> None:
    env = {k: v for k, v in os.environ.items() if k != native.PURE}
    pure = _engine_line({**env, native.PURE: "1"})
    assert pure == "engine: pure Python (SHARP_CER_PURE=1)"
    assert _engine_line(env) == native.engine_line()
    if native.available():
        assert native.engine_line().startswith("engine: compiled core (Cython C++)")


@compiled_only
def test_batches_switching_between_the_core_and_python_sweep_the_same_partitions() -> None:
    # A batch with a quota runs on the Python path, the others in the core: the state crosses
    # both ways, and the Python sweep (every 1,024 events) must still see the partitions the
    # core made, as an engine on the Python path throughout does.
    import random

    rng = random.Random(3)
    rows = [{"type": rng.choice("AB"), "x": 0, "k": rng.randrange(600), "j": 0, "t": i} for i in range(5_000)]
    batch = to_batch(rows)
    plan = compile_plan(
        [("q", parse_and_check("SELECT * FROM S WHERE A ; B PARTITION BY [k] WITHIN 40 EVENTS", SCHEMA))]
    )
    engines = Engine(plan), _pure(Engine(plan))
    found: list[list[Any]] = [[], []]
    for k, lo in enumerate(range(0, len(batch), 700)):
        part = batch.take(list(range(lo, min(lo + 700, len(batch)))))
        for engine, out in zip(engines, found, strict=True):
            out.extend(engine.process(part, quota=10**9) if k % 2 else engine.process(part))
            assert engine.partitions() <= 600
        fast, slow = (e.stats() for e in engines)
        assert {f: fast[f] for f in FIGURES} == {f: slow[f] for f in FIGURES}, f"after batch {k}"
    assert found[0] == found[1]


# ---------------------------------------------------------------- cross-event conditions in the core
# (condcore) random cross-event FILTERs (tests.engine_cases: comparisons of single-event variables,
# every aggregate, count, last - first spans, AND/OR/NOT, on the whole pattern and on sub-patterns,
# Kleene bodies and OR branches), streams with nulls: the core runs them (asserted) with exact equality
# against the reference, and identical output, order and figures against the Python engine.


def _reasons(texts: list[str]) -> list[str | None]:
    """Why the core does not take each query group of ``texts`` (None: it does)."""
    plan = compile_plan([(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)])
    return [native.ineligible(runner) for runner in Engine(plan, allowed_lateness=4).runners]


@compiled_only
@settings(max_examples=100, **SETTINGS)  # type: ignore[arg-type]
@given(
    st.lists(queries(cross=True, negation=True), min_size=1, max_size=2),
    streams(max_size=12, nulls=True),
    st.sampled_from([None, 1, 4]),
)
def test_cross_event_conditions_run_in_the_core_exactly(
    texts: list[str], rows: list[dict[str, Any]], size: Any
) -> None:
    reasons = _reasons(texts)
    # only a window the core lacks (WITHIN none) keeps a group out, never its conditions
    assert all(reason is None or reason == "a window by none" for reason in reasons), reasons
    _check(texts, rows, size)


# conditions beyond tests.engine_cases: doubles with infinities (NaN from their arithmetic) and nulls,
# strings, big ints (int64 edges),
# + - * / %, unary minus, abs, sqrt, asin, IN RANGE, NOT; division by zero and math out of its domain
RICH = Schema.parse(
    """CREATE STREAM S {
         EVENT A { x:int, y:double, s:string, t:primary_time },
         EVENT B { x:int, y:double, s:string, t:primary_time },
         EVENT C { x:int, y:double, s:string, t:primary_time }
       }"""
)
_BIG = 3_000_000_000_000_000_000  # products and sums of two leave int64: the core asks Python
_PATTERNS = (
    "A AS a ; B+ AS b ; C AS c FILTER {}",
    "((A AS a ; B+ AS b) FILTER {}) ; C AS c",
    "A AS a : B+ AS b : C AS c FILTER {}",
    "A AS a ; ((B+ AS b ; C AS c) FILTER {})",
)


@st.composite
def _number(draw: st.DrawFn, depth: int, scope: tuple[str, ...]) -> str:
    single = [v for v in ("a", "c") if v in scope]
    leaves = [f"{v}.{a}" for v in single for a in ("x", "y")] + ["0", "1", "2", "-1", "0.5", "1.5", str(_BIG)]
    if "b" in scope:
        aggregate = draw(st.sampled_from(["sum", "avg", "min", "max", "first", "last"]))
        leaves += ["count(b)", f"{aggregate}(b.{draw(st.sampled_from(['x', 'y']))})"]
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        return draw(st.sampled_from(leaves))
    kind = draw(st.sampled_from(["+", "-", "*", "/", "%", "neg", "abs", "sqrt", "asin"]))
    left = draw(_number(depth - 1, scope))
    if kind in ("neg",):
        return f"-({left})"
    if kind in ("abs", "sqrt", "asin"):
        return f"{kind}({left})"
    return f"({left} {kind} {draw(_number(depth - 1, scope))})"


@st.composite
def _truth(draw: st.DrawFn, depth: int, scope: tuple[str, ...]) -> str:
    kind = draw(st.sampled_from(["compare", "compare", "string", "range", *(["and", "or", "not"] * (depth > 0))]))
    if kind == "compare":
        op = draw(st.sampled_from(COMPARE))
        return f"{draw(_number(depth, scope))} {op} {draw(_number(depth, scope))}"
    if kind == "string":
        strings = [f"{v}.s" for v in ("a", "c") if v in scope] + ["'p'", "''"]
        strings += [f"{f}(b.s)" for f in ("first", "last") if "b" in scope]
        left, right = draw(st.sampled_from(strings)), draw(st.sampled_from(strings))
        return f"{left} {draw(st.sampled_from(['=', '!=']))} {right}"
    if kind == "range":
        parts = [draw(_number(depth - 1, scope)) for _ in range(3)]
        return f"{parts[0]} IN RANGE({parts[1]}, {parts[2]})"
    if kind == "not":
        return f"NOT ({draw(_truth(depth - 1, scope))})"
    joint = "AND" if kind == "and" else "OR"
    return f"({draw(_truth(depth - 1, scope))}) {joint} ({draw(_truth(depth - 1, scope))})"


COMPARE = ("<", "<=", ">", ">=", "=", "!=")


@st.composite
def _rich_query(draw: st.DrawFn) -> str:
    pattern = draw(st.sampled_from(_PATTERNS))
    scope = ("a", "b") if pattern.startswith("((A") else ("b", "c") if "((B+" in pattern else ("a", "b", "c")
    condition = draw(_truth(2, scope))
    window = draw(st.sampled_from(["WITHIN 6 EVENTS", "WITHIN 3 SECONDS"]))
    partition = draw(st.sampled_from(["", "", " PARTITION BY [s]"]))
    return f"SELECT * WHERE {pattern.format(condition)}{partition} {window}"


@st.composite
def _rich_stream(draw: st.DrawFn) -> Any:
    from sharp_cer.events.batch import Column, EventBatch

    n = draw(st.integers(0, 12))
    # runs of A, Bs and C, so that most streams hold a few instances of the patterns
    blocks = draw(
        st.lists(st.sampled_from([(0, 1, 2), (0, 1, 1, 2), (1,), (0,), (2,), (1, 2)]), min_size=n, max_size=n)
    )
    types = [code for block in blocks for code in block][:n]
    xs = draw(st.lists(st.sampled_from([0, 1, 2, -1, 3, _BIG, -_BIG, None]), min_size=n, max_size=n))
    # no stored NaN: loaders read it as null (the planner's normal form counts on that); NaN comes
    # from the infinities' arithmetic (inf - inf, sum over both)
    doubles = [0.0, -0.0, 0.5, -1.5, 2.0, float("-inf"), float("inf"), None]
    ys = draw(st.lists(st.sampled_from(doubles), min_size=n, max_size=n))
    ss = draw(st.lists(st.sampled_from(["p", "q", "", None]), min_size=n, max_size=n))
    gaps = draw(st.lists(st.sampled_from([0, SECOND // 2, SECOND]), min_size=n, max_size=n))
    t = np.cumsum(np.asarray(gaps, dtype=np.int64))

    def column(kind: str, values: list[Any], filler: Any, dtype: Any) -> Column:
        valid = np.array([v is not None for v in values], dtype=bool)
        data = np.array([filler if v is None else v for v in values], dtype=dtype)
        return Column(kind, data, valid)

    columns = {
        "x": column("int", xs, 0, np.int64),
        "y": column("double", ys, np.nan, np.float64),
        "s": column("string", ss, None, object),
        "t": Column("primary_time", t, np.ones(n, dtype=bool)),
    }
    events = tuple(RICH.event(name) for name in ("A", "B", "C"))
    return EventBatch(events, np.arange(n, dtype=np.int64), np.asarray(types, dtype=np.int32), columns)


@compiled_only
@settings(max_examples=120, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(_rich_query(), min_size=1, max_size=2), _rich_stream(), st.sampled_from([None, 1, 5]))
def test_rich_cross_event_conditions_in_the_core_equal_python_and_the_reference(
    texts: list[str], batch: Any, size: Any
) -> None:
    named = [(f"q{i}", parse_and_check(text, RICH)) for i, text in enumerate(texts)]
    plan = compile_plan(named)
    fast, slow = Engine(plan), _pure(Engine(plan))
    # the core takes every group (on Python 3.12 and later, not a sum of doubles: its sum() rounds otherwise)
    later = "a cross-event condition the core does not compile (a sum or average of doubles on Python 3.12 or later)"
    allowed = {None} if sys.version_info < (3, 12) else {None, later}
    assert {native.ineligible(r) for r in fast.runners} <= allowed
    got = _run(fast, batch, size)
    assert got == _run(slow, batch, size), "the compiled core and the Python engine differ"
    fast_stats, slow_stats = fast.stats(), slow.stats()
    figures = (*FIGURES, "domain_errors")
    assert {k: fast_stats.get(k) for k in figures} == {k: slow_stats.get(k) for k in figures}
    expected = evaluate(named, batch)
    for name, _ in named:
        assert sorted(m.key() for m in got if m.query == name) == sorted(m.key() for m in expected.per_query[name])


def _nan_batch() -> Any:
    """A, B (y 0.0), B (y NaN), C: the instance {a, b: the first B, c} has avg(b.y) = 0."""
    from sharp_cer.events.batch import Column, EventBatch

    ones = np.ones(4, dtype=bool)
    columns = {
        "x": Column("int", np.zeros(4, dtype=np.int64), ones),
        "y": Column("double", np.array([0.0, 0.0, np.nan, 0.0]), ones),
        "s": Column("string", np.array(["p"] * 4, dtype=object), ones),
        "t": Column("primary_time", np.zeros(4, dtype=np.int64), ones),
    }
    events = tuple(RICH.event(name) for name in ("A", "B", "C"))
    return EventBatch(events, np.arange(4, dtype=np.int64), np.array([0, 1, 1, 2], dtype=np.int32), columns)


@pytest.mark.parametrize("condition", ["avg(b.y) <= 0", "avg(b.y) != 1", "max(b.y) = 0 AND last(b.y) <= 0"])
@pytest.mark.parametrize("pure", [True, False])
def test_a_nan_in_a_summary_prunes_no_match(condition: str, pure: bool) -> None:
    """Regression (found by the rich test): a NaN joined with a summary was dropped (``b if b < a``
    keeps ``a`` when b is NaN), so the bound test judged the branch by the other paths' values, found
    an empty envelope and pruned the match {A, first B, C} (both engines)."""
    named = [
        ("q", parse_and_check(f"SELECT * WHERE A AS a ; B+ AS b ; C AS c FILTER {condition} WITHIN 6 EVENTS", RICH))
    ]
    engine = Engine(compile_plan(named))
    if pure:
        _pure(engine)
    got = sorted(m.key() for m in engine.process(_nan_batch()))
    assert got == sorted(m.key() for m in evaluate(named, _nan_batch()).per_query["q"])
    assert got  # the reference finds the match


def _inf_batch(value: float) -> Any:
    """A, B (y ``value``), C: min(b.y) and max(b.y) over the one B are ``value`` itself."""
    from sharp_cer.events.batch import Column, EventBatch

    ones = np.ones(3, dtype=bool)
    columns = {
        "x": Column("int", np.zeros(3, dtype=np.int64), ones),
        "y": Column("double", np.array([0.0, value, 0.0]), ones),
        "s": Column("string", np.array(["p"] * 3, dtype=object), ones),
        "t": Column("primary_time", np.zeros(3, dtype=np.int64), ones),
    }
    events = tuple(RICH.event(name) for name in ("A", "B", "C"))
    return EventBatch(events, np.arange(3, dtype=np.int64), np.array([0, 1, 2], dtype=np.int32), columns)


@pytest.mark.parametrize(
    ("condition", "value"),
    [
        ("NOT ((a.x + min(b.y)) < a.x)", math.inf),
        ("min(b.y) > 0", math.inf),
        ("NOT (max(b.y) > 0)", -math.inf),
        ("max(b.y) < 0", -math.inf),
        ("min(b.y) = max(b.y)", math.inf),
    ],
)
@pytest.mark.parametrize("pure", [True, False])
def test_an_infinite_minimum_is_a_value_not_an_empty_term(condition: str, value: float, pure: bool) -> None:
    """Regression (found by the rich test): a min term's summary (inf, inf) was read as "over no
    events" (out of its domain, the conjunct false), though one B with y = +inf gives the same
    summary; both engines pruned the match {A, B, C} (and so for max and -inf). The bound test now
    reads such a summary as a value."""
    named = [
        ("q", parse_and_check(f"SELECT * WHERE A AS a ; B+ AS b ; C AS c FILTER {condition} WITHIN 6 EVENTS", RICH))
    ]
    engine = Engine(compile_plan(named))
    if pure:
        _pure(engine)
    got = sorted(m.key() for m in engine.process(_inf_batch(value)))
    assert got == sorted(m.key() for m in evaluate(named, _inf_batch(value)).per_query["q"])
    assert [key[3] for key in got] == [(0, 1, 2)]  # by hand: the one instance, and its condition holds


@compiled_only
@settings(max_examples=15, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(cross=True), min_size=1, max_size=2), streams(max_size=12, nulls=True))
def test_a_snapshot_hands_summaries_and_values_to_python_and_back(texts: list[str], rows: list[dict[str, Any]]) -> None:
    # the nodes' summaries and stored values go to tecs.Node objects (export) and back (load) mid-stream
    _check(texts, rows, 3, snapshot_at=1)


def test_the_reference_counts_an_infinite_dividend_out_of_domain() -> None:
    """Regression (found by the rich test): ``inf % x`` raised a raw ValueError in the reference
    evaluator; the engines count it out of its domain (``predicate_bits._modulo``), the condition false."""
    batch = _nan_batch()
    y = batch.columns["y"]
    y.values[:] = [0.0, 1.0, 1.0, np.inf]
    named = [
        (
            "q",
            parse_and_check(
                "SELECT * WHERE A AS a ; B+ AS b ; C AS c FILTER (c.y + a.x) % 2 >= 0 WITHIN 6 EVENTS", RICH
            ),
        )
    ]
    assert evaluate(named, batch).per_query["q"] == []
    # three instances (b: the first B, the second, both), each out of its domain, in both engines
    for engine in (Engine(compile_plan(named)), _pure(Engine(compile_plan(named)))):
        assert engine.process(batch) == [] and engine.stats()["domain_errors"] == 3
