"""What a ``sharp-cer match`` process imports: a match over a small file
loads neither networkx (only PSD, explain and Kleene loops the state
numbering does not show build graphs) nor Spark nor pandas (pyarrow imports
it on its first conversion to or from numpy or Python values; the loaders
read and build Arrow buffers directly) nor pyarrow.compute (it builds ~300
wrappers as it is imported; the loaders call the kernels without it), and
still finds the matches the reference evaluator finds."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.reference import evaluate

SCHEMA = "CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }\n"
EVENTS = "A,1\nB,1\nA,2\nB,2\nB,1\n"
#: prints the heavy modules the match loaded, after its own output
PROBE = """import sys
from sharp_cer.cli import main
code = main(sys.argv[1:])
print(sorted(m for m in ("networkx", "pandas", "pyspark") if m in sys.modules), code, file=sys.stderr)
print("pyarrow.compute" in sys.modules, file=sys.stderr)
"""


def _write_events(path: Path) -> None:
    """EVENTS in the format of ``path``'s suffix."""
    rows = [line.split(",") for line in EVENTS.splitlines()]
    if path.suffix == ".csv":
        path.write_text(EVENTS)
    elif path.suffix == ".jsonl":
        path.write_text("".join(json.dumps({"type": t, "k": int(k)}) + "\n" for t, k in rows))
    else:
        table = pa.table({"type": [t for t, _ in rows], "k": [int(k) for _, k in rows]})
        pq.write_table(table, path)


@pytest.mark.parametrize(
    ("events", "query"),
    [
        ("e.csv", "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 4 EVENTS\n"),
        ("e.jsonl", "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 4 EVENTS\n"),
        ("e.parquet", "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 4 EVENTS\n"),
        ("e.csv", "SELECT * WHERE A ; B+ ; B WITHIN 4 EVENTS\n"),  # a Kleene loop with its skip state
    ],
)
def test_a_match_loads_no_heavy_module_it_does_not_need(tmp_path: Path, events: str, query: str) -> None:
    (tmp_path / "s.ceql").write_text(SCHEMA)
    (tmp_path / "q.ceql").write_text(query)
    _write_events(tmp_path / events)
    args = ["match", "--schema", "s.ceql", "--query", "q.ceql", "--events", events]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stderr.splitlines()[-2:] == ["[] 0", "False"]
    schema = Schema.parse(SCHEMA)
    expected = evaluate([("q", parse_and_check(query, schema))], load_csv(EVENTS, schema)[0]).matches
    found = [json.loads(line) for line in done.stdout.splitlines()]
    ends = sorted((m.end, m.start, list(m.events)) for m in expected)
    assert ends and [(m["end"], m["start"], m["events"]) for m in found] == ends


def test_a_match_with_like_loads_neither_pandas_nor_pyarrow_compute(tmp_path: Path) -> None:
    # LIKE is checked (RE2 must accept the pattern) and evaluated on Arrow
    # strings: both used pa.array(list) (which imports pandas) and the second
    # pyarrow.compute, 0.3-0.5 s of a small match
    schema = "CREATE STREAM S { EVENT A { k:int, z:string }, EVENT B { k:int } }\n"
    query = "SELECT * WHERE A ; B FILTER A[z LIKE '^HQ-'] PARTITION BY [k] WITHIN 4 EVENTS\n"
    events = "A,1,HQ-1\nB,1\nA,2,LAB-2\nB,2\nA,2,HQ-3\nB,2\n"
    (tmp_path / "s.ceql").write_text(schema)
    (tmp_path / "q.ceql").write_text(query)
    (tmp_path / "e.csv").write_text(events)
    args = ["match", "--schema", "s.ceql", "--query", "q.ceql", "--events", "e.csv"]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stderr.splitlines()[-2:] == ["[] 0", "False"]
    parsed = Schema.parse(schema)
    expected = evaluate([("q", parse_and_check(query, parsed))], load_csv(events, parsed)[0]).matches
    found = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(expected) == 2
    assert sorted((m["end"], m["start"]) for m in found) == sorted((m.end, m.start) for m in expected)


def test_a_match_imports_no_other_command_module(tmp_path: Path) -> None:
    # the parser registers the other commands by name and help only (``cli.parser``)
    (tmp_path / "s.ceql").write_text(SCHEMA)
    (tmp_path / "q.ceql").write_text("SELECT * WHERE A ; B WITHIN 4 EVENTS\n")
    _write_events(tmp_path / "e.csv")
    probe = PROBE + "print(sorted(m for m in sys.modules if m.startswith('sharp_cer.cli.')), file=sys.stderr)\n"
    args = ["match", "--schema", "s.ceql", "--query", "q.ceql", "--events", "e.csv"]
    command = [sys.executable, "-c", probe, *args]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    loaded = {name.removeprefix("sharp_cer.cli.") for name in ast.literal_eval(done.stderr.splitlines()[-1])}
    assert "match" in loaded and not loaded & {"check", "demo", "explain", "run", "stream"}
