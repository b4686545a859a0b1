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


def window_values(group: Group, batch: EventBatch, times: Column | None = None) -> list[float]:
    """Each event's value of the group's window measure (NaN: none);
    ``times`` is ``batch.times()`` if the caller has it already."""
    kind, attribute = group.window
    if kind == "events":
        positions: list[float] = batch.positions.astype(np.float64).tolist()
        return positions
    if kind == "time":
        return values_or_nan(times if times is not None else batch.times())
    if kind == "attribute" and attribute in batch.columns:
        return values_or_nan(batch.columns[attribute])
    return [float("nan")] * len(batch)


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
