"""Streaming detection on Spark: any streaming DataFrame of events in
(``detect_stream``), or files arriving in a folder (``start_stream``, the
``sharp-cer stream`` command), alerts appended to a sink, exactly once
across restarts.

The query (``start_stream``):

1. *stage 0*, stateless: each new file of ``source`` read whole, parsed
   and validated (``stream_input.parse_files``; a DataFrame's rows:
   ``parse_rows``), each event routed to its lanes and key groups exactly
   as the batch pipeline routes it;
2. *stage 1*, one stateful key: positions in arrival order and lateness
   (``stream_processors.Sequencer``); only where it must be: a stream whose
   workload versions move inside the running query (``--watch``), and
   ``detect_stream``, whose positions follow a sort of each micro-batch by
   ``order_by``. Otherwise (the *one-operator plan*, ``_one_operator``)
   each file's summary row goes to every key group, which numbers its own
   rows from it exactly as stage 1 would (``stream_input.number_key_group``),
   and each input batch's rows of one key group travel to it as one row of
   Arrow IPC bytes (``stream_packing``);
3. the watermark, on the events' time, ``allowed_lateness`` plus a margin
   behind the latest time (so Spark's own late-row filter never drops a row:
   stage 1 has dead-lettered every late one already);
4. *stage 2*, ``transformWithStateInPandas`` in event-time mode, keyed by
   lane and key group: events held until the watermark passes them (the
   watermark the next micro-batch will have, known in the one that reads
   them), then fed to the group's engine in stream order (``KeyGroups``);
5. a file sink (Parquet, append): matches, dead letters and statistics
   rows, in one table (``STREAM_DDL``).

State lives in the RocksDB state store under ``checkpoint``, which also
holds the source's and sink's logs: a restart resumes from the last
committed micro-batch, and a micro-batch cut short is redone with the state
it started from, so nothing is lost or doubled (read the output with Spark,
which reads the sink's log). ``checkpoint/control`` is a second source: a
file there (``request_flush``) releases everything held, as at the end of
the input, and a ``version N`` file moves the running query to a new
workload version (``stream_versions``). The checkpoint keeps the
workload's versions: a restart with changed queries continues; another
schema, lateness, capacity or number of key groups is refused, naming the
difference.

Known limits: stage 1, where it runs, is one task per micro-batch (it
numbers every row); files are numbered in name order within a micro-batch,
after every file of earlier ones. A one-operator checkpoint refuses a
workload that adds a lane (its new key groups would lack the stream's
cursor), and takes a watched change by a graceful restart.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import json
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from sharp_cer.engine.histogram import weighted_percentile
from sharp_cer.errors import SharpCerError, SurfaceError
from sharp_cer.language import Workload
from sharp_cer.language.workload import signature_changes

from .columns import (
    ARRIVED,
    CLOCK,
    CODE,
    CONTROL,
    COUNTER,
    DEAD_LETTER,
    E2E,
    EVENT,
    FILE,
    FIRST,
    FLUSH,
    KEY_GROUP,
    LANE,
    LETTER_COLUMNS,
    LINE,
    LOCAL,
    MATCH,
    ORDER_PREFIX,
    OUTPUT_KIND,
    PART,
    PREV,
    ROUTE,
    ROW_KIND,
    SEQ,
    STREAM_DDL,
    STREAM_KEY,
    SUMMARY,
    TEXT,
    TEXT_VALUE,
    TICKS,
    TIME,
    TS,
    TYPE,
    VALUE,
    VERSION,
    arrow_ddl,
)
from .lanes import Lane, lanes
from .pipeline import routes
from .prepare import TEXT_FORMATS, LoadSpec, attribute_kinds, format_of
from .stream_files import skipped_files
from .stream_floor import LiveFloor
from .stream_input import (
    INT_KINDS,
    KEY_GROUPS_PART,
    NONE,
    check_signature,
    null_flag,
    numbered_schema,
    parse_files,
    parse_rows,
    stage_zero_schema,
)
from .stream_versions import ANNOUNCE, STAGE_ONE
from .summary import Summary
from .watch import EVENTS_IN, MATCHES_OUT, StopRequest, batch_line, committed_line, watch
from .worker import _NO_LATENESS, Job

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"
NO_DATA_MICRO_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"
SIGNATURE_FILE = "sharp-cer-workload.json"


@dataclass(frozen=True, init=False)
class StreamSettings:
    """How a stream runs: micro-batches every ``trigger`` seconds (None: all
    that is there, then stop), at most ``max_files`` new files per
    micro-batch, the watermark ``watermark_ms`` behind the latest time
    (None: allowed lateness + 2 ms: held events wait for nothing
    but the lateness), the shedder and seed, key groups per lane
    (None: the fewest that give the workload's lanes a key group per shuffle
    partition, ``fewest_key_groups``: a key group costs a dozen state calls
    and a snapshot every micro-batch, whatever its events; a checkpoint
    keeps the number it started with), the stream's shuffle partitions
    (None: one per core: each is a state store committed every micro-batch;
    a checkpoint keeps the number it started with), bins of ``bin_width``
    positions. ``groups``, the name of ``key_groups`` before 0.2.0, is
    deprecated (it warns).
    """

    trigger: float | None = None
    max_files: int | None = None
    watermark_ms: int | None = None
    shedder: str | None = None
    seed: int = 0
    key_groups: int | None = None
    partitions: int | None = None
    bin_width: int = 1000
    format: str | None = None

    def __init__(
        self,
        trigger: float | None = None,
        max_files: int | None = None,
        watermark_ms: int | None = None,
        shedder: str | None = None,
        seed: int = 0,
        key_groups: int | None = None,
        partitions: int | None = None,
        bin_width: int = 1000,
        format: str | None = None,
        *,
        groups: int | None = None,
    ) -> None:
        if groups is not None:
            _renamed_groups()
            key_groups = groups if key_groups is None else key_groups
        given = dict(trigger=trigger, max_files=max_files, watermark_ms=watermark_ms, shedder=shedder, seed=seed)
        given.update(key_groups=key_groups, partitions=partitions, bin_width=bin_width, format=format)
        for name, value in given.items():
            object.__setattr__(self, name, value)  # frozen

    @property
    def groups(self) -> int | None:
        """Deprecated: ``key_groups``."""
        _renamed_groups()
        return self.key_groups

    def shuffle_partitions(self, spark: SparkSession) -> int:
        """The stream's shuffle partitions: as set, else one per core."""
        return self.partitions or spark.sparkContext.defaultParallelism

    def key_groups_for(self, spark: SparkSession, workload: Workload | None = None) -> int:
        """Key groups per partitioned lane: as set, else one per shuffle
        partition, or, given the stream's ``workload``, the fewest that give
        its lanes at least one key group per shuffle partition
        (``fewest_key_groups``)."""
        if self.key_groups:
            return self.key_groups
        partitions = self.shuffle_partitions(spark)
        return partitions if workload is None else fewest_key_groups(workload, partitions)

    def delay_ms(self, workload: Workload) -> int:
        """The watermark delay: above the allowed lateness, in ms."""
        floor = -(-workload.allowed_lateness // 1_000_000) + 2  # above it, with room for rounding to µs and ms
        if self.watermark_ms is None:
            return floor
        if self.watermark_ms < floor:
            raise SurfaceError(
                f"error: watermark delay {self.watermark_ms} ms (--watermark-ms) is not above the allowed lateness "
                f"({workload.allowed_lateness} ns)\n  expected: at least {floor} ms\n"
                "  hint: Spark drops rows behind the watermark unseen; keep it above the allowed lateness"
            )
        return self.watermark_ms


def fewest_key_groups(workload: Workload, partitions: int) -> int:
    """The fewest key groups per partitioned lane that give ``workload``'s
    lanes at least one key group per shuffle partition (a lane without
    PARTITION BY is one key group): every key group costs a Python call, a
    dozen state round trips and a snapshot in each micro-batch, whatever
    its events, and parallelism cannot exceed the partitions (one task
    each) anyway.

    >>> from sharp_cer.language import parse_workload
    >>> w = parse_workload('[workload]\\nname = "w"\\nschema = "CREATE STREAM S { EVENT A { x:int } }"\\n'
    ...                    '[[query]]\\nname = "q"\\ntext = "SELECT * WHERE A PARTITION BY [x]"\\n'
    ...                    '[[query]]\\nname = "r"\\ntext = "SELECT * WHERE A"')
    >>> fewest_key_groups(w, 2), fewest_key_groups(w, 8)  # one lane by x, one without: 1 + k >= partitions
    (1, 7)
    """
    found = [lane for lane in lanes(workload) if lane.queries]
    split = sum(1 for lane in found if lane.partition_attributes)
    whole = len(found) - split
    if not split:
        return 1
    return max(1, -(-(partitions - whole) // split))


def _renamed_groups() -> None:
    warnings.warn(
        "StreamSettings.groups is StreamSettings.key_groups since sharp-cer 0.2.0, and groups goes in 0.3",
        DeprecationWarning,
        stacklevel=3,
    )


def stream_conf() -> dict[str, str]:
    """The Spark settings a stream needs: the RocksDB state store, whose
    commits write a changelog rather than a snapshot of every partition (the
    snapshots are made in the background)."""
    return {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB,
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    }


def check_checkpoint(
    checkpoint: str,
    workload: Workload,
    key_groups: int | None = None,
    default: int = 1,
    shedder: str | None = None,
    operators: int = 2,
) -> int:
    """Refuse a checkpoint written in another format or by another workload
    (naming the difference); remember this workload's signature and the
    stream's key groups per lane and its plan's stateful ``operators`` (1:
    the one-operator plan, whose checkpoint refuses a workload with a new
    lane: its key groups would lack the stream's cursor) in a new one.
    Returns the key groups per
    lane to run with: ``key_groups`` if set, else the checkpoint's, else
    ``default`` (so a restart on a machine with another number of cores
    still routes each event to the key group holding its state).

    >>> import tempfile
    >>> from sharp_cer.language import parse_workload
    >>> w = parse_workload('[workload]\\nname = "w"\\nschema = "CREATE STREAM S { EVENT A { x:int } }"\\n'
    ...                    '[[query]]\\nname = "q"\\ntext = "SELECT * WHERE A"')
    >>> folder = tempfile.mkdtemp()
    >>> check_checkpoint(folder, w, default=2), check_checkpoint(folder, w, default=8)
    (2, 2)
    """
    from .stream_key_group import FORMAT, check_format

    path = Path(checkpoint) / SIGNATURE_FILE
    signature = workload.signature()
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        chosen = key_groups or default
        first = _version(0, workload, "the first workload")
        kept_lanes = [list(lane.partition_attributes) for lane in lanes(workload)]
        record = {"format": FORMAT, "signature": signature, "groups": chosen, "versions": [first], "lanes": kept_lanes}
        if operators == 1:
            record[OPERATORS] = 1
        path.write_text(json.dumps(record, indent=1))
        return chosen
    stored = json.loads(path.read_text())
    check_format(int(stored.get("format", 1)), str(path))  # format 1 kept the bare signature
    kept = int(stored.get("groups") or key_groups or default)  # the file's key, from 0.1
    chosen = key_groups or kept
    # the queries may change while the stream runs (issue 39); the rest may not
    check_signature(
        json.dumps({**_fixed(stored["signature"]), KEY_GROUPS_PART: str(kept)}),
        {**_fixed(signature), KEY_GROUPS_PART: str(chosen)},
        str(path),
    )
    if stored["signature"] != signature:
        versions = stored.get("versions") or [_version(0, None, "the first workload")]
        changes = signature_changes(stored["signature"], signature)
        entry = _version(len(versions), workload, "; ".join(changes))
        # the last micro-batch committed under the version before: the new one numbers the events after it
        commits = Path(checkpoint, "query", "commits")
        done = [int(p.name) for p in commits.glob("[0-9]*")] if commits.is_dir() else []
        entry["after_batch"] = max(done, default=-1)
        versions.append(entry)
        keep = stored.get("lanes") or []
        kept_lanes = [list(lane.partition_attributes) for lane in lanes(workload, keep)]
        if stored.get(OPERATORS) == 1 and len(kept_lanes) > len(keep):
            raise SurfaceError(
                f"{path}: error: this stream runs one stateful operator, and the new workload adds a lane "
                f"(PARTITION BY {', '.join(kept_lanes[-1]) or 'nothing'})\n"
                "  expected: the queries' lanes the stream has (each of its key groups keeps the stream's positions)\n"
                "  hint: give a new --checkpoint (and --out) to start over, or start the stream with --watch "
                "(two stateful operators: lanes can be added while it runs)"
            )
        stored.update(signature=signature, versions=versions, lanes=kept_lanes)
        path.write_text(json.dumps(stored, indent=1))
    return chosen


#: the checkpoint's key naming its plan's stateful operators (absent: 2, as before the one-operator plan)
OPERATORS = "stateful_operators"


def checkpoint_operators(checkpoint: str) -> int:
    """The stateful operators of the plan the checkpoint's stream runs: 1
    (``_one_operator``) or 2 (stage 1 and stage 2)."""
    path = Path(checkpoint) / SIGNATURE_FILE
    return int(json.loads(path.read_text()).get(OPERATORS, 2)) if path.exists() else 2


def checkpoint_history(checkpoint: str) -> tuple[list[dict[str, Any]], list[tuple[str, ...]]]:
    """The workload versions a checkpoint's stream ran (oldest first: number,
    time, fingerprint, what changed) and its lanes' partition attributes,
    in the order that numbers them (``check_checkpoint`` keeps both)."""
    path = Path(checkpoint) / SIGNATURE_FILE
    if not path.exists():
        return [], []
    stored = json.loads(path.read_text())
    return list(stored.get("versions") or []), [tuple(lane) for lane in stored.get("lanes") or []]


def stage_one(registry: str) -> list[tuple[str, ...]]:
    """The lanes of the stream in ``registry`` that stage 1 routes (added
    while a query ran: ``stream_versions``), by their partition attributes."""
    path = Path(registry) / SIGNATURE_FILE
    return [tuple(spec) for spec in json.loads(path.read_text()).get(STAGE_ONE) or []] if path.exists() else []


def _version(number: int, workload: Workload | None, change: str) -> dict[str, Any]:
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    fingerprint = workload.fingerprint() if workload is not None else None
    return {"number": number, "time": stamp, "fingerprint": fingerprint, "change": change}


def _fixed(signature: dict[str, str]) -> dict[str, str]:
    """The parts of a signature a running stream keeps: all but its queries."""
    return {k: v for k, v in signature.items() if not k.startswith("query ")}


def request_flush(checkpoint: str) -> None:
    """Ask the stream to release every held event at its next micro-batch
    (what the end of the input means)."""
    control = Path(checkpoint) / "control"
    control.mkdir(parents=True, exist_ok=True)
    name = f"flush-{time.time_ns()}.txt"
    (control / f".{name}").write_text("flush\n")
    (control / f".{name}").rename(control / name)  # appears whole


def start_stream(
    workload: Workload,
    source: str,
    checkpoint: str,
    out: str,
    settings: StreamSettings,
    spark: SparkSession,
    operators: int | None = None,
) -> StreamingQuery:
    """Start the streaming query (see the module docstring). A new
    checkpoint's stream runs ``operators`` stateful operators (None: one,
    ``_one_operator``; 2: stage 1 and stage 2, which a stream whose workload
    versions move inside the running query needs); a checkpoint keeps the
    plan it started with."""
    from pyspark.sql import functions as F

    _check_session(spark)
    if not Path(source).is_dir():
        raise SurfaceError(f"{source}: error: no such folder\n  expected: the folder the stream's files arrive in")
    fmt = settings.format or format_of(source)
    if fmt not in TEXT_FORMATS:
        raise SurfaceError(f"{source}: error: a stream reads .csv or .jsonl files\n  found: {fmt}")
    key_groups = check_checkpoint(
        checkpoint,
        workload,
        settings.key_groups,
        settings.key_groups_for(spark, workload),
        settings.shedder,
        operators or 1,
    )
    settings = replace(settings, key_groups=key_groups)
    versions, kept_lanes = checkpoint_history(checkpoint)
    plan = checkpoint_operators(checkpoint)
    Path(checkpoint, "control").mkdir(parents=True, exist_ok=True)

    def files(path: str, control: bool, max_files: int | None) -> DataFrame:
        reader = spark.readStream.format("text").option("wholetext", "true")
        if max_files:
            reader = reader.option("maxFilesPerTrigger", max_files)
        raw = reader.load(path)
        return raw.select(
            TEXT_VALUE,
            F.col("_metadata.file_path").alias(FILE),
            # arrival: when the micro-batch read the file (a streaming query's current_timestamp is its
            # micro-batch's), not the file's modification time (a copied or moved file keeps an old one)
            F.unix_millis(F.current_timestamp()).alias(ARRIVED),
            F.lit(control).alias(CONTROL),
        )

    spec = LoadSpec(workload.schema, fmt, workload.allowed_lateness)
    arrow = stage_zero_schema(spec)
    parsed = (
        files(source, False, settings.max_files)
        .unionByName(files(str(Path(checkpoint, "control")), True, None))
        .mapInArrow(lambda batches: parse_files(spec, batches), arrow_ddl(arrow))
    )
    number = max(len(versions) - 1, 0)
    output = _engines(parsed, workload, settings, spark, None, kept_lanes, number, checkpoint, plan)
    # counted per micro-batch for `watch`: events as they are numbered (once each, in _engines), matches as written
    output = output.observe(MATCHES_OUT, F.count(F.when(F.col(OUTPUT_KIND) == MATCH, 1)).alias("n"))
    writer = (
        output.writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", str(Path(checkpoint, "query")))
        .outputMode("append")
    )
    if settings.trigger is None:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{settings.trigger} seconds")
    # the query takes the session's settings as it starts (a restart: the checkpoint's partitions)
    wanted = {SHUFFLE_PARTITIONS: str(settings.shuffle_partitions(spark))}
    if plan == 1:
        # every key group reads every file's summary, so it releases (and fires) in the micro-batch that
        # reads a file all that the next watermark would: a micro-batch with no data would only move the
        # watermark and find nothing to do (its timers lie past it), at the whole fixed cost of one
        wanted[NO_DATA_MICRO_BATCHES] = "false"
    before = {name: spark.conf.get(name, None) for name in wanted}
    for name, value in wanted.items():
        spark.conf.set(name, value)
    try:
        return writer.start()
    finally:
        for name, was in before.items():
            if was is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, was)


def detect_stream(
    events: DataFrame,
    workload: Workload,
    *,
    order_by: Sequence[str] | None = None,
    arrived: str | None = None,
    control: str | None = None,
    settings: StreamSettings | None = None,
    workload_source: str | Path | None = None,
) -> DataFrame:
    """The matches of ``workload`` over a streaming DataFrame of events (a
    ``type`` column and one column per attribute, as ``detect`` takes), as
    a streaming DataFrame of alerts, dead letters and statistics
    (``STREAM_DDL``): write it with ``writeStream`` to any sink, in append
    mode, with a ``checkpointLocation`` (the engines' state lives there).

    Events are numbered in arrival order: micro-batch after micro-batch,
    and within one by ``order_by`` (e.g. Kafka's ``partition`` and
    ``offset``, or a time), ties and no ``order_by`` in the source's order
    (task by task). Positions are what ``WITHIN n EVENTS`` counts.
    ``arrived`` names a timestamp column stamped when the event was sent
    (its end-to-end latency is measured from it; default: when Spark takes
    the micro-batch). A file in the folder ``control`` (``request_flush``)
    releases every held event, as at the end of the input. The session
    needs ``stream_conf()``; its ``spark.sql.shuffle.partitions`` when the
    query first starts is the number of state stores, for good (one per
    core suits latency).

    ``workload_source`` (a TOML file, or a folder of one per tenant) is
    watched while the query runs, as ``sharp-cer stream --watch`` watches
    it: a change moves inside the running query at its next micro-batch
    (no restart; ``stream_versions``), with nothing lost or doubled across
    crashes: a query added from the micro-batch's first position on, a
    removed one's state dropped, every other query untouched. It needs
    ``control``: the versions' history is kept in ``CONTROL/_versions``
    (``checkpoint_history``, ``workload_refusals``). A change with an
    error, or one the running query cannot take (a lane reading other
    event types than it started with: Spark's routes are fixed when the
    query starts; a new PARTITION BY is routed by stage 1), is refused:
    logged (logger ``sharp_cer``) and kept; every query runs on. Restarting the query with the new workload applies
    those (its checkpoint continues). ``stop_watching(control)`` ends the
    watch::

        alerts = detect_stream(events, load_workload("rules"), control="ctl", workload_source="rules")
        alerts.writeStream.format("parquet").option("path", "out").option("checkpointLocation", "ck").start()
    """
    from pyspark.sql import functions as F

    spark = events.sparkSession
    _check_session(spark)
    settings = settings or StreamSettings()
    registry: str | None = None
    number, keep = 0, list[tuple[str, ...]]()
    if workload_source is not None:
        if control is None:
            raise SurfaceError(
                "detect_stream(workload_source=...) needs control=DIR\n"
                "  expected: the folder the stream reads its requests from (the versions go there too)"
            )
        registry = str(Path(control, "_versions"))  # Spark's file source skips names starting with _
        key_groups = check_checkpoint(
            registry, workload, settings.key_groups, settings.key_groups_for(spark), settings.shedder
        )
        settings = replace(settings, key_groups=key_groups)
        versions, keep = checkpoint_history(registry)
        number = max(len(versions) - 1, 0)
    attributes = list(attribute_kinds(workload.schema))
    missing = [c for c in [TYPE, *attributes, *(order_by or ()), *([arrived] if arrived else [])]
               if c not in events.columns]  # fmt: skip
    if missing:
        raise SurfaceError(
            f"the events lack columns {', '.join(missing)}\n  expected: a type column, the schema's attributes "
            f"({', '.join(attributes)}) and the order_by and arrived columns named"
        )
    order = [f"{ORDER_PREFIX}{i}" for i in range(len(order_by or ()))]
    stamp = F.col(arrived) if arrived else F.current_timestamp()
    rows = events.select(
        TYPE,
        *attributes,
        F.unix_millis(stamp).alias(ARRIVED),
        *[F.col(c).alias(o) for c, o in zip(order_by or (), order, strict=True)],
    )
    # lateness is judged in stage 1, once the micro-batch is in order_by's order
    spec = LoadSpec(workload.schema, "table", _NO_LATENESS)
    ddl = ", ".join(
        [arrow_ddl(stage_zero_schema(spec)), *(f"{o} {rows.schema[o].dataType.simpleString()}" for o in order)]
    )
    parsed = rows.mapInArrow(lambda batches: parse_rows(spec, order, batches), ddl)
    if control:
        Path(control).mkdir(parents=True, exist_ok=True)
        asked = F.col("value")
        version = asked.startswith(f"{ANNOUNCE} ")
        flushes = (
            spark.readStream.format("text")
            .load(control)
            .select(
                F.when(version, F.lit(VERSION)).otherwise(F.lit(FLUSH)).alias(ROW_KIND),
                F.col("_metadata.file_path").alias(FILE),
                F.unix_millis(F.current_timestamp()).alias(ARRIVED),
                F.when(version, F.split(asked, " ").getItem(1)).alias(TEXT),
            )
        )
        parsed = parsed.unionByName(flushes, allowMissingColumns=True)
    output = _engines(parsed, workload, settings, spark, order, keep, number, registry)
    if workload_source is not None:
        assert registry is not None and control is not None
        key_groups = settings.key_groups_for(spark)
        watcher = _Watcher(workload, workload_source, registry, control, settings, key_groups, restart=False)
        _watch_in_background(control, watcher)
    return output


#: the workload watchers of ``detect_stream`` queries, by control folder: (stop request, thread)
_BACKGROUND: dict[str, tuple[Any, Any]] = {}


def _watch_in_background(control: str, watcher: _Watcher, poll: float = 0.05) -> None:
    """Poll ``watcher`` every ``poll`` seconds on a daemon thread until ``stop_watching(control)``."""
    import threading

    stop_watching(control)
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(poll):
            watcher.changed()

    thread = threading.Thread(target=run, name=f"sharp-cer workload watch {control}", daemon=True)
    _BACKGROUND[str(Path(control).resolve())] = (stop, thread)
    thread.start()


def stop_watching(control: str) -> None:
    """End the workload watch ``detect_stream(..., control=control, workload_source=...)`` started."""
    found = _BACKGROUND.pop(str(Path(control).resolve()), None)
    if found is not None:
        found[0].set()
        found[1].join()


def _check_session(spark: SparkSession) -> None:
    if spark.conf.get("spark.sql.streaming.stateStore.providerClass") != ROCKSDB:
        raise SurfaceError(
            "the stream needs the RocksDB state store\n  hint: create the session with spark_session(**stream_conf())"
        )


def _engines(
    parsed: DataFrame,
    workload: Workload,
    settings: StreamSettings,
    spark: SparkSession,
    order: list[str] | None,
    keep: Sequence[Sequence[str]] = (),
    version: int = 0,
    registry: str | None = None,
    operators: int = 2,
) -> DataFrame:
    """Stage 0's rows numbered (stage 1), held until the watermark passes
    them and fed to their key groups' engines (stage 2); ``keep``: the
    lanes of the workload's earlier versions (``lanes.lanes``), ``version``
    its number in the stream's history, ``registry`` the folder of the
    versions the query may move to while it runs (``stream_versions``).
    ``operators`` 1: the one-operator plan (``_one_operator``)."""
    from pyspark.sql import functions as F

    from .stream_key_group import check_live_bounds
    from .stream_processors import KeyGroups, Sequencer

    check_live_bounds(workload, settings.shedder)
    found = lanes(workload, keep)
    key_groups = settings.key_groups_for(spark)
    job = stream_job(workload, settings, key_groups, keep, version)
    if operators == 1:
        return _one_operator(parsed, workload, settings, found, key_groups, job)
    # lanes added while a query ran are routed by stage 1 for good (``stream_versions``), not by Spark
    ones = stage_one(registry) if registry is not None else []
    spark_lanes = tuple(
        Lane((), lane.partition_attributes, frozenset()) if lane.partition_attributes in ones else lane
        for lane in found
    )
    every_route = [
        n * key_groups + g
        for n, lane in enumerate(found)
        if lane.queries  # a lane whose queries are all gone keeps its number, and gets no rows
        for g in range(key_groups if lane.partition_attributes else 1)
    ]
    attributes = list(attribute_kinds(workload.schema))
    coded = F.transform(routes(spark_lanes, attributes, key_groups), lambda r: r[LANE] * key_groups + r[KEY_GROUP])
    staged = parsed.select(
        ROW_KIND, FILE, LOCAL, LINE, ARRIVED, TEXT,
        F.coalesce(F.col(TS), F.lit(NONE)).alias(TS),
        F.coalesce(F.col(PREV), F.lit(NONE)).alias(PREV),
        F.when(F.col(ROW_KIND) == EVENT, coded).otherwise(F.array().cast("array<bigint>")).alias(ROUTE),
        *LETTER_COLUMNS,
        *([PART, *order] if order is not None else []),
        F.lit(0).alias(STREAM_KEY),
        *_carried(attribute_kinds(workload.schema)),
    )  # fmt: skip
    delay = settings.delay_ms(workload)
    sequencer = Sequencer(workload, every_route, staged.columns, order, delay, key_groups, version, registry, job, ones)
    numbered_schema_ = numbered_schema(attribute_kinds(workload.schema))
    numbered = staged.groupBy(STREAM_KEY).transformWithStateInPandas(
        sequencer, arrow_ddl(numbered_schema_), "Append", "None"
    )
    numbered = numbered.observe(EVENTS_IN, F.count(F.when(F.col(ROW_KIND) == EVENT, 1)).alias("n"))
    code = F.col(CODE)
    keyed = (
        numbered.select("*", F.explode_outer(ROUTE).alias(CODE))
        .where(~((F.col(ROW_KIND) == EVENT) & code.isNull()))  # events no lane reads
        .select(
            F.coalesce(F.floor(code / key_groups).cast("bigint"), F.lit(-1).cast("bigint")).alias(LANE),
            F.coalesce(F.pmod(code, F.lit(key_groups)).cast("bigint"), F.lit(0).cast("bigint")).alias(KEY_GROUP),
            F.timestamp_micros(F.floor(F.col(CLOCK) / 1000).cast("bigint")).alias(TIME),
            *[F.col(f"`{c}`") for c in numbered_schema_.names if c != ROUTE],
        )
        .withWatermark(TIME, f"{settings.delay_ms(workload)} milliseconds")
    )
    return keyed.groupBy(LANE, KEY_GROUP).transformWithStateInPandas(
        KeyGroups(job, keyed.columns, registry), STREAM_DDL, "Append", "EventTime"
    )


def _one_operator(
    parsed: DataFrame, workload: Workload, settings: StreamSettings, found: Sequence[Lane], key_groups: int, job: Job
) -> DataFrame:
    """Stage 0's rows of files straight to stage 2, one stateful operator:
    no stage 1. Each file's summary row (its rows and largest time) goes to
    every lane and key group, so each numbers its own rows as stage 1 would
    (``stream_input.number_key_group``: positions, lateness, the next
    micro-batch's watermark) from its copy of the stream's cursor. Lane -1
    takes the bad rows, the events no lane reads (judged late there) and
    the rows counter. Only a file's time moves Spark's watermark: every
    other row's is null, so Spark's late-row filter drops none of them (a
    late event is judged and dead-lettered by its key group); the times
    ride on rows of their own (lane ``TICKS``), which nothing reads."""
    from pyspark.sql import functions as F

    from .stream_packing import PACKED_DDL, pack_key_groups
    from .stream_processors import KeyGroups

    # every key group, of every lane the stream has numbered (one whose queries are gone too: its cursor stays
    # current, should they come back), gets each summary; flushes go to the lanes with queries
    cursors = [n * key_groups + g for n, lane in enumerate(found)
               for g in range(key_groups if lane.partition_attributes else 1)]  # fmt: skip
    engines = [n * key_groups + g for n, lane in enumerate(found) if lane.queries
               for g in range(key_groups if lane.partition_attributes else 1)]  # fmt: skip
    tick = TICKS * key_groups
    attributes = list(attribute_kinds(workload.schema))
    coded = F.transform(routes(tuple(found), attributes, key_groups), lambda r: r[LANE] * key_groups + r[KEY_GROUP])
    kind = F.col(ROW_KIND)
    every = F.array(*[F.lit(c).cast("bigint") for c in [*cursors, -key_groups, tick]])
    route = (
        F.when(kind == EVENT, coded)
        .when(kind == SUMMARY, every)
        .when(kind == FLUSH, F.array(*[F.lit(c).cast("bigint") for c in engines]))
        .otherwise(F.array().cast("array<bigint>"))
    )
    staged = parsed.where(kind != VERSION).select(
        ROW_KIND, FILE, LOCAL, LINE, ARRIVED, TEXT,
        F.coalesce(F.col(TS), F.lit(NONE)).alias(TS),
        F.coalesce(F.col(PREV), F.lit(NONE)).alias(PREV),
        route.alias(ROUTE),
        *LETTER_COLUMNS,
        *_carried(attribute_kinds(workload.schema)),
    )  # fmt: skip
    staged = staged.observe(EVENTS_IN, F.count(F.when(kind == EVENT, 1)).alias("n"))
    code = F.col(CODE)
    # a file's largest time + 1 ms, as stage 1's clocks (``stream_input.horizon_ms``)
    clock = (F.greatest(F.col(TS), F.lit(0).cast("bigint")) + F.lit(1_000_000)) / 1000
    keyed = staged.select("*", F.posexplode_outer(ROUTE).alias("__pos", CODE)).select(
        F.coalesce(F.floor(code / key_groups).cast("bigint"), F.lit(-1).cast("bigint")).alias(LANE),
        F.coalesce(F.pmod(code, F.lit(key_groups)).cast("bigint"), F.lit(0).cast("bigint")).alias(KEY_GROUP),
        F.when((code == tick) & (F.col(TS) != F.lit(NONE)), F.timestamp_micros(F.floor(clock).cast("bigint")))
        .otherwise(F.lit(None).cast("timestamp"))
        .alias(TIME),
        F.coalesce(F.col("__pos") == 0, F.lit(True)).alias(FIRST),
        F.lit(None).cast("double").alias(VALUE),
        F.lit(None).cast("bigint").alias(SEQ),
        F.lit(None).cast("bigint").alias(CLOCK),
        *[F.col(f"`{c}`") for c in staged.columns if c != ROUTE],
    )
    # each input batch's rows of one key group as one row: pyspark's stateful operator walks its input row by row
    packed = keyed.mapInArrow(pack_key_groups, PACKED_DDL).withWatermark(
        TIME, f"{settings.delay_ms(workload)} milliseconds"
    )
    processor = KeyGroups(job, keyed.columns, None, settings.delay_ms(workload), packed=True)
    return packed.groupBy(LANE, KEY_GROUP).transformWithStateInPandas(processor, STREAM_DDL, "Append", "EventTime")


def _carried(kinds: dict[str, str]) -> list[Column]:
    """The event's typed columns as stages 1 and 2 carry them (``stream_input.carried_columns``)."""
    from pyspark.sql import functions as F

    out = [F.col(TYPE)]
    for i, (name, kind) in enumerate(kinds.items()):
        column = F.col(f"`{name}`")
        if kind in INT_KINDS:
            out += [F.coalesce(column, F.lit(0).cast("bigint")).alias(name), column.isNull().alias(null_flag(i))]
        else:
            out.append(column)
    return out


def stream_job(
    workload: Workload, settings: StreamSettings, key_groups: int, keep: Sequence[Sequence[str]] = (), version: int = 0
) -> Job:
    """What a stream's workers run for ``workload`` (its lanes numbered after ``keep``, ``lanes.lanes``)."""
    found = lanes(workload, keep)
    queries = tuple(lane.queries for lane in found)
    return Job(workload, queries, settings.bin_width, settings.shedder, settings.seed, key_groups, version=version)


def run_until_done(query: StreamingQuery) -> None:
    """Wait for an ``availableNow`` query to finish, raising its error as
    ours (the workers' message, without Spark's stack)."""
    try:
        query.awaitTermination()
    except Exception as error:  # Spark wraps the workers' errors
        raise SurfaceError(_cause(str(error))) from None


def _cause(message: str) -> str:
    """The first line a worker raised with sharp-cer's errors, and what follows it."""
    marker = "SurfaceError: "
    if marker in message:
        tail = message.split(marker, 1)[1]
        lines: list[str] = []
        for line in tail.splitlines():
            if lines and not line.startswith("  "):
                break
            lines.append(line)
        return "\n".join(lines)
    return f"the stream failed: {message.splitlines()[0] if message else 'unknown error'}"


def read_output(spark: SparkSession, out: str) -> DataFrame:
    """The stream's committed output (through the sink's log); no rows
    before its first micro-batch is committed."""
    if not committed(out):
        return spark.createDataFrame([], STREAM_DDL)
    return spark.read.parquet(out)


def committed(out: str) -> bool:
    """Whether the stream's sink has committed a micro-batch to ``out`` (its
    log, ``_spark_metadata``, lists one).

    >>> import tempfile
    >>> committed(tempfile.mkdtemp())
    False
    """
    log = Path(out, "_spark_metadata")
    return log.is_dir() and any(p.name.split(".")[0].isdigit() for p in log.iterdir())


@dataclass(frozen=True)
class StreamSummary:
    """A stream's figures so far, from its committed output: the batch
    summary's (cuts by lever; engine latency in cost units per event and,
    engine-side, in ms from an event's release to its key group's engine to
    its matches, against the bounds) and, per query, the end-to-end latency
    of its matches in ms (from the arrival of a match's last event in the
    stream to the match's emission: when the micro-batch that read its file
    started, or ``detect_stream``'s ``arrived`` column; never a file's
    modification time), beside what the settings allow for: the trigger
    interval plus the watermark delay."""

    summary: Summary
    end_to_end: dict[str, dict[str, float]]
    trigger_ms: int | None
    watermark_ms: int
    #: why the stream stopped before its input ended: "SIGINT", "SIGTERM", "timeout" (None: it did not)
    stopped: str | None = None
    #: the entries of the source folder the stream will never read, with the reason (``stream_files``)
    skipped: tuple[tuple[str, str], ...] = ()
    #: the workload versions of the checkpoint's stream (``checkpoint_history``; empty: one version)
    versions: tuple[dict[str, Any], ...] = ()
    #: watched workload changes refused (``run_stream(workload_source=...)``): time and located error
    refusals: tuple[dict[str, Any], ...] = ()
    #: the pauses of this run's graceful restarts for new workloads, in seconds
    pauses_s: tuple[float, ...] = ()
    #: the bounds below the update floor, said on the driver before the stream started (or at its first
    #: micro-batch with events, if the source folder was empty; ``stream_floor``)
    floor_warnings: tuple[str, ...] = ()

    def render(self) -> str:
        """The batch summary's table, then the end-to-end latencies."""
        waits = f"trigger {self.trigger_ms} ms + " if self.trigger_ms is not None else ""
        lines = [
            self.summary.render(),
            f"  end-to-end latency, ms (arrival in the stream to match emission; settings: {waits}"
            f"watermark {self.watermark_ms} ms of event time):",
        ]
        wide = max([22, *map(len, self.end_to_end)])
        for query, figures in self.end_to_end.items():
            lines.append(
                f"    {query:<{wide}} matches {figures['matches']:>8,.0f}  p50 {figures['p50']:>8,.0f}  "
                f"p99 {figures['p99']:>8,.0f}  max {figures['max']:>8,.0f}"
            )
        if self.versions:
            lines.append("  workload versions:")
            lines += [
                f"    version {v['number']} ({v['time']}{', inside the running query' if v.get('in_stream') else ''}): "
                f"{v['change']}"
                for v in self.versions
            ]
        lines += [f"  warning: {line}" for line in self.floor_warnings]
        for refused in self.refusals:
            lines.append(f"  workload change refused ({refused['time']}): {refused['error'].splitlines()[0]}")
        if self.skipped:
            lines.append(f"  skipped, never read: {len(self.skipped)} in the source folder")
            lines += [f"    {path}: {reason}" for path, reason in self.skipped]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The figures as plain JSON data."""
        return {
            **self.summary.to_json(),
            "end_to_end_ms": self.end_to_end,
            "trigger_ms": self.trigger_ms,
            "watermark_ms": self.watermark_ms,
            "stopped": self.stopped,
            "skipped_files": [{"file": path, "reason": reason} for path, reason in self.skipped],
            **({"workload_versions": list(self.versions)} if self.versions else {}),
            **({"workload_refusals": list(self.refusals)} if self.refusals else {}),
            **({"restart_pauses_s": list(self.pauses_s)} if self.pauses_s else {}),
            "floor_warnings": list(self.floor_warnings),
        }


def stream_summary(spark: SparkSession, out: str, workload: Workload, settings: StreamSettings) -> StreamSummary:
    """Summarize what the stream has committed to ``out`` so far."""
    from pyspark.sql import functions as F

    from .summary import summarize_rows
    from .telemetry import ENGINE, aggregate

    output = read_output(spark, out)
    dead = {
        r["name"]: r["count"] for r in output.where(F.col(OUTPUT_KIND) == DEAD_LETTER).groupBy("name").count().collect()
    }
    read = output.where((F.col(OUTPUT_KIND) == COUNTER) & (F.col("name") == "rows") & (F.col("query") == ENGINE))
    rows_read = int(read.agg(F.sum("value")).collect()[0][0] or 0)
    summary = summarize_rows(output, workload, settings.shedder, settings.bin_width, rows_read, dead)
    histograms: dict[str, list[tuple[int, float]]] = {}
    for r in aggregate(output, (E2E,)):
        assert r.bin is not None
        histograms.setdefault(r.query, []).append((r.bin, r.total))
    end_to_end = {}
    for q in workload.queries:
        histogram = sorted(histograms.get(q.name, []))
        values, counts = [v for v, _ in histogram], [c for _, c in histogram]
        end_to_end[q.name] = {
            "matches": float(sum(counts)),
            "p50": weighted_percentile(values, counts, 50),
            "p99": weighted_percentile(values, counts, 99),
            "max": float(values[-1]) if values else 0.0,
        }
    trigger = None if settings.trigger is None else round(settings.trigger * 1000)
    return StreamSummary(summary, end_to_end, trigger, settings.delay_ms(workload))


def run_stream(
    workload: Workload,
    source: str,
    checkpoint: str,
    out: str,
    settings: StreamSettings,
    spark: SparkSession,
    timeout: float | None = None,
    progress: TextIO | None = None,
    *,
    stop: StopRequest | None = None,
    workload_source: str | Path | None = None,
    warn: Callable[[str], None] | None = None,
    note: Callable[[str], None] | None = None,
    began: float | None = None,
) -> StreamSummary:
    """Run the stream and summarize its output. Without a trigger: every
    file there now, then a flush (the end of the input). With one: micro-
    batches every ``trigger`` seconds, a line each on ``progress``. Either
    runs until ``timeout`` seconds have passed or a stop request (``stop``,
    set by the caller; without it SIGINT / SIGTERM), then stops at a
    micro-batch boundary; events the watermark has not passed stay held in
    the checkpoint for the next run. The summary's ``stopped`` says why it
    stopped early, if it did.

    ``workload_source`` (the workload's file, or a folder of one per
    tenant) is watched while the stream runs: a change moves inside the
    running query at its next micro-batch, without a restart
    (``stream_versions``; a new PARTITION BY too); one with a lane Spark
    routes reading other event types than it started with, by a graceful
    restart from the checkpoint at a micro-batch boundary; a bad one is
    refused (logged, kept in the summary and the checkpoint's history),
    and every query runs on.

    With a shedder, each bound below the update floor is said before the
    stream starts, measured on the driver on the first 2,000 events of the
    files in ``source`` (``stream_floor``): to ``warn`` (default: a
    ``RuntimeWarning``) and in the summary's ``floor_warnings``. If the
    folder holds no event yet, ``note`` (default: logger ``sharp_cer``)
    says so once, and the floor is judged at the first micro-batch with
    events.

    The lines on ``progress``: once the query runs, one saying so; one
    when its first micro-batch with data starts; then one per micro-batch,
    counting what it committed (``stream_output.CommittedCounts``), so
    that they add up to the summary (after a line for what earlier runs
    committed, on a restart). ``began`` (``time.monotonic()`` at the
    command's launch) times them."""
    from .stream_output import CommittedCounts

    launched = time.monotonic() if began is None else began
    deadline = None if timeout is None else time.monotonic() + timeout
    lines = progress or io.StringIO()
    counts = CommittedCounts(out)
    if counts.before.rows or counts.before.matches:
        before = counts.before
        print(
            f"resuming from {checkpoint}: earlier runs committed {before.rows:,} rows read "
            f"({before.dead_letters:,} dead-lettered) and {before.matches:,} matches",
            file=lines,
            flush=True,
        )

    def line(progress: Any) -> str:
        if "://" in out:  # a cluster's file system: its sink's log is not read here (the observed counts)
            return batch_line(progress)
        found = counts.of(int(progress["batchId"]))
        return committed_line(progress, found.rows, found.dead_letters, found.matches)

    def first() -> str:
        return f"first micro-batch started, {time.monotonic() - launched:.1f} s after the start"

    def left() -> float | None:
        return None if deadline is None else max(deadline - time.monotonic(), 0.0)

    floor = _live_floor(workload, source, settings, warn, note)
    # workload versions move inside a watched stream's query: its stage 1 tells them (a new checkpoint's plan)
    plan = 2 if workload_source is not None else None
    query = start_stream(workload, source, checkpoint, out, settings, spark, plan)
    print(
        f"stream running {time.monotonic() - launched:.1f} s after the start: reading {source}, a line per micro-batch",
        file=lines,
        flush=True,
    )
    watcher = None
    if workload_source is not None:
        key_groups = check_checkpoint(checkpoint, workload, settings.key_groups, settings.key_groups_for(spark))
        control = str(Path(checkpoint, "control"))
        watcher = _Watcher(workload, workload_source, checkpoint, control, settings, key_groups, lines=lines)
    changed = _judging(floor, checkpoint, watcher.changed if watcher is not None else None)
    poll = 0.5
    why = watch(query, lines, left(), poll=poll, asked=stop, changed=changed, line=line, first=first)
    _raise_failure(query)
    floor.poll(checkpoint, now=True)  # a run over before a poll saw its first micro-batch
    while why == "workload" and watcher is not None:
        # a graceful restart from the checkpoint, at a micro-batch boundary: nothing lost or doubled
        began = time.monotonic()
        try:
            query = start_stream(watcher.next, source, checkpoint, out, settings, spark, plan)
            workload = watcher.taken()
        except SurfaceError as error:  # the checkpoint refuses it (another schema, lateness, ...)
            watcher.refuse(error)
            query = start_stream(watcher.current, source, checkpoint, out, settings, spark, plan)
            watcher.started_with(watcher.current)
        watcher.pauses.append(time.monotonic() - began)
        print(f"workload: {watcher.said}; restarted in {watcher.pauses[-1]:.1f} s", file=lines, flush=True)
        why = watch(
            query,
            lines,
            left(),
            poll=poll,
            asked=stop,
            changed=_judging(floor, checkpoint, watcher.changed),
            line=line,
        )
        _raise_failure(query)
    if watcher is not None:
        workload = watcher.current
    if settings.trigger is None and why == "ended":
        request_flush(checkpoint)
        query = start_stream(workload, source, checkpoint, out, settings, spark, plan)
        why = watch(query, lines, left(), asked=stop, line=line)
        _raise_failure(query)
    summary = stream_summary(spark, out, workload, settings)
    skipped = tuple(skipped_files(source, checkpoint, (out,)))
    versions, _ = checkpoint_history(checkpoint)
    refused = tuple(watcher.refusals) if watcher is not None else ()
    pauses = tuple(watcher.pauses) if watcher is not None else ()
    return replace(
        summary,
        stopped=None if why == "ended" else why,
        skipped=skipped,
        versions=tuple(versions) if len(versions) > 1 else (),
        refusals=refused,
        pauses_s=pauses,
        floor_warnings=tuple(floor.warnings),
    )


def _live_floor(
    workload: Workload,
    source: str,
    settings: StreamSettings,
    warn: Callable[[str], None] | None,
    note: Callable[[str], None] | None,
) -> LiveFloor:
    """The stream's floor, judged now on the source folder's files (``stream_floor``)."""
    there = Path(source).is_dir()  # else start_stream refuses it
    fmt = (settings.format or format_of(source)) if there else "csv"
    spec = LoadSpec(workload.schema, fmt, workload.allowed_lateness)
    floor = LiveFloor(stream_job(workload, settings, 1), source, spec, warn, note)
    if there and fmt in TEXT_FORMATS:
        floor.before()
    return floor


def _judging(floor: LiveFloor, checkpoint: str, changed: Callable[[], bool] | None) -> Callable[[], bool] | None:
    """``watch``'s poll, judging the floor at the first micro-batch with events if it is not judged yet."""
    if floor.judged:
        return changed

    def poll() -> bool:
        floor.poll(checkpoint)
        return changed() if changed is not None else False

    return poll


class _Watcher:
    """The workload file or folder of a watched stream (``run_stream``,
    ``detect_stream``): ``changed`` polls it (``language.workload_source``).
    A new workload moves inside the running query at its next micro-batch
    (``stream_versions``: recorded in ``registry``, announced in
    ``control``); one it cannot take (a lane Spark routes reading other
    event types) asks the caller for a graceful restart (``restart``),
    or, without one, is refused. A bad change is refused, logged and kept
    in ``refusals`` (and in the registry's history); the stream runs on."""

    def __init__(
        self,
        workload: Workload,
        path: str | Path,
        registry: str | None = None,
        control: str | None = None,
        settings: StreamSettings | None = None,
        key_groups: int = 1,
        *,
        restart: bool = True,
        lines: TextIO | None = None,
    ) -> None:
        from sharp_cer.language.workload_source import WorkloadSource

        self.source = WorkloadSource(path)
        self.current = workload
        self.next = workload
        self.said = ""
        self.refusals: list[dict[str, Any]] = []
        self.pauses: list[float] = []
        self.registry, self.control, self.restart, self.lines = registry, control, restart, lines
        self.settings, self.key_groups = settings or StreamSettings(), key_groups
        self.started = self.running = self._job(workload, self._number())
        #: versions moved to inside the running query: (number, the time the files were seen changed)
        self.moves: list[tuple[int, float]] = []
        self.stamp = self._stamp()
        with contextlib.suppress(SharpCerError):  # a bad file now is refused at its next change
            now = self.source.poll()  # the contents now are the running workload's, read at the next change
            if now is not None and now.fingerprint() != workload.fingerprint():
                # the query runs another workload than the files hold: they are taken at the first poll
                self.source, self.stamp = WorkloadSource(path), ()

    def _stamp(self) -> tuple[tuple[str, int, int], ...]:
        """The files' names, modification times and sizes: read again only when these move."""
        found = []
        for path in self.source.files():
            with contextlib.suppress(OSError):
                status = path.stat()
                found.append((path.name, status.st_mtime_ns, status.st_size))
        return tuple(found)

    def _number(self) -> int:
        versions, _ = checkpoint_history(self.registry) if self.registry is not None else ([], [])
        return max(len(versions) - 1, 0)

    def _job(self, workload: Workload, number: int) -> Job:
        _, keep = checkpoint_history(self.registry) if self.registry is not None else ([], [])
        return stream_job(workload, self.settings, self.key_groups, keep, number)

    def started_with(self, workload: Workload) -> None:
        """The query was (re)started with ``workload``: the version the checkpoint gave it."""
        self.current = workload
        self.started = self.running = self._job(workload, self._number())

    def changed(self) -> bool:
        """Whether the caller must restart the query for a changed workload
        (``next``); a change the running query takes moves inside it."""
        from .stream_key_group import check_live_bounds
        from .stream_versions import announce, dry_run, in_stream_problem, job_lanes, save, stage_one_lanes

        seen = time.time()
        stamp = self._stamp()
        if stamp == self.stamp:
            return False  # nothing touched: no file is read
        self.stamp = stamp
        try:
            found = self.source.poll()
            if found is None or found.fingerprint() == self.current.fingerprint():
                return False
            number = self._number() + 1
            check_live_bounds(found, self.settings.shedder)  # a fraction bound cannot be shed to live
            job = self._job(found, number)
            dry_run(self.running, job)  # what a key group would refuse, refused here
            ones = stage_one(self.registry) if self.registry is not None else []
            problem = (
                in_stream_problem(self.started, self.running, job, ones) if self.registry is not None else "no registry"
            )
            if problem is None and self.registry is not None and checkpoint_operators(self.registry) == 1:
                problem = "the stream runs one stateful operator (no stage 1 to tell the key groups a version)"
            if problem is not None and not self.restart:
                raise SurfaceError(
                    f"{self.source.path}: error: the running stream cannot take this change: {problem}\n"
                    "  hint: restart the query with the new workload: its checkpoint continues"
                )
        except SharpCerError as error:
            self.refuse(error)
            return False
        if problem is not None:
            self.next = found
            return True
        assert self.registry is not None and self.control is not None
        save(self.registry, job)  # whole, before the history or the control file names it
        changes = signature_changes(self.current.signature(), found.signature())
        routed = {lane.partition_attributes for lane in job_lanes(self.started) if lane.queries} - set(ones)
        added = [lane.partition_attributes for _, lane in stage_one_lanes(job, routed)]
        record_version(self.registry, found, "; ".join(changes), added, in_stream=True)
        announce(self.control, number)
        self.said = "; ".join(c.split(": was ")[0] for c in changes)
        self.current, self.running = found, job
        self.moves.append((number, seen))
        if self.lines is not None:
            print(f"workload: {self.said}; version {number} from the next micro-batch", file=self.lines, flush=True)
        return False

    def taken(self) -> Workload:
        """The new workload, now running (after a restart)."""
        changes = signature_changes(self.current.signature(), self.next.signature())
        self.said = "; ".join(c.split(": was ")[0] for c in changes)  # the parts, without the texts
        self.started_with(self.next)
        return self.current

    def refuse(self, error: Exception) -> None:
        import logging

        stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        self.refusals.append({"time": stamp, "error": str(error)})
        self.said = "change refused, every query runs on as before"
        logging.getLogger("sharp_cer").error("workload change refused, every query runs on as before:\n%s", error)
        if self.registry is not None:
            _amend(self.registry, lambda stored: stored.setdefault("refusals", []).append(self.refusals[-1]))


def record_version(
    registry: str, workload: Workload, change: str, routed: Sequence[Sequence[str]] = (), **facts: Any
) -> int:
    """Append ``workload`` to the history of the stream in ``registry``
    (``check_checkpoint``'s file) as its next version, its new lanes after
    the others, and the lanes ``routed`` to the ones stage 1 routes; its number."""
    numbered: list[int] = []

    def append(stored: dict[str, Any]) -> None:
        versions = stored.get("versions") or [_version(0, None, "the first workload")]
        entry = {**_version(len(versions), workload, change), **facts}
        versions.append(entry)
        numbered.append(entry["number"])
        kept = [list(lane.partition_attributes) for lane in lanes(workload, stored.get("lanes") or [])]
        ones = [list(spec) for spec in stored.get(STAGE_ONE) or []]
        ones += [list(spec) for spec in routed if list(spec) not in ones]
        stored.update(signature=workload.signature(), versions=versions, lanes=kept)
        if ones:
            stored[STAGE_ONE] = ones

    _amend(registry, append)
    return numbered[0]


def _amend(registry: str, change: Any) -> None:
    """Change the registry's history file in place, whole or not at all."""
    path = Path(registry) / SIGNATURE_FILE
    stored = json.loads(path.read_text())
    change(stored)
    partial = path.with_name(f".{path.name}.{time.time_ns()}")
    partial.write_text(json.dumps(stored, indent=1))
    partial.rename(path)


def workload_refusals(registry: str) -> list[dict[str, Any]]:
    """The workload changes a watched stream refused (time and located
    error), as its registry keeps them (``run_stream``: the checkpoint;
    ``detect_stream``: ``CONTROL/_versions``)."""
    path = Path(registry) / SIGNATURE_FILE
    return list(json.loads(path.read_text()).get("refusals") or []) if path.exists() else []


def _raise_failure(query: StreamingQuery) -> None:
    """The query's error as ours (the workers' message, without Spark's stack)."""
    failure = query.exception()
    if failure is not None:  # Spark wraps the workers' errors
        raise SurfaceError(_cause(str(failure)))
