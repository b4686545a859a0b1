"""The in-process engine installs and runs without its extras: a fresh venv
gets ``pip install sharp-cer`` (base dependencies only, no PySpark, no
matplotlib, no pydot), and its ``check``, ``match``, ``explain`` and
Python ``Detector`` give what they give in the full environment; a Spark
or picture command there says which extra it needs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sharp_cer.api import Detector
from sharp_cer.events.generators import generate, write_core_csv
from sharp_cer.language import load_workload

ROOT = Path(__file__).parent.parent
WORKLOAD = ROOT / "configs" / "stock_trading.toml"
FULL = Path(sys.executable).parent  # this environment's bin/: the dev install, every extra in it

pytestmark = pytest.mark.slow

#: the Python API in the slim venv: the workload's matches per query over the generated events
DETECTOR = """
import json, sys
from sharp_cer import Detector, load_workload
from sharp_cer.events.generators import generate

workload = load_workload(sys.argv[1])
detector = Detector.from_workload(workload, history=False)
detector.feed(generate(workload.generator, int(sys.argv[2]), seed=0))
print(json.dumps(detector.counts))
"""


def _run(*argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    # no inherited venv or Python path: the slim venv sees only what was installed in it
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def slim(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a venv with ``pip install sharp-cer`` from this tree: base dependencies only."""
    tmp = tmp_path_factory.mktemp("slim")
    source = tmp / "src"  # a copy: pip builds in the source tree, and the repository stays clean
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("sharp_cer", "planner", "shedding"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    made = _run(sys.executable, "-m", "venv", tmp / "venv", cwd=tmp)
    assert made.returncode == 0, made.stderr
    bin_dir = tmp / "venv" / "bin"
    installed = _run(bin_dir / "python", "-m", "pip", "install", "-q", source, cwd=tmp)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return bin_dir


def test_the_extras_are_not_installed(slim: Path, tmp_path: Path) -> None:
    for module in ("pyspark", "matplotlib", "pydot"):
        tried = _run(slim / "python", "-I", "-c", f"import {module}", cwd=tmp_path)
        assert tried.returncode == 1 and f"No module named '{module}'" in tried.stderr
    # the installed package, not this tree's; its type hints, version and 0.1's alias packages with it
    shown = _run(
        slim / "python",
        "-I",
        "-W",
        "ignore::DeprecationWarning",
        "-c",
        "import importlib.metadata, pathlib, sharp_cer, planner, shedding; "
        "here = pathlib.Path(sharp_cer.__file__).parent; "
        "print(here.parent.name, (here / 'py.typed').is_file(), sharp_cer.__version__, "
        "importlib.metadata.version('sharp-cer'), planner.__name__, shedding.__name__)",
        cwd=tmp_path,
    )
    assert shown.stdout.split() == [
        "site-packages",
        "True",
        "0.2.0",
        "0.2.0",
        "sharp_cer.planner",
        "sharp_cer.shedding",
    ]


def test_check_match_and_explain_run_as_in_the_full_environment(slim: Path, tmp_path: Path) -> None:
    workload = load_workload(WORKLOAD)
    assert workload.generator is not None
    events = tmp_path / "events.csv"
    attributes = {e.name: list(e.attributes) for e in workload.schema.event_types()}
    write_core_csv(generate(workload.generator, 3000, seed=0), attributes, events)
    commands = [
        ["check", WORKLOAD],
        ["match", WORKLOAD, "--events", events, "--count"],
        ["match", WORKLOAD, "--events", events, "--limit", "40"],
    ]
    for command in commands:
        full = _run(FULL / "sharp-cer", *command, cwd=tmp_path)
        there = _run(slim / "sharp-cer", *command, cwd=tmp_path)
        assert full.returncode == 0, full.stderr
        assert (there.returncode, there.stdout) == (0, full.stdout)
    counted = _run(slim / "sharp-cer", *commands[1], cwd=tmp_path).stdout.splitlines()
    counts = [json.loads(line)["count"] for line in counted]
    assert len(counts) == len(workload.queries) and sum(counts) > 0  # a run that found matches

    figures = []
    for bin_dir in (FULL, slim):
        done = _run(bin_dir / "sharp-cer", "explain", WORKLOAD, "--generate", "2000", "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        found = json.loads(done.stdout)
        del found["planning_seconds"]  # a timing
        figures.append(found)
    assert figures[0] == figures[1]
    assert figures[1]["run"]["matches"] > 0


def test_the_python_detector_counts_as_in_the_full_environment(slim: Path, tmp_path: Path) -> None:
    there = _run(slim / "python", "-I", "-c", DETECTOR, WORKLOAD, "4000", cwd=tmp_path)
    assert there.returncode == 0, there.stderr
    workload = load_workload(WORKLOAD)
    assert workload.generator is not None
    here = Detector.from_workload(workload, history=False)
    here.feed(generate(workload.generator, 4000, seed=0))
    assert json.loads(there.stdout) == here.counts
    assert sum(here.counts.values()) > 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["run", str(WORKLOAD), "--generate", "10"],
            "error: sharp-cer run needs PySpark and matplotlib, which are not installed; "
            "fix: pip install 'sharp-cer[spark,plot]'",
        ),
        (
            ["explain", str(WORKLOAD), "--generate", "0", "--dot", "plan.dot"],
            "error: the plan's DOT graph (explain --dot) needs pydot, which is not installed; "
            "fix: pip install 'sharp-cer[plot]'",
        ),
    ],
)
def test_a_command_needing_an_extra_says_which(slim: Path, tmp_path: Path, argv: list[str], message: str) -> None:
    done = _run(slim / "sharp-cer", *argv, cwd=tmp_path)
    assert (done.returncode, done.stderr, done.stdout) == (2, message + "\n", "")
    imported = _run(slim / "python", "-I", "-c", "import sharp_cer.spark", cwd=tmp_path)
    assert imported.returncode == 1
    assert imported.stderr.splitlines()[-1] == (
        "sharp_cer.errors.MissingExtraError: error: sharp_cer.spark needs PySpark, which is not installed; "
        "fix: pip install 'sharp-cer[spark]'"
    )
