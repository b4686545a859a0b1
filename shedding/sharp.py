"""Sharp: the PSD-indexed, cost-model-driven greedy selection of partial
matches (Sharp §4–5, Alg. 3 and 4), by view or by instance.

A partial match (PM) is an entry of a live union-list of some partition: the
runs that sit in one deterministic state after marking one event (or, where
the tECS united nodes of equal max-start, a few such). Its PSD bitmap is the
OR of the PSD bitmaps of the automaton states in its deterministic state:
the queries it can still become a match of. Its keep-mask (``Node.mask``)
holds the queries it is still kept for.

When the detector flags overloaded queries (bitmap ``OL``), the selector
(Alg. 4) keeps every PM whose bitmap misses ``OL`` (their clusters are not
touched), and among the others keeps the best ones first, for each
overloaded query i until the kept PMs' overhead reaches its share of Eq. 3:

    Σ_{ρ kept} b_i(ρ) Δ-_i(ρ)  ≤  (L_i / l_i) Σ_{ρ live} b_i(ρ) Δ-_i(ρ)

"Best" is Alg. 3's order: ρ before ρ' when its total weighted contribution
Σ_i Δ+_i over the overloaded queries is larger (a linear extension of the
per-query partial order: better on every query means a larger total). PMs
are put in order by bucketing their quality into ``LEVELS`` levels, so a
selection costs O(1) per PM.

By view, a PM not kept for query i loses bit i of its mask: the walks of i
never enter it, the other queries still see it; a PM kept for no query it
serves is also taken out of its union-list. By instance, a PM not kept for
every overloaded query it serves is taken out of its union-list (for all
queries at once), unless a query that is never shed needs it.

Under overload, enumeration goes better-child-first: depth first, but at a
union the branch whose next PM promises more matches of the query (times
the room its starts leave in the window) is followed first. A global
best-first heap measured worse than tECS order on DS1 (it gives up depth
first's locality, paying branch prefixes again), so the choice stays local.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.plan import QueryPlan
from sharp_cer.engine.enumeration import BetterChildFirst, EnumerationOrder
from sharp_cer.engine.shedding import Candidate, remove_partial_matches
from sharp_cer.engine.tecs import BOTTOM, Node
from sharp_cer.events.batch import EventBatch

from .base import GroupState, LoadShedder, first_mark, remember
from .sketch import Bucketer, HistoricalSketch

if TYPE_CHECKING:
    from sharp_cer.engine.runtime import GroupRunner

#: Quality levels of the bucket order.
LEVELS = 256
#: PMs whose key was seen less often than this (in recent PMs created) have
#: no estimate yet: they are kept first, never shed on no evidence.
_EVIDENCE = 3.0
_UNKNOWN = float("inf")


class SharpShedder(LoadShedder):
    """Sharp, shedding by view (``by_instance=False``) or by instance.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from planner import compile_plan
    >>> from sharp_cer.engine import Engine
    >>> from shedding.base import ShedConfig
    >>> s = Schema.parse("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int } }")
    >>> plan = compile_plan([("q", parse_and_check("SELECT * WHERE A ; B+ WITHIN 30 EVENTS", s))])
    >>> events = load_csv("A,1\\n" + "B,1\\n" * 14, s)[0]
    >>> engine = Engine(plan, shedder=SharpShedder(ShedConfig(bounds={"q": 60})), record_latency=True)
    >>> found = engine.process(events)
    >>> 0 < len(found) < 2 ** 14 - 1, int(engine.latency.units(0, "q").max()) <= 60
    (True, True)
    """

    name = "sharp"
    by_instance = False

    def make_group(self, runner: GroupRunner, tracked: list[QueryPlan]) -> GroupState:
        """A Sharp group shedder."""
        return SharpGroup(self, runner, tracked, by_instance=self.by_instance)


class SharpInstanceShedder(SharpShedder):
    """Sharp shedding by instance (Sharp-Inst of the paper's Fig. 12)."""

    name = "sharp-instance"
    by_instance = True


class SketchedGroup(GroupState):
    """A group shedder that keeps Sharp's sketch: attribute keys of PMs,
    PMs created and matches per key (see ``shedding.sketch``)."""

    def __init__(
        self, owner: LoadShedder, runner: GroupRunner, tracked: list[QueryPlan], attributes: Sequence[str]
    ) -> None:
        super().__init__(owner, runner, tracked)
        self.bucketer = Bucketer(attributes, owner.config.buckets)
        self.sketch = HistoricalSketch(len(tracked), self.bucketer.buckets, self.epoch, owner.config.decay)
        self.bucket_at: dict[int, int] = {}  # position -> bucket, of recent processed events
        self.rows: list[int] = []
        self.positions: list[int] = []

    def begin_batch(self, batch: EventBatch) -> None:
        """Bucket the batch's sketch attributes."""
        super().begin_batch(batch)
        columns = {}
        for name in self.bucketer.attributes:
            column = batch.columns.get(name)
            if column is not None and column.kind in ("int", "double", "primary_time"):
                columns[name] = np.where(column.valid, column.values.astype(np.float64), np.nan)
        self.rows = self.bucketer.bucket_rows(columns).tolist() if columns else [0] * len(batch)
        self.positions = batch.positions.tolist()

    def observe(self, outputs: list[tuple[Node, int]], row: int) -> None:
        """Count the event's new PMs by key."""
        bucket = self.rows[row]
        remember(self.bucket_at, self.positions[row], bucket)
        sketch = self.sketch
        for node, _ in outputs:
            sketch.created(sketch.key(node.label, bucket))
        sketch.tick()

    def learn(self, k: int, candidates: Sequence[Candidate]) -> None:
        """Credit every PM key on each match's path."""
        at, sketch = self.bucket_at, self.sketch
        buckets = sketch.buckets
        for _, marks in candidates:
            sketch.matched(k, [label * buckets + at.get(pos, 0) for pos, label in marks])

    def node_key(self, node: Node) -> int:
        """The attribute key of a PM entry (its first output node's)."""
        node = first_mark(node)
        if node.kind == BOTTOM:
            return -1
        return node.label * self.sketch.buckets + self.bucket_at.get(node.pos, 0)


class SharpGroup(SketchedGroup):
    """Sharp's group shedder (see the module docstring)."""

    def __init__(self, owner: LoadShedder, runner: GroupRunner, tracked: list[QueryPlan], by_instance: bool) -> None:
        attributes = sorted({a for q in tracked for a in owner.config.sketch_attributes.get(q.name, ())})
        super().__init__(owner, runner, tracked, attributes)
        self.by_instance = by_instance
        self.uses_masks = not by_instance
        self.position = 0  # of the event whose matches are enumerated
        self._orders: dict[int, EnumerationOrder] = {}

    def order_for(self, k: int) -> EnumerationOrder | None:
        """Better child first: a branch's score is the expected matches of the query
        through its next PM times the room its starts leave (how far its
        latest start is from the oldest start the window allows), since a
        younger branch has more paths below it; tECS order breaks ties."""
        order = self._orders.get(k)
        if order is None:
            sketch, node_key, runner = self.sketch, self.node_key, self.runner
            reach = runner.windows[self.tracked[k].id].bound
            if reach == float("inf"):
                reach = runner.largest if runner.largest != float("inf") else 1e9

            def score(node: Node) -> float:
                key = node_key(node)
                gain = sketch.contribution(key, k) if key >= 0 else 0.0
                return (gain + 0.01) * (node.maxstart - self.position + reach + 1)

            order = self._orders[k] = BetterChildFirst(score)
        self.position = self.positions[self.runner.row]
        return order

    def select(self) -> None:
        """Sharp's Alg. 4 with Eq. 3 over the group's live PMs."""
        overloaded = [k for k in range(len(self.tracked)) if self.sustained >> k & 1]
        ol_bits = sum(self.bits[k] for k in overloaded)
        sketch, node_key, bits = self.sketch, self.node_key, self.bits
        weight, per_match = self.weight, self.per_match
        # every PM of an overloaded query: (instance, state, index, node, [(k, gain, cost)], quality)
        pms: list[tuple[Any, int, int, Node, list[tuple[int, float, float]], float]] = []
        total = dict.fromkeys(overloaded, 0.0)
        for inst, state, ulist in self.live_partial_matches():
            serves = self.bitmap(state) & ol_bits
            if not serves:
                continue  # a cluster of non-overloaded queries: kept whole
            for j, node in enumerate(ulist):
                live = node.mask & serves
                if not live:
                    continue
                key = node_key(node)
                known = key >= 0 and sketch.evidence(key) >= _EVIDENCE
                gains = sketch.contributions(key) if known else [0.0] * len(bits)
                parts = []
                quality = 0.0
                for k in overloaded:
                    if live & bits[k]:
                        gain = weight[k] * gains[k]
                        cost = per_match[k] * (1.0 + gains[k])
                        parts.append((k, gain, cost))
                        quality += gain
                        total[k] += cost
                pms.append((inst, state, j, node, parts, quality if known else _UNKNOWN))
        self.considered += len(pms)
        if not pms:
            return
        budget = {k: total[k] * self.keep_ratio(k) for k in overloaded}
        spent = dict.fromkeys(overloaded, 0.0)
        best = max((pm[5] for pm in pms if pm[5] != _UNKNOWN), default=0.0) or 1.0
        levels: list[list[int]] = [[] for _ in range(LEVELS)]
        for i, pm in enumerate(pms):
            levels[LEVELS - 1 if pm[5] >= best else int(pm[5] / best * (LEVELS - 1))].append(i)
        removals: dict[tuple[int, int], tuple[Any, int, list[bool]]] = {}
        for level in reversed(levels):
            for i in level:
                inst, state, j, node, parts, quality = pms[i]
                dropped = 0
                for k, _, cost in parts:
                    if spent[k] + cost <= budget[k] or quality == _UNKNOWN:
                        spent[k] += cost
                    else:
                        dropped |= bits[k]
                        self.pms_shed[k] += 1
                if not dropped:
                    continue
                if self.by_instance:
                    gone = not self.bitmap(state) & ~self.tracked_bits  # a query never shed needs it
                else:
                    node.mask &= ~dropped
                    gone = not node.mask & self.bitmap(state)
                if gone:
                    entry = removals.get((id(inst), state))
                    if entry is None:
                        entry = removals[(id(inst), state)] = (inst, state, [True] * len(inst.active[state]))
                    entry[2][j] = False
        for inst, state, keep in removals.values():
            self.pms_removed += remove_partial_matches(self.runner, inst, state, keep)
