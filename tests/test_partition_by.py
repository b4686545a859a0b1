"""PARTITION BY as CORE's paper defines it (§3): every attribute the clause
names, whatever the brackets, is part of the key; an event whose type lacks
one of them, or whose value of one is null, belongs to no substream. Each
case is computed by hand (in its comment) and checked on the reference
evaluator and on the engine; then the checker's error, the planner's groups
and ``explain``, and CORE's query Q2 on the stock generator against a
brute-force grouping written here."""

from __future__ import annotations

import dataclasses
import itertools
import re
from typing import Any

import numpy as np
import pandas as pd
import pytest

from sharp_cer.api import Detector
from sharp_cer.engine import Engine
from sharp_cer.events.batch import EventBatch
from sharp_cer.events.generators import stocks
from sharp_cer.events.loaders import load_pandas
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.language.diagnostics import UndeclaredAttributeError
from sharp_cer.planner import compile_plan
from sharp_cer.planner.explain import explain, render
from sharp_cer.reference import evaluate

# C declares a but neither b nor c
SCHEMA = Schema.parse(
    """CREATE STREAM S {
         EVENT A { a:int, b:int, c:int, t:primary_time },
         EVENT B { a:int, b:int, c:int, t:primary_time },
         EVENT C { a:int, t:primary_time }
       }"""
)
COLUMNS = ("a", "b", "c")


def batch_of(spec: str, nulls: tuple[tuple[str, int], ...] = ()) -> EventBatch:
    """'A110 B120 C1' -> events with a, b, c given by the digits (C: a only),
    loaded as a user would; ``nulls`` blanks (attribute, position) values."""
    rows = []
    for i, word in enumerate(spec.split()):
        row: dict[str, Any] = {"type": word[0], "t": i}
        row.update({name: int(d) for name, d in zip(COLUMNS, word[1:], strict=False)})
        rows.append(row)
    batch, report = load_pandas(pd.DataFrame(rows, columns=["type", *COLUMNS, "t"]).astype({"t": "int64"}), SCHEMA)
    assert report.accepted == len(rows), report.summary()
    # loaders dead-letter a declared attribute without a value, so a null
    # reaches the engine only from a batch built by hand, as here
    columns = dict(batch.columns)
    for name, position in nulls:
        valid = columns[name].valid.copy()
        valid[position] = False
        columns[name] = dataclasses.replace(columns[name], valid=valid)
    return dataclasses.replace(batch, columns=columns)


def both(text: str, batch: EventBatch) -> set[tuple[int, int, tuple[int, ...]]]:
    """The matches (start, end, events), asserting that the reference
    evaluator and the engine agree on them."""
    checked = parse_and_check(text, SCHEMA)
    reference = {(m.start, m.end, m.events) for m in evaluate([("q", checked)], batch).matches}
    engine = {(m.start, m.end, m.events) for m in Engine(compile_plan([("q", checked)]), debug=True).process(batch)}
    assert engine == reference, "engine and reference differ"
    return reference


SEQ = "SELECT * WHERE A ; B PARTITION BY {} WITHIN 9 EVENTS"
# positions: 0 A(1,1,0)  1 B(1,2,0)  2 B(1,1,0)  3 B(2,1,0)  4 B(1,1,5)
STREAM = "A110 B120 B110 B210 B115"


@pytest.mark.parametrize("clause", ["[a], [b]", "[a, b]", "[b], [a]", "[a], [a, b]"])
def test_every_attribute_is_part_of_the_key_whatever_the_brackets(clause: str) -> None:
    # key (a, b): A0 is (1, 1); the B's with (1, 1) are 2 and 4
    # (by a alone, B1 would match too; by b alone, B3)
    assert both(SEQ.format(clause), batch_of(STREAM)) == {(0, 2, (0, 2)), (0, 4, (0, 4))}


@pytest.mark.parametrize("clause", ["[a], [b, c]", "[a, b], [c]", "[c, b, a]"])
def test_three_attributes_in_any_brackets_give_one_key(clause: str) -> None:
    # key (a, b, c): A0 is (1, 1, 0); only B2 has it (B4 has c = 5)
    assert both(SEQ.format(clause), batch_of(STREAM)) == {(0, 2, (0, 2))}


def test_one_attribute_for_contrast() -> None:
    # key (a): A0 and B1, B2, B4 share a = 1
    assert both(SEQ.format("[a]"), batch_of(STREAM)) == {(0, 1, (0, 1)), (0, 2, (0, 2)), (0, 4, (0, 4))}


def test_an_event_whose_type_lacks_an_attribute_is_in_no_substream() -> None:
    # C1 lacks b: with key (a, b) it is in no substream, so A0 and B2 are
    # next to each other in theirs; with key (a) it sits between them
    events = batch_of("A110 C1 B110")
    contiguous = "SELECT * WHERE A : B PARTITION BY {} WITHIN 9 EVENTS"
    assert both(contiguous.format("[a], [b]"), events) == {(0, 2, (0, 2))}
    assert both(contiguous.format("[a]"), events) == set()
    strict = "SELECT STRICT * WHERE A ; B PARTITION BY {} WITHIN 9 EVENTS"
    assert both(strict.format("[a, b]"), events) == {(0, 2, (0, 2))}
    assert both(strict.format("[a]"), events) == set()


