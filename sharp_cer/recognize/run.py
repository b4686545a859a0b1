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

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sharp_cer.errors import RecognizeError
from sharp_cer.language.diagnostics import did_you_mean, listing

from . import nodes
from .bounds import Window, conjunction, local_conjuncts, window_end, window_of
from .clause_errors import ClauseError, MatchError
from .clause_parser import parse_clause
from .expressions import Compiled, Read, Scope, View, compile_expr
from .fast_path import Counter, Locator, Plan, measure_plan, plan_counts, plan_rows, row_codes, vector_conditions
from .matcher import DEFAULT_MAX_THREADS, Condition, Found, first_match
from .program import Program, compile_pattern
from .search import AliveCheck, Automaton, WindowRows, build_automaton
from .tracking import Tracker, running_of
from .types import measure_types


@dataclass(frozen=True)
class Recognizer:
    """A clause compiled against the input's columns, ready to run partitions."""

    clause: nodes.Clause
    variables: list[str]
    sets: dict[str, frozenset[int]]
    program: Program
    conditions: list[Compiled | None]
    measures: list[Compiled]
    labels_matter: bool
    max_threads: int
    vectorize: bool
    automaton: Automaton | None
    plans: list[Plan] | None
    reads: tuple[Read, ...] | None = None
    filters: tuple[Compiled | None, ...] = ()
    windows: tuple[Window | None, ...] = ()
    running: bool = False

    def layout(self, columns: Sequence[str]) -> tuple[list[str], list[str]]:
        """Input columns before and after the measures: ONE ROW PER MATCH keeps
        the partition columns; ALL ROWS PER MATCH the partition columns, the
        ORDER BY columns, then (after the measures) the other input columns."""
        clause = self.clause
        before = list(dict.fromkeys([*clause.partition, *(k.column for k in clause.order)]))
        if clause.rows == "one":
            return list(clause.partition), []
        return before, [c for c in columns if c not in before]

    def run(
        self,
        columns: dict[str, Sequence[Any]],
        size: int,
        known: list[np.ndarray | None] | None = None,
    ) -> tuple[list[int], list[list[Any]]]:
        """Match one partition in ORDER BY order: for each output row, the
        input row it comes from and its measures' values. ``known``: every
        condition already evaluated over the partition's rows (the fast path)."""
        clause = self.clause
        sources: list[int] = []
        values: list[list[Any]] = []
        memo = self._memo(columns, size, known)
        automaton = self.automaton
        sets: list[int] = []
        starts: list[int] = list(range(size))
        exact = False
        windowed = [v for v, w in enumerate(self.windows) if w is not None]
        cleared: list[int] = []
        if automaton is not None:
            codes = self._codes(memo, size, columns)
            sets = automaton.completable(codes)
            if windowed:  # past every window, the windowed variables fail
                mask = ~sum(1 << v for v in windowed)
                cleared = automaton.completable([c & mask for c in codes])
            viable = automaton.viable_sets()
            starts = [s for s in range(size) if viable[sets[s]]]
            exact = automaton.exact and not self.labels_matter and all(m is None or None not in m for m in memo)
        alive = automaton.alive(sets) if automaton is not None else None
        row = covered = matches = index = 0
        while row < size:
            index = bisect.bisect_left(starts, row, index)
            begin = starts[index] if index < len(starts) else size
            if clause.empty == "unmatched":
                for skipped in range(max(row, covered), begin):
                    sources.append(skipped)
                    values.append([None] * len(self.measures))
            if begin >= size:
                break
            row = begin
            if exact:
                assert automaton is not None
                found = automaton.walk(sets, row, size)
            else:
                if cleared:
                    assert automaton is not None
                    alive = self._window_check(automaton, columns, codes, cleared, row, size)
                found = first_match(
                    self.program,
                    row,
                    size,
                    self._condition(columns, row, matches + 1, memo),
                    labels_matter=self.labels_matter,
                    max_threads=self.max_threads,
                    alive=alive,
                    reads=self.reads,
                    where=(clause.source, clause.pattern_span),
                    tracked=self._tracker(columns, row, matches + 1, memo),
                )
            if found is None:
                if clause.empty == "unmatched" and row >= covered:
                    sources.append(row)
                    values.append([None] * len(self.measures))
                row += 1
                continue
            matches += 1
            self._emit(columns, size, row, found, matches, sources, values)
            covered = max(covered, found.end)
            row = self._skip(row, found)
        return sources, values

    def _memo(
        self, columns: dict[str, Sequence[Any]], size: int, known: list[np.ndarray | None] | None
    ) -> list[list[bool | None] | None]:
        """Each row-local condition on every row (None for the others): from
        the fast path's arrays, or evaluated here; a row whose evaluation
        fails (division by zero, an overflow) stays unknown, so the matcher
        raises the located error only if it tests that row, as it would lazily."""
        if known is not None:
            return [[True] * size if k is None else k.tolist() for k in known]
        memo: list[list[bool | None] | None] = []
        for variable, compiled in enumerate(self.conditions):
            if compiled is None:
                memo.append([True] * size)
            elif not compiled.row_local:
                memo.append(None)
            else:
                fn = compiled.fn
                column: list[bool | None] = []
                for row in range(size):
                    try:
                        column.append(fn(View(columns, row, (variable,), 1, 0), None) is True)
                    except RecognizeError:
                        column.append(None)
                memo.append(column)
        return memo

    def _codes(self, memo: list[list[bool | None] | None], size: int, columns: dict[str, Sequence[Any]]) -> list[int]:
        """Each row's code: bit ``v`` set unless variable ``v`` surely fails
        there (a condition that reads the match so far fails surely where its
        row-local conjuncts do)."""
        codes = [0] * size
        for variable, column in enumerate(memo):
            bit = 1 << variable
            if column is None:
                column = self._maybe(variable, columns, size)
            codes = [c | bit if holds is not False else c for c, holds in zip(codes, column, strict=True)]
        return codes

    def _maybe(self, variable: int, columns: dict[str, Sequence[Any]], size: int) -> list[bool | None]:
        compiled = self.filters[variable] if self.filters else None
        if compiled is None:
            return [True] * size
        out: list[bool | None] = []
        for row in range(size):
            try:
                out.append(compiled.fn(View(columns, row, (variable,), 1, 0), None) is True)
            except RecognizeError:
                out.append(None)
        return out

    def _window_check(
        self,
        automaton: Automaton,
        columns: dict[str, Sequence[Any]],
        codes: list[int],
        cleared: list[int],
        start: int,
        size: int,
    ) -> AliveCheck:
        """What can complete from ``start``: each windowed variable fails past
        its window's end."""
        ends = {}
        for variable, window in enumerate(self.windows):
            if window is not None:
                ends[variable] = window_end(columns[window.column], start, window)
        last = max(ends.values())
        local = codes[start : last + 1]
        for variable, end in ends.items():
            mask = ~(1 << variable)
            for row in range(max(end + 1, start), last + 1):
                local[row - start] &= mask
        inside = automaton.completable_window(local, start, cleared[last + 1])
        return automaton.alive(WindowRows(start, inside, cleared))

    def matches(self, sets: list[int], size: int) -> Iterator[tuple[int, Found]]:
        """Every match of one partition with the skip rule, by walking (row-local
        conditions, all known): its start and the match."""
        automaton = self.automaton
        assert automaton is not None
        viable = automaton.viable_sets()
        row = 0
        for start in (s for s in range(size) if viable[sets[s]]):
            if start < row:
                continue
            found = automaton.walk(sets, start, size)
            assert found is not None
            yield start, found
            row = self._skip(start, found)

    def _tracker(
        self, columns: dict[str, Sequence[Any]], start: int, match_number: int, memo: list[list[bool | None] | None]
    ) -> Tracker | None:
        """Running aggregates kept per thread, when threads merge on what they read."""
        if self.reads is None or not self.running:
            return None
        return Tracker(self.conditions, self.reads, columns, start, match_number, memo)

    def _condition(
        self, columns: dict[str, Sequence[Any]], start: int, match_number: int, memo: list[list[bool | None] | None]
    ) -> Condition:
        conditions = self.conditions

        def condition(variable: int, labels: tuple[int, ...], row: int) -> bool:
            compiled = conditions[variable]
            if compiled is None:
                return True  # an undefined variable matches every row
            if compiled.row_local:
                column = memo[variable]
                assert column is not None
                known = column[row]
                if known is None:  # its evaluation failed: raise the located error now
                    known = compiled.fn(View(columns, row, (variable,), 1, match_number), None) is True
                    column[row] = known
                return known
            return compiled.fn(View(columns, start, labels, len(labels), match_number), None) is True

        return condition

    def _emit(
        self,
        columns: dict[str, Sequence[Any]],
        size: int,
        start: int,
        found: Found,
        number: int,
        sources: list[int],
        values: list[list[Any]],
    ) -> None:
        labels = found.labels
        if self.clause.rows == "one":
            view = View(columns, start, labels, len(labels), number, size)
            sources.append(start)
            values.append([m.fn(view, None) for m in self.measures])
            return
        if not labels:
            if self.clause.empty != "omit":
                view = View(columns, start, labels, 0, number, size)
                sources.append(start)
                values.append([m.fn(view, None) for m in self.measures])
            return
        excluded = set(found.excluded)
        for k in range(len(labels)):
            if start + k in excluded:
                continue
            view = View(columns, start, labels, k + 1, number, size)
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
        spans = [(start + k, start + k + 1) for k, label in enumerate(found.labels) if label in members]
        return self._skip_to(start, found.end, spans)

    def _skip_to(self, start: int, end: int, spans: list[tuple[int, int]]) -> int:
        """AFTER MATCH SKIP TO FIRST/LAST v, given the spans of rows mapped to v
        (a span's begin is -1 when it took no part)."""
        skip = self.clause.skip
        if end == start:
            return start + 1  # an empty match maps no row to any variable
        used = [(b, e) for b, e in spans if b >= 0 and e > b]
        source = self.clause.source
        if not used:
            raise MatchError(
                f"AFTER MATCH SKIP failed: pattern variable {skip.variable!r} is not present in the match "
                f"starting at row {start} of its partition",
                source,
                skip.span,
                hint="skip to a variable every match contains, or SKIP PAST LAST ROW",
            )
        target = min(b for b, _ in used) if skip.kind == "to_first" else max(e for _, e in used) - 1
        if target == start:
            raise MatchError(
                f"AFTER MATCH SKIP failed: cannot skip to first row of match (row {start} of its partition): "
                "matching would never advance",
                source,
                skip.span,
                hint="skip to a variable that cannot match the match's first row",
            )
        return target


