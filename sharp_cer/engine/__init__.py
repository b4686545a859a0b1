"""The engine layer, above the plan and below shedding: CORE's Algorithm 1 over on-the-fly
determinized automata, the tECS, windows, partitions, enumeration and the
cost clock. An engine is three parts: each query group compiled
(``compiled``: immutable, derived from the plan), its live state
(``state``: plain data with snapshots that pickle) and the observers of
its service (``observers``: the latency and queue logs, the server).

It imports from the plan, events and language layers.
"""

from __future__ import annotations

from .compiled import CompiledQueryGroup
from .cost import CostClock, QueryCost
from .observers import Observers
from .runtime import Engine, MatchingMemoryError, QueryGroupRunner, run
from .state import EngineSnapshot, QueryGroupState

__all__ = [
    "CompiledQueryGroup",
    "CostClock",
    "Engine",
    "EngineSnapshot",
    "MatchingMemoryError",
    "Observers",
    "QueryCost",
    "QueryGroupRunner",
    "QueryGroupState",
    "run",
]
