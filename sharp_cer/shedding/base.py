"""What every shedder shares: the configuration, the per-query bounds and
the enumeration budget they give, the overload detector, input shedding
when the queue alone passes a bound, and the report.

The plain :class:`LoadShedder` is the *truncation* baseline: nothing is
shed but the end of an enumeration that would pass the bound (the walk stops
when the event's budget is spent, in tECS order). Every other shedder adds a
policy on top (``sharp_cer.shedding.sharp``, ``sharp_cer.shedding.baselines``), so each keeps
the same guarantee: a query's latency for an event stays within its bound
unless the event's wait and update alone pass it.

Latency is what users wait for (``sharp_cer.engine.queueing``): from an
event's arrival, queueing included, until the query's matches are out. A
bound is given in milliseconds, or in cost units (seconds times the
engine's capacity; in wall mode, without a capacity, a bound in units
limits the event's own service, as a deterministic per-event bound). The
budget of query q for an event is ``L_q - latency so far - reserve``,
where the latency so far counts the event's wait, its update and the
enumerations of the queries before q, and the reserve is twice the smoothed
update floor of an event (so the events queued behind this one stay within their
bounds too). A workload the engine keeps up with never reaches its budgets:
nothing is shed. The overload detector looks at the demand of q's
enumerations (the latency so far plus the steps taken, plus, if the walk
was cut short, the waiting branches times the steps per match): on the
current event (``overloaded``: the policy's enumeration order applies) and
smoothed, an exponentially weighted mean. Either one passing the bound marks
q for the selector (``selecting``), which runs after the event, at most once
per ``cooldown`` events, with the highest demand seen since it last ran
(Sharp's Alg. 1 sheds on the current event's latency).
If an event's wait plus the group's smoothed update passes the smallest
bound of a group, the queue alone is over it: the group sheds its input,
processing one such event in ``probe`` (to keep measuring), and reports the
events shed. Input is shed only in groups whose every query may be shed (it
would change every query's matches) and reads no absence (NOT, ABSENT,
``:``): there a dropped event would invent matches.

Queries of a group enumerate an event's matches one after the other; a
shedder orders them by bound (tightest first) and weight (heaviest first),
so a tight query never waits behind a light one's output.

>>> config = ShedConfig(bounds={"q": 50})
>>> config.bound("q"), config.bound("other"), config.weight("q")
(50.0, None, 1.0)
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sharp_cer.engine.enumeration import EnumerationOrder, Walk
from sharp_cer.engine.shedder_protocol import Candidate, Progress, QueryGroupView, WalkControl
from sharp_cer.engine.tecs import UNION, Node
from sharp_cer.errors import SheddingError
from sharp_cer.events.batch import EventBatch
from sharp_cer.language import ast
from sharp_cer.planner.plan import QueryPlan


@dataclass(frozen=True)
class ShedConfig:
    """How to shed: per query name its bound in cost units or in
    milliseconds (``bounds_ms``; queries without one are never shed),
    weight and sketch attributes; the seed of the
    random choices; the sketch's buckets per attribute, decay per epoch and
    epoch (in events; None: the group's largest window in events, else
    1,000); the smoothing of the detector; the events between two
    selections; and one event processed in ``probe`` while the floor is
    above the bound."""

    bounds: Mapping[str, float]
    weights: Mapping[str, float] = field(default_factory=dict)
    bounds_ms: Mapping[str, float] = field(default_factory=dict)
    sketch_attributes: Mapping[str, Sequence[str]] = field(default_factory=dict)
    seed: int = 0
    buckets: int = 8
    decay: float = 0.5
    epoch: int | None = None
    smoothing: float = 0.2
    cooldown: int = 64
    probe: int = 128

    def __post_init__(self) -> None:
        for name, bound in (*self.bounds.items(), *self.bounds_ms.items()):
            if not bound > 0:
                raise SheddingError(
                    f"query {name}: a latency bound must be positive, not {bound!r}\n"
                    '  hint: give milliseconds ("250ms"), cost units (500) or a fraction of the unshedded latency'
                )
        both = sorted(set(self.bounds) & set(self.bounds_ms))
        if both:
            raise SheddingError(f"query {both[0]}: give a bound in cost units or in milliseconds, not both")
        for name, weight in self.weights.items():
            if not weight > 0:
                raise SheddingError(f"query {name}: a weight must be positive, not {weight!r}")
        if not 0 < self.decay <= 1:
            raise SheddingError(f"the sketch's decay must be in (0, 1], not {self.decay!r}")

    def bound(self, query: str) -> float | None:
        """The query's bound in cost units (None: none in units)."""
        found = self.bounds.get(query)
        return None if found is None else float(found)

    def bounded(self, query: str) -> bool:
        """Whether the query has a bound (it may be shed)."""
        return query in self.bounds or query in self.bounds_ms

    def weight(self, query: str) -> float:
        """The query's weight (1 by default)."""
        return float(self.weights.get(query, 1.0))


