"""The compiled core's extension module (``_core.pyx``), loaded once, or
None and why not: ``native`` runs query groups on it, ``feed`` codes a
batch's strings with it. Its own module so that neither imports the other.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

#: the environment variable that forces the pure-Python engine
PURE = "SHARP_CER_PURE"


def load() -> tuple[Any, str]:
    """The compiled module (None: not available) and why not."""
    if os.environ.get(PURE, "") not in ("", "0"):
        return None, f"{PURE}={os.environ[PURE]}"
    try:
        return importlib.import_module("sharp_cer.engine._core"), ""
    except ModuleNotFoundError:
        return None, "no compiled core: it was not built; reinstall with a C++ compiler (gcc) on the PATH"
    except ImportError as error:
        return None, f"no compiled core: {error}"


CORE, WHY = load()
