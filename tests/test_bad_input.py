"""Bad queries, schemas, workloads and command lines: each gets one located
error (file:line:col, the line with a caret, expected / found / hint) and
exit code 2, never a traceback. Every case here was a traceback or a silent
loss before these checks existed (the issue's list of holes)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sharp_cer.cli import main
from sharp_cer.language import Schema, load_workload, parse_and_check, parse_workload
from sharp_cer.language.diagnostics import (
    MAX_NESTING,
    InvalidLiteralError,
    LanguageErrors,
    NestingLimitError,
    QueryError,
    SchemaError,
    SourceFileError,
    WorkloadError,
)

SCHEMA = "CREATE STREAM S { EVENT A { x:int, t:primary_time }, EVENT B { x:int, t:primary_time } }"
LATIN1 = "SELECT * WHERE A -- café\n".encode("latin-1")


def _schema() -> Schema:
    return Schema.parse(SCHEMA)


def _workload(head_line: str, tail: str = "") -> str:
    return (
        f'[workload]\nname = "w"\n{head_line}\n'
        '[[query]]\nname = "q"\ntext = "SELECT * WHERE A WITHIN 2 EVENTS"\n' + tail
    )


def _located(err: QueryError, text: str) -> None:
    """The error points inside ``text`` and renders a caret under it."""
    assert err.line is not None and err.column is not None
    lines = text.splitlines() or [""]
    assert 1 <= err.line <= len(lines)
    assert 1 <= err.column <= len(lines[err.line - 1]) + 1
    assert "^" in str(err)


# ---------------------------------------------------------------- deep nesting


@pytest.mark.parametrize(
    "pattern",
    [
        "A AS a FILTER " + " AND ".join(["a[x > 1]"] * 500),
        "A AS a FILTER a[" + "NOT " * 500 + "x > 1]",
        "(" * 500 + "A" + ")+" * 500,
        "A AS a FILTER a[" + "abs(" * 500 + "x" + ")" * 500 + " > 1]",
    ],
    ids=["500-and", "500-not", "500-plus", "500-calls"],
)
def test_deep_nesting_is_refused_where_it_gets_too_deep(pattern: str) -> None:
    text = f"SELECT * WHERE {pattern} WITHIN 3 EVENTS"
    with pytest.raises(NestingLimitError) as info:
        parse_and_check(text, _schema())
    _located(info.value, text)
    assert f"more than {MAX_NESTING} deep" in str(info.value)


def test_parentheses_alone_do_not_count() -> None:
    text = "SELECT * WHERE " + "(" * 990 + "A ; B" + ")" * 990 + " WITHIN 3 EVENTS"
    assert parse_and_check(text, _schema()).query.within is not None


def test_nesting_just_under_the_limit_runs_everywhere() -> None:
    """What the parser lets through, the checker, compiler, engine, printer and
    reference evaluator handle without exhausting Python's stack."""
    import pandas as pd

    from sharp_cer.api import Detector
    from sharp_cer.events.loaders import load_pandas
    from sharp_cer.language.parser import parse_query
    from sharp_cer.language.printer import to_ceql
    from sharp_cer.reference import evaluate

    frame = pd.DataFrame({"type": ["A", "B", "A", "A"], "x": [1, 2, 3, 4], "t": [1, 2, 3, 4]})
    batch, _ = load_pandas(frame, _schema())
    depth = MAX_NESTING - 8  # the clauses around the formula take a few levels
    for pattern in [
        "A AS a FILTER " + " AND ".join(["a[x > 1]"] * depth),
        "A AS a FILTER a[" + "abs(" * depth + "x" + ")" * depth + " > 1]",
        "(" * depth + "A" + ")+" * depth,
    ]:
        text = f"SELECT * WHERE {pattern} WITHIN 3 EVENTS"
        checked = parse_and_check(text, _schema())
        assert parse_query(to_ceql(checked.query)) == checked.query
        found = Detector.from_queries([("q", text)], _schema()).feed(frame)
        expected = evaluate([("q", checked)], batch).matches
        assert sorted((m.start, m.end, m.events) for m in found) == sorted((m.start, m.end, m.events) for m in expected)
        assert expected  # A events with x > 1 exist: the case is not vacuous


