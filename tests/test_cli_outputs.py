"""Outputs never destroy inputs nor leave half-written files (issue 40 item 1):
``--out``, ``--stats``, ``--dot`` and ``--png`` onto an input are refused before
anything is opened, and outputs are written to a temporary file renamed into
place at the end (``sharp_cer.cli.outputs``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sharp_cer.cli import main
from sharp_cer.cli.outputs import atomic_output, check_outputs
from sharp_cer.errors import SharpCerError

SCHEMA = "CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }"
EVENTS = "type,x\nA,1\nB,2\nA,3\nB,4\n"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "s.core").write_text(SCHEMA)
    (tmp_path / "q.ceql").write_text("SELECT * WHERE A ; B WITHIN 3 EVENTS")
    (tmp_path / "ev.csv").write_text(EVENTS)
    (tmp_path / "ev.jsonl").write_text('{"type": "A", "x": 1}\n{"type": "B", "x": 2}\n')
    return tmp_path


def _match(files: Path, events: str, *more: str) -> list[str]:
    return ["match", "--schema", str(files / "s.core"), "--query", str(files / "q.ceql"), "--events", events, *more]


@pytest.mark.parametrize(
    "flag, target",
    [
        ("--out", "ev.csv"),
        ("--out", "./ev.csv"),
        ("--out", "link.csv"),  # a hard link to the events
        ("--out", "ev.jsonl"),
        ("--out", "q.ceql.jsonl"),  # a symlink to the query file
        ("--stats", "s.core"),
    ],
)
def test_an_output_onto_an_input_is_refused_and_the_input_kept(
    files: Path, capsys: pytest.CaptureFixture[str], flag: str, target: str
) -> None:
    os.link(files / "ev.csv", files / "link.csv")
    os.symlink(files / "q.ceql", files / "q.ceql.jsonl")
    before = {p.name: p.read_bytes() for p in files.iterdir()}
    events = str(files / ("ev.jsonl" if target == "ev.jsonl" else "ev.csv"))
    path = os.path.join(str(files), target)
    code = main(_match(files, events, flag, path))
    err = capsys.readouterr().err
    assert code == 2 and "is the input" in err and err.count("\n") <= 5
    assert {p.name: p.read_bytes() for p in files.iterdir()} == before


def test_out_and_stats_onto_one_file_are_refused(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        _match(files, str(files / "ev.csv"), "--out", str(files / "m.jsonl"), "--stats", str(files / "m.jsonl"))
    )
    assert code == 2 and "the same file" in capsys.readouterr().err
    assert not (files / "m.jsonl").exists()


def test_a_failed_run_leaves_the_old_output_untouched(
    files: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from sharp_cer.cli import match as command
    from sharp_cer.errors import SurfaceError

    out = files / "m.jsonl"
    out.write_text("old\n")

    def fails(*args: object) -> None:  # the run fails once its matches are written
        raise SurfaceError("the run failed at the end")

    with monkeypatch.context() as patch:
        patch.setattr(command, "_engine_outcome", fails)
        assert main(_match(files, str(files / "ev.csv"), "--out", str(out))) == 2
    assert out.read_text() == "old\n"
    assert [p.name for p in files.iterdir() if p.name.startswith(".")] == []
    capsys.readouterr()
    assert main(_match(files, str(files / "ev.csv"), "--out", str(out))) == 0
    assert out.read_text().count("\n") == 3 and "old" not in out.read_text()


def test_atomic_output_keeps_the_target_until_the_end(tmp_path: Path) -> None:
    target = tmp_path / "m.jsonl"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_output(str(target)) as temporary:
        temporary.write_text("half")
        assert target.read_text() == "old\n"
        raise RuntimeError("the run failed")
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["m.jsonl"]
    with atomic_output(str(target)) as temporary:
        temporary.write_text("new\n")
    assert target.read_text() == "new\n" and [p.name for p in tmp_path.iterdir()] == ["m.jsonl"]


def test_devices_are_written_in_place_and_never_compared() -> None:
    check_outputs(["/dev/null"], [("--out", "/dev/null")])
    with atomic_output("/dev/null") as path:
        assert str(path) == "/dev/null"


def test_explain_refuses_dot_onto_a_query(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = files / "q.ceql"
    before = query.read_text()
    code = main(["explain", "--schema", str(files / "s.core"), str(query), "--dot", str(query)])
    assert code == 2 and "--dot is the input" in capsys.readouterr().err
    assert query.read_text() == before


def test_check_outputs_names_the_flag_and_the_input(tmp_path: Path) -> None:
    source = tmp_path / "a.csv"
    source.write_text("x")
    with pytest.raises(SharpCerError, match=r"--plot is the input .*a\.csv"):
        check_outputs([None, str(source)], [("--plot", str(tmp_path / "sub" / ".." / "a.csv"))])
