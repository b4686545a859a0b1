"""The fused LALR loop (``sharp_cer.language.driver``) against lark's own
parser, on the same table and callbacks: the same AST, spans included, for
every text lark accepts, and a refusal exactly where lark raises (lark then
says why, so every error stays as it was). Texts: the golden corpus of
test_parse_corpus.py (queries, schemas, broken and cut-short texts) and
bench_check.py's generated queries. Also: the work of loading a workload is
counted, not timed (issue 33 item 11): one parse per query, by the loop,
and lark's parser only for a text with an error.
"""

from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark.exceptions import UnexpectedInput

from sharp_cer.language import parse_query, parse_workload
from sharp_cer.language import parser as parser_module
from sharp_cer.language.diagnostics import QueryError
from sharp_cer.language.driver import REFUSED, FusedParser, plain_table

ROOT = Path(__file__).parent.parent
GOLDEN = ROOT / "tests" / "fixtures" / "parse_golden"
sys.path[:0] = [str(GOLDEN), str(ROOT / "benchmarks")]
from bench_check import make_query, workload_text  # noqa: E402
from make_corpus import dump  # noqa: E402

sys.path.remove(str(GOLDEN))
sys.path.remove(str(ROOT / "benchmarks"))


def _texts() -> list[tuple[str, str]]:
    with gzip.open(GOLDEN / "corpus.json.gz", "rt", encoding="utf-8") as f:
        corpus = [(c["kind"], c["text"]) for c in json.load(f)]
    rng = random.Random(3)
    generated = [("query", make_query(rng, i)) for i in range(300)]
    odd = [("query", ""), ("query", "   "), ("query", "SELECT * WHERE A\n\n  "), ("schema", "")]
    return corpus + generated + odd


def _outcome(parse: Any) -> Any:
    """The AST dumped with its spans, or the located problem a reducer met."""
    try:
        return ("ast", dump(parser_module._finish(parse())))
    except parser_module._Problem as problem:
        return ("problem", problem.message, problem.span)


def _loop() -> FusedParser:
    """The loop every parse runs (from the user's cache, or made there)."""
    loop = parser_module._fused()
    assert loop is not None
    return loop


def _same_as_lark(loop: FusedParser, kind: str, text: str) -> bool:
    """Whether the loop and lark agree on ``text``: the same outcome, or
    both refuse it. Returns whether lark accepted it."""
    lark = parser_module._lark()
    try:
        expected = _outcome(lambda: lark.parse(text, start=kind))
    except UnexpectedInput:
        assert loop.parse(text, kind) is REFUSED, text
        return False
    assert _outcome(lambda: loop.parse(text, kind)) == expected, text
    return True


@pytest.mark.parametrize("made", ["from_lark", "from_kept_json"])
def test_the_loop_gives_lark_s_result_or_refuses_where_lark_raises(made: str) -> None:
    # the loop of lark's own objects, and of the plain table as a process loads it from the user's cache
    loop = FusedParser.from_lark(parser_module._lark())
    if made == "from_kept_json":
        table = json.loads(json.dumps(plain_table(parser_module._lark())))
        loop = FusedParser(table, parser_module._reducers())
    accepted = [_same_as_lark(loop, kind, text) for kind, text in _texts()]
    assert sum(accepted) > 800 and accepted.count(False) > 100  # both sides are exercised


def _words(text: str) -> list[str]:
    return text.split()


# words and symbols of the grammar, names that are keywords elsewhere, and
# what the lexer skips or refuses: token soups lark mostly refuses
_PIECES = [
    *_words("SELECT * WHERE FROM FILTER WITHIN EVENTS SECONDS MS PARTITION BY CONSUME ANY NONE LIMIT"),
    *_words("AS OR AND NOT IN RANGE LIKE ABSENT max MAX next count x b A B S"),
    *_words("; : + :+ ( ) [ ] { } , . .. < <= = != <> - / % > >"),
    *["1", "2.5", "1e3", "'s'", "'it''s'", "`odd name`", "\n", "-- note\n", "/* c */", "!", '"', "'open"],
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=14), st.booleans())
def test_token_soups_are_refused_or_parsed_as_lark_does(pieces: list[str], prefixed: bool) -> None:
    text = ("SELECT * WHERE " if prefixed else "") + " ".join(pieces)
    _same_as_lark(_loop(), "query", text)


class _Counting:
    """Counts the calls of a function (``calls``) and passes them on."""

    def __init__(self, function: Any) -> None:
        self.function, self.calls = function, 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return self.function(*args, **kwargs)


def _parser_calls(n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(fused loop runs, lark parser runs) while loading ``n`` generated queries."""
    rng = random.Random(11)
    text = workload_text([make_query(rng, i) for i in range(n)])
    loop = _loop()
    fused = _Counting(loop.parse)
    lark = _Counting(parser_module._lark().parse)
    monkeypatch.setattr(loop, "parse", fused)
    monkeypatch.setattr(parser_module._lark(), "parse", lark)
    assert len(parse_workload(text).queries) == n
    return fused.calls, lark.calls


def test_loading_a_workload_parses_each_query_once_in_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    for n in (20, 160):
        # every query once, and the schema once; lark's own parser never
        assert _parser_calls(n, monkeypatch) == (n + 1, 0)


def test_a_text_the_loop_refuses_is_explained_by_lark_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = _loop()
    lark = _Counting(parser_module._lark().parse)
    monkeypatch.setattr(parser_module._lark(), "parse", lark)
    with pytest.raises(QueryError) as caught:
        parse_query("SELECT * WHERE A ; ; B")
    assert lark.calls == 1 and loop.parse("SELECT * WHERE A ; ; B", "query") is REFUSED
    assert "unexpected ';' in query" in str(caught.value) and ":1:20" in str(caught.value)