# ---------------------------------------------------------------- literals


@pytest.mark.parametrize(
    ("clause", "found"),
    [
        ("FILTER a[x > " + "9" * 5000 + "]", "the integer 999"),
        ("FILTER a[x > 1e309]", "1e309 is too large"),
        ("FILTER a[x < 9223372036854775808]", "the integer 9223372036854775808"),
        ("WITHIN 1e300 SECONDS", "window is longer"),
        ("WITHIN 3000000 HOURS", "window is longer"),
        ("WITHIN 99999999999999999999 EVENTS", "the integer"),
        ("WITHIN 3 EVENTS LIMIT 99999999999999999999", "the integer"),
    ],
)
def test_literal_limits_are_checked_where_they_are_parsed(clause: str, found: str) -> None:
    text = f"SELECT * WHERE A AS a {clause}"
    with pytest.raises(InvalidLiteralError) as info:
        parse_and_check(text, _schema())
    assert found in info.value.message
    _located(info.value, text)


def test_the_largest_literals_still_parse() -> None:
    text = "SELECT * WHERE A AS a FILTER a[x < 9223372036854775807] WITHIN 2562047 HOURS"
    checked = parse_and_check(text, _schema())
    assert checked.query.within is not None


# ---------------------------------------------------------------- messages


def test_keyword_typo_gets_did_you_mean() -> None:
    with pytest.raises(QueryError) as info:
        parse_and_check("SELECT * WHERE A ; B PARTITON BY [x] WITHIN 3 EVENTS", _schema())
    assert info.value.hint == "did you mean PARTITION?"
    assert (info.value.line, info.value.column) == (1, 22)


def test_wrong_kind_of_file_is_named_and_rule_names_never_leak() -> None:
    workload = (Path(__file__).parent.parent / "configs" / "stock_trading.toml").read_text()
    with pytest.raises(QueryError) as info:
        Schema.parse(workload)
    assert info.value.message == "this is a workload, not a schema"
    assert not re.search(r"\b[a-z]+_[a-z_0-9]*\b", info.value.expected or "")  # no grammar rule names
    with pytest.raises(QueryError, match="this is a query, not a schema"):
        Schema.parse("SELECT * WHERE A")
    with pytest.raises(WorkloadError, match="this is a schema, not a workload"):
        parse_workload(SCHEMA)


@pytest.mark.parametrize(("written", "meant"), [("float", "double"), ("integer", "int"), ("boolean", "bool")])
def test_other_spellings_of_types_are_refused(written: str, meant: str) -> None:
    with pytest.raises(SchemaError) as info:
        Schema.parse(f"CREATE STREAM S {{ EVENT A {{ amount:{written} }} }}")
    assert info.value.hint == f"did you mean {meant}?"


def test_a_quoted_number_is_not_told_to_add_quotes() -> None:
    with pytest.raises(QueryError) as info:
        parse_and_check("SELECT * WHERE A AS a FILTER a[x > '5'] WITHIN 2 EVENTS", _schema())
    assert info.value.hint == "numbers go without quotes: x > 5"


