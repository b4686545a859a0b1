"""The files a command writes: never one of its inputs, and never left half
written.

``check_outputs`` refuses, before anything is opened, an output that is
the same file as an input (or as another output): compared by resolved path,
and by device and inode where both exist (a hard link, a symlink, ``./x``
and ``x``). ``atomic_output`` writes to a temporary file in the target's
folder, renamed onto the target only once the writing is done, so a run that
fails leaves the target as it was; ``write_atomic`` does that for a text.

>>> import tempfile, os
>>> folder = tempfile.mkdtemp()
>>> events = os.path.join(folder, "ev.csv")
>>> _ = open(events, "w").write("A,1\\n")
>>> check_outputs([events], [("--out", os.path.join(folder, ".", "ev.csv"))])
Traceback (most recent call last):
...
sharp_cer.errors.SurfaceError: .../ev.csv: error: --out is the input .../ev.csv
  expected: an output that is not one of the inputs (it would be overwritten before it is read)
  found: the same file
  hint: write to another file
>>> write_atomic(os.path.join(folder, "stats.json"), "{}")
>>> open(os.path.join(folder, "stats.json")).read(), sorted(os.listdir(folder))
('{}', ['ev.csv', 'stats.json'])
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import SurfaceError


def _identity(path: str) -> tuple[str, tuple[int, int] | None]:
    """A path's resolved form, and its (device, inode) if it exists."""
    resolved = os.path.realpath(path)
    try:
        found = os.stat(path)
    except OSError:
        return resolved, None
    return resolved, (found.st_dev, found.st_ino)


def _same(a: tuple[str, tuple[int, int] | None], b: tuple[str, tuple[int, int] | None]) -> bool:
    return a[0] == b[0] or (a[1] is not None and a[1] == b[1])


def check_outputs(inputs: Iterable[str | None], outputs: Iterable[tuple[str, str | None]]) -> None:
    """Refuse an output (flag, path) that is one of the ``inputs`` or the
    same file as another output; None and empty paths are left out, and so
    are outputs that are not regular files (``/dev/null``, a pipe).
    Raises SurfaceError."""
    given = [(path, _identity(path)) for path in inputs if path]
    seen: list[tuple[str, str, tuple[str, tuple[int, int] | None]]] = []
    for flag, path in outputs:
        if not path or (os.path.exists(path) and not os.path.isfile(path)):
            continue
        mine = _identity(path)
        for source, theirs in given:
            if _same(mine, theirs):
                raise SurfaceError(
                    f"{path}: error: {flag} is the input {source}\n"
                    "  expected: an output that is not one of the inputs (it would be overwritten before it is read)\n"
                    "  found: the same file\n  hint: write to another file"
                )
        for other_flag, other, theirs in seen:
            if _same(mine, theirs):
                raise SurfaceError(
                    f"{path}: error: {flag} and {other_flag} are the same file ({other})\n"
                    "  expected: a file of its own for each output\n  hint: give each output another path"
                )
        seen.append((flag, path, mine))


@contextmanager
def atomic_output(path: str) -> Iterator[Path]:
    """A temporary path next to ``path`` (same folder, same suffix) to write
    to; renamed onto ``path`` when the block ends without an error, removed
    when it raises. A target that exists and is not a regular file (a
    device such as ``/dev/null``, a pipe) is written in place."""
    target = Path(path)
    if target.exists() and not target.is_file():
        yield target
        return
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=f".part{target.suffix}")
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    try:
        # the target's permissions if it exists, else a new file's (mkstemp's are 0600)
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask()
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str, text: str) -> None:
    """Write ``text`` to ``path`` through ``atomic_output``."""
    with atomic_output(path) as temporary:
        temporary.write_text(text)
