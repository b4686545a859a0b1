"""Telemetry rows: what a key group's engine measured, apart from its
matches. Workers build them here (``telemetry_table``); the driver reads
them back, summed over the key groups, here (``aggregate``), and the
summaries (``summary``, ``stream.stream_summary``) never spell their
layout. On the wire they share the output table with the match rows
(``columns.OUTPUT``, told apart by ``columns.OUTPUT_KIND``), so one Spark job
runs the engines once for both.

>>> table = telemetry_table([counter("q", "matches", 2.0), Telemetry("latency", "q", 7, None, 3.0)])
>>> table.column(OUTPUT_KIND).to_pylist(), table.column("start").null_count
(['counter', 'latency'], 2)
>>> read_telemetry(table)[0]
Telemetry(kind='counter', query='q', bin=None, name='matches', value=2.0)
>>> Aggregated(COUNTER, "q", None, "ms_max", total=9.0, top=5.0, least=4.0).combined
5.0
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import pyarrow as pa

from .columns import BIN, COUNTER, OUTPUT_KIND, TELEMETRY_KINDS, TELEMETRY_ROW, rows_of

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: counters whose key groups combine by max, not by sum
MAX_COUNTERS = frozenset({"bound_units", "bound_ms", "ms_max"})
#: counters whose key groups combine by min
MIN_COUNTERS = frozenset({"ms_min"})
#: the levers that cut work, as the run summary names them (``latency_summary``)
CUTS = ("events", "partial_matches", "enumerations_cut_short")
#: the query of the engine's own counters (events shed, engines, rows read)
ENGINE = ""
#: a time bin's figures of the engine-side latency in ms: its events, their sum, the largest
#: (``engine.queueing.QueueLog.bins``); key groups and releases add the first two and max the last
MS_BINS = ("ms_events", "ms_sum", "ms_max")


class Telemetry(NamedTuple):
    """One telemetry row: its kind (``columns.TELEMETRY_KINDS``), the
    query (``ENGINE``: the engine's), the bin (None: a counter), the name
    (None: a histogram entry) and the value."""

    kind: str
    query: str
    bin: int | None
    name: str | None
    value: float


def counter(query: str, name: str, value: float) -> Telemetry:
    """A counter row."""
    return Telemetry(COUNTER, query, None, name, float(value))


def ms_bin_rows(query: str, bins: Iterable[tuple[int, int, float, float]]) -> list[Telemetry]:
    """A query's time bins of latency in ms (``QueueLog.bins``) as ``BIN`` rows named by ``MS_BINS``.

    >>> [(r.bin, r.name, r.value) for r in ms_bin_rows("q", [(3, 2, 5.0, 4.0)])]
    [(3, 'ms_events', 2.0), (3, 'ms_sum', 5.0), (3, 'ms_max', 4.0)]
    """
    return [
        Telemetry(BIN, query, b, name, float(value))
        for b, *figures in bins
        for name, value in zip(MS_BINS, figures, strict=True)
    ]


def telemetry_table(rows: Iterable[tuple[str, str, int | None, str | None, float]]) -> pa.Table:
    """Telemetry rows as rows of the workers' output table (``columns.OUTPUT``)."""
    listed = list(rows)
    kinds, queries, bins, names, values = zip(*listed, strict=True) if listed else ((),) * 5
    return rows_of(list(kinds), query=list(queries), bin=list(bins), name=list(names), value=list(values))


def read_telemetry(table: pa.Table) -> list[Telemetry]:
    """The telemetry rows of an output table, in order (the match rows left out)."""
    columns = [table.column(c).to_pylist() for c in (OUTPUT_KIND, *TELEMETRY_ROW.names)]
    return [Telemetry(*row) for row in zip(*columns, strict=True) if row[0] in TELEMETRY_KINDS]


@dataclass(frozen=True)
class Aggregated:
    """One telemetry row's values over every key group: their sum, largest and smallest."""

    kind: str
    query: str
    bin: int | None
    name: str | None
    total: float
    top: float
    least: float

    @property
    def combined(self) -> float:
        """A counter's value for the whole run: the largest for ``MAX_COUNTERS``,
        the smallest for ``MIN_COUNTERS``, else the sum."""
        return self.top if self.name in MAX_COUNTERS else self.least if self.name in MIN_COUNTERS else self.total


def aggregate(output: DataFrame, kinds: Sequence[str] = TELEMETRY_KINDS) -> list[Aggregated]:
    """The telemetry rows of ``kinds`` in the workers' output, summed (and
    maxed and minned) over the key groups per kind, query, bin and name:
    one Spark job, a small collect."""
    from pyspark.sql import functions as F

    rows = (
        output.where(F.col(OUTPUT_KIND).isin(*kinds))
        .groupBy(OUTPUT_KIND, "query", "bin", "name")
        .agg(F.sum("value").alias("total"), F.max("value").alias("top"), F.min("value").alias("least"))
        .collect()
    )
    return [Aggregated(r[OUTPUT_KIND], r["query"], r["bin"], r["name"], r["total"], r["top"], r["least"]) for r in rows]


def aggregate_collected(output: DataFrame, kinds: Sequence[str] = TELEMETRY_KINDS) -> list[Aggregated]:
    """``aggregate``, the rows collected as they are (one Spark job, no
    shuffle: a batch run's telemetry is a few rows per query, bin and key
    group) and summed here; the same rows as ``aggregate`` gives, in no order.

    >>> rows = telemetry_table([counter("q", "ms_max", 2.0), counter("q", "ms_max", 5.0), counter("", "engines", 1)])
    >>> sorted(_sum_table(rows.select([OUTPUT_KIND, *TELEMETRY_ROW.names])), key=lambda r: r.query)
    ... # doctest: +NORMALIZE_WHITESPACE
    [Aggregated(kind='counter', query='', bin=None, name='engines', total=1.0, top=1.0, least=1.0),
     Aggregated(kind='counter', query='q', bin=None, name='ms_max', total=7.0, top=5.0, least=2.0)]
    """
    from pyspark.sql import functions as F

    return _sum_table(output.where(F.col(OUTPUT_KIND).isin(*kinds)).select(OUTPUT_KIND, *TELEMETRY_ROW.names).toArrow())


def _sum_table(table: pa.Table) -> list[Aggregated]:
    keys = [OUTPUT_KIND, *TELEMETRY_ROW.names[:-1]]
    summed = table.group_by(keys, use_threads=False).aggregate([("value", "sum"), ("value", "max"), ("value", "min")])
    columns = [summed.column(c).to_pylist() for c in (*keys, "value_sum", "value_max", "value_min")]
    return [Aggregated(*row) for row in zip(*columns, strict=True)]
