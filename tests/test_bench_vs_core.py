"""benchmarks/bench_vs_core.py on a small tape: its sharp-cer counts (and
pycer's, where pycer's environment exists) against the shapes' original
queries run in-process on the tape's Parquet file (another loader, the
tape's own schema, the query text before it was rewritten for CORE's
schema); pycer skipped with a clear message when it cannot be had (no
network, no Python 3.13). The reference evaluator is no oracle here: its
brute force runs out of memory on these shapes at a few hundred events."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import bench_vs_core  # noqa: E402  (a script's module, found through the path above)
from bench_core_operators import QUERIES  # noqa: E402
from core_tape import measure, tape  # noqa: E402

pytestmark = pytest.mark.slow
EVENTS = 3000
SHAPES = ",".join(bench_vs_core.SHAPES)


def _expected_counts() -> dict[str, int]:
    """Matches per shape of the original queries, in-process on the tape's Parquet file."""
    return {name: measure([(name, QUERIES[name])], tape(EVENTS))["matches"] for name in bench_vs_core.SHAPES}


def _run(tmp_path: Path, *options: str) -> tuple[dict[str, Any], str, str]:
    script = [sys.executable, str(BENCHMARKS / "bench_vs_core.py"), "--events", str(EVENTS), "--runs", "1"]
    done = subprocess.run(
        [*script, "--queries", SHAPES, "--results", str(tmp_path), "--name", "t", *options],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads((tmp_path / "t.json").read_text()), done.stdout, done.stderr


def test_sharp_cer_counts_are_the_in_process_counts_and_pycer_is_skipped_when_asked(tmp_path: Path) -> None:
    document, table, messages = _run(tmp_path, "--no-pycer")
    rows = {row["query"]: row for row in document["results"][str(EVENTS)]}
    expected = _expected_counts()
    assert sum(expected.values()) > 100  # a tape on which the shapes find something
    assert {name: row["sharp_cer"]["matches"] for name, row in rows.items()} == expected
    assert all(row["pycer"] is None and row["equal_counts"] is None for row in rows.values())
    assert "pycer skipped: --no-pycer given" in messages
    load = document["loading"][str(EVENTS)]
    assert load["pyarrow"]["rows"] == load["sharp_cer"]["rows"] == EVENTS
    assert "| names |" in table and (tmp_path / "t.png").stat().st_size > 0


def test_pycer_cannot_be_had_without_python_3_13(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_vs_core, "PYCER_VENV", tmp_path / "venv")
    python, why = bench_vs_core.pycer_python(str(tmp_path / "no-such-python3.13"))
    assert python is None
    assert why.startswith("no working python3.13 found") and "--pycer-python" in why


@pytest.mark.skipif(
    not (bench_vs_core.PYCER_VENV / "bin" / "python").exists(),
    reason="pycer's environment is made by running benchmarks/bench_vs_core.py (it needs the package registry)",
)
def test_pycer_counts_are_the_in_process_counts(tmp_path: Path) -> None:
    document, _, _ = _run(tmp_path)
    rows = {row["query"]: row for row in document["results"][str(EVENTS)]}
    assert {name: row["pycer"]["matches"] for name, row in rows.items()} == _expected_counts()
    assert all(row["equal_counts"] for row in rows.values())


def test_doctests() -> None:
    assert doctest.testmod(bench_vs_core).failed == 0
