"""Parsing gives exactly what the parser before issue 33 item 11 gave.

tests/fixtures/parse_golden/corpus.json.gz holds 758 texts (every query and
schema in configs/, benchmarks/workloads/ and tests/fixtures/, generated
queries, and queries cut short or missing a character) with the AST that
lark's parse tree walked into (every span included) or the error (message,
location, caret, hint) that parser gave; make_corpus.py there says how it
was made. The AST is now built while lark's LALR parser reduces, with no
tree: these must not change.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).parent / "fixtures" / "parse_golden"
sys.path.insert(0, str(GOLDEN))
from make_corpus import outcome  # noqa: E402

sys.path.remove(str(GOLDEN))


def _cases() -> list[dict[str, Any]]:
    with gzip.open(GOLDEN / "corpus.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)  # type: ignore[no-any-return]


CASES = _cases()


def test_the_corpus_covers_asts_and_errors_of_each_kind() -> None:
    errors = {c["error"] for c in CASES if "error" in c}
    assert {"CeqlSyntaxError", "InvalidLiteralError", "NestingLimitError"} <= errors
    assert sum("ast" in c for c in CASES) > 500
    assert {c["kind"] for c in CASES} == {"query", "schema"}


@pytest.mark.parametrize("chunk", range(4))
def test_each_text_parses_to_the_same_ast_with_the_same_spans_or_the_same_error(chunk: int) -> None:
    mismatches = []
    for case in CASES[chunk::4]:
        expected = {k: v for k, v in case.items() if k not in ("kind", "text")}
        got = json.loads(json.dumps(outcome(case["kind"], case["text"])))
        if got != expected:
            mismatches.append((case["text"], expected, got))
    assert not mismatches, mismatches[:3]
