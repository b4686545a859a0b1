"""The README's "Selection strategies" example (issue 35): the brute-force
rule under ALL, ANY, MAX, NEXT, LAST and STRICT over a small stream, with
the outputs the README shows. The expected outputs are worked out by hand
(below), then both the engine and the reference evaluator must give them."""

from __future__ import annotations

import pandas as pd
import pytest

from sharp_cer.api import Detector
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.reference import evaluate

SCHEMA = Schema.parse("CREATE STREAM S { EVENT LOGIN { user:string, success:bool, t:primary_time } }")

QUERY = """SELECT {strategy} * WHERE LOGIN+ AS fails ; LOGIN AS ok
FILTER fails[success = false] AND ok[success = true] AND count(fails) >= 3
PARTITION BY [user] WITHIN 1 MINUTES"""

# eve: 4 failures, then a success (positions 0-4); bob: 2 failures, a
# success, 3 failures, a success (positions 5-11). One second apart.
LOGINS = [("eve", False)] * 4 + [("eve", True)] + [("bob", False)] * 2 + [("bob", True)] + [("bob", False)] * 3
LOGINS += [("bob", True)]
STREAM = pd.DataFrame(
    {
        "type": ["LOGIN"] * len(LOGINS),
        "user": [u for u, _ in LOGINS],
        "success": [s for _, s in LOGINS],
        "t": [i * 1_000_000_000 for i in range(len(LOGINS))],
    }
)


def _subsets(pool: list[int], least: int) -> list[tuple[int, ...]]:
    from itertools import combinations

    return [c for n in range(least, len(pool) + 1) for c in combinations(pool, n)]


# By hand. ALL (and ANY, its synonym): every set of at least 3 failures of
# the user before a success, skipping what lies between: eve's 4 failures
# give C(4,3) + C(4,4) = 5 matches ending at 4; bob's first success has only
# 2 failures before it; his second can take any 3, 4 or 5 of the 5 failures
# (5, 6, 8, 9, 10), skipping the success at 7: 10 + 5 + 1 = 16 matches.
EVERY = sorted([(*s, 4) for s in _subsets([0, 1, 2, 3], 3)] + [(*s, 11) for s in _subsets([5, 6, 8, 9, 10], 3)])
# MAX: the matches no other match with the same end strictly contains: all
# the failures. NEXT and LAST keep one match per end, the one that wins on
# its smallest (NEXT) or largest (LAST) differing position; a match holding
# every other one's events wins both, so here they agree with MAX.
LONGEST = [(0, 1, 2, 3, 4), (5, 6, 8, 9, 10, 11)]
# STRICT: the match's interval holds only its own events (contiguous in the
# user's substream): eve's runs from 1 and from 0; bob's only from 8, since
# any earlier start spans his success at 7.
STRICT = [(0, 1, 2, 3, 4), (1, 2, 3, 4), (8, 9, 10, 11)]
EXPECTED = {"ALL": EVERY, "ANY": EVERY, "MAX": LONGEST, "NEXT": LONGEST, "LAST": LONGEST, "STRICT": STRICT}


@pytest.mark.parametrize("strategy", list(EXPECTED))
def test_brute_force_rule_under_each_strategy(strategy: str) -> None:
    text = QUERY.format(strategy=strategy)
    detector = Detector.from_queries([("brute", text)], SCHEMA)
    found = sorted(m.events for m in detector.feed(STREAM))
    assert found == sorted(EXPECTED[strategy])
    reference = evaluate([("brute", parse_and_check(text, SCHEMA))], STREAM.to_dict("records"))
    assert sorted(m.events for m in reference.matches) == found


def test_counts_shown_in_the_readme() -> None:
    assert {s: len(v) for s, v in EXPECTED.items()} == {
        "ALL": 21, "ANY": 21, "MAX": 2, "NEXT": 2, "LAST": 2, "STRICT": 3
    }  # fmt: skip
