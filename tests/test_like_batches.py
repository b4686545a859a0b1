"""LIKE over a whole batch (``column_conditions._like``): a column whose texts
repeat is matched once per distinct text, one of mostly distinct texts text by
text; both give the reference evaluator's matches, nulls included."""

from __future__ import annotations

import pandas as pd
import pytest

from sharp_cer.engine import Engine
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.test_native_core import RICH


@pytest.mark.parametrize("distinct", [True, False])
def test_like_on_a_large_batch_equals_the_reference(distinct: bool) -> None:
    n = 3000  # beyond the 1,024 texts ``_like`` samples
    texts = [f"id-{i}" if distinct else ["id-1x", "id-2", "other", None][i % 4] for i in range(n)]
    if distinct:
        texts[5::7] = [None] * len(texts[5::7])
    frame = pd.DataFrame({"type": ["A"] * n, "x": [0] * n, "y": [0.0] * n, "s": texts, "t": list(range(n))})
    batch, _ = load_pandas(frame, RICH)
    named = [("q", parse_and_check("SELECT * WHERE A FILTER A[s LIKE 'id-1.*']", RICH))]
    found = Engine(compile_plan(named)).process(batch)
    expected = evaluate(named, batch).per_query["q"]
    assert sorted(m.key() for m in found) == sorted(m.key() for m in expected)
    # a hand count: the texts the pattern matches from their start
    assert len(found) == sum(1 for t in texts if t is not None and t.startswith("id-1"))
