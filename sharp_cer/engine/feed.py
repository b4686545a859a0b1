"""What one query group reads of a batch, prepared once per batch: which
events it sees, their partition keys, window values and the attributes its
cross-event conditions read. Per-event values are Python lists, one entry
per event, so the engine's per-event loop never touches numpy scalars.

>>> import numpy as np
>>> from sharp_cer.events.batch import Column
>>> col = Column("int", np.array([3, 0]), np.array([True, False]))
>>> values_or_nan(col)
[3, nan]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from planner.plan import Group
from sharp_cer.events.batch import Column, EventBatch


def visible(group: Group, batch: EventBatch) -> npt.NDArray[np.bool_]:
    """Which events have a type the group reads."""
    codes = [code for code, e in enumerate(batch.event_types) if e in group.event_types]
    return np.isin(batch.codes, codes)


def partition_keys(group: Group, batch: EventBatch) -> tuple[Sequence[Any], npt.NDArray[np.bool_]]:
    """Each event's partition key (its values of every partition attribute,
    as a tuple), and which events have one: an event without a value of some
    attribute (its type lacks it, or it is null) has none."""
    n = len(batch)
    if not group.partition_attributes:
        return [()] * n, np.ones(n, dtype=bool)
    columns = [batch.columns.get(a) for a in group.partition_attributes]
    if any(c is None for c in columns):
        return [None] * n, np.zeros(n, dtype=bool)
    present = [c for c in columns if c is not None]
    has_key = np.logical_and.reduce([c.valid for c in present])
    # built in C for the whole batch: a Python function per event cost more
    return list(zip(*(c.values.tolist() for c in present), strict=True)), has_key


def window_column(group: Group, batch: EventBatch, times: Column | None = None) -> Column | None:
    """Each event's value of the group's window measure (None: no event has
    one); ``times`` is ``batch.times()`` if the caller has it already."""
    kind, attribute = group.window
    if kind == "events":
        return Column("int", batch.positions, np.ones(len(batch), dtype=bool))
    if kind == "time":
        return times if times is not None else batch.times()
    if kind == "attribute" and attribute in batch.columns:
        return batch.columns[attribute]
    return None


def window_values(column: Column | None, n: int) -> list[float]:
    """The values of a ``window_column`` of ``n`` events, NaN where none."""
    return [float("nan")] * n if column is None else values_or_nan(column)


def partition_codes(group: Group, batch: EventBatch, rows: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
    """An integer per event of ``rows`` (which all have a partition key),
    equal where their keys are equal. NaN values of a double attribute
    share a code (their keys never equal): the codes may only merge
    partitions, never split one.

    >>> from sharp_cer.language import Schema
    >>> from sharp_cer.events.loaders import load_csv
    >>> from planner import compile_plan
    >>> from sharp_cer.language import parse_and_check
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int, n:string } }")
    >>> q = parse_and_check("SELECT * WHERE A ; A PARTITION BY [k, n] WITHIN 5 EVENTS", s)
    >>> batch = load_csv("A,1,x\\nA,2,x\\nA,1,y\\nA,1,x\\n", s)[0]
    >>> partition_codes(compile_plan([("q", q)]).groups[0], batch, np.arange(4)).tolist()
    [0, 2, 1, 0]
    """
    codes = np.zeros(len(rows), dtype=np.int64)
    for name in group.partition_attributes:
        _, inverse = np.unique(batch.columns[name].values[rows], return_inverse=True)
        # both factors are below len(rows): the product fits, and renumbering keeps it so
        _, codes = np.unique(codes * (int(inverse.max(initial=0)) + 1) + inverse.reshape(-1), return_inverse=True)
        codes = codes.reshape(-1)
    return codes


def attribute_rows(names: Sequence[str], batch: EventBatch) -> list[tuple[Any, ...]]:
    """Each event's attributes ``names`` (None where it has none)."""
    columns: list[list[Any]] = []
    for name in names:
        column = batch.columns.get(name)
        if column is None:
            columns.append([None] * len(batch))
        else:
            columns.append(_or_filler(column, None))
    return list(zip(*columns, strict=True)) if columns else [()] * len(batch)


def values_or_nan(column: Column) -> list[float]:
    """A column's values, NaN where invalid (see the module example)."""
    return _or_filler(column, float("nan"))


def _or_filler(column: Column, filler: Any) -> list[Any]:
    values: list[Any] = column.values.tolist()
    if column.valid.all():  # the usual case: no Python loop over the batch
        return values
    return [v if ok else filler for v, ok in zip(values, column.valid.tolist(), strict=True)]
