"""The Spark pipeline: batch detection over DataFrames and files
(``detect``, ``run_detection``), streaming detection (``detect_stream``), one engine per partition key on the
workers, and the session it runs on (``spark_session``). Importing this
package does not import PySpark; calling into it does.

Modules renamed in 0.2.0 (``stream_group``: ``stream_key_group``) import
under their old names until 0.3, with a ``DeprecationWarning``."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

__all__ = ["Detection", "detect", "detect_stream", "join_events", "match_recognize", "run_detection", "spark_session"]


def __getattr__(name: str) -> Any:
    if name in ("Detection", "detect", "join_events", "run_detection"):
        from . import pipeline as module

        return getattr(module, name)
    if name == "match_recognize":
        from .recognize import match_recognize

        return match_recognize
    if name == "detect_stream":
        from .stream import detect_stream

        return detect_stream
    if name == "spark_session":
        from .session import spark_session

        return spark_session
    raise AttributeError(name)


#: old module name -> new (whole dotted names)
_RENAMED = {f"{__name__}.stream_group": f"{__name__}.stream_key_group"}


class _RenamedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds a renamed module under its old name: warns, and hands out the
    new module itself (so a class imported through either name is one class)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(name, self) if name in _RENAMED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        new = _RENAMED[spec.name]
        warnings.warn(
            f"the module '{spec.name}' is '{new}' since sharp-cer 0.2.0, and the old name goes in 0.3\n"
            f"  hint: import {new} instead",
            DeprecationWarning,
            stacklevel=2,
        )
        module = importlib.import_module(new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec  # importing under the old name set the old name's spec


if not any(isinstance(f, _RenamedFinder) for f in sys.meta_path):
    sys.meta_path.append(_RenamedFinder())
