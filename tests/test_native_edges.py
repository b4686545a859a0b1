"""Edge cases of the compiled core (``engine._core``) found in review, each
against the pure-Python engine (the reference the core must equal: matches,
their order and every figure of ``Engine.stats``)."""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

from sharp_cer.engine import Engine, native
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from tests.engine_cases import SCHEMA, to_batch
from tests.test_native_core import FIGURES, _pure

compiled_only = pytest.mark.skipif(not native.available(), reason="the compiled core is not built (or SHARP_CER_PURE)")


def _rows(seed: int, n: int, keys: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {"type": rng.choice("ABC"), "x": rng.randrange(4), "k": rng.randrange(keys), "j": 0, "t": i * 10**9}
        for i in range(n)
    ]


def _both(text: str, rows: list[dict[str, Any]], size: int, **options: Any) -> tuple[Any, Any]:
    plan = compile_plan([("q", parse_and_check(text, SCHEMA))])
    batch = to_batch(rows)
    found = []
    for engine in (Engine(plan, **options), _pure(Engine(plan, **options))):
        out = []
        for lo in range(0, len(batch), size):
            out.extend(engine.process(batch.take(list(range(lo, min(lo + size, len(batch)))))))
        stats = engine.stats()
        found.append((out, {k: stats[k] for k in (*FIGURES, "cache_evictions")}))
    return found[0], found[1]


@compiled_only
@pytest.mark.parametrize("capacity", [1, 2, 5])
def test_a_small_determinization_cache_books_the_same_hits_and_misses(capacity: int) -> None:
    # The Python path looks each step up in the determinizer's memo, which is emptied when it
    # holds ``cache_capacity`` steps, and asks the determinizer again (a hit or a miss of its
    # LRU cache): with a cache smaller than the steps in use, the core's own table (which never
    # forgets) booked every repeated step as a hit. Found in review: capacity 2 gave 256 hits /
    # 16 misses compiled, 103 / 169 pure.
    text = "SELECT * WHERE A ; B+ ; C PARTITION BY [k] WITHIN 5 EVENTS"
    fast, slow = _both(text, _rows(3, 300, 3), 7, cache_capacity=capacity)
    assert fast == slow


@compiled_only
def test_stats_leave_the_state_in_the_core() -> None:
    # Engine.partitions (and so Engine.stats, which the Spark worker's telemetry and the CLI call)
    # read ``state.partitions``, which made the core hand its whole state to Python objects and
    # load it back at the next batch: a round trip through Python of every live node per call.
    # Found in review: after one batch and engine.stats(), the core no longer owned its state.
    text = "SELECT * WHERE A ; B+ ; C PARTITION BY [k] WITHIN 9 EVENTS"
    plan = compile_plan([("q", parse_and_check(text, SCHEMA))])
    batch = to_batch(_rows(5, 400, 40))
    engine, pure = Engine(plan), _pure(Engine(plan))
    for lo in (0, 200):
        part = batch.take(list(range(lo, lo + 200)))
        assert engine.process(part) == pure.process(part)
        stats = engine.stats()
        core = engine.runners[0].core
        assert core is not None and core.owns, "the stats took the state out of the core"
        assert stats["partitions"] == pure.stats()["partitions"] == pure.partitions() > 0


@compiled_only
def test_a_pickled_engine_leaves_the_choice_of_engine_to_the_process_that_loads_it(tmp_path: Any) -> None:
    # A detector pickled mid-stream (to a Spark worker, to disk) carried the core itself (Cython's
    # pickle of its arena): a process without the compiled core could not load it
    # (ModuleNotFoundError), and one with SHARP_CER_PURE=1 ran the core anyway. Found in review.
    import ast
    import pickle
    import subprocess
    import sys

    text = "SELECT * WHERE A ; B+ ; C PARTITION BY [k] WITHIN 9 EVENTS"
    plan = compile_plan([("q", parse_and_check(text, SCHEMA))])
    batch = to_batch(_rows(8, 400, 5))
    first, rest = batch.take(list(range(200))), batch.take(list(range(200, 400)))
    engine = Engine(plan)
    engine.process(first)
    saved = pickle.dumps((engine, rest))
    assert b"sharp_cer.engine._core" not in saved
    whole = _pure(Engine(plan))
    whole.process(first)
    expected = [(m.start, m.end) for m in whole.process(rest)]
    assert [(m.start, m.end) for m in pickle.loads(saved)[0].process(rest)] == expected
    path = tmp_path / "engine.pkl"
    path.write_bytes(saved)
    script = (
        "import pickle, sys; engine, rest = pickle.loads(open(sys.argv[1], 'rb').read()); "
        "found = [(m.start, m.end) for m in engine.process(rest)]; "
        "print(repr((found, engine.runners[0].core.owns)))"
    )
    env = {**os.environ, native.PURE: "1"}
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, env=env, check=True
    )
    assert ast.literal_eval(done.stdout) == (expected, False)  # the Python engine ran, with the same matches


@compiled_only
def test_emit_puts_a_batch_out_in_pieces_of_bounded_memory(monkeypatch: Any) -> None:
    # With ``emit``, memory must hold the live state and a fixed buffer however many matches a
    # batch completes. The core enumerated the whole batch into its output buffers before the
    # first match went out: 1.8M matches of one 60,000-event batch peaked at 1,274 MB of RSS
    # compiled, 161 MB pure (found in review). It now stops once its buffers pass a budget, puts
    # those matches out and goes on: the first emit comes before the batch is done.
    from sharp_cer.engine import runtime

    monkeypatch.setattr(native, "_BUDGET", 2_000, raising=False)
    monkeypatch.setattr(runtime, "FLUSH_AT", 50)
    text = "SELECT * WHERE A ; B+ ; C WITHIN 8 EVENTS"
    plan = compile_plan([("q", parse_and_check(text, SCHEMA))])
    batch = to_batch(_rows(9, 1_500, 1))
    engine = Engine(plan)
    group = engine.runners[0].core
    assert group is not None
    seen: list[int] = []
    emitted: list[Any] = []

    def emit(found: list[Any]) -> None:
        seen.append(group.core.transitions)  # the core's transitions so far in this batch
        emitted.extend(found)

    assert engine.process(batch, emit=emit) == []
    expected = _pure(Engine(plan)).process(batch)
    assert emitted == expected and len(expected) > 1_000
    assert seen[0] < seen[-1], "the whole batch ran before its first match went out"
