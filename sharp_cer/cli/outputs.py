"""The files and folders a command writes: each one writable, never one of
its inputs, and never left half written. One checker for every command,
each problem with one message (a located line, what was expected, a hint),
checked before anything is opened and, for the Spark commands, before
Spark starts.

- ``file_problem`` / ``folder_problem``: a file flag names a file (not a
  folder) in a folder that exists and can be written; a folder flag names a
  folder (not a file) that can be made and written (probed with a temporary
  file: root passes ``os.access`` even on ``/proc``).
- ``output_problem`` (``check_outputs`` raises it): an output that is the
  same file as an input, or as another output, compared by resolved path
  and by device and inode where both exist (a hard link, a symlink, ``./x``
  and ``x``). ``overlap_problem``: an output folder that is, or sits inside,
  an input folder.
- ``atomic_output`` writes to a temporary file in the target's folder,
  renamed onto the target only once the writing is done, so a run that
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
>>> folder_problem(events, "--out").splitlines()[0]  # doctest: +ELLIPSIS
'.../ev.csv: error: --out names a file, not a folder'
>>> folder_problem(os.path.join(folder, "new"), "--out") is None
True
>>> overlap_problem(folder, "--out", {"--source": folder}).splitlines()[0]  # doctest: +ELLIPSIS
'...: error: --out is the --source folder'
>>> write_atomic(os.path.join(folder, "stats.json"), "{}")
>>> open(os.path.join(folder, "stats.json")).read(), sorted(os.listdir(folder))
('{}', ['ev.csv', 'stats.json'])
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from ..errors import SurfaceError

# ------------------------------------------------------------ writable: a file, a folder


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


def _existing_ancestor(p: Path) -> Path:
    p = Path(os.path.abspath(p))
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _resolved(path: str) -> Path:
    return Path(path).expanduser().resolve()


# ------------------------------------------------------------ apart from the inputs, written whole


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


def output_problem(inputs: Iterable[str | None], outputs: Iterable[tuple[str, str | None]]) -> str | None:
    """The message for an output (flag, path) that is one of the ``inputs``
    or the same file as another output, or None; None and empty paths are
    left out, and so are outputs that are not regular files (``/dev/null``,
    a pipe)."""
    given = [(path, _identity(path)) for path in inputs if path]
    seen: list[tuple[str, str, tuple[str, tuple[int, int] | None]]] = []
    for flag, path in outputs:
        if not path or (os.path.exists(path) and not os.path.isfile(path)):
            continue
        mine = _identity(path)
        for source, theirs in given:
            if _same(mine, theirs):
                return (
                    f"{path}: error: {flag} is the input {source}\n"
                    "  expected: an output that is not one of the inputs (it would be overwritten before it is read)\n"
                    "  found: the same file\n  hint: write to another file"
                )
        for other_flag, other, theirs in seen:
            if _same(mine, theirs):
                return (
                    f"{path}: error: {flag} and {other_flag} are the same file ({other})\n"
                    "  expected: a file of its own for each output\n  hint: give each output another path"
                )
        seen.append((flag, path, mine))
    return None


def check_outputs(inputs: Iterable[str | None], outputs: Iterable[tuple[str, str | None]]) -> None:
    """Raise ``output_problem``'s message as a SurfaceError, if there is one."""
    problem = output_problem(inputs, outputs)
    if problem is not None:
        raise SurfaceError(problem)


def same_path(a: str, b: str) -> bool:
    """Whether two paths name one file or folder: one resolved path, or one
    device and inode where both exist.

    >>> same_path("x/../y", "y"), same_path("y", "z")
    (True, False)
    """
    return _same(_identity(a), _identity(b))


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
