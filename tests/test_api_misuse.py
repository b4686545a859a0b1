"""Wrong types into the public API raise a SharpCerError saying what was
expected and what arrived, never a raw Python exception (issue 33 items 9
and 10): a table of misuse cases, one entry point each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from sharp_cer.api import Detector, matches_to_arrow
from sharp_cer.errors import SharpCerError
from sharp_cer.events.match import Match
from sharp_cer.language import Schema, parse_query, parse_stream_declarations, parse_workload

S = "CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { x:int, t:primary_time } }"
Q = "SELECT * WHERE A ; B WITHIN 3 EVENTS"
s = Schema.parse(S)
df = pd.DataFrame({"type": ["A", "B", "A"], "x": [1, 2, 3], "t": [1, 2, 3]})


def det() -> Detector:
    return Detector.from_queries([("q", Q)], s)


CASES: dict[str, Callable[[], Any]] = {
    "schema None": lambda: Schema.parse(None),
    "schema int": lambda: Schema.parse(123),
    "schema bytes": lambda: Schema.parse(b"x"),
    "schema dict": lambda: Schema.parse({"a": 1}),
    "workload None": lambda: parse_workload(None),
    "workload int": lambda: parse_workload(123),
    "workload dict": lambda: parse_workload({"workload": {}}),
    "query text None": lambda: parse_query(None),
    "query text bytes": lambda: parse_query(Q.encode()),
    "declarations None": lambda: parse_stream_declarations(None),
    "from_queries schema None": lambda: Detector.from_queries([("q", Q)], None),
    "from_queries schema dict": lambda: Detector.from_queries([("q", Q)], {"A": {"x": "int"}}),
    "from_queries schema text": lambda: Detector.from_queries([("q", Q)], S),
    "queries None": lambda: Detector.from_queries(None, s),
    "queries str": lambda: Detector.from_queries(Q, s),
    "query None": lambda: Detector.from_queries([("q", None)], s),
    "query int": lambda: Detector.from_queries([("q", 5)], s),
    "name None": lambda: Detector.from_queries([(None, Q)], s),
    "name int": lambda: Detector.from_queries([(1, Q)], s),
    "name dup": lambda: Detector.from_queries([("q", Q), ("q", Q)], s),
    "name empty": lambda: Detector.from_queries([("", Q)], s),
    "pair short": lambda: Detector.from_queries([("q",)], s),
    "list of str": lambda: Detector.from_queries([Q], s),
    "dict of queries": lambda: Detector.from_queries({"q": Q}, s),
    "feed list of dicts": lambda: det().feed([{"type": "A", "x": 1, "t": 1}]),
    "feed dict of lists": lambda: det().feed({"type": ["A"], "x": [1], "t": [1]}),
    "feed str": lambda: det().feed("A,1,1\n"),
    "feed ndarray": lambda: det().feed(np.array([["A", 1, 1]])),
    "feed None": lambda: det().feed(None),
    "feed series": lambda: det().feed(df["x"]),
    "arrivals now": lambda: det().feed(df, arrivals="now"),
    "arrivals short": lambda: det().feed(df, arrivals=[0.0]),
    "arrivals 2d": lambda: det().feed(df, arrivals=[[0.0, 1.0, 2.0]]),
    "arrivals strs": lambda: det().feed(df, arrivals=["a", "b", "c"]),
    "arrivals nan": lambda: det().feed(df, arrivals=[0.0, float("nan"), 1.0]),
    "quota str": lambda: det().feed(df, quota="5"),
    "quota negative": lambda: det().feed(df, quota=-1),
    "emit not callable": lambda: det().feed(df, emit="x"),
    "feed_lines list of dicts": lambda: det().feed_lines([{"type": "A"}]),
    "feed_lines arrivals short": lambda: det().feed_lines(df, arrivals=[0.0]),
    "events_of None": lambda: det().events_of(None),
    "events_of str": lambda: det().events_of("m"),
    "events_of dict": lambda: det().events_of({"query": "q"}),
    "to_arrow dicts": lambda: matches_to_arrow([{"query": "q"}]),
    "to_arrow None": lambda: matches_to_arrow(None),
    "to_arrow one match": lambda: matches_to_arrow(Match("q", 0, 1, (0, 1), {})),
    "to_arrow str": lambda: matches_to_arrow("q"),
    "lateness str": lambda: Detector.from_queries([("q", Q)], s, allowed_lateness="5").feed(df),
    "lateness negative": lambda: Detector.from_queries([("q", Q)], s, allowed_lateness=-1).feed(df),
    "tenants list": lambda: Detector.from_queries([("q", Q)], s, tenants=["t"]),
    "from_workload None": lambda: Detector.from_workload(None),
    "from_workload str": lambda: Detector.from_workload("w.toml"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_misuse_raises_a_sharp_cer_error_saying_what_arrived(name: str) -> None:
    with pytest.raises(SharpCerError) as caught:
        CASES[name]()
    message = str(caught.value)
    assert "expected" in message or "takes" in message or "needs" in message or "must" in message


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 30


def test_duplicate_names_are_refused_as_the_workload_loader_does() -> None:
    with pytest.raises(SharpCerError) as api:
        Detector.from_queries([("q", Q), ("r", Q), ("q", Q)], s)
    workload = f"""
[workload]
name = "w"
schema = "{S}"
[[query]]
name = "q"
text = "{Q}"
[[query]]
name = "r"
text = "{Q}"
[[query]]
name = "q"
text = "{Q}"
"""
    with pytest.raises(SharpCerError) as loader:
        parse_workload(workload)
    for words in ("two queries are named q", "a distinct name per query", "(also query 1)", "rename one"):
        assert words in str(api.value) and words in str(loader.value)


def test_the_messages_name_what_arrived() -> None:
    with pytest.raises(SharpCerError, match="found list of dict"):
        det().feed([{"type": "A", "x": 1, "t": 1}])
    with pytest.raises(SharpCerError, match="expected 3, found 1"):
        det().feed(df, arrivals=[0.0])
    with pytest.raises(SharpCerError, match="query q: expected the query's text"):
        Detector.from_queries([("q", None)], s)
    # an Arrow record batch is taken as a table
    assert det().feed(pa.record_batch({"type": ["A", "B"], "x": [1, 2], "t": [1, 2]}))[0].events == (0, 1)
