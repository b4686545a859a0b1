"""The optional dependencies, by the extra that installs them: the
in-process engine needs neither, a Spark command needs PySpark
(``sharp-cer[spark]``), a picture needs matplotlib or pydot
(``sharp-cer[plot]``). ``require`` turns a missing one into one line that
says what is missing and how to install it, instead of a traceback.

>>> require("math", "a doctest").pi > 3
True
>>> _EXTRAS["pyspark"]
('PySpark', 'spark')
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from types import ModuleType

from .errors import MissingExtraError

#: an optional top-level module -> (its name for people, the extra that installs it)
_EXTRAS = {
    "pyspark": ("PySpark", "spark"),
    "matplotlib": ("matplotlib", "plot"),
    "pydot": ("pydot", "plot"),
}


def missing(modules: Sequence[str], needed_by: str) -> MissingExtraError:
    """The error for ``modules`` (keys of ``_EXTRAS``) not installed, one line.

    >>> print(missing(["pyspark"], "sharp-cer stream"))
    error: sharp-cer stream needs PySpark, which is not installed; fix: pip install 'sharp-cer[spark]'
    >>> print(missing(["pyspark", "matplotlib"], "sharp-cer run"))
    error: sharp-cer run needs PySpark and matplotlib, which are not installed; fix: pip install 'sharp-cer[spark,plot]'
    """
    names = [_EXTRAS[m][0] for m in modules]
    extras = ",".join(dict.fromkeys(_EXTRAS[m][1] for m in modules))
    which = "which is" if len(names) == 1 else "which are"
    return MissingExtraError(
        f"error: {needed_by} needs {' and '.join(names)}, {which} not installed; fix: pip install 'sharp-cer[{extras}]'"
    )


def require(module: str, needed_by: str) -> ModuleType:
    """Import ``module`` (or a submodule of an optional one, such as
    ``matplotlib.pyplot``); raise ``MissingExtraError`` when its
    distribution is not installed. A broken installation (the module is
    there, one of its own imports fails) keeps its own traceback."""
    root = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if root not in _EXTRAS or exc.name is None or exc.name.partition(".")[0] != root:
            raise
        raise missing([root], needed_by) from exc


def check(modules: Sequence[str], needed_by: str) -> None:
    """Raise ``MissingExtraError`` naming every one of ``modules`` (keys of
    ``_EXTRAS``) that cannot be imported, without importing any: a command
    says what it misses before it starts its work, and a package that
    imports PySpark only when called stays cheap to import.

    >>> check(["pyspark", "matplotlib"], "a doctest")  # the dev extra installs both
    """
    absent = [m for m in modules if not _installed(m)]
    if absent:
        raise missing(absent, needed_by)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a finder refused it
        return False
