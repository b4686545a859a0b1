"""benchmarks/bench_dense.py on a few events, pycer skipped: the counts its
``sharp-cer match`` children report against the same work done in-process
through the public API (the workload on its generated frame, not the CSV the
children read; the shapes' queries rewritten for the tape's own schema on its Parquet
file). No timing is checked."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
import bench_dense  # noqa: E402  (a script's module, found through the path above)
from core_tape import measure, tape  # noqa: E402

from sharp_cer.api import Detector  # noqa: E402
from sharp_cer.events.generators import generate  # noqa: E402
from sharp_cer.language import load_workload  # noqa: E402

pytestmark = pytest.mark.slow
EVENTS = 1500
WORKLOAD = "iot_sensors"


def _in_process_counts() -> Counter[str]:
    spec = load_workload(bench_dense.CONFIGS / f"{WORKLOAD}.toml")
    assert spec.generator is not None
    found = Detector.from_workload(spec).feed(generate(spec.generator, EVENTS, seed=0))
    return Counter(m.query for m in found)


def _shape_count(text: str) -> int:
    # the tape's own schema calls the time ``t`` and needs no stream name
    original = text.replace(" FROM S", "").replace("[stock_time]", "[t]")
    return int(measure([("q", original)], tape(EVENTS))["matches"])


def test_counts_are_the_in_process_counts(tmp_path: Path) -> None:
    script = [sys.executable, str(BENCHMARKS / "bench_dense.py"), "--events", str(EVENTS), "--repeat", "1"]
    shapes_run = "sell_buy_sell,any_any_name_volume,sell_buys_sell"
    options = [
        "--engine",
        "pure",
        "--workloads",
        WORKLOAD,
        "--no-alone",
        "--shapes",
        shapes_run,
        "--no-pycer",
        "--results",
        str(tmp_path),
        "--name",
        "t",
    ]
    done = subprocess.run([*script, *options], capture_output=True, text=True, check=True)
    document = json.loads((tmp_path / "t.json").read_text())
    rows = {row["name"]: row["pure"] for row in document["workloads"]}
    expected = _in_process_counts()
    assert sum(expected.values()) > 0  # events on which the workload finds something
    assert rows == {WORKLOAD: rows[WORKLOAD]}  # --no-alone: no query alone
    assert rows[WORKLOAD]["matches"] == sum(expected.values())
    shapes = {row["name"]: row for row in document["shapes"]}
    assert list(shapes) == shapes_run.split(",")
    assert all(row["pure"]["matches"] > 0 for row in shapes.values())
    assert {n: row["pure"]["matches"] for n, row in shapes.items()} == {
        n: _shape_count(bench_dense.SHAPES[n]) for n in shapes
    }
    assert all(row["pycer"] is None and row["ratio"] == {"pure": None} for row in shapes.values())
    assert "pycer skipped: --no-pycer given" in done.stderr
    assert f"| **{WORKLOAD}** |" in done.stdout and "| sell_buy_sell |" in done.stdout
    assert (tmp_path / "t.png").stat().st_size > 0


def test_a_query_alone_counts_what_it_counts_in_its_workload(tmp_path: Path) -> None:
    # the cut-down file of each query alone (in process: the same engine as the children)
    config = bench_dense.CONFIGS / f"{WORKLOAD}.toml"
    spec = load_workload(config)
    assert spec.generator is not None
    frame = generate(spec.generator, EVENTS, seed=0)
    expected = _in_process_counts()
    for query in spec.queries:
        alone = load_workload(bench_dense.workload_alone(config, query.name, tmp_path))
        assert [q.name for q in alone.queries] == [query.name]
        assert len(Detector.from_workload(alone).feed(frame)) == expected[query.name]


def test_an_unknown_shape_is_named() -> None:
    with pytest.raises(SystemExit, match="unknown shapes: nope"):
        bench_dense._names("buy_sell,nope", tuple(bench_dense.SHAPES), "shapes")


def test_doctests() -> None:
    assert doctest.testmod(bench_dense).failed == 0
