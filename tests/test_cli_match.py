"""``sharp-cer match`` as a stream (issue 22): chunks, --limit inside an
enumeration, workloads with tenants and lateness, --out formats."""

from __future__ import annotations

import csv
import gc
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharp_cer.api import Detector
from sharp_cer.cli import main
from sharp_cer.events.loaders import iter_csv, load_csv
from sharp_cer.events.match import Match, line_template
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.reference import evaluate

SCHEMA = (
    "CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { x:int, t:primary_time }, "
    "EVENT C { t:primary_time } }"
)
WORKLOAD = f'''
[workload]
name = "w"
schema = "{SCHEMA}"
allowed_lateness = 5

[[query]]
name = "ab"
tenant = "acme"
text = "SELECT * WHERE A ; B FILTER A[x > 1] WITHIN 4 EVENTS"

[[query]]
name = "bc"
tenant = "globex"
text = "SELECT * WHERE B ; C WITHIN 10 [t]"
'''
QUERIES = [
    "SELECT * WHERE A ; B+ ; C WITHIN 6 EVENTS",
    "SELECT * WHERE A ; B FILTER A[x > 1] WITHIN 4 EVENTS",
    "SELECT * WHERE B ; C WITHIN 10 [t]",
    "SELECT * WHERE A : B OR C WITHIN 3 EVENTS",
]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 3), st.integers(0, 4)), max_size=40),
    st.integers(8, 200),
    st.sampled_from([0, 3]),
)
def test_chunk_by_chunk_equals_the_reference_on_the_whole(
    rows: list[tuple[str, int, int]], block_bytes: int, lateness: int
) -> None:
    schema = Schema.parse(SCHEMA)
    t = 0
    lines = []
    for kind, x, step in rows:
        t += step - 2  # times go back now and then: some events are late
        lines.append(f"{kind},{t}" if kind == "C" else f"{kind},{x},{t}")
    text = "".join(line + "\n" for line in lines) or "\n"
    queries = [(f"q{i}", parse_and_check(q, schema)) for i, q in enumerate(QUERIES)]
    detector = Detector.from_queries(queries, schema, allowed_lateness=lateness)
    streamed = []
    for batch, _ in iter_csv(text, schema, allowed_lateness=lateness, block_bytes=block_bytes):
        streamed += detector.feed(batch)
    whole, _ = load_csv(text, schema, allowed_lateness=lateness)
    expected = evaluate(queries, whole).matches
    assert sorted(m.key() for m in streamed) == sorted(m.key() for m in expected)
    assert [m.end for m in streamed] == sorted(m.end for m in streamed)


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "s.core").write_text(SCHEMA)
    (tmp_path / "w.toml").write_text(WORKLOAD)
    (tmp_path / "ab.ceql").write_text("SELECT * WHERE A ; B FILTER A[x > 1] WITHIN 4 EVENTS")
    (tmp_path / "bc.ceql").write_text("SELECT * WHERE B ; C WITHIN 10 [t]")
    # times: 10 11 12 4 (late by 8) 13 14
    (tmp_path / "e.csv").write_text("A,2,10\nB,1,11\nC,12\nA,5,4\nB,0,13\nC,14\n")
    return tmp_path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_a_workload_gives_tenants_and_its_lateness(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["match", str(files / "w.toml"), "--events", str(files / "e.csv")], capsys)
    assert code == 0
    rows = [json.loads(line) for line in out.splitlines()]
    # by end: A0;B1 (acme), B1;C2 (globex), A0;B4 (acme), B1;C5 and B4;C5 (globex); A at 3 is late (lateness 5)
    assert [(r["query"], r["tenant"], r["events"]) for r in rows] == [
        ("ab", "acme", [0, 1]),
        ("bc", "globex", [1, 2]),
        ("ab", "acme", [0, 4]),
        ("bc", "globex", [1, 5]),
        ("bc", "globex", [4, 5]),
    ]
    assert "late 1" in err
    # with the schema form, a lateness of 8 keeps the A at time 4: it then opens A3;B4
    args = [
        "match",
        "--schema",
        str(files / "s.core"),
        "--query",
        str(files / "ab.ceql"),
        "--events",
        str(files / "e.csv"),
    ]
    code, out, err = run([*args, "--allowed-lateness", "8"], capsys)
    assert code == 0 and "dead-lettered" in err and "late" not in err
    assert [json.loads(line)["events"] for line in out.splitlines()] == [[0, 1], [0, 4], [3, 4]]
    assert {json.loads(line)["tenant"] for line in out.splitlines()} == {None}