def compile_clause(
    clause: nodes.Clause, columns: Sequence[str], *, max_threads: int = DEFAULT_MAX_THREADS, fast: bool = True
) -> Recognizer:
    """Check ``clause`` against the input's ``columns`` and compile it;
    ``fast=False`` turns the column-wise fast path off (the tests compare both)."""
    source = clause.source
    names = set(columns)
    _no_duplicates(columns)
    for name, span in clause.column_spans:
        if name not in names:
            raise ClauseError(
                f"no column {name!r}",
                source,
                span,
                expected=f"a column: {listing(names)}",
                hint=did_you_mean(name, names),
            )
    if clause.rows == "all":
        for measure in clause.measures:
            if measure.name in names:
                raise ClauseError(
                    f"measure {measure.name!r} has the name of an input column, which ALL ROWS PER MATCH also outputs",
                    source,
                    measure.span,
                    hint="rename the measure",
                )
    variables = nodes.pattern_variables(clause.pattern)
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
    automaton = build_automaton(program)
    vectorize = fast and not labels_matter and automaton.exact
    plans: list[Plan] | None = None
    if vectorize and clause.rows == "one":
        found = [measure_plan(m.expr, sets) for m in clause.measures]
        plans = [p for p in found if p is not None] if all(p is not None for p in found) else None
    return Recognizer(
        clause,
        variables,
        sets,
        program,
        conditions,
        measures,
        labels_matter,
        max_threads,
        vectorize,
        automaton,
        plans,
        _reads(conditions),
        *_bounds(clause, variables, conditions, scope),
        bool(running_of(conditions)),
    )


