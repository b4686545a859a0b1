"""Fuzzing the language's inputs: random and mutated queries, schemas and
workloads (seeded from the fixtures and ``configs/``) go through the checker.

Every outcome is a result or a :class:`SharpCerError` that points inside the
text it was given; never another exception. Whatever parses prints back to
text that parses to the same AST. Under ``CI=true`` the examples are
derandomized (see ``conftest.py``), so a CI run is repeatable.
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from pathlib import Path

import pytest
import strategies as cs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.errors import SharpCerError
from sharp_cer.language import Schema, parse_and_check, parse_workload
from sharp_cer.language.diagnostics import LanguageErrors, QueryError
from sharp_cer.language.parser import parse_query, parse_stream_declarations
from sharp_cer.language.printer import stream_declarations, to_ceql
from sharp_cer.language.source import Source, lines_of

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
CONFIGS = sorted((ROOT / "configs").glob("*.toml"))


def fuzz(examples: int) -> settings:
    """The settings of one fuzz test: ``examples`` cases per run, no deadline
    (a shared CI machine's pauses are not the parser's)."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


@cache
def query_seeds() -> list[tuple[str, Schema]]:
    """Every fixture query with the schema beside it, and every query of the
    example workloads with its workload's schema."""
    seeds = []
    for folder in [FIXTURES / "bad_queries", *sorted((FIXTURES / "core_experiments").iterdir())]:
        if (folder / "schema.core").exists():
            schema = Schema.parse((folder / "schema.core").read_text())
            seeds += [(q.read_text(), schema) for q in sorted(folder.glob("*.ceql"))]
    for config in CONFIGS:
        data = tomllib.loads(config.read_text())
        schema = Schema.parse(data["workload"]["schema"])
        seeds += [(q["text"], schema) for q in data["query"] if "text" in q]
    return seeds


@cache
def schema_seeds() -> list[str]:
    seeds = [p.read_text() for p in sorted(FIXTURES.rglob("*.core"))]
    return seeds + [tomllib.loads(c.read_text())["workload"]["schema"] for c in CONFIGS]


# What a mutation inserts: CEQL's and TOML's punctuation and keywords, the
# literals at the edges of what is allowed, quotes, and bytes people paste.
PIECES = [
    *"()[]{};:,.+-*/%<>=!'\"`#\n\t\\",
    "SELECT", "WHERE", "FILTER", "AS", "OR", "AND", "NOT", "ABSENT", "WITHIN", "EVENTS", "SECONDS", "PARTITON",
    "PARTITION BY", "CONSUME BY", "LIMIT", "IN", "LIKE", "RANGE", "ALL", "NEXT", "MAX", "EVENT", "CREATE STREAM",
    "9" * 30, "9223372036854775808", "1e309", "1e300", "-0", "0.0", "inf", "nan", "..", ":+", "/*", "--", "''",
    "'''", '"""', "= =", "[[query]]", "[workload]", "schema = 5", "text = [1]", "\x00", "\ufeff", "é", "\u202e",
    "(" * 200, "+" * 150, "float", "double", "primary_time",
]  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, text: str) -> str:
    """``text`` after one to four edits: a piece inserted, a slice deleted,
    duplicated or moved, characters swapped, or the text cut short."""
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        i = draw(st.integers(0, n))
        j = draw(st.integers(i, min(n, i + 40)))
        edit = draw(st.sampled_from(["insert", "delete", "duplicate", "move", "swap", "cut", "char"]))
        if edit == "insert":
            text = text[:i] + draw(st.sampled_from(PIECES)) + text[i:]
        elif edit == "delete":
            text = text[:i] + text[j:]
        elif edit == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        elif edit == "move":
            k = draw(st.integers(0, n - (j - i)))
            rest = text[:i] + text[j:]
            text = rest[:k] + text[i:j] + rest[k:]
        elif edit == "swap" and j - i >= 2:
            text = text[:i] + text[i + 1] + text[i] + text[i + 2 :]
        elif edit == "cut":
            text = text[:i]
        elif edit == "char":
            text = text[:i] + draw(st.characters()) + text[i:]
    return text


def _inside(err: QueryError, text: str) -> None:
    """A located error whose line and column fall within ``text``."""
    assert err.source is not None and err.span is not None, f"no position: {err}"
    lines = lines_of(text)
    assert 1 <= err.line <= len(lines) + 1, f"line {err.line} outside the text: {err}"  # type: ignore[operator]
    width = len(lines[err.line - 1]) if err.line <= len(lines) else 0  # type: ignore[operator]
    assert 1 <= err.column <= width + 2, f"column {err.column} outside line {err.line}: {err}"  # type: ignore[operator]
    assert "^" in str(err)


