"""The loaders' kernels called by name (``sharp_cer.events.arrow_compute``)
give what pyarrow's public ``pyarrow.compute`` functions give for the same
arguments: hypothesis draws strings (blank, padded, non-ASCII, numeric,
null) and each function is compared with pyarrow's, exactly."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.events import arrow_compute as compute

_TEXT = st.one_of(
    st.none(),
    st.sampled_from(["", " ", "\t", "BUY", " SELL ", "1", "+2", "-3.5e2", "true", "0", "a,b,,c", 'x"y', "\r"]),
    st.text(max_size=6),
)
BLANK = " \t"


def _same(got: Any, expected: Any) -> None:
    assert got.type == expected.type
    if isinstance(got, pa.Scalar):
        assert got.as_py() == expected.as_py()
    else:
        assert got.to_pylist() == expected.to_pylist()


@settings(max_examples=150, deadline=None)
@given(st.lists(_TEXT, max_size=12), st.lists(_TEXT, min_size=1, max_size=4))
def test_each_kernel_gives_what_pyarrow_compute_gives(values: list[str | None], chosen: list[str | None]) -> None:
    arr = pa.array(values, pa.string())
    value_set = pa.array(chosen, pa.string())
    flags = pc.equal(arr, pa.scalar("", pa.string()))
    backwards = pa.array(range(len(values) - 1, -1, -1), pa.int64())
    cases = [
        (compute.cast(arr, pa.large_string()), pc.cast(arr, pa.large_string())),
        (compute.take(arr, backwards), pc.take(arr, backwards)),
        (compute.split_pattern(arr, ","), pc.split_pattern(arr, ",")),
        (compute.replace_substring_regex(arr, r"^\+", ""), pc.replace_substring_regex(arr, r"^\+", "")),
        (compute.count_substring(arr, '"'), pc.count_substring(arr, '"')),
        (compute.match_substring_regex(arr, r"^[0-9]+$"), pc.match_substring_regex(arr, r"^[0-9]+$")),
        (compute.utf8_trim(arr, characters=BLANK), pc.utf8_trim(arr, characters=BLANK)),
        (compute.utf8_lower(arr), pc.utf8_lower(arr)),
        (compute.index_in(arr, value_set=value_set), pc.index_in(arr, value_set=value_set)),
        (compute.is_in(arr, value_set=value_set), pc.is_in(arr, value_set=value_set)),
        (compute.binary_length(arr), pc.binary_length(arr)),
        (compute.equal(arr, value_set[0]), pc.equal(arr, value_set[0])),
        (compute.if_else(flags, arr, value_set[0]), pc.if_else(flags, arr, value_set[0])),
        (compute.dictionary_encode(arr), pc.dictionary_encode(arr)),
        (compute.any_true(flags), pc.any(flags)),
        (compute.total(compute.binary_length(arr)), pc.sum(pc.binary_length(arr))),
        (compute.maximum(compute.binary_length(arr)), pc.max(pc.binary_length(arr))),
    ]
    for got, expected in cases:
        _same(got, expected)


def test_a_failing_cast_fails_as_pyarrow_compute_s_does() -> None:
    arr = pa.array(["1", "x"])
    try:
        pc.cast(arr, pa.int64())
    except pa.ArrowInvalid as exc:
        expected = str(exc)
    try:
        compute.cast(arr, pa.int64())
    except pa.ArrowInvalid as exc:
        assert str(exc) == expected
    else:
        raise AssertionError("cast of 'x' to int64 did not fail")


def test_the_kernels_are_the_ones_pyarrow_compute_exports() -> None:
    # arrow_compute imports pyarrow._compute, which pyarrow.compute
    # re-exports: if a pyarrow release moves it, this fails first
    assert compute.call_function is pc.call_function
