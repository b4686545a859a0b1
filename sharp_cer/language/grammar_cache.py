"""Where lark keeps an analysed grammar between processes.

Analysing ``ceql.lark`` costs each process ~0.08 s; loading the analysis
from a file ~0.005 s. lark's own default file (``cache=True``) lies in the
shared temporary folder, under a name anyone can compute from the grammar,
and lark unpickles it: whoever creates that file first on a shared machine
runs code in every later parse. So the file lives in the user's own cache
folder (``$XDG_CACHE_HOME/sharp-cer``, else ``~/.cache/sharp-cer``), made
private, never in the package (which may be read-only). Its name holds a
digest of the grammar and of the lark and Python versions, so a changed
grammar or an upgrade gets a new file (lark checks the digest it stores
inside too). Without such a folder (no home, a file in the way, a folder
others may write to) there is no cache: each process analyses the grammar.

>>> import os, tempfile
>>> home = tempfile.mkdtemp()
>>> path = cache_file("start: NAME", "demo", home)
>>> os.path.dirname(path) == os.path.join(home, "sharp-cer"), path != cache_file("start: INT", "demo", home)
(True, True)
"""

from __future__ import annotations

import hashlib
import os
import sys

import lark

from sharp_cer._user_cache import private_folder


def cache_file(grammar: str, name: str, base: str | None = None) -> str | bool:
    """The file for lark's ``cache`` option: a path in the user's private
    cache folder (under ``base``, by default the user's cache home), or
    False (no cache) when there is none to be had."""
    folder = private_folder(base)
    if folder is None:
        return False
    digest = hashlib.sha256("\0".join([grammar, lark.__version__, sys.version]).encode()).hexdigest()[:20]
    return os.path.join(folder, f"{name}-{digest}.lark")
