"""Checks of the folders and files the Spark commands write (``run``,
``stream``, ``demo``), made before Spark starts: a folder flag names a
folder (not a file) that can be made and written, a file flag names a file
(not a folder), and no output is, holds or sits inside an input.

Each check returns the one located line to print (with what was expected
and a hint), or None.

>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> (d / "f.csv").write_text("A,1,1\\n")
6
>>> folder_problem(str(d / "f.csv"), "--out").splitlines()[0]  # doctest: +ELLIPSIS
'.../f.csv: error: --out names a file, not a folder'
>>> folder_problem(str(d / "new"), "--out") is None
True
>>> overlap_problem(str(d), "--out", {"--source": str(d)}).splitlines()[0]  # doctest: +ELLIPSIS
'...: error: --out is the --source folder'
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path

from ..errors import SurfaceError


def folder_problem(path: str, flag: str) -> str | None:
    """What is wrong with ``path`` as the folder ``flag`` writes into,
    without making anything: empty, a file, under a file, or under a folder
    that cannot be written."""
    if not path:
        return f"error: {flag} is empty\n  expected: a folder to write into ({flag} DIR)"
    p = Path(path)
    if p.exists() and not p.is_dir():
        return (
            f"{path}: error: {flag} names a file, not a folder\n  expected: a folder to write into "
            f"({flag} DIR)\n  hint: give another folder; the file is left as it is"
        )
    above = _existing_ancestor(p)
    if not above.is_dir():
        return (
            f"{path}: error: {flag} is under a file ({above}), not a folder\n"
            f"  expected: a folder to write into ({flag} DIR)"
        )
    if not os.access(above, os.W_OK | os.X_OK):
        return f"{path}: error: {flag} cannot be written ({above} is not writable)\n  hint: give a folder you can write"
    return None


def file_problem(path: str, flag: str) -> str | None:
    """What is wrong with ``path`` as the file ``flag`` writes: empty, a
    folder, or in a folder that cannot be made or written."""
    if not path:
        return f"error: {flag} is empty\n  expected: a file to write ({flag} FILE)"
    p = Path(path)
    if p.is_dir():
        return f"{path}: error: {flag} names a folder, not a file\n  expected: a file to write ({flag} FILE)"
    parent = p.parent
    above = _existing_ancestor(parent)
    if not above.is_dir():
        return (
            f"{path}: error: {flag} is under a file ({above}), not a folder\n  expected: a file to write ({flag} FILE)"
        )
    if above != Path(os.path.abspath(parent)):
        return f"{path}: error: {flag}'s folder {parent} does not exist\n  hint: make it first, or give another file"
    try:  # the one sure test of a folder's writability (root passes os.access even on /proc)
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        return f"{path}: error: {flag} cannot be written: {exc.strerror or exc}\n  hint: give a file you can write"
    if p.exists() and not os.access(p, os.W_OK):
        return f"{path}: error: {flag} cannot be written (no permission)\n  hint: give a file you can write"
    return None


def overlap_problem(out: str, flag: str, inputs: Mapping[str, str], *, inside: bool = True) -> str | None:
    """An output folder that is an input (``inputs``: flag -> path) or, with
    ``inside``, sits inside one (a batch run reads a folder's sub-folders:
    the next run would read this one's output, and ``overwrite`` would
    remove input). A stream's file source does not look into sub-folders,
    so a stream passes ``inside=False``."""
    mine = _resolved(out)
    for name, path in inputs.items():
        theirs = _resolved(path)
        if mine == theirs:
            return f"{out}: error: {flag} is the {name} folder\n  expected: outputs apart from the inputs"
        if inside and theirs in mine.parents:
            return f"{out}: error: {flag} is inside {name} ({path})\n  expected: outputs apart from the inputs"
    return None


def same_path(a: str, b: str) -> bool:
    """Whether two paths name one file or folder (resolved; one inode if both exist).

    >>> same_path("x/../y", "y"), same_path("y", "z")
    (True, False)
    """
    if os.path.exists(a) and os.path.exists(b):
        return os.path.samefile(a, b)
    return _resolved(a) == _resolved(b)


def make_folder(path: str, flag: str) -> Path:
    """Make the folder ``flag`` names (and its parents) and check that a file
    can be written in it; ``SurfaceError`` with one located line otherwise
    (``/proc/x``, a read-only disk)."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=p):
            pass
    except OSError as exc:
        raise SurfaceError(
            f"{path}: error: {flag} cannot be written: {exc.strerror or exc}\n  hint: give a folder you can write"
        ) from None
    return p


def seconds_problem(value: float | None, flag: str, *, zero: bool) -> str | None:
    """A number of seconds that is not finite, or negative (or zero, unless ``zero``).

    >>> seconds_problem(float("nan"), "--trigger", zero=True)
    'error: --trigger must be a finite number of seconds >= 0, not nan'
    >>> seconds_problem(0.5, "--timeout", zero=False) is None
    True
    """
    if value is None:
        return None
    low = ">= 0" if zero else "> 0"
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        return f"error: {flag} must be a finite number of seconds {low}, not {value:g}"
    return None


def _existing_ancestor(p: Path) -> Path:
    p = Path(os.path.abspath(p))
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _resolved(path: str) -> Path:
    return Path(path).expanduser().resolve()
