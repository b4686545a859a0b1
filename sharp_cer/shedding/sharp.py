"""Sharp: the PSD-indexed, cost-model-driven greedy selection of partial
matches (Sharp §4–5, Alg. 3 and 4), by view or by instance.

A partial match (PM) is an entry of a live union-list of some partition: the
runs that sit in one deterministic state after marking one event (or, where
the tECS united nodes of equal max-start, a few such). Its PSD bitmap is the
OR of the PSD bitmaps of the automaton states in its deterministic state:
the queries it can still become a match of. Its keep-mask (``Node.mask``)
holds the queries it is still kept for.

When the detector marks queries for selection (bitmap ``OL``), the selector
(Alg. 4) keeps every PM whose bitmap misses ``OL`` (their clusters are not
touched). The others are grouped in clusters, one per attribute key; for
each marked query i the clusters are ranked by their yield for i (matches
per test that i's walks made of their PMs, from the sketch, scaled by i's
weight relative to the mean), worst first, and shed while the yield is
surely below what a test gives in i's walks the budget cut (its upper
confidence bound is) and the overhead shed stays within Eq. 3's share (the
cluster that would pass it is shed in part, that share of its PMs: Eq. 3
counts PMs, and a cluster as large as the overload must not stop it):

    Σ_{ρ kept} b_i(ρ) Δ-_i(ρ)  ≥  (L_i / l_i) ** (1 / m_i) Σ_{ρ live} b_i(ρ) Δ-_i(ρ)

where l_i is the highest demand since the last selection and m_i the marks
per match (a tECS walk's cost grows with the product of the PMs a match
passes through, one per mark, so each level keeps the m_i-th root). The
threshold is the knapsack's: a test freed by shedding is worth a test of a
cut walk, a PM shed loses its matches everywhere. The ranking costs O(1)
per PM (a few dozen clusters per query group). Shed clusters stay shed for PMs
created later (O(1) each; a cluster shed in part, the same share of them),
until the next selection or an epoch without a cut walk.

By view, a PM shed for query i loses bit i of its mask: the walks of i
never enter it, the other queries still see it; a PM kept for no query it
serves is also taken out of its union-list. By instance, a PM is taken out
of its union-list once it is shed for every tracked query it serves, unless
a query that is never shed needs it.

Enumeration stays in tECS order: a better-child-first order (at a union,
the branch whose next PM's cluster has the higher yield or expected
matches first) and a global best-first heap both measured below tECS order
on DS1 (the younger branch, walked first, is already the dense one, and a
heap gives up depth first's shared prefixes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from sharp_cer.engine.enumeration import Walk
from sharp_cer.engine.shedder_protocol import Candidate, QueryGroupView
from sharp_cer.engine.tecs import BOTTOM, Node
from sharp_cer.events.batch import EventBatch
from sharp_cer.planner.plan import QueryPlan

from .base import GroupState, LoadShedder, ShedConfig, first_mark, remember
from .sketch import Bucketer, HistoricalSketch

#: Clusters tested less often than this by a query's cut walks have no
#: estimate yet: they are kept, never shed on no evidence.
_EVIDENCE = 3.0


class SharpShedder(LoadShedder):
    """Sharp, shedding by view (``by_instance=False``) or by instance.

    >>> from sharp_cer.language import Schema, parse_and_check
    >>> from sharp_cer.events.loaders import load_csv
    >>> from sharp_cer.planner import compile_plan
    >>> from sharp_cer.engine import Engine
    >>> from sharp_cer.shedding.base import ShedConfig
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

    def make_group(self, view: QueryGroupView, tracked: list[QueryPlan]) -> GroupState:
        """A Sharp group shedder."""
        return SharpGroup(self, view, tracked, by_instance=self.by_instance)


class SharpInstanceShedder(SharpShedder):
    """Sharp shedding by instance (Sharp-Inst of the paper's Fig. 12)."""

    name = "sharp-instance"
    by_instance = True