def _bounds(
    clause: nodes.Clause, variables: list[str], conditions: list[Compiled | None], scope: Scope
) -> tuple[tuple[Compiled | None, ...], tuple[Window | None, ...]]:
    """For each condition that reads the match so far: its row-local
    conjuncts, compiled, and its window (``bounds``)."""
    filters: list[Compiled | None] = [None] * len(variables)
    windows: list[Window | None] = [None] * len(variables)
    for definition in clause.definitions:
        variable = variables.index(definition.variable)
        compiled = conditions[variable]
        if compiled is None or compiled.row_local:
            continue
        parts = [
            part
            for part in local_conjuncts(definition.condition)
            if compile_expr(part, scope, define=definition.variable).row_local
        ]
        if parts:
            filters[variable] = compile_expr(conjunction(parts), scope, define=definition.variable)
        windows[variable] = window_of(clause, definition)
    return tuple(filters), tuple(windows)


def _reads(conditions: list[Compiled | None]) -> tuple[Read, ...] | None:
    """All that the conditions read of the match so far (None: any label)."""
    reads: set[Read] = set()
    for compiled in conditions:
        if compiled is None or compiled.row_local:
            continue
        if compiled.reads is None:
            return None
        reads.update(compiled.reads)
    return tuple(sorted(reads, key=lambda r: (sorted(r[0]), r[1], r[2])))


