"""The driver JVM's class archive (``spark.class_archive``): which option a
JVM gets, and when a written archive is adopted. No JVM starts: the files
a JVM would write are made by hand."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sharp_cer.spark import class_archive

pytestmark = pytest.mark.spark  # reads pyspark's version and jars

OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: Any) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(class_archive.SWITCH, raising=False)
    return tmp_path / "sharp-cer"


def _gone_pid() -> int:
    """The id of a process that has exited."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_the_first_jvm_writes_the_archive_and_a_later_start_adopts_it(cache: Path) -> None:
    first = class_archive.archive_option(OPTIONS)
    assert first.startswith("-XX:ArchiveClassesAtExit=") and class_archive.QUIET in first
    part = Path(first.split()[0].split("=", 1)[1])
    assert part.parent == cache and part.name.endswith(".part")
    # while the JVM that writes it runs (here: this process), nobody else writes one nor reads it
    part.write_bytes(b"classes")
    Path(f"{part}.pid").write_text(str(os.getpid()))
    assert class_archive.archive_option(OPTIONS) == ""
    # once it has exited, the part is the archive
    Path(f"{part}.pid").write_text(str(_gone_pid()))
    used = class_archive.archive_option(OPTIONS)
    archive = cache / (class_archive.archive_name(OPTIONS) + ".jsa")
    assert used == f"-XX:SharedArchiveFile={archive} {class_archive.QUIET}"
    assert archive.read_bytes() == b"classes" and not part.exists() and not Path(f"{part}.pid").exists()
    # other JVM options are another archive
    assert class_archive.archive_option(OPTIONS + " -XX:+UseG1GC").startswith("-XX:ArchiveClassesAtExit=")


def test_an_empty_part_is_dropped_and_the_switch_turns_it_off(cache: Path, monkeypatch: Any) -> None:
    part = Path(class_archive.archive_option(OPTIONS).split()[0].split("=", 1)[1])
    part.write_bytes(b"")  # the JVM was killed before writing anything
    Path(f"{part}.pid").write_text(str(_gone_pid()))
    again = class_archive.archive_option(OPTIONS)
    assert again.startswith("-XX:ArchiveClassesAtExit=") and not part.exists()
    monkeypatch.setenv(class_archive.SWITCH, "0")
    assert class_archive.archive_option(OPTIONS) == ""


def test_the_marker_names_the_jvm_of_this_process(cache: Path) -> None:
    option = class_archive.archive_option(OPTIONS)

    class Jvm:  # what ``session.sparkContext._jvm`` answers
        class java:
            class lang:
                class ProcessHandle:
                    @staticmethod
                    def current() -> Any:
                        return type("Handle", (), {"pid": staticmethod(lambda: 4242)})()

    session = type("Session", (), {"sparkContext": type("Context", (), {"_jvm": Jvm})()})()
    class_archive.note_jvm(f"{OPTIONS} {option}", session)
    part = option.split()[0].split("=", 1)[1]
    assert Path(f"{part}.pid").read_text() == "4242"
    class_archive.note_jvm(OPTIONS, session)  # a JVM that writes none: no marker
    assert len(list(cache.glob("*.pid"))) == 1
