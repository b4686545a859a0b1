"""The engine layer, above the plan and below shedding: CORE's Algorithm 1 over on-the-fly
determinized automata, the tECS, windows, partitions, enumeration and the
cost clock.

It imports from the plan, events and language layers.
"""

from __future__ import annotations

from .cost import CostClock, QueryCost
from .runtime import Engine, run

__all__ = ["CostClock", "Engine", "QueryCost", "run"]