def _no_duplicates(columns: Sequence[Any]) -> None:
    names = [str(c) for c in columns]
    if len(set(names)) != len(names):
        twice = sorted({c for c in names if names.count(c) > 1})
        raise RecognizeError(
            f"the input has more than one column named {listing(twice)}: MATCH_RECOGNIZE reads columns by name; "
            "rename or drop the duplicates"
        )


def _sort_keys(table: pa.Table, clause: nodes.Clause) -> list[np.ndarray]:
    """Dense ranks, primary key first: partition columns, then ORDER BY keys
    with their direction and NULL placement."""
    spans = dict(reversed(clause.column_spans))
    keys = []
    for name in clause.partition:
        keys.append(_rank(table.column(name), "ascending", "at_end", clause, spans.get(name), "PARTITION BY", name))
    for key in clause.order:
        direction = "descending" if key.descending else "ascending"
        nulls = "at_start" if key.nulls_first else "at_end"
        keys.append(_rank(table.column(key.column), direction, nulls, clause, key.span, "ORDER BY", key.column))
    return keys


def _rank(
    column: pa.ChunkedArray, direction: str, nulls: str, clause: nodes.Clause, span: Any, where: str, name: str
) -> np.ndarray:
    """Dense ranks of a sort key: NULLs (a column of only NULLs ties) and
    categoricals (by their values) sort as SQL sorts them; other types Arrow
    cannot sort are a located error."""
    kind = column.type
    if pa.types.is_null(kind):
        return np.zeros(len(column), np.int64)
    if pa.types.is_dictionary(kind):
        column = column.cast(kind.value_type)
    try:
        ranks = pc.rank(column, sort_keys=[("", direction, nulls)], tiebreaker="dense")
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError):
        raise ClauseError(
            f"{where} cannot sort column {name!r} of type {kind}",
            clause.source,
            span,
            expected="a column of numbers, strings, booleans, dates, times, decimals or categories",
            hint="sort by another column, or convert this one (e.g. a half float to float32) first",
        ) from None
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
    known = _vectorized(ordered, recognizer, partitions) if recognizer.vectorize else None
    before, after = recognizer.layout(ordered.column_names)
    names = [*before, *(m.name for m in clause.measures), *after]
    if known is not None and recognizer.plans is not None:
        taken, measures = _one_row_batch(ordered, recognizer, partitions, known)
        kinds = measure_types(clause, ordered.schema)
        arrays = [ordered.column(name).take(taken) for name in before]
        arrays += [_cast(m, k) for m, k in zip(measures, kinds, strict=True)]
        return pa.Table.from_arrays(arrays, names=names)
    data = {name: ordered.column(name).to_pylist() for name in ordered.column_names}
    sources: list[int] = []
    values: list[list[Any]] = []
    for begin, end in partitions:
        columns = {name: column[begin:end] for name, column in data.items()}
        slices = None if known is None else [None if k is None else k[begin:end] for k in known]
        rows, measured = recognizer.run(columns, end - begin, slices)
        sources.extend(begin + r for r in rows)
        values.extend(measured)
    taken = pa.array(sources, type=pa.int64())
    arrays = [ordered.column(name).take(taken) for name in before]
    kinds = measure_types(clause, ordered.schema)
    arrays += [_measure_array([v[i] for v in values], kinds[i]) for i in range(len(clause.measures))]
    arrays += [ordered.column(name).take(taken) for name in after]
    return pa.Table.from_arrays(arrays, names=names)


