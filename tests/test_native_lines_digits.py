"""The compiled core's JSON lines (``engine._lines``) write every integer as ``json.dumps`` does; its
string codes (``_core.string_codes``) number words by first sight.

``_lines.lines`` writes a line's integers two digits at a time into a buffer made as long as the
longest line a match can make; here its lines are compared with ``json.dumps`` of the same match as
a dict (an oracle that shares no code with it), over starts, ends and positions anywhere in int64
(negative ones, both extremes and every length of number included), several variables per mark and
marks that no variable holds.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.events.match import line_head, line_key

_lines = pytest.importorskip("sharp_cer.engine._lines", reason="the compiled core is not built")

INT64 = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 9, 10, 99, 100, 101, -1, -9, -10, -99, -100, 2**63 - 1, -(2**63), 10**18, -(10**18)]),
    st.integers(-1000, 1000),
)
NAMES = ["a", "b", "c\u00e9", 'q"x']  # non-ASCII and a quote: the keys are json.dumps' (ASCII escapes)
#: per mark label, the variables that hold its mark (label 3 is held by none)
HELD = [["a"], ["b", "c\u00e9"], ['q"x', "a", "b"], []]


def _expected(query: str, start: int, end: int, events: list[int], labels: list[int]) -> str:
    held: dict[str, list[int]] = {}
    for name in sorted(NAMES):
        found = [p for p, label in zip(events, labels, strict=True) if name in HELD[label]]
        if found:
            held[name] = found
    return json.dumps({"query": query, "tenant": None, "start": start, "end": end, "events": events, "vars": held})


@settings(max_examples=200, deadline=None)
@given(
    end=INT64,
    matches=st.lists(
        st.tuples(INT64, st.lists(st.tuples(INT64, st.integers(0, len(HELD) - 1)), max_size=6)),
        min_size=1,
        max_size=8,
        unique_by=lambda m: (m[0], tuple(p for p, _ in m[1])),
    ),
)
def test_lines_write_integers_as_json_does(end: int, matches: list[tuple[int, list[tuple[int, int]]]]) -> None:
    names = sorted(NAMES)
    bit = {name: 1 << k for k, name in enumerate(names)}
    masks = [sum(bit[name] for name in held) for held in HELD]
    table = (line_head("q", None).encode("ascii"), [line_key(n).encode("ascii") for n in names], masks)
    rows, at, labels = [], [], []
    for start, marks in matches:
        rows.append((start, len(at), len(marks)))
        at.extend(p for p, _ in marks)
        labels.extend(label for _, label in marks)
    records = np.array([[0, 0, 0, len(rows), 0, 0]], dtype=np.int64)
    made = _lines.lines(
        records,
        np.array(rows, dtype=np.int64).reshape(-1, 3),
        np.array(at, dtype=np.int64),
        np.array(labels, dtype=np.int64),
        np.array([end], dtype=np.int64),
        [table],
        10_000,
        0,
        1024,
        None,
    )
    # a record's lines come in (start, events) order
    ordered = sorted(matches, key=lambda m: (m[0], [p for p, _ in m[1]]))
    assert made == [
        _expected("q", start, end, [p for p, _ in marks], [label for _, label in marks]) for start, marks in ordered
    ]


def test_a_hand_made_line() -> None:
    table = (line_head("q", "acme").encode("ascii"), [line_key("a").encode("ascii")], [1, 0])
    made = _lines.lines(
        np.array([[0, 0, 0, 1, 0, 0]], dtype=np.int64),
        np.array([[-(2**63), 0, 3]], dtype=np.int64),
        np.array([7, 1234567, 2**63 - 1], dtype=np.int64),
        np.array([0, 1, 0], dtype=np.int64),
        np.array([100], dtype=np.int64),
        [table],
        10_000,
        0,
        1024,
        None,
    )
    assert made == [
        '{"query": "q", "tenant": "acme", "start": -9223372036854775808, "end": 100, '
        '"events": [7, 1234567, 9223372036854775807], "vars": {"a": [7, 9223372036854775807]}}'
    ]


_core = pytest.importorskip("sharp_cer.engine._core", reason="the compiled core is not built")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from(["", "a", "b", "é", "a "]), st.text(max_size=3)), max_size=40))
def test_string_codes_number_words_by_first_sight(words: list[str | None]) -> None:
    # the compiled core's codes of a batch's strings (``feed._codes``): a word's code is how many distinct
    # words came before its first sight, counted here by hand
    expected = [len(set(words[: words.index(word)])) for word in words]
    assert _core.string_codes(list(words)).tolist() == expected
    column = np.array(words, dtype=object)
    from sharp_cer.engine import feed

    assert feed._codes(column).tolist() == expected  # the path the engine takes where the core is built
