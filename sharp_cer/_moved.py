"""Old import paths kept for one release. A top-level package that moved
into ``sharp_cer`` (``moved``) and a module that was renamed (``renamed``)
warn once and hand out the new modules themselves, so a class imported
through either path is the same class.

>>> import importlib, warnings
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     old = importlib.import_module("planner.plan")
>>> import sharp_cer.planner.plan
>>> old is sharp_cer.planner.plan, sharp_cer.planner.plan.__spec__.name
(True, 'sharp_cer.planner.plan')
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any


def _warn(what: str, new: str, stacklevel: int) -> None:
    warnings.warn(
        f"{what} sharp-cer 0.2.0, and the old name goes in 0.3\n"
        f"  hint: import {new} (or from {new} import NAME) instead",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name as the importable new module: ``packages`` maps an
    old package's submodules, ``modules`` maps one old module (and warns)."""

    def __init__(self) -> None:
        self.packages: dict[str, str] = {}
        self.modules: dict[str, str] = {}
        self.specs: dict[str, importlib.machinery.ModuleSpec | None] = {}

    def new_name(self, name: str) -> str | None:
        if name in self.modules:
            return self.modules[name]
        for old, new in self.packages.items():
            if name.startswith(old + "."):
                return new + name[len(old) :]
        return None

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(name, self) if self.new_name(name) is not None else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = self.new_name(spec.name)
        assert new is not None
        if spec.name in self.modules:
            _warn(f"the module '{spec.name}' is '{new}' since", new, stacklevel=4)
        module = importlib.import_module(new)
        self.specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # the module ran under its new name; importing it under the old one set the old name's spec
        module.__spec__ = self.specs.pop(getattr(module.__spec__, "name", ""), module.__spec__)


def _finder() -> _Finder:
    for finder in sys.meta_path:
        if isinstance(finder, _Finder):
            return finder
    finder = _Finder()
    # before the path finders: the old package's name is the new package, whose path would load a second copy
    sys.meta_path.insert(0, finder)
    return finder


def moved(old: str, new: str) -> ModuleType:
    """Warn that the package ``old`` moved to ``new`` and make ``old`` and
    its submodules names of the new modules; returns the new package."""
    _warn(f"the package '{old}' moved to '{new}' in", new, stacklevel=4)
    _finder().packages[old] = new
    package = importlib.import_module(new)
    sys.modules[old] = package
    return package


def renamed(old: str, new: str) -> None:
    """Let ``import old`` give the module ``new``, with a warning."""
    _finder().modules[old] = new


def old_names(module: str, names: Mapping[str, str], namespace: Mapping[str, Any]) -> Callable[[str], Any]:
    """A module's ``__getattr__`` that hands out ``namespace[new]`` for each
    old name of ``names`` (old -> new), with a warning.

    >>> import warnings
    >>> getattr_ = old_names("m", {"Group": "QueryGroup"}, {"QueryGroup": int})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     getattr_("Group")
    <class 'int'>
    >>> str(caught[0].message).splitlines()[0]
    'm.Group is m.QueryGroup since sharp-cer 0.2.0, and the old name goes in 0.3'
    """

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new = names[name]
        _warn(f"{module}.{name} is {module}.{new} since", f"{module}.{new}", stacklevel=4)
        return namespace[new]

    return __getattr__
