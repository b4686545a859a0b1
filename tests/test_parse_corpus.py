"""Parsing and checking give exactly what they gave before issue 33 item 11.

tests/fixtures/parse_golden/corpus.json.gz holds 758 texts (every query and
schema in configs/, benchmarks/workloads/ and tests/fixtures/, generated
queries, and queries cut short or missing a character) with the AST that
lark's parse tree walked into (every span included) or the error (message,
location, caret, hint) that parser gave, and for the 529 queries written for
a schema what the checker found (variables, event types, warnings) or its
error; make_corpus.py there says how it was made (on main at 2121f05). The
AST is now built while lark's LALR parser reduces, with no tree, and the
checker takes shorter ways: none of this may change.
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
    assert sum("variables" in c for c in CASES) > 350 and sum("check_error" in c for c in CASES) > 100


@pytest.mark.parametrize("chunk", range(4))
def test_each_text_parses_and_checks_as_before_spans_and_errors_included(chunk: int) -> None:
    mismatches = []
    for case in CASES[chunk::4]:
        expected = {k: v for k, v in case.items() if k not in ("kind", "text", "schema")}
        got = json.loads(json.dumps(outcome(case["kind"], case["text"], case["schema"])))
        if got != expected:
            mismatches.append((case["text"], expected, got))
    assert not mismatches, mismatches[:3]
