"""Fuzzing MATCH_RECOGNIZE (issue 33): mutated clauses (seeded from the
golden fixtures) and hostile patterns run over small tables in a worker
process with a per-case time limit and a memory limit. Every outcome is a
result or a ``RecognizeError``; never another exception, a hang or a
blow-up. The examples are derandomized, so a CI run is repeatable."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from recognize_fixtures import load_cases

pytestmark = pytest.mark.slow

CASE_SECONDS = 30
MEMORY_BYTES = 3 * 2**30

WORKER = textwrap.dedent(
    f"""
    import json, resource, signal, sys, traceback
    resource.setrlimit(resource.RLIMIT_AS, ({MEMORY_BYTES}, {MEMORY_BYTES}))
    import numpy as np, pyarrow as pa
    from sharp_cer.errors import RecognizeError
    from sharp_cer.recognize import match_recognize

    def expire(*_):
        raise TimeoutError
    signal.signal(signal.SIGALRM, expire)
    for line in sys.stdin:
        case = json.loads(line)
        rows = case["rows"]
        table = pa.table({{"id": np.arange(rows), "v": np.arange(rows) % 5 - 1, "p": np.arange(rows) % 2,
                          "s": [str(i % 3) for i in range(rows)]}})
        signal.alarm({CASE_SECONDS})
        try:
            match_recognize(table, case["clause"])
            outcome = "result"
        except RecognizeError:
            outcome = "error"
        except TimeoutError:
            outcome = "timeout"
        except BaseException:
            outcome = "crash: " + traceback.format_exc(limit=4)
        finally:
            signal.alarm(0)
        print(json.dumps(outcome), flush=True)
    """
)


class Worker:
    """One Python process that runs cases until it is closed."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def run(self, clause: str, rows: int) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"clause": clause, "rows": rows}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:  # killed: out of memory beyond Python's reach
            self.process.wait()
            self.__init__()  # type: ignore[misc]
            return "died"
        outcome: str = json.loads(line)
        return outcome

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    running = Worker()
    yield running
    running.close()


HOSTILE = [
    "PATTERN (A* A* A* A* A* F) DEFINE A AS v >= -1, F AS v = 99",
    "PATTERN ((A*)* F) DEFINE A AS true, F AS v = 99",
    "PATTERN ((A | A)* F) DEFINE A AS true, F AS v = 99",
    "PATTERN ((A+)+ B) DEFINE A AS true, B AS v = 99",
    "PATTERN (((A | B)*)* C) DEFINE C AS v = 99",
    "AFTER MATCH SKIP TO NEXT ROW PATTERN ((A?){1000})",
    "PATTERN ((A{0,50}){0,50} F) DEFINE F AS v = 99",
    "PATTERN (((A{0,60}){0,60}){0,60} F) DEFINE F AS v = 99",
    "PATTERN (PERMUTE(A, B, C, D, E, F, G))",
    "PATTERN (PERMUTE(A, B, C, D, E, F, G, H, I, J, K, L))",
    "PATTERN (S X1*? B+? X2*? S2) DEFINE S AS p = 0, B AS v > 1, S2 AS s = '2' AND S2.id - S.id <= 50",
    "PATTERN (A+ B) DEFINE A AS SUM(A.v) >= -1000, B AS v = 99",
    "PATTERN ((A | B)+ X) DEFINE X AS COUNT(A.*) = 1000, A AS true, B AS true",
    "PATTERN (A+ B) DEFINE A AS CLASSIFIER() = 'A' AND PREV(CLASSIFIER()) IS NULL OR TRUE, B AS v = 99",
    "PATTERN ((A B?)* C) DEFINE A AS v + 9223372036854775807 > v, C AS v = 99",
    "PATTERN (A{99999999999999999999})",
    "PATTERN (" + "(" * 150 + "A" + ")*" * 150 + " B) DEFINE B AS v = 99",
]


@pytest.mark.parametrize("rows", [0, 1, 120])
@pytest.mark.parametrize("pattern", HOSTILE)
def test_hostile_patterns(worker: Worker, pattern: str, rows: int) -> None:
    clause = f"MATCH_RECOGNIZE (PARTITION BY p ORDER BY id MEASURES COUNT(*) AS n ONE ROW PER MATCH {pattern})"
    assert worker.run(clause, rows) in ("result", "error")


SEEDS = sorted({case.clause for case in load_cases()})
VOCABULARY = [
    "(",
    ")",
    "*",
    "+",
    "?",
    "{",
    "}",
    ",",
    "|",
    "^",
    "$",
    "{-",
    "-}",
    "A",
    "B",
    "v",
    "id",
    "PERMUTE",
    "PREV",
    "FIRST",
    "LAST",
    "SUM",
    "COUNT",
    "CLASSIFIER()",
    "RUNNING",
    "FINAL",
    "AND",
    "OR",
    "NOT",
    "NULL",
    "0",
    "9223372036854775807",
    "-",
    "/",
    "1e308",
    "'x'",
    "ALL ROWS PER MATCH",
    "AFTER MATCH SKIP TO LAST A",
    "ORDER BY",
    "PARTITION BY",
    "MEASURES",
    "DEFINE",
    "SUBSET U = (A, B)",
    "{1000}",
    "*?",
    " ",
]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "swap"]))
        word = draw(st.sampled_from(VOCABULARY))
        span = draw(st.integers(1, 12))
        if kind == "insert":
            text = text[:at] + " " + word + " " + text[at:]
        elif kind == "delete":
            text = text[:at] + text[at + span :]
        elif kind == "replace":
            text = text[:at] + word + text[at + span :]
        else:
            cut = draw(st.integers(0, len(text)))
            text = text[cut:] + text[:cut]
    return text


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(mutated(), st.sampled_from([0, 3, 40]))
def test_mutated_clauses(worker: Worker, clause: str, rows: int) -> None:
    assert worker.run(clause, rows) in ("result", "error"), clause
