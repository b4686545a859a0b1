"""Batch detection on Spark: events in, matches out, one engine per key group.

``run_detection`` reads, validates and routes the events in one Python pass
(``routing``), kept (persisted) while the driver collects each partition's
summary from it (one Spark job, a small collect), which says where each
partition starts in the stream: each event goes to every lane that reads it
(lanes whose partition attributes overlap merged, ``batch_lanes``), with the
key group of its partition key there (a hash of the key's values into
``key_groups`` buckets), and each input batch's rows of one lane and key
group travel as one row of Arrow IPC bytes. The workers number the rows
they get in the stream and run one engine per lane and key group
(``worker``):

- ``method="udtf"`` (default): the Arrow Python UDTF over
  ``TABLE(blobs) PARTITION BY (lane, key group) ORDER BY`` the input's
  order; Spark guarantees each call one key group's rows, in order;
- ``method="map"``: the fallback, ``repartition(lane, key group)``,
  ``sortWithinPartitions(lane, key group, order)`` and ``mapInArrow``, one
  engine at a time per task.

Rows come in the input order (``seq``): it is the order the in-process
loaders give, and in it positions (``WITHIN n EVENTS``) and lateness are
judged; for input in time order it is the time order too. The dead
letters travel in a lane of their own (``routing.LETTERS``) and come out
with the matches. Nothing but per-partition summaries and the aggregated
statistics reach the driver.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sharp_cer.errors import SurfaceError
from sharp_cer.language import Workload
from sharp_cer.language.trailing import trailing_absence

from .columns import (
    DEAD_LETTER,
    DEAD_LETTERS,
    KEY_GROUP,
    LANE,
    MATCH,
    MATCH_COLUMNS,
    OUTPUT_KIND,
    POSITIONS,
    SEQ,
    TYPE,
    arrow_ddl,
)
from .lanes import Lane, lanes
from .prepare import TEXT_FORMATS, LoadSpec, Prepared, prepare, read_input
from .routing import (
    BATCH_DDL,
    BLOBS,
    LETTERS,
    ORDER,
    SUMMARIES,
    Numbering,
    Routing,
    late_across,
    letter_output,
    route_partition,
    summaries,
    unpack,
    widen,
)
from .summary import Summary, summarize_rows
from .worker import Job, KeyGroupRun, floor_warnings_before, run_sorted

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

METHODS = ("udtf", "map")


@dataclass
class Detection:
    """One detection job: the prepared input, the lanes, the workers'
    output (matches and statistics, lazily computed) and the matches."""

    job: Job
    lanes: tuple[Lane, ...]
    prepared: Prepared
    output: DataFrame
    #: the bounds below the update floor, said before the run (``run_detection``)
    floor_warnings: list[str] = field(default_factory=list)
    _persisted: list[DataFrame] = field(default_factory=list)
    #: the routed input, kept from the read that counted the partitions' summaries (released by ``close``)
    _routed: DataFrame | None = None

    @property
    def matches(self) -> DataFrame:
        """Every match: query, tenant, start, end (positions), events
        (positions after projection) and vars (positions per variable)."""
        from pyspark.sql import functions as F

        return self.output.where(F.col(OUTPUT_KIND) == MATCH).select(*[F.col(f"`{c}`") for c in MATCH_COLUMNS])

    @property
    def dead_letters(self) -> DataFrame:
        """The rows that were not events, with their reasons (``columns.DEAD_LETTERS``):
        once ``persist``ed, read from the kept output, which carries them (``routing.LETTERS``)."""
        if not self._persisted:
            return self.prepared.dead_letters
        from pyspark.sql import functions as F

        kept = self.output.where(F.col(OUTPUT_KIND) == DEAD_LETTER)
        named = {"position": "start", "kind": "name"}
        return kept.select(*[F.col(f"`{named.get(f, f)}`").alias(f) for f in DEAD_LETTERS.names])

    @property
    def events(self) -> DataFrame:
        """The accepted events: ``__seq`` (their position), ``type`` and every attribute."""
        return self.prepared.events

    def matches_with_events(self) -> DataFrame:
        """The matches joined back to their events' attributes, each event
        once (see ``join_events``)."""
        types = sorted({e.name for e in self.job.workload.schema.event_types()})
        return join_events(self.matches, self.events, types)

    def persist(self) -> Detection:
        """Keep the workers' output once computed, with the dead letters
        it carries (``routing.LETTERS``), so that writing the matches, the
        dead letters and reading the summary run the engines, and the
        reading of the input, once."""
        from pyspark import StorageLevel

        self.output = self.output.persist(StorageLevel.MEMORY_AND_DISK)
        self._persisted.append(self.output)
        return self

    def summary(self) -> Summary:
        """Matches per query and tenant, shedding, and latency against the
        bounds, aggregated on the cluster from the workers' telemetry rows
        (see ``summary``; one Spark job, a small collect) and the dead
        letters per kind."""
        dead = None  # persisted: counted in the output, in the telemetry's one collect
        if not self._persisted:
            dead = {r["kind"]: r["count"] for r in self.dead_letters.groupBy("kind").count().collect()}
        job = self.job
        # a batch's events arrive all at once: their waits say nothing of a bound in ms (``MS_NOT_JUDGED``)
        return summarize_rows(
            self.output,
            job.workload,
            job.shedder,
            job.bin_width,
            self.prepared.rows,
            dead,
            ms_judged=False,
            latency=job.latency,
        )

    def close(self) -> None:
        """Release what this job persisted."""
        for frame in self._persisted:
            frame.unpersist()
        if self._routed is not None:
            self._routed.unpersist()
        self.prepared.close()


def detect(events: DataFrame, workload: Workload, **options: Any) -> DataFrame:
    """The matches of ``workload`` over a DataFrame of events (a ``type``
    column and one column per attribute), as a DataFrame with columns
    ``MATCH_COLUMNS``; see ``run_detection`` for the options. Nothing is
    kept for it (each use reads the events again): ``run_detection`` keeps
    the routed input for its job until ``close``."""
    detection = run_detection(events, workload, **options)
    detection.close()
    return detection.matches


def run_detection(
    events: DataFrame | str,
    workload: Workload,
    *,
    spark: SparkSession | None = None,
    shedder: str | None = None,
    seed: int = 0,
    method: str = "udtf",
    bins: int = 60,
    key_groups: int | None = None,
    format: str | None = None,
    groups: int | None = None,
    latency: bool = True,
) -> Detection:
    """Plan the detection of ``workload`` over ``events`` (a DataFrame, or a
    path to .csv, .jsonl or .parquet events read with ``spark``).

    ``shedder`` (a name of ``shedding.SHEDDERS``) sheds load per key group
    to the workload's latency bounds; a fraction bound is taken of the
    key group's own unshedded latency. With a shedder, each bound below the
    update floor, measured on the input's first 2,000 events, is said before
    the run, as a ``RuntimeWarning`` and in ``floor_warnings``. ``bins`` is the number of time bins the
    statistics are kept in (for the plot); ``key_groups`` the number of key
    groups of a partitioned lane (default: one per two shuffle partitions,
    two per core, so that keys still spread over the cores; ``groups``, its name before 0.2.0, is
    deprecated). ``latency`` False records no latency per event (the
    summary's cost units and ms, and the over-bound counts, are then empty;
    a shedder records it anyway): less work per event. Validating the input runs one Spark
    job; the detection runs when its output is used. ``close()`` the
    result to release what ``persist`` kept.
    """
    if groups is not None:
        warnings.warn(
            "run_detection(groups=N) is run_detection(key_groups=N) since sharp-cer 0.2.0, and groups= goes in 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        key_groups = groups if key_groups is None else key_groups
    if method not in METHODS:
        raise SurfaceError(f"unknown method {method!r}\n  expected: one of {', '.join(METHODS)}")
    if shedder is not None:
        from sharp_cer.shedding import SHEDDERS

        if shedder not in SHEDDERS:
            raise SurfaceError(f"unknown shedder {shedder!r}\n  expected: one of {', '.join(sorted(SHEDDERS))}")
    if isinstance(events, str):
        if spark is None:
            from .session import spark_session

            spark = spark_session()
        raw, fmt = read_input(spark, events, format)
    else:
        raw, fmt = events, format or "table"
    found = batch_lanes(lanes(workload))
    parts = int(raw.sparkSession.conf.get("spark.sql.shuffle.partitions") or 4)
    # few engines cost less (each runs every query of its lanes over its keys, as in-process), and a few
    # more than the cores still spread the keys: half a shuffle partition's worth (two per core, by default)
    count = key_groups or max(2, parts // 2)
    plan = Routing(LoadSpec(workload.schema, fmt, workload.allowed_lateness), found, count)
    routed, prepared, kept = _read_once(raw, plan)
    assert prepared.offsets is not None
    numbering = Numbering(prepared.offsets, fmt in TEXT_FORMATS)
    width = max(1, -(-prepared.rows // bins))
    trailing = any(trailing_absence(q.checked.query.pattern) is not None for q in workload.queries)
    final_time = prepared.latest_time if trailing else None
    job = Job(workload, tuple(lane.queries for lane in found), width, shedder, seed, count, final_time)
    job = dataclasses.replace(job, latency=latency or shedder is not None)
    floor = floor_warnings_before(job, _first_events(prepared, workload)) if shedder is not None else []
    for line in floor:
        warnings.warn(line, RuntimeWarning, stacklevel=2)
    if method == "udtf":
        by_key_group = routed.asTable().partitionBy(LANE, KEY_GROUP).orderBy(ORDER)
        output = _detect_key_group_udtf(job, numbering)(by_key_group)
    else:
        ordered = routed.repartition(parts, LANE, KEY_GROUP).sortWithinPartitions(LANE, KEY_GROUP, ORDER)
        output = ordered.mapInArrow(functools.partial(run_sorted_batch, job, numbering), BATCH_DDL)
    return Detection(job, found, prepared, output, floor, _routed=kept)


def _read_once(raw: DataFrame, plan: Routing) -> tuple[DataFrame, Prepared, DataFrame | None]:
    """The input read, validated and routed in one Python pass (the rows
    meet Spark's row handling once, on the shuffle) and kept while the
    driver collects the partitions' summaries (one Spark job): the routed
    rows, the input prepared from the summaries, and what is kept (to
    release once the job is done). Where an event may be late against an
    earlier partition (``routing.late_across``), the input is read again,
    each partition judged against the ones before it, and nothing is kept."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    routed = raw.mapInArrow(functools.partial(route_partition, plan), arrow_ddl(BLOBS))
    kept: DataFrame | None = routed.persist(StorageLevel.MEMORY_AND_DISK)
    found = summaries(r.asDict() for r in routed.where(F.col(LANE) == SUMMARIES).collect())
    prepared = prepare(raw, plan.spec, found)
    if late_across(found, plan.spec.allowed_lateness):
        routed.unpersist()
        assert prepared.offsets is not None
        again = dataclasses.replace(plan, latest=prepared.offsets.latest)
        routed, kept = raw.mapInArrow(functools.partial(route_partition, again), arrow_ddl(BLOBS)), None
    return routed.where(F.col(LANE) != SUMMARIES), prepared, kept


def _first_events(prepared: Prepared, workload: Workload, count: int = 2000) -> Any:
    """The input's first ``count`` events (one small Spark job), as a batch."""
    from sharp_cer.events.loaders import load_arrow

    table = prepared.events.orderBy(SEQ).limit(count).toArrow()
    batch, _ = load_arrow(table.drop_columns([SEQ]), workload.schema, allowed_lateness=workload.allowed_lateness)
    return batch


def join_events(matches: DataFrame, events: DataFrame, type_names: list[str] | None = None) -> DataFrame:
    """One row per event of each match, once (the flat form of
    ``sharp_cer.events.alerts``): the match's columns, the ``variable`` the
    event is listed under and its ``position``, then the event's ``type``
    and attributes (from ``events``, as ``Detection.events`` gives them).
    An event several variables hold is listed under one: a name given with
    AS before an event type's name (``type_names``), then the variable
    holding the fewest events, then the first name. Joins done by Spark."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    numbered = matches.withColumn("__match", F.monotonically_increasing_id())
    per_variable = numbered.select("*", F.explode("vars").alias("variable", POSITIONS))
    sized = per_variable.withColumn("__size", F.size(POSITIONS))
    per_event = sized.select("*", F.explode(POSITIONS).alias("position")).drop(POSITIONS)
    is_type = F.col("variable").isin(list(type_names or []))
    choice = Window.partitionBy("__match", "position").orderBy(is_type, F.col("__size"), F.col("variable"))
    once = per_event.withColumn("__rank", F.row_number().over(choice)).where(F.col("__rank") == 1)
    once = once.drop("__rank", "__size", "__match")
    return once.join(events, once["position"] == events[SEQ]).drop(SEQ)


def batch_lanes(found: tuple[Lane, ...]) -> tuple[Lane, ...]:
    """The lanes a batch run gives one engine each per key group: lanes
    partitioned by attributes some have in common merged into one, split by
    the attributes they share (each key of a lane falls in one key group
    still: its events agree on those), so that an event reaches one engine
    for all of them, which partitions by each query's own key as
    in-process; the lane with no key stays as it is. (A stream keeps its
    lanes: its state is kept under their numbers.)

    >>> a, b = Lane(("q1",), ("name",), frozenset("A")), Lane(("q2",), (), frozenset("B"))
    >>> c, d = Lane(("q3",), ("name", "volume"), frozenset("B")), Lane(("q4",), ("id",), frozenset("A"))
    >>> [(m.queries, m.partition_attributes, sorted(m.event_types)) for m in batch_lanes((a, b, c, d))]
    [(('q1', 'q3'), ('name',), ['A', 'B']), (('q2',), (), ['B']), (('q4',), ('id',), ['A'])]
    """
    merged: list[Lane] = []
    for lane in found:
        for i, other in enumerate(merged):
            common = tuple(a for a in other.partition_attributes if a in lane.partition_attributes)
            if lane.partition_attributes and common:
                merged[i] = Lane(other.queries + lane.queries, common, other.event_types | lane.event_types)
                break
        else:
            merged.append(lane)
    return tuple(merged)


def routes(found: tuple[Lane, ...], attributes: list[str], key_groups: int) -> Column:
    """An event's lanes: the array of (``__lane``, ``__group``) of every lane
    whose streams hold its type and in which it has a partition key."""
    from pyspark.sql import functions as F

    choices = []
    for number, lane in enumerate(found):
        key = _key(lane, set(attributes))
        chosen = F.col(TYPE).isin(sorted(lane.event_types)) & key.isNotNull()
        bucket = F.pmod(F.xxhash64(key), F.lit(key_groups)) if lane.partition_attributes else F.lit(0).cast("bigint")
        choices.append(F.when(chosen, F.struct(F.lit(number).alias(LANE), bucket.alias(KEY_GROUP))))
    return F.filter(F.array(*choices), lambda c: c.isNotNull())


def _key(lane: Lane, attributes: set[str]) -> Column:
    """The lane's partition key of an event: the JSON list (as text) of its
    values of the lane's partition attributes (None: it lacks one, or one
    is null); '' in a lane without PARTITION BY."""
    from pyspark.sql import functions as F

    names = lane.partition_attributes
    if not names:
        return F.lit("")
    if not set(names) <= attributes:
        return F.lit(None).cast("string")  # no event type has them all
    present = functools.reduce(lambda a, b: a & b, [F.col(f"`{n}`").isNotNull() for n in names])
    return F.when(present, F.to_json(F.array(*[F.col(f"`{n}`").cast("string") for n in names])))


def run_sorted_batch(job: Job, numbering: Numbering, tables: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``worker.run_sorted`` over routed rows (``method="map"``; ``BLOBS``
    sorted by lane, key group and input order), numbered in the stream: the
    dead letters' rows written out, the rest run by the key groups' engines."""
    import pyarrow as pa

    letters: list[pa.Table] = []

    def events() -> Iterator[pa.RecordBatch]:
        for blobs in tables:
            lanes = blobs.column(LANE).to_pylist()
            for lane, rows in zip(lanes, unpack(blobs, numbering), strict=True):
                if lane == LETTERS:
                    letters.append(letter_output(rows))
                else:
                    yield from rows.to_batches()

    for out in run_sorted(job, events()):
        yield from widen(pa.Table.from_batches([out])).to_batches()
    for table in letters:
        yield from table.to_batches()


