"""Review of the compiled core's cross-event conditions (branch condcore): cases where the core
and the Python engine (and the reference evaluator) disagree. Each case is hand-made; the
expectation is the reference evaluator's matches and the Python engine's output and figures."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from sharp_cer.engine import Engine, native
from sharp_cer.events.batch import Column, EventBatch
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate, evaluate_interval
from tests.test_native_core import RICH, _pure

compiled_only = pytest.mark.skipif(not native.available(), reason="the compiled core is not built (or SHARP_CER_PURE)")


def _batch(types: str, xs: list[int]) -> EventBatch:
    n = len(types)
    ones = np.ones(n, dtype=bool)
    columns = {
        "x": Column("int", np.asarray(xs, dtype=np.int64), ones),
        "y": Column("double", np.zeros(n), ones),
        "s": Column("string", np.asarray(["p"] * n, dtype=object), ones),
        "t": Column("primary_time", np.arange(n, dtype=np.int64), ones),
    }
    events = tuple(RICH.event(name) for name in ("A", "B", "C"))
    return EventBatch(
        events, np.arange(n, dtype=np.int64), np.asarray(["ABC".index(t) for t in types], np.int32), columns
    )


def _matches(text: str, batch: EventBatch) -> tuple[list[Any], list[Any], list[Any]]:
    named = [("q", parse_and_check(text, RICH))]
    plan = compile_plan(named)
    fast = Engine(plan)
    assert native.ineligible(fast.runners[0]) is None  # the core runs the conditions
    got = sorted(m.key() for m in fast.process(batch))
    python = sorted(m.key() for m in _pure(Engine(plan)).process(batch))
    reference = sorted(m.key() for m in evaluate(named, batch).per_query["q"])
    return got, python, reference


_BIG = 2**62 + 2**61  # two of them leave int64


@compiled_only
def test_an_overflowing_interval_product_does_not_narrow_the_bound() -> None:
    # (review5) an int64 overflow in an interval product was NaN, and the pick of the lowest and
    # highest of the four products skipped it: the bound was too narrow and pruned matches
    # max(b.x) over the branches below C ranges over [1, 2**62]: times 4 the bound is [4, 2**64],
    # not [4, 4]; the exact check leaves int64 too and asks Python (2**64 > 100)
    got, python, reference = _matches(
        "SELECT * WHERE A AS a ; B+ AS b ; C AS c FILTER max(b.x) * 4 > 100 WITHIN 6 EVENTS",
        _batch("ABBC", [0, 1, 2**62, 0]),
    )
    assert python == reference and len(reference) == 2
    assert got == reference


@compiled_only
def test_an_overflowing_sum_summary_survives_a_union() -> None:
    # (review5) a sum summary leaving int64 was NaN, and a union node's pick of the lower low and
    # the higher high (as min/max pick) dropped it when it was the second: matches were pruned
    got, python, reference = _matches(
        "SELECT * WHERE A AS a ; B+ AS b ; C AS c FILTER sum(b.x) > 100 WITHIN 8 EVENTS",
        _batch("ABBBBC", [0, _BIG, _BIG, -_BIG, _BIG, 0]),
    )
    assert python == reference and len(reference) == 11
    assert got == reference


def test_an_update_adding_a_condition_on_a_new_attribute_keeps_running() -> None:
    first = "SELECT * WHERE A AS a ; B+ AS b ; C AS c FILTER max(b.x) > a.x WITHIN 6 EVENTS"
    added = "SELECT * WHERE A AS a ; B+ AS b ; C AS c FILTER min(b.y) < c.y WITHIN 6 EVENTS"
    batch = _batch("ABABC", [0, 1, 0, 1, 0])
    y = Column("double", np.asarray([0.0, 0.0, 0.0, 0.0, 1.0]), np.ones(5, dtype=bool))
    batch = dataclasses.replace(batch, columns={**batch.columns, "y": y})
    engine = Engine(compile_plan([("q0", parse_and_check(first, RICH))]))
    found = engine.process(batch.take([0, 1]))
    engine.update([("q1", parse_and_check(added, RICH))])
    found += engine.process(batch.take([2, 3, 4]))
    # q0 matches as it did alone; q1 as the reference has it from the update on (rule 15)
    alone = Engine(compile_plan([("q0", parse_and_check(first, RICH))])).process(batch)
    joined = evaluate_interval("q1", parse_and_check(added, RICH), batch, 2)
    assert joined and sorted(m.key() for m in found) == sorted(m.key() for m in [*alone, *joined])


@compiled_only
def test_the_string_codes_follow_the_window_not_the_stream() -> None:
    # (review5) the string table the core's conditions compare codes with coded every string that
    # arrived and forgot none: it grew with the stream's distinct strings (ids), not with the window
    text = "SELECT * WHERE A AS a ; B+ AS b ; C AS c FILTER c.s = first(b.s) WITHIN 6 EVENTS"
    plan = compile_plan([("q", parse_and_check(text, RICH))])
    engine, python = Engine(plan), _pure(Engine(plan))
    n, found, expected = 400, [], []
    for k in range(40):  # 16,000 events, 12,000 distinct strings; each C repeats the B before it
        batch = _batch("ABBC" * (n // 4), [0] * n)
        ids = [f"{kind}{k * n + i - i % 4}" for i in range(n) for kind in ["abcb"[i % 4]]]
        column = dataclasses.replace(batch.columns["s"], values=np.asarray(ids, dtype=object))
        batch = dataclasses.replace(batch, positions=batch.positions + k * n, columns={**batch.columns, "s": column})
        found += [m.key() for m in engine.process(batch)]
        expected += [m.key() for m in python.process(batch)]
        core = engine.runners[0].core
        assert core is not None and core.owns
        assert len(core.strings.names) < 4_000  # a window of 6 events holds a handful of strings
    assert len(found) == 8_000 and found == expected


def test_abs_of_the_smallest_int64_in_a_one_event_condition() -> None:
    text = "SELECT * WHERE A ; C FILTER A[abs(x) > 0] WITHIN 6 EVENTS"
    batch = _batch("AC", [-(2**63), 0])
    named = [("q", parse_and_check(text, RICH))]
    reference = sorted(m.key() for m in evaluate(named, batch).per_query["q"])
    assert len(reference) == 1
    for engine in (Engine(compile_plan(named)), _pure(Engine(compile_plan(named)))):
        assert sorted(m.key() for m in engine.process(batch)) == reference


def test_the_reference_takes_a_modulo_of_infinity() -> None:
    # (review5; on main too) the reference's % let math.fmod's ValueError on an infinite dividend out;
    # the engines (predicate_bits._modulo) count it out of its math domain
    text = "SELECT * WHERE A AS a ; B+ AS b ; C AS c FILTER a.y % c.y = 0 WITHIN 6 EVENTS"
    n = 4
    batch = _batch("ABBC", [0] * n)
    y = Column("double", np.asarray([np.inf, 0.0, 0.0, 1.0]), np.ones(n, dtype=bool))
    batch = EventBatch(batch.event_types, batch.positions, batch.codes, {**batch.columns, "y": y})
    named = [("q", parse_and_check(text, RICH))]
    engine = _pure(Engine(compile_plan(named)))
    assert engine.process(batch) == [] and engine.stats()["domain_errors"] > 0
    assert list(evaluate(named, batch).per_query["q"]) == []
