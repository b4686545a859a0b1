"""The methods ``dataclasses`` generates, compiled once per user rather than
once per ``sharp-cer`` process.

Python 3.11 writes each generated method (``__init__``, ``__repr__``,
``__eq__``, ``__hash__``, a frozen class's ``__setattr__`` and
``__delattr__``) as source text and ``exec``'s it: a ``match`` defines ~100
dataclasses, ~560 texts, and parsing and compiling them is about a quarter
of a small match's instructions. The texts are the same in every process,
so :class:`CodeCache` keeps their compiled code (``marshal``) in the user's
private cache folder (:mod:`sharp_cer._user_cache`) and ``exec``'s that.

The code is what ``exec`` would compile from the same text: compiled as
``<string>`` with no inherited ``__future__`` flags (``dataclasses`` has
none), under the same Python (the file's name holds ``sys.version`` and the
optimization level). So every class, method and error is as before.

Only the command line's own process uses it (``entry.main``, while the
command runs): ``dataclasses`` looks ``exec`` up in its module's globals,
and :func:`generated_code` puts the cache's there and takes it away after.
A program that imports sharp-cer is not touched.

>>> import dataclasses, tempfile
>>> path = tempfile.mkdtemp() + "/code.marshal"
>>> with generated_code(path) as cache:
...     @dataclasses.dataclass(frozen=True)
...     class Point:
...         x: int
...         y: int = 0
>>> Point(1), Point(1) == Point(1, 0), cache.compiled > 0
(Point(x=1, y=0), True, True)
>>> with generated_code(path) as again:  # the next process: nothing compiled
...     @dataclasses.dataclass(frozen=True)
...     class Point:
...         x: int
...         y: int = 0
>>> again.compiled, hasattr(dataclasses, "exec")
(0, False)
"""

from __future__ import annotations

import builtins
import dataclasses
import hashlib
import marshal
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType
from typing import Any

from .._user_cache import private_folder

#: the file's layout; a new one gets a new file
_FORMAT = "1"
#: texts kept at most: past it, a save keeps only the texts its process used (an upgraded
#: sharp-cer's new texts do not pile up on the old ones)
MAX_TEXTS = 4096


def cache_path(base: str | None = None) -> str | None:
    """The cache file for this Python, in the user's private cache folder
    (under ``base``, by default the user's cache home), or None."""
    folder = private_folder(base)
    if folder is None:
        return None
    tag = "\0".join([_FORMAT, sys.version, str(sys.flags.optimize)])
    return os.path.join(folder, f"dataclass-code-{hashlib.sha256(tag.encode()).hexdigest()[:20]}.marshal")


class CodeCache:
    """Compiled code by source text, read from ``path`` and written back
    with what was compiled since (:meth:`save`)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.codes: dict[str, CodeType] = {}
        #: texts compiled by this process (not found in the file)
        self.compiled = 0
        self._used: set[str] = set()
        try:
            with open(path, "rb") as file:
                codes = marshal.loads(file.read())  # marshal.load reads a file a few bytes at a time
        except (OSError, EOFError, ValueError, TypeError):
            return  # no file yet, or a broken one: it is written anew
        if isinstance(codes, dict):
            self.codes = codes

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /, **options: Any) -> None:
        """``exec``, with a text's code from the cache (compiled as ``exec``
        compiles it from ``dataclasses``, on a miss)."""
        if source.__class__ is str and not options:
            code = self.codes.get(source)
            if code is None:
                code = self.codes[source] = compile(source, "<string>", "exec", dont_inherit=True)
                self.compiled += 1
            self._used.add(source)
            source = code
        builtins.exec(source, globals, locals, **options)

    def save(self) -> None:
        """Write the file again if this process compiled anything (atomically;
        a folder that refuses the write leaves the old file)."""
        if not self.compiled:
            return
        folder = os.path.dirname(self.path)
        if len(self.codes) > MAX_TEXTS:
            self.codes = {text: code for text, code in self.codes.items() if text in self._used}
        try:
            handle, partial = tempfile.mkstemp(dir=folder, prefix=".dataclass-code-")
            with os.fdopen(handle, "wb") as file:
                marshal.dump(self.codes, file)
            os.replace(partial, self.path)
        except OSError:
            return


@contextmanager
def generated_code(path: str | None) -> Iterator[CodeCache | None]:
    """While inside, the dataclasses defined take their methods' code from
    the cache at ``path`` (None: no cache, nothing changes); saved after."""
    if path is None or "exec" in vars(dataclasses):  # no cache, or one is in use
        yield None
        return
    cache = CodeCache(path)
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    try:
        yield cache
    finally:
        del dataclasses.exec  # type: ignore[attr-defined]
        cache.save()
