"""A workload folder read again re-reads only the files that changed
(issue 33 item 11: loading many tenants' queries; an update re-checks only
the tenants whose files changed), and a file a workload names counts."""

from __future__ import annotations

from pathlib import Path

import pytest

from sharp_cer.errors import LanguageError
from sharp_cer.language import workload_source
from sharp_cer.language.workload_source import WorkloadSource

HEAD = '[workload]\nname = "w"\nschema = "CREATE STREAM S { EVENT A { x:int }, EVENT B { x:int } }"\n'


def _tenant(folder: Path, name: str, text: str) -> None:
    (folder / f"{name}.toml").write_text(f'{HEAD}[[query]]\nname = "{name}"\ntenant = "{name}"\ntext = "{text}"\n')


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files load_workload reads, in order."""
    seen: list[str] = []
    real = workload_source.load_workload

    def counting(path: str | Path) -> object:
        seen.append(Path(path).name)
        return real(path)

    monkeypatch.setattr(workload_source, "load_workload", counting)
    return seen


def test_only_the_changed_tenant_is_read_again_and_the_result_is_a_fresh_read_s(
    tmp_path: Path, reads: list[str]
) -> None:
    for name, text in [
        ("acme", "SELECT * WHERE A"),
        ("globex", "SELECT * WHERE A ; B"),
        ("initech", "SELECT * WHERE B"),
    ]:
        _tenant(tmp_path, name, text)
    source = WorkloadSource(tmp_path)
    source.load()
    assert reads == ["acme.toml", "globex.toml", "initech.toml"]
    _tenant(tmp_path, "globex", "SELECT * WHERE B ; A WITHIN 3 EVENTS")
    (tmp_path / "initech.toml").unlink()
    updated = source.load()
    assert reads[3:] == ["globex.toml"]
    fresh = WorkloadSource(tmp_path).load()
    assert updated.signature() == fresh.signature()
    assert [q.name for q in updated.queries] == ["acme", "globex"]
    assert "B ; A WITHIN 3 EVENTS" in updated.signature()["query globex"]


def test_a_changed_query_file_or_schema_file_is_read_again(tmp_path: Path, reads: list[str]) -> None:
    (tmp_path / "q.ceql").write_text("SELECT * WHERE A")
    (tmp_path / "s.core").write_text("CREATE STREAM S { EVENT A { x:int } }")
    (tmp_path / "acme.toml").write_text(
        '[workload]\nname = "w"\nschema_file = "s.core"\n[[query]]\nname = "a"\nfile = "q.ceql"\n'
    )
    source = WorkloadSource(tmp_path)
    assert source.load().queries[0].checked.query.within is None
    (tmp_path / "q.ceql").write_text("SELECT * WHERE A WITHIN 5 EVENTS")
    assert source.load().queries[0].checked.query.within is not None
    (tmp_path / "s.core").write_text("CREATE STREAM S { EVENT A { x:int, y:int } }")
    assert "y" in source.load().schema.event("A").attributes
    source.load()  # nothing changed this time
    assert reads == ["acme.toml"] * 3


def test_a_file_written_while_it_is_read_is_read_again_not_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor empties a file, then writes it: a poll in between reads the
    empty file. The file changed while it was read, so that read is not
    refused; the next poll takes the whole text. A bad file that stays as it
    is is refused at once, and once."""
    _tenant(tmp_path, "acme", "SELECT * WHERE A")
    source = WorkloadSource(tmp_path / "acme.toml")
    assert [q.name for q in source.poll().queries] == ["acme"]  # type: ignore[union-attr]
    (tmp_path / "acme.toml").write_text("")  # the editor's first step
    real = workload_source.load_workload

    def finishing_the_write(path: str | Path) -> object:
        try:
            return real(path)  # the empty file: an error
        finally:
            _tenant(tmp_path, "acme", "SELECT * WHERE A ; B")  # the editor's second step, meanwhile

    monkeypatch.setattr(workload_source, "load_workload", finishing_the_write)
    assert source.poll() is None  # not refused
    monkeypatch.setattr(workload_source, "load_workload", real)
    assert [q.checked.source.text for q in source.poll().queries] == ["SELECT * WHERE A ; B"]  # type: ignore[union-attr]
    (tmp_path / "acme.toml").write_text(HEAD + '[[query]]\nname = "acme"\ntext = "SELECT * WHERE"\n')
    with pytest.raises(LanguageError, match="query ends too early"):
        source.poll()
    assert source.poll() is None
