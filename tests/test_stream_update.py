"""Rules that change while a Spark stream runs (issue 39): the workload
file changes under ``sharp-cer stream --watch`` three times: a change the
running query takes inside itself at its next micro-batch (no restart), a
file with an error (refused; the stream runs on), and a change with a new
lane (a graceful restart from the checkpoint). The driver is then killed
(SIGKILL) while a micro-batch runs, and restarted to the end. The
committed output must be the rule of ``Detector.update`` (the reference
evaluator's rule 15, which ``tests/test_update.py`` holds the in-process
detector to) with each change at its position: every unchanged query's
matches those of an uninterrupted run, an added query's those over the
events from its position on, a removed query's those that end before it,
a replaced query both, a tenant changed in place carried from there on;
nothing lost, nothing doubled."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import pytest

from sharp_cer.api import Detector
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Workload, parse_workload
from tests.test_spark import HAND_MADE, _key, csv_file, hand_made_events
from tests.test_stream import committed_matches

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def spark() -> Any:
    from sharp_cer.spark.session import spark_session
    from sharp_cer.spark.stream import stream_conf

    return spark_session("local[2]", **{**stream_conf(), "spark.sql.shuffle.partitions": "4"})


#: the query the first change removes
_DROPPED = 'name = "no_c_between"\ntenant = "t1"\ntext = "SELECT * WHERE A ; ABSENT(C) ; B WITHIN 8 EVENTS"\n'

#: taken inside the running query: removed: no_c_between; replaced: near_by_position (another window);
#: tenant in place: next_by_key; added: one query in the lane by [k], one in a lane of its own (by [x],
#: which stage 1 routes from then on)
INSIDE = HAND_MADE.replace(_DROPPED + "[[query]]\n", "").replace(
    "PARTITION BY [k] WITHIN 6 EVENTS", "PARTITION BY [k] WITHIN 9 EVENTS"
).replace('name = "next_by_key"\ntenant = "t3"', 'name = "next_by_key"\ntenant = "t4"') + (
    '[[query]]\nname = "added_by_key"\ntenant = "t5"\ntext = "SELECT * WHERE A ; A PARTITION BY [k] WITHIN 5 EVENTS"\n'
    '[[query]]\nname = "added_by_x"\ntenant = "t5"\n'
    'text = "SELECT * WHERE B ; C ; B PARTITION BY [x] WITHIN 6 EVENTS"\n'
)
#: refused (a type error): every query runs on
BAD = INSIDE + '[[query]]\nname = "typo"\ntext = "SELECT * WHERE A ; B FILTER A[y > 1] WITHIN 5 EVENTS"\n'
#: taken inside too: added_by_key removed, added_by_x's tenant moved
SECOND = INSIDE.replace(
    '[[query]]\nname = "added_by_key"\ntenant = "t5"\ntext = "SELECT * WHERE A ; A PARTITION BY [k] WITHIN 5 EVENTS"\n',
    "",
).replace('name = "added_by_x"\ntenant = "t5"', 'name = "added_by_x"\ntenant = "t6"')
#: the workload the stream restarts with after the kill (a restart with changed queries continues)
CHANGED = SECOND + '[[query]]\nname = "after_restart"\ntext = "SELECT * WHERE B ; A PARTITION BY [k] WITHIN 4 EVENTS"\n'


def _replace(spec: Path, text: str) -> None:
    """Change the watched workload file at once (written aside, then renamed over it), as a
    deployment does: a file truncated and then written can be read empty in between, and the
    watcher would rightly refuse that too."""
    aside = spec.with_name(f".{spec.name}.new")
    aside.write_text(text)
    os.replace(aside, spec)


def _rule(steps: list[tuple[Workload, int]], events: Any) -> Counter[tuple[Any, ...]]:
    """The matches of each workload over the events from its position
    (the first's: 0) to the next's, moved by ``Detector.update`` (tenants
    as each match came out)."""
    detector = Detector.from_workload(steps[0][0])
    found = []
    for (workload, position), (_, end) in zip(steps, [*steps[1:], (None, events.positions.max() + 1)], strict=True):
        if position:
            detector.update(workload)
        found += detector.feed(events.take(np.flatnonzero((events.positions >= position) & (events.positions < end))))
    return Counter((m.tenant, *_key(m.query, m.start, m.end, m.events, m.vars)) for m in found)


def _read_by_batch(query: Path, source: int) -> dict[int, list[str]]:
    """The files the query's file source ``source`` read, by micro-batch: its
    log (compacted or not) numbers them by the source's own offsets, which
    the query's offset log maps to micro-batches."""
    by_offset: dict[int, list[str]] = {}
    for log in (query / "sources" / str(source)).glob("[0-9]*"):
        for line in log.read_text().splitlines()[1:]:
            entry = json.loads(line)
            by_offset.setdefault(int(entry["batchId"]), []).append(Path(urlparse(entry["path"]).path).name)
    found: dict[int, list[str]] = {}
    before = -1
    for batch in sorted(int(p.name) for p in (query / "offsets").glob("[0-9]*")):
        lines = (query / "offsets" / str(batch)).read_text().splitlines()
        if len(lines) < 3 + source or lines[2 + source] == "-":
            continue
        offset = int(json.loads(lines[2 + source])["logOffset"])
        found[batch] = [name for o in range(before + 1, offset + 1) for name in by_offset.get(o, [])]
        before = offset
    return found


def test_a_watched_workload_changed_while_the_stream_runs_then_a_kill_stays_exactly_once_by_the_rule(
    spark: Any, tmp_path: Path
) -> None:
    """``sharp-cer stream --watch``: the workload file changes while the
    stream runs; the running query takes each change at its next
    micro-batch (no restart; one adds a lane, which stage 1 routes); a bad
    file is refused in between; the driver is then killed (SIGKILL) while a
    micro-batch runs, and restarted to the end with another workload: the
    committed output is the rule, each change from the first position of
    the micro-batch that read its control file, the last from the first
    position after the micro-batches committed before the kill."""
    from sharp_cer.spark.stream import StreamSettings, checkpoint_history, run_stream, stage_one, workload_refusals

    texts = (HAND_MADE, INSIDE, SECOND, CHANGED)
    steps = [parse_workload(text) for text in texts]
    whole = csv_file(steps[0], hand_made_events(1200, 5), tmp_path / "all.csv").read_text().splitlines()
    source, checkpoint, out = tmp_path / "source", tmp_path / "ck", tmp_path / "out"
    source.mkdir()
    rows_in = {}
    for k in range(12):
        part = source / f"part-{k:02d}.csv"
        part.write_text("\n".join(whole[k * 100 : (k + 1) * 100]) + "\n")
        rows_in[part.name] = len(whole[k * 100 : (k + 1) * 100])
        os.utime(part, (1_700_000_000 + k, 1_700_000_000 + k))
    spec = tmp_path / "w.toml"
    spec.write_text(HAND_MADE)
    argv = ["stream", str(spec), "--watch", "--source", str(source), "--checkpoint", str(checkpoint), "--out",
            str(out), "--trigger", "0.5", "--max-files", "1", "--timeout", "600", "--master", "local[2]"]  # fmt: skip
    code = "import sys; from sharp_cer.cli import main; sys.exit(main(sys.argv[1:]))"
    progress = (tmp_path / "progress.txt").open("w")  # the moves' lines, for a reader
    driver = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=progress,
    )
    query = checkpoint / "query"
    offsets, commits = query / "offsets", query / "commits"

    def batches(folder: Path) -> set[int]:
        return {int(p.name) for p in folder.glob("[0-9]*")} if folder.is_dir() else set()

    def control_batch(number: int) -> int | None:
        """The micro-batch that read version ``number``'s control file, once committed."""
        read = _read_by_batch(query, 1)
        found = [b for b, names in sorted(read.items()) if any(n.startswith(f"version-{number}-") for n in names)]
        return found[0] if found and found[0] in batches(commits) else None  # committed: before the next change

    def wait(done: Any) -> Any:
        while time.time() < deadline and driver.poll() is None:
            value = done()
            if value is not None and value is not False:
                return value
            time.sleep(0.02)
        return None

    deadline = time.time() + 500
    inside, in_flight = [], None
    try:
        wait(lambda: batches(commits) or None)
        _replace(spec, INSIDE)  # taken inside the running query
        inside.append(wait(lambda: control_batch(1)))
        _replace(spec, BAD)
        wait(lambda: workload_refusals(str(checkpoint)) or None)
        _replace(spec, SECOND)
        inside.append(wait(lambda: control_batch(2)))
        if inside[-1] is not None:
            in_flight = wait(
                lambda: next((b for b in sorted(batches(offsets) - batches(commits)) if b > inside[-1]), None)
            )
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        progress.close()
    assert None not in inside and in_flight is not None  # moved twice, then killed while a later micro-batch ran
    refused = workload_refusals(str(checkpoint))
    assert len(refused) == 1 and "w.toml:" in refused[0]["error"] and "^" in refused[0]["error"]
    run_stream(steps[3], str(source), str(checkpoint), str(out), StreamSettings(), spark)
    versions, lanes = checkpoint_history(str(checkpoint))
    read = _read_by_batch(query, 0)
    positions = [0] + [
        sum(rows_in[name] for b, names in read.items() if b < last for name in names)
        for last in (*inside, versions[3]["after_batch"] + 1)
    ]
    assert 0 < positions[1] < positions[2] <= positions[3] < len(whole)
    events = load_csv(str(tmp_path / "all.csv"), steps[0].schema)[0]
    truth = _rule(list(zip(steps, positions, strict=True)), events)
    assert committed_matches(out) == truth  # nothing lost, nothing doubled, each query by the rule
    names = Counter(key[1] for key in truth.elements())
    assert all(names[n] for n in ("added_by_key", "no_c_between", "near_by_position", "added_by_x", "after_restart"))
    assert [v["number"] for v in versions] == [0, 1, 2, 3] and lanes[-1] == ("x",)
    assert [bool(v.get("in_stream")) for v in versions] == [False, True, True, False]
    assert stage_one(str(checkpoint)) == [("x",)]  # routed by stage 1 for good, also after the restart