#: a key group's routed pieces are fed to its engine joined up to about this many rows: an engine's
#: cost per batch is paid once per ~65k events, not once per input batch's piece of a few thousand
FEED_ROWS = 65536


def together(tables: Iterable[pa.Table], rows: int = FEED_ROWS) -> Iterator[pa.Table]:
    """Consecutive ``tables`` (one schema) joined into tables of at least
    ``rows`` rows each (the last may hold fewer), in their order.

    >>> import pyarrow as pa
    >>> [t["x"].to_pylist() for t in together([pa.table({"x": [i] * i}) for i in (1, 2, 3, 1)], rows=3)]
    [[1, 2, 2], [3, 3, 3], [1]]
    """
    import pyarrow as pa

    held: list[pa.Table] = []
    size = 0
    for table in tables:
        held.append(table)
        size += table.num_rows
        if size >= rows:
            yield pa.concat_tables(held).combine_chunks()
            held, size = [], 0
    if held:
        yield pa.concat_tables(held).combine_chunks()


def _detect_key_group_udtf(job: Job, numbering: Numbering) -> Any:
    """The Arrow UDTF that runs one lane and key group (its rows numbered in
    the stream by ``numbering``): a new instance per key group."""
    from pyspark.sql.functions import arrow_udtf

    @arrow_udtf(returnType=BATCH_DDL)  # type: ignore[arg-type]  # PySpark's stubs expect a function
    class DetectKeyGroup:
        def __init__(self) -> None:
            self.run: KeyGroupRun | None = None

        def eval(self, blobs: pa.RecordBatch) -> Any:
            lane = blobs.column(LANE)[0].as_py()
            if lane == LETTERS:  # the dead letters' lane: written out as they are
                for rows in unpack(blobs, numbering):
                    yield letter_output(rows)
                return
            if self.run is None:
                self.run = KeyGroupRun(job, lane)
            for rows in together(unpack(blobs, numbering)):
                yield widen(self.run.feed(rows))

        def terminate(self) -> Any:
            if self.run is not None:
                yield widen(self.run.finish())

    return DetectKeyGroup
