"""``checked_arrow`` (issue 38.1): rows the loaders accepted, read back
without a second check, give exactly the batch the loaders gave."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.errors import EventsError
from sharp_cer.events.batch import EventBatch
from sharp_cer.events.checked import checked_arrow
from sharp_cer.events.loaders import load_jsonl
from sharp_cer.language import Schema

SCHEMA = Schema.parse(
    "CREATE STREAM S { EVENT A { i:int, d:double, s:string, t:primary_time },"
    " EVENT B { b:bool, s:string, t:primary_time }, EVENT C { i:int } }"
)

_INT = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1))
_DOUBLE = st.one_of(st.none(), st.floats(allow_nan=False, allow_infinity=False))
_TEXT = st.one_of(st.none(), st.text(max_size=5))
_TIME = st.integers(0, 2**62)


def _event() -> st.SearchStrategy[dict[str, object]]:
    a = st.fixed_dictionaries({"type": st.just("A"), "i": _INT, "d": _DOUBLE, "s": _TEXT, "t": _TIME})
    b = st.fixed_dictionaries({"type": st.just("B"), "b": st.one_of(st.none(), st.booleans()), "s": _TEXT, "t": _TIME})
    c = st.fixed_dictionaries({"type": st.just("C"), "i": _INT})
    return st.one_of(a, b, c)


def _same(left: EventBatch, right: EventBatch) -> None:
    assert left.type_names == right.type_names
    assert left.positions.tolist() == right.positions.tolist()
    assert left.codes.tolist() == right.codes.tolist()
    assert list(left.columns) == list(right.columns)
    for name, column in left.columns.items():
        other = right.columns[name]
        assert (column.kind, column.values.dtype) == (other.kind, other.values.dtype), name
        assert column.valid.tolist() == other.valid.tolist(), name
        # the values where valid, and the fillers where not, exactly (NaN equal to NaN)
        for x, y in zip(column.values.tolist(), other.values.tolist(), strict=True):
            assert x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y)), name


@settings(max_examples=150, deadline=None)
@given(st.lists(_event(), max_size=12), st.integers(0, 1000))
def test_rows_read_back_give_the_loaders_batch(events: list[dict[str, object]], shift: int) -> None:
    text = "".join(json.dumps(e) + "\n" for e in events)
    loaded, report = load_jsonl(text, SCHEMA, allowed_lateness=2**63 - 1)
    assert not report.dead_letters
    positions = loaded.positions + shift
    again = checked_arrow(loaded.to_arrow(), SCHEMA, positions)
    _same(again, EventBatch(loaded.event_types, positions, loaded.codes, loaded.columns))


def test_a_row_of_no_type_of_the_schema_is_refused() -> None:
    table = pa.table({"type": ["A", "Z"], "i": [1, 2]})
    with pytest.raises(EventsError, match="not one of the schema's"):
        checked_arrow(table, SCHEMA, np.arange(2))


def test_a_column_of_another_type_is_refused() -> None:
    table = pa.table({"type": ["C"], "i": ["7"]})
    with pytest.raises(EventsError, match="column 'i' holds string, expected the schema's int"):
        checked_arrow(table, SCHEMA, np.arange(1))
