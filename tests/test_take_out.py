"""Taking partial matches out of their union-lists (shedding by instance,
``QueryGroupRunner.take_out``) loses exactly the matches that pass through
them: never one that uses none of them, and it never invents one (issue 36).

The oracle is the reference evaluator. A match *uses* a partial match taken
out after event t if its run at t is one of the partial match's open complex
events: same start, and the match's events up to t are the partial match's
marks (the automaton is I/O-deterministic, so that run is unique).

Matches are compared by query, interval and events: the engine outputs one
match per interval and events, with the smallest variables, and where the
run of that binding was taken out another binding of the same events may
stand for it (``A+ AS v0 ; A+ AS v1`` over A A A: v0 = (1, 2), v1 = (3,)
once the partial match of v0 = (1,) followed by v1 = (2,) is gone).
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sharp_cer.engine import Engine
from sharp_cer.engine.enumeration import open_events
from sharp_cer.events.loaders import load_csv
from sharp_cer.language import Schema, parse_and_check
from sharp_cer.planner import compile_plan
from sharp_cer.reference import evaluate
from tests.engine_cases import SCHEMA, queries, streams, to_batch

#: (take-out time, start, marked positions up to it) of every open event taken out
_Taken = set[tuple[int, int, tuple[int, ...]]]


def _take_out(engine: Engine, t: int, choose: Any, taken: _Taken) -> None:
    """Take out of every runner the partial matches ``choose(count)`` flags."""
    for runner in engine.runners:
        lists = list(runner.partial_matches())
        flags = choose(sum(len(ulist) for _, _, ulist in lists))
        at = 0
        for partition, state, ulist in lists:
            keep = [not flags[at + j] for j in range(len(ulist))]
            at += len(ulist)
            for entry, kept in zip(ulist, keep, strict=True):
                if not kept:
                    taken.update((t, start, tuple(p for p, _ in marks)) for start, marks in open_events(entry))
            runner.take_out(partition, state, keep)


def _uses(match: Any, taken: _Taken) -> bool:
    return any(start == match.start and tuple(e for e in match.events if e <= t) == marks for t, start, marks in taken)


def _run_with_take_outs(plan: Any, batch: Any, choose: Any, lateness: int = 0) -> tuple[set[Any], _Taken]:
    """Feed ``batch`` one event at a time, taking out what ``choose`` says after each."""
    engine = Engine(plan, allowed_lateness=lateness, debug=True)
    found: set[Any] = set()
    taken: _Taken = set()
    for i in range(len(batch)):
        found.update(m.key()[:4] for m in engine.process(batch.take([i])))
        _take_out(engine, int(batch.positions[i]), choose, taken)
    return found, taken


def test_taking_out_a_lists_first_entry_loses_no_other_match() -> None:
    """The issue's case: after event 4 the state that has read A and B holds
    one dead partial match (a.v < b.v fails for both of its runs: 3 < 1 and
    2 < 1) first in its list; taking it out lost the match (3, 5, 7), which
    does not use it (its list order broke ``tecs.insert``)."""
    schema = Schema.parse("CREATE STREAM S { EVENT A { v:int }, EVENT B { v:int }, EVENT C { v:int } }")
    query = parse_and_check("SELECT * WHERE A AS a ; B AS b ; C AS c FILTER a.v < b.v WITHIN 6 EVENTS", schema)
    batch = load_csv("A,3\nC,1\nB,3\nA,2\nB,1\nB,3\nB,0\nC,0\nB,3\n", schema)[0]
    truth = evaluate([("q", query)], batch).per_query["q"]
    assert [m.events for m in truth] == [(3, 5, 7)]
    dead = [(0, (0, 4)), (3, (3, 4))]  # the runs of the partial match taken out
    plan = compile_plan([("q", query)])
    engine = Engine(plan)
    found = [m.key() for m in engine.process(batch.take([0, 1, 2, 3, 4]))]
    (runner,) = engine.runners
    hits = [
        (partition, state, [[(s, tuple(p for p, _ in marks)) for s, marks in open_events(e)] != dead for e in ulist])
        for partition, state, ulist in runner.partial_matches()
    ]
    ((partition, state, keep),) = [h for h in hits if not all(h[2])]
    assert keep[0] is False, "the dead partial match is first in its list"
    assert runner.take_out(partition, state, keep) == 1
    found += [m.key() for m in engine.process(batch.take([5, 6, 7, 8]))]
    assert found == [m.key() for m in truth]


def _select_star(text: str) -> str:
    """The query with every marked event in its output (``SELECT *``)."""
    return re.sub(r"^SELECT .*? (FROM|WHERE) ", r"SELECT * \1 ", text, count=1)


@st.composite
def _sequences(draw: st.DrawFn) -> str:
    """``SELECT * WHERE A AS v1 ; B+ AS v2 ; ...``, sometimes with a FILTER
    comparing two single events: many partial matches die, as in DS1."""
    steps = draw(st.lists(st.sampled_from(["A", "B", "C"]), min_size=2, max_size=4))
    kleene = draw(st.lists(st.booleans(), min_size=len(steps), max_size=len(steps)))
    parts = [f"{t}{'+' if k else ''} AS v{i}" for i, (t, k) in enumerate(zip(steps, kleene, strict=True))]
    text = "SELECT * WHERE " + " ; ".join(parts)
    singles = [i for i, k in enumerate(kleene) if not k]
    if len(singles) >= 2 and draw(st.booleans()):
        i, j = sorted(draw(st.lists(st.sampled_from(singles), min_size=2, max_size=2, unique=True)))
        text += f" FILTER v{i}.x {draw(st.sampled_from(['<', '>', '!=']))} v{j}.x"
    return text + f" WITHIN {draw(st.integers(2, 8))} EVENTS"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(_sequences() | queries(2, cross=True), min_size=1, max_size=2), streams(max_size=12), st.data())
def test_taking_out_any_partial_matches_loses_only_the_matches_through_them(
    texts: list[str], rows: list[dict[str, Any]], data: st.DataObject
) -> None:
    named = [(f"q{i}", parse_and_check(_select_star(text), SCHEMA)) for i, text in enumerate(texts)]
    plan, batch = compile_plan(named), to_batch(rows)

    def choose(count: int) -> list[bool]:
        # a few at a time: taking every partial match out leaves nothing to lose
        return data.draw(st.lists(st.integers(0, 3).map(lambda d: d == 0), min_size=count, max_size=count))

    found, taken = _run_with_take_outs(plan, batch, choose, lateness=4)
    truth = [m for q in evaluate(named, batch).per_query.values() for m in q]
    keys = {m.key()[:4] for m in truth}
    assert found <= keys, "taking partial matches out invented a match"
    lost = [m for m in truth if m.key()[:4] not in found and not _uses(m, taken)]
    assert not lost, f"lost matches that use no partial match taken out: {lost}"