def _outcome(check: object, text: str) -> object | None:
    """The result of ``check()``, or None after checking the error it raised."""
    try:
        return check()  # type: ignore[operator]
    except LanguageErrors as many:
        for err in many.errors:
            _inside(err, text)
    except QueryError as err:
        _inside(err, text)
    except SharpCerError as err:  # pragma: no cover - a layer's error without a place is a bug here
        raise AssertionError(f"an error without a position: {err}") from err
    return None


@fuzz(1500)
@given(st.data())
def test_mutated_queries_check_or_fail_located(data: st.DataObject) -> None:
    seed, schema = data.draw(st.sampled_from(query_seeds()))
    text = data.draw(mutated(seed))
    checked = _outcome(lambda: parse_and_check(text, schema, source=Source(text, "q.ceql")), text)
    if checked is not None:
        query = checked.query  # type: ignore[attr-defined]
        assert parse_query(to_ceql(query)) == query


@fuzz(600)
@given(cs.queries(), st.data())
def test_random_queries_mutated_parse_or_fail_located(query: object, data: st.DataObject) -> None:
    text = data.draw(mutated(to_ceql(query)))  # type: ignore[arg-type]
    parsed = _outcome(lambda: parse_query(text), text)
    if parsed is not None:
        assert parse_query(to_ceql(parsed)) == parsed  # type: ignore[arg-type]


@fuzz(800)
@given(st.data())
def test_mutated_schemas_check_or_fail_located(data: st.DataObject) -> None:
    text = data.draw(mutated(data.draw(st.sampled_from(schema_seeds()))))
    schema = _outcome(lambda: Schema.parse(text, "s.core"), text)
    if schema is not None:
        declarations = schema.declarations  # type: ignore[attr-defined]
        assert parse_stream_declarations(stream_declarations(declarations)) == declarations


# A TOML value of every type, for the values a workload's keys are given.
TOML_VALUES = ["5", "-1", "1.5", "inf", "true", "false", "[1]", "[]", "{ a = 1 }", "1979-05-27", '""', '"x"']


@st.composite
def mutated_workloads(draw: st.DrawFn) -> str:
    """An example workload with a key's value replaced by a value of another
    type, a key renamed or dropped, or the text mutated like a query."""
    text = draw(st.sampled_from([c.read_text() for c in CONFIGS]))
    lines = text.split("\n")
    keyed = [i for i, line in enumerate(lines) if re.match(r"\s*\w+\s*=", line)]
    for _ in range(draw(st.integers(0, 2))):
        i = draw(st.sampled_from(keyed))
        key = lines[i].split("=", 1)[0].strip()
        edit = draw(st.sampled_from(["value", "rename", "quote", "drop"]))
        if edit == "value":
            lines[i] = f"{key} = {draw(st.sampled_from(TOML_VALUES))}" + ("\n'''" if lines[i].endswith("'''") else "")
        elif edit == "rename":
            lines[i] = lines[i].replace(key, key[:-1] or "x", 1)
        elif edit == "quote":
            lines[i] = lines[i].replace(key, f'"{key}"', 1)
        elif not lines[i].rstrip().endswith("'''"):  # dropping a multi-line opener would leave its body behind
            lines[i] = ""
    text = "\n".join(lines)
    return draw(mutated(text)) if draw(st.booleans()) else text


@fuzz(250)
@given(mutated_workloads())
def test_mutated_workloads_check_or_fail_located(text: str) -> None:
    workload = _outcome(lambda: parse_workload(text, "w.toml", base=ROOT / "configs"), text)
    if workload is not None:
        for q in workload.queries:  # type: ignore[attr-defined]
            assert parse_query(to_ceql(q.checked.query)) == q.checked.query


# ---------------------------------------------------------------- the Spark commands' flags

CLI_SCHEMA = "CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { x:int, t:primary_time } }"
CLI_WORKLOAD = (
    f'[workload]\nname = "w"\nschema = "{CLI_SCHEMA}"\n[[query]]\nname = "q"\ntext = "SELECT * WHERE A ; B"\n'
)


