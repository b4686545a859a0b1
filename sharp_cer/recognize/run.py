"""MATCH_RECOGNIZE over a pandas DataFrame or an Arrow table.

Rows are split by PARTITION BY and put in ORDER BY order; in each partition
the matcher searches from each row for the preferred match, the output
mode turns matches into rows, and AFTER MATCH SKIP says where the next
search starts.

>>> import pandas as pd
>>> ticks = pd.DataFrame({"day": [1, 2, 3, 4, 5, 6], "price": [10, 8, 6, 9, 12, 11]})
>>> out = match_recognize(ticks, '''MATCH_RECOGNIZE (
...     ORDER BY day
...     MEASURES FIRST(day) AS start_day, LAST(DOWN.day) AS bottom_day, LAST(UP.day) AS end_day
...     ONE ROW PER MATCH
...     PATTERN (STRT DOWN+ UP+)
...     DEFINE DOWN AS price < PREV(price), UP AS price > PREV(price))''')
>>> out.to_dict("records")
[{'start_day': 1, 'bottom_day': 3, 'end_day': 5}]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sharp_cer.language.errors import did_you_mean, listing

from . import ast
from .errors import ClauseError, MatchError
from .expressions import Compiled, Scope, View, compile_expr
from .matcher import DEFAULT_MAX_THREADS, Condition, Found, first_match
from .parser import parse_clause
from .program import Program, compile_pattern


@dataclass(frozen=True)
class Recognizer:
    """A clause compiled against the input's columns, ready to run partitions."""

    clause: ast.Clause
    variables: list[str]
    sets: dict[str, frozenset[int]]
    program: Program
    conditions: list[Compiled | None]
    measures: list[Compiled]
    labels_matter: bool
    max_threads: int

    def layout(self, columns: Sequence[str]) -> tuple[list[str], list[str]]:
        """Input columns before and after the measures: ONE ROW PER MATCH keeps
        the partition columns; ALL ROWS PER MATCH the partition columns, the
        ORDER BY columns, then (after the measures) the other input columns."""
        clause = self.clause
        before = list(dict.fromkeys([*clause.partition, *(k.column for k in clause.order)]))
        if clause.rows == "one":
            return list(clause.partition), []
        return before, [c for c in columns if c not in before]

    def run(self, columns: dict[str, Sequence[Any]], size: int) -> tuple[list[int], list[list[Any]]]:
        """Match one partition in ORDER BY order: for each output row, the
        input row it comes from and its measures' values."""
        clause = self.clause
        sources: list[int] = []
        values: list[list[Any]] = []
        memo: list[list[bool | None]] = [[None] * size for _ in self.variables]
        row = covered = matches = 0
        while row < size:
            found = first_match(
                self.program, row, size, self._condition(columns, row, matches + 1, memo),
                labels_matter=self.labels_matter, max_threads=self.max_threads,
            )
            if found is None:
                if clause.empty == "unmatched" and row >= covered:
                    sources.append(row)
                    values.append([None] * len(self.measures))
                row += 1
                continue
            matches += 1
            self._emit(columns, row, found, matches, sources, values)
            covered = max(covered, found.end)
            row = self._skip(row, found)
        return sources, values

    def _condition(
        self, columns: dict[str, Sequence[Any]], start: int, match_number: int, memo: list[list[bool | None]]
    ) -> Condition:
        conditions = self.conditions

        def condition(variable: int, labels: tuple[int, ...], row: int) -> bool:
            compiled = conditions[variable]
            if compiled is None:
                return True  # an undefined variable matches every row
            if compiled.row_local:
                known = memo[variable][row]
                if known is None:
                    known = compiled.fn(View(columns, row, (variable,), 1, match_number), None) is True
                    memo[variable][row] = known
                return known
            return compiled.fn(View(columns, start, labels, len(labels), match_number), None) is True

        return condition

    def _emit(
        self, columns: dict[str, Sequence[Any]], start: int, found: Found, number: int,
        sources: list[int], values: list[list[Any]],
    ) -> None:
        labels = found.labels
        if self.clause.rows == "one":
            view = View(columns, start, labels, len(labels), number)
            sources.append(start)
            values.append([m.fn(view, None) for m in self.measures])
            return
        if not labels:
            if self.clause.empty != "omit":
                view = View(columns, start, labels, 0, number)
                sources.append(start)
                values.append([m.fn(view, None) for m in self.measures])
            return
        excluded = set(found.excluded)
        for k in range(len(labels)):
            if start + k in excluded:
                continue
            view = View(columns, start, labels, k + 1, number)
            sources.append(start + k)
            values.append([m.fn(view, None) for m in self.measures])

    def _skip(self, start: int, found: Found) -> int:
        skip = self.clause.skip
        if not found.labels or skip.kind == "next_row":
            return start + 1
        if skip.kind == "past_last":
            return found.end
        assert skip.variable is not None
        members = self.sets[skip.variable]
        rows = [start + k for k, label in enumerate(found.labels) if label in members]
        source = self.clause.source
        if not rows:
            raise MatchError(
                f"AFTER MATCH SKIP failed: pattern variable {skip.variable!r} is not present in the match "
                f"starting at row {start} of its partition",
                source, skip.span, hint="skip to a variable every match contains, or SKIP PAST LAST ROW",
            )
        target = rows[0] if skip.kind == "to_first" else rows[-1]
        if target == start:
            raise MatchError(
                f"AFTER MATCH SKIP failed: cannot skip to first row of match (row {start} of its partition): "
                "matching would never advance",
                source, skip.span, hint="skip to a variable that cannot match the match's first row",
            )
        return target


