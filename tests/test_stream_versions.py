"""A Spark stream's move to a changed workload inside the running query
(issue 39), without a Spark session: the driver's watcher (what it takes,
restarts for or refuses, and what it writes: the version's job, the
history, the control file) and stage 1 (``Sequencer``: the version from
the first position of the micro-batch that reads the control file, the
same after a crash and a redone micro-batch, or a restart with the new
workload). The whole path on Spark, with a SIGKILL, is
``tests/test_stream_update.py``."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from sharp_cer.language import Workload, load_workload
from tests.test_update import toml, workload

pytest.importorskip("pyspark")

BY_K = "SELECT * WHERE A ; B PARTITION BY [k] WITHIN 5 EVENTS"
ALL = "SELECT * WHERE A ; C WITHIN 5 EVENTS"


def _watcher(tmp_path: Path, queries: dict[str, str], **options: Any) -> Any:
    from sharp_cer.spark.stream import StreamSettings, _Watcher, check_checkpoint

    spec = tmp_path / "w.toml"
    spec.write_text(toml(queries))
    first = workload(queries)
    registry = str(tmp_path / "ck")
    key_groups = check_checkpoint(registry, first, default=2)
    control = str(tmp_path / "ck" / "control")
    return spec, _Watcher(first, spec, registry, control, StreamSettings(), key_groups, **options)


def _asked(tmp_path: Path) -> list[str]:
    return sorted(p.read_text() for p in (tmp_path / "ck" / "control").glob("version-*"))


def test_a_change_moves_inside_the_running_query_a_new_lane_too_and_other_types_restart(tmp_path: Path) -> None:
    from sharp_cer.spark.stream import checkpoint_history, stage_one
    from sharp_cer.spark.stream_versions import load

    spec, watcher = _watcher(tmp_path, {"p": BY_K, "a": ALL})
    assert not watcher.changed()  # nothing touched
    spec.write_text(toml({"p": BY_K, "q": BY_K.replace("5 EVENTS", "7 EVENTS")}))  # a removed, q added by [k]
    assert not watcher.changed()  # no restart: taken inside the running query
    versions, lanes = checkpoint_history(str(tmp_path / "ck"))
    assert [v["number"] for v in versions] == [0, 1] and versions[1]["in_stream"]
    assert versions[1]["change"].startswith("query a removed") and "query q added" in versions[1]["change"]
    assert _asked(tmp_path) == ["version 1\n"]
    job = load(str(tmp_path / "ck"), 1)
    assert job.version == 1 and job.lanes == (("p", "q"), ()) and lanes == [("k",), ()]  # the lane by no key, empty
    assert [q.name for q in watcher.current.queries] == ["p", "q"]
    spec.write_text(toml({"p": BY_K, "q": BY_K, "a": ALL}))  # the lane by no key back: it is still routed
    assert not watcher.changed() and _asked(tmp_path) == ["version 1\n", "version 2\n"]
    spec.write_text(toml({"p": BY_K, "j": BY_K.replace("[k]", "[j]")}))  # a lane the query did not start with
    assert not watcher.changed() and len(_asked(tmp_path)) == 3  # inside too: stage 1 routes it
    versions, lanes = checkpoint_history(str(tmp_path / "ck"))
    assert lanes == [("k",), (), ("j",)] and stage_one(str(tmp_path / "ck")) == [("j",)]
    assert load(str(tmp_path / "ck"), 3).lanes == (("p",), (), ("j",))
    # a lane Spark routes reading other event types (D, of stream U): the caller restarts the query
    spec.write_text(
        toml({"p": BY_K, "j": BY_K.replace("[k]", "[j]"), "d": "SELECT * FROM U WHERE D ; D WITHIN 2 EVENTS"})
    )
    assert watcher.changed() and len(_asked(tmp_path)) == 3
    assert [q.name for q in watcher.next.queries] == ["p", "j", "d"]


def test_a_lane_reading_other_event_types_is_not_taken_inside_the_query(tmp_path: Path) -> None:
    # D is in another stream: a query FROM U in the lane by no key reads types the lane is not routed
    spec, watcher = _watcher(tmp_path, {"a": "SELECT * FROM S WHERE A ; C WITHIN 5 EVENTS"}, restart=False)
    spec.write_text(toml({"a": "SELECT * FROM S WHERE A ; C WITHIN 5 EVENTS", "d": "SELECT * FROM U WHERE D"}))
    assert not watcher.changed() and len(watcher.refusals) == 1  # detect_stream's watcher cannot restart
    error = watcher.refusals[0]["error"]
    assert "cannot take this change: the lane no key reads other event types" in error
    assert "restart the query with the new workload" in error and _asked(tmp_path) == []


def test_a_bad_file_is_refused_located_and_kept_and_a_fixed_one_moves_inside(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from sharp_cer.spark.stream import checkpoint_history, workload_refusals

    spec, watcher = _watcher(tmp_path, {"p": BY_K})
    spec.write_text(toml({"p": BY_K, "q": BY_K.replace("WITHIN", "WITHN")}))
    with caplog.at_level("ERROR", logger="sharp_cer"):
        assert not watcher.changed()
    refused = workload_refusals(str(tmp_path / "ck"))  # what `run_stream`'s summary and summary.json list
    assert len(refused) == 1 and refused == watcher.refusals
    assert "w.toml:" in refused[0]["error"] and "^" in refused[0]["error"]
    assert "every query runs on as before" in caplog.text and "w.toml:" in caplog.text
    assert _asked(tmp_path) == [] and [q.name for q in watcher.current.queries] == ["p"]
    spec.write_text(toml({"p": BY_K, "q": BY_K}))  # fixed
    assert not watcher.changed() and _asked(tmp_path) == ["version 1\n"]
    assert [v["number"] for v in checkpoint_history(str(tmp_path / "ck"))[0]] == [0, 1]


# ---------------------------------------------------------------- stage 1
class _Value:
    """A value state of a fake handle."""

    def __init__(self) -> None:
        self.value: tuple[Any, ...] | None = None

    def exists(self) -> bool:
        return self.value is not None

    def get(self) -> tuple[Any, ...] | None:
        return self.value

    def update(self, value: tuple[Any, ...]) -> None:
        self.value = tuple(value)


class _Handle:
    """The state a ``Sequencer`` sees (a committed micro-batch's: ``copy``)."""

    def __init__(self, states: dict[str, _Value] | None = None) -> None:
        self.states = states or {}

    def getValueState(self, name: str, schema: str) -> _Value:
        return self.states.setdefault(name, _Value())

    def copy(self) -> _Handle:
        copied = {}
        for name, state in self.states.items():
            copied[name] = _Value()
            copied[name].value = state.value
        return _Handle(copied)


def _sequencer(w: Workload, number: int, registry: str, handle: _Handle) -> Any:
    """Stage 1 of a query started with version ``number`` (``w``), as ``_engines`` makes it."""
    from sharp_cer.spark.columns import LETTER_COLUMNS
    from sharp_cer.spark.prepare import attribute_kinds
    from sharp_cer.spark.stream import StreamSettings, checkpoint_history, stage_one, stream_job
    from sharp_cer.spark.stream_input import carried_columns
    from sharp_cer.spark.stream_processors import Sequencer
    from sharp_cer.spark.stream_versions import every_route

    columns = ["__kind", "__file", "__local", "__line", "__arrived", "__text", "__ts", "__prev", "__route",
               *LETTER_COLUMNS, "__stream", *(n for n, _ in carried_columns(attribute_kinds(w.schema)))]  # fmt: skip
    job = stream_job(w, StreamSettings(), 2, checkpoint_history(registry)[1], number)
    ones = stage_one(registry)
    sequencer = Sequencer(w, every_route(job, 2), columns, None, 10, 2, number, registry, job, ones)
    sequencer.init(handle)
    return sequencer


def _micro_batch(w: Workload, name: str, lines: list[str], asked: int | None = None) -> pd.DataFrame:
    """Stage 0's rows of one file (and of a control file asking for version ``asked``), as stage 1 takes them."""
    from sharp_cer.spark.columns import ARRIVED, CONTROL, EVENT, FILE, LETTER_COLUMNS, ROUTE, STREAM_KEY
    from sharp_cer.spark.prepare import LoadSpec, attribute_kinds
    from sharp_cer.spark.stream_input import INT_KINDS, NONE, null_flag, parse_files

    files = {"value": ["\n".join(lines) + "\n"], FILE: [name], ARRIVED: [0], CONTROL: [False]}
    if asked is not None:
        files = {k: [*v, {"value": f"version {asked}\n", FILE: "ctl", ARRIVED: 0, CONTROL: True}[k]]
                 for k, v in files.items()}  # fmt: skip
    spec = LoadSpec(w.schema, "csv", w.allowed_lateness)
    frame = pa.Table.from_batches(parse_files(spec, iter([pa.record_batch(files)]))).to_pandas()
    frame["__ts"] = frame["__ts"].fillna(NONE).astype("int64")
    frame["__prev"] = frame["__prev"].fillna(NONE).astype("int64")
    frame[ROUTE] = [[0] if kind == EVENT else [] for kind in frame["__kind"]]
    frame[STREAM_KEY] = 0
    # the event's columns as ``stream._carried`` selects them: an int one 0 where null, with its null flag
    carried = []
    for i, (name, kind) in enumerate(attribute_kinds(w.schema).items()):
        carried.append(name)
        if kind in INT_KINDS:
            frame[null_flag(i)] = frame[name].isna()
            frame[name] = frame[name].fillna(0).astype("int64")
            carried.append(null_flag(i))
    return frame[["__kind", FILE, "__local", "__line", ARRIVED, "__text", "__ts", "__prev", ROUTE,
                  *LETTER_COLUMNS, STREAM_KEY, "type", *carried]]  # fmt: skip


def _told(out: pd.DataFrame) -> list[tuple[int, Any]]:
    rows = out[out["__kind"] == "version"]
    return [(int(s), t) for s, t in zip(rows["__seq"], rows["__text"], strict=True)]


def test_stage_one_moves_at_the_first_position_of_the_micro_batch_that_reads_the_control_file(
    tmp_path: Path,
) -> None:
    from sharp_cer.spark.stream import StreamSettings, check_checkpoint, record_version, stream_job
    from sharp_cer.spark.stream_versions import save

    # version 1 adds q in a lane of its own (by [j]): stage 1 routes it, from the switch on
    first, second = workload({"p": BY_K}), workload({"p": BY_K, "q": BY_K.replace("[k]", "[j]")})
    registry = str(tmp_path / "ck")
    check_checkpoint(registry, first, default=2)
    save(registry, stream_job(second, StreamSettings(), 2, [("k",)], 1))

    def lines(at: int) -> list[str]:
        return [f"A,{i % 2},0,0,{at + i}" for i in range(4)]

    handle = _Handle()
    out = next(
        _sequencer(first, 0, registry, handle).handleInputRows((0,), iter([_micro_batch(first, "f0", lines(0))]), None)
    )
    assert _told(out) == [] and sorted(out[out["__kind"] == "event"]["__seq"]) == [0, 1, 2, 3]
    committed = handle.copy()  # micro-batch 0 committed
    record_version(registry, second, "query q added", [("j",)], in_stream=True)  # the driver, then the control file
    batch = _micro_batch(first, "f1", lines(4), asked=1)
    out = next(_sequencer(first, 0, registry, handle).handleInputRows((0,), iter([batch]), None))
    assert _told(out) == [(4, "1")]  # from the micro-batch's first position, version 1's job in the registry
    assert sorted(out[out["__kind"] == "event"]["__seq"]) == [4, 5, 6, 7]
    # every event (j = 0) to lane 0 as stage 0 routed it, and to lane 1 by its key's CRC-32: [0] -> bucket 1
    assert zlib.crc32(b"[0]") % 2 == 1
    assert [list(r) for r in out[out["__kind"] == "event"]["__route"]] == [[0, 3]] * 4
    assert [list(r) for r in out[out["__kind"] == "version"]["__route"]] == [[0, 1, 2, 3]]
    assert json.loads(handle.states["cursor"].value[2])["query q"]  # the state keeps the version it runs
    later = next(
        _sequencer(first, 0, registry, handle).handleInputRows((0,), iter([_micro_batch(first, "f2", lines(8))]), None)
    )
    assert _told(later) == []  # once
    # the driver killed before micro-batch 1 committed: redone, it reads the same control file
    redone = next(_sequencer(first, 0, registry, committed.copy()).handleInputRows((0,), iter([batch]), None))
    assert _told(redone) == [(4, "1")]
    # ... or restarted with the new workload (version 1 in the history): the same position, its own workload
    restarted = next(_sequencer(second, 1, registry, committed.copy()).handleInputRows((0,), iter([batch]), None))
    assert _told(restarted) == [(4, None)]
    assert out["__seq"].tolist() == redone["__seq"].tolist() == restarted["__seq"].tolist()
    routed = [[list(r) for r in frame["__route"]] for frame in (out, redone, restarted)]
    assert routed[0] == routed[1] == routed[2]  # lane 1 stays stage 1's after a restart (out of Spark's expression)


def test_a_shedding_stream_takes_a_change_inside_and_refuses_a_fraction_bound(tmp_path: Path) -> None:
    from sharp_cer.spark.stream import StreamSettings, _Watcher, check_checkpoint
    from sharp_cer.spark.stream_key_group import KeyGroupStream
    from sharp_cer.spark.stream_versions import load

    def shed(queries: dict[str, str], bound: str) -> str:
        return toml(queries).replace('tenant = "t"\n', f'tenant = "t"\nlatency_bound = "{bound}"\n')

    spec = tmp_path / "w.toml"
    spec.write_text(shed({"p": BY_K}, "50ms"))
    first = load_workload(spec)
    registry = str(tmp_path / "ck")
    key_groups = check_checkpoint(registry, first, default=1, shedder="sharp")
    settings = StreamSettings(shedder="sharp")
    watcher = _Watcher(first, spec, registry, str(tmp_path / "ck" / "control"), settings, key_groups)
    spec.write_text(shed({"p": BY_K, "q": BY_K.replace("5 EVENTS", "6 EVENTS")}, "80ms"))
    assert not watcher.changed() and _asked(tmp_path) == ["version 1\n"] and not watcher.refusals
    # a key group of the stream moves its shedding detector: q shed to its bound, p's bound in place
    group = KeyGroupStream(watcher.started, lane=0)
    line = '{{"type": "{}", "x": 0, "k": 0, "j": 0, "t": {}}}'
    group.release([line.format("A", 0)], [0], [0], now_ms=0)
    group.switch(load(registry, 1), 1)
    group.release([line.format("B", 1)], [1], [0], now_ms=0)
    assert group.shedder is not None and {n: r["bound_ms"] for n, r in group.shedder.report().items()} == {
        "p": 80,
        "q": 80,
    }
    spec.write_text(shed({"p": BY_K, "q": BY_K.replace("5 EVENTS", "6 EVENTS")}, "40%"))
    assert not watcher.changed() and len(watcher.refusals) == 1 and "fraction" in watcher.refusals[0]["error"]