def test_out_files_hold_the_same_matches(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["match", str(files / "w.toml"), "--events", str(files / "e.csv")]
    _, printed, _ = run(base, capsys)
    expected = [json.loads(line) for line in printed.splitlines()]
    for suffix in ("jsonl", "csv", "parquet"):
        target = files / f"m.{suffix}"
        code, out, _ = run([*base, "--out", str(target)], capsys)
        assert code == 0 and out == ""
        if suffix == "jsonl":
            got = [json.loads(line) for line in target.read_text().splitlines()]
        elif suffix == "csv":
            with target.open(newline="") as handle:
                got = [
                    {
                        **r,
                        "start": int(r["start"]),
                        "end": int(r["end"]),
                        "events": json.loads(r["events"]),
                        "vars": json.loads(r["vars"]),
                    }
                    for r in csv.DictReader(handle)
                ]
        else:
            got = [{**r, "vars": {k: v for k, v in r["vars"]}} for r in pq.read_table(target).to_pylist()]
        if suffix != "jsonl":  # a column of its own, empty but for trailing absences' alerts
            assert {r.pop("deadline") for r in got} <= {"", None}
            assert {r.pop("version") for r in got} <= {"", None}  # set once a workload changed
        assert got == expected, suffix


def test_the_console_script_writes_every_match_before_it_exits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # main() of the console script freezes what is alive before the process
    # ends (to skip the teardown's collections): every line must still be
    # out, on a pipe and in a file, as main() in this process writes them
    # (whose matches other tests hold against the reference evaluator)
    (tmp_path / "s.core").write_text(SCHEMA)
    (tmp_path / "q.ceql").write_text(QUERIES[0])
    rows = [f"{'ABBBC'[i % 5]},{i % 4},{i}" if i % 5 != 4 else f"C,{i}" for i in range(600)]
    (tmp_path / "e.csv").write_text("\n".join(rows) + "\n")
    args = ["match", "--schema", "s.core", "--query", "q.ceql", "--events", "e.csv"]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        code, expected, said = run(args, capsys)
    assert code == 0 and len(expected.splitlines()) == 840  # 120 A;B;B;B;C rounds, 7 matches each
    command = [sys.executable, "-m", "sharp_cer.cli", *args]
    piped = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    subprocess.run([*command, "--out", "m.jsonl"], cwd=tmp_path, check=True, capture_output=True)
    assert piped.stdout == expected == (tmp_path / "m.jsonl").read_text()
    assert piped.stderr == said


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("3", "3")])
def test_the_console_script_starts_openblas_with_one_thread_unless_told(
    files: Path, given: str | None, expected: str
) -> None:
    # the setting works only if numpy is not imported before main() runs
    probe = (
        "import os, sys\n"
        "from sharp_cer.cli import main\n"
        "before = 'numpy' in sys.modules\n"
        "sys.argv = ['sharp-cer', *sys.argv[1:]]\n"
        "main()\n"
        "print(before, os.environ.get('OPENBLAS_NUM_THREADS'), file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    args = ["match", str(files / "w.toml"), "--events", str(files / "e.csv")]
    done = subprocess.run([sys.executable, "-c", probe, *args], env=env, capture_output=True, text=True, check=True)
    assert done.stderr.splitlines()[-1] == f"False {expected}"


def test_main_called_in_process_freezes_nothing(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    frozen = gc.get_freeze_count()
    code, _, _ = run(["match", str(files / "w.toml"), "--events", str(files / "e.csv")], capsys)
    assert code == 0 and gc.get_freeze_count() == frozen


def test_limit_stops_inside_one_enumeration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.core").write_text(SCHEMA)
    (tmp_path / "k.ceql").write_text("SELECT * WHERE A ; B+ ; C WITHIN 1000 EVENTS")
    # one C closes 2**60 - 1 matches: only an enumeration that stops can print 5
    (tmp_path / "e.csv").write_text("A,1,0\n" + "B,1,0\n" * 60 + "C,0\n")
    args = ["match", "--schema", str(tmp_path / "s.core"), "--query", str(tmp_path / "k.ceql")]
    code, out, err = run([*args, "--events", str(tmp_path / "e.csv"), "--limit", "5"], capsys)
    assert code == 0 and "stopped after --limit 5" in err
    rows = [json.loads(line) for line in out.splitlines()]
    assert len(rows) == 5 and len({tuple(r["events"]) for r in rows}) == 5
    for r in rows:  # each a true match: the A, a non-empty set of B, the C
        assert r["events"][0] == 0 and r["events"][-1] == 61 and len(r["events"]) >= 3
        assert r["vars"]["A"] == [0] and r["vars"]["C"] == [61] and r["vars"]["B"] == r["events"][1:-1]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--out", "m.csv", "--format", "parquet"], "the suffix says csv, --format says parquet"),
        (["--schema", "s.core"], "not both"),
        (["--allowed-lateness", "3"], "sets its own allowed_lateness"),
    ],
)
def test_inconsistent_match_options_exit_two(
    files: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code, out, err = run(["match", str(files / "w.toml"), "--events", str(files / "e.csv"), *extra], capsys)
    assert (code, out) == (2, "") and message in err and "Traceback" not in err


def test_two_queries_of_one_stem_are_refused(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "other").mkdir()
    (files / "other" / "ab.ceql").write_text("SELECT * WHERE A ; C WITHIN 4 EVENTS")
    args = ["match", "--schema", str(files / "s.core"), "--query", str(files / "ab.ceql")]
    code, out, err = run([*args, "--query", str(files / "other" / "ab.ceql"), "--events", str(files / "e.csv")], capsys)
    assert (code, out) == (2, "") and "two query files named 'ab'" in err and "rename one" in err


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from("ABC"), max_size=30), st.integers(0, 12), st.sampled_from([0, 3]))
def test_a_quota_stops_at_true_matches_and_skips_no_earlier_end(kinds: list[str], quota: int, query: int) -> None:
    schema = Schema.parse(SCHEMA)
    text = "".join(f"{k},{i}\n" if k == "C" else f"{k},{i % 3},{i}\n" for i, k in enumerate(kinds)) or "\n"
    batch, _ = load_csv(text, schema)
    checked = [("q", parse_and_check(QUERIES[query], schema))]
    everything = {m.key() for m in evaluate(checked, batch).matches}
    detector = Detector.from_queries(checked, schema)
    found = detector.feed(batch, quota=quota)
    assert len(found) == min(quota, len(everything)) and {m.key() for m in found} <= everything
    if found:  # one query group: every match ending before the last one out is out
        last = max(m.end for m in found)
        assert {k for k in everything if k[2] < last} <= {m.key() for m in found}


