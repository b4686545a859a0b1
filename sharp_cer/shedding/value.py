"""The value model: partial matches valued by what they will yield and
cost, admitted or dropped at creation (issue 36).

Measured under bursts, the update is not constant in partial matches (PMs):
it grows with live (partition, state) pairs, and dead PMs keep them alive.
So this shedder decides when a PM is created, before it costs any update:

* its *key* is its deterministic state, the label it marks, the bucketed
  attributes of its event the conditions read (the workload's sketch
  attributes), its remaining window (quarters of the group's largest
  window in events) and its condition slack (``slack_bucket``: how much of
  the observed range of a term still to come keeps a condition possible,
  against the node summaries' min and max of the terms already bound;
  tight, medium or loose);
* per key, a decayed sketch counts PMs created and the (weighted) matches
  that passed through them: a match's marks name the PMs on its path,
  remembered by (position, label) for a window's worth of events; a key
  seen too rarely backs off to a coarser one (without the slack, then
  without the remaining window, then without the attributes);
* a PM's value is its key's expected weighted matches per PM (shrunk
  towards the group's mean while the key is young) over its
  expected cost, the update it will take (its remaining window) plus the
  enumeration it feeds (one unit per expected match);
* a PM whose conditions already fail on every path, whatever events come
  next, is dead for sure (``dead_by_conditions``: the node summaries' min and
  max of the attributes the conditions read, against the condition's bound;
  for queries that are a FILTER over a sequence of single events);
* the pressure is the event's projected latency (its wait and update so
  far, queueing included) over the tightest bound of the group; from a
  quarter of the bound on, PMs of keys whose value is below a threshold
  are taken out at once (by instance), the threshold rising with the
  pressure to the group's mean value at the bound; in a group that may not
  shed its input (an absence, a query that may not be shed), every new PM
  the group may drop is dropped from half the bound on: there the update is
  the only cost left to cut (``threshold``); the PMs dead for sure
  are taken out whenever the group has once been overloaded (it costs no
  match, and a burst then starts with less state to update).

Sharp's PSD still decides which queries a PM serves: a PM is dropped only if
every query its state serves may be shed. Queries enumerate heaviest first,
a query heavier than those after it with the whole budget left, a lighter
one cut to its weight's share under pressure
(``GroupState.weighted_budget``). Truncation's budget and input
shedding below the update floor stay as the base shedder has them (the
last resort).

>>> from sharp_cer.language import Schema, parse_and_check
>>> from sharp_cer.events.loaders import load_csv
>>> from sharp_cer.planner import compile_plan
>>> from sharp_cer.engine import Engine
>>> from sharp_cer.shedding.base import ShedConfig
>>> s = Schema.parse("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int } }")
>>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B+ WITHIN 30 EVENTS", s))])
>>> events = load_csv("A,1\\n" + "B,1\\n" * 14, s)[0]
>>> engine = Engine(plan, shedder=ValueShedder(ShedConfig(bounds={"q": 60})), record_latency=True)
>>> found = engine.process(events)
>>> 0 < len(found) < 2 ** 14 - 1, int(engine.latency.units(0, "q").max()) <= 60
(True, True)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sharp_cer.engine.enumeration import Walk
from sharp_cer.engine.shedder_protocol import Candidate, Progress, QueryGroupView
from sharp_cer.engine.tecs import Node
from sharp_cer.events.batch import EventBatch
from sharp_cer.language import ast
from sharp_cer.planner.plan import QueryPlan

from .base import GroupState, LoadShedder, remember
from .sketch import Bucketer

#: PMs of a key seen before its value is trusted, and the prior's weight in PMs
_EVIDENCE, _PRIOR = 5.0, 5.0
#: epochs of the base shedder per epoch of the value model's decay (a PM's fate is known a window later)
_EPOCHS = 4
#: pressure (projected latency over the bound) where dropping starts, and where it is at its strongest
_CALM, _FULL = 0.25, 1.0
#: quarters of the window a PM's remaining window is bucketed in
_QUARTERS = 4
#: probe values over a term's observed range (``slack_bucket``)
_PROBES = 6
#: probe counts ``slack_bucket`` keeps (memory stays bounded on a long stream)
_CACHED = 4096
#: pressure from which a group that may not shed input drops every new PM it may (``drop_all_from``),
#: and from which a group that may shed input does (its input shedding at the floor is the backstop)
_ALL, _ALL_INPUT = 0.5, 0.75


_INF = float("inf")


def single_event_sequence(query: QueryPlan) -> bool:
    """Whether the query's pattern is a sequence of single events (event
    types, maybe AS a variable), under at most one FILTER, no variable
    holding more than one event: every run of one of its states has bound
    the same variables, so a condition's summary over a node is exact for
    the variables bound and says nothing of those to come.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int } }")
    >>> def plan(text):
    ...     return QueryPlan(0, "q", parse_and_check(text, s), None, None, False)
    >>> single_event_sequence(plan("SELECT * WHERE A AS a ; B AS b FILTER a.v < b.v"))
    True
    >>> single_event_sequence(plan("SELECT * WHERE A AS a ; B+ AS b FILTER a.v < sum(b.v)"))
    False
    """
    pattern: Any = query.query.pattern
    if isinstance(pattern, ast.Filter):
        pattern = pattern.formula
    parts = pattern.parts if isinstance(pattern, ast.Sequence) else (pattern,)
    for part in parts:
        if isinstance(part, ast.Bind):
            part = part.formula
        if not isinstance(part, ast.EventType):
            return False
    return not any(v.many for v in query.checked.variables.values())


def event_types(query: QueryPlan) -> frozenset[str]:
    """The event types the query's pattern names (its conditions read only these).

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int }, EVENT C { v:int } }")
    >>> q = parse_and_check("SELECT * WHERE A ; B+ WITHIN 3 EVENTS", s)
    >>> sorted(event_types(QueryPlan(0, "q", q, None, None, False)))
    ['A', 'B']
    """
    found: set[str] = set()
    stack: list[Any] = [query.query.pattern]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.EventType):
            found.add(node.name)
        elif dataclasses.is_dataclass(node):
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
        elif isinstance(node, tuple):
            stack.extend(node)
    return frozenset(found)


def dead_by_conditions(node: Node, checks: Sequence[Any], summaries: Any) -> bool:
    """Whether some cross-event condition (``checks``, of a query for which
    ``single_event_sequence`` holds) fails on every path of ``node``
    whatever events come next: each term of a variable already bound is its
    range over the node's paths, each term of one still to come is
    unknown (any value).

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.planner import compile_plan
    >>> from sharp_cer.engine import Engine
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int }, EVENT C { v:int } }")
    >>> q = parse_and_check("SELECT * WHERE A AS a ; B AS b ; C AS c FILTER a.v < b.v AND b.v < c.v", s)
    >>> engine = Engine(compile_plan([("q", q)]))
    >>> _ = engine.process(load_csv("A,5\\nB,1\\nB,9\\n", s)[0])
    >>> runner = engine.runners[0]
    >>> entries = [e for _, _, ulist in runner.partial_matches() for e in ulist if e.pos > 0]
    >>> sorted((e.pos, dead_by_conditions(e, runner.checks[0], runner.summaries)) for e in entries)
    [(1, True), (2, False)]
    """
    summary = node.summary
    if summary is None or summaries is None:
        return False
    lows, highs = summary
    identity_lo, identity_hi = summaries.identity
    for check in checks:
        if any(kind != "env" for kind in check.kinds):
            continue  # an aggregate may still change: never judged dead by it
        seen_lo, seen_hi = list(identity_lo), list(identity_hi)
        for t in check.terms:
            if lows[t] == identity_lo[t] and highs[t] == identity_hi[t]:
                seen_lo[t], seen_hi[t] = -_INF, _INF  # a variable still to come
        if not check.possible((tuple(seen_lo), tuple(seen_hi)), summary):
            return True
    return False


def slack_bucket(
    node: Node,
    checks: Sequence[Any],
    summaries: Any,
    ranges: dict[int, tuple[float, float]],
    cache: dict[Any, int] | None = None,
) -> int:
    """How much room ``node``'s cross-event conditions (``checks``) leave
    the events to come: 0 when no condition has a term known over the
    node's paths and one still to come with an observed range (``ranges``,
    per term); else 1, 2 or 3 (tight, medium, loose) by the share of
    ``_PROBES`` values spread evenly over the range of a term still to come
    that keep the condition possible (the known terms at their summary's
    min and max), the tightest condition deciding; the term probed is a
    condition's first one still to come with a range (the next variable,
    in the pattern's order). ``cache`` keeps the probe counts by condition,
    known intervals and range (cleared past ``_CACHED`` entries). A term is still
    to come while it is at its identity; for a query that is not a
    ``single_event_sequence`` (an aggregate, a variable of many events) a
    known term may still grow, so the bucket is a guess there, which is all
    a key needs (it only groups statistics). A condition that fails on
    every path whatever comes is ``dead_by_conditions``'s case.

    Here the ranges are 0..10: probes 0, 2, 4, 6, 8, 10. At the A alone
    (``a.v`` = 0), ``b.v`` may be 2..10 (five probes: loose). After
    ``b.v`` = 5, three probes of ``c.v`` pass ``b.v < c.v`` (medium). The
    B's of 8 and 9 share one entry (a union: ``b.v`` is 8..9 over its
    paths); one probe, 10, passes against its min (tight).

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.planner import compile_plan
    >>> from sharp_cer.engine import Engine
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int }, EVENT C { v:int } }")
    >>> q = parse_and_check("SELECT * WHERE A AS a ; B AS b ; C AS c FILTER a.v < b.v AND b.v < c.v", s)
    >>> engine = Engine(compile_plan([("q", q)]))
    >>> _ = engine.process(load_csv("A,0\\nB,5\\nB,8\\nB,9\\n", s)[0])
    >>> runner = engine.runners[0]
    >>> ranges = {t: (0.0, 10.0) for t in runner.checks[0][0].terms}
    >>> entries = [e for _, _, ulist in runner.partial_matches() for e in ulist]
    >>> sorted((e.pos, slack_bucket(e, runner.checks[0], runner.summaries, ranges)) for e in entries)
    [(-1, 1), (0, 3), (1, 2)]
    >>> slack_bucket(entries[0], runner.checks[0], runner.summaries, {})
    0
    """
    summary = node.summary
    if summary is None or summaries is None:
        return 0
    lows, highs = summary
    identity_lo, identity_hi = summaries.identity
    tightest = _PROBES + 1
    for check in checks:
        # the check's own intervals (``FilterCheck.possible`` joined with an empty ``seen``), cheaper
        # than the group's whole summary: a term still to come is any value, a known one its range
        intervals: list[tuple[float, float]] = []
        unknown: list[int] = []
        for i, t in enumerate(check.terms):
            if lows[t] == identity_lo[t] and highs[t] == identity_hi[t]:
                unknown.append(i)
                intervals.append((-_INF, _INF))
            else:
                intervals.append((lows[t], highs[t]))
        if not unknown or len(unknown) == len(intervals):
            continue
        probed = next((i for i in unknown if check.terms[i] in ranges), None)
        if probed is None:
            continue
        lo, hi = ranges[check.terms[probed]]
        memo = (id(check), probed, lo, hi, *intervals)
        passing = cache.get(memo) if cache is not None else None
        if passing is None:
            passing = 0
            for k in range(_PROBES):
                point = lo + (hi - lo) * k / (_PROBES - 1)
                intervals[probed] = (point, point)
                passing += all(test(intervals) is not False for test in check.bounds)
            if cache is not None:
                if len(cache) >= _CACHED:
                    cache.clear()
                cache[memo] = passing
        tightest = min(tightest, passing)
    if tightest > _PROBES:
        return 0
    return 1 if 3 * tightest <= _PROBES else 2 if 3 * tightest <= 2 * _PROBES else 3


class ValueShedder(LoadShedder):
    """PMs valued by expected weighted matches per unit of expected cost,
    dropped at creation under pressure (see the module docstring)."""

    name = "value"

    def make_group(self, view: QueryGroupView, tracked: list[QueryPlan]) -> GroupState:
        """A value-model group shedder."""
        attributes = sorted({a for q in tracked for a in self.config.sketch_attributes.get(q.name, ())})
        return ValueGroup(self, view, tracked, attributes)


class ValueGroup(GroupState):
    """One group's value model (see the module docstring)."""

    def __init__(
        self, owner: LoadShedder, view: QueryGroupView, tracked: list[QueryPlan], attributes: Sequence[str]
    ) -> None:
        super().__init__(owner, view, tracked)
        self.bucketer = Bucketer(attributes, owner.config.buckets)
        self.window = view.window_events
        self.rows: list[int] = []
        self.positions: list[int] = []
        # key (and its coarser forms) -> PMs created, weighted matches through them (decayed, scaled)
        self.created: dict[tuple[int, ...], float] = {}
        self.yielded: dict[tuple[int, ...], float] = {}
        self.total_created = 0.0
        self.total_yield = 0.0
        self.born: dict[tuple[int, int], Any] = {}  # (position, label) -> key, of recent PMs
        self.scale = 1.0  # the weight of a new count: grows by 1 / decay per epoch (lazy decay)
        self.decay = owner.config.decay
        # per tracked query: its checks when dead_by_conditions applies to it (None: it does not)
        self.death = [view.checks.get(q.id) if single_event_sequence(q) else None for q in tracked]
        # per tracked query, its cross-event checks, and the observed range of each of their terms
        # (``slack_bucket``), from new PMs' summaries
        self.slack_checks = [view.checks.get(q.id) for q in tracked]
        self.slack_terms = sorted({t for checks in self.slack_checks if checks for c in checks for t in c.terms})
        self.ranges: dict[int, tuple[float, float]] = {}
        self.slack_cache: dict[Any, int] = {}
        self._slack_checks: dict[int, list[Sequence[Any]]] = {}  # per state, the checks of its queries

        self.heaviest = max(self.weight)
        # with weights that differ: per event type, the heaviest tracked query that reads it,
        # and the batch's type codes (``admit_input``)
        self.type_weight: dict[str, float] = {}
        self.type_readers: dict[str, tuple[int, ...]] = {}  # per event type, the tracked queries reading it
        if min(self.weight) < self.heaviest:
            for k, (q, w) in enumerate(zip(tracked, self.weight, strict=True)):
                for name in event_types(q):
                    self.type_weight[name] = max(w, self.type_weight.get(name, 0.0))
                    self.type_readers[name] = (*self.type_readers.get(name, ()), k)
        self.code_weight: list[float] = []
        self.code_readers: list[tuple[int, ...]] = []
        self.codes: list[int] = []
        self.admit_pressure = 0.0
        self._served: dict[int, float] = {}
        # per tracked query, key (and coarser forms) -> matches of it through the key's PMs
        # (decayed, scaled like ``yielded``), and the matches the PMs it dropped were expected to
        # yield (``lost_estimate``)
        self.yielded_by: list[dict[tuple[int, ...], float]] = [{} for _ in tracked]
        self.total_yield_by = [0.0] * len(tracked)
        self.expected_lost = [0.0] * len(tracked)
        # per state, (the pressure from which its new PMs are all dropped, the tracked queries it serves)
        self._levels: dict[int, tuple[float, tuple[int, ...]]] = {}
        self.discard_pressure = 0.0

    weighted_budgets = True

    def begin_batch(self, batch: EventBatch) -> None:
        """Bucket the batch's attributes the conditions read."""
        super().begin_batch(batch)
        columns = {}
        for name in self.bucketer.attributes:
            column = batch.columns.get(name)
            if column is not None and column.kind in ("int", "double", "primary_time"):
                columns[name] = np.where(column.valid, column.values.astype(np.float64), np.nan)
        self.rows = self.bucketer.bucket_rows(columns).tolist() if columns else [0] * len(batch)
        self.positions = batch.positions.tolist()
        if self.type_weight:
            self.codes = batch.codes.tolist()
            self.code_weight = [self.type_weight.get(name, self.heaviest) for name in batch.type_names]
            self.code_readers = [self.type_readers.get(name, ()) for name in batch.type_names]

    def readers(self, row: int) -> Sequence[int]:
        """The tracked queries that read the type of the event at ``row`` (``admit_input`` drops no other)."""
        return self.code_readers[self.codes[row]] if self.code_readers else range(len(self.tracked))

    def admit(self, row: int, progress: Progress) -> bool:
        """The base's input shedding at the floor, and ``admit_input`` at this event's pressure."""
        if self.code_weight:
            self.admit_pressure = self._pressure(progress)
        return super().admit(row, progress)

    def admit_input(self, row: int) -> bool:
        """With weights that differ, in a group that may shed input: an
        event of a type that only lighter queries read is dropped once the
        pressure passes a quarter of the bound times its weight's share of
        the heaviest (1/16 of the bound at 4:1). No heavier query reads it,
        and the group reads no absence and is not STRICT, so their matches
        are unchanged; the light queries lose its update and their
        enumerations. Measured on ``pair``, weights 4:1, 30 % bound, 2x
        burst, three seeds: the heavy query keeps 0.872 of its matches
        without this, 0.898 when such events are dropped from the light
        states' PM level (``drop_all_from``), 0.902 with this (weighted
        recall 0.838 there, 0.831 here: the light query pays)."""
        if not self.code_weight:
            return True
        weight = self.code_weight[self.codes[row]]
        return weight >= self.heaviest or self.admit_pressure <= _CALM * weight / self.heaviest

    def key(self, node: Node, state: int, bucket: int) -> tuple[int, int, int, int, int]:
        """A new PM's key: state, label, attribute bucket, remaining window,
        condition slack (``slack``)."""
        left = 0
        if self.window:
            remaining = self.window - (node.pos - node.maxstart)
            left = max(0, min(_QUARTERS - 1, remaining * _QUARTERS // self.window))
        return (state, node.label, bucket, left, self.slack(node, state))

    def slack(self, node: Node, state: int) -> int:
        """The loosest ``slack_bucket`` over the queries ``state`` serves
        (0: none has a condition to judge), after widening the observed
        ranges by ``node``'s known terms."""
        if not self.slack_terms or node.summary is None or self.view.summaries is None:
            return 0
        lows, highs = node.summary
        identity_lo = self.view.summaries.identity[0]
        ranges = self.ranges
        for t in self.slack_terms:
            lo = lows[t]
            if lo != identity_lo[t] and lo == lo and -_INF < lo <= highs[t] < _INF:
                found = ranges.get(t)
                hi = highs[t]
                ranges[t] = (lo, hi) if found is None else (min(found[0], lo), max(found[1], hi))
        checks = self._slack_checks.get(state)
        if checks is None:
            bitmap = self.bitmap(state)
            checks = [c for c, bit in zip(self.slack_checks, self.bits, strict=True) if c and bitmap & bit]
            self._slack_checks[state] = checks
        loosest = 0
        for c in checks:
            loosest = max(loosest, slack_bucket(node, c, self.view.summaries, ranges, self.slack_cache))
            if loosest == 3:
                break
        return loosest

    def value(self, key: tuple[int, int, int, int, int]) -> float | None:
        """The key's expected weighted matches per PM over its expected
        cost, from the finest of the key and its coarser forms with enough
        evidence (None: none has). The estimate is shrunk towards the
        group's mean (``_PRIOR`` PMs' worth of it), so a key seen a few
        times with no match is not judged dead on chance.

        A key seen once backs off to its form without the slack (10 PMs, 5
        matches, the group's mean 0: 5 / (10 + 5)); seen 5 times with no
        match, it is trusted (0 / (5 + 5)):

        >>> from types import SimpleNamespace
        >>> g = SimpleNamespace(total_yield=5.0, total_created=0.0, scale=1.0, cost=lambda key, m: 1.0,
        ...                     created={(1, 2, 3, 0, 1): 1.0, (1, 2, 3, 0): 10.0}, yielded={(1, 2, 3, 0): 5.0})
        >>> round(ValueGroup.value(g, (1, 2, 3, 0, 1)), 3)
        0.333
        >>> g.created[(1, 2, 3, 0, 1)] = 5.0; ValueGroup.value(g, (1, 2, 3, 0, 1))
        0.0
        """
        mean = self.total_yield / self.total_created if self.total_created > 0 else 0.0
        for level in (key, key[:4], key[:3], key[:2]):
            created = self.created.get(level, 0.0) / self.scale
            if created >= _EVIDENCE:
                found = self.yielded.get(level, 0.0) / self.scale
                expected = (found + _PRIOR * mean) / (created + _PRIOR)
                return expected / self.cost(key, expected)
        return None

    def cost(self, key: tuple[int, int, int, int, int], matches: float) -> float:
        """Expected update (the quarters of window left to live) plus enumeration (one per match)."""
        return 1.0 + key[3] + matches

    def mean_value(self) -> float:
        """The group's mean weighted matches per PM, per unit of a mid-window PM's cost."""
        if self.total_created <= 0:
            return 0.0
        mean = self.total_yield / self.total_created
        return mean / (1.0 + _QUARTERS / 2 + mean)

    def enumerated(self, query: QueryPlan, progress: Progress, walk: Walk, candidates: Sequence[Candidate]) -> None:
        """Credit each match's PMs' keys with the query's weight."""
        super().enumerated(query, progress, walk, candidates)
        k = self.index.get(query.id)
        if k is None or not candidates:
            return
        weight, born, yielded, scale = self.weight[k], self.born, self.yielded, self.scale
        mine = self.yielded_by[k]
        for _, marks in candidates:
            for mark in marks:
                key = born.get(mark)
                if key is not None:
                    for level in (key, key[:4], key[:3], key[:2]):
                        yielded[level] = yielded.get(level, 0.0) + weight * scale
                        mine[level] = mine.get(level, 0.0) + scale
        self.total_yield += weight * len(candidates) * scale
        self.total_yield_by[k] += len(candidates) * scale

    def stepped(self, instance: Any, outputs: list[tuple[Node, int]], row: int, progress: Progress) -> None:
        """Count the new PMs by key, and drop the low-valued ones under pressure."""
        super().stepped(instance, outputs, row, progress)
        if self.events % (_EPOCHS * self.epoch) == 0:
            self.scale /= self.decay
            if self.scale > 1e100:
                self._rescale()
        if not outputs:
            return
        bucket = self.rows[row] if self.rows else 0
        pressure = self._pressure(progress)
        threshold = self.threshold(pressure)
        if pressure > self.drop_all_from(self.heaviest):
            self.ever_overloaded = True  # the queue is the overload here, before any enumeration passes its bound
        scale, created, born = self.scale, self.created, self.born
        dropping: dict[int, set[int]] = {}
        for node, state in outputs:
            key = self.key(node, state, bucket)
            for level in (key, key[:4], key[:3], key[:2]):
                created[level] = created.get(level, 0.0) + scale
            self.total_created += scale
            remember(born, (node.pos, node.label), key)  # type: ignore[arg-type]
            if self.ever_overloaded and self.sheddable_state(state):
                if pressure > self.drop_all_from(self.served_weight(state)):
                    drop = True
                else:
                    value = self.value(key) if threshold > 0 else None
                    drop = (value is not None and value < threshold) or self._dead(node, state)
                if drop:
                    dropping.setdefault(state, set()).add(id(node))
                    self._expect_lost(state, key)
        for state, ids in dropping.items():
            ulist = self.view.union_list(instance, state)
            if ulist is None:
                continue
            removed = self.view.take_out(instance, state, [id(entry) not in ids for entry in ulist])
            self.pms_removed += removed
            bitmap = self.bitmap(state)
            for k, bit in enumerate(self.bits):
                if bitmap & bit:
                    self.pms_shed[k] += removed

    def discards(self, progress: Progress) -> Callable[[int, int, list[Node]], bool] | None:
        """Once the group has been overloaded, at a pressure (as the event
        enters the group) past the drop-everything level of some state
        (``drop_all_from``): the test of the new PMs ``stepped`` would take
        out whatever they are, which the group then does not create. Such a
        PM would cost its transition, node and union only to be taken out.
        Measured on stock trading under a 2x burst (50 % bound, seed 1):
        the update of its absence group during the burst fell from 4.6 to
        2.6 units per event, an event's whole cost from 13.1 to 12.5 (the
        capacity serves 12.0), and no event passed the bound (2.5-6.5 %
        before)."""
        if not self.ever_overloaded:
            return None
        pressure = self._pressure(progress)
        if pressure <= self.drop_all_from(min(self.weight)):
            return None
        self.discard_pressure = pressure
        return self._discard

    def _discard(self, state: int, label: int, sources: list[Node]) -> bool:
        """Whether a new PM in ``state`` is dropped at the pressure ``discards`` saw (counted as shed)."""
        found = self._levels.get(state)
        if found is None:
            bitmap = self.bitmap(state)
            level = self.drop_all_from(self.served_weight(state)) if self.sheddable_state(state) else _INF
            found = self._levels[state] = (level, tuple(k for k, bit in enumerate(self.bits) if bitmap & bit))
        level, served = found
        if self.discard_pressure <= level:
            return False
        self.pms_removed += 1
        for k in served:
            self.pms_shed[k] += 1
        self._expect_lost(state, (state, label))
        return True

    def _expect_lost(self, state: int, key: tuple[int, ...]) -> None:
        """Add a dropped PM's expected matches, per tracked query its state
        serves, to ``expected_lost``: from the finest of its key's forms
        with evidence (``value``'s back-off), shrunk towards the query's
        mean per PM; the mean alone when no form has any."""
        created_total = self.total_created
        bitmap = self.bitmap(state)
        for k, bit in enumerate(self.bits):
            if not bitmap & bit:
                continue
            mean = self.total_yield_by[k] / created_total if created_total > 0 else 0.0
            expected = mean
            for level in (key, key[:4], key[:3], key[:2]):
                created = self.created.get(level, 0.0)
                if created >= _EVIDENCE * self.scale:
                    found = self.yielded_by[k].get(level, 0.0)
                    expected = (found / self.scale + _PRIOR * mean) / (created / self.scale + _PRIOR)
                    break
            self.expected_lost[k] += expected

    def lost_estimate(self, k: int) -> float:
        """Tracked query k's matches lost to the cuts, estimated: the
        branches cut walks left (``GroupState.lost_estimate``), the PMs
        dropped by the value model's expected matches of each
        (``_expect_lost``) and the input events shed, each by the matches
        per event admitted times the events per match."""
        per_candidate = self.found[k] / self.walked[k] if self.walked[k] else 1.0
        return self.cut_branches[k] * min(1.0, per_candidate) + self.expected_lost[k] + self.input_lost(k)

    def threshold(self, pressure: float) -> float:
        """The value below which a new PM is dropped at ``pressure`` (the
        projected latency over the bound): none below a quarter of the
        bound, rising to the group's mean value at the bound.

        >>> from types import SimpleNamespace
        >>> g = SimpleNamespace(mean_value=lambda: 2.0)
        >>> [ValueGroup.threshold(g, p) for p in (0.2, 0.625, 1.0, 3.0)]
        [0.0, 1.0, 2.0, 2.0]
        """
        if pressure <= _CALM:
            return 0.0
        return self.mean_value() * min(1.0, (pressure - _CALM) / (_FULL - _CALM))

    def drop_all_from(self, weight: float) -> float:
        """The pressure from which every new PM the group may drop, in a
        state whose heaviest tracked query weighs ``weight``, is dropped,
        whatever its value: once the queue builds up, the update is the cost
        left to cut, and a PM dropped at creation costs no further update.
        From half the bound in a group that may not shed its input (an
        absence, or a query that may not be shed: the update is its only
        lever), from three quarters where input shedding at the floor is the
        backstop; a state serving only lighter queries from its weight's
        share of that (never below a quarter), so a heavy query's PMs are the
        last to go. Measured on DS2 under a 2x burst at a 50 % bound: 24 %
        of events over the bound with the value threshold alone, none with
        this.

        >>> from types import SimpleNamespace
        >>> g = SimpleNamespace(input_sheddable=False, heaviest=4.0)
        >>> ValueGroup.drop_all_from(g, 4.0), ValueGroup.drop_all_from(g, 1.0)
        (0.5, 0.25)
        >>> g.input_sheddable = True; ValueGroup.drop_all_from(g, 4.0), ValueGroup.drop_all_from(g, 2.0)
        (0.75, 0.375)
        """
        level = _ALL_INPUT if self.input_sheddable else _ALL
        return max(_CALM, level * weight / self.heaviest)

    def served_weight(self, state: int) -> float:
        """The weight of the heaviest tracked query ``state`` serves."""
        found = self._served.get(state)
        if found is None:
            bitmap = self.bitmap(state)
            found = max((w for w, bit in zip(self.weight, self.bits, strict=True) if bitmap & bit), default=0.0)
            self._served[state] = found
        return found

    def _dead(self, node: Node, state: int) -> bool:
        """Whether ``node`` is dead for sure for every tracked query its state serves."""
        bitmap = self.bitmap(state)
        served = [k for k, bit in enumerate(self.bits) if bitmap & bit]
        for k in served:
            checks = self.death[k]
            if not checks or not dead_by_conditions(node, checks, self.view.summaries):
                return False
        return bool(served)

    def _pressure(self, progress: Progress) -> float:
        """The event's projected latency over the tightest bound it is charged against."""
        self._bounds(progress)
        ratios = [self.charged(k, progress) / b for k, b in enumerate(self.bound) if b > 0]
        return max(ratios, default=0.0)

    def _rescale(self) -> None:
        s = self.scale
        self.created = {k: v / s for k, v in self.created.items()}
        self.yielded = {k: v / s for k, v in self.yielded.items()}
        self.total_created /= s
        self.total_yield /= s
        self.scale = 1.0
