"""The baselines of Sharp's experiments (§6.1), behind the same interface and
with the same budget and detector as Sharp (``sharp_cer.shedding.base``):

* random input (RI): drop events at random, at a rate the detector steers;
* random state (RS): on overload, keep each PM of an overloaded query with
  probability L / l (Eq. 3's ratio), drop the rest by instance;
* selectivity-based state (SS): on overload, keep the PMs of the states whose
  PMs most often end in a match (per state, blind to attributes and to which
  query), within Eq. 3's share, drop the rest by instance;
* DARLING-like input shedding: drop events of the types that contribute
  least to matches per event, at the steered rate (DARLING also weighs its
  input queue, which a per-event bound here does not have);
* ICDE'20-like hybrid: input shedding by type utility only when the demand is
  more than twice the bound, state shedding as SS otherwise.

The input rate controller: each enumeration whose demand passes the bound
multiplies the kept fraction of input by max(1/2, L / demand); one that fits
lets it grow back by 2%.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sharp_cer.engine.enumeration import Walk
from sharp_cer.engine.shedder_protocol import Candidate, Progress, QueryGroupView
from sharp_cer.engine.tecs import Node
from sharp_cer.events.batch import EventBatch
from sharp_cer.planner.plan import QueryPlan

from .base import GroupState, LoadShedder, first_mark, remember
from .sketch import HistoricalSketch

#: The smallest fraction of input the controller keeps.
_MIN_KEEP = 0.02


class _InputRate(GroupState):
    """A group shedder with the input rate controller."""

    #: demand over bound by more than this factor steers the input rate
    steer_above = 1.0

    def __init__(self, owner: LoadShedder, view: QueryGroupView, tracked: list[QueryPlan]) -> None:
        super().__init__(owner, view, tracked)
        self.keep = 1.0

    def enumerated(self, query: QueryPlan, progress: Progress, walk: Walk, candidates: Sequence[Candidate]) -> None:
        """Steer the kept fraction of input."""
        super().enumerated(query, progress, walk, candidates)
        k = self.index.get(query.id)
        if k is None:
            return
        demand, bound = self.last_demand[k], self.bound[k]
        if demand > bound * self.steer_above:
            self.keep = max(_MIN_KEEP, self.keep * max(0.5, bound * self.steer_above / demand))
        elif demand <= bound:
            self.keep = min(1.0, self.keep * 1.02)


class RandomInputShedder(LoadShedder):
    """Random input shedding (RI)."""

    name = "random-input"

    def make_group(self, view: QueryGroupView, tracked: list[QueryPlan]) -> GroupState:
        """An RI group shedder."""
        return RandomInputGroup(self, view, tracked)


class RandomInputGroup(_InputRate):
    """Drop each event with probability 1 - keep."""

    def admit_input(self, row: int) -> bool:
        """A coin weighted by the kept fraction."""
        return self.keep >= 1.0 or self.random.random() < self.keep


class _StateShedding(GroupState):
    """Shedding PMs by instance within Eq. 3's share, in the order ``rank``
    gives (higher first)."""

    def select(self) -> None:
        """Keep the best PMs of overloaded states until the smallest Eq. 3
        ratio of the overloaded queries is reached (counted in PMs)."""
        ratio = min(self.keep_ratio(k) for k in range(len(self.tracked)) if self.selecting >> k & 1)
        live = [
            (inst, state, ulist) for inst, state, ulist in self.live_partial_matches() if self.sheddable_state(state)
        ]
        pms = [(inst, state, j, node) for inst, state, ulist in live for j, node in enumerate(ulist)]
        self.considered += len(pms)
        keep_flags = {(id(inst), state): (inst, state, [True] * len(ulist)) for inst, state, ulist in live}
        for inst, state, j in self.drop(pms, ratio):
            keep_flags[(id(inst), state)][2][j] = False
        for inst, state, keep in keep_flags.values():
            self.pms_removed += self.view.take_out(inst, state, keep)

    def drop(self, pms: list[tuple[Any, int, int, Node]], ratio: float) -> list[tuple[Any, int, int]]:
        """Which PMs to drop, keeping about ``ratio`` of them."""
        raise NotImplementedError


class RandomStateShedder(LoadShedder):
    """Random state shedding (RS)."""

    name = "random-state"

    def make_group(self, view: QueryGroupView, tracked: list[QueryPlan]) -> GroupState:
        """An RS group shedder."""
        return RandomStateGroup(self, view, tracked)


class RandomStateGroup(_StateShedding):
    """Keep each PM with probability ``ratio``."""

    def drop(self, pms: list[tuple[Any, int, int, Node]], ratio: float) -> list[tuple[Any, int, int]]:
        """A seeded coin per PM."""
        rand = self.random.random
        return [(inst, state, j) for inst, state, j, _ in pms if rand() >= ratio]


class _StateSketch(_StateShedding):
    """Per label (state), PMs created and matches they ended in, over all
    queries: the state's selectivity."""

    def __init__(self, owner: LoadShedder, view: QueryGroupView, tracked: list[QueryPlan]) -> None:
        super().__init__(owner, view, tracked)
        self.sketch = HistoricalSketch(1, 1, self.epoch, owner.config.decay)

    def observe(self, instance: Any, outputs: list[tuple[Node, int]], row: int) -> None:
        """Count the new PMs per label."""
        super().observe(instance, outputs, row)
        for node, _ in outputs:
            self.sketch.created(node.label)
        self.sketch.tick()

    def learn(self, k: int, walk: Walk, candidates: Sequence[Candidate]) -> None:
        """Credit each match's labels."""
        super().learn(k, walk, candidates)
        for _, marks in candidates:
            self.sketch.matched(0, [label for _, label in marks])

    def drop(self, pms: list[tuple[Any, int, int, Node]], ratio: float) -> list[tuple[Any, int, int]]:
        """Keep the PMs of the most selective states first."""
        ranked = sorted(pms, key=lambda pm: -self.sketch.contribution(first_mark(pm[3]).label, 0))
        kept = int(len(ranked) * ratio)
        return [(inst, state, j) for inst, state, j, _ in ranked[kept:]]


