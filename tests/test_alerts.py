"""Alerts with their events (issue 35): each match with its events'
attributes grouped by variable, each event once; the same record from the
Python API and ``sharp-cer match --with-events``; CSV and Parquet in the
flat form, one row per event. Expected values are written by hand."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from sharp_cer.api import Detector
from sharp_cer.cli import main
from sharp_cer.errors import SurfaceError
from sharp_cer.language import Schema

SCHEMA_TEXT = (
    "CREATE STREAM S { EVENT LOGIN { user:string, ip:string, t:primary_time }, "
    "EVENT LOGOUT { user:string, t:primary_time } }"
)
SCHEMA = Schema.parse(SCHEMA_TEXT)
BRUTE = "SELECT * WHERE LOGIN AS l ; LOGIN AS ok PARTITION BY [user] WITHIN 10 SECONDS"


def test_each_event_once_under_its_named_variable_across_feeds() -> None:
    detector = Detector.from_queries([("pair", BRUTE)], SCHEMA, with_events=True)
    first = pd.DataFrame({"type": ["LOGIN"], "user": ["ann"], "ip": ["10.0.0.1"], "t": [0]})
    assert detector.feed(first) == []
    second = pd.DataFrame({"type": ["LOGIN"], "user": ["ann"], "ip": ["10.0.0.2"], "t": [10**9]})
    (alert,) = detector.alerts(detector.feed(second))
    # the events of LOGIN (a type's own variable) are l's and ok's: listed once, under those
    assert alert["attributes"] == {
        "l": [{"type": "LOGIN", "position": 0, "user": "ann", "ip": "10.0.0.1", "t": 0}],
        "ok": [{"type": "LOGIN", "position": 1, "user": "ann", "ip": "10.0.0.2", "t": 10**9}],
    }
    assert alert["vars"] == {"LOGIN": [0, 1], "l": [0], "ok": [1]}  # the positions stay as before
    flat = detector.flat_alerts(detector.matches)
    assert [(r["variable"], r["position"], r["ip"]) for r in flat] == [("l", 0, "10.0.0.1"), ("ok", 1, "10.0.0.2")]


def test_without_with_events_an_earlier_feed_is_not_kept() -> None:
    detector = Detector.from_queries([("pair", BRUTE)], SCHEMA)
    detector.feed(pd.DataFrame({"type": ["LOGIN"], "user": ["ann"], "ip": ["a"], "t": [0]}))
    found = detector.feed(pd.DataFrame({"type": ["LOGIN"], "user": ["ann"], "ip": ["b"], "t": [1]}))
    with pytest.raises(SurfaceError, match="with_events=True"):
        detector.alerts(found)


def test_with_events_forgets_what_no_live_match_holds() -> None:
    detector = Detector.from_queries(
        [("pair", "SELECT * WHERE LOGIN AS l ; LOGIN AS ok PARTITION BY [user] WITHIN 1 SECONDS")],
        SCHEMA,
        with_events=True,
    )
    for t in range(300):
        found = detector.feed(pd.DataFrame({"type": ["LOGIN"], "user": ["ann"], "ip": [str(t)], "t": [t * 10**9]}))
        assert [a["attributes"]["l"][0]["ip"] for a in detector.alerts(found)] == ([str(t - 1)] if t else [])
    # a window of 1 s: older logins are cut from the live runs, and their feeds forgotten
    assert len(detector._batches) < 30


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "s.core").write_text(SCHEMA_TEXT)
    (tmp_path / "q.ceql").write_text(
        "SELECT l WHERE LOGIN AS l ; ABSENT(LOGOUT[user = l.user]) WITHIN 500 MILLISECONDS"
    )
    # ann logs out in time; bob does not: his alert fires at eve's login (1 s)
    (tmp_path / "e.csv").write_text(
        "LOGIN,ann,1.1.1.1,0\nLOGIN,bob,2.2.2.2,100000000\nLOGOUT,ann,200000000\nLOGIN,eve,3.3.3.3,1000000000\n"
    )
    return tmp_path


def _args(files: Path, *more: str) -> list[str]:
    return [
        "match", "--schema", str(files / "s.core"), "--query", str(files / "q.ceql"),
        "--events", str(files / "e.csv"), "--with-events", *more,
    ]  # fmt: skip


def test_match_with_events_writes_one_record_per_alert(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(files)) == 0
    out, err = capsys.readouterr()
    (record,) = [json.loads(line) for line in out.splitlines()]
    assert record["query"] == "q" and record["deadline"] == 600_000_000 and record["end"] == 1
    assert record["attributes"] == {"l": [{"type": "LOGIN", "position": 1, "user": "bob", "ip": "2.2.2.2", "t": 10**8}]}
    assert "pending at the end of the input: q: 1" in err  # eve's


def test_csv_and_parquet_get_the_flat_form(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_args(files, "--out", str(files / "a.csv"))) == 0
    assert main(_args(files, "--out", str(files / "a.parquet"))) == 0
    capsys.readouterr()
    with (files / "a.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["variable"], r["position"], r["user"], r["ip"], r["deadline"]) for r in rows] == [
        ("l", "1", "bob", "2.2.2.2", "600000000")
    ]
    table = pq.read_table(files / "a.parquet").to_pylist()
    assert [(r["variable"], r["position"], r["user"], r["t"], r["deadline"]) for r in table] == [
        ("l", 1, "bob", 10**8, 600_000_000)
    ]


def test_reference_and_engine_write_the_same_alerts(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["match", "--schema", str(files / "s.core"), "--query", str(files / "q.ceql"), "--events"]
    outputs = []
    for engine in ("core", "reference"):
        assert main([*base, str(files / "e.csv"), "--engine", engine, "--allowed-lateness", "0"]) == 0
        out, err = capsys.readouterr()
        assert "pending at the end of the input: q: 1" in err
        outputs.append([json.loads(line) for line in out.splitlines()])
    assert outputs[0] == outputs[1] and [r["deadline"] for r in outputs[0]] == [600_000_000]
