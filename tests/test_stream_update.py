"""Rules that change while a Spark stream runs (issue 39): the workload
file changes under ``sharp-cer stream --watch``, the stream moves to it
(a restart from its checkpoint with the new workload), its driver is then
killed (SIGKILL) while a micro-batch runs, and it restarts to the end. Its
committed output must be the rule of ``Detector.update`` (the reference
evaluator's rule 15, which ``tests/test_update.py`` holds the in-process
detector to): every unchanged query's matches those of an uninterrupted
run, an added query's those over the events from the restart's first
position on, a removed query's those that end before it, a replaced query
both, a tenant changed in place carried from there on; nothing lost,
nothing doubled."""

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


#: the query the changed workload removes
_DROPPED = 'name = "no_c_between"\ntenant = "t1"\ntext = "SELECT * WHERE A ; ABSENT(C) ; B WITHIN 8 EVENTS"\n'

#: removed: no_c_between; replaced: near_by_position (another window); tenant in place: next_by_key;
#: added: one query in the lane by [k], one in a lane of its own (by [x])
CHANGED = (
    HAND_MADE.replace(
        'name = "no_c_between"\ntenant = "t1"\ntext = "SELECT * WHERE A ; ABSENT(C) ; B WITHIN 8 EVENTS"\n[[query]]\n',
        "",
    )
    .replace("PARTITION BY [k] WITHIN 6 EVENTS", "PARTITION BY [k] WITHIN 9 EVENTS")
    .replace('name = "next_by_key"\ntenant = "t3"', 'name = "next_by_key"\ntenant = "t4"')
    + """[[query]]
name = "added_by_key"
tenant = "t5"
text = "SELECT * WHERE A ; A PARTITION BY [k] WITHIN 5 EVENTS"
[[query]]
name = "added_by_x"
tenant = "t5"
text = "SELECT * WHERE B ; C ; B PARTITION BY [x] WITHIN 6 EVENTS"
"""
)


def _rule(before: Workload, after: Workload, events: Any, position: int) -> Counter[tuple[Any, ...]]:
    """The matches of ``before`` over the events before ``position`` and of
    ``after`` from there on, by ``Detector.update`` (tenants as each match
    came out)."""
    detector = Detector.from_workload(before)
    found = detector.feed(events.take(np.flatnonzero(events.positions < position)))
    detector.update(after)
    found += detector.feed(events.take(np.flatnonzero(events.positions >= position)))
    return Counter((m.tenant, *_key(m.query, m.start, m.end, m.events, m.vars)) for m in found)


def test_a_watched_workload_changed_while_the_stream_runs_then_a_kill_stays_exactly_once_by_the_rule(
    spark: Any, tmp_path: Path
) -> None:
    """``sharp-cer stream --watch``: the workload file changes while the
    stream runs; the stream moves to it at a micro-batch boundary (a
    graceful restart from its checkpoint), is then killed (SIGKILL) while a
    micro-batch runs, and restarted to the end: the committed output is the
    rule with the change at the first position after the micro-batches
    committed before the move."""
    from sharp_cer.spark.stream import StreamSettings, checkpoint_history, run_stream

    before, after = parse_workload(HAND_MADE), parse_workload(CHANGED)
    whole = csv_file(before, hand_made_events(1200, 5), tmp_path / "all.csv").read_text().splitlines()
    source, checkpoint, out = tmp_path / "source", tmp_path / "ck", tmp_path / "out"
    source.mkdir()
    rows_in = {}
    for k in range(6):
        part = source / f"part-{k}.csv"
        part.write_text("\n".join(whole[k * 200 : (k + 1) * 200]) + "\n")
        rows_in[part.name] = len(whole[k * 200 : (k + 1) * 200])
        os.utime(part, (1_700_000_000 + k, 1_700_000_000 + k))
    spec = tmp_path / "w.toml"
    spec.write_text(HAND_MADE)
    argv = ["stream", str(spec), "--watch", "--source", str(source), "--checkpoint", str(checkpoint), "--out",
            str(out), "--trigger", "0.5", "--max-files", "1", "--timeout", "600", "--master", "local[2]"]  # fmt: skip
    code = "import sys; from sharp_cer.cli import main; sys.exit(main(sys.argv[1:]))"
    progress = (tmp_path / "progress.txt").open("w")  # the restart's line and pause, for a reader
    driver = subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=progress,
    )
    offsets, commits = checkpoint / "query" / "offsets", checkpoint / "query" / "commits"

    def batches(folder: Path) -> set[int]:
        return {int(p.name) for p in folder.glob("[0-9]*")} if folder.is_dir() else set()

    in_flight = None
    deadline = time.time() + 400
    try:
        while not batches(commits) and time.time() < deadline and driver.poll() is None:
            time.sleep(0.05)
        spec.write_text(CHANGED)  # while the stream runs
        moved = None
        while in_flight is None and time.time() < deadline and driver.poll() is None:
            versions, _ = checkpoint_history(str(checkpoint))
            if moved is None and len(versions) > 1:
                moved = versions[1]["after_batch"]
            if moved is not None:
                in_flight = next((b for b in sorted(batches(offsets) - batches(commits)) if b > moved), None)
            time.sleep(0.01)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait()
        progress.close()
    assert in_flight is not None  # moved to the new workload, then killed while a later micro-batch ran
    versions, lanes = checkpoint_history(str(checkpoint))
    position = sum(
        rows_in[Path(urlparse(json.loads(line)["path"]).path).name]
        for b in range(versions[1]["after_batch"] + 1)
        for line in (checkpoint / "query" / "sources" / "0" / str(b)).read_text().splitlines()[1:]
    )
    assert 0 < position < len(whole)
    run_stream(after, str(source), str(checkpoint), str(out), StreamSettings(), spark)
    events = load_csv(str(tmp_path / "all.csv"), before.schema)[0]
    truth = _rule(before, after, events, position)
    assert committed_matches(out) == truth  # nothing lost, nothing doubled, each query by the rule
    names = Counter(key[1] for key in truth.elements())
    assert names["added_by_key"] and names["no_c_between"] and names["near_by_position"]
    assert [v["number"] for v in versions] == [0, 1] and lanes[-1] == ("x",)
