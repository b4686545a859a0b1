"""What one query group reads of a batch, prepared once per batch: which
events it sees, their partition keys, window values and the attributes its
cross-event conditions read. Per-event values are Python lists, one entry
per event (or per event of ``rows``, when few are live: ``spread``), so the
engine's per-event loop never touches numpy scalars.

>>> import numpy as np
>>> from sharp_cer.events.batch import Column
>>> col = Column("int", np.array([3, 0]), np.array([True, False]))
>>> window_values(col, 2), window_values(col, 2, np.array([1]))
([3, nan], [nan])
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from sharp_cer.events.batch import Column, EventBatch
from sharp_cer.planner.plan import QueryGroup

from .core_module import CORE

#: Which events of a batch (row indices, in order; None: all of them).
Rows = npt.NDArray[np.intp] | None


def visible(group: QueryGroup, batch: EventBatch) -> npt.NDArray[np.bool_]:
    """Which events have a type the group reads."""
    codes = [code for code, e in enumerate(batch.event_types) if e in group.event_types]
    return np.isin(batch.codes, codes)


def batch_times(batch: EventBatch) -> Column:
    """``batch.times()``, made once per batch for every query group that reads it."""
    found = _TIMES.get(batch)
    if found is None:
        found = _TIMES[batch] = batch.times()
    return found


def keyed(group: QueryGroup, batch: EventBatch) -> npt.NDArray[np.bool_]:
    """Which events have a partition key: an event without a value of some
    partition attribute (its type lacks it, or it is null) has none."""
    columns = [batch.columns.get(a) for a in group.partition_attributes]
    if not columns:
        return np.ones(len(batch), dtype=bool)
    if any(c is None for c in columns):
        return np.zeros(len(batch), dtype=bool)
    found: npt.NDArray[np.bool_] = np.logical_and.reduce([c.valid for c in columns if c is not None])
    return found


def partition_keys(group: QueryGroup, batch: EventBatch, rows: Rows = None) -> list[Any]:
    """The partition key (its values of every partition attribute, as a
    tuple) of each event of ``rows``, which all have one (``keyed``)."""
    n = len(batch) if rows is None else len(rows)
    if not group.partition_attributes:
        return [()] * n
    columns = [batch.columns.get(a) for a in group.partition_attributes]
    if any(c is None for c in columns):
        return [None] * n  # no event has a key
    # built in C for the whole batch: a Python function per event cost more
    return list(zip(*(_pick(c.values, rows).tolist() for c in columns if c is not None), strict=True))


def key_groups(
    group: QueryGroup, batch: EventBatch, rows: npt.NDArray[np.intp]
) -> tuple[list[Any], npt.NDArray[np.intp]] | None:
    """The distinct partition keys of the events of ``rows`` (which all have
    one), in order of first sight, and for each event the index of its key
    among them: a key per distinct value (a batch's events share a few
    dozen) instead of a tuple per event, with ``partition_codes`` (whose
    string codes the bulk skipping made already) saying which are equal.
    None where codes cannot stand for keys: no partition, a missing column,
    or a double attribute (a NaN key equals no other key; its code does).

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.planner import compile_plan
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int, n:string } }")
    >>> q = parse_and_check("SELECT * WHERE A ; A PARTITION BY [n, k] WITHIN 5 EVENTS", s)
    >>> batch = load_csv("A,2,y\\nA,1,x\\nA,2,y\\nA,1,y\\n", s)[0]
    >>> keys, which = key_groups(compile_plan([("q", q)]).groups[0], batch, np.arange(4))
    >>> keys, which.tolist()
    ([(2, 'y'), (1, 'x'), (1, 'y')], [0, 1, 0, 2])
    """
    if not group.partition_attributes or len(rows) == 0:
        return None
    columns = [batch.columns.get(a) for a in group.partition_attributes]
    if any(c is None or c.values.dtype.kind not in "biuO" for c in columns):
        return None
    codes = partition_codes(group, batch, rows)
    n = len(codes)
    low, high = int(codes.min()), int(codes.max())
    if low >= 0 and high < 4 * n + 1024:
        # dense codes (strings', several attributes' renumbered): each code's first event without a sort
        first = np.full(high + 1, n, dtype=np.intp)
        np.minimum.at(first, codes, np.arange(n, dtype=np.intp))
        present = (first < n).nonzero()[0]
        first = first[present]
        inverse = np.empty(high + 1, dtype=np.intp)
        inverse[present] = np.arange(len(present))
        inverse = inverse[codes]
    else:
        _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # the distinct keys by first sight, as a per-event loop meets them
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.arange(len(order))
    return partition_keys(group, batch, rows[first[order]]), rank[inverse.reshape(-1)]


def spread(values: list[Any], rows: Rows) -> Sequence[Any] | dict[int, Any]:
    """Values of ``rows`` indexed by row: the list itself for every row, else
    a dict (when few rows are live, building per-event lists for all would
    cost more than the steps).

    >>> spread(["a", "b"], np.array([3, 7]))[7], spread(["a", "b"], None)[1]
    ('b', 'b')
    """
    return values if rows is None else dict(zip(rows.tolist(), values, strict=True))


def _pick(values: npt.NDArray[Any], rows: Rows) -> npt.NDArray[Any]:
    return values if rows is None else values[rows]


def window_column(group: QueryGroup, batch: EventBatch, times: Column | None = None) -> Column | None:
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


def window_values(column: Column | None, n: int, rows: Rows = None) -> list[float]:
    """The values of a ``window_column`` of ``n`` events (of ``rows`` of
    them), NaN where none."""
    if column is None:
        return [float("nan")] * (n if rows is None else len(rows))
    return _or_filler(column, float("nan"), rows)


def window_array(column: Column | None, rows: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
    """``window_values`` of ``rows`` as a float array, made without Python lists (the compiled core's).

    >>> col = Column("int", np.array([3, 0]), np.array([True, False]))
    >>> window_array(col, np.array([0, 1])).tolist(), window_array(None, np.array([0])).tolist()
    ([3.0, nan], [nan])
    """
    if column is None:
        return np.full(len(rows), np.nan)
    values = np.asarray(column.values[rows], dtype=np.float64)  # a copy: int64 rounds as float() does
    valid = column.valid[rows]
    if not valid.all():
        values[~valid] = np.nan
    return values


def partition_codes(group: QueryGroup, batch: EventBatch, rows: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
    """An integer per event of ``rows`` (which all have a partition key),
    equal where their keys are equal. NaN values of a double attribute
    share a code (their keys never equal): the codes may only merge
    partitions, never split one.

    >>> from sharp_cer.language import Schema
    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.planner import compile_plan
    >>> from sharp_cer.language import parse_and_check
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int, n:string } }")
    >>> q = parse_and_check("SELECT * WHERE A ; A PARTITION BY [k, n] WITHIN 5 EVENTS", s)
    >>> batch = load_csv("A,1,x\\nA,2,x\\nA,1,y\\nA,1,x\\n", s)[0]
    >>> partition_codes(compile_plan([("q", q)]).groups[0], batch, np.arange(4)).tolist()
    [0, 2, 1, 0]
    """
    if len(group.partition_attributes) == 1:
        values = batch.columns[group.partition_attributes[0]].values[rows]
        if values.dtype.kind in "biu":  # integers are their own codes: no sort needed
            return values.astype(np.int64)
    codes: npt.NDArray[np.int64] | None = None
    for name in group.partition_attributes:
        column = batch.columns[name]
        values = column.values
        if values.dtype == object:  # a batch's strings are coded once, for every group and test that reads them
            whole = _STRING_CODES.get(column)
            if whole is None:
                whole = _STRING_CODES[column] = _codes(values)
            inverse = whole[rows]
        else:
            inverse = _codes(values[rows])
        if codes is None:
            codes = inverse
            continue
        # both factors are below len(rows): the product fits, and renumbering keeps it so
        _, codes = np.unique(codes * (int(inverse.max(initial=0)) + 1) + inverse, return_inverse=True)
        codes = codes.reshape(-1)
    assert codes is not None  # a group with partition attributes names one at least
    return codes


#: the ``_codes`` of a batch's string columns (a column's values are not changed once it is in a batch)
_STRING_CODES: weakref.WeakKeyDictionary[Column, npt.NDArray[np.int64]] = weakref.WeakKeyDictionary()
#: each batch's event times (``batch_times``), while the batch lives
_TIMES: weakref.WeakKeyDictionary[EventBatch, Column] = weakref.WeakKeyDictionary()


def _codes(values: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """An integer per value below ``len(values)``, equal where the values are equal: strings by a dict in
    order of first sight (``np.unique`` sorts Python strings, about six times slower), others by ``np.unique``.

    >>> _codes(np.array(["b", "a", "b"], dtype=object)).tolist(), _codes(np.array([2.5, 1.0, 2.5])).tolist()
    ([0, 1, 0], [1, 0, 1])
    """
    if values.dtype == object:
        words = values.tolist()
        if CORE is not None:  # the compiled core's loop: the same codes, a dict look-up per word in C
            found: npt.NDArray[np.int64] = CORE.string_codes(words)
            return found
        # every loop in C: the distinct words in order (``dict.fromkeys``), then a look-up per word (``map``)
        index = {word: k for k, word in enumerate(dict.fromkeys(words))}
        return np.fromiter(map(index.__getitem__, words), dtype=np.int64, count=len(words))
    _, inverse = np.unique(values, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def attribute_rows(names: Sequence[str], batch: EventBatch, rows: Rows = None) -> list[tuple[Any, ...]]:
    """Each event's (of ``rows``) attributes ``names`` (None where it has none)."""
    n = len(batch) if rows is None else len(rows)
    columns: list[list[Any]] = []
    for name in names:
        column = batch.columns.get(name)
        if column is None:
            columns.append([None] * n)
        else:
            columns.append(_or_filler(column, None, rows))
    return list(zip(*columns, strict=True)) if columns else [()] * n


def _or_filler(column: Column, filler: Any, rows: Rows = None) -> list[Any]:
    values: list[Any] = _pick(column.values, rows).tolist()
    valid = _pick(column.valid, rows)
    if valid.all():  # the usual case: no Python loop over the batch
        return values
    return [v if ok else filler for v, ok in zip(values, valid.tolist(), strict=True)]