#: How many recent events a shedder remembers something of (by position).
REMEMBER = 1 << 17


def remember(recent: dict[int, int], position: int, value: int) -> None:
    """Note ``value`` for the event at ``position``; positions come in
    order, so past ``REMEMBER`` events the oldest is forgotten (O(1))."""
    recent[position] = value
    if len(recent) > REMEMBER:
        del recent[next(iter(recent))]


def first_mark(entry: Node) -> Node:
    """The node that stands for a union-list entry: the first non-union one
    down its left spine (at most three unions: the tECS is 3-bounded)."""
    while entry.kind == UNION:
        entry = entry.left  # type: ignore[assignment]
    return entry


def input_safe(query: QueryPlan) -> bool:
    """Whether dropping input events can only lose the query's matches: its
    pattern reads no absence (NOT, ABSENT, a contiguous ``:`` link).

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }")
    >>> [input_safe(QueryPlan(0, "q", parse_and_check(t, s), None, None, False))
    ...  for t in ("SELECT * WHERE A ; B", "SELECT * WHERE A : B", "SELECT * WHERE A ; ABSENT(B) ; A")]
    [True, False, False]
    """
    stack: list[Any] = [query.query.pattern]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Negation, ast.Absence)):
            return False
        if isinstance(node, ast.Sequence) and ":" in node.links:
            return False
        if dataclasses.is_dataclass(node):
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
        elif isinstance(node, tuple):
            stack.extend(node)
    return query.query.effective_strategy != "STRICT"


