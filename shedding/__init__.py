"""The shedding layer (DESIGN.md §1, §5): overload detection, the cost sketch,
the PSD index, the greedy selector and the baselines.

It implements the engine's ``Shedder`` protocol. Its modules arrive with the
shedding issue; until then the package holds no code.
"""

from __future__ import annotations