def test_an_event_with_a_null_key_value_is_in_no_substream() -> None:
    # b of A0 and of B2 is null: those two are in no substream; A1 matches B3 only,
    # and A1 : B3 are contiguous because B2 is in no substream
    events = batch_of("A110 A110 B110 B110", nulls=(("b", 0), ("b", 2)))
    assert both(SEQ.format("[a], [b]"), events) == {(1, 3, (1, 3))}
    assert both("SELECT * WHERE A : B PARTITION BY [a, b] WITHIN 9 EVENTS", events) == {(1, 3, (1, 3))}
    # by a alone the nulls do not matter: A0 and A1 each match B2 and B3
    assert both(SEQ.format("[a]"), events) == {(0, 2, (0, 2)), (0, 3, (0, 3)), (1, 2, (1, 2)), (1, 3, (1, 3))}


def test_the_reference_reads_null_values_of_plain_rows_the_same_way() -> None:
    rows = [
        {"type": "A", "a": 1, "b": None, "c": 0, "t": 0},
        {"type": "A", "a": 1, "b": 1, "c": 0, "t": 1},
        {"type": "B", "a": 1, "b": 1, "c": 0, "t": 2},
    ]
    checked = parse_and_check(SEQ.format("[a], [b]"), SCHEMA)
    assert [(m.start, m.end) for m in evaluate([("q", checked)], rows).matches] == [(1, 2)]


# ---------------------------------------------------------------- checker


def test_a_pattern_type_without_a_partition_attribute_is_refused() -> None:
    text = "SELECT * WHERE A ; C PARTITION BY [a], [b] WITHIN 9 EVENTS"
    with pytest.raises(UndeclaredAttributeError) as info:
        parse_and_check(text, SCHEMA)
    err = info.value
    assert str(err).splitlines()[0].endswith("error: event type C has no partition attribute 'b'")
    assert (err.line, err.column) == (1, text.index("[b]") + 2)  # the caret is on b in its bracket
    assert "expected: attributes of C: a, t" in str(err)
    assert "hint: every attribute PARTITION BY names is part of the key" in str(err)


def test_a_misspelt_partition_attribute_gets_a_suggestion() -> None:
    with pytest.raises(UndeclaredAttributeError, match=re.escape("did you mean 'c'?")):
        parse_and_check("SELECT * WHERE A ; B PARTITION BY [a], [b, C] WITHIN 9 EVENTS", SCHEMA)


def test_lists_of_different_lengths_are_one_key_now() -> None:
    checked = parse_and_check("SELECT * WHERE A ; B PARTITION BY [a], [b, c] WITHIN 9 EVENTS", SCHEMA)
    assert checked.query.partition_attributes == ("a", "b", "c")


# ---------------------------------------------------------------- planner


def test_one_group_and_one_explained_key_for_the_same_attributes() -> None:
    queries = [(f"q{i}", parse_and_check(SEQ.format(c), SCHEMA)) for i, c in enumerate(["[a], [b]", "[b, a]", "[a]"])]
    plan = compile_plan(queries)
    assert [g.queries for g in plan.groups] == [(0, 1), (2,)]
    assert [g.partition_attributes for g in plan.groups] == [("a", "b"), ("a",)]
    figures = explain(plan)
    assert [g["partition_by"] for g in figures["group_details"]] == [["a", "b"], ["a"]]
    assert "partition [a, b]" in render(figures)


# ---------------------------------------------------------------- CORE's Q2

# CORE's paper, Figure 1, query Q2, as printed there (lower-case keywords,
# "1 minute"): pairs of trades of the same stock and the same volume
Q2 = "SELECT b FROM Stock WHERE (BUY or SELL) as s; (BUY or SELL) as b PARTITION BY [name], [volume] WITHIN 1 minute"
STOCK = Schema.parse(
    """CREATE STREAM Stock {
         EVENT BUY { id:int, name:string, volume:int, price:double, t:primary_time },
         EVENT SELL { id:int, name:string, volume:int, price:double, t:primary_time }
       }"""
)


def test_core_q2_on_the_stock_generator_pairs_trades_of_one_stock_and_volume() -> None:
    tape = stocks(30_000, seed=21)
    minute = 60 * 10**9
    trades = list(zip(tape["name"], tape["volume"], tape["t"], strict=True))
    # brute force: every pair of trades with equal name and volume at most a
    # minute apart (the window includes its bound); the match is the pair's
    # interval and outputs b, the later trade
    by_key: dict[tuple[str, int], list[int]] = {}
    for position, (name, volume, _) in enumerate(trades):
        by_key.setdefault((name, volume), []).append(position)
    expected = {
        (i, j, (j,))
        for positions in by_key.values()
        for i, j in itertools.combinations(positions, 2)
        if trades[j][2] - trades[i][2] <= minute
    }
    # the old reading ([name] alone): pairs of one stock within the minute
    by_name = 0
    for name in set(tape["name"]):
        times = np.sort(np.array([t for n, _, t in trades if n == name]))
        by_name += int((np.searchsorted(times, times + minute, side="right") - np.arange(times.size) - 1).sum())
    assert 20 <= len(expected) < by_name / 100  # the volume counts

    detector = Detector.from_queries([("q2", parse_and_check(Q2, STOCK))], STOCK)
    assert {(m.start, m.end, m.events) for m in detector.feed(tape)} == expected
