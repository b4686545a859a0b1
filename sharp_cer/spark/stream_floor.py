"""A live stream's bounds below the update floor, said on the driver before
the stream starts (issue 36), as ``sharp-cer run`` says them before its job.

The floor is measured lane by lane (``worker.floor_warnings_before``) on the
first events (at most 2,000) of the files already in the source folder,
read with the stream's own stage-0 parser (``stream_input.parse_files``),
oldest file first, as Spark's file source takes them. When the folder is
empty at the start, that is said once, and the driver judges the floor at
the first micro-batch that brings events, from the files the stream has
read by then (its sources log, ``stream_files.read_files``): once.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import warnings
from collections.abc import Callable, Collection
from pathlib import Path

import pyarrow as pa

from sharp_cer.events import arrow_compute as compute
from sharp_cer.events.batch import EventBatch
from sharp_cer.events.loaders import load_arrow
from sharp_cer.language import Workload

from .columns import ARRIVED, CONTROL, EVENT, FILE, ROW_KIND, TEXT_VALUE, TYPE
from .prepare import LoadSpec
from .stream_files import read_files
from .stream_input import parse_files
from .worker import Job, floor_warnings_before

#: the events the floor is measured on, at most
SAMPLE = 2000
#: what is said when the source folder is empty at the start
LATER = "the source folder is empty: the update floor is judged at the first micro-batch with events"


def folder_sample(source: str, spec: LoadSpec, count: int = SAMPLE, only: Collection[str] | None = None) -> EventBatch:
    """The first ``count`` events of the files in ``source`` (oldest first;
    names starting with ``.`` or ``_`` are not the stream's; ``only``: just
    these resolved paths), parsed as the stream parses them; dead letters
    and events later than the allowed lateness are left out, as stage 0 and
    stage 1 leave them out.

    >>> import tempfile
    >>> from sharp_cer.language import Schema
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int, t:primary_time } }")
    >>> folder = tempfile.mkdtemp()
    >>> _ = Path(folder, "a.csv").write_text("A,1,10\\nA,oops,11\\nA,3,12\\nA,4,13\\n")
    >>> [int(t) for t in folder_sample(folder, LoadSpec(s, "csv", 0), count=2).times().values]
    [10, 12]
    """
    entries = [e for e in os.scandir(source) if e.is_file() and not e.name.startswith((".", "_"))]
    if only is not None:
        entries = [e for e in entries if str(Path(e.path).resolve()) in only]
    entries.sort(key=lambda e: (e.stat().st_mtime_ns, e.name))
    found: list[pa.Table] = []
    taken = 0
    for entry in entries:
        with open(entry.path, "rb") as file:
            # a chunk of lines at a time: only the head of a large file is read
            while taken < count:
                lines = list(itertools.islice(file, count - taken + 1))
                if not lines:
                    break
                whole = pa.record_batch(
                    {
                        TEXT_VALUE: pa.array([b"".join(lines)], pa.binary()),
                        FILE: [entry.path],
                        ARRIVED: pa.array([0], pa.int64()),
                        CONTROL: [False],
                    }
                )
                for rows in parse_files(spec, iter([whole])):
                    table = pa.Table.from_batches([rows])
                    events = table.filter(compute.equal(table[ROW_KIND], pa.scalar(EVENT)))
                    found.append(events.select([TYPE, *spec.kinds]))
                    taken += events.num_rows
        if taken >= count:
            break
    # the sample's lateness is judged as stage 1 judges it, over the files in order (a driver's 2,000 rows)
    table = pa.concat_tables(found).slice(0, count) if found else pa.table({TYPE: pa.array([], pa.string())})
    batch, _ = load_arrow(table, spec.schema, allowed_lateness=spec.allowed_lateness)
    return batch


def _warn(line: str) -> None:
    warnings.warn(line, RuntimeWarning, stacklevel=3)


def _log(line: str) -> None:
    logging.getLogger("sharp_cer").warning(line)


class LiveFloor:
    """The floor's judge of one stream's driver: ``before()`` at the start,
    ``poll(checkpoint)`` while it runs (cheap until the first files are
    read; a no-op once judged). Each bound below the floor goes to
    ``warn`` (default: a ``RuntimeWarning``) and into ``warnings``; the
    empty folder's note goes to ``note`` (default: logger ``sharp_cer``)."""

    def __init__(
        self,
        job: Job,
        source: str,
        spec: LoadSpec,
        warn: Callable[[str], None] | None = None,
        note: Callable[[str], None] | None = None,
        every: float = 0.5,
    ) -> None:
        self.job, self.source, self.spec = job, source, spec
        self.warn, self.note = warn or _warn, note or _log
        self.every = every
        self.warnings: list[str] = []
        self.judged = job.shedder is None  # without a shedder a bound is judged after the run, never enforced
        self._looked = 0.0

    def before(self) -> None:
        """Judge the floor on the files in the folder now; if none holds an event, say it is judged later."""
        if self.judged:
            return
        if not self._judge(folder_sample(self.source, self.spec)):
            self.note(LATER)

    def poll(self, checkpoint: str, now: bool = False) -> None:
        """Judge the floor once the stream has read files with events (at most every ``every`` s, or ``now``)."""
        if self.judged or (not now and time.monotonic() - self._looked < self.every):
            return
        self._looked = time.monotonic()
        read = read_files(checkpoint)
        if read:
            self._judge(folder_sample(self.source, self.spec, only=set(read)))

    def _judge(self, sample: EventBatch) -> bool:
        if not len(sample):
            return False
        self.judged = True
        self.warnings = floor_warnings_before(self.job, sample)
        for line in self.warnings:
            self.warn(line)
        return True


def live_floor(
    workload: Workload,
    source: str,
    fmt: str,
    job: Job,
    warn: Callable[[str], None] | None = None,
    note: Callable[[str], None] | None = None,
) -> LiveFloor:
    """The judge of a stream reading ``fmt`` files from ``source`` (not yet asked: ``before()``)."""
    return LiveFloor(job, source, LoadSpec(workload.schema, fmt, workload.allowed_lateness), warn, note)
