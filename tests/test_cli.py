"""The sharp-cer command line: exit codes, stdout/stderr contract, demo."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sharp_cer.cli import main

ROOT = Path(__file__).parent.parent
SCHEMA = "CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { x:int, t:primary_time } }\n"


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "s.core").write_text(SCHEMA)
    (tmp_path / "good.ceql").write_text("SELECT * FROM S WHERE A ; B FILTER A[x > 1] WITHIN 5 EVENTS\n")
    (tmp_path / "nowindow.ceql").write_text("SELECT * FROM S WHERE A ; B\n")
    (tmp_path / "bad.ceql").write_text("SELECT * FROM S\nWHERE A ; B FILTER A[y > 1] WITHIN 5 EVENTS\n")
    return tmp_path


def test_check_valid_files(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--schema", str(files / "s.core"), str(files / "good.ceql"), str(files / "s.core")])
    out, err = capsys.readouterr()
    assert code == 0
    assert out.splitlines() == [f"ok {files / 'good.ceql'}", f"ok {files / 's.core'}: 2 event types"]
    assert err == ""


def test_warnings_go_to_stderr_and_exit_zero(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", str(files / "s.core"), str(files / "nowindow.ceql")])
    out, err = capsys.readouterr()
    assert code == 0
    assert f"{files / 'nowindow.ceql'}:1:23: warning: query has no WITHIN" in err
    assert f"ok {files / 'nowindow.ceql'}" in out


def test_broken_query_exits_two_with_caret(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--schema", str(files / "s.core"), str(files / "good.ceql"), str(files / "bad.ceql")])
    out, err = capsys.readouterr()
    assert code == 2
    assert f"ok {files / 'good.ceql'}" in out  # the other files are still checked
    assert err.splitlines()[:3] == [
        f"{files / 'bad.ceql'}:2:22: error: event type A has no attribute 'y'",
        "  2 | WHERE A ; B FILTER A[y > 1] WITHIN 5 EVENTS",
        "    |                      ^",
    ]


def test_query_without_schema(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(files / "good.ceql")]) == 2
    assert "no schema" in capsys.readouterr().err


def test_unknown_kind_and_missing_file(files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (files / "x.txt").write_text("hello")
    assert main(["check", str(files / "x.txt"), str(files / "missing.toml")]) == 2
    err = capsys.readouterr().err
    assert "unknown kind of file '.txt'" in err and "cannot read the workload file" in err


def test_every_example_workload_checks(capsys: pytest.CaptureFixture[str]) -> None:
    configs = sorted(str(p) for p in (ROOT / "configs").glob("*.toml"))
    assert len(configs) >= 3
    assert main(["check", *configs]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.spark
def test_demo_checks_workloads_and_runs_them_on_spark(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["demo", "--configs", str(ROOT / "configs"), "--out", str(tmp_path), "--events", "1500", "--master", "local[2]"]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    written = sorted(p.name for p in tmp_path.glob("*.csv"))
    assert written == [
        "card_fraud.csv",
        "device_heartbeats.csv",
        "iot_sensors.csv",
        "shared_logins.csv",
        "stock_trading.csv",
    ]
    assert all(len((tmp_path / name).read_text().splitlines()) == 1500 for name in written)
    assert sorted(p.name for p in tmp_path.glob("*.png")) == [
        "card_fraud.png",
        "device_heartbeats.png",
        "iot_sensors.png",
        "shared_logins.png",
        "stock_trading.png",
    ]
    # the in-process engine is the yardstick: Spark found the same matches per query
    assert out.count("same matches per query: yes") == 5 and "per query: NO" not in out
    # tenants who name their variables apart share their rules' beginnings (configs/shared_logins.toml)
    assert "shared plan: 8 prefix states, 17 if each query ran alone (1 query group;" in out
    assert "core_benchmark_q1" in out and "bin_attack" in out and "per tenant: globex-cards" in out


def test_console_entry_point_runs(files: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sharp_cer.cli", "check", "--schema", str(files / "s.core"), str(files / "bad.ceql")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2 and result.stdout == "" and "^" in result.stderr


@pytest.mark.parametrize("engine", [[], ["--engine", "core"], ["--engine", "reference"]])
def test_match_prints_json_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str], engine: list[str]) -> None:
    (tmp_path / "s.core").write_text("CREATE STREAM S { EVENT SELL { p:int }, EVENT BUY { p:int } }")
    (tmp_path / "not_sell.ceql").write_text("SELECT * WHERE NOT(SELL) ; BUY ; SELL WITHIN 5 EVENTS")
    (tmp_path / "events.csv").write_text("SELL,1\nBUY,2\nBUY,oops\nBUY,3\nSELL,4\n")
    code = main(
        [
            "match",
            "--schema",
            str(tmp_path / "s.core"),
            "--query",
            str(tmp_path / "not_sell.ceql"),
            "--events",
            str(tmp_path / "events.csv"),
            *engine,
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0
    # position 2 is dead-lettered; NOT(SELL) opens at 1 or 3: BUY then SELL after it
    assert out.splitlines() == [
        '{"query": "not_sell", "tenant": null, "start": 1, "end": 4, "events": [3, 4], '
        '"vars": {"BUY": [3], "SELL": [4]}}',
    ]
    assert "mistyped" in err and "not_sell=1" in err


def test_match_runs_strategies_on_both_engines_alike(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.core").write_text("CREATE STREAM S { EVENT SELL { p:int }, EVENT BUY { p:int } }")
    (tmp_path / "next.ceql").write_text("SELECT NEXT * WHERE BUY ; SELL WITHIN 5 EVENTS")
    (tmp_path / "events.csv").write_text("BUY,1\nBUY,2\nSELL,3\n")
    args = ["match", "--schema", str(tmp_path / "s.core"), "--query", str(tmp_path / "next.ceql")]
    args += ["--events", str(tmp_path / "events.csv")]
    outputs = []
    for engine in ("core", "reference"):
        assert main([*args, "--engine", engine]) == 0
        outputs.append(capsys.readouterr().out)
    # NEXT keeps the match whose earliest differing event is its own: BUY 0
    assert outputs[0] == outputs[1] and outputs[0].count("\n") == 1 and '"events": [0, 2]' in outputs[0]


def test_match_count_equals_the_reference_count(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.core").write_text("CREATE STREAM S { EVENT A { p:int }, EVENT B { p:int } }")
    (tmp_path / "kleene.ceql").write_text("SELECT * WHERE A ; B+ WITHIN 30 EVENTS")
    (tmp_path / "events.csv").write_text("A,1\n" + "B,1\n" * 12)
    args = ["match", "--schema", str(tmp_path / "s.core"), "--query", str(tmp_path / "kleene.ceql")]
    args += ["--events", str(tmp_path / "events.csv"), "--count"]
    outputs = []
    for engine in ("core", "reference"):
        assert main([*args, "--engine", engine]) == 0
        outputs.append(capsys.readouterr().out)
    # every non-empty subset of the 12 B events, each ending at its last B
    assert outputs[0] == outputs[1] == '{"query": "kleene", "count": 4095}\n'
