"""The value model (issue 36): partial matches valued by expected matches
per unit of expected cost, dropped at creation under pressure. On a stream
with a provably dead cluster (half the A events have a v no C exceeds), under
a 2x burst in capacity mode, it finds the dead partial matches and keeps more
matches than truncation, where Sharp's selector does not move at all; and it
never invents a match (the generic guarantees run for it in test_shedding)."""

from __future__ import annotations

import numpy as np
import pytest

from sharp_cer.engine import Engine
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.shedding import ShedConfig, make_shedder
from tests.test_shedding import DEAD, DS1, _dead_cluster_ds1


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
