"""What one query group reads of a batch, prepared once per batch: which
events it sees, their partition keys, window values and the attributes its
cross-event conditions read. Per-event values are Python lists (or
functions of the event's index), so the engine's per-event loop never
touches numpy scalars.

>>> import numpy as np
>>> from sharp_cer.events.batch import Column
>>> col = Column("int", np.array([3, 0]), np.array([True, False]))
>>> values_or_nan(col)
[3, nan]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from planner.plan import Group
from sharp_cer.events.batch import Column, EventBatch


def visible(group: Group, batch: EventBatch) -> npt.NDArray[np.bool_]:
    """Which events have a type the group reads."""
    codes = [code for code, e in enumerate(batch.event_types) if e in group.event_types]
    return np.isin(batch.codes, codes)


def partition_keys(group: Group, batch: EventBatch) -> tuple[Callable[[int], Any], npt.NDArray[np.bool_]]:
    """The partition key of event ``i`` (its values of every partition
    attribute, as a tuple), and which events have one: an event without a
    value of some attribute (its type lacks it, or it is null) has none."""
    n = len(batch)
    if not group.partition_attributes:
        return (lambda i: ()), np.ones(n, dtype=bool)
    columns = [batch.columns.get(a) for a in group.partition_attributes]
    if any(c is None for c in columns):
        return (lambda i: None), np.zeros(n, dtype=bool)
    present = [c for c in columns if c is not None]
    has_key = np.logical_and.reduce([c.valid for c in present])
    values = [c.values.tolist() for c in present]
    return (lambda i: tuple(v[i] for v in values)), has_key


def window_values(group: Group, batch: EventBatch, times: Column | None = None) -> list[float]:
    """Each event's value of the group's window measure (NaN: none);
    ``times`` is ``batch.times()`` if the caller has it already."""
    kind, attribute = group.window
    if kind == "events":
        return [float(p) for p in batch.positions.tolist()]
    if kind == "time":
        return values_or_nan(times if times is not None else batch.times())
    if kind == "attribute" and attribute in batch.columns:
        return values_or_nan(batch.columns[attribute])
    return [float("nan")] * len(batch)


def attribute_rows(names: Sequence[str], batch: EventBatch) -> Callable[[int], tuple[Any, ...]]:
    """The attributes ``names`` of event ``i`` (None where it has none)."""
    columns: list[list[Any]] = []
    for name in names:
        column = batch.columns.get(name)
        if column is None:
            columns.append([None] * len(batch))
        else:
            ok = column.valid.tolist()
            columns.append([v if k else None for v, k in zip(column.values.tolist(), ok, strict=True)])
    return lambda i: tuple(c[i] for c in columns)


def values_or_nan(column: Column) -> list[float]:
    """A column's values, NaN where invalid (see the module example)."""
    nan = float("nan")
    return [v if ok else nan for v, ok in zip(column.values.tolist(), column.valid.tolist(), strict=True)]
