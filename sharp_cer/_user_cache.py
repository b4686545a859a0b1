"""The user's private cache folder, for files sharp-cer keeps between
processes (lark's analysed grammar, the code dataclasses generate).

Such files are loaded as code or pickles: whoever can write one runs code
in every later process. So the folder is the user's own
(``$XDG_CACHE_HOME/sharp-cer``, else ``~/.cache/sharp-cer``), made private,
never the package's (which may be read-only) nor the shared temporary
folder. Without such a folder (no home, a file in the way, a folder others
may write to) there is none, and each process does the work again.

>>> import os, tempfile
>>> home = tempfile.mkdtemp()
>>> private_folder(home) == os.path.join(home, "sharp-cer")
True
>>> os.chmod(private_folder(home), 0o777)
>>> private_folder(home) is None
True
"""

from __future__ import annotations

import os
import stat


def private_folder(base: str | None = None) -> str | None:
    """The ``sharp-cer`` folder under ``base`` (by default the user's cache
    home), made if missing, or None when it is not the user's alone."""
    base = base or os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "sharp-cer")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        info = os.stat(folder)
    except OSError:
        return None
    # a folder someone else owns or may write to could hold a planted file
    owner = os.getuid() if hasattr(os, "getuid") else info.st_uid
    if info.st_uid != owner or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    return folder
