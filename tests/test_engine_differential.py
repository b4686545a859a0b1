"""The engine against the reference evaluator: random workloads of 1-5
queries over random streams, exactly equal matches per query (interval,
output events and variables included). The first four tests draw 2,000
cases of the operators of the engine's part 1 (their ``max_examples``); one
of them cuts out-of-window branches of the tECS after every event, so
freeing memory is proven to change nothing. The rest draw 2,400 cases of
queries with every feature of part 2 (selection strategies, consumption,
LIMIT, conjunction, cross-event conditions inside and outside Kleene and
OR), in batches, with cuts, in another enumeration order. Every case also
counts each query's matches without enumerating them (``count_only`` over a
counting plan): the counts equal the number of matches enumerated; and runs
the engine with and without bulk skipping of events that can change
nothing: the outputs are identical, order included. The last tests draw
streams where x, k and j are sometimes null, and conditions with NOT, NOT IN
and OR, where SQL's three-valued logic decides (issue 33.14)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine
from sharp_cer.engine.enumeration import BestFirst, EnumerationOrder
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, full_queries, queries, streams, to_batch

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}


def _key(m: Any) -> tuple[Any, ...]:
    return m.key()


def check(
    texts: list[str],
    rows: list[dict[str, Any]],
    batch_sizes: int | None = None,
    cut_after: int = 256,
    order: EnumerationOrder | None = None,
    count: bool = False,
) -> None:
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    batch = to_batch(rows)
    expected = evaluate(named, batch)
    if count:
        counter = Engine(compile_plan(named, counting=True), debug=True, allowed_lateness=4, count_only=True)
        assert counter.process(batch) == []
        counts = counter.stats()["matches"]
        for name, _ in named:
            assert counts.get(name, 0) == len(expected.per_query[name]), (
                f"count of {name}: {dict(named)[name].source.text}"
            )
    runs = []
    for skip in (True, False):
        engine = Engine(
            compile_plan(named), debug=True, allowed_lateness=4, cut_after=cut_after, order=order, skip=skip
        )
        if batch_sizes and len(batch):
            found = []
            for lo in range(0, len(batch), batch_sizes):
                found.extend(engine.process(batch.take(list(range(lo, min(lo + batch_sizes, len(batch)))))))
        else:
            found = engine.process(batch)
        runs.append(found)
    assert runs[0] == runs[1], "skipping events in bulk changed the output"
    for name, _ in named:
        want = sorted((m for m in expected.per_query[name]), key=_key)
        got = sorted((m for m in found if m.query == name), key=_key)
        assert [m.key() for m in got] == [m.key() for m in want], f"{name}: {dict(named)[name].source.text}"
    ends = [m.end for m in found]
    assert ends == sorted(ends), "matches come out in order of their end"


@settings(max_examples=800, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(), min_size=1, max_size=5), streams())
def test_random_workloads(texts: list[str], rows: list[dict[str, Any]]) -> None:
    check(texts, rows, count=True)


@settings(max_examples=500, **SETTINGS)  # type: ignore[arg-type]
@given(queries(depth=4), streams(max_size=12))
def test_deeper_queries(text: str, rows: list[dict[str, Any]]) -> None:
    check([text], rows, count=True)


@settings(max_examples=400, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(), min_size=1, max_size=3), streams(), st.integers(1, 4))
def test_batches_of_any_size(texts: list[str], rows: list[dict[str, Any]], size: int) -> None:
    check(texts, rows, batch_sizes=size, count=True)


@settings(max_examples=300, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(depth=2), min_size=3, max_size=5), streams(max_size=14))
def test_many_small_queries_cutting_old_branches_every_event(texts: list[str], rows: list[dict[str, Any]]) -> None:
    check(texts, rows, cut_after=0, count=True)


@settings(max_examples=900, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(full_queries(), min_size=1, max_size=3), streams())
def test_every_feature(texts: list[str], rows: list[dict[str, Any]]) -> None:
    check(texts, rows, count=True)


@settings(max_examples=400, **SETTINGS)  # type: ignore[arg-type]
@given(full_queries(depth=4), streams(max_size=12))
def test_every_feature_deeper(text: str, rows: list[dict[str, Any]]) -> None:
    check([text], rows, count=True)


@settings(max_examples=400, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(full_queries(), min_size=1, max_size=3), streams(), st.integers(1, 4))
def test_every_feature_in_batches(texts: list[str], rows: list[dict[str, Any]], size: int) -> None:
    check(texts, rows, batch_sizes=size, count=True)


@settings(max_examples=400, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(full_queries(depth=2), min_size=2, max_size=4), streams(max_size=14))
def test_every_feature_cutting_old_branches_every_event(texts: list[str], rows: list[dict[str, Any]]) -> None:
    check(texts, rows, cut_after=0, count=True)


@settings(max_examples=300, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(full_queries(), min_size=1, max_size=3), streams())
def test_every_feature_in_best_first_order(texts: list[str], rows: list[dict[str, Any]]) -> None:
    # oldest branch first: the reverse of CORE's order, same matches
    check(texts, rows, order=BestFirst(lambda node: -node.maxstart), count=True)


@settings(max_examples=50, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(full_queries(negation=True), min_size=1, max_size=2), streams(max_size=8, nulls=True))
def test_every_feature_with_nulls(texts: list[str], rows: list[dict[str, Any]]) -> None:
    check(texts, rows, count=True)


@settings(max_examples=30, **SETTINGS)  # type: ignore[arg-type]
@given(st.lists(queries(negation=True), min_size=1, max_size=2), streams(max_size=8, nulls=True), st.integers(1, 4))
def test_nulls_in_batches(texts: list[str], rows: list[dict[str, Any]], size: int) -> None:
    check(texts, rows, batch_sizes=size)
