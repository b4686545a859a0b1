"""The cost clock: deterministic work units beside wall-clock time.

Units are counted, not timed, so a test about latency or shedding gives the
same figures on every machine: transitions taken, tECS nodes created,
enumeration steps (nodes visited) and condition checks (atoms evaluated).
The *update* cost of an event is shared by every query of its group; the
*enumeration* cost is each query's own.

>>> clock = CostClock()
>>> clock.per_query["q"] = QueryCost(enumeration_steps=3)
>>> clock.record_batch(units=[8, 2], update=7)
>>> clock.events, clock.update_units, clock.max_event_units, clock.total_units
(2, 7, 8, 10)
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class QueryCost:
    """One query's enumeration work and output.

    >>> QueryCost().matches
    0
    """

    enumeration_steps: int = 0
    matches: int = 0
    #: complete paths reached by enumeration (before strategy and LIMIT)
    candidates: int = 0
    #: enumerations cut short by the budget
    truncated: int = 0


@dataclass
class CostClock:
    """Totals since the engine started, and the figures of the last event
    (see the module example)."""

    events: int = 0
    transitions: int = 0
    nodes_created: int = 0
    enumeration_steps: int = 0
    condition_checks: int = 0
    update_units: int = 0
    max_event_units: int = 0
    last_event_units: int = 0
    wall_seconds: float = 0.0
    per_query: dict[str, QueryCost] = field(default_factory=dict)

    def record_batch(self, units: list[int], update: int) -> None:
        """Book a batch: each event's units (its update and every query's
        enumeration steps, which the engine books per query as it goes) and
        the batch's update units.

        >>> c = CostClock(); c.record_batch([4, 6], 8); c.last_event_units, c.max_event_units
        (6, 6)
        """
        if not units:
            return
        self.events += len(units)
        self.update_units += update
        self.last_event_units = units[-1]
        self.max_event_units = max(self.max_event_units, max(units))

    @property
    def total_units(self) -> int:
        """Every unit counted so far.

        >>> c = CostClock(per_query={"q": QueryCost(enumeration_steps=2)}); c.record_batch([6], 4); c.total_units
        6
        """
        return self.update_units + sum(q.enumeration_steps for q in self.per_query.values())

    def summary(self) -> dict[str, float]:
        """The figures as a flat dict, for reports and JSON.

        >>> CostClock().summary()["units_per_event"]
        0.0
        """
        return {
            "events": self.events,
            "transitions": self.transitions,
            "nodes_created": self.nodes_created,
            "enumeration_steps": self.enumeration_steps,
            "condition_checks": self.condition_checks,
            "units_per_event": self.total_units / self.events if self.events else 0.0,
            "max_event_units": self.max_event_units,
            "wall_seconds": self.wall_seconds,
        }
