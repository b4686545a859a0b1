"""The shedding layer, above the engine and below the surfaces: overload detection, the cost sketch,
the PSD index, the greedy selector and the baselines, behind the engine's
``Shedder`` protocol.

>>> sorted(SHEDDERS)
['darling', 'hybrid', 'random-input', 'random-state', 'selectivity', 'sharp', 'sharp-instance', 'truncate', 'value']
>>> make_shedder("sharp", ShedConfig(bounds={"q": 100})).name
'sharp'
"""

from __future__ import annotations

from sharp_cer.errors import SheddingError

from .base import LoadShedder, ShedConfig
from .baselines import DarlingShedder, HybridShedder, RandomInputShedder, RandomStateShedder, SelectivityShedder
from .sharp import SharpInstanceShedder, SharpShedder
from .value import ValueShedder

SHEDDERS: dict[str, type[LoadShedder]] = {
    cls.name: cls
    for cls in (
        SharpShedder,
        SharpInstanceShedder,
        RandomInputShedder,
        RandomStateShedder,
        SelectivityShedder,
        DarlingShedder,
        HybridShedder,
        LoadShedder,
        ValueShedder,
    )
}


def make_shedder(name: str, config: ShedConfig) -> LoadShedder:
    """The shedder called ``name`` (see ``SHEDDERS``) with ``config``."""
    cls = SHEDDERS.get(name)
    if cls is None:
        raise SheddingError(f"unknown shedder {name!r}\n  expected one of: {', '.join(SHEDDERS)}")
    return cls(config)


__all__ = ["SHEDDERS", "LoadShedder", "ShedConfig", "make_shedder"]
