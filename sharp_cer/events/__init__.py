"""Events: schemas in, columnar batches out.

The loaders and the batch are importable from here (they load on first use):

>>> from sharp_cer.events import iter_csv, load_csv
>>> from sharp_cer.language import Schema
>>> s = Schema.parse("CREATE STREAM S { EVENT A { x:int } }")
>>> [len(batch) for batch, _ in iter_csv("A,1\\nA,2\\n", s)]
[2]
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    **{
        name: "sharp_cer.events.loaders"
        for name in (
            "load_csv",
            "load_jsonl",
            "load_parquet",
            "load_pandas",
            "load_arrow",
            "iter_csv",
            "iter_jsonl",
            "iter_parquet",
            "StreamProgress",
        )
    },
    "EventBatch": "sharp_cer.events.batch",
    "LoadReport": "sharp_cer.events.batch",
    "DeadLetter": "sharp_cer.events.batch",
    "Match": "sharp_cer.events.match",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sharp_cer.events' has no attribute {name!r}")
