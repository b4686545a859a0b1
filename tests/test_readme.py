"""The README tells the truth: its Python example runs as written, and
neither it nor the code's docstrings point outside the repository."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()


def _python_block(after: str) -> str:
    """The first ```python block after the line starting with ``after``."""
    tail = README[README.index(after) :]
    match = re.search(r"```python\n(.*?)```", tail, re.DOTALL)
    assert match is not None
    return match.group(1)


def test_the_python_example_runs_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # a fresh clone: the example reads configs/
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_python_block("From Python (the"), "README.md", "exec"), {})
    lines = printed.getvalue().splitlines()
    assert lines[0].startswith("flip 0 1 {'BUY': [")  # BUY at 0, SELL at 1: the one match
    assert lines[1] == "<DataFrame>: 3 rows read, 2 accepted, 1 dead-lettered (unknown_type 1)"


def test_the_snapshot_example_runs_as_written() -> None:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_python_block("An engine's state is apart"), "README.md", "exec"), {})
    # both A (0 and 1) before the snapshot pair with the B at 2 after it, as in one uninterrupted run
    assert printed.getvalue().splitlines() == ["[(0, 2), (1, 2)]"]


def test_nothing_points_outside_the_repository() -> None:
    texts = {"README.md": README}
    for package in ("sharp_cer", "planner", "shedding"):
        texts |= {str(p.relative_to(ROOT)): p.read_text() for p in (ROOT / package).rglob("*.py")}
    outside = {name for name, text in texts.items() if "../shared" in text or "DESIGN.md" in text}
    assert outside == set()


def test_no_stale_statements() -> None:
    assert "next issue" not in README
    assert "Engine(budget=" not in README
