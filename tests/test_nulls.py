"""Nulls (issue 33.14): a declared attribute that is there and null is a
null value, not a dead letter, and every condition reads it with SQL's
three-valued logic, the same in the engine and in the reference evaluator.

The expectations here are computed by hand from the rule (the reference
evaluator's rule 6); each case also runs through the engine and the
reference evaluator, which must agree with the hand. The random cases are
in ``test_engine_differential`` (``test_every_feature_with_nulls``) and, for
the vectorized conditions, ``test_engine_speed``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.api import Detector
from sharp_cer.builder import DetectorBuilder, DetectorConfig
from sharp_cer.cli import main
from sharp_cer.engine import Engine
from sharp_cer.events.batch import EventBatch
from sharp_cer.events.loaders import load_csv, load_jsonl, load_pandas
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from sharp_cer.shedding.bounds import LatencyBound

SCHEMA_TEXT = (
    "CREATE STREAM S { EVENT A { x:int, s:string, t:primary_time }, EVENT B { x:int, s:string, t:primary_time } }"
)
SCHEMA = Schema.parse(SCHEMA_TEXT)


def jsonl(*rows: dict[str, object]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def load(*rows: dict[str, object]) -> EventBatch:
    batch, report = load_jsonl(jsonl(*rows), SCHEMA)
    assert not report.dead_letters, report.dead_letters
    return batch


def run(query: str, batch: EventBatch) -> list[tuple[int, ...]]:
    """The query's matches (their events) from the engine, after checking the
    reference evaluator finds the same."""
    named = [("q", parse_and_check(query, SCHEMA))]
    found = sorted(m.events for m in Engine(compile_plan(named)).process(batch))
    assert found == sorted(m.events for m in evaluate(named, batch).matches), query
    return found


# ---------------------------------------------------------------- loading


def test_a_json_null_is_a_null_value_not_a_dead_letter() -> None:
    # the regression: on the previous main this row was dead-lettered as missing_attribute
    batch, report = load_jsonl(jsonl({"type": "A", "x": None, "s": "a", "t": 1}), SCHEMA)
    assert report.dead_letters == []
    assert batch.row(0)["attributes"] == {"x": None, "s": "a", "t": 1}


def test_a_missing_key_and_a_null_time_stay_dead_letters_that_say_which() -> None:
    text = jsonl({"type": "A", "s": "a", "t": 1}, {"type": "A", "x": 1, "s": "a", "t": None})
    batch, report = load_jsonl(text, SCHEMA)
    assert len(batch) == 0
    assert [(d.kind, d.found) for d in report.dead_letters] == [
        ("missing_attribute", "no key 'x'"),
        ("missing_attribute", "null"),
    ]


def test_csv_json_and_tables_read_the_same_nulls() -> None:
    """An empty CSV field is what a JSON null and a table's NA are: a null
    (for strings too: CSV cannot tell an empty string from no value)."""
    from_json = load({"type": "A", "x": None, "s": None, "t": 1}, {"type": "B", "x": 2, "s": "b", "t": 2})
    from_csv, report = load_csv("A,,,1\nB,2,b,2\n", SCHEMA)
    assert report.dead_letters == []
    frame = pd.DataFrame({"type": ["A", "B"], "x": pd.array([None, 2], dtype="Int64"), "s": [None, "b"], "t": [1, 2]})
    from_table, table_report = load_pandas(frame, SCHEMA)
    assert table_report.dead_letters == []
    for batch in (from_csv, from_table):
        assert [batch.row(i) for i in range(2)] == [from_json.row(i) for i in range(2)]
    assert from_json.columns["x"].valid.tolist() == [False, True]


# ---------------------------------------------------------------- one-event conditions

# positions:  0: x=1, 1: x=null, 2: x=5, 3: x=null s='b'
EVENTS = [
    {"type": "A", "x": 1, "s": "a", "t": 1},
    {"type": "A", "x": None, "s": "a", "t": 2},
    {"type": "A", "x": 5, "s": "a", "t": 3},
    {"type": "A", "x": None, "s": "b", "t": 4},
]


@pytest.mark.parametrize(
    ("condition", "holds_at"),
    [
        ("x > 3", [2]),
        ("x <= 3", [0]),
        ("NOT (x > 3)", [0]),  # NOT unknown is unknown: the same events as x <= 3
        ("x != 5", [0]),
        ("x = 5 OR x != 5", [0, 2]),  # not a tautology over nulls
        ("x IN {1, 5}", [0, 2]),
        ("x NOT IN {1}", [2]),
        ("NOT (x IN {1})", [2]),
        ("x IN RANGE(0, 3)", [0]),
        ("x + 1 > 0", [0, 2]),
        ("x / 0 > 0 OR s = 'b'", [3]),  # null / 0 is null, not out of domain; OR true with unknown is true
        ("x > 3 AND s = 'a'", [2]),
        ("NOT (x > 3 AND s = 'b')", [0, 1, 2]),  # at 1: unknown AND false is false, so its NOT holds
        ("NOT (x > 3 OR s = 'a')", []),
        ("abs(x) >= 0", [0, 2]),
        ("s LIKE 'b'", [3]),
    ],
)
def test_one_event_conditions_follow_three_valued_logic(condition: str, holds_at: list[int]) -> None:
    batch = load(*EVENTS)
    assert run(f"SELECT * WHERE A FILTER A[{condition}]", batch) == [(p,) for p in holds_at]
    # a variable's condition goes through another path of the planner: the same answer
    assert run(f"SELECT * WHERE A AS a FILTER a[{condition}]", batch) == [(p,) for p in holds_at]


def test_not_of_a_filtered_event_is_every_event_the_filter_does_not_hold_on() -> None:
    """``NOT(A FILTER A[x > 3])`` is an event that does not satisfy ``A[x > 3]``: an A
    whose x is null is one (pattern-level NOT is two-valued)."""
    batch = load(*EVENTS, {"type": "B", "x": 0, "s": "z", "t": 5})
    assert run("SELECT * WHERE NOT(A FILTER A[x > 3]) ; B WITHIN 10 EVENTS", batch) == [(4,)] * 3
    found = Engine(compile_plan([("q", parse_and_check("SELECT * WHERE NOT(A FILTER A[x > 3]) ; B", SCHEMA))])).process(
        batch
    )
    # the NOT events open the interval: positions 0, 1 and 3 (2 has x = 5), each a match ending at B
    assert sorted(m.start for m in found) == [0, 1, 3]
    assert run("SELECT * WHERE A ; ABSENT(A FILTER A[x > 3]) ; B WITHIN 10 EVENTS", batch) == [(2, 4), (3, 4)]


# ---------------------------------------------------------------- across events and aggregates


def test_cross_event_comparisons_with_a_null_are_unknown_under_not_too() -> None:
    batch = load(
        {"type": "A", "x": None, "s": "a", "t": 1},
        {"type": "A", "x": 1, "s": "a", "t": 2},
        {"type": "B", "x": 2, "s": "b", "t": 3},
    )
    assert run("SELECT * WHERE A AS a ; B AS b FILTER a.x < b.x WITHIN 5 EVENTS", batch) == [(1, 2)]
    assert run("SELECT * WHERE A AS a ; B AS b FILTER NOT (a.x >= b.x) WITHIN 5 EVENTS", batch) == [(1, 2)]
    assert run("SELECT * WHERE A AS a ; B AS b FILTER a.x < b.x OR b.s = 'b' WITHIN 5 EVENTS", batch) == [
        (0, 2),
        (1, 2),
    ]


# A+ AS a ; B AS b over x = 1, null, 2 then B: a takes any non-empty subset of {0, 1, 2}
AGGREGATE_EVENTS = [
    {"type": "A", "x": 1, "s": "a", "t": 1},
    {"type": "A", "x": None, "s": "a", "t": 2},
    {"type": "A", "x": 2, "s": "a", "t": 3},
    {"type": "B", "x": 3, "s": "b", "t": 4},
]


@pytest.mark.parametrize(
    ("condition", "subsets"),
    [
        # sum skips nulls: {0, 2} and {0, 1, 2} sum to 3
        ("sum(a.x) = b.x", [(0, 2), (0, 1, 2)]),
        # sum over only nulls is as over none: 0
        ("sum(a.x) = 0", [(1,)]),
        # avg of the non-null values: (1 + 2) / 2
        ("avg(a.x) = 1.5", [(0, 2), (0, 1, 2)]),
        # min and max skip nulls; over only nulls they are out of domain (false)
        ("min(a.x) = 1", [(0,), (0, 1), (0, 2), (0, 1, 2)]),
        ("max(a.x) < 2", [(0,), (0, 1)]),
        ("NOT (max(a.x) >= 2)", [(0,), (0, 1)]),
        # count counts events, null or not
        ("count(a) = 2", [(0, 1), (0, 2), (1, 2)]),
        # first and last are the event's value: null if it is
        ("first(a.x) < 5", [(0,), (0, 1), (0, 2), (0, 1, 2), (2,)]),
        ("last(a.x) >= 1", [(0,), (0, 2), (0, 1, 2), (1, 2), (2,)]),
    ],
)
def test_aggregates_skip_nulls(condition: str, subsets: list[tuple[int, ...]]) -> None:
    batch = load(*AGGREGATE_EVENTS)
    found = run(f"SELECT * WHERE A+ AS a ; B AS b FILTER {condition} WITHIN 10 EVENTS", batch)
    assert found == sorted((*s, 3) for s in subsets)


def test_a_null_partition_key_puts_the_event_in_no_partition() -> None:
    batch = load(
        {"type": "A", "x": None, "s": "a", "t": 1},
        {"type": "A", "x": 1, "s": "a", "t": 2},
        {"type": "B", "x": None, "s": "b", "t": 3},
        {"type": "B", "x": 1, "s": "b", "t": 4},
    )
    assert run("SELECT * WHERE A ; B PARTITION BY [x] WITHIN 10 EVENTS", batch) == [(1, 3)]


def test_an_attribute_window_with_a_null_end_holds_no_match() -> None:
    batch = load(
        {"type": "A", "x": 1, "s": "a", "t": 1},
        {"type": "B", "x": None, "s": "b", "t": 2},
        {"type": "B", "x": 2, "s": "b", "t": 3},
    )
    assert run("SELECT * WHERE A ; B WITHIN 5 [x]", batch) == [(0, 2)]


# ---------------------------------------------------------------- outputs, shedding, MATCH_RECOGNIZE


def test_outputs_show_a_null_as_null(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    (tmp_path / "s.core").write_text(SCHEMA_TEXT)
    (tmp_path / "q.ceql").write_text("SELECT * WHERE A AS a ; B AS b WITHIN 5 EVENTS")
    (tmp_path / "e.jsonl").write_text(
        jsonl({"type": "A", "x": None, "s": None, "t": 1}, {"type": "B", "x": 2, "s": "b", "t": 2})
    )
    files = ["--schema", str(tmp_path / "s.core"), "--query", str(tmp_path / "q.ceql")]
    command = ["match", *files, "--events", str(tmp_path / "e.jsonl"), "--with-events"]
    assert main(command) == 0
    (line,) = [json.loads(text) for text in capsys.readouterr().out.splitlines() if text.startswith("{")]
    assert line["attributes"]["a"] == [{"type": "A", "position": 0, "x": None, "s": None, "t": 1}]
    # CSV writes a null as an empty field, which is how the loaders read one back
    nullable = pcsv.ConvertOptions(strings_can_be_null=True)
    for suffix, read in (("parquet", pq.read_table), ("csv", lambda f: pcsv.read_csv(f, convert_options=nullable))):
        out = tmp_path / f"m.{suffix}"
        assert main([*command, "--out", str(out)]) == 0
        rows = read(out).to_pylist()
        assert [(r["variable"], r["x"], r["s"]) for r in rows] == [("a", None, None), ("b", 2, "b")]
    detector = Detector.from_queries([("q", "SELECT * WHERE A AS a ; B AS b WITHIN 5 EVENTS")], SCHEMA)
    x = pd.array([None, 2], dtype="Int64")
    found = detector.feed(pd.DataFrame({"type": ["A", "B"], "x": x, "s": [None, "b"], "t": [1, 2]}))
    assert [(r["x"], r["s"]) for r in detector.flat_alerts(found)] == [(None, None), (2, "b")]


def test_shedding_buckets_events_with_a_null_sketch_attribute() -> None:
    queries = [("q", parse_and_check("SELECT * WHERE A ; B WITHIN 5 EVENTS", SCHEMA))]
    config = DetectorConfig(shedder="sharp", bound=LatencyBound(cost_units=1e9), sketch_attributes=("x",))
    detector = Detector.from_builder(DetectorBuilder(SCHEMA, queries, config), record_latency=True, capacity=1e6)
    xs = pd.array([None, 1, None, 2] * 10, dtype="Int64")
    found = detector.feed(pd.DataFrame({"type": list("ABAB") * 10, "x": xs, "s": "a", "t": np.arange(40)}))
    assert len(found) > 0


def test_match_recognize_over_json_with_nulls() -> None:
    """MATCH_RECOGNIZE keeps its own SQL null rules over a JSON source read
    as Arrow and as pandas: ``p > PREV(p)`` is unknown next to a null."""
    import io

    import pyarrow.json as pj

    from sharp_cer.recognize.run import match_recognize

    text = jsonl(*({"id": i, "p": p} for i, p in enumerate([1.0, None, 3.0, 4.0, 5.0], start=1)))
    clause = """MATCH_RECOGNIZE (ORDER BY id MEASURES A.id AS a, LAST(B.id) AS b ONE ROW PER MATCH
                PATTERN (A B+) DEFINE B AS p > PREV(p))"""
    table = pj.read_json(io.BytesIO(text.encode()))
    assert match_recognize(table, clause).to_pylist() == [{"a": 3, "b": 5}]
    frame = pd.read_json(io.StringIO(text), lines=True)
    assert match_recognize(frame, clause).to_dict("records") == [{"a": 3, "b": 5}]


# ---------------------------------------------------------------- the JSONL fast path

_VALUE = st.sampled_from([1, -2, None, "absent"])
_SPACING = st.sampled_from(['"{k}": {v}', '"{k}":{v}', '"{k}" :  {v}'])


@st.composite
def _jsonl_lines(draw: st.DrawFn) -> str:
    """JSON lines with values, nulls and absent keys, spaced in several ways,
    sometimes with a nested object holding ``"x": null`` (which must not
    count as the top-level key)."""
    lines = []
    for t in range(draw(st.integers(1, 8))):
        parts = [f'"type": "{draw(st.sampled_from(["A", "B"]))}"', f'"t": {t}']
        for key, value in (("x", draw(_VALUE)), ("s", draw(st.sampled_from(['"a"', None, "absent"])))):
            if value != "absent":
                parts.append(draw(_SPACING).format(k=key, v="null" if value is None else value))
        if draw(st.integers(0, 3)) == 0:
            parts.append('"extra": {"x": null, "s": null}')
        order = draw(st.permutations(parts))
        lines.append("{" + ", ".join(order) + "}\n")
    return "".join(lines)


@settings(max_examples=60, deadline=None)
@given(_jsonl_lines())
def test_the_jsonl_fast_path_reads_nulls_as_the_line_reader_does(text: str) -> None:
    """pyarrow cannot tell a null from an absent key: the fast path must give
    what reading line by line gives (a null value, or a missing attribute)."""
    import sharp_cer.events.loaders as loaders

    fast_batch, fast_report = load_jsonl(text, SCHEMA)
    slow_read = loaders._read_jsonl_block
    try:
        loaders._read_jsonl_block = lambda *args: None  # type: ignore[assignment]
        slow_batch, slow_report = load_jsonl(text, SCHEMA)
    finally:
        loaders._read_jsonl_block = slow_read
    assert [fast_batch.row(i) for i in range(len(fast_batch))] == [slow_batch.row(i) for i in range(len(slow_batch))]
    assert fast_report.dead_letters == slow_report.dead_letters


def test_the_jsonl_fast_path_takes_a_block_with_nulls() -> None:
    """A null no longer sends its block line by line: the fast path reads it
    (counted by whether pyarrow's reader was used)."""
    import sharp_cer.events.loaders as loaders

    text = jsonl({"type": "A", "x": None, "s": "a", "t": 1}, {"type": "A", "x": 2, "s": None, "t": 2})
    real = loaders._read_jsonl_block
    used = []

    def spy(*args: object) -> object:
        found = real(*args)  # type: ignore[arg-type]
        used.append(found is not None)
        return found

    loaders._read_jsonl_block = spy  # type: ignore[assignment]
    try:
        batch, _ = load_jsonl(text, SCHEMA)
    finally:
        loaders._read_jsonl_block = real
    assert used == [True]
    assert batch.columns["x"].to_list() == [None, 2] and batch.columns["s"].to_list() == ["a", None]
