"""``sharp-cer match`` checks the ``--events`` path before it parses the
workload: a wrong path fails at once (parsing and checking the queries
cost most of a small run's start-up), with the same message as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharp_cer.cli import main

WRONG = [("missing.csv", "no such events file"), ("e.txt", "unknown events format")]


@pytest.mark.parametrize(("events", "said"), WRONG)
def test_a_wrong_events_path_is_reported_before_the_workload_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], events: str, said: str
) -> None:
    (tmp_path / "w.toml").write_text("this is not a workload [\n")  # parsing it would fail first
    (tmp_path / "e.txt").write_text("A,1\n")
    monkeypatch.chdir(tmp_path)
    assert main(["match", "w.toml", "--events", events, "--out", "m.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"{events}: error: {said}") and "w.toml" not in err
