"""Trailing absence on event time: ``p ; ABSENT(F) WITHIN d``.

The automaton runs p (selecting *, ``planner.plan.prefix_query``); each match
of p it puts out waits here, *pending*, until either an event of its
partition after it satisfies F by its deadline (the time of p's first event
plus ``d``), which cancels it, or event time passes the deadline, which
makes it an alert (the reference evaluator's rule 14). Event time is the
largest primary time read so far, minus the allowed lateness, over every
event of the stream, so an alert comes out at the first event, of any key,
that moves time past its deadline.

Per batch this costs a running maximum of the times (numpy), then one step
per candidate F event and per match of p: a dictionary look-up of the
partition's pending matches, usually one. Pending matches of a partition
live in a list, all of them in a heap by deadline; a cancelled one stays in
the heap, marked, until its deadline passes, so memory is bounded by the
matches of p within one window, whatever the stream's length. The events
p's matches need later (their first event's time, and the attributes F's
conditions read) are looked up in the batches of the last window, kept
until event time leaves them behind.

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.events.loaders import load_csv
>>> from sharp_cer.planner import compile_plan
>>> from sharp_cer.engine import Engine
>>> s = Schema.parse("CREATE STREAM S { EVENT HB { dev:int, t:primary_time } }")
>>> q = parse_and_check("SELECT * WHERE HB AS h ; ABSENT(HB) PARTITION BY [dev] WITHIN 10 SECONDS", s)
>>> engine = Engine(compile_plan([("silent", q)]))
>>> events = load_csv("HB,1,0\\nHB,2,1000000000\\nHB,1,5000000000\\nHB,2,30000000000\\n", s)[0]
>>> [(m.start, m.end, m.deadline) for m in engine.process(events)]
[(1, 1, 11000000000), (2, 2, 15000000000)]
>>> engine.stats()["pending_absences"]
{'silent': 1}
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from sharp_cer.events.batch import EventBatch
from sharp_cer.events.match import Match
from sharp_cer.language import ast
from sharp_cer.language.checker import expr_children
from sharp_cer.language.trailing import absent_event, trailing_absence
from sharp_cer.planner.plan import Plan, QueryPlan

from .conditions import ExactCondition
from .predicate_bits import OutOfDomain

_INT64_MIN = np.iinfo(np.int64).min


class _Pending:
    """One match of p waiting for its deadline."""

    __slots__ = ("alive", "deadline", "end", "env", "match")

    def __init__(self, match: Match, deadline: int, env: dict[str, list[tuple[Any, ...]]] | None) -> None:
        self.match = match
        self.deadline = deadline
        self.end = match.end
        self.env = env
        self.alive = True


class _Trailing:
    """One query's pending matches and what decides them."""

    def __init__(self, query: QueryPlan, full: ast.Query) -> None:
        absence = trailing_absence(full.pattern)
        assert absence is not None and isinstance(full.within, ast.TimeWindow)
        self.name = query.name
        self.window = full.within.nanoseconds
        self.selection = full.selection
        event, conditions = absent_event(absence)
        self.event = event.name
        self.keys = full.partition_attributes
        attributes: set[str] = set()
        variables: set[str] = set()
        for condition in conditions:
            _references(condition, attributes, variables)
        self.attributes = tuple(sorted(attributes))
        # p's variables the conditions read (F's own name is F's event)
        self.reads = tuple(sorted(variables - {self.event}))
        self.conditions = [ExactCondition(c, self.attributes) for c in conditions]
        self.pending: dict[Any, list[_Pending]] = {}
        self.heap: list[tuple[int, int, _Pending]] = []
        self.serial = 0
        self.domain_errors = 0

    def holds(self, pending: _Pending, values: tuple[Any, ...]) -> bool:
        if not self.conditions:
            return True
        env = dict(pending.env or {})
        env[self.event] = [values]
        try:
            return all(check(env) for check in self.conditions)
        except OutOfDomain:
            self.domain_errors += 1
            return False

    def project(self, m: Match, deadline: int) -> Match:
        """The reference's rule 13 on a match of p selected with *."""
        selection = self.selection
        if isinstance(selection, ast.SelectAll):
            return Match(m.query, m.start, m.end, m.events, m.vars, m.tenant, deadline)
        if isinstance(selection, ast.SelectNone):
            return Match(m.query, m.start, m.end, (), m.vars, m.tenant, deadline)
        shown = {p.variable: m.vars[p.variable] for p in selection if p.variable in m.vars}
        events = tuple(sorted({p for held in shown.values() for p in held}))
        return Match(m.query, m.start, m.end, events, shown, m.tenant, deadline)

    def pending_count(self) -> int:
        """Distinct alerts still waiting for their deadline."""
        return len(
            {(m.start, m.end, m.events) for m in (self.project(p.match, p.deadline) for *_, p in self.heap if p.alive)}
        )