@pytest.fixture
def cli_inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workload, an events file, a folder of them and a plain file, in
    the current folder; Spark must not start (every case fails before)."""
    import sharp_cer.spark.session as session

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark started on bad flags")

    monkeypatch.setattr(session, "spark_session", refuse)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w.toml").write_text(CLI_WORKLOAD)
    (tmp_path / "e.csv").write_text("A,1,1\nB,2,2\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "e.csv").write_text("A,1,1\nB,2,2\n")
    (tmp_path / "a_file").write_text("keep me\n")
    return tmp_path


STREAM = ["stream", "w.toml", "--source", "src", "--checkpoint", "ck", "--out", "o"]
RUN = ["run", "w.toml", "--events", "e.csv", "--out", "o"]

#: (command line, a piece of the one error line); every flag of run, stream and demo out of range or at the wrong path
FLAG_CASES = [
    ([*STREAM, "--trigger", "-1"], "--trigger must be a finite number"),
    ([*STREAM, "--trigger", "nan"], "--trigger must be a finite number"),
    ([*STREAM, "--trigger", "inf"], "--trigger must be a finite number"),
    ([*STREAM, "--trigger", "x"], "--trigger"),
    ([*STREAM, "--trigger", "1", "--timeout", "-1"], "--timeout must be a finite number"),
    ([*STREAM, "--timeout", "nan"], "--timeout must be a finite number"),
    ([*STREAM, "--timeout", "0"], "--timeout must be a finite number"),
    ([*STREAM, "--max-files", "0"], "--max-files"),
    ([*STREAM, "--max-files", "-3"], "--max-files"),
    ([*STREAM, "--watermark-ms", "-1"], "--watermark-ms"),
    ([*STREAM, "--watermark-ms", "1"], "watermark delay 1 ms (--watermark-ms) is not above"),
    ([*STREAM[:4], "--checkpoint", "/proc/x", "--out", "o"], "/proc/x: error: --checkpoint cannot be written"),
    ([*STREAM[:6], "--out", "/proc/x"], "/proc/x: error: --out cannot be written"),
    ([*STREAM[:4], "--checkpoint", "a_file", "--out", "o"], "a_file: error: --checkpoint names a file"),
    ([*STREAM[:6], "--out", "a_file"], "a_file: error: --out names a file"),
    ([*STREAM[:6], "--out", "a_file/o"], "a_file/o: error: --out is under a file"),
    ([*STREAM[:6], "--out", "src"], "src: error: --out is the --source folder"),
    ([*STREAM[:4], "--checkpoint", "src", "--out", "o"], "src: error: --checkpoint is the --source folder"),
    ([*STREAM, "--dead-letters", "src/d.jsonl"], "src/d.jsonl: error: --dead-letters is in --source"),
    ([*STREAM, "--dead-letters", "src"], "src: error: --dead-letters names a folder"),
    ([*STREAM[:6], "--out", "ck"], "--out is the --checkpoint folder"),
    ([*STREAM[:6], "--out", ""], "--out is empty"),
    ([*STREAM[:2], "--source", "nowhere", *STREAM[4:]], "nowhere: error: no such folder"),
    # a flag error comes before the files' format is looked at (this folder mixes .toml and .csv)
    (["stream", "w.toml", "--source", ".", "--checkpoint", "ck", "--out", "o", "--trigger", "-1"], "--trigger"),
    ([*RUN[:4], "--out", "a_file"], "a_file: error: --out names a file"),
    ([*RUN[:4], "--out", "/proc/x"], "/proc/x: error: --out cannot be written"),
    ([*RUN[:4], "--out", ""], "--out is empty"),
    (["run", "w.toml", "--events", "src", "--out", "src/o"], "src/o: error: --out is inside --events"),
    (["run", "w.toml", "--events", "src", "--out", "src"], "src: error: --out is the --events folder"),
    (["run", "w.toml", "--events", "o/matches/e.csv", "--out", "o"], "--events is where this run writes"),
    ([*RUN, "--plot", "src"], "src: error: --plot names a folder"),
    ([*RUN, "--plot", "e.csv"], "e.csv: error: --plot is the input e.csv"),
    ([*RUN, "--plot", "a_file/p.png"], "--plot is under a file"),
    ([*RUN, "--conf", "novalue"], "--conf takes KEY=VALUE"),
    (["run", "w.toml", "--generate", "0"], "--generate"),
    (["run", "w.toml", "--generate", "-1"], "--generate"),
    (["run", "w.toml", "--generate", "5", "--events", "e.csv"], "not both"),
    (["demo", "--events", "0"], "--events"),
    (["demo", "--configs", "nowhere"], "nowhere: error: --configs is not a folder"),
    (["demo", "--configs", ".", "--out", "a_file"], "a_file: error: --out names a file"),
    (["demo", "--configs", ".", "--out", "/proc/x"], "/proc/x: error: --out cannot be written"),
]


@pytest.mark.parametrize(("argv", "says"), FLAG_CASES, ids=[" ".join(a[:1] + a[4:]) for a, _ in FLAG_CASES])
def test_spark_commands_refuse_bad_flags_before_spark_starts_with_one_line(
    cli_inputs: Path, capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    from sharp_cer.cli import main

    try:
        code = main(argv)
    except SystemExit as exit:  # argparse's own refusals
        code = int(exit.code or 0)
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (argv, out, err)
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1 and says in lines[0], err
    assert (cli_inputs / "a_file").read_text() == "keep me\n"  # a file given as a folder is left as it was