# ---------------------------------------------------------------- workloads


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (_workload("schema = 5"), "schema must be a string"),
        (_workload("schema = false"), "schema must be a string"),
        (_workload("schema = 1.5"), "schema must be a string"),
        (_workload("schema = [1, 2]"), "schema must be a string"),
        (_workload("schema = 1979-05-27"), "schema must be a string"),
        (_workload("schema = { a = 1 }"), "schema must be a string"),
        (_workload("schema_file = 5"), "schema_file must be a string"),
        (f'query = [1]\n[workload]\nname = "w"\nschema = "{SCHEMA}"\n', "query 1 is not a table"),
        (_workload(f'schema = "{SCHEMA}"').replace("text = ", "file = 7\n#"), "file must be a string"),
        (_workload(f'schema = "{SCHEMA}"').replace('text = "SELECT', 'text = "SELEC'), "unexpected"),
        (_workload(f'schema = "{SCHEMA}"') + "x = = 1\n", "not valid TOML"),
        (_workload(f'schema = "{SCHEMA}"') + 'x = "open\n', "not valid TOML"),
        (_workload(f'schema = "{SCHEMA}"') + "y = [1,\n", "not valid TOML"),  # at the end of the document
        (_workload(f'schema = "{SCHEMA}"').replace('name = "q"', 'name = "q"\nweight = nan'), "weight must be"),
        (_workload(f'schema = "{SCHEMA}"').replace('name = "q"', 'name = "q"\nlatency_bound = inf'), "latency_bound"),
        (_workload(f'schema = "{SCHEMA}"\nallowed_lateness = 99999999999999999999'), "allowed_lateness must be"),
    ],
)
def test_workload_shapes_get_located_errors(text: str, message: str) -> None:
    with pytest.raises(QueryError) as info:
        parse_workload(text)
    assert message in info.value.message
    _located(info.value, text)


@pytest.mark.parametrize("schema_line", [f'"schema" = "{SCHEMA}"', f"'schema' = \"{SCHEMA}\"", f'schema = "{SCHEMA}"'])
def test_quoted_keys_are_found(schema_line: str) -> None:
    text = _workload(schema_line).replace('text = "SELECT * WHERE A', '"text" = "SELECT * WHERE Z')
    with pytest.raises(QueryError) as info:
        parse_workload(text)
    assert info.value.message == "event type Z is not declared"
    assert (info.value.line, info.value.column) == (6, 26)


def test_inline_array_of_tables_is_read_and_its_errors_located() -> None:
    inline = '[{ name = "q", text = "SELECT * WHERE A" }]'
    text = f'# queries first\nquery = {inline}\n[workload]\nname = "w"\nschema = "{SCHEMA}"\n'
    assert [q.name for q in parse_workload(text).queries] == ["q"]
    with pytest.raises(QueryError) as info:  # the locator finds no `text =` line of its own here
        parse_workload(text.replace("WHERE A", "WHERE Z"))
    assert info.value.message == "event type Z is not declared"
    assert info.value.source is not None and info.value.source.text == "SELECT * WHERE Z"


def test_every_query_at_fault_is_reported() -> None:
    text = _workload(f'schema = "{SCHEMA}"').replace("WHERE A", "WHERE Z") + (
        '[[query]]\nname = "fine"\ntext = "SELECT * WHERE B WITHIN 2 EVENTS"\n'
        '[[query]]\nname = "r"\nweight = -1\ntext = "SELECT * WHERE B WITHIN 2 EVENTS"\n'
        '[[query]]\nname = "s"\ntext = "SELECT * WHERE A AS a FILTER a[y > 1] WITHIN 2 EVENTS"\n'
    )
    with pytest.raises(LanguageErrors) as info:
        parse_workload(text, "w.toml")
    assert [(e.line, e.message) for e in info.value.errors] == [
        (6, "event type Z is not declared"),
        (12, "query r: weight must be a positive number"),
        (16, "event type A has no attribute 'y' (variable a can hold A)"),
    ]
    assert str(info.value).count("w.toml:") == 3


# ---------------------------------------------------------------- files


