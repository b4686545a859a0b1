"""A detector that sheds load changes its queries while it runs (issue 39):
an added query is shed to its own bound from the position it was added at
(and, when nothing needs shedding, has exactly the matches of rule 15,
``reference.evaluate_interval``); a running query takes a new bound or
weight in place; whether a running query is shed cannot change in place
(refused, nothing changed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sharp_cer.api import Detector
from sharp_cer.errors import SharpCerError
from sharp_cer.language import parse_and_check, parse_workload
from sharp_cer.reference import evaluate_interval
from tests.engine_cases import SCHEMA
from tests.test_update import SCHEMA_TEXT, _rows, to_batch

SEQ = "SELECT * WHERE A ; B WITHIN 9 EVENTS"
MANY = "SELECT * WHERE A ; B+ WITHIN 20 EVENTS"  # 2^n - 1 matches of an A and n B's


def _workload(queries: dict[str, tuple[str, str | int | None]], weights: dict[str, float] | None = None) -> object:
    lines = ["[workload]", 'name = "w"', f"schema = {json.dumps(SCHEMA_TEXT)}"]
    for name, (text, bound) in queries.items():
        lines += ["[[query]]", f"name = {json.dumps(name)}", f"text = {json.dumps(text)}"]
        if bound is not None:
            lines.append(f"latency_bound = {json.dumps(bound)}")
        if weights and name in weights:
            lines.append(f"weight = {weights[name]}")
    return parse_workload("\n".join(lines) + "\n")


def test_queries_added_removed_and_replaced_under_a_shedder_that_sheds_nothing_follow_the_rule() -> None:
    # bounds of 100 s: nothing is ever shed, so every query's matches are rule 15's exactly
    rows = _rows("AABABBAB")
    batch = to_batch(rows)
    first = {"p": (SEQ, "100000ms"), "r": (SEQ.replace("9", "4"), "100000ms"), "s": (SEQ, "100000ms")}
    then = {"p": (SEQ, "100000ms"), "r": (SEQ.replace("9", "5"), "100000ms"), "q": (MANY, "100000ms")}
    detector = Detector.from_workload(_workload(first), shedder="sharp")  # type: ignore[arg-type]
    found = detector.feed(batch.take(np.arange(0, 3)))
    said = detector.update(_workload(then)).describe()  # type: ignore[arg-type]
    assert "added q" in said and "removed s" in said and "replaced r" in said
    found += detector.feed(batch.take(np.arange(3, len(rows))))
    for name, text, first_at, removed in [("p", SEQ, 0, None), ("q", MANY, 3, None), ("s", SEQ, 0, 3)]:
        expected = evaluate_interval(name, parse_and_check(text, SCHEMA, name), batch, first_at, removed)
        assert sorted(m.key() for m in found if m.query == name) == sorted(m.key() for m in expected)
    old, new = (parse_and_check(SEQ.replace("9", k), SCHEMA, "r") for k in "45")
    expected_r = [*evaluate_interval("r", old, batch, 0, 3), *evaluate_interval("r", new, batch, 3)]
    assert sorted(m.key() for m in found if m.query == "r") == sorted(m.key() for m in expected_r)
    report = detector.shedder.report()
    assert report["q"]["bound_ms"] == 100000 and report["q"]["partial_matches_shed"] == 0


def test_an_added_query_is_shed_to_its_own_bound() -> None:
    rows = [{"type": t, "x": 0, "k": 0, "j": 0, "t": i} for i, t in enumerate("BA" + "B" * 12)]
    batch = to_batch(rows)
    w = _workload({"p": (SEQ, 100000)})
    detector = Detector.from_workload(w, shedder="truncate", record_latency=True)  # type: ignore[arg-type]
    detector.feed(batch.take(np.arange(0, 1)))
    detector.update(_workload({"p": (SEQ, 100000), "q": (MANY, 40)}))  # type: ignore[arg-type]
    got = {m.key() for m in detector.feed(batch.take(np.arange(1, len(rows)))) if m.query == "q"}
    whole = {m.key() for m in evaluate_interval("q", parse_and_check(MANY, SCHEMA, "q"), batch, 1)}
    assert len(whole) == 4095 and 0 < len(got) < len(whole) and got <= whole  # shed: a part of rule 15's
    assert detector.shedder.report()["q"]["bound_units"] == 40.0
    number = next(r.number for r in detector.engine.runners if any(q.name == "q" for q in r.queries))
    assert int(detector.engine.latency.units(number, "q").max()) <= 40  # within its bound


def test_a_bound_and_a_weight_change_in_place_and_shedding_a_query_or_not_is_refused() -> None:
    detector = Detector.from_workload(_workload({"p": (SEQ, 50), "u": (SEQ, None)}), shedder="sharp")  # type: ignore[arg-type]
    detector.feed(to_batch(_rows("AAB")))
    detector.update(_workload({"p": (SEQ, 80), "u": (SEQ, None)}, weights={"p": 3.0}))  # type: ignore[arg-type]
    assert (detector.shedder.report()["p"]["bound_units"], detector.shedder.report()["p"]["weight"]) == (80.0, 3.0)
    runner = detector.engine.runners[0]
    for change in ({"p": (SEQ, 80), "u": (SEQ, 30)}, {"p": (SEQ, None), "u": (SEQ, None)}):
        with pytest.raises(SharpCerError, match="whether it is shed cannot change while it runs"):
            detector.update(_workload(change))  # type: ignore[arg-type]
    assert detector.version == 1 and detector.engine.runners[0] is runner  # nothing changed
    assert detector.shedder.report()["p"]["bound_units"] == 80.0
    # with the text changed too, the query is replaced and shed from its new start
    detector.update(_workload({"p": (SEQ, 80), "u": (SEQ.replace("9", "8"), 30)}))  # type: ignore[arg-type]
    assert detector.shedder.report()["u"]["bound_units"] == 30.0
