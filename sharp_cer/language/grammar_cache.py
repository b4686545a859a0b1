"""Where the analysed CEQL grammar is kept between processes.

Two files, both in the user's private cache folder (``_user_cache``):

- lark's analysis (``cache_file``), which lark unpickles: built in ~0.08 s,
  loaded in ~0.005 s, but loading it means importing lark (~0.03 s). Only
  a text the fused loop refuses (an error to explain) needs it.
- the plain parse table the fused loop runs (``table_file``, JSON, see
  ``driver.plain_table``): loaded without lark, so a process whose texts
  all parse never imports lark.

lark's own default file (``cache=True``) lies in the shared temporary
folder, under a name anyone can compute from the grammar, and lark
unpickles it: whoever creates that file first on a shared machine runs code
in every later parse. So the files live in the user's own cache folder
(``$XDG_CACHE_HOME/sharp-cer``, else ``~/.cache/sharp-cer``), made private,
never in the package (which may be read-only). Their names hold a digest of
the grammar and of the lark (and, for lark's pickle, Python) versions, so a
changed grammar or an upgrade gets a new file (lark checks the digest it
stores inside too). Without such a folder (no home, a file in the way, a
folder others may write to) there is no cache: each process analyses the
grammar.

>>> import os, tempfile
>>> home = tempfile.mkdtemp()
>>> path = cache_file("start: NAME", "demo", home)
>>> os.path.dirname(path) == os.path.join(home, "sharp-cer"), path != cache_file("start: INT", "demo", home)
(True, True)
>>> table = table_file("start: NAME", home)
>>> save_table(table, {"format": 0, "rows": []}); load_table(table)
{'format': 0, 'rows': []}
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from typing import Any

from sharp_cer._user_cache import private_folder


def cache_file(grammar: str, name: str, base: str | None = None) -> str | bool:
    """The file for lark's ``cache`` option: a path in the user's private
    cache folder (under ``base``, by default the user's cache home), or
    False (no cache) when there is none to be had."""
    import lark

    folder = private_folder(base)
    if folder is None:
        return False
    digest = hashlib.sha256("\0".join([grammar, lark.__version__, sys.version]).encode()).hexdigest()[:20]
    return os.path.join(folder, f"{name}-{digest}.lark")


def _lark_stamp() -> str:
    """lark's version, read without importing lark: the digest of its
    package's ``__init__.py`` (which holds ``__version__``), or '' if not found."""
    from importlib.util import find_spec

    try:
        spec = find_spec("lark")
        origin = spec.origin if spec is not None else None
        if origin is None:
            return ""
        with open(origin, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except (OSError, ImportError, ValueError):
        return ""


def table_file(grammar: str, base: str | None = None) -> str | None:
    """The file of the fused loop's plain table for ``grammar`` in the
    user's private cache folder, or None when there is none to be had."""
    from .driver import TABLE_FORMAT

    folder = private_folder(base)
    stamp = _lark_stamp()
    if folder is None or not stamp:
        return None
    key = "\0".join([str(TABLE_FORMAT), grammar, stamp])
    return os.path.join(folder, f"ceql-table-{hashlib.sha256(key.encode()).hexdigest()[:20]}.json")


def load_table(path: str) -> dict[str, Any] | None:
    """The table kept in ``path``, or None (no file, or not one JSON object)."""
    try:
        with open(path, encoding="utf-8") as f:
            table = json.load(f)
    except (OSError, ValueError):
        return None
    return table if isinstance(table, dict) else None


def save_table(path: str, table: dict[str, Any]) -> None:
    """Keep ``table`` in ``path``, whole or not at all (written aside, then
    renamed: a process reading it meanwhile sees the old file or none);
    a folder that refuses it leaves each process to build the table."""
    partial = f"{path}.{os.getpid()}.partial"
    try:
        # the user's alone, as the folder: the loop runs the callbacks the file names
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as f:
            json.dump(table, f, separators=(",", ":"))
        os.replace(partial, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(partial)
