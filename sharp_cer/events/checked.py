"""Events validated once, read again without a second check.

A pipeline that loads its input with the loaders (``load_csv``,
``load_arrow``, ...) and hands the accepted events on as Arrow columns
(``EventBatch.to_arrow``: a ``type`` column and one typed column per
attribute, null where the event's type lacks it or holds null) need not
judge those rows again downstream: ``checked_arrow`` turns them back into
a batch column by column, at the positions the caller gives. It checks
only what a wrong caller would break (an unknown type, a column of another
type), never row by row.

>>> import numpy as np
>>> from sharp_cer.language import Schema
>>> from sharp_cer.events.loaders import load_csv
>>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { y:string, t:primary_time } }")
>>> batch, _ = load_csv("A,1,10\\nB,hi,11\\nA,,12\\n", s)
>>> again = checked_arrow(batch.to_arrow(), s, np.array([7, 8, 9]))
>>> again.positions.tolist(), list(again.types), again.columns["x"].to_list(), again.columns["y"].to_list()
([7, 8, 9], ['A', 'B', 'A'], [1, None, None], [None, 'hi', None])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from sharp_cer.errors import EventsError
from sharp_cer.language.schema import Schema

from . import arrow_compute as compute
from .arrow_numpy import nulls, strings, to_numpy
from .batch import FILLER, STORAGE, Column, EventBatch

_ARROW = {"int": pa.int64(), "primary_time": pa.int64(), "double": pa.float64(), "bool": pa.bool_()}


def checked_arrow(table: pa.Table | pa.RecordBatch, schema: Schema, positions: npt.ArrayLike) -> EventBatch:
    """The events of ``table`` (validated by this schema's loaders before;
    see the module docstring) as a batch at ``positions``. Columns other
    than ``type`` and the schema's attributes are ignored."""
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    etypes = tuple(schema.event_types())
    names = [e.name for e in etypes]
    n = table.num_rows
    types = table.column("type").combine_chunks()
    if pa.types.is_dictionary(types.type):
        types = types.dictionary_decode()
    found = compute.index_in(types, value_set=strings(names))
    if found.null_count:
        raise EventsError(
            f"checked_arrow: a row's type is not one of the schema's ({', '.join(names)})\n"
            "  hint: pass rows the loaders accepted with this schema (load_arrow validates raw ones)"
        )
    codes = to_numpy(found, -1).astype(np.int32)
    columns: dict[str, Column] = {}
    for event in etypes:
        for attr, kind in event.attributes.items():
            if attr not in columns:
                columns[attr] = _column(table, attr, kind, n)
    return EventBatch(etypes, np.asarray(positions, dtype=np.int64), codes, columns)


def _column(table: pa.Table, attr: str, kind: str, n: int) -> Column:
    if attr not in table.column_names:
        return Column(kind, np.full(n, FILLER[kind], dtype=STORAGE[kind]), np.zeros(n, dtype=np.bool_))
    arr: Any = table.column(attr).combine_chunks()
    if kind == "string":
        if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
            raise _mistyped(attr, kind, arr.type)
        valid = ~nulls(arr)
        values = np.array(arr.to_pylist(), dtype=object) if n else np.empty(0, dtype=object)
        return Column(kind, values, valid)
    want = _ARROW[kind]
    if arr.type != want:
        if pa.types.is_null(arr.type) or (pa.types.is_integer(arr.type) and kind in ("int", "primary_time")):
            arr = compute.cast(arr, want)
        else:
            raise _mistyped(attr, kind, arr.type)
    valid = ~nulls(arr)
    values = np.array(to_numpy(arr, FILLER[kind]), dtype=STORAGE[kind])
    return Column(kind, values, valid)


def _mistyped(attr: str, kind: str, found: pa.DataType) -> EventsError:
    return EventsError(
        f"checked_arrow: column {attr!r} holds {found}, expected the schema's {kind}\n"
        "  hint: pass the columns the loaders made (EventBatch.to_arrow), or validate with load_arrow"
    )
