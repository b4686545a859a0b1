"""The loaders' Arrow-numpy conversions agree with pyarrow's own (which
import pandas) on random arrays, slices and nulls."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.events.arrow_numpy import from_numpy, nulls, strings, to_numpy

_KINDS = {
    "int64": (st.integers(-(2**63), 2**63 - 1), np.int64, pa.int64()),
    "int32": (st.integers(-(2**31), 2**31 - 1), np.int32, pa.int32()),
    "float64": (st.floats(allow_nan=False), np.float64, pa.float64()),
    "bool": (st.booleans(), np.bool_, pa.bool_()),
}


@st.composite
def columns(draw: st.DrawFn) -> tuple[str, list[object], list[bool], int, int]:
    kind = draw(st.sampled_from(sorted(_KINDS)))
    items = draw(st.lists(_KINDS[kind][0], max_size=40))
    missing = draw(st.lists(st.booleans(), min_size=len(items), max_size=len(items)))
    start = draw(st.integers(0, len(items)))
    stop = draw(st.integers(start, len(items)))
    return kind, items, missing, start, stop


@settings(deadline=None)  # no timed assertion: a loaded machine may take long
@given(columns())
def test_from_numpy_and_back_match_pyarrow(column: tuple[str, list[object], list[bool], int, int]) -> None:
    kind, items, missing, start, stop = column
    _, dtype, arrow_type = _KINDS[kind]
    data, mask = np.array(items, dtype=dtype), np.array(missing, dtype=np.bool_)
    expected = pa.array([None if m else v for v, m in zip(items, missing, strict=True)], arrow_type)
    built = from_numpy(data, mask=mask)
    assert built.type == arrow_type and built.to_pylist() == expected.to_pylist()
    # pyarrow's own arrays, sliced at any offset (bitmaps that start mid-byte)
    part = expected.slice(start, stop - start)
    fill = dtype(0)
    want = [fill if v is None else v for v in part.to_pylist()]
    assert to_numpy(part, fill).tolist() == want
    assert to_numpy(pa.chunked_array([part], arrow_type), fill).tolist() == want
    assert nulls(part).tolist() == [v is None for v in part.to_pylist()]


@settings(deadline=None)
@given(st.lists(st.none() | st.text(st.characters(exclude_categories=["Cs"])), max_size=30))
def test_strings_match_pyarrow(texts: list[str | None]) -> None:
    assert strings(texts).to_pylist() == pa.array(texts, pa.string()).to_pylist() == texts


def test_arrays_without_buffers_or_values() -> None:
    """Arrays pyarrow makes with no data buffer (empty, or of the null type)."""
    assert to_numpy(pa.Array.from_buffers(pa.int64(), 0, [None, None]), 0).dtype == np.int64
    assert to_numpy(pa.nulls(3), 7).tolist() == [7, 7, 7]
    assert nulls(pa.nulls(3)).tolist() == [True, True, True]
    assert to_numpy(pa.nulls(2, pa.int32()), -1).tolist() == [-1, -1]
    assert strings([]).to_pylist() == []
