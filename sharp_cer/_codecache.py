"""The code ``dataclasses`` writes for sharp-cer's classes, compiled once and
kept between processes.

``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__`` and ``__delattr__`` as Python source and
compiles it with ``exec`` as the class is made: about a hundred classes load
with ``sharp-cer match``, some 560 compilations, a fifth of a small match's
CPU (the rest of its start-up reads precompiled bytecode). The text depends
only on the class's fields and options, so the same text always compiles to
the same code: :func:`install` has ``dataclasses`` look the compiled code up
by its text first, for the classes of sharp-cer's own modules only (any
other module's classes compile as before), and what was compiled is written
back at exit. The classes made are those ``exec`` of the same text makes.

The file lies where the grammar's analysis lies (``cache_folder``: the
user's private cache folder, never the package) and is named by the Python
version (code objects are specific to it). A file that cannot be read or
holds anything but a dict of texts to code objects is ignored; without a
private folder (no home, a read-only one, one others may write to) nothing
is kept and each process compiles, as without this module.

>>> import dataclasses
>>> text = "def __create_fn__():\\n def f(x):\\n  return x + 1\\n return f"
>>> ns = {}
>>> _exec(text, {"__name__": "sharp_cer.demo"}, ns)
>>> ns["__create_fn__"]()(1), text in _CODE
(2, True)
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import dataclasses
import marshal
import os
import stat
import sys
import tempfile
from types import CodeType
from typing import Any

#: compiled code by source text: loaded from the file, then what this process compiles
_CODE: dict[str, CodeType] = {}
#: texts this process used (it writes them back) and whether any was compiled here
_USED: set[str] = set()
_STATE: dict[str, Any] = {"missed": False, "path": None, "installed": False}
#: a file that grew past this many texts keeps only those of the process that writes it
_MOST = 4096


def cache_folder(base: str | None = None) -> str | None:
    """sharp-cer's folder in the user's cache home (``$XDG_CACHE_HOME``,
    else ``~/.cache``; under ``base`` if given), made private; None if
    there is none to be had or it is not private (someone else owns it or
    may write to it: a file planted there would run in every process)."""
    base = base or os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "sharp-cer")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.stat(folder)
    except OSError:
        return None
    owner = os.getuid() if hasattr(os, "getuid") else info.st_uid
    if info.st_uid != owner or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    return folder


def _file(folder: str) -> str:
    tag = sys.implementation.cache_tag or "python"
    return os.path.join(folder, f"dataclass-code-{tag}-{sys.hexversion:x}.marshal")


def _exec(source: Any, globals: Any = None, locals: Any = None) -> None:
    """``exec`` as ``dataclasses`` calls it, from compiled code for the
    classes of sharp-cer's modules."""
    if not isinstance(source, str) or not str((globals or {}).get("__name__", "")).startswith("sharp_cer"):
        builtins.exec(source, globals, locals)
        return
    code = _CODE.get(source)
    if code is None:
        code = _CODE[source] = compile(source, "<string>", "exec")
        _STATE["missed"] = True
    _USED.add(source)
    builtins.exec(code, globals, locals)


def compiled(source: str) -> CodeType:
    """The code of ``source`` (a module-level text), from the cache: for
    sharp-cer's own generated functions outside ``dataclasses``."""
    code = _CODE.get(source)
    if code is None:
        code = _CODE[source] = compile(source, "<string>", "exec")
        _STATE["missed"] = True
    _USED.add(source)
    return code


def _load(path: str) -> None:
    try:
        with open(path, "rb") as f:
            found = marshal.load(f)
    except (OSError, EOFError, ValueError, TypeError):
        return  # none yet, unreadable, or written by another Python: compile as without it
    if isinstance(found, dict) and all(isinstance(k, str) and isinstance(v, CodeType) for k, v in found.items()):
        _CODE.update(found)


def _save() -> None:
    """Write the cache back if this process compiled anything (at exit)."""
    path = _STATE["path"]
    if not _STATE["missed"] or not isinstance(path, str):
        return
    keep = _CODE if len(_CODE) <= _MOST else {k: _CODE[k] for k in _USED}
    aside = None
    try:
        fd, aside = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".dataclass-code-")
        with os.fdopen(fd, "wb") as f:
            marshal.dump(keep, f)
        os.replace(aside, path)  # whole or not at all, whatever other processes do meanwhile
    except OSError:  # a folder made read-only since: nothing is kept
        if aside is not None:
            with contextlib.suppress(OSError):
                os.unlink(aside)
    _STATE["missed"] = False


def install(base: str | None = None) -> bool:
    """Have ``dataclasses`` compile sharp-cer's classes through the cache
    (once per process); whether a private folder keeps it between processes."""
    if not _STATE["installed"]:
        _STATE["installed"] = True
        dataclasses.exec = _exec  # type: ignore[attr-defined]  # a module global shadows the builtin for dataclasses alone
        folder = cache_folder(base)
        if folder is not None:
            _STATE["path"] = _file(folder)
            _load(_file(folder))
            atexit.register(_save)
    return _STATE["path"] is not None
