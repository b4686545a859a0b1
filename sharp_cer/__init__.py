"""sharp-cer: complex event recognition for many tenants' rules at once.

Importing the package is cheap: the layers load on first use, so the
language never drags in Spark.

>>> import sharp_cer
>>> sharp_cer.parse_query("SELECT * WHERE A ; B WITHIN 3 EVENTS").within.count
3
"""

from __future__ import annotations

import importlib
from typing import Any

from .errors import SharpCerError

#: the release; pyproject.toml's version and the installed metadata's agree (tests/test_packaging.py)
__version__ = "0.2.0"

_LAZY = {
    "parse_query": "sharp_cer.language",
    "parse_and_check": "sharp_cer.language",
    "load_workload": "sharp_cer.language",
    "Schema": "sharp_cer.language",
    "to_ceql": "sharp_cer.language",
    "Detector": "sharp_cer.api",
    "detect": "sharp_cer.api",
    "matches_to_arrow": "sharp_cer.api",
    "match_recognize": "sharp_cer.recognize",
    "Pace": "sharp_cer.engine.queueing",
}

__all__ = ["SharpCerError", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sharp_cer' has no attribute {name!r}")
