"""Columnar event batches, dead letters and load reports.

A batch holds the accepted events of one load in input order: their
positions (0-based data rows of the input, so a dead-lettered row leaves a
gap), their type codes, and one :class:`Column` per attribute name of the
schema. A column's ``valid`` mask is False exactly where the event's type
does not declare the attribute or the event holds null in it (accepted
events have every declared attribute, perhaps null, and never a null
primary time); the value there is a filler (0, NaN, False or None).

>>> import numpy as np
>>> from sharp_cer.language import Schema
>>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { t:primary_time } }")
>>> a, b = s.event("A"), s.event("B")
>>> batch = EventBatch(
...     (a, b), np.array([0, 2]), np.array([0, 1], dtype=np.int32),
...     {"x": Column("int", np.array([7, 0]), np.array([True, False])),
...      "t": Column("primary_time", np.array([10, 12]), np.array([True, True]))})
>>> len(batch), list(batch.types), batch.row(1)
(2, ['A', 'B'], {'type': 'B', 'position': 2, 'attributes': {'t': 12}})
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from sharp_cer.errors import EventsError
from sharp_cer.language.schema import EventSchema

if TYPE_CHECKING:  # pandas costs a third of a second to import: only to_pandas needs it
    import pandas as pd

#: numpy storage per attribute type; strings are object arrays of ``str`` (None where invalid).
STORAGE: dict[str, Any] = {
    "int": np.int64,
    "primary_time": np.int64,
    "double": np.float64,
    "bool": np.bool_,
    "string": object,
}
#: the filler a column holds where ``valid`` is False.
FILLER: dict[str, Any] = {"int": 0, "primary_time": 0, "double": np.nan, "bool": False, "string": None}
_ARROW = {"int": pa.int64(), "primary_time": pa.int64(), "double": pa.float64(), "bool": pa.bool_()}
_ARROW["string"] = pa.string()
_PANDAS = {"int": "Int64", "primary_time": "Int64", "double": "Float64", "bool": "boolean", "string": "string"}
#: the kinds of dead letters, in the order a row is checked.
REASON_KINDS = (
    "malformed_row",
    "malformed_json",
    "unknown_type",
    "field_count",
    "missing_attribute",
    "mistyped_attribute",
    "bad_time",
    "late",
)


@dataclass(frozen=True, eq=False)
class Column:
    """One attribute over a batch: a schema type, numpy values in that type's
    storage (``STORAGE``), and a validity mask.

    >>> Column("double", np.array([1.5, np.nan]), np.array([True, False])).to_list()
    [1.5, None]
    """

    kind: str
    values: npt.NDArray[Any]
    valid: npt.NDArray[np.bool_]

    def to_list(self) -> list[Any]:
        """The values as Python scalars, None where invalid.

        >>> Column("bool", np.array([True]), np.array([True])).to_list()
        [True]
        """
        return [v if ok else None for v, ok in zip(self.values.tolist(), self.valid.tolist(), strict=True)]

    def to_arrow(self) -> pa.Array:
        """The column as a pyarrow array with nulls where invalid.

        >>> Column("int", np.array([3, 0]), np.array([True, False])).to_arrow().to_pylist()
        [3, None]
        """
        return pa.array(self.values, type=_ARROW[self.kind], mask=~self.valid)


@dataclass(frozen=True, eq=False)
class EventBatch:
    """Accepted events, columnar, in input order (see the module docstring).

    ``codes[i]`` indexes ``event_types``, which lists every event type of the
    loaded schema in declaration order, so codes mean the same in every batch
    loaded with the same schema. ``columns`` maps every attribute name of
    those types (in order of first declaration) to its :class:`Column`.

    >>> from sharp_cer.language import Schema
    >>> a = Schema.parse("CREATE STREAM S { EVENT A { x:int } }").event("A")
    >>> EventBatch((a,), np.array([4]), np.array([0], dtype=np.int32),
    ...            {"x": Column("int", np.array([1]), np.array([True]))}).type_names
    ('A',)
    """

    event_types: tuple[EventSchema, ...]
    positions: npt.NDArray[np.int64]
    codes: npt.NDArray[np.int32]
    columns: dict[str, Column] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.positions)
        sizes = {len(self.codes), *(len(c.values) for c in self.columns.values())}
        sizes |= {len(c.valid) for c in self.columns.values()}
        if sizes - {n}:
            raise EventsError(f"an EventBatch needs columns of one length ({n} positions), not {sorted(sizes)}")

    def __len__(self) -> int:
        """The number of events.

        >>> len(EventBatch((), np.array([], dtype=np.int64), np.array([], dtype=np.int32)))
        0
        """
        return len(self.positions)

    @property
    def type_names(self) -> tuple[str, ...]:
        """The names of ``event_types``; ``codes`` index into it.

        >>> EventBatch((), np.array([], dtype=np.int64), np.array([], dtype=np.int32)).type_names
        ()
        """
        return tuple(e.name for e in self.event_types)

    @property
    def types(self) -> npt.NDArray[Any]:
        """Each event's type name (an object array of ``str``).

        >>> EventBatch((), np.array([], dtype=np.int64), np.array([], dtype=np.int32)).types.tolist()
        []
        """
        names = np.empty(len(self.event_types), dtype=object)
        names[:] = self.type_names
        return names[self.codes]

    def times(self) -> Column:
        """Each event's primary time (int64 nanoseconds), whatever its type
        calls that attribute; invalid for types without a ``primary_time``.

        >>> from sharp_cer.language import Schema
        >>> a = Schema.parse("CREATE STREAM S { EVENT A { at:primary_time } }").event("A")
        >>> EventBatch((a,), np.array([0]), np.array([0], dtype=np.int32),
        ...            {"at": Column("primary_time", np.array([9]), np.array([True]))}).times().to_list()
        [9]
        """
        values = np.zeros(len(self), dtype=np.int64)
        valid = np.zeros(len(self), dtype=np.bool_)
        for code, event in enumerate(self.event_types):
            if event.primary_time is not None:
                rows = self.codes == code
                values[rows] = self.columns[event.primary_time].values[rows]
                valid |= rows
        return Column("primary_time", values, valid)

    def row(self, i: int) -> dict[str, Any]:
        """Event ``i`` as a dict: its type, position and declared attributes
        (Python scalars, in declaration order; None where a column is not
        valid, as in ``Column.to_list``); meant for the reference evaluator
        and for tests, not for hot loops.

        >>> from sharp_cer.language import Schema
        >>> a = Schema.parse("CREATE STREAM S { EVENT A { x:double } }").event("A")
        >>> EventBatch((a,), np.array([3]), np.array([0], dtype=np.int32),
        ...            {"x": Column("double", np.array([2.5]), np.array([True]))}).row(0)
        {'type': 'A', 'position': 3, 'attributes': {'x': 2.5}}
        """
        event = self.event_types[int(self.codes[i])]
        columns = self.columns
        attributes = {
            name: _scalar(columns[name].values[i]) if columns[name].valid[i] else None for name in event.attributes
        }
        return {"type": event.name, "position": int(self.positions[i]), "attributes": attributes}

    def take(self, indices: npt.ArrayLike) -> EventBatch:
        """The events at ``indices`` (an index array or a boolean mask).

        >>> from sharp_cer.language import Schema
        >>> a = Schema.parse("CREATE STREAM S { EVENT A { x:int } }").event("A")
        >>> b = EventBatch((a,), np.array([0, 1]), np.array([0, 0], dtype=np.int32),
        ...                {"x": Column("int", np.array([5, 6]), np.array([True, True]))})
        >>> b.take([1]).row(0)
        {'type': 'A', 'position': 1, 'attributes': {'x': 6}}
        """
        idx = np.asarray(indices)
        columns = {name: Column(c.kind, c.values[idx], c.valid[idx]) for name, c in self.columns.items()}
        return EventBatch(self.event_types, self.positions[idx], self.codes[idx], columns)

    def to_arrow(self) -> pa.Table:
        """A table: ``position`` (int64), ``type`` (string), then one column per
        attribute (primary times stay int64 nanoseconds), null where invalid.

        >>> EventBatch((), np.array([], dtype=np.int64), np.array([], dtype=np.int32)).to_arrow().column_names
        ['position', 'type']
        """
        data = {"position": pa.array(self.positions, pa.int64()), "type": pa.array(self.types, pa.string())}
        data.update({name: column.to_arrow() for name, column in self.columns.items()})
        return pa.table(data)

    def to_pandas(self) -> pd.DataFrame:
        """A DataFrame indexed by position, with ``type`` and then the attributes
        in pandas nullable dtypes, like the generators' frames: Int64, Float64,
        string, boolean; a primary time is plain int64 when no value is NA.

        >>> from sharp_cer.language import Schema
        >>> a = Schema.parse("CREATE STREAM S { EVENT A { x:int } }").event("A")
        >>> b = EventBatch((a,), np.array([2]), np.array([0], dtype=np.int32),
        ...                {"x": Column("int", np.array([5]), np.array([True]))})
        >>> b.to_pandas()  # doctest: +NORMALIZE_WHITESPACE
                 type  x
        position
        2           A  5
        """
        import pandas as pd

        data: dict[str, Any] = {"type": pd.array(self.types, dtype="string")}
        for name, column in self.columns.items():
            if column.kind == "primary_time" and column.valid.all():
                data[name] = column.values.astype(np.int64)
            else:
                data[name] = pd.array(column.to_list(), dtype=_PANDAS[column.kind])
        return pd.DataFrame(data, index=pd.Index(self.positions, dtype=np.int64, name="position"))


def _scalar(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


@dataclass(frozen=True)
class DeadLetter:
    """A rejected input row. ``position`` numbers it like accepted events;
    ``line`` is the 1-based line of the file where the row starts (CSV,
    JSONL) or the 1-based row number (tables); ``kind`` is one of
    ``REASON_KINDS``; ``column`` names the attribute (or ``type``) at fault,
    when there is one; ``raw`` is the row's text, or a dict for tables.

    >>> d = DeadLetter(3, 5, "mistyped_attribute", "mistyped attribute 'x' of A: expected an int, found 'abc'",
    ...                "x", "an int", "'abc'", "write a whole number", "A,abc")
    >>> d.reason
    "mistyped attribute 'x' of A: expected an int, found 'abc'"
    """

    position: int
    line: int
    kind: str
    reason: str
    column: str | None
    expected: str
    found: str
    hint: str
    raw: str | dict[str, Any]


@dataclass(frozen=True)
class LoadReport:
    """What a load did: ``read`` rows, ``accepted`` events, and a dead letter
    for every other row (``accepted + len(dead_letters) == read``, checked);
    ``skipped`` counts the lines of a text input that hold no row (blank
    lines, the header), so the lines read are ``read + skipped`` (a quoted
    CSV field spanning lines makes its row more than one line).

    >>> r = LoadReport("x.csv", 2, 2, [])
    >>> r.counts, r.summary()
    ({}, 'x.csv: 2 rows read, 2 accepted, 0 dead-lettered')
    """

    source: str
    read: int
    accepted: int
    dead_letters: list[DeadLetter]
    skipped: int = 0

    def __post_init__(self) -> None:
        if self.accepted + len(self.dead_letters) != self.read:
            raise EventsError(
                f"{self.source}: internal error: {self.accepted} accepted + {len(self.dead_letters)} "
                f"dead-lettered != {self.read} read"
            )

    @property
    def counts(self) -> dict[str, int]:
        """Dead letters per kind, in ``REASON_KINDS`` order (kinds with none are left out).

        >>> LoadReport("x", 0, 0, []).counts
        {}
        """
        found = Counter(d.kind for d in self.dead_letters)
        return {kind: found[kind] for kind in REASON_KINDS if found[kind]}

    def summary(self) -> str:
        """One line for logs and the CLI.

        >>> d = DeadLetter(0, 1, "late", "late event", "t", "t >= 5", "4", "sort by t", "A,4")
        >>> LoadReport("x.csv", 3, 2, [d]).summary()
        'x.csv: 3 rows read, 2 accepted, 1 dead-lettered (late 1)'
        """
        return _summary(self.source, self.read, self.accepted, self.counts, self.skipped)


def _summary(source: str, read: int, accepted: int, counts: dict[str, int], skipped: int) -> str:
    text = f"{source}: {read} rows read, {accepted} accepted, {sum(counts.values())} dead-lettered"
    if counts:
        text += " (" + ", ".join(f"{kind} {count}" for kind, count in counts.items()) + ")"
    if skipped:
        text += f"; {skipped} line{'s' if skipped > 1 else ''} skipped"
    return text


@dataclass
class LoadTally:
    """The totals of an input loaded in chunks, without keeping its dead
    letters (so a long stream of bad rows costs no memory).

    >>> tally = LoadTally("x.csv")
    >>> d = DeadLetter(0, 1, "late", "late event", "t", "t >= 5", "4", "sort by t", "A,4")
    >>> tally.add(LoadReport("x.csv", 3, 2, [d], 1)); tally.add(LoadReport("x.csv", 1, 1, []))
    >>> tally.summary()
    'x.csv: 4 rows read, 3 accepted, 1 dead-lettered (late 1); 1 line skipped'
    """

    source: str
    read: int = 0
    accepted: int = 0
    skipped: int = 0
    found: Counter[str] = field(default_factory=Counter)

    def add(self, report: LoadReport) -> None:
        """Count one chunk's report."""
        self.read += report.read
        self.accepted += report.accepted
        self.skipped += report.skipped
        self.found.update(report.counts)

    def summary(self) -> str:
        """The line :meth:`LoadReport.summary` gives for the whole input."""
        counts = {kind: self.found[kind] for kind in REASON_KINDS if self.found[kind]}
        return _summary(self.source, self.read, self.accepted, counts, self.skipped)


def concat_batches(batches: Sequence[EventBatch]) -> EventBatch:
    """One batch of several loaded with one schema, in the order given.

    >>> from sharp_cer.language import Schema
    >>> a = Schema.parse("CREATE STREAM S { EVENT A { x:int } }").event("A")
    >>> one = EventBatch((a,), np.array([0]), np.array([0], dtype=np.int32),
    ...                  {"x": Column("int", np.array([5]), np.array([True]))})
    >>> concat_batches([one, one.take([0])]).columns["x"].to_list()
    [5, 5]
    """
    if len(batches) == 1:
        return batches[0]
    if not batches:
        raise EventsError("concat_batches needs at least one batch")
    first = batches[0]
    columns = {
        name: Column(
            column.kind,
            np.concatenate([b.columns[name].values for b in batches]),
            np.concatenate([b.columns[name].valid for b in batches]),
        )
        for name, column in first.columns.items()
    }
    positions = np.concatenate([b.positions for b in batches])
    return EventBatch(first.event_types, positions, np.concatenate([b.codes for b in batches]), columns)
