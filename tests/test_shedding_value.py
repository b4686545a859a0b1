"""The value model (issue 36): partial matches valued by expected matches
per unit of expected cost, dropped at creation under pressure. On a stream
with a provably dead cluster (half the A events have a v no C exceeds), under
a 2x burst in capacity mode, it finds the dead partial matches and keeps more
matches than truncation, where Sharp's selector does not move at all; and it
never invents a match (the generic guarantees run for it in test_shedding)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine
from sharp_cer.engine.enumeration import open_events
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from sharp_cer.shedding import ShedConfig, make_shedder
from sharp_cer.shedding.value import dead_by_conditions, single_event_sequence
from tests.engine_cases import SCHEMA, streams, to_batch
from tests.test_shedding import DEAD, DS1, _dead_cluster_ds1
from tests.test_take_out import _uses


@pytest.mark.slow
def test_the_value_model_finds_a_dead_cluster_under_a_burst() -> None:
    batch = _dead_cluster_ds1(1500)
    plan = compile_plan([("q", parse_and_check(DEAD.format(last="C"), DS1))])
    n = len(batch)
    probe = Engine(plan)
    probe.process(batch)
    per_event = probe.clock.total_units / n
    rates = np.full(n, 0.5e6 / per_event)  # half the capacity's rate, then 2x it for 900 events
    rates[300:1200] = 2e6 / per_event
    arrivals = np.concatenate([[0.0], np.cumsum(1 / rates[:-1])])
    plain = Engine(plan, record_latency=True, capacity=1e6)
    truth = {m.key() for m in plain.process(batch, arrivals)}
    assert plain.queue is not None
    bound = 0.5 * float(plain.queue.summary("q")["ms"]["mean"])  # type: ignore[index]
    recall, removed = {}, {}
    for name in ("truncate", "value"):
        config = ShedConfig(bounds={}, bounds_ms={"q": bound}, sketch_attributes={"q": ("v",)}, seed=1)
        shedder = make_shedder(name, config)
        engine = Engine(plan, shedder=shedder, record_latency=True, capacity=1e6)
        got = {m.key() for m in engine.process(batch, arrivals)}
        assert got <= truth
        recall[name] = len(got) / len(truth)
        removed[name] = shedder.report()["q"]["partial_matches_removed_by_group"]
    assert removed["truncate"] == 0 and removed["value"] > 0
    assert recall["value"] >= recall["truncate"] + 0.05, recall


@st.composite
def _filtered_sequences(draw: st.DrawFn) -> str:
    """``SELECT * WHERE A AS v0 ; C AS v1 ; ... FILTER ...``: single events
    only, one or two comparisons of their x (with a constant offset)."""
    steps = draw(st.lists(st.sampled_from(["A", "B", "C"]), min_size=2, max_size=4))
    conjuncts = []
    for _ in range(draw(st.integers(1, 2))):
        i, j = draw(st.lists(st.integers(0, len(steps) - 1), min_size=2, max_size=2, unique=True))
        op = draw(st.sampled_from(["<", ">", "<=", "=", "!="]))
        conjuncts.append(f"v{i}.x {op} v{j}.x + {draw(st.integers(-1, 1))}")
    pattern = " ; ".join(f"{t} AS v{k}" for k, t in enumerate(steps))
    return f"SELECT * WHERE {pattern} FILTER {' AND '.join(conjuncts)} WITHIN {draw(st.integers(2, 8))} EVENTS"


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_filtered_sequences(), streams(max_size=12))
def test_a_partial_match_dead_by_its_conditions_is_on_no_true_match(text: str, rows: list[dict[str, Any]]) -> None:
    """``dead_by_conditions`` against the reference evaluator: after every
    event, no true match passes through a partial match it calls dead."""
    named = [("q", parse_and_check(text, SCHEMA))]
    plan, batch = compile_plan(named), to_batch(rows)
    (query,) = plan.queries
    if not single_event_sequence(query):
        return
    truth = evaluate(named, batch).per_query["q"]
    engine = Engine(plan)
    for i in range(len(batch)):
        engine.process(batch.take([i]))
        t = int(batch.positions[i])
        for runner in engine.runners:
            for _, _, ulist in runner.partial_matches():
                for entry in ulist:
                    if not dead_by_conditions(entry, runner.checks[query.id], runner.summaries):
                        continue
                    runs = {(t, start, tuple(p for p, _ in marks)) for start, marks in open_events(entry)}
                    assert not [m for m in truth if _uses(m, runs)], f"a dead partial match is on a match of {text}"