def compile_clause(
    clause: ast.Clause, columns: Sequence[str], *, max_threads: int = DEFAULT_MAX_THREADS
) -> Recognizer:
    """Check ``clause`` against the input's ``columns`` and compile it."""
    source = clause.source
    names = set(columns)
    for name, span in clause.column_spans:
        if name not in names:
            raise ClauseError(f"no column {name!r}", source, span, expected=f"a column: {listing(names)}",
                              hint=did_you_mean(name, names))
    if clause.rows == "all":
        for measure in clause.measures:
            if measure.name in names:
                raise ClauseError(
                    f"measure {measure.name!r} has the name of an input column, which ALL ROWS PER MATCH also outputs",
                    source, measure.span, hint="rename the measure",
                )
    variables = ast.pattern_variables(clause.pattern)
    sets = {name: frozenset({i}) for i, name in enumerate(variables)}
    for name, members in clause.subsets:
        sets[name] = frozenset(variables.index(m) for m in members)
    scope = Scope(variables, sets, names, source)
    conditions: list[Compiled | None] = [None] * len(variables)
    for definition in clause.definitions:
        conditions[variables.index(definition.variable)] = compile_expr(
            definition.condition, scope, define=definition.variable
        )
    measures = [compile_expr(m.expr, scope) for m in clause.measures]
    labels_matter = any(c is not None and not c.row_local for c in conditions)
    program = compile_pattern(clause.pattern, variables)
    return Recognizer(clause, variables, sets, program, conditions, measures, labels_matter, max_threads)


def _sort_keys(table: pa.Table, clause: ast.Clause) -> list[np.ndarray]:
    """Dense ranks, primary key first: partition columns, then ORDER BY keys
    with their direction and NULL placement."""
    keys = []
    for name in clause.partition:
        keys.append(_rank(table.column(name), "ascending", "at_end"))
    for key in clause.order:
        direction = "descending" if key.descending else "ascending"
        keys.append(_rank(table.column(key.column), direction, "at_start" if key.nulls_first else "at_end"))
    return keys


def _rank(column: pa.ChunkedArray, direction: str, nulls: str) -> np.ndarray:
    ranks = pc.rank(column, sort_keys=[("", direction, nulls)], tiebreaker="dense")
    return np.asarray(ranks.to_numpy())


def _partitions(keys: list[np.ndarray], parts: int, size: int) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The sorting permutation and each partition's [begin, end) in it."""
    if not keys:
        return np.arange(size), [(0, size)] if size else []
    order = np.lexsort(keys[::-1])
    if parts == 0:
        return order, [(0, size)] if size else []
    change = np.zeros(size, dtype=bool)
    for key in keys[:parts]:
        ranked = key[order]
        change[1:] |= ranked[1:] != ranked[:-1]
    starts = [0, *np.flatnonzero(change).tolist()]
    return order, list(zip(starts, [*starts[1:], size], strict=True))


def recognize_table(table: pa.Table, recognizer: Recognizer) -> pa.Table:
    """Run ``recognizer`` over an Arrow table; the output as an Arrow table."""
    clause = recognizer.clause
    order, partitions = _partitions(_sort_keys(table, clause), len(clause.partition), table.num_rows)
    ordered = table.take(pa.array(order, type=pa.int64()))
    data = {name: ordered.column(name).to_pylist() for name in ordered.column_names}
    sources: list[int] = []
    values: list[list[Any]] = []
    for begin, end in partitions:
        columns = {name: column[begin:end] for name, column in data.items()}
        rows, measured = recognizer.run(columns, end - begin)
        sources.extend(begin + r for r in rows)
        values.extend(measured)
    before, after = recognizer.layout(ordered.column_names)
    taken = pa.array(sources, type=pa.int64())
    arrays = [ordered.column(name).take(taken) for name in before]
    arrays += [_measure_array([v[i] for v in values]) for i in range(len(clause.measures))]
    arrays += [ordered.column(name).take(taken) for name in after]
    names = [*before, *(m.name for m in clause.measures), *after]
    return pa.Table.from_arrays(arrays, names=names)


def _measure_array(values: list[Any]) -> pa.Array:
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def _pandas_type(dtype: pa.DataType) -> Any:
    import pandas as pd

    if pa.types.is_integer(dtype):
        return pd.Int64Dtype()
    if pa.types.is_floating(dtype):
        return pd.Float64Dtype()
    if pa.types.is_boolean(dtype):
        return pd.BooleanDtype()
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return pd.StringDtype()
    return None


def match_recognize(frame: Any, clause: str | ast.Clause, *, max_threads: int = DEFAULT_MAX_THREADS) -> Any:
    """Run a ``MATCH_RECOGNIZE ( ... )`` clause over a pandas DataFrame or an
    Arrow table; the result is of the same kind, NULLs as nulls (pandas'
    nullable types). ONE ROW PER MATCH gives the partition columns and the
    measures; ALL ROWS PER MATCH the input columns and the measures."""
    parsed = parse_clause(clause) if isinstance(clause, str) else clause
    is_arrow = isinstance(frame, pa.Table)
    table = frame if is_arrow else pa.Table.from_pandas(frame, preserve_index=False)
    result = recognize_table(table, compile_clause(parsed, table.column_names, max_threads=max_threads))
    return result if is_arrow else result.to_pandas(types_mapper=_pandas_type)
