"""Workload versions a running stream moves to without a restart (issue 39).

The driver (``run_stream(workload_source=...)``, ``detect_stream(...,
workload_source=...)``) sees the workload file change, checks that the
running query can take the new version as it is (``in_stream_problem``),
writes the version's ``Job`` into the stream's registry (``save``: a file
per version, written whole before anything names it), records it in the
registry's history, and then drops a control file ``version N`` into the
stream's control folder (``announce``). The control file is an input of
the query like any event file: the micro-batch that reads it is in the
query's offset log, so a micro-batch redone after a crash reads it again,
and the switch lands at the same position whether or not the driver died.
Stage 1 (``Sequencer``) takes the version from the first position of that
micro-batch and tells every lane and key group (a ``version`` row); stage
2 loads the job (``load``) and moves each key group's live state with
``Detector.update``.

What the running query cannot take as it is, because Spark routes each
event to its lanes and key groups by an expression fixed when the query
started: a lane the query did not start with (another PARTITION BY), or a
lane whose queries read other event types than the ones its events are
routed for. Those versions go by a graceful restart from the checkpoint
(``run_stream``), or are refused with that reason (``detect_stream``).
"""

from __future__ import annotations

import pickle
import time
from pathlib import Path

from sharp_cer.api import Detector

from .lanes import lanes
from .worker import Job

#: the registry's folder of versions' jobs, one file each
VERSIONS = "versions"
#: a control file's first word for a version (the rest of its first line: the number)
ANNOUNCE = "version"

_LOADED: dict[tuple[str, int, int, int], Job] = {}


def save(registry: str | Path, job: Job) -> Path:
    """Write ``job`` (a version) into ``registry``; whole or not at all."""
    from pyspark import cloudpickle

    folder = Path(registry, VERSIONS)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"v{job.version}.pickle"
    partial = folder / f".v{job.version}.pickle.{time.time_ns()}"
    partial.write_bytes(cloudpickle.dumps(job))  # type: ignore[no-untyped-call]
    partial.rename(path)
    return path


def load(registry: str, number: int) -> Job:
    """The job of version ``number`` (``save``), read once per process.

    >>> import tempfile
    >>> from sharp_cer.language import parse_workload
    >>> w = parse_workload('[workload]\\nname = "w"\\nschema = "CREATE STREAM S { EVENT A { x:int } }"\\n'
    ...                    '[[query]]\\nname = "q"\\ntext = "SELECT * WHERE A"')
    >>> folder = tempfile.mkdtemp()
    >>> _ = save(folder, Job(w, (("q",),), 100, version=3))
    >>> load(folder, 3).version, load(folder, 3).lanes
    (3, (('q',),))
    """
    path = Path(registry, VERSIONS, f"v{number}.pickle")
    status = path.stat()
    # the file's identity in the key: a registry made again at the same path (a new checkpoint) is read anew
    key = (registry, number, status.st_mtime_ns, status.st_size)
    job = _LOADED.get(key)
    if job is None:
        job = _LOADED[key] = pickle.loads(path.read_bytes())
    return job


def announce(control: str | Path, number: int) -> Path:
    """Ask the running stream to move to version ``number`` at its next
    micro-batch: a control file that appears whole."""
    folder = Path(control)
    folder.mkdir(parents=True, exist_ok=True)
    name = f"version-{number}-{time.time_ns()}.txt"
    (folder / f".{name}").write_text(f"{ANNOUNCE} {number}\n")
    (folder / f".{name}").rename(folder / name)
    return folder / name


def requested(text: str | None) -> int | None:
    """The version a control file's text asks for (None: a flush).

    >>> requested("version 4\\n"), requested("flush\\n"), requested(None)
    (4, None, None)
    """
    words = (text or "").split()
    if len(words) >= 2 and words[0] == ANNOUNCE and words[1].isdigit():
        return int(words[1])
    return None


def in_stream_problem(started: Job, running: Job, new: Job) -> str | None:
    """Why the query started with ``started`` cannot move from ``running``
    to ``new`` without a restart (None: it can). ``new``'s lanes must be
    numbered as the stream numbers them (``lanes.lanes(..., keep=...)``).

    >>> from sharp_cer.language import parse_workload
    >>> head = '[workload]\\nname = "w"\\nschema = "CREATE STREAM S { EVENT A { k:int, j:int } }"\\n'
    >>> def job(*texts, version=0):
    ...     w = parse_workload(head + "".join(f'[[query]]\\nname = "q{i}"\\ntext = "{t}"\\n'
    ...                                       for i, t in enumerate(texts)))
    ...     return Job(w, tuple(lane.queries for lane in lanes(w, keep=[("k",)])), 100, version=version)
    >>> first = job("SELECT * WHERE A ; A PARTITION BY [k] WITHIN 3 EVENTS")
    >>> in_stream_problem(first, first, job("SELECT * WHERE A ; A ; A PARTITION BY [k] WITHIN 3 EVENTS", version=1))
    >>> in_stream_problem(first, first, job("SELECT * WHERE A ; A PARTITION BY [j] WITHIN 3 EVENTS", version=1))
    'a new lane (PARTITION BY [j]): the running query routes events by the lanes it started with'
    """
    before = {lane.partition_attributes: lane for lane in lanes(started.workload)}
    kept = [lane.partition_attributes for lane in lanes(started.workload)]
    for lane in lanes(new.workload, keep=kept):
        if not lane.queries:
            continue
        old = before.get(lane.partition_attributes)
        spec = f"PARTITION BY [{', '.join(lane.partition_attributes)}]" if lane.partition_attributes else "no key"
        if old is None or not old.queries:
            return f"a new lane ({spec}): the running query routes events by the lanes it started with"
        if old.event_types != lane.event_types:
            return (
                f"the lane {spec} reads other event types ({', '.join(sorted(lane.event_types))}; it started with "
                f"{', '.join(sorted(old.event_types))}): the running query routes events by the types it started with"
            )
    return None


def dry_run(running: Job, new: Job) -> None:
    """Raise what a key group would raise moving from ``running`` to ``new``
    (``Detector.update`` per lane, with no event: e.g. an added trailing
    ABSENT), so that a change the workers cannot apply is refused on the
    driver, before the stream sees it."""
    for lane in range(min(len(running.lanes), len(new.lanes))):
        old, now = running.lane_workload(lane), new.lane_workload(lane)
        if old.fingerprint() != now.fingerprint():
            Detector.from_workload(old, shedder=running.shedder, seed=running.seed).update(now)
