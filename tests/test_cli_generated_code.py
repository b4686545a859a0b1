"""The command line's cache of the code dataclasses generate
(``sharp_cer.cli.generated_code``): classes made through it behave as
classes made without it, a second process compiles nothing, a broken file is
ignored, and a ``sharp-cer match`` writes the same matches with the cache
cold, warm, or out of reach."""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sharp_cer.cli.generated_code import CodeCache, cache_path, generated_code
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.reference import evaluate


def _make_classes() -> tuple[type, type]:
    """Two dataclasses with every generated method: defaults, a factory,
    keyword-only fields, ordering, a frozen slotted one."""

    @dataclasses.dataclass(order=True)
    class Plain:
        a: int
        b: list[int] = dataclasses.field(default_factory=list)
        c: str = dataclasses.field(default="c", kw_only=True)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Frozen:
        x: int
        y: tuple[int, ...] = ()

    return Plain, Frozen


def _behaviour(classes: tuple[type, type]) -> list[object]:
    """What the classes do, as plain values to compare."""
    plain, frozen = classes
    p, q = plain(1, [2], c="z"), plain(1)
    f = frozen(3, (4,))
    try:
        f.x = 5  # type: ignore[misc]
        refused = ""
    except dataclasses.FrozenInstanceError as exc:
        refused = str(exc)
    try:
        plain()
        missing = ""
    except TypeError as exc:
        missing = str(exc)
    return [
        repr(p),
        repr(f),
        p == plain(1, [2], c="z"),
        p < q,
        q < p,
        hash(f) == hash((3, (4,))),
        f == frozen(3, (4,)),
        refused,
        missing,
        str(inspect.signature(plain)),
        str(inspect.signature(frozen)),
        [fd.name for fd in dataclasses.fields(plain)],
        repr(dataclasses.replace(f, x=9)),
        plain.__init__.__annotations__ == {"a": int, "b": list[int], "c": str, "return": None},
    ]


def test_classes_made_through_the_cache_behave_as_without_it(tmp_path: Path) -> None:
    expected = _behaviour(_make_classes())
    path = str(tmp_path / "code.marshal")
    with generated_code(path) as cold:
        made_cold = _make_classes()
    assert cold is not None and cold.compiled > 0
    with generated_code(path) as warm:
        made_warm = _make_classes()
    assert warm is not None and warm.compiled == 0, "the second process finds every text in the file"
    assert _behaviour(made_cold) == expected
    assert _behaviour(made_warm) == expected
    assert not hasattr(dataclasses, "exec"), "dataclasses is left as it was"


def test_the_cached_code_is_the_code_exec_compiles(tmp_path: Path) -> None:
    text = "def __create_fn__(x):\n def f(self, y: x) -> None:\n  return y\n return f"
    cache = CodeCache(str(tmp_path / "none.marshal"))
    namespace: dict[str, object] = {}
    cache.exec(text, {}, namespace)
    assert cache.codes[text] == compile(text, "<string>", "exec", dont_inherit=True)
    f = namespace["__create_fn__"](int)  # type: ignore[operator]
    assert f.__annotations__ == {"y": int, "return": None}, "no __future__ annotations leak in"


def test_a_broken_file_is_ignored_and_written_anew(tmp_path: Path) -> None:
    path = tmp_path / "code.marshal"
    path.write_bytes(b"\x00not marshal")
    with generated_code(str(path)) as cache:
        made = _make_classes()
    assert cache is not None and cache.compiled > 0
    assert _behaviour(made) == _behaviour(_make_classes())
    assert CodeCache(str(path)).codes, "the file was replaced by a readable one"


def test_no_cache_folder_means_no_cache(tmp_path: Path) -> None:
    (tmp_path / "sharp-cer").write_text("a file where the folder would be")
    assert cache_path(str(tmp_path)) is None
    with generated_code(None) as cache:
        assert cache is None and not hasattr(dataclasses, "exec")


def test_a_full_file_keeps_only_the_texts_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sharp_cer.cli.generated_code.MAX_TEXTS", 3)
    path = str(tmp_path / "code.marshal")
    with generated_code(path):
        _make_classes()
    cache = CodeCache(path)
    cache.exec("x = 1", {}, {})
    cache.save()
    assert list(CodeCache(path).codes) == ["x = 1"]


@pytest.mark.parametrize("cache_home", ["fresh", "unusable"])
def test_match_writes_the_same_matches_with_the_cache_cold_warm_or_out_of_reach(
    tmp_path: Path, cache_home: str
) -> None:
    (tmp_path / "s.ceql").write_text("CREATE STREAM S { EVENT A { k:int }, EVENT B { k:int } }\n")
    (tmp_path / "q.ceql").write_text("SELECT * WHERE A ; B PARTITION BY [k] WITHIN 4 EVENTS\n")
    (tmp_path / "e.csv").write_text("A,1\nB,1\nA,2\nB,2\nB,1\n")
    home = tmp_path / "cache"
    home.mkdir()
    if cache_home == "unusable":
        (home / "sharp-cer").write_text("a file where the folder would be")
    env = {**os.environ, "XDG_CACHE_HOME": str(home)}
    command = [sys.executable, "-c", "import sys; from sharp_cer.cli import main; sys.exit(main())"]
    command += ["match", "--schema", "s.ceql", "--query", "q.ceql", "--events", "e.csv"]
    runs = [subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, check=True) for _ in "ab"]
    schema = Schema.parse((tmp_path / "s.ceql").read_text())
    query = parse_and_check((tmp_path / "q.ceql").read_text(), schema)
    expected = evaluate([("q", query)], load_csv((tmp_path / "e.csv").read_text(), schema)[0]).matches
    found = [sorted((m["start"], m["end"]) for m in map(json.loads, run.stdout.splitlines())) for run in runs]
    assert found[0] == found[1] == sorted((m.start, m.end) for m in expected) != []
    assert runs[0].stderr == runs[1].stderr
    files = list((home / "sharp-cer").glob("dataclass-code-*")) if cache_home == "fresh" else []
    assert len(files) == (1 if cache_home == "fresh" else 0)
