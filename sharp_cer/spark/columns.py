"""Every column and record kind of the Spark pipeline, named once, and the
schemas built from them.

Columns sharp-cer adds to the user's events are prefixed with ``__``
(attribute names are the user's). Two kinds of rows travel in two places:

- *input rows* (``ROW_KIND``, internal): between the passes of ``prepare``
  and the stages of a stream, an ``EVENT``, a ``DEAD`` letter, a partition's
  or file's ``SUMMARY``, a ``FLUSH`` request or a ``COUNT``;
- *output rows* (``OUTPUT_KIND``, what users read): the workers write
  match rows (``MATCH_ROW``) and telemetry rows (``TELEMETRY_ROW``, built
  and read by ``telemetry``) as one Arrow table of schema ``OUTPUT``, so
  that one Spark job runs the engines once for both; a stream adds its
  alerts' columns (``ALERT``) and dead letters (``DEAD_LETTER``,
  ``STREAM_OUTPUT``).

The names' values are part of the stream's checkpoints (its state is keyed
by ``LANE`` and ``KEY_GROUP``) and of the output users read: renaming a
constant is free, changing its value is a format change.

>>> OUTPUT.names == [OUTPUT_KIND, *MATCH_ROW.names, *TELEMETRY_ROW.names[1:]]
True
>>> arrow_ddl(MATCH_ROW).split(", `")[-4:-1]
['events` array<bigint>', 'vars` map<string, array<bigint>>', 'deadline` bigint']
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from sharp_cer.api import MATCH_SCHEMA

# ---------------------------------------------------------------- the events
#: the event type column of the user's events (the rest are the attributes)
TYPE = "type"
#: an event's position in the stream (input order, bad rows included)
SEQ = "__seq"
#: the number of the lane an event is routed to (``lanes``)
LANE = "__lane"
#: the key group of an event's partition key within its lane (the value
#: predates the name "key group": a stream's state is keyed by it)
KEY_GROUP = "__group"
#: an event's routes: a (``LANE``, ``KEY_GROUP``) struct per lane in the
#: batch pipeline; in a stream, the array of route codes (lane * key groups + key group)
ROUTE = "__route"
#: a route code exploded to one row (a stream's stage 2 input)
CODE = "__code"

# ------------------------------------------------- input rows (prepare, stream)
#: the kind of an input row (one of ``ROW_KINDS``)
ROW_KIND = "__kind"
#: input row kinds: an event, a dead letter, a partition's (or file's) summary,
#: a stream's flush request, a stream's counter (name in ``TEXT``, value in ``VALUE``)
EVENT, DEAD, SUMMARY, FLUSH, COUNT = "event", "dead", "summary", "flush", "count"
#: a new workload version applies from the row's position on (stage 1 to every lane and key group)
VERSION = "version"
ROW_KINDS = (EVENT, DEAD, SUMMARY, FLUSH, COUNT, VERSION)
#: pass 1's columns: the input partition, the row's number in it, its line,
#: the event's primary time and the largest time before it
PART, LOCAL, LINE, TS, PREV = "__part", "__local", "__line", "__ts", "__prev"
#: a dead letter's fields (``events.batch.DeadLetter``), as the input rows carry them
LETTER = ("kind", "reason", "column", "expected", "found", "hint", "raw")
LETTER_COLUMNS = tuple(f"__letter_{f}" for f in LETTER)
#: the column of Spark's text source (a line, or a whole file)
TEXT_VALUE = "value"
#: a stream's stage 0 and 1 columns: the file, the event as a JSON line, the
#: time the watermark judges the row by (ns), the arrival (ms), a counter's
#: value, the watermark (ms) of the next micro-batch (``stream_input.horizon_ms``)
FILE, TEXT, CLOCK, ARRIVED, VALUE, HORIZON = "__file", "__text", "__clock", "__arrived", "__value", "__horizon"
#: a stream's file came from its control folder (a flush request)
CONTROL = "__control"
#: the one key of a stream's stage 1, and stage 2's event time
STREAM_KEY, TIME = "__stream", "__time"
#: the one-operator plan: whether a row is its event's first route (the key group that dead-letters it if late)
FIRST = "__first"
#: the one-operator plan's lane of the rows that only carry a file's time to Spark's watermark
TICKS = -2
#: the prefix of a ``detect_stream`` query's ``order_by`` columns (``__order0``, ...)
ORDER_PREFIX = "__order"
#: a match's positions of one variable, exploded in ``pipeline.join_events``
POSITIONS = "__positions"
#: the one partition key of a MATCH_RECOGNIZE clause without PARTITION BY
WHOLE = "__mr_whole"

# -------------------------------------------------------------- output rows
#: the kind of an output row (one of ``OUTPUT_KINDS``)
OUTPUT_KIND = "kind"
#: a match
MATCH = "match"
#: telemetry kinds: a latency histogram entry (bin = cost units, value =
#: events), an engine-side latency histogram entry in ms (bin = the index
#: of an ``engine.histogram.LogHistogram`` bin, value = events), a time bin
#: (bin = position // width, name = what, value), a counter (name, value;
#: query '' for the engine), a stream's end-to-end latency entry (bin = ms)
LATENCY, LATENCY_MS, BIN, COUNTER, E2E = "latency", "latency_ms", "bin", "counter", "e2e"
TELEMETRY_KINDS = (LATENCY, LATENCY_MS, BIN, COUNTER, E2E)
#: a stream's dead letter (position in ``start``, its kind in ``name``)
DEAD_LETTER = "dead_letter"
OUTPUT_KINDS = (MATCH, *TELEMETRY_KINDS, DEAD_LETTER)

#: a match row: query, tenant, start and end positions, events (positions
#: after projection), vars (positions per variable): the record in-process
#: matches convert to (``api.matches_to_arrow``), one schema everywhere
MATCH_ROW = MATCH_SCHEMA
MATCH_COLUMNS = tuple(MATCH_ROW.names)
#: a telemetry row (besides its kind; see ``TELEMETRY_KINDS``)
TELEMETRY_ROW = pa.schema([("query", pa.string()), ("bin", pa.int64()), ("name", pa.string()), ("value", pa.float64())])
#: every output row of the workers: its kind, then a match row's and a telemetry row's columns
OUTPUT = pa.schema(
    [pa.field(OUTPUT_KIND, pa.string()), *MATCH_ROW, *(f for f in TELEMETRY_ROW if f.name not in MATCH_ROW.names)]
)
#: what an alert adds to ``OUTPUT``: its events as JSON (type and
#: attributes, in ``events`` order) and the event time of its last event (ns)
ALERT = pa.schema([("attributes", pa.list_(pa.string())), ("end_time", pa.int64())])
#: what a stream's dead letter adds: where it was and why (``LETTER`` after its kind)
LETTER_FIELDS = ("file", "line", *LETTER[1:])
#: a stream's output: ``OUTPUT``, ``ALERT`` and the dead letters' fields
STREAM_OUTPUT = pa.schema(
    [
        *OUTPUT,
        *ALERT,
        *(pa.field(f, pa.int64() if f == "line" else pa.string()) for f in LETTER_FIELDS),
    ]
)
#: the batch pipeline's dead letters (``prepare.Prepared.dead_letters``)
DEAD_LETTERS = pa.schema([("position", pa.int64()), ("line", pa.int64()), *((f, pa.string()) for f in LETTER)])


def _spark_type(t: pa.DataType) -> str:
    if pa.types.is_list(t):
        return f"array<{_spark_type(t.value_type)}>"
    if pa.types.is_map(t):
        return f"map<{_spark_type(t.key_type)}, {_spark_type(t.item_type)}>"
    names: dict[Any, str] = {pa.int32(): "int", pa.int64(): "bigint", pa.float64(): "double", pa.bool_(): "boolean"}
    names[pa.binary()] = "binary"
    return names.get(t, "string")


def arrow_ddl(schema: pa.Schema) -> str:
    """An Arrow schema in Spark's DDL (names quoted: ``end`` and
    ``column`` are keywords).

    >>> arrow_ddl(pa.schema([("a", pa.int64()), ("b", pa.string())]))
    '`a` bigint, `b` string'
    """
    return ", ".join(f"`{f.name}` {_spark_type(f.type)}" for f in schema)


#: ``OUTPUT`` and ``STREAM_OUTPUT`` in Spark's DDL
OUTPUT_DDL = arrow_ddl(OUTPUT)
STREAM_DDL = arrow_ddl(STREAM_OUTPUT)
DEAD_LETTER_DDL = arrow_ddl(DEAD_LETTERS)


def rows_of(kinds: list[str], **columns: list[Any] | pa.ChunkedArray) -> pa.Table:
    """An ``OUTPUT`` table of rows of ``kinds`` from some of its columns,
    as lists or Arrow columns of the right type (the rest null).

    >>> rows_of([COUNTER], name=["engines"], value=[1.0]).column("query").to_pylist()
    [None]
    """
    n = len(kinds)
    columns = {OUTPUT_KIND: kinds, **columns}

    def column(f: pa.Field) -> Any:
        given = columns.get(f.name)
        if given is None:
            return pa.nulls(n, f.type)
        return given if isinstance(given, pa.ChunkedArray) else pa.array(given, f.type)

    return pa.table({f.name: column(f) for f in OUTPUT}, schema=OUTPUT)
