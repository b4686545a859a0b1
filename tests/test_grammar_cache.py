"""Where the analysed CEQL grammar is kept between processes
(``sharp_cer.language.grammar_cache``): in the user's private cache folder,
one file per grammar and versions, never in the package, and nowhere when no
private folder can be had; parsing is the same either way."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import lark
import pytest

import sharp_cer.language.parser as parser
from sharp_cer.language import parse_query

QUERY = "SELECT * WHERE A ; B+ ; C FILTER A[x > 1] WITHIN 5 EVENTS"


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    parser._lark.cache_clear()
    yield tmp_path
    parser._lark.cache_clear()  # the next test builds its parser as usual


def _fresh_parse() -> object:
    parser._lark.cache_clear()
    return parse_query(QUERY)


def test_the_grammar_is_kept_in_a_private_folder_and_loaded_from_it(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = Path(parser.__file__).parent
    before = sorted(p.name for p in package.iterdir())
    expected = _fresh_parse()
    folder = cache_home / "sharp-cer"
    (kept,) = folder.iterdir()
    assert kept.name.startswith("ceql-") and stat.S_IMODE(folder.stat().st_mode) == 0o700
    loads: list[object] = []
    real_load = lark.Lark._load
    monkeypatch.setattr(lark.Lark, "_load", lambda self, *a, **k: loads.append(a) or real_load(self, *a, **k))
    assert _fresh_parse() == expected and len(loads) == 1  # the second parser came from the file
    assert sorted(p.name for p in package.iterdir()) == before  # nothing written into the package


def test_a_changed_grammar_gets_its_own_file(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _fresh_parse()
    (first,) = (cache_home / "sharp-cer").iterdir()
    grammar = parser._grammar()
    monkeypatch.setattr(parser, "_grammar", lambda: grammar + "\n// changed\n")
    assert _fresh_parse() == expected
    files = sorted((cache_home / "sharp-cer").iterdir())
    assert len(files) == 2 and first in files


@pytest.mark.parametrize("obstacle", ["others_may_write", "a_file_in_the_way"])
def test_without_a_private_folder_nothing_is_kept_and_parsing_works(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch, obstacle: str
) -> None:
    expected = _fresh_parse()  # with a cache, in cache_home
    home = cache_home / "shared"
    folder = home / "sharp-cer"
    if obstacle == "others_may_write":
        folder.mkdir(parents=True)
        os.chmod(folder, 0o777)  # anyone could plant a file lark would unpickle
    else:
        home.mkdir()
        folder.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    assert _fresh_parse() == expected
    assert folder.is_file() or list(folder.iterdir()) == []
