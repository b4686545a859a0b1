"""Exact skipping stays on under a shedder (issue 36): the density and
relevance tests skip only events in no match of the whole stream, and such
an event is in no match once events or partial matches are shed either.
An idle shedder (a bound never reached) then steps exactly the events the
engine without a shedder steps, and outputs the same matches."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine
from sharp_cer.events.generators import sharp_ds1
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.shedding import SHEDDERS, ShedConfig, make_shedder
from tests.engine_cases import SCHEMA, shared_workloads, streams, to_batch

DS1 = Schema.parse(
    "CREATE STREAM DS1 { "
    + ", ".join(f"EVENT {t} {{ id:int, x:double, y:double, v:int, t:primary_time }}" for t in "ABCDEFGHIJ")
    + " }"
)
Q3 = "SELECT * FROM DS1 WHERE A AS a ; B AS b ; C AS c ; D AS d FILTER a.v < b.v{by} WITHIN 20 EVENTS"


def _stepped(engine: Engine) -> list[tuple[int, int]]:
    return [(r.state.processed, r.state.skipped) for r in engine.runners]


@pytest.mark.parametrize("by", ["", " PARTITION BY [id]"])
@pytest.mark.parametrize("name", ["sharp", "truncate"])
def test_an_idle_shedder_skips_what_the_engine_skips(name: str, by: str) -> None:
    """On a batch large enough for the relevance test (and, partitioned, the
    density test): the same events stepped and skipped, the same matches."""
    frame = sharp_ds1(5000, seed=3)
    frame["id"] = frame["id"] % 4
    batch = load_pandas(frame, DS1)[0]
    text = Q3.format(by=by)
    plan = compile_plan(
        [("q3", parse_and_check(text, DS1)), ("q4", parse_and_check(text.replace("D AS d", "E AS d"), DS1))]
    )
    plain = Engine(plan)
    truth = [m.to_json() for m in plain.process(batch)]
    shedder = make_shedder(name, ShedConfig(bounds={"q3": 1e12, "q4": 1e12}))
    shed = Engine(plan, shedder=shedder)
    assert [m.to_json() for m in shed.process(batch)] == truth
    assert _stepped(shed) == _stepped(plain)
    assert plain.runners[0].state.skipped > 0  # the tests did skip something


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(shared_workloads(max_size=4), streams(max_size=12), st.sampled_from(sorted(SHEDDERS)))
def test_an_idle_shedder_changes_nothing_it_steps(texts: list[str], rows: list[dict[str, Any]], name: str) -> None:
    named = [(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)]
    plan, batch = compile_plan(named), to_batch(rows)
    plain = Engine(plan, allowed_lateness=4)
    truth = [m.to_json() for m in plain.process(batch)]
    shed = Engine(
        plan, allowed_lateness=4, shedder=make_shedder(name, ShedConfig(bounds=dict.fromkeys(dict(named), 1e12)))
    )
    assert [m.to_json() for m in shed.process(batch)] == truth
    assert _stepped(shed) == _stepped(plain)
