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
    """The partition key of event ``i`` (the first PARTITION BY list whose
    attributes it all has, as a tuple; None for none), and which events
    have one."""
    n = len(batch)
    if not group.partition_by:
        return (lambda i: ()), np.ones(n, dtype=bool)
    has_key = np.zeros(n, dtype=bool)
    lists: list[tuple[list[list[Any]], list[list[bool]]]] = []
    for attributes in group.partition_by:
        found = [batch.columns.get(a) for a in attributes]
        columns = [c for c in found if c is not None]
        if len(columns) < len(found):
            continue
        has_key |= np.logical_and.reduce([c.valid for c in columns])
        lists.append(([c.values.tolist() for c in columns], [c.valid.tolist() for c in columns]))

    def key(i: int) -> Any:
        for values, valid in lists:
            if all(v[i] for v in valid):
                return tuple(v[i] for v in values)
        return None

    return key, has_key


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