class SelectivityShedder(LoadShedder):
    """Selectivity-based state shedding (SS)."""

    name = "selectivity"

    def make_group(self, view: QueryGroupView, tracked: list[QueryPlan]) -> GroupState:
        """An SS group shedder."""
        return _StateSketch(self, view, tracked)


class DarlingGroup(_InputRate):
    """Input shedding by event type utility: matches each type's events are
    part of, per event of the type."""

    def __init__(self, owner: LoadShedder, view: QueryGroupView, tracked: list[QueryPlan]) -> None:
        super().__init__(owner, view, tracked)
        self.seen: dict[int, float] = {}  # type code -> events
        self.used: dict[int, float] = {}  # type code -> marks in matches
        self.type_at: dict[int, int] = {}  # position -> type code of recent events
        self.codes: list[int] = []
        self.positions: list[int] = []
        self.drop_chance: dict[int, float] = {}
        self.planned_keep = 1.0

    def begin_batch(self, batch: EventBatch) -> None:
        """Remember the batch's types and positions."""
        super().begin_batch(batch)
        self.codes = batch.codes.tolist()
        self.positions = batch.positions.tolist()

    def observe(self, instance: Any, outputs: list[tuple[Node, int]], row: int) -> None:
        """Count events per type."""
        super().observe(instance, outputs, row)
        code = self.codes[row]
        self.seen[code] = self.seen.get(code, 0.0) + 1.0
        remember(self.type_at, self.positions[row], code)

    def learn(self, k: int, walk: Walk, candidates: Sequence[Candidate]) -> None:
        """Credit each match's events' types."""
        super().learn(k, walk, candidates)
        at, used = self.type_at, self.used
        for _, marks in candidates:
            for pos, _ in marks:
                code = at.get(pos)
                if code is not None:
                    used[code] = used.get(code, 0.0) + 1.0

    def admit_input(self, row: int) -> bool:
        """Drop the least useful types first, to the kept fraction."""
        if self.keep >= 1.0:
            return True
        if abs(self.keep - self.planned_keep) > 0.01 or not self.drop_chance:
            self._plan()
        chance = self.drop_chance.get(self.codes[row], 0.0)
        return chance <= 0.0 or self.random.random() >= chance

    def _plan(self) -> None:
        """Per type, the chance of dropping one of its events."""
        self.planned_keep = self.keep
        total = sum(self.seen.values()) or 1.0
        to_drop = 1.0 - self.keep
        self.drop_chance = {}
        for code in sorted(self.seen, key=lambda c: self.used.get(c, 0.0) / self.seen[c]):
            share = self.seen[code] / total
            if to_drop <= 0:
                break
            self.drop_chance[code] = min(1.0, to_drop / share)
            to_drop -= share


class DarlingShedder(LoadShedder):
    """DARLING-like input shedding by type utility."""

    name = "darling"

    def make_group(self, view: QueryGroupView, tracked: list[QueryPlan]) -> GroupState:
        """A DARLING-like group shedder."""
        return DarlingGroup(self, view, tracked)


class HybridGroup(DarlingGroup, _StateSketch):
    """Input by type utility when the demand is over twice the bound; state
    by selectivity otherwise."""

    steer_above = 2.0


class HybridShedder(LoadShedder):
    """ICDE'20-like hybrid of input and state shedding."""

    name = "hybrid"

    def make_group(self, view: QueryGroupView, tracked: list[QueryPlan]) -> GroupState:
        """A hybrid group shedder."""
        return HybridGroup(self, view, tracked)
