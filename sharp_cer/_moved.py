"""Old import paths kept for one release: a top-level package that moved
into ``sharp_cer`` warns once and hands out the new modules, so a class
imported through either path is the same class.

>>> import importlib, warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     old = importlib.import_module("planner.plan")
>>> import sharp_cer.planner.plan
>>> old is sharp_cer.planner.plan
True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType


class _MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``old.x`` as the already-importable ``new.x``."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if not name.startswith(self.old + "."):
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.new + spec.name[len(self.old) :])

    def exec_module(self, module: ModuleType) -> None:
        """The module ran when it was imported under its new name."""


def moved(old: str, new: str) -> ModuleType:
    """Warn that ``old`` moved to ``new`` and make ``old`` and its
    submodules names of the new modules; returns the new package."""
    warnings.warn(
        f"the package '{old}' moved to '{new}' in sharp-cer 0.2.0, and the old name goes in 0.3\n"
        f"  hint: import {new} (or from {new}.MODULE import NAME) instead",
        DeprecationWarning,
        stacklevel=3,
    )
    if not any(isinstance(f, _MovedFinder) and f.old == old for f in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder(old, new))
    package = importlib.import_module(new)
    sys.modules[old] = package
    return package
