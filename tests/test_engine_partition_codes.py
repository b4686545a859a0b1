"""``engine.feed.partition_codes``: the integers the density and relevance
drops group events by. Two events of the rows asked get equal codes exactly
when their partition keys (the tuple of their values) are equal, whatever the
rows, the mix of strings, ints and doubles, and however often one batch's
string columns are asked (their codes are kept per column, for every group)."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.engine.feed import partition_codes
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan

SCHEMA = Schema.parse("CREATE STREAM S { EVENT A { s:string, k:int, d:double, u:string } }")
KEYS = ("[s]", "[d]", "[s, k]", "[k], [u], [s]", "[d, s]")


def _group(key: str) -> Any:
    query = parse_and_check(f"SELECT * WHERE A ; A PARTITION BY {key} WITHIN 5 EVENTS", SCHEMA)
    return compile_plan([("q", query)]).groups[0]


GROUPS = [_group(key) for key in KEYS]


def _same(codes: list[int], keys: list[tuple[Any, ...]]) -> None:
    """Equal codes exactly where the keys are equal (a relation, not the numbers)."""
    for i in range(len(keys)):
        for j in range(len(keys)):
            assert (codes[i] == codes[j]) == (keys[i] == keys[j]), (i, j, keys[i], keys[j])


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["x", "y", "é", "x y", ""]), st.integers(-2, 2), st.sampled_from([0.5, -1.0, 2.0])),
        min_size=1,
        max_size=30,
    ),
    st.data(),
)
def test_equal_codes_exactly_for_equal_keys(rows: list[tuple[str, int, float]], data: st.DataObject) -> None:
    text = "".join(f'A,"{s}",{k},{d},"{s[::-1]}{k % 2}"\n' for s, k, d in rows)
    batch = load_csv(text, SCHEMA)[0]
    assert len(batch) == len(rows)
    values = {name: batch.columns[name].to_list() for name in ("s", "k", "d", "u")}
    for group in GROUPS:
        # two subsets of one batch in turn: the second reads the string codes the first kept
        for _ in range(2):
            chosen = sorted(data.draw(st.sets(st.integers(0, len(rows) - 1), min_size=1)))
            got = partition_codes(group, batch, np.array(chosen, dtype=np.intp)).tolist()
            keys = [tuple(values[a][i] for a in group.partition_attributes) for i in chosen]
            assert len(got) == len(chosen)
            _same(got, keys)
