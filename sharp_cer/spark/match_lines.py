"""Matches as Arrow from their output lines: a worker's engine writes each
match as its JSON line (``Detector.feed_ranked_lines``, no Match object in
between where the core runs the query group) and Arrow's JSON reader makes
the columns of ``api.MATCH_SCHEMA`` of them in C++, instead of a Python
object per match and ``api.matches_to_arrow`` over them.

>>> from sharp_cer.api import matches_to_arrow
>>> from sharp_cer.events.match import Match
>>> found = [Match("q", 1, 3, (1, 3), {"b": (3,), "a": (1,)}, tenant="acme"), Match("r", 2, 2, (2,), {"c": ()})]
>>> of_lines([m.to_json() for m in found]).equals(matches_to_arrow(found))
True
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.json as pajson

from sharp_cer.api import MATCH_SCHEMA

#: every column but ``vars``, whose keys (the variables) differ by query: read as a struct, then made a map
_FLAT = pa.schema([f for f in MATCH_SCHEMA if f.name != "vars"])
_ITEMS = MATCH_SCHEMA.field("vars").type.item_type


def of_lines(lines: Sequence[str]) -> pa.Table:
    """The matches whose output lines (``Match.to_json``) are ``lines``, as
    ``api.matches_to_arrow`` gives them (columns ``MATCH_SCHEMA``, each
    match's variables sorted by name)."""
    if not lines:
        return MATCH_SCHEMA.empty_table()
    data = ("\n".join(lines) + "\n").encode("utf-8")
    # one block: a variable's type is inferred over every line (an empty list first, numbers later)
    read = pajson.ReadOptions(block_size=len(data) + 1)
    parse = pajson.ParseOptions(explicit_schema=_FLAT, unexpected_field_behavior="infer")
    table = pajson.read_json(io.BytesIO(data), read_options=read, parse_options=parse)
    held = table.column("vars").combine_chunks() if "vars" in table.column_names else None
    columns = {name: table.column(name).combine_chunks() for name in _FLAT.names}
    columns["vars"] = _as_map(held, table.num_rows)
    return pa.table([columns[name] for name in MATCH_SCHEMA.names], schema=MATCH_SCHEMA)


def _as_map(held: pa.StructArray | None, n: int) -> pa.MapArray:
    """A struct of the variables (null where a match has no such variable)
    as a map from each present variable, by name, to its positions."""
    names = sorted(held.type.field(i).name for i in range(held.type.num_fields)) if held is not None else []
    if held is None or not names:
        return pa.array([[] for _ in range(n)], MATCH_SCHEMA.field("vars").type)
    fields = [held.field(name).cast(_ITEMS) for name in names]
    present = np.stack([np.asarray(f.is_valid().to_numpy(zero_copy_only=False), dtype=bool) for f in fields], axis=1)
    rows, which = np.nonzero(present)  # row by row, each row's variables in name order
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(np.bincount(rows, minlength=n), out=offsets[1:])
    keys = pa.array(np.asarray(names, dtype=object)[which], pa.string())
    # a variable's positions: its field's list at that row, the fields laid end to end
    items = pa.concat_arrays(fields).take(pa.array(which * n + rows))
    return pa.MapArray.from_arrays(pa.array(offsets), keys, items)