def test_detect_stream_takes_a_watched_change_inside_the_running_query_and_refuses_a_bad_one(
    spark: Any, tmp_path: Path
) -> None:
    """``detect_stream(..., workload_source=PATH)``: a change (a new lane
    among others) is taken inside the running query at the micro-batch
    that reads its control file (here the second file's: the rule with
    the change at its first row); a bad file is refused, kept in the
    history; every query runs on."""
    from sharp_cer.spark import detect_stream
    from sharp_cer.spark.stream import checkpoint_history, request_flush, stop_watching, workload_refusals

    before, after = parse_workload(HAND_MADE), parse_workload(INSIDE)
    frame = hand_made_events(400, 23)
    csv_file(before, frame, tmp_path / "all.csv")
    folder, control, spec = tmp_path / "in", tmp_path / "ck" / "control", tmp_path / "w.toml"
    folder.mkdir()
    spec.write_text(HAND_MADE)
    numbered = frame.assign(n=range(len(frame)))

    def arrive(part: int) -> None:
        rows = numbered.iloc[part * 200 : (part + 1) * 200]
        (folder / f".{part}.json").write_text(rows.to_json(orient="records", lines=True))
        (folder / f".{part}.json").rename(folder / f"{part}.json")

    events = spark.readStream.schema("type string, k bigint, x bigint, j bigint, t bigint, n bigint").json(str(folder))
    alerts = detect_stream(events, before, order_by=["n"], control=str(control), workload_source=spec)

    def run() -> None:
        writer = alerts.writeStream.format("parquet").option("path", str(tmp_path / "out"))
        query = writer.option("checkpointLocation", str(tmp_path / "ck" / "query"))
        query.trigger(availableNow=True).start().awaitTermination()

    try:
        arrive(0)
        run()
        _replace(spec, INSIDE)
        deadline = time.time() + 60
        while not list(control.glob("version-1-*")) and time.time() < deadline:
            time.sleep(0.05)
        _replace(spec, BAD)
        while not workload_refusals(str(control / "_versions")) and time.time() < deadline:
            time.sleep(0.05)
    finally:
        stop_watching(str(control))
    arrive(1)
    run()  # the second file and the control file: the change from the second file's first row
    request_flush(str(control.parent))
    run()
    versions, _ = checkpoint_history(str(control / "_versions"))
    assert [v["number"] for v in versions] == [0, 1] and versions[1]["in_stream"]
    refused = workload_refusals(str(control / "_versions"))
    assert len(refused) == 1 and "has no attribute 'y'" in refused[0]["error"] and "w.toml:" in refused[0]["error"]
    events_in = load_csv(str(tmp_path / "all.csv"), before.schema)[0]
    truth = _rule([(before, 0), (after, 200)], events_in)
    assert committed_matches(tmp_path / "out") == truth
    names = Counter(key[1] for key in truth.elements())
    assert names["added_by_key"] and names["added_by_x"]
