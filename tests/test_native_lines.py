"""The compiled core's JSON lines made in C (``engine/_lines.pyx``, through
``NativeGroup._lined``) against the pure engine's lines and each match's
``to_json``: random queries (sequence, ``:``, OR, Kleene, NOT, projections,
partitions, windows) with awkward names (query, tenant and variables with
quotes, backslashes, control characters and non-ASCII text), in one batch
and in several, with ``emit`` flushed every few lines (the chunks emitted
must be the same, not only their concatenation), and the case the C lines
hand back to Python (two matches of one start and events)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine, native, runtime
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from tests.engine_cases import SCHEMA, queries, streams, to_batch

compiled_only = pytest.mark.skipif(native._LINES is None, reason="the compiled lines are not built (or SHARP_CER_PURE)")
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large]}
#: text JSON must escape or keep: quotes, backslash, control characters, accents, an emoji, CJK
AWKWARD = st.text(alphabet=st.sampled_from(list('aZ"\\\n\t\x01é€😀中 ')), min_size=1, max_size=6)


class _Counting:
    """``native._LINES`` counting the pieces it lines (None back: handed to Python)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.lined, self.handed = inner, 0, 0

    def lines(self, *args: Any) -> Any:
        done = self.inner.lines(*args)
        if done is None:
            self.handed += 1
        else:
            self.lined += 1
        return done


def _pure(engine: Engine) -> Engine:
    for runner in engine.runners:
        runner.core = None
    return engine


def _lines(engine: Engine, batch: Any, tenants: dict[str, str | None], size: int | None) -> list[list[str]]:
    """The chunks emitted, and last what the calls returned."""
    chunks: list[list[str]] = []
    returned: list[str] = []
    pieces = [batch]
    if size:
        pieces = [batch.take(list(range(lo, min(lo + size, len(batch))))) for lo in range(0, len(batch), size)]
    for piece in pieces:
        returned.extend(engine.process_lines(piece, tenants, emit=chunks.append))
    return [*chunks, returned]


def _awkward(text: str, base: str) -> str:
    """The query with its variables v1, v2, ... renamed ``base`` + 1, ``base`` + 2, ... (backquoted)."""
    return re.sub(r"\bv(\d+)\b", lambda m: "`" + (base + m.group(1)).replace("`", "``") + "`", text)


@compiled_only
@settings(max_examples=60, **SETTINGS)  # type: ignore[arg-type]
@given(
    queries(negation=True),
    streams(max_size=24),
    st.sampled_from([None, 1, 5]),
    AWKWARD,
    st.none() | AWKWARD,
    AWKWARD,
    st.sampled_from([1, 3, 1000]),
)
def test_compiled_lines_are_the_pure_engines_bytes(
    text: str,
    rows: list[dict[str, Any]],
    size: int | None,
    name: str,
    tenant: str | None,
    variables: str,
    flush_at: int,
) -> None:
    text = _awkward(text, variables)
    plan = compile_plan([(name, parse_and_check(text, SCHEMA))])
    batch = to_batch(rows)
    tenants = {name: tenant}
    counting = _Counting(native._LINES)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "_LINES", counting)
        patch.setattr(runtime, "FLUSH_AT", flush_at)
        fast = _lines(Engine(plan, allowed_lateness=4), batch, tenants, size)
        slow = _lines(_pure(Engine(plan, allowed_lateness=4)), batch, tenants, size)
    assert fast == slow
    matches = _pure(Engine(plan, allowed_lateness=4)).process(batch)
    expected = [dataclasses.replace(m, tenant=tenant).to_json() for m in matches]
    assert [line for chunk in fast for line in chunk] == expected


@compiled_only
def test_the_lines_are_made_in_c_and_handed_back_on_equal_events(monkeypatch: pytest.MonkeyPatch) -> None:
    counting = _Counting(native._LINES)
    monkeypatch.setattr(native, "_LINES", counting)
    batch = to_batch([{"type": t, "x": 0, "k": 0, "t": i} for i, t in enumerate("ABAB")])
    lined = compile_plan([("q", parse_and_check('SELECT * WHERE A AS `é"` ; B WITHIN 3 EVENTS', SCHEMA))])
    lines = Engine(lined).process_lines(batch, {"q": "t\\"})
    assert counting.lined == 1 and counting.handed == 0 and len(lines) == 3
    # one A event is both x and y: two candidates of equal start and events, the Python path keeps one
    twice = compile_plan([("q", parse_and_check("SELECT * WHERE (A AS x OR A AS y) ; B WITHIN 3 EVENTS", SCHEMA))])
    lines = Engine(twice).process_lines(batch, {"q": None})
    assert counting.handed == 1
    assert lines == _pure(Engine(twice)).process_lines(batch, {"q": None})
