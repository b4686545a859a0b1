"""``match`` output bounded whatever the number of matches (issue 33 item 7):
matches reach the output as the engine enumerates them, in end order, held
in a fixed buffer (``engine.runtime.FLUSH_AT``, ``EVENT_BLOCK``), not a
chunk's list. The buffer sizes are made tiny here so that a few events
exercise them; what is measured is how many matches are held at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.api import Detector
from sharp_cer.cli import main
from sharp_cer.engine import runtime
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.reference import evaluate

SCHEMA = "CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int }, EVENT C { x:int } }"
QUERIES = [
    "SELECT * WHERE A ; B+ ; C WITHIN 8 EVENTS",
    "SELECT * WHERE B ; C WITHIN 5 EVENTS",
    "SELECT * WHERE A ; B FILTER A[x > 1] WITHIN 4 EVENTS",
    "SELECT * WHERE A : B OR C WITHIN 3 EVENTS",
]


@pytest.fixture
def tiny(monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    monkeypatch.setattr(runtime, "FLUSH_AT", 3)
    monkeypatch.setattr(runtime, "EVENT_BLOCK", 4)
    return 3, 4


def _text(rows: list[tuple[str, int]]) -> str:
    return "".join(f"{kind},{x}\n" for kind, x in rows) or "\n"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 3)), max_size=30))
def test_emitted_matches_are_the_returned_ones_in_the_same_order(rows: list[tuple[str, int]]) -> None:
    # events whose matches of one query are at most EVENT_BLOCK: the same
    # output, in the same order, as the whole batch's list
    schema = Schema.parse(SCHEMA)
    queries = [(f"q{i}", parse_and_check(q, schema)) for i, q in enumerate(QUERIES)]
    batch, _ = load_csv(_text(rows), schema)
    returned = Detector.from_queries(queries, schema).feed(batch)
    got: list[object] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "FLUSH_AT", 2)
        assert Detector.from_queries(queries, schema).feed(batch, emit=got.extend) == []
    assert got == returned
    assert sorted(m.key() for m in returned) == sorted(m.key() for m in evaluate(queries, batch).matches)


def test_an_event_with_many_matches_goes_out_in_blocks(tiny: tuple[int, int]) -> None:
    flush_at, block = tiny
    schema = Schema.parse(SCHEMA)
    queries = [("q", parse_and_check(QUERIES[0], schema))]
    # the C completes 2^4 - 1 = 15 matches (every non-empty subset of the B's)
    batch, _ = load_csv(_text([("A", 0), ("B", 1), ("B", 2), ("B", 3), ("B", 4), ("C", 5)]), schema)
    sizes: list[int] = []
    got: list[object] = []

    def emit(found: list[object]) -> None:
        sizes.append(len(found))
        got.extend(found)

    detector = Detector.from_queries(queries, schema)
    detector.feed(batch, emit=emit)
    # never more held than the buffer and one block of an event's matches
    assert max(sizes) <= flush_at - 1 + block and len(sizes) >= 15 // block
    expected = evaluate(queries, batch).matches
    assert len(got) == len(expected) == 15
    assert sorted(m.key() for m in got) == sorted(m.key() for m in expected)  # type: ignore[attr-defined]
    assert detector.engine.crowded_events == 1 and detector.engine.crowded_at == 5


def test_count_only_counts_an_event_in_blocks(tiny: tuple[int, int]) -> None:
    # a query with a cross-event filter is counted by enumerating: in blocks too
    schema = Schema.parse(SCHEMA)
    text = "SELECT * WHERE A ; B+ ; C FILTER A[x < 9] WITHIN 8 EVENTS"
    batch, _ = load_csv(_text([("A", 0), ("B", 1), ("B", 2), ("B", 3), ("B", 4), ("C", 5)]), schema)
    detector = Detector.from_queries([("q", text)], schema, count_only=True)
    detector.feed(batch)
    assert detector.counts == {"q": 15}


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "s.core").write_text(SCHEMA)
    for i, q in enumerate(QUERIES):
        (tmp_path / f"q{i}.ceql").write_text(q)
    rows = [("A", 2), ("B", 1), ("B", 2), ("C", 0), ("A", 3), ("B", 0), ("B", 1), ("B", 2), ("B", 3), ("C", 1)]
    (tmp_path / "e.csv").write_text(_text(rows))
    return tmp_path


def test_the_cli_writes_as_it_enumerates_with_the_same_output(
    files: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    queries = [a for i in range(len(QUERIES)) for a in ("--query", str(files / f"q{i}.ceql"))]
    args = ["match", "--schema", str(files / "s.core"), *queries, "--events", str(files / "e.csv")]
    assert main([*args, "--engine", "reference"]) == 0
    expected = capsys.readouterr().out.splitlines()
    from sharp_cer import sinks

    writes: list[int] = []
    real = sinks.MatchSink.write_lines

    def counted(self: sinks.MatchSink, lines: list[str]) -> None:
        writes.append(len(lines))
        real(self, lines)

    monkeypatch.setattr(sinks.MatchSink, "write_lines", counted)
    monkeypatch.setattr(runtime, "FLUSH_AT", 3)
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == expected  # the reference's order: by end, then query as given, start, events
    per_end: dict[int, int] = {}
    for line in expected:
        end = json.loads(line)["end"]
        per_end[end] = per_end.get(end, 0) + 1
    # held: the buffer, one event's matches, and the latest end's held back to be ordered by query
    assert len(expected) > 20 and len(writes) >= 4 and max(writes) <= 3 - 1 + 2 * max(per_end.values())
    assert "warning" not in err


def test_the_cli_warns_of_a_crowded_event_naming_limit_and_count(
    files: Path, capsys: pytest.CaptureFixture[str], tiny: tuple[int, int]
) -> None:
    args = ["match", "--schema", str(files / "s.core"), "--query", str(files / "q0.ceql")]
    assert main([*args, "--events", str(files / "e.csv")]) == 0
    out, err = capsys.readouterr()
    assert "warning: the event at position" in err and "--limit" in err and "--count" in err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [r["end"] for r in lines] == sorted(r["end"] for r in lines)
    assert main([*args, "--events", str(files / "e.csv"), "--engine", "reference"]) == 0
    expected = capsys.readouterr().out.splitlines()
    assert sorted(out.splitlines()) == sorted(expected)
