"""The compiled core on batches of 4,096 events or more, where the density
and relevance tests (``engine.density``, ``engine.relevance``) hide events
before the core steps (``_drop_far``, ``_drop_idle``): the hypothesis tests
of ``test_native_core.py`` use short streams and never reach them. Random
queries (windows by events, time and attribute, partitions, NOT, OR,
Kleene, projections) over sparse streams with long gaps in time, so that
events fall out of every window: the same matches, in the same order, and
the same figures as the pure engine's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine, density, native
from sharp_cer.engine.runtime import QueryGroupRunner
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from tests.engine_cases import SCHEMA, SECOND, queries, to_batch
from tests.test_native_core import FIGURES

compiled_only = pytest.mark.skipif(not native.available(), reason="the compiled core is not built (or SHARP_CER_PURE)")
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
DROPS = {"far": 0, "idle": 0}


def _stream(seed: int, n: int) -> list[dict[str, Any]]:
    """``n`` events: mostly D (no group sees it), A, B and C now and then,
    seconds apart with gaps of a minute (events out of every window)."""
    rng = np.random.default_rng(seed)
    kinds = rng.choice(["A", "B", "C", "D"], size=n, p=[0.22, 0.22, 0.22, 0.34])
    steps = rng.choice([0, SECOND // 2, SECOND, 2 * SECOND, 60 * SECOND], size=n, p=[0.3, 0.25, 0.2, 0.2, 0.05])
    times = np.cumsum(steps)
    xs, ks, js = rng.integers(0, 4, n), rng.integers(0, 3, n), rng.integers(0, 2, n)
    return [
        {"type": str(kind), "x": int(x), "k": int(k), "t": int(t), **({"j": int(j)} if kind != "D" else {})}
        for kind, x, k, t, j in zip(kinds, xs, ks, times, js, strict=True)
    ]


@st.composite
def _sequences(draw: st.DrawFn) -> str:
    """Sequences of two or three parts (a type, a Kleene run, a disjunction, a unary filter), partitioned
    or not, within events, seconds or [t]: the shapes whose density and relevance tests apply."""
    part = st.sampled_from(["A", "B", "C", "B+", "(A OR C)", "A AS v1", "(C FILTER C[x > 1])", "(B AS v2)+"])
    parts = draw(st.lists(part, min_size=2, max_size=3, unique=True))
    text = "SELECT * WHERE " + " ; ".join(parts)
    text += draw(st.sampled_from(["", " PARTITION BY [k]", " PARTITION BY [j]", " PARTITION BY [k], [j]"]))
    window = draw(st.sampled_from(["EVENTS", "SECONDS", "[t]"]))
    size = draw(st.integers(1, 8)) if window != "[t]" else draw(st.sampled_from([SECOND, 3 * SECOND + 1]))
    return f"{text} WITHIN {size} {window}"


def _counted(monkeypatch: pytest.MonkeyPatch) -> None:
    far, idle = QueryGroupRunner._drop_far, QueryGroupRunner._drop_idle

    def drop_far(self: Any, *args: Any) -> Any:
        DROPS["far"] += 1
        return far(self, *args)

    def drop_idle(self: Any, *args: Any) -> Any:
        DROPS["idle"] += 1
        return idle(self, *args)

    monkeypatch.setattr(QueryGroupRunner, "_drop_far", drop_far)
    monkeypatch.setattr(QueryGroupRunner, "_drop_idle", drop_idle)


def _same(texts: list[str], rows: list[dict[str, Any]], split: int) -> None:
    plan = compile_plan([(f"q{i}", parse_and_check(text, SCHEMA)) for i, text in enumerate(texts)])
    batch = to_batch(rows)
    pieces = [batch.take(list(range(split))), batch.take(list(range(split, len(batch))))] if split else [batch]
    fast, slow = Engine(plan, allowed_lateness=4), Engine(plan, allowed_lateness=4)
    for runner in slow.runners:
        runner.core = None
    for piece in pieces:
        assert fast.process(piece) == slow.process(piece)
    assert {k: fast.stats()[k] for k in FIGURES} == {k: slow.stats()[k] for k in FIGURES}


@compiled_only
@pytest.mark.slow
@settings(max_examples=20, **SETTINGS)  # type: ignore[arg-type]
@given(
    st.lists(_sequences() | queries(negation=True), min_size=1, max_size=2),
    st.integers(0, 2**16),
    st.sampled_from([0, 1, 900]),
)
def test_batches_past_the_density_and_relevance_bound_match_as_the_pure_engine(
    texts: list[str], seed: int, split: int
) -> None:
    # a window the drops read (not [x]: x spans 0..3, so every event would be within reach of every other)
    assume(all(("EVENTS" in t or "SECONDS" in t or "[t]" in t) for t in texts))
    # one batch of 4,600 events, or a short one then a long one (the state crossing them)
    _same(texts, _stream(seed, density.SMALLEST_BATCH + 500 + split), split)


@compiled_only
def test_the_drops_run_on_the_compiled_path(monkeypatch: pytest.MonkeyPatch) -> None:
    _counted(monkeypatch)
    DROPS.update(far=0, idle=0)
    rows = _stream(7, density.SMALLEST_BATCH + 100)
    _same(["SELECT * WHERE A ; B ; C PARTITION BY [k] WITHIN 3 SECONDS"], rows, 0)
    assert DROPS["far"] >= 2 and DROPS["idle"] >= 2  # both engines ran both tests