class LoadShedder:
    """The truncation baseline, and the base of every shedder: it makes one
    query group shedder per query group with at least one sheddable query that has a
    bound (the engine's ``Shedder`` protocol).

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.planner import compile_plan
    >>> from sharp_cer.engine import Engine
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }")
    >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B+ WITHIN 20 EVENTS", s))])
    >>> events = load_csv("A,1\\n" + "B,1\\n" * 12, s)[0]
    >>> full = Engine(plan).process(events)
    >>> engine = Engine(plan, shedder=LoadShedder(ShedConfig(bounds={"q": 40})), record_latency=True)
    >>> cut = engine.process(events)
    >>> len(full), 0 < len(cut) < len(full), {m.key() for m in cut} <= {m.key() for m in full}
    (4095, True, True)
    >>> int(engine.latency.units(0, "q").max()) <= 40
    True

    At a capacity of 10,000 units per second, one event a second leaves no
    queue and a bound of 5 s is never reached: nothing is shed.

    >>> from sharp_cer.engine.queueing import Pace
    >>> calm = Engine(plan, shedder=LoadShedder(ShedConfig(bounds={}, bounds_ms={"q": 5000})), capacity=10_000)
    >>> len(calm.process(events, Pace(rate=1).arrivals(events))) == len(full)
    True
    """

    name = "truncate"

    def __init__(self, config: ShedConfig) -> None:
        self.config = config
        self.groups: list[GroupState] = []

    def for_group(self, view: QueryGroupView) -> GroupState | None:
        """The group's shedder, or None if none of its queries is shed."""
        tracked = [q for q in view.queries if q.sheddable and self.config.bounded(q.name)]
        if not tracked:
            return None
        group = self.make_group(view, tracked)
        self.groups.append(group)
        return group

    def reconfigure(self, config: ShedConfig, running: Sequence[QueryPlan]) -> None:
        """Move to ``config`` while the engine runs (its queries changed:
        ``Engine.update``): query groups made from now on take it, and each
        running group its ``running`` queries' new bounds and weights, in
        place. Whether a running query is shed, and its sketch attributes,
        cannot change in place (its group's shedder state is built for
        them): that raises ``SheddingError`` before anything changed.

        >>> from sharp_cer.language import Schema, parse_and_check
        >>> from sharp_cer.planner import compile_plan
        >>> from sharp_cer.engine import Engine
        >>> s = Schema.parse("CREATE STREAM S { EVENT A { k:int } }")
        >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; A WITHIN 5 EVENTS", s))])
        >>> shedder = LoadShedder(ShedConfig(bounds={"q": 40}))
        >>> engine = Engine(plan, shedder=shedder)
        >>> shedder.reconfigure(ShedConfig(bounds={"q": 80}, weights={"q": 2.0}), plan.queries)
        >>> shedder.report()["q"]["bound_units"], shedder.report()["q"]["weight"]
        (80.0, 2.0)
        >>> shedder.reconfigure(ShedConfig(bounds={}), plan.queries)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        sharp_cer.errors.SheddingError: query q: whether it is shed cannot change while it runs (bound ...
        """
        for q in running:
            before = q.sheddable and self.config.bounded(q.name)
            after = q.sheddable and config.bounded(q.name)
            if before != after:
                raise SheddingError(
                    f"query {q.name}: whether it is shed cannot change while it runs (bound or shed = "
                    f"{'removed' if before else 'added'})\n"
                    "  hint: change its text too, so that it is replaced and starts again"
                )
            sketched = tuple(self.config.sketch_attributes.get(q.name, ()))
            if before and sketched != tuple(config.sketch_attributes.get(q.name, ())):
                raise SheddingError(
                    f"query {q.name}: its sketch attributes cannot change while it runs\n"
                    "  hint: change its text too, so that it is replaced and starts again"
                )
        self.config = config
        names = {q.name for q in running}
        for group in self.groups:
            group.reconfigure(config, names)

    def make_group(self, view: QueryGroupView, tracked: list[QueryPlan]) -> GroupState:
        """The policy's group shedder (overridden by every other shedder)."""
        return GroupState(self, view, tracked)

    def latency_bounds(self) -> tuple[dict[str, float], dict[str, float]]:
        """Each tracked query's bound: in milliseconds, or else in cost units."""
        ms: dict[str, float] = {}
        units: dict[str, float] = {}
        for group in self.groups:
            for k, query in enumerate(group.tracked):
                bound_ms = group.bound_ms[k]
                if bound_ms is not None:
                    ms[query.name] = bound_ms
                else:
                    units[query.name] = group.bound[k]
        return ms, units

    def report(self) -> dict[str, dict[str, Any]]:
        """Per tracked query: its bound, what was shed and how often the
        detector and the selector ran."""
        out: dict[str, dict[str, Any]] = {}
        for group in self.groups:
            for k, query in enumerate(group.tracked):
                out[query.name] = {
                    "bound_units": group.bound[k],
                    "bound_ms": group.bound_ms[k],
                    "weight": group.weight[k],
                    "overloaded_events": group.overloads[k],
                    "floor_above_bound_events": group.floor_over[k],
                    "partial_matches_shed": group.pms_shed[k],
                    "events_shed_by_group": group.events_shed,
                    "events_shed_for_floor": group.floor_shed,
                    "partial_matches_removed_by_group": group.pms_removed,
                    "selections": group.selections,
                    "partial_matches_considered": group.considered,
                    "input_shedding": group.input_shedding,
                    "never_shed_in_group": group.never_shed,
                    "matches_found": group.found[k],
                    "matches_lost_estimate": group.lost_estimate(k),
                }
        return out


