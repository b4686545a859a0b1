"""Where the analysed CEQL grammar is kept between processes
(``sharp_cer.language.grammar_cache``): in the user's private cache folder,
lark's analysis and the fused loop's plain table, one file each per grammar
and versions, never in the package, and nowhere when no private folder can
be had; parsing is the same either way. A process whose texts all parse
loads the table and never imports lark; a damaged table is made again."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
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
    parser._fused.cache_clear()
    yield tmp_path
    parser._lark.cache_clear()  # the next test builds its parser as usual
    parser._fused.cache_clear()


def _fresh_parse() -> object:
    parser._lark.cache_clear()
    parser._fused.cache_clear()
    return parse_query(QUERY)


def _kept(folder: Path) -> list[str]:
    return sorted(p.name.split("-")[1] if p.name.startswith("ceql-table") else "lark" for p in folder.iterdir())


def test_the_grammar_is_kept_in_a_private_folder_and_loaded_from_it(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = Path(parser.__file__).parent
    before = sorted(p.name for p in package.iterdir())
    expected = _fresh_parse()
    folder = cache_home / "sharp-cer"
    assert _kept(folder) == ["lark", "table"] and stat.S_IMODE(folder.stat().st_mode) == 0o700
    (table,) = folder.glob("ceql-table-*.json")
    assert stat.S_IMODE(table.stat().st_mode) == 0o600
    loads: list[object] = []
    real_load = lark.Lark._load
    monkeypatch.setattr(lark.Lark, "_load", lambda self, *a, **k: loads.append(a) or real_load(self, *a, **k))
    assert _fresh_parse() == expected and loads == []  # the table came from its file: no lark parser at all
    parser._lark.cache_clear()
    with pytest.raises(Exception, match="unexpected"):
        parse_query("SELECT * WHERE A ; ; B")  # lark explains the error, from its own file
    assert len(loads) == 1
    assert sorted(p.name for p in package.iterdir()) == before  # nothing written into the package


def test_a_changed_grammar_gets_its_own_files(cache_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _fresh_parse()
    first = sorted((cache_home / "sharp-cer").iterdir())
    grammar = parser._grammar()
    monkeypatch.setattr(parser, "_grammar", lambda: grammar + "\n// changed\n")
    assert _fresh_parse() == expected
    files = sorted((cache_home / "sharp-cer").iterdir())
    assert len(files) == 4 and set(first) < set(files)


@pytest.mark.parametrize("damage", ["truncated", "not_an_object", "wrong_format", "missing_rows"])
def test_a_damaged_table_is_made_again(cache_home: Path, damage: str) -> None:
    expected = _fresh_parse()
    (table,) = (cache_home / "sharp-cer").glob("ceql-table-*.json")
    text = table.read_text()
    table.write_text(
        {
            "truncated": text[: len(text) // 2],
            "not_an_object": "[1, 2]",
            "wrong_format": text.replace('"format":1', '"format":0'),
            "missing_rows": text.replace('"rows":', '"rovs":'),
        }[damage]
    )
    assert _fresh_parse() == expected
    assert table.read_text() == text  # written again, whole


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


def test_a_process_whose_texts_parse_imports_no_lark_once_the_table_is_kept(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from sharp_cer.language import parse_query, parse_stream_declarations\n"
        f"q = parse_query({QUERY!r})\n"
        "s = parse_stream_declarations('CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }')\n"
        "print(repr(q), len(s), 'lark' in sys.modules)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True) for _ in "12"]
    first, second = (r.stdout.split() for r in runs)
    assert first[-1] == "True" and second[-1] == "False"  # the first run made the table with lark
    assert first[:-1] == second[:-1] and second[-2] == "1"
    assert repr(parse_query(QUERY)) in runs[1].stdout