def _one_row_batch(
    ordered: pa.Table, recognizer: Recognizer, partitions: list[tuple[int, int]], known: list[np.ndarray | None]
) -> tuple[pa.Array, list[pa.Array]]:
    """ONE ROW PER MATCH on the fast path: the automaton walks each match,
    and the measures (columns at the first or last row of a variable, counts,
    match numbers) are computed for all matches at once from each match's
    first and last row and row count per variable."""
    automaton, plans = recognizer.automaton, recognizer.plans
    assert automaton is not None and plans is not None
    width = len(recognizer.variables)
    codes = row_codes(known, ordered.num_rows).tolist()
    starts: list[int] = []
    ends: list[int] = []
    flat: list[int] = []  # every match's labels, one after the other
    numbers: list[np.ndarray] = []
    bounds: list[np.ndarray] = []
    skip = recognizer.clause.skip
    members = recognizer.sets[skip.variable] if skip.variable is not None else frozenset()
    walk = automaton.walk
    for begin, end in partitions:
        size = end - begin
        sets = automaton.completable(codes[begin:end])
        viable = automaton.viable_sets()
        found = 0
        row = 0
        for start in range(size):
            if start < row or not viable[sets[start]]:
                continue
            match = walk(sets, start, size)
            assert match is not None
            found += 1
            labels = match.labels
            starts.append(begin + start)
            ends.append(begin + match.end)
            flat.extend(labels)
            if skip.kind == "past_last" and labels:
                row = match.end
            elif skip.kind == "to_last" and len(labels) > 1 and labels[-1] in members:
                row = start + len(labels) - 1  # the common SKIP TO LAST v: v ends the match
            else:
                row = recognizer._skip(start, match)
        numbers.append(np.arange(1, found + 1))
        bounds.append(np.repeat([[begin, end]], found, axis=0))
    first, last = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    spans, counts = _variable_stats(first, last, np.asarray(flat, np.int64), width)
    limits = np.concatenate(bounds) if bounds else np.zeros((0, 2), np.int64)
    groups = tuple(range(width))
    out: list[pa.Array] = []
    for plan in plans:
        if isinstance(plan, Locator):
            rows = plan_rows(plan, first, last, spans, groups)
            moved = rows + plan.shift
            ok = (rows >= 0) & (moved >= limits[:, 0]) & (moved < limits[:, 1])
            index = pa.array(np.where(ok, moved, 0), mask=~ok)
            out.append(ordered.column(plan.column).take(index).combine_chunks())
        elif isinstance(plan, Counter):
            out.append(pa.array(plan_counts(plan, first, last, counts)))
        else:
            out.append(pa.array(np.concatenate(numbers) if numbers else np.zeros(0, np.int64)))
    return pa.array(first), out