def _references(expr: ast.Expr, attributes: set[str], variables: set[str]) -> None:
    if isinstance(expr, ast.AttributeRef):
        attributes.add(expr.attribute)
        if expr.variable is not None:
            variables.add(expr.variable)
    if isinstance(expr, ast.VariableFilter):
        variables.add(expr.variable)
    if isinstance(expr, ast.Call) and expr.args and isinstance(expr.args[0], ast.AttributeRef):
        arg = expr.args[0]
        if expr.function.lower() == "count" and arg.variable is None:
            variables.add(arg.attribute)
    for child in expr_children(expr):
        _references(child, attributes, variables)


class TrailingAbsences:
    """The trailing absences of a plan's queries (see the module)."""

    def __init__(self, queries: Sequence[QueryPlan], lateness: int) -> None:
        self.queries = {q.name: _Trailing(q, q.trailing.query) for q in queries if q.trailing is not None}
        self.lateness = int(lateness)
        self.highest = _INT64_MIN  # the largest primary time read so far
        self.reach = max(t.window for t in self.queries.values())
        # the batches of the last window: (positions, times, largest time, batch)
        self.recent: deque[tuple[np.ndarray, np.ndarray, int, EventBatch]] = deque()

    def add(self, queries: Sequence[QueryPlan]) -> None:
        """Take the trailing absences of ``queries``, added to a running
        engine (``Engine.update``). They share the engine's event time,
        which gives the alerts of each as if it ran alone from here (rule
        15): a match of it starts at an event read from here on, no more
        than the lateness behind the event time t0 read so far, so its
        deadline passes only once event time is past t0 + its window,
        which events from here on alone take it to."""
        for q in queries:
            if q.trailing is not None:
                added = self.queries[q.name] = _Trailing(q, q.trailing.query)
                self.reach = max(self.reach, added.window)

    @staticmethod
    def of(plan: Plan, lateness: float) -> TrailingAbsences | None:
        """The plan's trailing absences, or None when it has none."""
        if not any(q.trailing is not None for q in plan.queries):
            return None
        return TrailingAbsences(plan.queries, int(lateness))

    # ------------------------------------------------------------ per batch
    def step(self, batch: EventBatch, out: list[Match], costs: dict[str, Any]) -> list[tuple[int, Match]]:
        """Take the matches of p out of ``out`` (the batch's matches), decide
        what the batch's events decide, and return the alerts with the batch
        row at which each came out; ``costs`` (per query) books them."""
        n = len(batch)
        if not n:
            return []
        times = batch.times()
        stamped = np.where(times.valid, times.values, _INT64_MIN)
        highest = np.maximum.accumulate(np.maximum(stamped, self.highest))
        biggest = int(stamped.max())
        self.recent.append((batch.positions, stamped, biggest, batch))
        waiting: dict[str, list[Match]] = {name: [] for name in self.queries}
        kept = []
        for m in out:
            bucket = waiting.get(m.query)
            if bucket is None:
                kept.append(m)
            else:
                bucket.append(m)
        out[:] = kept
        alerts: list[tuple[int, Match]] = []
        for name, query in self.queries.items():
            found = waiting[name]
            cost = costs.get(name)
            if cost is not None:
                cost.matches -= len(found)
            fired = self._run(query, batch, found, highest, stamped)
            if cost is not None:
                cost.matches += len(fired)
            alerts.extend(fired)
        self.highest = int(highest[-1])
        self._forget()
        alerts.sort(key=lambda a: a[0])
        return alerts

    def _run(
        self, query: _Trailing, batch: EventBatch, found: list[Match], highest: np.ndarray, stamped: np.ndarray
    ) -> list[tuple[int, Match]]:
        positions = batch.positions
        first = int(positions[0])
        times = stamped.tolist()
        ends: dict[int, list[tuple[Match, int]]] = {}
        if found:
            rows_of = np.searchsorted(positions, [m.end for m in found]).tolist()
            starts = [m.start for m in found]
            here = np.searchsorted(positions, starts).tolist()
            for m, row, start, at in zip(found, rows_of, starts, here, strict=True):
                began = times[at] if start >= first else self._time_of(start)
                ends.setdefault(row, []).append((m, began + query.window))
        code = next((c for c, e in enumerate(batch.event_types) if e.name == query.event), None)
        keys: list[list[Any]] = []
        for attribute in query.keys:
            column = batch.columns.get(attribute)
            if column is None:
                keys.append([None] * len(batch))
            else:
                keys.append(
                    [v if ok else None for v, ok in zip(column.values.tolist(), column.valid.tolist(), strict=True)]
                )
        candidates: set[int] = set()
        if code is not None:
            candidates = set(np.flatnonzero((batch.codes == code) & (stamped != _INT64_MIN)).tolist())
        rows = sorted(candidates | ends.keys())
        fired: list[tuple[int, Match]] = []
        heap, pending, lateness = query.heap, query.pending, self.lateness
        clock = highest.tolist()
        for j in rows:
            if heap and heap[0][0] + lateness < clock[j]:
                self._fire(query, clock[j], highest, fired)
            if j in candidates:
                key = tuple([column[j] for column in keys])
                waiting = pending.get(key)
                if waiting is not None and None not in key:
                    t, position = times[j], int(positions[j])
                    values = self._values_at(batch, j, query.attributes) if query.conditions else ()
                    for p in waiting:
                        if p.alive and p.end < position and t <= p.deadline and query.holds(p, values):
                            p.alive = False
                    waiting[:] = [p for p in waiting if p.alive]
                    if not waiting:
                        del pending[key]
            for m, deadline in ends.get(j, ()):
                key = tuple([column[j] for column in keys])
                env = None
                if query.reads:
                    env = {v: [self._values(p, query.attributes) for p in m.vars.get(v, ())] for v in query.reads}
                p = _Pending(m, deadline, env)
                pending.setdefault(key, []).append(p)
                query.serial += 1
                heapq.heappush(heap, (deadline, query.serial, p))
        if heap and heap[0][0] + lateness < clock[-1]:
            self._fire(query, clock[-1], highest, fired)
        return fired

    def _fire(self, query: _Trailing, now: int, highest: np.ndarray, fired: list[tuple[int, Match]]) -> None:
        """Alerts whose deadline event time has passed: each at the first row
        where it passed; two valuations with one projected match are one."""
        heap, lateness = query.heap, self.lateness
        best: dict[tuple[int, int, tuple[int, ...]], Match] = {}
        rows: dict[tuple[int, int, tuple[int, ...]], int] = {}
        while heap and heap[0][0] + lateness < now:
            deadline, _, p = heapq.heappop(heap)
            if not p.alive:
                continue
            p.alive = False
            alert = query.project(p.match, deadline)
            k = (alert.start, alert.end, alert.events)
            if k not in best or sorted(alert.vars.items()) < sorted(best[k].vars.items()):
                best[k] = alert
                rows[k] = int(np.searchsorted(highest, deadline + lateness, side="right"))
        for k, alert in sorted(best.items(), key=lambda kv: (rows[kv[0]], kv[1])):
            fired.append((rows[k], alert))

    def advance(self, time: int, costs: dict[str, Any]) -> list[Match]:
        """Move event time to at least ``time`` (a primary time) without an
        event, and return the alerts whose deadline it passes: how a part of
        a stream run alone (Spark's key group) learns the whole stream's
        event time at its end."""
        self.highest = max(self.highest, int(time))
        clock = np.array([self.highest], dtype=np.int64)
        alerts: list[Match] = []
        for name, query in self.queries.items():
            fired: list[tuple[int, Match]] = []
            if query.heap and query.heap[0][0] + self.lateness < self.highest:
                self._fire(query, self.highest, clock, fired)
            cost = costs.get(name)
            if cost is not None:
                cost.matches += len(fired)
            alerts.extend(m for _, m in fired)
        return alerts

    # ------------------------------------------------------------ events of the last window
    def _locate(self, position: int) -> tuple[EventBatch, int, np.ndarray]:
        for positions, stamped, _, batch in reversed(self.recent):
            if len(positions) and positions[0] <= position:
                i = int(np.searchsorted(positions, position))
                return batch, i, stamped
        raise AssertionError(f"event {position} left the window")  # p's events are within it

    def _time_of(self, position: int) -> int:
        _, i, stamped = self._locate(position)
        return int(stamped[i])

    def _values(self, position: int, attributes: Sequence[str]) -> tuple[Any, ...]:
        batch, i, _ = self._locate(position)
        return self._values_at(batch, i, attributes)

    @staticmethod
    def _values_at(batch: EventBatch, i: int, attributes: Sequence[str]) -> tuple[Any, ...]:
        columns = batch.columns
        values = []
        for a in attributes:
            column = columns.get(a)
            value = column.values[i] if column is not None and column.valid[i] else None
            values.append(value.item() if isinstance(value, np.generic) else value)
        return tuple(values)

    def _forget(self) -> None:
        """Drop batches event time has left behind: a match of p ending now
        or later starts at most one window before event time."""
        horizon = self.highest - self.lateness - self.reach
        while len(self.recent) > 1 and self.recent[0][2] < horizon:
            self.recent.popleft()

    def drop(self, names: set[str]) -> None:
        """Forget the pending matches of the queries ``names`` (removed by
        ``Engine.update``): none of them may come out any more."""
        for name in names:
            self.queries.pop(name, None)

    # ------------------------------------------------------------ snapshots
    def state(self) -> dict[str, Any]:
        """Plain data for ``Engine.snapshot``: event time, the last window's
        batches and each query's pending matches (they pickle)."""
        return {
            "highest": self.highest,
            "recent": list(self.recent),
            "queries": {n: (q.pending, q.heap, q.serial, q.domain_errors) for n, q in self.queries.items()},
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from ``state`` (see ``state``)."""
        self.highest = state["highest"]
        self.recent = deque(state["recent"])
        for name, (pending, heap, serial, errors) in state["queries"].items():
            q = self.queries[name]
            q.pending, q.heap, q.serial, q.domain_errors = pending, heap, serial, errors

    # ------------------------------------------------------------ figures
    def pending(self) -> dict[str, int]:
        """Per query: alerts still waiting for their deadline."""
        return {name: q.pending_count() for name, q in self.queries.items()}

    def next_deadline(self) -> int | None:
        """The earliest deadline of a pending match (None: none)."""
        due = [q.heap[0][0] for q in self.queries.values() if q.heap and self._prune(q)]
        return min(due) if due else None

    @staticmethod
    def _prune(query: _Trailing) -> bool:
        """Drop cancelled matches from the top of the heap; whether one is left."""
        while query.heap and not query.heap[0][2].alive:
            heapq.heappop(query.heap)
        return bool(query.heap)

    def oldest_position(self) -> float:
        """The first position of the oldest pending match (inf: none)."""
        return min((p.match.start for q in self.queries.values() for *_, p in q.heap if p.alive), default=float("inf"))

    def domain_errors(self) -> int:
        return sum(q.domain_errors for q in self.queries.values())