@pytest.mark.parametrize("kind", ["workload", "schema", "query"])
def test_non_utf8_files_get_the_place_of_the_first_bad_byte(tmp_path: Path, kind: str) -> None:
    (tmp_path / "s.core").write_text(SCHEMA)
    (tmp_path / "q.ceql").write_text("SELECT * WHERE A WITHIN 2 EVENTS")
    workload = _workload('schema_file = "s.core"').replace('text = "SELECT', 'file = "q.ceql"\n# "SELECT')
    (tmp_path / "w.toml").write_text(workload)
    target = {"workload": "w.toml", "schema": "s.core", "query": "q.ceql"}[kind]
    (tmp_path / target).write_bytes(LATIN1 if kind != "workload" else workload.encode() + "# é\n".encode("latin-1"))
    with pytest.raises(SourceFileError) as info:
        load_workload(tmp_path / "w.toml")
    err = info.value
    assert err.message == f"the {kind} file is not UTF-8 text"
    assert err.found == "the byte 0xe9"
    line, column = (1, 24) if kind != "workload" else (len(workload.splitlines()) + 1, 3)
    assert (err.line, err.column) == (line, column)


# ---------------------------------------------------------------- the command line


def _only_one_error(err: str) -> str:
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if "error:" in line]
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def spark_never_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bad input must be refused before Spark starts."""
    import sharp_cer.spark.session as session

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("Spark started on bad input")

    monkeypatch.setattr(session, "spark_session", refuse)


FILE_FAULTS = {
    "missing": None,
    "empty": b"",
    "wrong-format": b"\x00\x01PK binary \xff",
    "non-utf8": LATIN1,
    "folder": "folder",
}


def _fault(path: Path, fault: str) -> Path:
    content = FILE_FAULTS[fault]
    if content == "folder":
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    return path


@pytest.fixture
def good(tmp_path: Path) -> Path:
    (tmp_path / "s.core").write_text(SCHEMA)
    (tmp_path / "q.ceql").write_text("SELECT * WHERE A ; B WITHIN 3 EVENTS")
    (tmp_path / "w.toml").write_text(_workload(f'schema = "{SCHEMA}"'))
    (tmp_path / "e.csv").write_text("A,1,1\nB,2,2\n")
    return tmp_path


def _commands(d: Path, bad: str, what: str) -> list[list[str]]:
    s, q, e = (str(d / n) for n in ("s.core", "q.ceql", "e.csv"))
    if what == "workload":
        return [
            ["check", bad],
            ["explain", bad, "--generate", "0"],
            ["run", bad, "--events", e],
            ["stream", bad, "--source", str(d), "--checkpoint", str(d / "ck"), "--out", str(d / "o")],
        ]
    if what == "schema":
        return [
            ["check", bad],
            ["check", "--schema", bad, q],
            ["match", "--schema", bad, "--query", q, "--events", e],
            ["explain", "--schema", bad, q],
        ]
    return [
        ["check", "--schema", s, bad],
        ["match", "--schema", s, "--query", bad, "--events", e],
        ["explain", "--schema", s, bad],
    ]


@pytest.mark.parametrize("fault", list(FILE_FAULTS))
@pytest.mark.parametrize("what", ["workload", "schema", "query"])
@pytest.mark.usefixtures("spark_never_starts")
def test_every_command_refuses_bad_files_with_one_located_message(
    good: Path, capsys: pytest.CaptureFixture[str], fault: str, what: str
) -> None:
    bad = _fault(good / {"workload": "bad.toml", "schema": "bad.core", "query": "bad.ceql"}[what], fault)
    for argv in _commands(good, str(bad), what):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 2, (argv, out, err)
        first = _only_one_error(err)
        assert first.startswith(f"{bad}:"), (argv, err)  # names the file (and line:col where there is one)


@pytest.mark.parametrize("fault", ["missing", "wrong-format", "folder"])
@pytest.mark.usefixtures("spark_never_starts")
def test_events_paths_are_checked_before_anything_runs(
    good: Path, capsys: pytest.CaptureFixture[str], fault: str
) -> None:
    bad = _fault(good / ("bad.txt" if fault == "wrong-format" else "bad.csv"), fault)
    commands = [
        ["match", "--schema", str(good / "s.core"), "--query", str(good / "q.ceql"), "--events", str(bad)],
        ["explain", str(good / "w.toml"), "--events", str(bad)],
    ]
    if fault != "folder":  # `run` reads folders
        commands.append(["run", str(good / "w.toml"), "--events", str(bad)])
    for argv in commands:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert _only_one_error(err).startswith(f"{bad}: error:"), (argv, err)
        assert "newline" not in err  # no API detail in a command-line message


def _exit_code(argv: list[str]) -> int:
    """``main``'s exit code, also when argparse exits by itself (bad option values)."""
    try:
        return main(argv)
    except SystemExit as exit:
        return int(exit.code or 0)