class SketchedGroup(GroupState):
    """A group shedder that keeps Sharp's sketch: attribute keys of PMs,
    PMs created and matches per key (see ``sharp_cer.shedding.sketch``)."""

    def __init__(
        self, owner: LoadShedder, view: QueryGroupView, tracked: list[QueryPlan], attributes: Sequence[str]
    ) -> None:
        super().__init__(owner, view, tracked)
        self.bucketer = Bucketer(attributes, owner.config.buckets)
        self.sketch = HistoricalSketch(len(tracked), self.bucketer.buckets, self.epoch, owner.config.decay)
        self.bucket_at: dict[int, int] = {}  # position -> bucket, of recent processed events
        self.rows: list[int] = []
        self.positions: list[int] = []
        self._tests: dict[int, int] = {}  # key -> tests in the walk under way

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

    def observe(self, instance: Any, outputs: list[tuple[Node, int]], row: int) -> None:
        """Count the event's new PMs by key."""
        bucket = self.rows[row]
        remember(self.bucket_at, self.positions[row], bucket)
        sketch = self.sketch
        for node, _ in outputs:
            sketch.created(sketch.key(node.label, bucket))
        sketch.tick()

    def visitor(self, k: int) -> Callable[[Node], None] | None:
        """Every node tracked query k's walks test counts for its key, once
        the query has been overloaded (an idle shedder costs the walks
        nothing); ``learn`` books the counts after the walk."""
        return self._count_test if self.overloads[k] else None

    def _count_test(self, node: Node) -> None:
        key = self.node_key(node)
        self._tests[key] = self._tests.get(key, 0) + 1

    def learn(self, k: int, walk: Walk, candidates: Sequence[Candidate]) -> None:
        """Credit every PM key on each match's path; if the budget cut the
        walk, charge each key the tests its PMs cost it (only there does a
        test cost a match: where the budget is not short, tests are free)."""
        at, sketch = self.bucket_at, self.sketch
        if walk.truncated:
            for key, count in self._tests.items():
                sketch.tested(k, key, count)
        self._tests.clear()
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

    def __init__(self, owner: LoadShedder, view: QueryGroupView, tracked: list[QueryPlan], by_instance: bool) -> None:
        attributes = sorted({a for q in tracked for a in owner.config.sketch_attributes.get(q.name, ())})
        super().__init__(owner, view, tracked, attributes)
        self.by_instance = by_instance
        self.uses_masks = not by_instance
        n = len(tracked)
        mean_weight = sum(self.weight) / n
        self.relative_weight = [w / mean_weight for w in self.weight]
        self.cut_yield: list[float | None] = [None] * n  # matches per test of walks the budget cut
        # per query, the clusters shed: the share of their PMs to shed (1: all)
        self.shed_keys: list[dict[int, float]] = [{} for _ in range(n)]
        self._credit: dict[tuple[int, int], float] = {}  # (query, cluster): share owed, for partial ones
        self.last_overload = [0] * n

    def reconfigure(self, config: ShedConfig, running: set[str]) -> None:
        """Also the weights relative to the group's mean."""
        super().reconfigure(config, running)
        mean_weight = sum(self.weight) / len(self.weight)
        self.relative_weight = [w / mean_weight for w in self.weight]

    def learn(self, k: int, walk: Walk, candidates: Sequence[Candidate]) -> None:
        """Also the yield of the walks the budget cut: what a test is worth
        when the budget is short (the selector's threshold)."""
        super().learn(k, walk, candidates)
        if walk.truncated:
            self.last_overload[k] = self.events
            if walk.tests:
                found = len(candidates) / walk.tests
                now = self.cut_yield[k]
                self.cut_yield[k] = found if now is None else now + self.config.smoothing * (found - now)

    def observe(self, instance: Any, outputs: list[tuple[Node, int]], row: int) -> None:
        """Count the new PMs, and shed at once those of the clusters the
        last selection shed (until the query is calm for an epoch)."""
        super().observe(instance, outputs, row)
        for k, keys in enumerate(self.shed_keys):
            if keys and self.events - self.last_overload[k] > self.epoch:
                self.shed_keys[k] = {}
        if not any(self.shed_keys) or not outputs:
            return
        bucket, buckets = self.rows[row], self.sketch.buckets
        leaving: dict[int, set[int]] = {}
        for node, state in outputs:
            key = node.label * buckets + bucket
            dropped = 0
            for k in range(len(self.shed_keys)):
                if self._takes(k, key):
                    dropped |= self.bits[k]
            if dropped and self._shed(node, state, dropped):
                leaving.setdefault(state, set()).add(id(node))
        for state, ids in leaving.items():
            self._take_out(instance, state, ids)

    def _takes(self, k: int, key: int) -> bool:
        """Whether query k sheds the next PM of cluster ``key``: every one of
        a cluster shed whole; of one shed in part, its share, spread evenly
        over the cluster's PMs in the order they come."""
        share = self.shed_keys[k].get(key)
        if share is None:
            return False
        if share >= 1.0:
            return True
        credit = self._credit.get((k, key), 0.0) + share
        taken = credit >= 1.0
        self._credit[(k, key)] = credit - 1.0 if taken else credit
        return taken

    def _shed(self, node: Node, state: int, dropped: int) -> bool:
        """Shed ``node`` (a PM in ``state``) for the tracked queries whose
        bits are in ``dropped``, counting it for them; whether it is to
        leave its union-list. By instance it is shed only if it leaves:
        shed for every tracked query it serves, needed by no query never
        shed."""
        bitmap = self.bitmap(state)
        if self.by_instance:
            leaves = not bitmap & ~self.tracked_bits and not bitmap & self.tracked_bits & ~dropped
            if not leaves:
                return False
        else:
            node.mask &= ~dropped
            leaves = not node.mask & bitmap
        for k, bit in enumerate(self.bits):
            if dropped & bit:
                self.pms_shed[k] += 1
        return leaves

    def _take_out(self, instance: Any, state: int, ids: set[int]) -> None:
        """Take the PMs whose ids are in ``ids`` out of ``state``'s live
        union-list in ``instance``."""
        ulist = self.view.union_list(instance, state)
        if ulist is not None:
            keep = [id(entry) not in ids for entry in ulist]
            self.pms_removed += self.view.take_out(instance, state, keep)

    def select(self) -> None:
        """Sharp's Alg. 4 with Eq. 3, on clusters of PMs (their attribute
        keys): for each query marked for selection, the clusters whose
        yield (weighted matches per test) is below what a test gives in the
        walks its budget cuts are shed, worst first, as long as their
        overhead fits the share Eq. 3 lets go; the PMs of the others are
        kept. Shed clusters stay shed for PMs created later, until the next
        selection or an epoch without overload."""
        sketch, node_key, bits = self.sketch, self.node_key, self.bits
        marked = [k for k in range(len(self.tracked)) if self.selecting >> k & 1 and self.cut_yield[k] is not None]
        marked_bits = sum(bits[k] for k in marked)
        # live PMs of the marked queries, and per query the overhead of each cluster
        pms: list[tuple[Any, int, Node, int]] = []
        overhead: list[dict[int, float]] = [{} for _ in self.tracked]
        for inst, state, ulist in self.live_partial_matches():
            serves = self.bitmap(state) & marked_bits
            if not serves:
                continue  # a cluster of queries not overloaded: kept whole
            for node in ulist:
                live = node.mask & serves
                if not live:
                    continue
                key = node_key(node)
                pms.append((inst, state, node, key))
                for k in marked:
                    if live & bits[k]:
                        per_key = overhead[k]
                        per_key[key] = per_key.get(key, 0.0) + sketch.overhead(key, k)
        self.considered += len(pms)
        for k in marked:
            self.shed_keys[k] = self._shed_clusters(k, overhead[k])
        self._credit.clear()
        leaving: dict[tuple[int, int], tuple[Any, int, set[int]]] = {}
        for inst, state, node, key in pms:
            dropped = 0
            for k in marked:
                if node.mask & bits[k] and self._takes(k, key):
                    dropped |= bits[k]
            if dropped and self._shed(node, state, dropped):
                leaving.setdefault((id(inst), state), (inst, state, set()))[2].add(id(node))
        for inst, state, ids in leaving.values():
            self._take_out(inst, state, ids)

    def _shed_clusters(self, k: int, overhead: dict[int, float]) -> dict[int, float]:
        """The clusters (keys) to shed for query k, with the share of their
        PMs to shed: worst yield first, while the yield is surely below the
        cut walks' (its upper confidence bound is: a cluster seen briefly is
        not shed on chance) and Eq. 3 lets overhead go. Eq. 3 counts PMs,
        not clusters: the first cluster whose overhead passes what is left
        to let go is shed in that share (a cluster as large as the overload
        would otherwise stop the selection, and nothing would be shed)."""
        sketch, cut = self.sketch, self.cut_yield[k]
        assert cut is not None
        weight = self.relative_weight[k]
        ranked = []
        for key in overhead:
            tests = sketch.tests(key, k)
            if key >= 0 and tests >= _EVIDENCE:
                matches = sketch.yield_of(key, k) * tests
                ranked.append((weight * upper_bound(matches) / tests, key))
        ranked.sort()
        room = (1.0 - self.keep_ratio(k)) * sum(overhead.values())
        shed: dict[int, float] = {}
        for quality, key in ranked:
            if quality >= cut or room <= 0:
                break
            share = 1.0 if overhead[key] <= room else room / overhead[key]
            room -= share * overhead[key]
            shed[key] = share
        return shed


def upper_bound(count: float) -> float:
    """An upper confidence bound (about 97.5%) on the mean of a Poisson
    count observed as ``count``.

    >>> upper_bound(0.0), round(upper_bound(100.0), 1)
    (2.0, 122.0)
    """
    return count + 2.0 * math.sqrt(count) + 2.0
