"""Running out of memory while matching (an explosive query: ``A ; B+ ; C``
over a long window completes 2^50 matches at one event) is the engine
layer's ``MatchingMemoryError`` (a ``SharpCerError`` and a ``MemoryError``)
saying what, why and the fix, not the compiled core's raw
``MemoryError: std::bad_alloc``; the CLI prints it and exits 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sharp_cer.cli import main
from sharp_cer.engine import Engine, MatchingMemoryError, native
from sharp_cer.errors import EngineError, SharpCerError
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan

SCHEMA = "CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int }, EVENT C { k:int } }"
QUERY = "SELECT * WHERE A ; B+ ; C WITHIN 60 EVENTS"
EVENTS = "A,1\n" + "B,1\n" * 50 + "C,1\n"
#: the explosive batch in a process whose address space is capped 100 MB above what it holds
CAPPED = f"""
import resource
from sharp_cer.engine import Engine, MatchingMemoryError
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan
s = Schema.parse({SCHEMA!r})
engine = Engine(compile_plan([("q", parse_and_check({QUERY!r}, s))]))
assert engine.runners[0].core is not None
batch = load_csv({EVENTS!r}, s)[0]
size = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + (100 << 20), resource.RLIM_INFINITY))
try:
    engine.process(batch)
except MatchingMemoryError as exc:
    print(str(exc.__cause__))
    print(exc)
"""


@pytest.mark.skipif(not native.available() or not Path("/proc/self/status").exists(), reason="compiled core, Linux")
def test_the_compiled_cores_bad_alloc_is_a_matching_memory_error() -> None:
    done = subprocess.run([sys.executable, "-c", CAPPED], capture_output=True, text=True, timeout=120)
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stderr[-2000:]
    assert lines[0] == "std::bad_alloc"  # what the core raised, kept as the cause
    assert lines[1] == "error: out of memory while matching a batch of 52 events"
    assert any("hint:" in line for line in lines[2:])


def test_the_pure_engines_memory_error_too(monkeypatch: pytest.MonkeyPatch) -> None:
    s = Schema.parse(SCHEMA)
    engine = Engine(compile_plan([("q", parse_and_check(QUERY, s))]))
    for runner in engine.runners:
        runner.core = None

    def exhausted(*_: object) -> None:
        raise MemoryError

    monkeypatch.setattr(engine.runners[0], "step", exhausted)
    with pytest.raises(MatchingMemoryError) as caught:
        engine.process(load_csv(EVENTS, s)[0])
    assert isinstance(caught.value, EngineError) and isinstance(caught.value, SharpCerError)
    assert isinstance(caught.value, MemoryError) and caught.value.events == 52


def test_the_cli_says_it_in_one_message_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "s.core").write_text(SCHEMA)
    (tmp_path / "q.ceql").write_text(QUERY)
    (tmp_path / "e.csv").write_text(EVENTS)

    def exhausted(*_: object) -> None:
        raise MemoryError("std::bad_alloc")

    monkeypatch.setattr(Engine, "_process", exhausted)
    monkeypatch.chdir(tmp_path)
    code = main(["match", "--schema", "s.core", "--query", "q.ceql", "--events", "e.csv", "--out", "m.jsonl"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: out of memory while matching a batch of 52 events\n") and "Traceback" not in err