@pytest.mark.parametrize(
    "options",
    [
        ["--limit", "-1"],
        ["--limit", "0"],
        ["--limit", "x"],
        ["--latency-bound", "inf"],
        ["--latency-bound", "nan"],
        ["--stats", "DIR", "--latency-bound", "100"],
    ],
)
def test_match_options_are_validated(good: Path, capsys: pytest.CaptureFixture[str], options: list[str]) -> None:
    base = ["match", "--schema", str(good / "s.core"), "--query", str(good / "q.ceql"), "--events", str(good / "e.csv")]
    code = _exit_code(base + [str(good) if o == "DIR" else o for o in options])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "cannot read" not in _only_one_error(err)  # a folder given to --stats is not a read problem


def test_match_limit_prints_that_many(good: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (good / "e.csv").write_text("A,1,1\nB,2,2\nA,3,3\nB,4,4\n")
    argv = ["match", "--schema", str(good / "s.core"), "--query", str(good / "q.ceql"), "--events", str(good / "e.csv")]
    assert main(argv) == 0
    every = capsys.readouterr().out.splitlines()
    assert len(every) == 3  # (0,1), (0,3), (2,3): B within 3 events after A
    assert main([*argv, "--limit", "2"]) == 0
    limited = capsys.readouterr().out.splitlines()
    # The documented contract: N true matches in end order, and every match ending before the last one printed;
    # which of the matches ending at that last event are printed is the engine's enumeration order.
    ends = [json.loads(line)["end"] for line in limited]
    assert len(limited) == 2 and set(limited) <= set(every) and ends == sorted(ends)

    def before_last(lines: list[str]) -> list[str]:
        return [m for m in lines if json.loads(m)["end"] < ends[-1]]

    assert before_last(every) == before_last(limited)


@pytest.mark.parametrize(
    "options", [["--events", "E", "--generate", "10"], ["--generate", "-5"], ["--generate", "many"]]
)
def test_explain_options_are_validated(good: Path, capsys: pytest.CaptureFixture[str], options: list[str]) -> None:
    code = _exit_code(["explain", str(good / "w.toml"), *[str(good / "e.csv") if o == "E" else o for o in options]])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert _only_one_error(err)


def test_a_reader_that_stops_reading_gets_no_traceback(good: Path) -> None:
    """``sharp-cer match ... | head -1``: the pipe closes under the writer."""
    (good / "e.csv").write_text("B,2,2\n" * 20_000)
    (good / "every_b.ceql").write_text("SELECT * WHERE B WITHIN 1 EVENTS")  # 20,000 lines: more than a pipe holds
    argv = ["match", "--schema", str(good / "s.core"), "--query", str(good / "every_b.ceql")]
    argv += ["--events", str(good / "e.csv")]
    command = subprocess.Popen(
        [sys.executable, "-m", "sharp_cer.cli", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert command.stdout is not None and command.stderr is not None
    # Closed before the first match is written: a pipe may hold a whole chunk's output, so a reader that
    # left after one line would not always make the write fail.
    command.stdout.close()
    err = command.stderr.read().decode()
    assert command.wait() == 141  # 128 + SIGPIPE, as a Unix tool
    assert "Traceback" not in err
