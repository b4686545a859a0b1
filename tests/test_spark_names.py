"""The Spark side's names: key groups, lanes and the schema's one place.
Old names of 0.1 still work for one release, each with a
DeprecationWarning, and hand out the new objects; the modules of
sharp_cer/spark import each other without a cycle."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

from sharp_cer.language import parse_workload
from sharp_cer.spark import stream_key_group, worker
from sharp_cer.spark.stream import StreamSettings
from tests.test_spark import HAND_MADE


def test_the_old_stream_group_module_warns_and_is_the_new_one() -> None:
    sys.modules.pop("sharp_cer.spark.stream_group", None)
    with pytest.warns(DeprecationWarning, match="stream_key_group"):
        old = importlib.import_module("sharp_cer.spark.stream_group")
    assert old is stream_key_group
    assert old.__spec__ is not None and old.__spec__.name == "sharp_cer.spark.stream_key_group"
    assert old.check_live_bounds is stream_key_group.check_live_bounds
    with pytest.warns(DeprecationWarning, match="KeyGroupStream"):
        assert old.StreamGroup is stream_key_group.KeyGroupStream
    with pytest.warns(DeprecationWarning, match="KeyGroupRun"):
        assert worker.GroupRun is worker.KeyGroupRun
    with pytest.raises(AttributeError):
        _ = worker.NoSuchName


def test_stream_settings_take_and_give_the_old_groups_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match="key_groups"):
        old = StreamSettings(1.0, None, None, "sharp", 3, groups=4)
    assert old == StreamSettings(1.0, None, None, "sharp", 3, key_groups=4)
    with pytest.warns(DeprecationWarning, match="key_groups"):
        assert old.groups == 4
    assert StreamSettings(format="csv").key_groups is None  # the default stays: one per shuffle partition


def test_a_job_runs_its_key_groups_under_the_new_name() -> None:
    workload = parse_workload(HAND_MADE)
    job = worker.Job(workload, (("near_by_position",),), bin_width=10, key_groups=3)
    assert job.key_groups == 3


def test_sharp_cer_spark_has_no_import_cycle() -> None:
    """Every import between the modules of sharp_cer/spark, at import time,
    under TYPE_CHECKING or in a function, forms no cycle."""
    root = Path(worker.__file__).parent
    names = {p.stem for p in root.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for name in names:
        found: set[str] = set()
        for node in ast.walk(ast.parse((root / f"{name}.py").read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                found.update([node.module.split(".")[0]] if node.module else [a.name for a in node.names])
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sharp_cer.spark."):
                found.add((node.module or "").split(".")[2])
        graph[name] = (found & names) - {name}
    assert graph["summary"] and "pipeline" not in graph["summary"]  # the cycle this test guards against

    def cycle_from(node: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        for nxt in sorted(graph[node]):
            if nxt in path:
                return (*path[path.index(nxt) :], nxt)
            found = cycle_from(nxt, (*path, nxt))
            if found:
                return found
        return None

    cycles = [c for c in (cycle_from(n, (n,)) for n in sorted(graph)) if c]
    assert cycles == []
