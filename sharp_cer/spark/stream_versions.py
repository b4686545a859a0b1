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

Spark routes each event to the lanes and key groups the query started
with by an expression fixed then (``pipeline.routes``: a hash of the key
in Spark). A lane a version adds inside the running query (another
PARTITION BY) is routed by stage 1 instead (``stage_one_routes``: a CRC-32
of the event's key as JSON), for good: the registry's history lists those
lanes (``STAGE_ONE``), and a restarted query leaves them out of Spark's
expression. What the running query cannot take: a lane Spark routes whose
queries now read other event types than it started with. Such a version
goes by a graceful restart from the checkpoint (``run_stream``), or is
refused with that reason (``detect_stream``).
"""

from __future__ import annotations

import json
import pickle
import time
import zlib
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from sharp_cer.api import Detector

from .lanes import Lane
from .worker import Job

#: the registry's folder of versions' jobs, one file each
VERSIONS = "versions"
#: a control file's first word for a version (the rest of its first line: the number)
ANNOUNCE = "version"
#: the registry's history key listing the lanes stage 1 routes (their partition attributes)
STAGE_ONE = "stage_one_lanes"

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


def job_lanes(job: Job) -> list[Lane]:
    """The lanes of ``job`` by their numbers (a lane without queries: no
    attributes, no event types)."""
    by_name = {q.name: q for q in job.workload.queries}
    found = []
    for names in job.lanes:
        if not names:
            found.append(Lane((), (), frozenset()))
            continue
        types: set[str] = set()
        for name in names:
            query = by_name[name].checked.query
            scope = query.streams or tuple(job.workload.schema.streams)
            types.update(e.name for e in job.workload.schema.event_types(scope))
        first = by_name[names[0]].checked.query
        spec = first.partition_attributes if first.consume != "ANY" else ()
        found.append(Lane(tuple(names), spec, frozenset(types)))
    return found


def stage_one_lanes(job: Job, spark_routed: Collection[tuple[str, ...]]) -> list[tuple[int, Lane]]:
    """The lanes of ``job`` with queries that Spark's expression does not
    route (their partition attributes are not in ``spark_routed``), by number."""
    return [(n, lane) for n, lane in enumerate(job_lanes(job)) if lane.queries and lane.partition_attributes
            not in spark_routed]  # fmt: skip


def stage_one_routes(
    kinds: Sequence[str],
    types: Sequence[Any],
    values: Mapping[str, Sequence[Any]],
    found: Sequence[tuple[int, Lane]],
    key_groups: int,
) -> list[list[int]]:
    """Each event's routes (lane x key groups + key group) in the stage-one
    lanes ``found``, from its type and attribute values (Python values, None
    where null: ``stream_input.python_values``): a lane whose types hold its
    type and in which it has a key (every partition attribute present and
    not null), key group = CRC-32 of the key as JSON, modulo ``key_groups``.

    >>> from sharp_cer.spark.lanes import Lane
    >>> by_j = (3, Lane(("q",), ("j",), frozenset({"A"})))
    >>> stage_one_routes(["event", "event", "event", "dead"], ["A", "A", "B", None],
    ...                  {"j": [4, None, 4, None]}, [by_j], 2)
    [[7], [], [], []]
    """
    wanted = {t for _, lane in found for t in lane.event_types}
    out: list[list[int]] = []
    for i, (kind, named) in enumerate(zip(kinds, types, strict=True)):
        codes: list[int] = []
        if kind == "event" and named in wanted:
            for n, lane in found:
                if named not in lane.event_types:
                    continue
                key = [values[a][i] if a in values else None for a in lane.partition_attributes]
                if any(v is None for v in key):
                    continue
                bucket = zlib.crc32(json.dumps(key).encode()) % key_groups if key else 0
                codes.append(n * key_groups + bucket)
        out.append(codes)
    return out


def every_route(job: Job, key_groups: int) -> list[int]:
    """Every lane and key group of ``job`` with queries (flushes and versions go to each)."""
    return [n * key_groups + g for n, lane in enumerate(job_lanes(job)) if lane.queries
            for g in range(key_groups if lane.partition_attributes else 1)]  # fmt: skip


def in_stream_problem(started: Job, running: Job, new: Job, stage_one: Collection[tuple[str, ...]] = ()) -> str | None:
    """Why the query started with ``started`` (its lanes ``stage_one``
    routed by stage 1, the rest by Spark) cannot move from ``running`` to
    ``new`` without a restart (None: it can). ``new``'s lanes must be
    numbered as the stream numbers them (``lanes.lanes(..., keep=...)``).

    >>> from sharp_cer.language import parse_workload
    >>> from sharp_cer.spark.lanes import lanes
    >>> head = '[workload]\\nname = "w"\\nschema = "CREATE STREAM S { EVENT A { k:int, j:int } }"\\n'
    >>> def job(*texts, version=0):
    ...     w = parse_workload(head + "".join(f'[[query]]\\nname = "q{i}"\\ntext = "{t}"\\n'
    ...                                       for i, t in enumerate(texts)))
    ...     return Job(w, tuple(lane.queries for lane in lanes(w, keep=[("k",)])), 100, version=version)
    >>> first = job("SELECT * WHERE A ; A PARTITION BY [k] WITHIN 3 EVENTS")
    >>> in_stream_problem(first, first, job("SELECT * WHERE A ; A ; A PARTITION BY [k] WITHIN 3 EVENTS", version=1))
    >>> in_stream_problem(first, first, job("SELECT * WHERE A ; A PARTITION BY [j] WITHIN 3 EVENTS", version=1))
    """
    spark_routed = {lane.partition_attributes: lane for lane in job_lanes(started)
                    if lane.queries and lane.partition_attributes not in stage_one}  # fmt: skip
    for lane in job_lanes(new):
        old = spark_routed.get(lane.partition_attributes)
        if not lane.queries or old is None:
            continue  # a lane stage 1 routes takes any event types
        if old.event_types != lane.event_types:
            spec = f"PARTITION BY [{', '.join(lane.partition_attributes)}]" if lane.partition_attributes else "no key"
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
