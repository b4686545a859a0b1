"""The cache of dataclasses' compiled methods (``sharp_cer._codecache``):
kept in the user's private cache folder, ignored when stale or unreadable,
never written where it is not private, and the classes it makes behave as
those ``exec`` of the same text makes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sharp_cer import _codecache

#: a process that makes sharp-cer's classes and prints what they do
PROBE = """
import sys
from sharp_cer import _codecache
from sharp_cer.language import parse_query
a = parse_query("SELECT * WHERE A ; B+ WITHIN 3 EVENTS")
b = parse_query("SELECT * WHERE A ; B+ WITHIN 3 EVENTS")
print(repr(a), a == b, hash(a.within) == hash(b.within), _codecache._STATE["missed"])
"""


def _run(cache_home: Path) -> tuple[str, str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    shown, _, missed = done.stdout.strip().rpartition(" ")
    return shown, missed


def _cache_files(cache_home: Path) -> list[Path]:
    return sorted((cache_home / "sharp-cer").glob("dataclass-code-*"))


def test_a_second_process_compiles_nothing_and_makes_the_same_classes(tmp_path: Path) -> None:
    first, missed = _run(tmp_path)
    assert missed == "True" and len(_cache_files(tmp_path)) == 1
    second, missed = _run(tmp_path)
    assert (second, missed) == (first, "False")
    assert first.endswith("True True")  # equal parses, equal hashes


def test_a_stale_or_broken_file_is_ignored_and_rewritten(tmp_path: Path) -> None:
    first, _ = _run(tmp_path)
    (path,) = _cache_files(tmp_path)
    for junk in (b"not marshal at all", __import__("marshal").dumps({"text": 1})):
        path.write_bytes(junk)
        shown, missed = _run(tmp_path)
        assert (shown, missed) == (first, "True")
        assert _run(tmp_path) == (first, "False")  # written back whole


def test_no_cache_where_the_folder_is_not_private(tmp_path: Path) -> None:
    folder = tmp_path / "sharp-cer"
    folder.mkdir()
    folder.chmod(0o777)  # others may write: a planted file would run in every process
    first, missed = _run(tmp_path)
    assert missed == "True" and not _cache_files(tmp_path)
    assert _run(tmp_path) == (first, "True")
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache home should be")
    assert _codecache.cache_folder(str(blocked)) is None


def test_other_modules_classes_compile_as_without_the_cache() -> None:
    text = "def __create_fn__():\n def f():\n  return 7\n return f"
    ns: dict[str, object] = {}
    _codecache._exec(text, {"__name__": "someone_else"}, ns)
    assert text not in _codecache._CODE
    assert ns["__create_fn__"]() is not None  # type: ignore[operator]