class GroupState:
    """One group's shedder state and the common behaviour (see the module
    docstring); subclasses override ``admit_input``, ``order_for``,
    ``learn``, ``observe`` and ``select``."""

    #: whether walks check keep-mask bits (shedding by view)
    uses_masks = False
    #: whether the group's queries enumerate heaviest first, each with the
    #: whole budget left, lighter ones cut down under pressure (``enumeration``)
    weighted_budgets = False

    def __init__(self, owner: LoadShedder, view: QueryGroupView, tracked: list[QueryPlan]) -> None:
        config = owner.config
        self.config = config
        self.view = view
        self.tracked = tracked
        self.index = {q.id: k for k, q in enumerate(tracked)}
        self.bound_ms: list[float | None] = [config.bounds_ms.get(q.name) for q in tracked]
        # each bound in cost units (ms ones follow the capacity, see ``_bounds``)
        self.bound = [float(config.bound(q.name) or 0) for q in tracked]
        self.capacity = 0.0  # the capacity the bounds in units were last converted at
        self.weight = [config.weight(q.name) for q in tracked]
        self.min_bound = min(self.bound)
        # a group sheds input only if every query of it may lose matches, and
        # none reads the absence of events (a dropped event would invent one)
        self.input_sheddable = len(tracked) == len(view.queries) and all(map(input_safe, tracked))
        tracked_ids = {q.id for q in tracked}
        #: the group's queries that are never shed (a strategy, LIMIT, CONSUME, no bound, shed = false)
        self.never_shed = [q.name for q in view.queries if q.id not in tracked_ids]
        unsafe = [q.name for q in tracked if not input_safe(q)]
        #: why input may not be shed in this group ("allowed" if it may)
        self.input_shedding = (
            "allowed"
            if self.input_sheddable
            else f"forbidden: {', '.join(self.never_shed)} may not be shed and share the query group"
            if self.never_shed
            else f"forbidden: {', '.join(unsafe)} read an absence (NOT, ABSENT, ':') or are STRICT"
        )
        n = len(tracked)
        self.demand = [0.0] * n  # the smoothed demand of each query's enumerations
        self.last_demand = [0.0] * n
        self.per_match = [1.0] * n  # steps per match found, smoothed (Θ)
        self.length = [1.0] * n  # marks per match, smoothed
        self.overloaded = 0  # bit k: tracked query k is overloaded now
        self.selecting = 0  # bit k: query k was overloaded since the last selection
        self.peak = [0.0] * n  # the highest demand of each query since the last selection
        self.overloads = [0] * n
        self.floor_over = [0] * n
        self.pms_shed = [0] * n
        self.pms_removed = 0
        # for the recall estimate: matches found, candidates walked, the
        # branches cut walks left, and the group's partial matches created
        self.found = [0] * n
        self.input_shed = [0] * n  # input events shed that the query would have read
        self.walked = [0] * n
        self.cut_branches = [0] * n
        self.pms_created = 0
        self.floor = 0.0  # the smoothed update floor of processed events
        self.update = 0.0  # the smoothed update units of the group's step
        self.entry_floor = 0  # the floor of the event in process before the group's step
        self.ever_overloaded = False  # learning starts at the first overload (an idle shedder costs little)
        self.events = 0  # events processed by the group
        self.events_shed = 0  # by the policy
        self.floor_shed = 0  # while the floor was above the smallest bound
        self.floor_seen = 0
        self.selections = 0
        self.considered = 0  # partial matches looked at by selections
        self.last_selection = -config.cooldown
        self.random = random.Random(config.seed * 7919 + view.number)
        self.batch: EventBatch | None = None
        self.epoch = max(1, config.epoch or view.window_events or 1000)
        self.bits = [view.psd_bit(q.id) for q in tracked]  # each tracked query's PSD bit
        self.tracked_bits = sum(self.bits)  # the others are never shed
        self._bitmaps: dict[int, int] = {}

    def reconfigure(self, config: ShedConfig, running: set[str]) -> None:
        """The new bounds and weights of the group's ``running`` tracked
        queries (``LoadShedder.reconfigure``); a removed query keeps its own."""
        self.config = config
        for k, q in enumerate(self.tracked):
            if q.name in running:
                self.bound_ms[k] = config.bounds_ms.get(q.name)
                self.bound[k] = float(config.bound(q.name) or 0)
                self.weight[k] = config.weight(q.name)
        self.capacity = 0.0  # bounds in ms are converted again at the next event
        self.min_bound = min(self.bound)

    # ------------------------------------------------------------ engine hooks
    def ranking(self) -> list[int]:
        """The group's queries in enumeration order: bounded ones by bound
        (in ms, then in units: tightest first) and weight (heaviest first),
        then the others as the workload gives them."""
        k_of = self.index

        def key(q: QueryPlan) -> tuple[float, float, float, float, int]:
            k = k_of.get(q.id)
            if k is None:
                return (math.inf, math.inf, math.inf, 0.0, q.id)
            ms = self.bound_ms[k]
            heaviest = -self.weight[k] if self.weighted_budgets else 0.0
            bound = (ms if ms is not None else math.inf, self.bound[k] if ms is None else 0.0)
            return (heaviest, *bound, -self.weight[k], q.id)

        return [q.id for q in sorted(self.view.queries, key=key)]

    def begin_batch(self, batch: EventBatch) -> None:
        """A batch is about to be processed."""
        self.batch = batch

    def _bounds(self, progress: Progress) -> None:
        """Convert the bounds in milliseconds to cost units at the capacity."""
        capacity = progress.capacity
        if capacity != self.capacity:
            self.capacity = capacity
            for k, ms in enumerate(self.bound_ms):
                if ms is not None:
                    self.bound[k] = ms / 1000 * capacity
            self.min_bound = min(self.bound)

    def charged(self, k: int, progress: Progress) -> float:
        """What counts against tracked query k's bound so far: the latency
        (queue included); for a bound in units in wall mode, the service."""
        return progress.service if progress.wall and self.bound_ms[k] is None else progress.latency

    def admit(self, row: int, progress: Progress) -> bool:
        """Input shedding: when the event's wait and update alone would pass
        the smallest bound (the queue is over it), then the policy's own
        (only in a group whose every query may be shed)."""
        self.entry_floor = progress.floor
        if not self.input_sheddable:
            return True
        self._bounds(progress)
        ahead = max(self.charged(k, progress) for k in range(len(self.tracked)))
        if ahead + self.update > self.min_bound:
            self.floor_seen += 1
            if self.floor_seen % self.config.probe:
                self.floor_shed += 1
                self.input_shed_of(range(len(self.tracked)))
                return False
        if not self.admit_input(row):
            self.events_shed += 1
            self.input_shed_of(self.readers(row))
            return False
        return True

    def input_shed_of(self, queries: Sequence[int]) -> None:
        """Count an input event shed against the tracked queries (indices) that lose it."""
        for k in queries:
            self.input_shed[k] += 1

    def readers(self, row: int) -> Sequence[int]:
        """The tracked queries (indices) that lose the batch's event at ``row`` when the policy sheds it."""
        return range(len(self.tracked))

    def discards(self, progress: Progress) -> Callable[[int, int, list[Node]], bool] | None:
        """The new partial matches not to create at this event (none here;
        ``QueryGroupShedder.discards``)."""
        return None

    def enumeration(self, query: QueryPlan, progress: Progress) -> WalkControl:
        """The budget ``L_q - latency so far - reserve``; the policy's order while overloaded."""
        k = self.index.get(query.id)
        if k is None:
            return WalkControl()
        self._bounds(progress)
        bound = self.bound[k]
        if progress.floor > bound:
            self.floor_over[k] += 1
        used = self.charged(k, progress)
        # with a queue, room for the update of the events waiting behind this one
        reserve = 0.0 if progress.wall and self.bound_ms[k] is None else 2 * self.floor
        budget = bound - used - reserve
        # the queries after this one wait for its output: a budget is split by weight
        later = [self.weight[j] for j in map(self.index.get, progress.after) if j is not None]
        if self.weighted_budgets:
            budget = self.weighted_budget(k, budget, used, later)
        elif later:
            budget *= self.weight[k] / (self.weight[k] + sum(later))
        order = self.order_for(k) if self.overloaded >> k & 1 else None
        bit = self.bits[k] if self.uses_masks else None
        # in wall mode before any service is measured, a bound in ms is no number of units yet
        limit = max(0, int(budget)) if budget != math.inf else None
        return WalkControl(limit, order, bit, self.visitor(k))

    def enumerated(self, query: QueryPlan, progress: Progress, walk: Walk, candidates: Sequence[Candidate]) -> None:
        """The detector: this enumeration's demand against the bound."""
        k = self.index.get(query.id)
        if k is None:
            return
        self.found[k] += len(candidates)
        self.walked[k] += walk.candidates
        if walk.truncated:
            self.cut_branches[k] += walk.left
        if candidates:
            a = self.config.smoothing
            self.per_match[k] += a * (walk.steps / len(candidates) - self.per_match[k])
            self.length[k] += a * (len(candidates[0][1]) - self.length[k])
        demand = self.charged(k, progress) + walk.steps + (walk.left * self.per_match[k] if walk.truncated else 0)
        self.last_demand[k] = demand
        self.demand[k] += self.config.smoothing * (demand - self.demand[k])
        if demand > self.bound[k] or self.demand[k] > self.bound[k]:
            self.overloaded |= 1 << k
            self.overloads[k] += 1
            self.ever_overloaded = True
            self.selecting |= 1 << k
            self.peak[k] = max(self.peak[k], demand, self.demand[k])
        else:
            self.overloaded &= ~(1 << k)
        if self.ever_overloaded:
            self.learn(k, walk, candidates)

    def stepped(self, instance: Any, outputs: list[tuple[Node, int]], row: int, progress: Progress) -> None:
        """After an event: learn, and select partial matches while overloaded."""
        self.events += 1
        self.pms_created += len(outputs)
        a = self.config.smoothing
        self.floor += a * (progress.floor - self.floor)
        self.update += a * (progress.floor - self.entry_floor - self.update)
        if self.ever_overloaded:
            self.observe(instance, outputs, row)
        if self.selecting and self.events - self.last_selection >= self.config.cooldown:
            self.last_selection = self.events
            self.selections += 1
            self.select()
            self.selecting = 0
            self.peak = [0.0] * len(self.tracked)

    def weighted_budget(self, k: int, budget: float, used: float, later: Sequence[float]) -> float:
        """Per-event budgets weighted by query: a query heavier than every
        query after it takes the whole budget left (a heavy match is worth
        more than the light ones its steps would have paid for); the queries
        of a group are ranked heaviest first, so a lighter one gets what the
        heavier ones left. Once the event's latency so far passes a quarter
        of the bound, a query lighter than the group's heaviest enumerates
        nothing: its steps would delay the events queued behind this one,
        whose heavy matches are worth more (measured with weights 4:1 at a
        30 % bound under a 2x burst, the heavy query kept 0.853 of its matches
        when a light one was cut to its weight's share, 0.866 with this).

        >>> from types import SimpleNamespace
        >>> g = SimpleNamespace(weight=[4.0, 1.0], bound=[100.0, 100.0])
        >>> GroupState.weighted_budget(g, 0, 80.0, 20.0, [1.0]), GroupState.weighted_budget(g, 1, 80.0, 20.0, [])
        (80.0, 80.0)
        >>> GroupState.weighted_budget(g, 1, 40.0, 60.0, [])
        0.0
        >>> g.weight = [1.0, 1.0]; GroupState.weighted_budget(g, 0, 80.0, 20.0, [1.0])
        40.0
        """
        weight = self.weight[k]
        if later and max(later) >= weight:
            budget *= weight / (weight + sum(later))
        heaviest = max(self.weight)
        if weight < heaviest and used > 0.25 * self.bound[k]:
            return 0.0
        return budget

    # ------------------------------------------------------------ policy
    def admit_input(self, row: int) -> bool:
        """The policy's input shedding (none here)."""
        return True

    def order_for(self, k: int) -> EnumerationOrder | None:
        """The enumeration order while tracked query k is overloaded (None: tECS order)."""
        return None

    def visitor(self, k: int) -> Callable[[Node], None] | None:
        """What sees the nodes tracked query k's walks test (None here)."""
        return None

    def learn(self, k: int, walk: Walk, candidates: Sequence[Candidate]) -> None:
        """Learn from tracked query k's walk and complete paths (nothing here)."""

    def observe(self, instance: Any, outputs: list[tuple[Node, int]], row: int) -> None:
        """Learn from an event's new partial matches (nothing here)."""

    def select(self) -> None:
        """Shed partial matches of the queries marked in ``selecting`` (nothing here)."""

    # ------------------------------------------------------------ helpers
    def bitmap(self, state: int) -> int:
        """The PSD bitmap of a deterministic state: the OR of its members'."""
        found = self._bitmaps.get(state)
        if found is None:
            found = self._bitmaps[state] = self.view.state_bitmap(state)
        return found

    def sheddable_state(self, state: int) -> bool:
        """Whether PMs in ``state`` may be taken out: some tracked query can
        still complete them and no query that is never shed can."""
        bitmap = self.bitmap(state)
        return bool(bitmap & self.tracked_bits) and not bitmap & ~self.tracked_bits

    def keep_ratio(self, k: int) -> float:
        """Sharp's Eq. 3 ratio L / l for tracked query k (1: not overloaded),
        taken per level: in a tECS an event's enumeration grows with the
        product of the PMs a match passes through (one per mark), not with
        their sum, so keeping (L / l) ** (1 / marks) of each level's
        overhead brings the product down by L / l."""
        demand = self.peak[k]
        if demand <= self.bound[k]:
            return 1.0
        return float((self.bound[k] / demand) ** (1.0 / max(1.0, self.length[k])))

    def lost_estimate(self, k: int) -> float:
        """An estimate of tracked query k's matches lost to the cuts: each
        branch a cut walk left waiting holds at least one candidate path,
        which becomes a match at the rate walked candidates did; each
        partial match shed would have led to as many matches as the mean
        partial match (matches times marks per match, over partial matches
        created); each input event shed to as many as the mean event
        (``input_lost``). Selectors shed the less useful ones first, so this
        leans low on recall: a rough figure, labelled as an estimate
        wherever shown."""
        per_candidate = self.found[k] / self.walked[k] if self.walked[k] else 1.0
        per_pm = self.found[k] * self.length[k] / self.pms_created if self.pms_created else 0.0
        return self.cut_branches[k] * min(1.0, per_candidate) + self.pms_shed[k] * per_pm + self.input_lost(k)

    def input_lost(self, k: int) -> float:
        """Tracked query k's matches lost with the input events shed, estimated:
        an event is on (matches times events per match) / events processed
        matches, and a match loses all of itself with any one of its events.

        >>> from types import SimpleNamespace
        >>> g = SimpleNamespace(found=[10], length=[3.0], events=60, input_shed=[20])
        >>> GroupState.input_lost(g, 0)  # 20 events, each on 10 x 3 / 60 matches
        10.0
        """
        if not self.input_shed[k] or not self.events:
            return 0.0
        return self.input_shed[k] * self.found[k] * self.length[k] / self.events

    def live_partial_matches(self) -> list[tuple[Any, int, list[Node]]]:
        """(partition, state, union-list) of every live state of every partition."""
        return list(self.view.partial_matches())