POSITIONS = st.lists(st.integers(0, 10**12), max_size=4).map(lambda p: tuple(sorted(p)))


@given(
    st.text(max_size=5),
    st.one_of(st.none(), st.text(max_size=5)),
    POSITIONS,
    st.dictionaries(st.text(max_size=3), POSITIONS, max_size=3),
)
def test_a_match_line_is_json_of_the_match(query: str, tenant: str | None, events: tuple[int, ...], held: dict) -> None:
    m = Match(query, 1, 2, events, held, tenant)
    record = {"query": query, "tenant": tenant, "start": 1, "end": 2, "events": list(events)}
    assert m.to_json() == json.dumps({**record, "vars": {k: list(v) for k, v in sorted(held.items())}})


NAMES = st.text(max_size=4) | st.sampled_from(["a", "b", "SELL", 'q"x', "\\", "é", "\n", "\u2028", "\ud800"])


@st.composite
def _held_slots(draw: st.DrawFn, events: int) -> dict[str, list[int]]:
    """Variables holding some of ``events`` output events, by index."""
    slots = st.lists(st.integers(0, max(events - 1, 0)), max_size=events).map(sorted) if events else st.just([])
    return draw(st.dictionaries(NAMES, slots, max_size=5))


@settings(max_examples=500)
@given(
    st.lists(
        st.tuples(
            NAMES | st.sampled_from(["{0}", "}", "a{", "%s"]),
            st.none() | NAMES,
            st.integers(0, 10**12),
            st.integers(0, 10**12),
            POSITIONS,
        ),
        max_size=6,
    ),
    st.data(),
)
def test_match_lines_equal_json_dumps_with_names_recurring(fields: list[tuple[Any, ...]], data: st.DataObject) -> None:
    # names recur across matches (the line pieces are cached per name and per
    # set of variables), in any insertion order, with characters JSON escapes
    # and braces a template must keep
    for query, tenant, start, end, events in fields:
        slots = data.draw(_held_slots(len(events)))
        held = {k: tuple(events[i] for i in v) for k, v in slots.items()}
        m = Match(query, start, end, events, held, tenant)
        record = {"query": query, "tenant": tenant, "start": start, "end": end, "events": list(events)}
        expected = json.dumps({**record, "vars": {k: list(v) for k, v in sorted(held.items())}})
        assert m.to_json() == expected
        assert line_template(query, tenant, len(events), slots).format(start, end, *events) == expected


def test_ctrl_c_stops_a_match_with_one_line_and_keeps_what_was_written(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Ctrl-C arrives as KeyboardInterrupt wherever the process is: here, as
    # the second chunk is fed (the first block read is 256 KiB)
    rows = [f"A,2,{i}" if i % 2 == 0 else f"B,1,{i}" for i in range(60_000)]
    (files / "long.csv").write_text("\n".join(rows) + "\n")
    fed = Detector.feed_lines
    calls = 0

    def interrupted(self: Detector, *args: Any, **kwargs: Any) -> list[str]:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise KeyboardInterrupt
        return fed(self, *args, **kwargs)

    args = ["match", "--schema", str(files / "s.core"), "--query", str(files / "ab.ceql"), "--events"]
    with pytest.MonkeyPatch.context() as patch:
        _, whole, _ = run([*args, str(files / "long.csv")], capsys)
        patch.setattr(Detector, "feed_lines", interrupted)
        code, out, err = run([*args, str(files / "long.csv")], capsys)
    assert code == 130 and calls == 2
    assert err.splitlines()[-1] == "sharp-cer: stopped by Ctrl-C; the matches written so far stand"
    assert whole.startswith(out) and len(out.splitlines()) < len(whole.splitlines())