def _variable_stats(
    first: np.ndarray, last: np.ndarray, labels: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per match and variable: (first row, last row + 1), (-1, -1) when the
    variable has no row, and the row count; ``labels`` holds every match's
    labels in order (match m has ``last[m] - first[m]`` of them)."""
    count = len(first)
    lengths = last - first
    match = np.repeat(np.arange(count), lengths)
    starts_of = np.repeat(np.cumsum(lengths) - lengths, lengths)
    rows = np.repeat(first, lengths) + (np.arange(len(labels)) - starts_of)
    key = match * width + labels
    big = np.iinfo(np.int64).max
    begins = np.full(count * width, big, np.int64)
    np.minimum.at(begins, key, rows)
    ends = np.full(count * width, -1, np.int64)
    np.maximum.at(ends, key, rows + 1)
    begins[begins == big] = -1
    spans = np.stack([begins, ends], axis=1).reshape(count, width, 2)
    counts = np.bincount(key, minlength=count * width).reshape(count, width)
    return spans, counts


def _vectorized(
    table: pa.Table, recognizer: Recognizer, partitions: list[tuple[int, int]]
) -> list[np.ndarray | None] | None:
    """Every DEFINE condition over all rows with numpy, when each reads only
    its row and physical offsets from it and uses what numpy runs."""
    values: dict[str, np.ndarray] = {}
    valid: dict[str, np.ndarray] = {}
    for name in _define_columns(recognizer.clause):
        if name not in table.column_names:
            continue
        column = table.column(name)
        kind = column.type
        if kind == pa.uint64():
            continue  # numpy mixes uint64 with int64 as floats; the general path computes exactly
        if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind):
            filler: Any = False if pa.types.is_boolean(kind) else 0
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            filler = ""
        else:
            continue  # conditions over other types take the general path
        array = np.asarray(pc.fill_null(column, filler).to_numpy(zero_copy_only=False))
        if array.dtype.kind in "iuf":  # compute as the general path does: int64 and float64
            array = array.astype(np.int64 if array.dtype.kind in "iu" else np.float64)
        values[name] = array
        valid[name] = np.asarray(pc.is_valid(column).to_numpy(zero_copy_only=False))
    partition = np.zeros(table.num_rows, np.int64)
    for i, (begin, end) in enumerate(partitions):
        partition[begin:end] = i
    try:
        return vector_conditions(recognizer.clause, recognizer.variables, values, valid, partition)
    except KeyError:
        return None


def _define_columns(clause: nodes.Clause) -> set[str]:
    """The columns DEFINE conditions read."""
    names: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, nodes.Column):
            names.add(node.name)
        elif isinstance(node, tuple | list):
            for item in node:
                walk(item)
        elif hasattr(node, "__dataclass_fields__"):
            for field in node.__dataclass_fields__:
                walk(getattr(node, field))

    walk([d.condition for d in clause.definitions])
    return names


def _measure_array(values: list[Any], kind: pa.DataType) -> pa.Array:
    """A measure's values as an Arrow array of its inferred type (what the
    values say, when the inference and the values disagree)."""
    try:
        return pa.array(values, type=None if pa.types.is_null(kind) else kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(values)


def _cast(array: pa.Array, kind: pa.DataType) -> pa.Array:
    try:
        return array if pa.types.is_null(kind) or array.type == kind else array.cast(kind)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return array


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


def match_recognize(frame: Any, clause: str | nodes.Clause, *, max_threads: int = DEFAULT_MAX_THREADS) -> Any:
    """Run a ``MATCH_RECOGNIZE ( ... )`` clause over a pandas DataFrame or an
    Arrow table; the result is of the same kind, NULLs as nulls (pandas'
    nullable types). ONE ROW PER MATCH gives the partition columns and the
    measures; ALL ROWS PER MATCH the input columns and the measures."""
    import pandas as pd

    if not isinstance(clause, str | nodes.Clause):
        raise RecognizeError(f"match_recognize takes the clause as text, found {type(clause).__name__}")
    parsed = parse_clause(clause) if isinstance(clause, str) else clause
    is_arrow = isinstance(frame, pa.Table)
    if not is_arrow and not isinstance(frame, pd.DataFrame):
        raise RecognizeError(
            f"match_recognize takes a pandas DataFrame or an Arrow table, found {type(frame).__name__}"
        )
    _no_duplicates(frame.column_names if is_arrow else list(frame.columns))
    try:
        table = frame if is_arrow else pa.Table.from_pandas(frame, preserve_index=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError) as err:
        raise RecognizeError(f"the DataFrame cannot be read as typed columns: {err}") from None
    result = recognize_table(table, compile_clause(parsed, table.column_names, max_threads=max_threads))
    return result if is_arrow else result.to_pandas(types_mapper=_pandas_type)
